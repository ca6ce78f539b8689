/* dp_ledger.c - write-ahead privacy ledger (NOISE.md §4.9 option A, §4.10; DESIGN §7.1).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Why the file is the truth: totals are rebuilt from it on every open, so a crash can lose
 * only rows whose commit never returned (whose outputs were therefore never published).
 * Why one write(2) per commit: a crash leaves at most one torn line, at the end.
 */
#include "core/dp_ledger.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>

#include "core/buf.h"
#include "core/lines.h"
#include "core/log.h"
#include "core/mem.h"
#include "dp_ledger_db.h"
#include "dp_ledger_idx.h"
#include "dp_round.h"

#define LEDGER_FORMAT 2 /* header version; 1 had no unit scheme and is refused */
#define ROW_VERSION   1
#define HEADER_MAX    1024

/* ---- string map with SipHash (keys may come from device ids: no hash flooding) ---- */

struct slot {
    char *key;
    void *val;
};

struct smap {
    struct slot *slots;
    size_t cap, n;
    unsigned char hkey[crypto_shorthash_KEYBYTES];
};

static void smap_init(struct smap *m)
{
    m->cap = 64;
    m->n = 0;
    m->slots = core_xcalloc(m->cap, sizeof(*m->slots));
    crypto_shorthash_keygen(m->hkey);
}

static size_t smap_hash(const struct smap *m, const char *key)
{
    unsigned char h[crypto_shorthash_BYTES];
    uint64_t v;
    crypto_shorthash(h, (const unsigned char *)key, strlen(key), m->hkey);
    memcpy(&v, h, sizeof(v));
    return (size_t)v;
}

static struct slot *smap_slot(const struct smap *m, const char *key)
{
    size_t i = smap_hash(m, key) & (m->cap - 1);
    while (m->slots[i].key && strcmp(m->slots[i].key, key) != 0)
        i = (i + 1) & (m->cap - 1);
    return &m->slots[i];
}

static void *smap_get(const struct smap *m, const char *key)
{
    return smap_slot(m, key)->val;
}

static void smap_grow(struct smap *m)
{
    struct slot *old = m->slots;
    size_t oldcap = m->cap;
    m->cap *= 2;
    m->slots = core_xcalloc(m->cap, sizeof(*m->slots));
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].key)
            *smap_slot(m, old[i].key) = old[i];
    free(old);
}

/* Insert a new key (caller checked it is absent); the key is copied. */
static void smap_put(struct smap *m, const char *key, void *val)
{
    if ((m->n + 1) * 10 > m->cap * 7)
        smap_grow(m);
    struct slot *s = smap_slot(m, key);
    s->key = core_xstrdup(key);
    s->val = val;
    m->n++;
}

/* Remove key (if present), freeing its copy and, with free_val, its value. Backward-shift
 * deletion keeps every probe chain intact (no tombstones). */
static void smap_del(struct smap *m, const char *key, void (*free_val)(void *))
{
    size_t mask = m->cap - 1, i = smap_hash(m, key) & mask, j = i;
    while (m->slots[i].key && strcmp(m->slots[i].key, key) != 0)
        i = (i + 1) & mask;
    if (!m->slots[i].key)
        return;
    free(m->slots[i].key);
    if (free_val)
        free_val(m->slots[i].val);
    for (j = i;;) {
        j = (j + 1) & mask;
        if (!m->slots[j].key)
            break;
        size_t k = smap_hash(m, m->slots[j].key) & mask; /* home of the entry at j */
        int stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (!stays) {
            m->slots[i] = m->slots[j];
            i = j;
        }
    }
    m->slots[i] = (struct slot){NULL, NULL};
    m->n--;
}

static void smap_cleanup(struct smap *m, void (*free_val)(void *))
{
    for (size_t i = 0; m->slots && i < m->cap; i++) {
        free(m->slots[i].key);
        if (free_val)
            free_val(m->slots[i].val);
    }
    free(m->slots);
    m->slots = NULL;
}

/* ---- ledger state ---- */

enum rel_state { REL_FREE = 0, REL_PENDING, REL_COMMITTED };

struct rel {
    enum rel_state state;
    int in_batch; /* transient mark used by commit_batch to detect a repeated id */
    uint64_t off; /* committed: line offset and length in the file */
    size_t len;
    char *head; /* pending: the row's JSON text up to and including "out":" */
    size_t head_len;
    char **units;
    size_t n_units;
    struct core_dp_cost cost;
    int64_t t; /* store: the release's time (earliest slot end of its units), if has_t */
    int has_t;
};

/* A unit's totals. total: committed + pending, as charged (what the cap compares);
 * committed (store back end): the upward-rounded sum of its committed charges in commit
 * order, what the store holds and what a JSONL reopen rebuilds. */
struct unit_ent {
    struct core_dp_cost total, committed;
    uint32_t pending; /* pending releases naming the unit (store: pins it in the cache) */
    int has_slot;     /* name is "<device>|<slot>" with a representable slot end */
    int64_t slot_end; /* (slot + 1) * slot_ms */
    int in_store;     /* store: a row exists */
};

struct core_dp_ledger {
    int fd;
    int dfd; /* the directory holding the file, fsync'd with it */
    char *path;
    struct core_dp_cost cap;
    struct core_dp_scheme scheme;
    size_t max_tracked;
    struct smap rels;  /* release id -> struct rel (store back end: pending ones only) */
    struct smap units; /* unit -> struct unit_ent (store back end: the cache) */
    struct ldb *db;    /* NULL: JSONL back end */
    char *store;       /* the store's path (store back end) */
    int64_t max_end;   /* store: a unit with a later slot end that is not in the cache is not
                        * in the store either (at open: the largest stored slot end; then
                        * raised by every eviction, so a unit committed since and still
                        * cached needs no store query) */
    struct lidx ids;   /* store: the ids in the store whose own time (core_dp_id_time) is
                        * after hot_ms, or that have none -> their place in the audit log
                        * (loaded at open; advance moves the older ones out, to be found in
                        * the store; compaction removes deleted ones) */
    int64_t hot_ms;    /* store: see ids (INT64_MIN: every id is in memory) */
    int64_t keep_ms;   /* store: ids stay in memory while their time > cut - keep_ms */
    struct ldb_meta meta;
    int64_t horizon_ms, step_ms; /* store: replay horizon; compaction step */
    uint64_t size;               /* bytes of valid file content */
    int broken;                  /* a write/fsync failed: refuse all further commits */
    /* Row-text cache: releases of one plan share mech, cost and params, whose JSON (17-digit
     * doubles through printf, params parsed and re-serialised) was most of a charge's CPU.
     * Key: params text and cost bits; value: ,"eps":..,"rho":..,"delta":..[,"params":{..}]
     * exactly as jansson writes it inside the row. */
    char *tail_params; /* the params_json the tail was built from ("" for NULL) */
    struct core_dp_cost tail_cost;
    char *tail;
    struct core_dp_ledger_stats st;
};

static void rel_clear(struct rel *r)
{
    for (size_t i = 0; i < r->n_units; i++)
        free(r->units[i]);
    free(r->units);
    free(r->head);
    r->units = NULL;
    r->head = NULL;
    r->head_len = 0;
    r->n_units = 0;
}

static void rel_free(void *p)
{
    if (p) {
        rel_clear(p);
        free(p);
    }
}

static void set_err(char *errbuf, size_t n, const char *fmt, ...) CORE_PRINTF(3, 4);
static void set_err(char *errbuf, size_t n, const char *fmt, ...)
{
    va_list ap;
    if (!errbuf || n == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(errbuf, n, fmt, ap);
    va_end(ap);
}

static int cost_ok(const struct core_dp_cost *c)
{
    return c && c->eps >= 0 && isfinite(c->eps) && c->rho >= 0 && isfinite(c->rho) &&
           c->delta >= 0 && isfinite(c->delta);
}

static int name_ok(const char *s, size_t max)
{
    if (!s)
        return 0;
    size_t n = strnlen(s, max + 1);
    if (n < 1 || n > max)
        return 0;
    json_t *j = json_stringn(s, n); /* NULL unless valid UTF-8 without NUL */
    int ok = j != NULL;
    json_decref(j);
    return ok;
}

static int scheme_ok(const struct core_dp_scheme *s);

/* The end of unit's slot, when the name is "<device>|<slot>" and the end fits in int64. */
static int unit_slot_end(const struct core_dp_ledger *l, const char *unit, int64_t *end)
{
    char dev[CORE_DP_LEDGER_MAX_ID + 1];
    int64_t slot, lim = INT64_MAX / l->scheme.slot_ms - 1;
    if (core_dp_unit_parse(unit, dev, sizeof(dev), &slot) != 0 || slot > lim || slot < -lim)
        return 0;
    *end = (slot + 1) * l->scheme.slot_ms;
    return 1;
}

/* The cache entry of unit, created with zero totals when absent (not read from the store). */
static struct unit_ent *unit_ent_new(struct core_dp_ledger *l, const char *unit)
{
    struct unit_ent *e = core_xcalloc(1, sizeof(*e));
    e->has_slot = unit_slot_end(l, unit, &e->slot_end);
    smap_put(&l->units, unit, e);
    l->st.units++;
    return e;
}

/* Add c to unit's total (creating it); the totals are upward-rounded (core_dp_cost_add). */
static core_err unit_add(struct core_dp_ledger *l, const char *unit, const struct core_dp_cost *c)
{
    struct unit_ent *e = smap_get(&l->units, unit);
    core_err rc;
    if (!e)
        e = unit_ent_new(l, unit);
    rc = core_dp_cost_add(&e->total, c);
    if (rc == CORE_OK && e->total.eps > l->st.max_eps)
        l->st.max_eps = e->total.eps;
    return rc;
}

/* Total of unit: the cache, else (store back end) the store's committed total, else zeros.
 * Returns 0, or -1 when the store cannot be read. */
static int unit_total(const struct core_dp_ledger *l, const char *unit, struct core_dp_cost *out)
{
    const struct unit_ent *e = smap_get(&l->units, unit);
    int64_t end = LDB_NO_SLOT;
    int found = 0;
    *out = e ? e->total : (struct core_dp_cost){0, 0, 0};
    if (e || !l->db)
        return 0;
    if (!unit_slot_end(l, unit, &end))
        end = LDB_NO_SLOT;
    if (end != LDB_NO_SLOT && end > l->max_end)
        return 0;
    return ldb_unit_get(l->db, unit, end, out, &found) == CORE_OK ? 0 : -1;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorted, de-duplicated copy of the unit pointers (borrowed strings); returns the count. */
static size_t units_unique(const char *const *units, size_t n, const char **out)
{
    size_t m = 0;
    memcpy(out, units, n * sizeof(*out));
    qsort(out, n, sizeof(*out), cmp_str);
    for (size_t i = 0; i < n; i++)
        if (m == 0 || strcmp(out[m - 1], out[i]) != 0)
            out[m++] = out[i];
    return m;
}

/* ---- reopen: scan and rebuild ---- */

static int tracked_full(const struct core_dp_ledger *l, size_t more)
{
    return l->rels.n + l->units.n + more > l->max_tracked;
}

static int json_cost_field(const json_t *row, const char *key, double *out)
{
    json_t *v = json_object_get(row, key);
    if (!json_is_number(v))
        return 0;
    *out = json_number_value(v);
    return *out >= 0 && isfinite(*out);
}

/* Apply one committed row found at off/len. Returns CORE_OK or CORE_EPARSE/ETOOBIG. */
core_err core_dp_ledger_parse_row(const json_t *row, struct core_dp_row *out, char *eb, size_t ebn)
{
    const json_t *units = json_object_get(row, "units");
    size_t n = json_array_size(units);

    memset(out, 0, sizeof(*out));
    out->id = json_string_value(json_object_get(row, "id"));
    out->mech = json_string_value(json_object_get(row, "mech"));
    out->units = units;
    if (!json_is_object(row) || json_integer_value(json_object_get(row, "v")) != ROW_VERSION) {
        set_err(eb, ebn, "not a ledger row (\"v\": %d expected)", ROW_VERSION);
        return CORE_EPARSE;
    }
    if (!name_ok(out->id, CORE_DP_LEDGER_MAX_ID) || !name_ok(out->mech, CORE_DP_LEDGER_MAX_MECH) ||
        !json_is_string(json_object_get(row, "out"))) {
        set_err(eb, ebn, "id, mech or out missing or malformed");
        return CORE_EPARSE;
    }
    if (!json_is_array(units) || n == 0 || n > CORE_DP_LEDGER_MAX_UNITS) {
        set_err(eb, ebn, "release %s: units missing, empty or more than %u", out->id,
                CORE_DP_LEDGER_MAX_UNITS);
        return CORE_EPARSE;
    }
    for (size_t i = 0; i < n; i++)
        if (!name_ok(json_string_value(json_array_get(units, i)), CORE_DP_LEDGER_MAX_ID)) {
            set_err(eb, ebn, "release %s: unit %zu is not a string of 1..%d bytes", out->id, i,
                    CORE_DP_LEDGER_MAX_ID);
            return CORE_EPARSE;
        }
    if (!json_cost_field(row, "eps", &out->cost.eps) ||
        !json_cost_field(row, "rho", &out->cost.rho) ||
        !json_cost_field(row, "delta", &out->cost.delta)) {
        set_err(eb, ebn, "release %s: eps, rho or delta missing, negative or not finite", out->id);
        return CORE_EPARSE;
    }
    return CORE_OK;
}

static core_err tail_row(struct core_dp_ledger *l, const json_t *row, uint64_t off, size_t len);

static core_err scan_row(struct core_dp_ledger *l, const json_t *row, uint64_t off, size_t len)
{
    const char *ubuf[CORE_DP_LEDGER_MAX_UNITS];
    struct core_dp_row pr;
    struct core_dp_cost c;
    const char *id;
    size_t n;

    if (core_dp_ledger_parse_row(row, &pr, NULL, 0) != CORE_OK)
        return CORE_EPARSE;
    id = pr.id;
    c = pr.cost;
    n = json_array_size(pr.units);
    if (smap_get(&l->rels, id))
        return CORE_EPARSE; /* an id is committed once; a duplicate means a damaged file */
    for (size_t i = 0; i < n; i++)
        ubuf[i] = json_string_value(json_array_get(pr.units, i));
    if (tracked_full(l, n + 1))
        return CORE_ETOOBIG;
    n = units_unique(ubuf, n, ubuf);
    for (size_t i = 0; i < n; i++)
        if (unit_add(l, ubuf[i], &c) != CORE_OK)
            return CORE_EPARSE;
    struct rel *r = core_xcalloc(1, sizeof(*r));
    r->state = REL_COMMITTED;
    r->off = off;
    r->len = len;
    smap_put(&l->rels, id, r);
    l->st.releases++;
    return CORE_OK;
}

/* Parse one line (without its '\n'). *unparsable is set when the line is not JSON at all
 * (what a torn append looks like); a JSON line that is not a valid row is corruption. */
static core_err scan_line(struct core_dp_ledger *l, const char *line, size_t len, uint64_t off,
                          int *unparsable)
{
    json_error_t jerr;
    json_t *row = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    core_err rc;

    *unparsable = row == NULL;
    if (!json_is_object(row))
        rc = CORE_EPARSE;
    else if (off == 0)
        rc = CORE_OK; /* the header, checked before the scan (check_header) */
    else if (l->db)
        rc = tail_row(l, row, off, len + 1); /* store: a row beyond its last transaction */
    else
        rc = scan_row(l, row, off, len + 1);
    json_decref(row);
    return rc;
}

static core_err truncate_to(struct core_dp_ledger *l, uint64_t size)
{
    if (ftruncate(l->fd, (off_t)size) != 0 || fsync(l->fd) != 0)
        return CORE_EIO;
    l->st.fsyncs++;
    l->size = size;
    return CORE_OK;
}

/* Scan the file from byte start (0: the whole file; the store back end: the rows beyond its
 * last transaction); a bad line followed by more data is corruption (CORE_EPARSE), a bad or
 * unterminated LAST line is a torn append and is cut off. */
static core_err scan_file(struct core_dp_ledger *l, uint64_t start, char *errbuf,
                          size_t errbuf_size)
{
    struct core_lines *ln = NULL;
    char *line;
    size_t len;
    uint64_t off = start, bad_off = UINT64_MAX;
    core_err rc, got;
    FILE *f = fopen(l->path, "rb");

    if (!f || fseeko(f, (off_t)start, SEEK_SET) != 0) {
        set_err(errbuf, errbuf_size, "ledger: cannot read %s: %s", l->path, strerror(errno));
        if (f)
            fclose(f);
        return CORE_EIO;
    }
    /* the cap counts the line without its "\n" */
    ln = core_lines_wrap(f, l->path, CORE_DP_LEDGER_MAX_LINE - 1);
    while ((got = core_lines_next(ln, &line, &len, NULL, 0)) != CORE_ENOTFOUND) {
        int unparsable = 1;
        if (got == CORE_EIO) {
            rc = CORE_EIO;
            goto out;
        }
        if (bad_off != UINT64_MAX || got == CORE_ETOOBIG) {
            rc = bad_off != UINT64_MAX ? CORE_EPARSE : CORE_ETOOBIG;
            set_err(errbuf, errbuf_size, "ledger %s: bad line at byte %llu is not the last one",
                    l->path, (unsigned long long)bad_off);
            goto out;
        }
        /* a NUL byte or no "\n" (cut by end of file): unparsable, a torn append if last */
        rc = got == CORE_OK && core_lines_terminated(ln) ? scan_line(l, line, len, off, &unparsable)
                                                         : CORE_EPARSE;
        if (rc != CORE_OK && !unparsable) {
            set_err(errbuf, errbuf_size, "ledger %s: row at byte %llu: %s", l->path,
                    (unsigned long long)off,
                    rc == CORE_ETOOBIG ? "more than max_tracked ids+units"
                    : rc == CORE_EIO   ? "the store cannot be written"
                                       : "invalid row");
            goto out;
        }
        if (rc != CORE_OK)
            bad_off = off;
        off = start + core_lines_offset(ln);
    }
    rc = CORE_OK;
    l->size = off;
    if (bad_off != UINT64_MAX) {
        CORE_WARN("ledger %s: torn last line at byte %llu cut off (its commit never returned)",
                  l->path, (unsigned long long)bad_off);
        l->st.torn_dropped++;
        rc = truncate_to(l, bad_off);
    }
out:
    core_lines_free(ln);
    fclose(f);
    return rc;
}

/* ---- privacy units (one owner) ---- */

static int scheme_ok(const struct core_dp_scheme *s)
{
    return s->slot_ms >= 1 && s->time_radius >= 0 && s->time_radius <= 1000000 &&
           s->period_ms >= 1 && s->period_ms <= ((int64_t)1 << 40);
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

int64_t core_dp_unit_slot(const struct core_dp_scheme *s, int64_t t)
{
    return floor_div(t, s->slot_ms);
}

int core_dp_unit_name(char *buf, size_t n, const char *device, int64_t slot)
{
    int w = snprintf(buf, n, "%s|%lld", device, (long long)slot);
    return w < 0 || (size_t)w >= n ? -1 : w;
}

int core_dp_id_time(const char *id, int64_t *t)
{
    const char *p = id ? strchr(id, '|') : NULL;
    int64_t v = 0;
    int nd = 0;
    if (!p)
        return 0;
    for (p++; *p >= '0' && *p <= '9'; p++, nd++) {
        if (nd == 18)
            return 0;
        v = v * 10 + (*p - '0');
    }
    if (nd == 0 || (*p != '\0' && *p != '|' && *p != '@'))
        return 0;
    *t = v;
    return 1;
}

int core_dp_unit_parse(const char *unit, char *dev, size_t dev_size, int64_t *slot)
{
    const char *bar = strrchr(unit, '|');
    char *end = NULL;
    long long v;

    if (!bar || bar == unit || (size_t)(bar - unit) >= dev_size)
        return -1;
    errno = 0;
    v = strtoll(bar + 1, &end, 10);
    if (end == bar + 1 || *end || errno == ERANGE)
        return -1;
    memcpy(dev, unit, (size_t)(bar - unit));
    dev[bar - unit] = '\0';
    *slot = (int64_t)v;
    return 0;
}

core_err core_dp_units(const struct core_dp_scheme *s, const char *device, int64_t t0, int64_t t1,
                       int64_t extra_ms, char *buf, size_t buf_size, const char **units,
                       size_t max_units, size_t *n)
{
    const int64_t lim = (int64_t)1 << 62;
    int64_t widen, s0, s1;
    size_t used = 0;

    *n = 0;
    if (!scheme_ok(s) || !device || !device[0] || strchr(device, '|') || t1 <= t0 || t0 < -lim ||
        t1 > lim || extra_ms < 0 || extra_ms > lim / 4)
        return CORE_EINVAL;
    widen = s->time_radius * s->period_ms + extra_ms;
    if (widen > lim / 4)
        return CORE_EINVAL;
    s0 = core_dp_unit_slot(s, t0 - widen);
    s1 = core_dp_unit_slot(s, t1 - 1 + widen);
    if (s1 - s0 + 1 > (int64_t)max_units || s1 - s0 + 1 > (int64_t)CORE_DP_MAX_SPAN_UNITS)
        return CORE_ETOOBIG;
    for (int64_t sl = s0; sl <= s1; sl++) {
        int w = core_dp_unit_name(buf + used, buf_size - used, device, sl);
        if (w < 0)
            return CORE_ETOOBIG;
        units[(*n)++] = buf + used;
        used += (size_t)w + 1;
    }
    return CORE_OK;
}

/* ---- header: the unit scheme and caps, bound once ---- */

static size_t header_text(const struct core_dp_scheme *s, const struct core_dp_cost *cap, char *buf,
                          size_t n)
{
    int w = snprintf(buf, n,
                     "{\"gcdp_ledger\":%d,\"scheme\":{\"unit\":\"%s\",\"slot_ms\":%lld,"
                     "\"time_radius\":%lld,\"period_ms\":%lld},\"cap\":{\"eps\":%.17g,"
                     "\"rho\":%.17g,\"delta\":%.17g},\"accounting\":\"basic\"}\n",
                     LEDGER_FORMAT, CORE_DP_UNIT_FORMAT, (long long)s->slot_ms,
                     (long long)s->time_radius, (long long)s->period_ms, cap->eps, cap->rho,
                     cap->delta);
    return w > 0 && (size_t)w < n ? (size_t)w : 0;
}

/* Parse the header line text into scheme and cap. CORE_ESTATE with the reason. */
static core_err parse_header(const char *line, size_t len, const char *path,
                             struct core_dp_scheme *s, struct core_dp_cost *cap, char *eb,
                             size_t ebn)
{
    json_error_t jerr;
    json_t *h = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    json_t *sc = json_object_get(h, "scheme"), *cp = json_object_get(h, "cap");
    const char *unit = json_string_value(json_object_get(sc, "unit"));
    json_int_t fmt = json_integer_value(json_object_get(h, "gcdp_ledger"));
    core_err rc = CORE_ESTATE;

    if (!json_is_object(h) || !json_is_integer(json_object_get(h, "gcdp_ledger"))) {
        set_err(eb, ebn,
                "ledger %s: the first line is not a ledger header; refusing to take "
                "this file for a ledger",
                path);
    } else if (fmt != LEDGER_FORMAT) {
        set_err(eb, ebn,
                "ledger %s: format %lld records no unit scheme or caps (format %d "
                "does); its totals cannot be bound to a scheme, so it is refused (start a new "
                "ledger file and keep this one as the record of what was spent)",
                path, (long long)fmt, LEDGER_FORMAT);
    } else if (!unit || strcmp(unit, CORE_DP_UNIT_FORMAT) != 0 ||
               !json_is_integer(json_object_get(sc, "slot_ms")) ||
               !json_is_integer(json_object_get(sc, "time_radius")) ||
               !json_is_integer(json_object_get(sc, "period_ms")) ||
               !json_cost_field(cp, "eps", &cap->eps) || !json_cost_field(cp, "rho", &cap->rho) ||
               !json_cost_field(cp, "delta", &cap->delta) ||
               strcmp(json_string_value(json_object_get(h, "accounting"))
                          ? json_string_value(json_object_get(h, "accounting"))
                          : "",
                      "basic") != 0) {
        set_err(eb, ebn, "ledger %s: header malformed (scheme, cap or accounting)", path);
    } else {
        s->slot_ms = json_integer_value(json_object_get(sc, "slot_ms"));
        s->time_radius = json_integer_value(json_object_get(sc, "time_radius"));
        s->period_ms = json_integer_value(json_object_get(sc, "period_ms"));
        rc = scheme_ok(s) ? CORE_OK : CORE_ESTATE;
        if (rc != CORE_OK)
            set_err(eb, ebn, "ledger %s: header scheme out of range", path);
    }
    json_decref(h);
    return rc;
}

/* First line of fd's file (at most HEADER_MAX bytes) into buf; its length, or 0. */
static size_t first_line(int fd, char *buf, size_t n)
{
    ssize_t got = pread(fd, buf, n - 1, 0);
    char *nl;
    if (got <= 0)
        return 0;
    buf[got] = '\0';
    nl = memchr(buf, '\n', (size_t)got);
    return nl ? (size_t)(nl - buf) : 0;
}

static core_err read_header_fd(int fd, const char *path, struct core_dp_scheme *s,
                               struct core_dp_cost *cap, char *eb, size_t ebn)
{
    char buf[HEADER_MAX];
    struct stat st;
    size_t len;

    if (fstat(fd, &st) != 0) {
        set_err(eb, ebn, "ledger %s: %s", path, strerror(errno));
        return CORE_EIO;
    }
    if (st.st_size == 0) {
        set_err(eb, ebn,
                "ledger %s: the file exists but is empty (truncated?); a ledger is "
                "never silently new: remove the file explicitly if it really holds no history",
                path);
        return CORE_ESTATE;
    }
    len = first_line(fd, buf, sizeof(buf));
    if (len == 0) {
        set_err(eb, ebn, "ledger %s: no header line; refusing to take this file for a ledger",
                path);
        return CORE_ESTATE;
    }
    return parse_header(buf, len, path, s, cap, eb, ebn);
}

core_err core_dp_ledger_read_header(const char *path, struct core_dp_scheme *s,
                                    struct core_dp_cost *cap, char *eb, size_t ebn)
{
    struct stat st;
    int fd;
    core_err rc;

    if (stat(path, &st) != 0) {
        set_err(eb, ebn, "ledger %s: %s", path, strerror(errno));
        return CORE_EIO;
    }
    if (!S_ISREG(st.st_mode)) {
        set_err(eb, ebn, "ledger %s: not a regular file", path);
        return CORE_EIO;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        set_err(eb, ebn, "ledger %s: %s", path, strerror(errno));
        return CORE_EIO;
    }
    rc = read_header_fd(fd, path, s, cap, eb, ebn);
    close(fd);
    return rc;
}

/* Parse one line of core_dp_ledger_scan into row (*j: its JSON, or NULL when it is not JSON;
 * caller decrefs). Returns CORE_OK or the reason's code, why the reason. */
static core_err read_row(char *line, size_t n, core_err got, bool terminated,
                         struct core_dp_row *row, json_t **j, char *why, size_t whyn)
{
    json_error_t jerr;

    snprintf(why, whyn, "%s", "unterminated or too long");
    *j = NULL;
    if (got != CORE_OK || !terminated)
        return CORE_EPARSE;
    *j = json_loadb(line, n, JSON_REJECT_DUPLICATES, &jerr);
    if (!*j) {
        snprintf(why, whyn, "not JSON");
        return CORE_EPARSE;
    }
    return core_dp_ledger_parse_row(*j, row, why, whyn);
}

core_err core_dp_ledger_scan(const char *path, struct core_dp_scheme *scheme,
                             struct core_dp_cost *cap, core_dp_row_fn *fn, void *arg,
                             uint64_t *torn, char *eb, size_t ebn)
{
    core_err rc = core_dp_ledger_read_header(path, scheme, cap, eb, ebn), got;
    struct core_lines *ln = NULL;
    char *line = NULL, why[256] = "";
    size_t n = 0;

    *torn = 0;
    if (rc != CORE_OK)
        return rc;
    if (core_lines_open(path, CORE_DP_LEDGER_MAX_LINE - 1, &ln, why, sizeof(why)) != CORE_OK) {
        set_err(eb, ebn, "ledger %s: %s", path, strerror(errno));
        return CORE_EIO;
    }
    while (rc == CORE_OK &&
           (got = core_lines_next(ln, &line, &n, why, sizeof(why))) != CORE_ENOTFOUND) {
        struct core_dp_row row;
        char peek[64];
        json_t *j;
        core_err pr;
        if (got == CORE_EIO) {
            set_err(eb, ebn, "ledger %s: read error", path);
            rc = CORE_EIO;
            break;
        }
        if (core_lines_lineno(ln) == 1)
            continue; /* the header */
        pr = read_row(line, n, got, core_lines_terminated(ln), &row, &j, why, sizeof(why));
        if (pr == CORE_OK && fn(arg, &row) != 0)
            rc = CORE_ESTATE;
        json_decref(j);
        if (pr == CORE_OK)
            continue;
        /* as the open scan (scan_line): a JSON line that is not a valid row is corruption
         * wherever it stands; only an unparsable or unterminated last line is a torn append */
        if (j || core_lines_next(ln, &line, &n, peek, sizeof(peek)) != CORE_ENOTFOUND) {
            set_err(eb, ebn, "ledger %s: line %llu is not a valid ledger row (%s)", path,
                    (unsigned long long)core_lines_lineno(ln) - !j, why);
            rc = CORE_EPARSE;
        } else {
            (*torn)++;
        }
    }
    core_lines_free(ln);
    return rc;
}

/* The bound header must be exactly what this process was configured with. */
static core_err header_matches(const struct core_dp_ledger *l, const char *where,
                               const struct core_dp_scheme s, const struct core_dp_cost cap,
                               char *eb, size_t ebn)
{
#define DIFF(field, fmt, mine, theirs, what)                                                       \
    if ((mine) != (theirs)) {                                                                      \
        set_err(eb, ebn,                                                                           \
                "ledger %s was created with %s " fmt "; this run has " fmt                         \
                " (%s). A ledger's unit scheme and caps never change: a different "                \
                "setting needs a new ledger file (docs/release.md, \"The ledger\")",               \
                where, field, theirs, mine, what);                                                 \
        return CORE_ESTATE;                                                                        \
    }
    DIFF("slot_ms", "%lld", (long long)l->scheme.slot_ms, (long long)s.slot_ms,
         "release.ledger.slot_ms")
    DIFF("time_radius", "%lld", (long long)l->scheme.time_radius, (long long)s.time_radius,
         "release.policy.time_radius")
    DIFF("period_ms", "%lld", (long long)l->scheme.period_ms, (long long)s.period_ms,
         "the sampling period (ingest.period_ms; each window's prov.period_ms)")
    DIFF("cap eps", "%.17g", l->cap.eps, cap.eps, "release.ledger.cap_eps")
    DIFF("cap rho", "%.17g", l->cap.rho, cap.rho, "the zCDP cap")
    DIFF("cap delta", "%.17g", l->cap.delta, cap.delta, "release.ledger.cap_delta")
#undef DIFF
    return CORE_OK;
}

static core_err check_header(struct core_dp_ledger *l, char *eb, size_t ebn)
{
    struct core_dp_scheme s;
    struct core_dp_cost cap;
    core_err rc = read_header_fd(l->fd, l->path, &s, &cap, eb, ebn);

    return rc != CORE_OK ? rc : header_matches(l, l->path, s, cap, eb, ebn);
}

/* Create path with its header: written and fsync'd under a temporary name, then linked in
 * place (link(2) fails if path appeared meanwhile: never overwrites). */
static core_err create_ledger(struct core_dp_ledger *l, char *eb, size_t ebn)
{
    char hdr[HEADER_MAX], *tmp;
    size_t n = header_text(&l->scheme, &l->cap, hdr, sizeof(hdr)), tn = strlen(l->path) + 16;
    int fd;
    core_err rc = CORE_OK;

    tmp = core_xmalloc(tn);
    snprintf(tmp, tn, "%s.new.XXXXXX", l->path);
    fd = mkstemp(tmp);
    if (fd < 0 || n == 0) {
        set_err(eb, ebn, "ledger: cannot create %s: %s", l->path, strerror(errno));
        free(tmp);
        if (fd >= 0)
            close(fd);
        return CORE_EIO;
    }
    if (fchmod(fd, 0600) != 0 || write(fd, hdr, n) != (ssize_t)n || fsync(fd) != 0)
        rc = CORE_EIO;
    close(fd);
    if (rc == CORE_OK && link(tmp, l->path) != 0 && errno != EEXIST)
        rc = CORE_EIO;
    unlink(tmp);
    free(tmp);
    if (rc != CORE_OK)
        set_err(eb, ebn, "ledger: cannot create %s: %s", l->path, strerror(errno));
    return rc;
}

/* ---- open / free ---- */

/* Write all of buf at the end of the file (O_APPEND), or restore the old size on failure. */
static core_err append_all(struct core_dp_ledger *l, const char *buf, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(l->fd, buf + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (truncate_to(l, l->size) != CORE_OK)
                l->broken = 1;
            return CORE_EIO;
        }
        done += (size_t)w;
    }
    l->size += len;
    return CORE_OK;
}

/* fsync the file, then its directory (the brief asks for both before an output is
 * returned; the directory matters for the file's creation, and costs one more journal
 * commit per call, amortised by group commit). */
static core_err sync_file(struct core_dp_ledger *l)
{
    /* the store back end needs the directory only once (open): its audit log exists */
    if (fsync(l->fd) != 0 || (!(l->db && l->meta.audit_size > 0) && fsync(l->dfd) != 0)) {
        l->broken = 1; /* after a failed fsync the page cache state is unknown (Linux) */
        return CORE_EIO;
    }
    l->st.fsyncs++;
    return CORE_OK;
}

static core_err store_open(struct core_dp_ledger *l, char *eb, size_t ebn);

static int opts_ok(const struct core_dp_ledger_opts *o)
{
    return o && o->path && o->path[0] && cost_ok(&o->cap) && scheme_ok(&o->scheme);
}

static core_err open_fd(struct core_dp_ledger *l, char *errbuf, size_t errbuf_size)
{
    char *copy = core_xstrdup(l->path);
    l->dfd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(copy);
    if (l->dfd < 0) {
        set_err(errbuf, errbuf_size, "ledger: cannot open the directory of %s: %s", l->path,
                strerror(errno));
        return CORE_EIO;
    }
    if (access(l->path, F_OK) != 0 && errno == ENOENT) {
        core_err rc = create_ledger(l, errbuf, errbuf_size);
        if (rc != CORE_OK)
            return rc;
    }
    l->fd = open(l->path, O_RDWR | O_APPEND | O_CLOEXEC);
    if (l->fd < 0) {
        set_err(errbuf, errbuf_size, "ledger: cannot open %s: %s", l->path, strerror(errno));
        return CORE_EIO;
    }
    if (flock(l->fd, LOCK_EX | LOCK_NB) != 0) {
        set_err(errbuf, errbuf_size, "ledger: %s is in use by another process", l->path);
        return errno == EWOULDBLOCK ? CORE_EAGAIN : CORE_EIO;
    }
    return check_header(l, errbuf, errbuf_size);
}

core_err core_dp_ledger_open(const struct core_dp_ledger_opts *opts, struct core_dp_ledger **out,
                             char *errbuf, size_t errbuf_size)
{
    return core_dp_ledger_open_store(opts, NULL, out, errbuf, errbuf_size);
}

/* The one open of both back ends (store NULL: JSONL). */
core_err core_dp_ledger_open_store(const struct core_dp_ledger_opts *opts,
                                   const struct core_dp_store_opts *store,
                                   struct core_dp_ledger **out, char *errbuf, size_t errbuf_size)
{
    struct core_dp_ledger *l = NULL;
    core_err rc;

    if (!out || !opts_ok(opts) ||
        (store && (!store->path || !store->path[0] || strcmp(store->path, opts->path) == 0 ||
                   store->replay_horizon_ms < 0))) {
        set_err(errbuf, errbuf_size,
                "ledger: path, finite non-negative caps and a unit scheme "
                "(slot_ms >= 1, time_radius >= 0, period_ms >= 1) required");
        return CORE_EINVAL;
    }
    if (sodium_init() < 0)
        return CORE_ERNG;
    l = core_xcalloc(1, sizeof(*l));
    l->fd = -1;
    l->dfd = -1;
    l->path = core_xstrdup(opts->path);
    l->cap = opts->cap;
    l->scheme = opts->scheme;
    l->max_tracked = opts->max_tracked ? opts->max_tracked : CORE_DP_LEDGER_DEF_MAX_TRACKED;
    smap_init(&l->rels);
    smap_init(&l->units);
    if (store) {
        l->store = core_xstrdup(store->path);
        l->horizon_ms = store->replay_horizon_ms;
        l->step_ms = store->compact_step_ms > 0 ? store->compact_step_ms : 0;
        l->keep_ms = store->index_keep_ms == 0  ? CORE_DP_INDEX_KEEP_MS
                     : store->index_keep_ms < 0 ? 0
                                                : store->index_keep_ms;
        rc = store_open(l, errbuf, errbuf_size);
    } else {
        rc = open_fd(l, errbuf, errbuf_size);
        if (rc == CORE_OK)
            rc = scan_file(l, 0, errbuf, errbuf_size);
    }
    /* the directory entry of a newly created file must be durable too */
    if (rc == CORE_OK && sync_file(l) != CORE_OK) {
        set_err(errbuf, errbuf_size, "ledger: cannot fsync %s or its directory", l->path);
        rc = CORE_EIO;
    }
    if (rc != CORE_OK) {
        core_dp_ledger_free(l);
        return rc;
    }
    l->st.audit_bytes = l->size;
    *out = l;
    return CORE_OK;
}

void core_dp_ledger_free(struct core_dp_ledger *l)
{
    if (!l)
        return;
    if (l->fd >= 0)
        close(l->fd); /* releases the flock */
    if (l->dfd >= 0)
        close(l->dfd);
    smap_cleanup(&l->rels, rel_free);
    smap_cleanup(&l->units, free);
    ldb_close(l->db);
    free(l->tail_params);
    free(l->tail);
    free(l->path);
    free(l->store);
    lidx_cleanup(&l->ids);
    free(l);
}

/* ---- row text ---- */

/* JSON text of a string (quotes included), as jansson writes it in a row; new or NULL. */
static char *json_str_text(const char *v)
{
    json_t *j = json_string(v);
    char *t = j ? json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    json_decref(j);
    return t;
}

/* The cached tail for (cost, params_json): ,"eps":..,"rho":..,"delta":..[,"params":{..}] --
 * the members of the row after "units", serialised by jansson exactly as in the row (same
 * key order, same flags). NULL on failure. Borrowed (owned by l). */
static const char *row_tail(struct core_dp_ledger *l, const struct core_dp_cost *c,
                            const char *params_json)
{
    const char *pj = params_json ? params_json : "";
    json_t *obj;
    char *text;

    if (l->tail && strcmp(l->tail_params, pj) == 0 && core_dp_cost_same(&l->tail_cost, c))
        return l->tail;
    free(l->tail);
    free(l->tail_params);
    l->tail = l->tail_params = NULL;
    obj = json_pack("{s:f, s:f, s:f}", "eps", c->eps, "rho", c->rho, "delta", c->delta);
    if (obj && params_json)
        json_object_set_new(obj, "params", json_loads(params_json, 0, NULL));
    text = obj ? json_dumps(obj, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(obj);
    size_t tl = text ? strlen(text) : 0;
    if (tl >= 2 && text[0] == '{' && text[tl - 1] == '}') {
        text[0] = ',';       /* ,"eps":..."} */
        text[tl - 1] = '\0'; /* ,"eps":... */
        l->tail = text;
        l->tail_params = core_xstrdup(pj);
        l->tail_cost = *c;
        return l->tail;
    }
    free(text);
    return NULL;
}

/* Copy s (without its NUL) to d; returns the end of the copy. */
static char *put_str(char *d, const char *s)
{
    size_t n = strlen(s);
    memcpy(d, s, n);
    return d + n;
}

/* The row's JSON up to the output: {"v":1,"id":..,"mech":..,"units":[..],"eps":..,"rho":..,
 * "delta":..[,"params":{..}],"out":"  -- built once at charge time (jansson's escaping and
 * 17-digit doubles; the cost/params part is cached per ledger), so a commit only appends
 * base64 + "}. The bytes are those json_dumps(row, JSON_COMPACT | JSON_REAL_PRECISION(17))
 * gives for the row object built in this key order. New string or NULL. */
static char *row_head(struct core_dp_ledger *l, const char *id, const char *mech,
                      const char *const *units, size_t n, const struct core_dp_cost *c,
                      const char *params_json)
{
    static const char pre[] = "{\"v\":1,\"id\":", out[] = ",\"out\":\"";
    const char *tail = row_tail(l, c, params_json);
    char *qid = json_str_text(id), *qmech = json_str_text(mech), *head = NULL;
    char **qu = core_xcalloc(n, sizeof(*qu));
    size_t len = 0, ok = tail && qid && qmech;

    for (size_t i = 0; ok && i < n; i++)
        ok = (qu[i] = json_str_text(units[i])) != NULL;
    if (ok) {
        len = strlen(pre) + strlen(qid) + strlen(",\"mech\":") + strlen(qmech) +
              strlen(",\"units\":[]") + strlen(tail) + strlen(out) + 1;
        for (size_t i = 0; i < n; i++)
            len += strlen(qu[i]) + 1;
        head = core_xmalloc(len);
        char *d = head; /* len counted every byte below and the NUL */
        d = put_str(put_str(put_str(put_str(d, pre), qid), ",\"mech\":"), qmech);
        d = put_str(d, ",\"units\":[");
        for (size_t i = 0; i < n; i++)
            d = put_str(i ? put_str(d, ",") : d, qu[i]);
        *put_str(put_str(put_str(d, "]"), tail), out) = '\0';
    }
    for (size_t i = 0; i < n; i++)
        free(qu[i]);
    free(qu);
    free(qid);
    free(qmech);
    return head;
}

/* Length of the committed line head + base64(bytes) + "}\n". */
static size_t row_len(const struct rel *r, size_t len)
{
    return r->head_len + core_base64_len(len) + 3;
}

/* Write head + base64(bytes) + "}\n" at dst (exactly row_len() bytes, no NUL). */
static void row_format(const struct rel *r, const void *bytes, size_t len, char *dst)
{
    memcpy(dst, r->head, r->head_len);
    dst += r->head_len;
    core_base64_encode(dst, bytes, len);
    dst += core_base64_len(len);
    memcpy(dst, "\"}\n", 3);
}

/* ---- store back end (opts.store; dp_ledger_db.c) ---- */

static core_err line_at(const struct core_dp_ledger *l, uint64_t off, size_t known, char **out,
                        size_t *len);

/* 1 when the audit row at e is id's, 0 when it is another id's (a hash collision), -1 when
 * it cannot be read as a row. */
static int row_is(const struct core_dp_ledger *l, const struct lidx_ent *e, const char *id)
{
    char *line = NULL;
    size_t n = 0;
    int is = -1;
    if (line_at(l, e->off, e->len, &line, &n) == CORE_OK) {
        json_t *row = json_loadb(line, n, 0, NULL);
        const char *rid = json_string_value(json_object_get(row, "id"));
        is = rid ? strcmp(rid, id) == 0 : -1;
        json_decref(row);
    }
    free(line);
    return is;
}

/* Where id's row is in the audit log, through the in-memory index: a tag match is confirmed
 * by reading the row there (its id), never trusted. off/len may be NULL.
 * CORE_OK, CORE_ENOTFOUND, CORE_EIO (a candidate's row unreadable: the audit log under the
 * store changed; no decision is taken on it). */
/* An id whose own time is at or before hot_ms is not in memory: the store's (idt, id) index. */
static int id_cold(const struct core_dp_ledger *l, const char *id, int64_t *idt)
{
    if (!core_dp_id_time(id, idt)) {
        *idt = LDB_NO_SLOT;
        return 0;
    }
    return *idt <= l->hot_ms;
}

static core_err store_find(struct core_dp_ledger *l, const char *id, uint64_t *off, size_t *len)
{
    int64_t idt;
    if (id_cold(l, id, &idt)) {
        int64_t o = 0;
        size_t n = 0;
        core_err rc = ldb_rel_find(l->db, id, idt, &o, &n);
        l->st.id_store_reads++;
        if (rc == CORE_OK && (o < 0 || n == 0 || n > CORE_DP_LEDGER_MAX_LINE))
            rc = CORE_EIO;
        if (rc == CORE_OK && off)
            *off = (uint64_t)o;
        if (rc == CORE_OK && len)
            *len = n;
        return rc;
    }
    uint64_t h = lidx_hash(&l->ids, id);
    size_t pos = SIZE_MAX;
    const struct lidx_ent *e;
    while ((e = lidx_next(&l->ids, h, &pos)) != NULL) {
        int is = row_is(l, e, id);
        if (is < 0)
            return CORE_EIO;
        if (is) {
            if (off)
                *off = e->off;
            if (len)
                *len = e->len;
            return CORE_OK;
        }
        l->st.id_collisions++; /* another id of the same tag: one read, no harm */
    }
    return CORE_ENOTFOUND;
}

/* Charge checks the JSONL back end makes from memory: the id committed (CORE_EEXIST), a unit
 * at or before the compaction floor (CORE_EEXPIRED: its history is gone, never re-noised). */
static core_err store_precheck(struct core_dp_ledger *l, const char *id, const char *const *units,
                               size_t n)
{
    int64_t end;
    if (!l->db)
        return CORE_OK;
    /* (An id's time cannot replace the probe: the ledger does not know that an id names one
     * set of units, and must refuse a second release of it whatever units it names.) */
    core_err rc = store_find(l, id, NULL, NULL);
    if (rc != CORE_ENOTFOUND)
        return rc == CORE_OK ? CORE_EEXIST : rc;
    for (size_t i = 0; i < n; i++)
        if (unit_slot_end(l, units[i], &end) && end <= l->meta.floor_ms)
            return CORE_EEXPIRED;
    return CORE_OK;
}

/* Bring units into the cache with their committed totals from the store. */
static core_err store_load_units(struct core_dp_ledger *l, const char *const *u, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct core_dp_cost c = {0, 0, 0};
        int found = 0;
        int64_t end = LDB_NO_SLOT;
        if (smap_get(&l->units, u[i]))
            continue;
        if (!unit_slot_end(l, u[i], &end))
            end = LDB_NO_SLOT;
        if ((end == LDB_NO_SLOT || end <= l->max_end) && /* later ones cannot be there */
            ldb_unit_get(l->db, u[i], end, &c, &found) != CORE_OK)
            return CORE_EIO;
        struct unit_ent *e = unit_ent_new(l, u[i]);
        if (found) {
            e->total = e->committed = c;
            e->in_store = 1;
            if (c.eps > l->st.max_eps)
                l->st.max_eps = c.eps;
            l->st.units--; /* not a new unit: counted in the store's meta */
        }
    }
    return CORE_OK;
}

struct ent_undo {
    struct unit_ent *e;
    struct core_dp_cost committed;
    int in_store;
};

/* Add the batch's charges to the committed totals (in batch order, as a JSONL rescan adds
 * them), recording each entry's previous state in undo (sized for all units of the batch). */
static core_err batch_units(struct core_dp_ledger *l, size_t n, struct rel *const *rs,
                            struct ent_undo *undo, size_t *nu, struct ldb_meta *m)
{
    core_err rc = CORE_OK;
    *nu = 0;
    for (size_t i = 0; rc == CORE_OK && i < n; i++)
        for (size_t k = 0; rc == CORE_OK && k < rs[i]->n_units; k++) {
            struct unit_ent *e = smap_get(&l->units, rs[i]->units[k]);
            undo[(*nu)++] = (struct ent_undo){e, e->committed, e->in_store};
            m->units += !e->in_store;
            e->in_store = 1;
            rc = core_dp_cost_add(&e->committed, &rs[i]->cost);
            if (rc == CORE_OK) /* a unit named twice in the batch is written twice */
                rc = ldb_put_unit(l->db, rs[i]->units[k], &e->committed,
                                  e->has_slot ? e->slot_end : LDB_NO_SLOT);
        }
    return rc;
}

/* The batch's ids are in the store now: into the id index, at their rows' places. */
static void index_batch(struct core_dp_ledger *l, size_t n, const char *const *ids,
                        struct rel *const *rs, const size_t *lens, uint64_t at)
{
    int64_t idt;
    for (size_t i = 0; i < n; at += row_len(rs[i], lens[i]), i++)
        if (!id_cold(l, ids[i], &idt)) /* an older one is found in the store */
            lidx_put(&l->ids, lidx_hash(&l->ids, ids[i]), at, (uint32_t)row_len(rs[i], lens[i]));
}

/* The batch's rows, already written AND fsync'd to the audit log at offset start (the one
 * durability point: the audit log is the write-ahead log), go into the store in ONE
 * transaction (group commit; synchronous=NORMAL, no fsync of its own). Each stored row says
 * where its audit row is (offset, length); the output bytes exist once, in the audit log. A
 * crash after the audit fsync but before this COMMIT, or a power loss that takes the store's
 * last transactions, leaves audit rows the store does not have: the next open applies them
 * (store_replay_tail), because their outputs may have been published. So the totals in the
 * store never undercount a published output. On failure the store is rolled back, the
 * audit log cut back and the cache restored: the reservations stay pending (a crash before
 * the cut only over-counts, on the next open). */
static core_err store_commit(struct core_dp_ledger *l, size_t n, const char *const *ids,
                             struct rel *const *rs, const size_t *lens, uint64_t start)
{
    size_t tot = 0, nu = 0;
    struct ldb_meta m = l->meta;
    uint64_t at = start;
    core_err rc;

    for (size_t i = 0; i < n; i++)
        tot += rs[i]->n_units;
    struct ent_undo *undo = core_xcalloc(tot, sizeof(*undo));
    rc = ldb_begin(l->db);
    for (size_t i = 0; rc == CORE_OK && i < n; i++) {
        size_t len = row_len(rs[i], lens[i]);
        struct ldb_rel row = {
            .id = ids[i], .off = (int64_t)start, .t = rs[i]->t, .has_t = rs[i]->has_t, .len = len};
        (void)id_cold(l, ids[i], &row.idt);
        rc = ldb_put_rel(l->db, &row);
        start += len;
    }
    start = (uint64_t)l->meta.audit_size;
    if (rc == CORE_OK)
        rc = batch_units(l, n, rs, undo, &nu, &m);
    m.audit_size = (int64_t)l->size;
    m.releases += (int64_t)n;
    if (rc == CORE_OK)
        rc = ldb_put_meta(l->db, &m);
    if (rc == CORE_OK)
        rc = ldb_commit(l->db); /* atomic; durable through the audit log's fsync */
    if (rc == CORE_OK) {
        l->meta = m;
        for (size_t i = 0; i < nu; i++)
            undo[i].e->pending--;
        index_batch(l, n, ids, rs, lens, at);
    } else {
        CORE_WARN("ledger store: commit failed: %s", ldb_errmsg(l->db));
        ldb_rollback(l->db);
        for (size_t i = nu; i-- > 0;) {
            undo[i].e->committed = undo[i].committed;
            undo[i].e->in_store = undo[i].in_store;
        }
        if (truncate_to(l, start) != CORE_OK)
            l->broken = 1;
        rc = CORE_EIO;
    }
    free(undo);
    return rc;
}

/* The earliest slot end of units (the release's time); 0 when no unit has a slot. */
static int units_time(const struct core_dp_ledger *l, const char *const *u, size_t n, int64_t *t)
{
    int has = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t end;
        if (unit_slot_end(l, u[i], &end) && (!has || end < *t)) {
            *t = end;
            has = 1;
        }
    }
    return has;
}

/* One audit row beyond the store's last transaction (store_replay_tail): into the store as
 * its commit would have put it (inside the caller's transaction; counts in l->meta). */
static core_err tail_row(struct core_dp_ledger *l, const json_t *row, uint64_t off, size_t len)
{
    const char *u[CORE_DP_LEDGER_MAX_UNITS];
    struct core_dp_row pr;
    core_err rc;

    if (core_dp_ledger_parse_row(row, &pr, NULL, 0) != CORE_OK)
        return CORE_EPARSE;
    rc = store_find(l, pr.id, NULL, NULL);
    if (rc != CORE_ENOTFOUND)
        return rc == CORE_OK ? CORE_EPARSE : rc; /* an id is committed once */
    size_t n = json_array_size(pr.units);
    for (size_t i = 0; i < n; i++)
        u[i] = json_string_value(json_array_get(pr.units, i));
    n = units_unique(u, n, u);
    struct ldb_rel r = {.id = pr.id, .off = (int64_t)off, .len = len};
    r.has_t = units_time(l, u, n, &r.t);
    int cold = id_cold(l, pr.id, &r.idt);
    rc = store_load_units(l, u, n);
    if (rc == CORE_OK)
        rc = ldb_put_rel(l->db, &r);
    if (rc == CORE_OK && !cold) /* (a failed open discards the index with the ledger) */
        lidx_put(&l->ids, lidx_hash(&l->ids, pr.id), off, (uint32_t)len);
    for (size_t i = 0; rc == CORE_OK && i < n; i++) {
        struct unit_ent *e = smap_get(&l->units, u[i]);
        l->meta.units += !e->in_store;
        e->in_store = 1;
        rc = core_dp_cost_add(&e->committed, &pr.cost) == CORE_OK ? CORE_OK : CORE_EPARSE;
        e->total = e->committed;
        if (rc == CORE_OK)
            rc = ldb_put_unit(l->db, u[i], &e->committed, e->has_slot ? e->slot_end : LDB_NO_SLOT);
    }
    l->meta.releases++;
    return rc;
}

/* The audit log holds rows beyond the store's last transaction: fsync'd by a commit whose
 * store transaction never ran (a crash between the two) or was lost (a power loss takes the
 * last synchronous=NORMAL transactions). Their outputs may have been published, so they go
 * into the store in one transaction, as their commit would have put them; a torn last line
 * (its fsync never returned: never published) is cut off. */
static core_err store_replay_tail(struct core_dp_ledger *l, char *eb, size_t ebn)
{
    struct ldb_meta m0 = l->meta;
    core_err rc;

    if (ldb_max_slot_end(l->db, &l->max_end) != CORE_OK || ldb_begin(l->db) != CORE_OK)
        return CORE_EIO;
    rc = scan_file(l, (uint64_t)m0.audit_size, eb, ebn); /* tail_row per row; sets l->size */
    l->meta.audit_size = (int64_t)l->size;
    if (rc == CORE_OK)
        rc = ldb_put_meta(l->db, &l->meta);
    if (rc == CORE_OK)
        rc = ldb_commit(l->db);
    if (rc != CORE_OK) {
        ldb_rollback(l->db);
        l->meta = m0;
        return rc == CORE_EIO ? CORE_EIO : CORE_ESTATE;
    }
    if (l->meta.releases > m0.releases)
        CORE_WARN("ledger %s: %lld rows of the audit log beyond the store's last transaction "
                  "applied to the store %s (a crash or power loss between the two)",
                  l->path, (long long)(l->meta.releases - m0.releases), l->store);
    return CORE_OK;
}

/* The audit log must hold at least what the store recorded (it is written and fsync'd
 * first): a longer one holds rows the store must take (store_replay_tail); a shorter one
 * lost committed rows, which nothing can give back: refused. */
static core_err store_audit_size(struct core_dp_ledger *l, size_t hdr_len, char *eb, size_t ebn)
{
    struct stat st;
    if (fstat(l->fd, &st) != 0)
        return CORE_EIO;
    if (l->meta.audit_size == 0) { /* created, audit log not yet bound: header only */
        if ((size_t)st.st_size != hdr_len) {
            set_err(eb, ebn,
                    "ledger store %s is new but the audit log %s holds rows; refusing "
                    "to bind them (import an existing ledger with gcdp ledger --import)",
                    l->store, l->path);
            return CORE_ESTATE;
        }
        l->meta.audit_size = st.st_size;
        if (ldb_begin(l->db) != CORE_OK || ldb_put_meta(l->db, &l->meta) != CORE_OK ||
            ldb_commit(l->db) != CORE_OK) {
            ldb_rollback(l->db);
            return CORE_EIO;
        }
    }
    l->size = (uint64_t)st.st_size;
    if (st.st_size < l->meta.audit_size) {
        set_err(eb, ebn,
                "ledger audit log %s has %lld bytes but its store %s recorded %lld: "
                "rows the store committed are missing from the audit log (it is written and "
                "fsync'd before the store); refusing (restore the audit log, inspect both)",
                l->path, (long long)st.st_size, l->store, (long long)l->meta.audit_size);
        return CORE_ESTATE;
    }
    if (st.st_size > l->meta.audit_size)
        return store_replay_tail(l, eb, ebn);
    return CORE_OK;
}

static core_err load_id(void *arg, const char *id, int64_t off, size_t len)
{
    struct lidx *x = arg;
    if (off < 0 || len > CORE_DP_LEDGER_MAX_LINE)
        return CORE_EPARSE;
    lidx_put(x, lidx_hash(x, id), (uint64_t)off, (uint32_t)len);
    return CORE_OK;
}

/* The id index from the store's replay table: the ids after the stored hot_ms (and those
 * without a time), O(recent releases), neither O(history) nor O(horizon). */
static core_err store_load_ids(struct core_dp_ledger *l, char *eb, size_t ebn)
{
    core_err rc;
    l->hot_ms = l->meta.hot_ms;
    lidx_init(&l->ids, 0);
    rc = ldb_rel_each_idt(l->db, l->hot_ms, LDB_NO_SLOT, load_id, &l->ids);
    if (rc == CORE_OK && l->ids.n > (size_t)l->meta.releases)
        rc = CORE_EPARSE;
    if (rc != CORE_OK) {
        set_err(eb, ebn, "ledger store %s: cannot read its replay table (%s): %s", l->store,
                core_errname(rc), ldb_errmsg(l->db));
        return rc == CORE_EIO ? CORE_EIO : CORE_ESTATE;
    }
    return CORE_OK;
}

/* Open (creating when neither exists) the store and its audit log; never takes an existing
 * JSONL ledger for a new one. */
static core_err store_open(struct core_dp_ledger *l, char *eb, size_t ebn)
{
    char hdr[HEADER_MAX], *text = NULL;
    size_t hn = header_text(&l->scheme, &l->cap, hdr, sizeof(hdr));
    struct core_dp_scheme s;
    struct core_dp_cost cap;
    core_err rc = CORE_OK;

    if (hn == 0)
        return CORE_EINVAL;
    if (access(l->store, F_OK) != 0 && errno == ENOENT) {
        if (access(l->path, F_OK) == 0) {
            set_err(eb, ebn,
                    "ledger %s exists but its store %s does not: import it once "
                    "(gcdp ledger --import %s --to %s)",
                    l->path, l->store, l->path, l->store);
            return CORE_ESTATE;
        }
        hdr[hn - 1] = '\0'; /* the stored header has no newline */
        rc = ldb_create(l->store, hdr, eb, ebn);
        hdr[hn - 1] = '\n';
        if (rc == CORE_EEXIST)
            rc = CORE_OK; /* another process created it: open it like any existing one */
    }
    if (rc == CORE_OK)
        rc = open_fd(l, eb, ebn); /* audit log: created if absent, locked, header checked */
    if (rc == CORE_OK)
        rc = ldb_open(l->store, &l->db, &text, &l->meta, eb, ebn);
    if (rc == CORE_OK)
        rc = parse_header(text, strlen(text), l->store, &s, &cap, eb, ebn);
    if (rc == CORE_OK)
        rc = header_matches(l, l->store, s, cap, eb, ebn);
    free(text);
    if (rc == CORE_OK)
        rc = store_load_ids(l, eb, ebn);
    if (rc == CORE_OK)
        rc = store_audit_size(l, hn, eb, ebn);
    if (rc == CORE_OK)
        rc = ldb_max_slot_end(l->db, &l->max_end);
    if (rc == CORE_OK && (fsync(l->fd) != 0 || fsync(l->dfd) != 0))
        rc = CORE_EIO;
    l->st.releases = (uint64_t)l->meta.releases;
    l->st.units = (uint64_t)l->meta.units;
    return rc;
}

static int64_t sat_sub(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_sub_overflow(a, b, &r) ? (b > 0 ? INT64_MIN : INT64_MAX) : r;
}

/* Drop from the cache units without pending charges whose slot ended at or before cut, and
 * give the others their committed total back; units at or before floor lose their row. */
static void cache_trim(struct core_dp_ledger *l, int64_t cut, int64_t floor)
{
    size_t n = 0;
    char **gone = core_xcalloc(l->units.n + 1, sizeof(*gone));
    for (size_t i = 0; i < l->units.cap; i++) {
        struct unit_ent *e = l->units.slots[i].val;
        if (!l->units.slots[i].key)
            continue;
        if (e->has_slot && e->slot_end <= floor)
            e->in_store = 0; /* its row is compacted away; a pending commit writes it again */
        if (e->pending > 0)
            continue;
        e->total = e->committed;
        if (e->has_slot && (e->slot_end <= cut || e->slot_end <= floor)) {
            gone[n++] = l->units.slots[i].key;
            if (e->slot_end > l->max_end)
                l->max_end = e->slot_end; /* it may be in the store, no longer cached */
        }
    }
    for (size_t i = 0; i < n; i++) {
        char *key = core_xstrdup(gone[i]); /* smap_del frees the map's copy */
        smap_del(&l->units, key, free);
        free(key);
    }
    free(gone);
}

/* The id index entries of the releases a compaction deletes (removed once it commits). */
struct gone_ids {
    const struct core_dp_ledger *l;
    const struct lidx *x;
    struct gone_id {
        uint64_t h, off;
    } * v;
    size_t n, cap;
};

static core_err gone_id(void *arg, const char *id, int64_t off, size_t len)
{
    struct gone_ids *g = arg;
    int64_t idt;
    (void)len;
    if (id_cold(g->l, id, &idt))
        return CORE_OK; /* not in memory */
    if (g->n == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 1024;
        g->v = core_xrealloc(g->v, g->cap * sizeof(*g->v));
    }
    g->v[g->n++] = (struct gone_id){lidx_hash(g->x, id), (uint64_t)off};
    return CORE_OK;
}

/* The collected ids leave the memory index (what: "compacted", "moved to the store"); frees g. */
static void gone_ids_drop(struct core_dp_ledger *l, struct gone_ids *g, const char *what)
{
    for (size_t i = 0; i < g->n; i++)
        if (!lidx_del(&l->ids, g->v[i].h, g->v[i].off))
            CORE_WARN("ledger store: release at audit offset %llu (%s) was not indexed",
                      (unsigned long long)g->v[i].off, what);
    free(g->v);
    g->v = NULL;
    g->n = g->cap = 0;
}

/* Delete releases and units at or before floor in one transaction; moves meta.floor_ms; the
 * deleted ids leave the id index once it has committed. */
static core_err store_compact(struct core_dp_ledger *l, int64_t floor)
{
    struct ldb_meta m = l->meta;
    struct gone_ids g = {l, &l->ids, NULL, 0, 0};
    int64_t nr = 0, nu = 0;
    core_err rc = ldb_begin(l->db);
    if (rc == CORE_OK)
        rc = ldb_rel_each(l->db, floor, gone_id, &g);
    if (rc == CORE_OK)
        rc = ldb_compact(l->db, floor, &nr, &nu);
    if (rc == CORE_OK && nr < (int64_t)g.n)
        rc = CORE_EIO;
    m.floor_ms = floor;
    m.releases -= nr;
    m.units -= nu;
    if (rc == CORE_OK)
        rc = ldb_put_meta(l->db, &m);
    if (rc == CORE_OK)
        rc = ldb_commit(l->db);
    if (rc != CORE_OK) {
        CORE_WARN("ledger store: compaction failed: %s", ldb_errmsg(l->db));
        ldb_rollback(l->db);
        free(g.v);
        return CORE_EIO;
    }
    gone_ids_drop(l, &g, "compacted");
    l->meta = m;
    l->st.compacted += (uint64_t)nr;
    l->st.releases = (uint64_t)m.releases;
    l->st.units = (uint64_t)m.units;
    return CORE_OK;
}

/* The ids whose own time is at or before hot leave the memory index: from now on they are
 * found in the store (store_find). hot_ms is stored with the next meta write; an open loads
 * the ids after the stored value, which is never above the live one. */
static core_err index_evict(struct core_dp_ledger *l, int64_t hot)
{
    struct gone_ids g = {l, &l->ids, NULL, 0, 0};
    core_err rc;
    if (hot <= l->hot_ms)
        return CORE_OK;
    rc = ldb_rel_each_idt(l->db, l->hot_ms, hot, gone_id, &g);
    if (rc != CORE_OK) {
        CORE_WARN("ledger store: cannot read the ids to move out of memory: %s", ldb_errmsg(l->db));
        free(g.v);
        return CORE_EIO;
    }
    gone_ids_drop(l, &g, "moved to the store");
    l->hot_ms = l->meta.hot_ms = hot;
    return CORE_OK;
}

core_err core_dp_ledger_advance(struct core_dp_ledger *l, int64_t watermark_ms, int64_t lateness_ms)
{
    int64_t cut, floor = INT64_MIN;
    if (!l || lateness_ms < 0)
        return CORE_EINVAL;
    if (!l->db)
        return CORE_OK;
    cut = sat_sub(sat_sub(watermark_ms, lateness_ms), l->scheme.time_radius * l->scheme.period_ms);
    if (l->horizon_ms > 0 && sat_sub(watermark_ms, l->horizon_ms) > l->meta.floor_ms &&
        (l->meta.floor_ms == INT64_MIN ||
         sat_sub(sat_sub(watermark_ms, l->horizon_ms), l->meta.floor_ms) >= l->step_ms)) {
        floor = sat_sub(watermark_ms, l->horizon_ms);
        if (store_compact(l, floor) != CORE_OK)
            return CORE_EIO;
    }
    cache_trim(l, cut, floor);
    return index_evict(l, sat_sub(cut, l->keep_ms));
}

/* ---- import of a JSONL ledger into a new store ---- */

/* The release time of a committed JSONL row (earliest slot end of its units). */
static int row_time(const struct core_dp_ledger *old, const struct rel *r, int64_t *t)
{
    char *line = core_xmalloc(r->len);
    json_t *row = NULL;
    int has = 0;
    if (pread(old->fd, line, r->len, (off_t)r->off) == (ssize_t)r->len)
        row = json_loadb(line, r->len - 1, 0, NULL);
    const json_t *units = json_object_get(row, "units");
    for (size_t i = 0; i < json_array_size(units); i++) {
        int64_t end;
        const char *u = json_string_value(json_array_get(units, i));
        if (u && unit_slot_end(old, u, &end) && (!has || end < *t)) {
            *t = end;
            has = 1;
        }
    }
    json_decref(row);
    free(line);
    return has;
}

/* Copy every committed release (id, time, where its row is: the JSONL file becomes the
 * store's audit log) of old into d, 4096 per transaction. */
static core_err import_rels(struct core_dp_ledger *old, struct ldb *d, uint64_t *rows)
{
    core_err rc = ldb_begin(d);
    for (size_t i = 0; rc == CORE_OK && i < old->rels.cap; i++) {
        const struct rel *r = old->rels.slots[i].val;
        int64_t t = 0;
        if (!old->rels.slots[i].key || r->state != REL_COMMITTED)
            continue;
        int has_t = row_time(old, r, &t);
        struct ldb_rel row = {.id = old->rels.slots[i].key,
                              .off = (int64_t)r->off,
                              .t = t,
                              .has_t = has_t,
                              .len = r->len};
        if (!core_dp_id_time(row.id, &row.idt))
            row.idt = LDB_NO_SLOT;
        rc = ldb_put_rel(d, &row);
        if (rc == CORE_OK && ++*rows % 4096 == 0) {
            rc = ldb_commit(d);
            if (rc == CORE_OK)
                rc = ldb_begin(d);
        }
    }
    if (rc == CORE_OK)
        rc = ldb_commit(d);
    return rc;
}

static core_err import_units(struct core_dp_ledger *old, struct ldb *d)
{
    core_err rc = ldb_begin(d);
    for (size_t i = 0; rc == CORE_OK && i < old->units.cap; i++) {
        const struct unit_ent *e = old->units.slots[i].val;
        if (old->units.slots[i].key)
            rc = ldb_put_unit(d, old->units.slots[i].key, &e->total,
                              e->has_slot ? e->slot_end : LDB_NO_SLOT);
    }
    struct ldb_meta m = {.audit_size = (int64_t)old->size,
                         .floor_ms = INT64_MIN,
                         .releases = (int64_t)old->st.releases,
                         .units = (int64_t)old->units.n,
                         .hot_ms = INT64_MIN};
    if (rc == CORE_OK)
        rc = ldb_put_meta(d, &m);
    return rc == CORE_OK ? ldb_commit(d) : rc;
}

/* Every unit's committed total bit for bit, every release's row (readable, its id, at the
 * place the store records), and the counts. */
static core_err import_verify(struct core_dp_ledger *old, struct ldb *d, uint64_t rows)
{
    core_err rc = CORE_OK;
    for (size_t i = 0; rc == CORE_OK && i < old->units.cap; i++) {
        const struct unit_ent *e = old->units.slots[i].val;
        struct core_dp_cost c;
        int found = 0;
        if (!old->units.slots[i].key)
            continue;
        rc = ldb_unit_get(d, old->units.slots[i].key, e->has_slot ? e->slot_end : LDB_NO_SLOT, &c,
                          &found);
        if (rc == CORE_OK && (!found || !core_dp_cost_same(&c, &e->total)))
            rc = CORE_EINVARIANT;
    }
    for (size_t i = 0; rc == CORE_OK && i < old->rels.cap; i++) {
        const struct rel *r = old->rels.slots[i].val;
        uint8_t *a = NULL;
        size_t la = 0, lb = 0;
        int64_t ob = 0, t = LDB_NO_SLOT;
        if (!old->rels.slots[i].key || r->state != REL_COMMITTED)
            continue;
        rc = core_dp_ledger_lookup(old, old->rels.slots[i].key, &a, &la);
        if (rc == CORE_OK && !row_time(old, r, &t))
            t = LDB_NO_SLOT;
        if (rc == CORE_OK)
            rc = ldb_rel_get(d, old->rels.slots[i].key, t, &ob, &lb);
        if (rc == CORE_OK && (ob != (int64_t)r->off || lb != r->len))
            rc = CORE_EINVARIANT;
        free(a);
    }
    return rc == CORE_OK && rows != old->st.releases ? CORE_EINVARIANT : rc;
}

/* Fill and verify the new store at tmp (already created). */
static core_err import_fill(struct core_dp_ledger *old, const char *tmp, uint64_t *rows, char *eb,
                            size_t ebn)
{
    struct ldb *d = NULL;
    struct ldb_meta m;
    char *text = NULL;
    core_err rc = ldb_open(tmp, &d, &text, &m, eb, ebn);
    free(text);
    if (rc == CORE_OK)
        rc = import_rels(old, d, rows);
    if (rc == CORE_OK)
        rc = import_units(old, d);
    if (rc == CORE_EIO)
        set_err(eb, ebn, "ledger import: store write failed: %s", ldb_errmsg(d));
    if (rc == CORE_OK && (rc = import_verify(old, d, *rows)) != CORE_OK)
        set_err(eb, ebn,
                "ledger import: the new store does not hold the same totals and "
                "outputs as %s (%s); nothing put in place",
                old->path, core_errname(rc));
    ldb_close(d);
    return rc;
}

core_err core_dp_ledger_import(const struct core_dp_ledger_opts *opts, const char *store,
                               uint64_t *rows, char *eb, size_t ebn)
{
    struct core_dp_ledger_opts jo;
    struct core_dp_ledger *old = NULL;
    char hdr[HEADER_MAX], *tmp;
    core_err rc;

    if (!opts || !opts->path || !store || !store[0] || !rows || strcmp(store, opts->path) == 0)
        return CORE_EINVAL;
    *rows = 0;
    if (access(store, F_OK) == 0) {
        set_err(eb, ebn, "ledger import: %s exists; refusing to overwrite a store", store);
        return CORE_EEXIST;
    }
    if (access(opts->path, F_OK) != 0) {
        set_err(eb, ebn, "ledger import: %s: %s", opts->path, strerror(errno));
        return CORE_EIO;
    }
    jo = *opts;
    jo.max_tracked = SIZE_MAX; /* the one-off import holds the whole history, by design */
    rc = core_dp_ledger_open(&jo, &old, eb, ebn); /* must exist: never creates here */
    if (rc != CORE_OK)
        return rc;
    size_t hn = header_text(&old->scheme, &old->cap, hdr, sizeof(hdr)), tn;
    hdr[hn ? hn - 1 : 0] = '\0';
    tn = strlen(store) + 32;
    tmp = core_xmalloc(tn);
    snprintf(tmp, tn, "%s.import.%ld", store, (long)getpid());
    unlink(tmp);
    rc = ldb_create(tmp, hdr, eb, ebn);
    if (rc == CORE_OK)
        rc = import_fill(old, tmp, rows, eb, ebn);
    if (rc == CORE_OK && link(tmp, store) != 0) {
        set_err(eb, ebn, "ledger import: cannot put %s in place: %s", store, strerror(errno));
        rc = errno == EEXIST ? CORE_EEXIST : CORE_EIO;
    }
    if (rc == CORE_OK && fsync(old->dfd) != 0)
        rc = CORE_EIO;
    unlink(tmp);
    free(tmp);
    core_dp_ledger_free(old);
    return rc;
}

/* ---- charge / cancel ---- */

static core_err charge_args_ok(const struct core_dp_ledger *l, const char *id, const char *mech,
                               const char *const *units, size_t n_units,
                               const struct core_dp_cost *cost, const char *params_json)
{
    if (!name_ok(id, CORE_DP_LEDGER_MAX_ID) || !name_ok(mech, CORE_DP_LEDGER_MAX_MECH) || !units ||
        !cost_ok(cost))
        return CORE_EINVAL;
    if (n_units == 0)
        return CORE_EINVAL;
    if (n_units > CORE_DP_LEDGER_MAX_UNITS)
        return CORE_ETOOBIG;
    for (size_t i = 0; i < n_units; i++)
        if (!name_ok(units[i], CORE_DP_LEDGER_MAX_ID))
            return CORE_EINVAL;
    if (params_json) {
        if (strnlen(params_json, CORE_DP_LEDGER_MAX_PARAMS + 1) > CORE_DP_LEDGER_MAX_PARAMS)
            return CORE_ETOOBIG;
        if (l->tail_params && l->tail_params[0] && strcmp(l->tail_params, params_json) == 0)
            return CORE_OK; /* the cached tail's params passed this check before ("" is
                               the cache key of NULL params, never a validated text) */
        json_t *p = json_loads(params_json, JSON_REJECT_DUPLICATES, NULL);
        int ok = json_is_object(p);
        json_decref(p);
        if (!ok)
            return CORE_EINVAL;
    }
    return CORE_OK;
}

/* Every listed unit must stay within the cap in every field (NaN fails closed). */
/* Index of the first unit that cost would take past the cap (upward-rounded totals, NaN
 * fails closed), or n when every unit stays within it. The one cap decision. */
static size_t first_over_cap(const struct core_dp_ledger *l, const char *const *u, size_t n,
                             const struct core_dp_cost *cost)
{
    for (size_t i = 0; i < n; i++) {
        struct core_dp_cost t;
        if (unit_total(l, u[i], &t) != 0 || /* an unreadable store fails closed */
            core_dp_cost_add(&t, cost) != CORE_OK || !(t.eps <= l->cap.eps) ||
            !(t.rho <= l->cap.rho) || !(t.delta <= l->cap.delta))
            return i;
    }
    return n;
}

static int within_cap(const struct core_dp_ledger *l, const char *const *u, size_t n,
                      const struct core_dp_cost *cost)
{
    return first_over_cap(l, u, n, cost) == n;
}

void core_dp_ledger_refusal(const struct core_dp_ledger *l, const char *const *units, size_t n,
                            const struct core_dp_cost *cost, const char *what, const char *eps_name,
                            char *errbuf, size_t errbuf_size)
{
    size_t i = first_over_cap(l, units, n, cost);
    struct core_dp_cost spent = {0, 0, 0};

    if (i == n) {
        set_err(errbuf, errbuf_size, "privacy budget: lifetime cap reached (eps cap %.6g); refused",
                l->cap.eps);
        return;
    }
    if (core_dp_ledger_spent(l, units[i], &spent) != CORE_OK)
        spent.eps = spent.delta = NAN;
    set_err(errbuf, errbuf_size,
            "privacy budget: unit '%s' has spent eps=%.6g delta=%.3g; this %s needs "
            "%s=%.6g delta=%.3g; lifetime cap eps=%.6g delta=%.3g (release.ledger.cap_*); "
            "refused",
            units[i], spent.eps, spent.delta, what, eps_name, cost->eps, cost->delta, l->cap.eps,
            l->cap.delta);
}

static size_t count_new_units(const struct core_dp_ledger *l, const char *const *u, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += smap_get(&l->units, u[i]) == NULL;
    return k;
}

/* Record the reservation (charged already): the pending release r (NULL: new) with its
 * sorted unique units, its time (earliest slot end) and its row head (taken over). */
static void rel_pending(struct core_dp_ledger *l, struct rel *r, const char *id,
                        const char *const *uniq, size_t n, const struct core_dp_cost *cost,
                        char *head)
{
    if (!r) {
        r = core_xcalloc(1, sizeof(*r));
        smap_put(&l->rels, id, r);
    }
    r->state = REL_PENDING;
    r->head = head;
    r->head_len = strlen(head);
    r->cost = *cost;
    r->n_units = n;
    r->units = core_xcalloc(n, sizeof(*r->units));
    r->has_t = 0;
    for (size_t i = 0; i < n; i++) {
        struct unit_ent *e = smap_get(&l->units, uniq[i]);
        e->pending++;
        r->units[i] = core_xstrdup(uniq[i]);
        if (e->has_slot && (!r->has_t || e->slot_end < r->t)) {
            r->t = e->slot_end;
            r->has_t = 1;
        }
    }
    l->st.pending++;
}

core_err core_dp_ledger_charge(struct core_dp_ledger *l, const char *release_id, const char *mech,
                               const char *const *units, size_t n_units,
                               const struct core_dp_cost *cost, const char *params_json)
{
    const char **uniq = NULL;
    char *head = NULL;
    core_err rc;

    if (!l)
        return CORE_EINVAL;
    rc = charge_args_ok(l, release_id, mech, units, n_units, cost, params_json);
    if (rc != CORE_OK)
        return rc;
    struct rel *r = smap_get(&l->rels, release_id);
    if (r && r->state == REL_COMMITTED)
        return CORE_EEXIST;
    if (r && r->state == REL_PENDING)
        return CORE_ESTATE;
    rc = store_precheck(l, release_id, units, n_units);
    if (rc != CORE_OK)
        return rc;
    uniq = core_xmalloc(n_units * sizeof(*uniq));
    size_t n = units_unique(units, n_units, uniq);
    if (l->db && tracked_full(l, count_new_units(l, uniq, n) + 1))
        cache_trim(l, INT64_MAX, INT64_MIN); /* a full cache: the store has every total */
    if (tracked_full(l, count_new_units(l, uniq, n) + (r ? 0 : 1))) {
        rc = CORE_ETOOBIG;
        goto out;
    }
    if (l->db && (rc = store_load_units(l, uniq, n)) != CORE_OK)
        goto out;
    if (!within_cap(l, uniq, n, cost)) {
        rc = CORE_EBUDGET;
        goto out;
    }
    head = row_head(l, release_id, mech, uniq, n, cost, params_json);
    if (!head) {
        rc = CORE_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        if (unit_add(l, uniq[i], cost) != CORE_OK) { /* cannot fail after within_cap */
            free(head);
            rc = CORE_EINVARIANT;
            goto out;
        }
    rel_pending(l, r, release_id, uniq, n, cost, head);
out:
    free(uniq);
    return rc;
}

core_err core_dp_ledger_cancel(struct core_dp_ledger *l, const char *release_id)
{
    if (!l || !release_id)
        return CORE_EINVAL;
    struct rel *r = smap_get(&l->rels, release_id);
    if (!r || r->state != REL_PENDING)
        return CORE_ENOTFOUND;
    /* Give the reservation back, rounding the difference UP (never below the truth). */
    for (size_t i = 0; i < r->n_units; i++) {
        struct unit_ent *e = smap_get(&l->units, r->units[i]);
        struct core_dp_cost *t = &e->total;
        t->eps = fmax(0.0, rd_add_up(t->eps, -r->cost.eps));
        t->rho = fmax(0.0, rd_add_up(t->rho, -r->cost.rho));
        t->delta = fmax(0.0, rd_add_up(t->delta, -r->cost.delta));
        e->pending--;
    }
    rel_clear(r);
    r->state = REL_FREE;
    l->st.pending--;
    if (l->db)
        smap_del(&l->rels, release_id, rel_free); /* the store keeps no id it does not hold */
    return CORE_OK;
}

/* ---- commit ---- */

/* The batch is durable: JSONL back end, remember each row's place in the file; store back
 * end, forget the pending releases (the store has them). rs[i] set to NULL when freed. */
static void batch_committed(struct core_dp_ledger *l, size_t n, const char *const *ids,
                            struct rel **rs, const size_t *lens, uint64_t start)
{
    for (size_t i = 0; i < n; i++) {
        size_t len = row_len(rs[i], lens[i]);
        l->st.pending--;
        l->st.releases++;
        if (l->db) {
            smap_del(&l->rels, ids[i], rel_free);
            rs[i] = NULL;
            continue;
        }
        rel_clear(rs[i]);
        rs[i]->state = REL_COMMITTED;
        rs[i]->off = start;
        rs[i]->len = len;
        start += len;
    }
}

core_err core_dp_ledger_commit_batch(struct core_dp_ledger *l, size_t n, const char *const *ids,
                                     const void *const *bytes, const size_t *lens)
{
    struct rel **rs = NULL;
    size_t total = 0;
    char *buf = NULL;
    uint64_t start;
    core_err rc = CORE_OK;

    if (!l || n == 0 || !ids || !bytes || !lens)
        return CORE_EINVAL;
    if (l->broken)
        return CORE_EIO;
    // NOLINTNEXTLINE(bugprone-sizeof-expression): array of pointers
    rs = core_xcalloc(n, sizeof(*rs));
    for (size_t i = 0; i < n; i++) {
        struct rel *r = ids[i] ? smap_get(&l->rels, ids[i]) : NULL;
        if (!r || r->state != REL_PENDING) {
            rc = CORE_ENOTFOUND;
            goto out;
        }
        if (lens[i] > CORE_DP_LEDGER_MAX_OUTPUT || (lens[i] > 0 && !bytes[i])) {
            rc = lens[i] > CORE_DP_LEDGER_MAX_OUTPUT ? CORE_ETOOBIG : CORE_EINVAL;
            goto out;
        }
        if (r->in_batch) {
            rc = CORE_EINVAL; /* the same id twice in one batch */
            goto out;
        }
        r->in_batch = 1;
        rs[i] = r;
        total += row_len(r, lens[i]);
    }
    /* every line formatted straight into the one buffer of the single write(2) */
    buf = core_xmalloc(total);
    for (size_t i = 0, off = 0; i < n; off += row_len(rs[i], lens[i]), i++)
        row_format(rs[i], bytes[i], lens[i], buf + off);
    start = l->size;
    rc = append_all(l, buf, total); /* one write(2): at most one torn line on a crash */
    if (rc == CORE_OK)
        rc = sync_file(l); /* durable before anyone may publish (store: its write-ahead log) */
    if (rc == CORE_OK && l->db)
        rc = store_commit(l, n, ids, rs, lens, start);
    if (rc == CORE_OK) {
        batch_committed(l, n, ids, rs, lens, start);
        l->st.audit_bytes = l->size;
    }
out:
    for (size_t i = 0; i < n; i++)
        if (rs[i])
            rs[i]->in_batch = 0;
    free(rs);
    free(buf);
    return rc;
}

core_err core_dp_ledger_commit_output(struct core_dp_ledger *l, const char *release_id,
                                      const void *bytes, size_t len)
{
    return core_dp_ledger_commit_batch(l, 1, &release_id, &bytes, &len);
}

/* ---- lookup / spent / stats ---- */

/* The output bytes of release_id's row, the len bytes at off of the ledger file (JSONL) or
 * audit log (store). CORE_EPARSE when the row there is not release_id's. */
static core_err read_output(const struct core_dp_ledger *l, const char *release_id, uint64_t off,
                            size_t n, uint8_t **bytes, size_t *len)
{
    char *line = NULL;
    json_t *row = NULL;
    uint8_t *bin = NULL;
    const char *id, *b64;
    size_t b64len, binlen = 0;
    core_err rc = CORE_EPARSE;

    if (n < 2 || n > CORE_DP_LEDGER_MAX_LINE)
        return CORE_EPARSE;
    line = core_xmalloc(n);
    if (pread(l->fd, line, n, (off_t)off) != (ssize_t)n) {
        rc = CORE_EIO;
        goto out;
    }
    row = json_loadb(line, n - 1, 0, NULL);
    id = json_string_value(json_object_get(row, "id"));
    b64 = json_string_value(json_object_get(row, "out"));
    if (!id || !b64 || strcmp(id, release_id) != 0)
        goto out;
    b64len = strlen(b64);
    bin = core_xmalloc(b64len / 4 * 3 + 1);
    if (sodium_base642bin(bin, b64len / 4 * 3 + 1, b64, b64len, NULL, &binlen, NULL,
                          sodium_base64_VARIANT_ORIGINAL) != 0)
        goto out;
    *bytes = bin;
    *len = binlen;
    bin = NULL;
    rc = CORE_OK;
out:
    free(bin);
    json_decref(row);
    free(line);
    return rc;
}

core_err core_dp_ledger_lookup(struct core_dp_ledger *l, const char *release_id, uint8_t **bytes,
                               size_t *len)
{
    if (!l || !release_id || !bytes || !len)
        return CORE_EINVAL;
    if (l->db) {
        uint64_t off = 0;
        size_t n = 0;
        core_err rc = store_find(l, release_id, &off, &n);
        return rc == CORE_OK ? read_output(l, release_id, off, n, bytes, len) : rc;
    }
    struct rel *r = smap_get(&l->rels, release_id);
    if (!r || r->state != REL_COMMITTED)
        return CORE_ENOTFOUND;
    return read_output(l, release_id, r->off, r->len, bytes, len);
}

core_err core_dp_ledger_spent(const struct core_dp_ledger *l, const char *unit,
                              struct core_dp_cost *out)
{
    if (!l || !unit || !out)
        return CORE_EINVAL;
    return unit_total(l, unit, out) == 0 ? CORE_OK : CORE_EIO;
}

void core_dp_ledger_stats(const struct core_dp_ledger *l, struct core_dp_ledger_stats *out)
{
    if (l && out) {
        *out = l->st;
        out->cached_units = l->units.n;
        out->index_bytes = l->db ? l->ids.cap * sizeof(struct lidx_ent) : 0;
        out->index_ids = l->db ? l->ids.n : 0;
    }
}

/* ---- ε spent per unit: max and quantiles ---- */

static void swap_d(double *a, double *b)
{
    double t = *a;
    *a = *b;
    *b = t;
}

/* Rearrange v[lo..hi] so that v[k] holds the value it would hold sorted, everything before
 * it is <= and everything after it >= (quickselect, median-of-three pivot, expected O(n)). */
static void select_kth(double *v, ptrdiff_t lo, ptrdiff_t hi, ptrdiff_t k)
{
    while (lo < hi) {
        ptrdiff_t mid = lo + (hi - lo) / 2, i = lo, j = hi;
        if (v[mid] < v[lo])
            swap_d(&v[mid], &v[lo]);
        if (v[hi] < v[lo])
            swap_d(&v[hi], &v[lo]);
        if (v[hi] < v[mid])
            swap_d(&v[hi], &v[mid]);
        double pivot = v[mid];
        while (i <= j) { /* Hoare partition: [lo, j] <= pivot <= [i, hi] */
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j)
                swap_d(&v[i++], &v[j--]);
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return; /* j < k < i: v[k] == pivot, in place */
    }
}

/* Nearest rank: the index of the ceil(q n)-th smallest of n values (n >= 1). */
static size_t nearest_rank(size_t n, unsigned q_per_mille)
{
    size_t rank = (n * q_per_mille + 999) / 1000;
    return rank ? rank - 1 : 0;
}

void core_dp_ledger_eps_summary(const struct core_dp_ledger *l, struct core_dp_eps_summary *out)
{
    static const unsigned q[3] = {500, 900, 990};
    double *v, *dst[3];
    size_t n = 0, from = 0;

    if (!l || !out)
        return;
    memset(out, 0, sizeof(*out));
    if (l->units.n == 0)
        return;
    v = core_xcalloc(l->units.n, sizeof(*v));
    for (size_t i = 0; i < l->units.cap && n < l->units.n; i++)
        if (l->units.slots[i].key)
            v[n++] = ((const struct unit_ent *)l->units.slots[i].val)->total.eps;
    out->units = n;
    dst[0] = &out->p50, dst[1] = &out->p90, dst[2] = &out->p99;
    for (int i = 0; i < 3; i++) { /* ascending ranks: each selection leaves the next one's
                                     candidates at or after the previous index */
        size_t k = nearest_rank(n, q[i]);
        select_kth(v, (ptrdiff_t)from, (ptrdiff_t)n - 1, (ptrdiff_t)k);
        *dst[i] = v[k];
        from = k;
    }
    out->max = v[from];
    for (size_t i = from; i < n; i++)
        out->max = v[i] > out->max ? v[i] : out->max;
    free(v);
}

/* ==== Several instances: rows follow their partitions (issue 12) ==== */
/* Self-contained: uses the public functions above plus first_over_cap / charge_args_ok and
 * the store's id lookup (store_find). Contract: core/dp_ledger.h, "Several instances". */

/* The line starting at off in l's file (JSONL ledger, or the store's audit log), without
 * its newline: new NUL-terminated buffer. known: its length with the newline, 0 unknown. */
static core_err line_at(const struct core_dp_ledger *l, uint64_t off, size_t known, char **out,
                        size_t *len)
{
    size_t cap = known ? known : 4096, n = 0;
    char *b = core_xmalloc(cap + 1);

    for (;;) {
        ssize_t r = pread(l->fd, b + n, cap - n, (off_t)(off + n));
        char *nl = r > 0 ? memchr(b + n, '\n', (size_t)r) : NULL;
        if (r <= 0) {
            free(b);
            return CORE_EIO;
        }
        n += (size_t)r;
        if (nl) {
            *len = (size_t)(nl - b);
            b[*len] = '\0';
            *out = b;
            return CORE_OK;
        }
        if (n < cap)
            continue;
        if (cap >= CORE_DP_LEDGER_MAX_LINE) {
            free(b);
            return CORE_EPARSE;
        }
        cap *= 2;
        b = core_xrealloc(b, cap + 1);
    }
}

/* Store back end: the row is in the audit log where the id index says (store_find has
 * checked that the row there is id's). */
static core_err store_row(struct core_dp_ledger *l, const char *id, char **row, size_t *len)
{
    uint64_t off = 0;
    size_t n = 0;
    core_err rc = store_find(l, id, &off, &n);
    return rc != CORE_OK ? rc : line_at(l, off, n, row, len);
}

core_err core_dp_ledger_row(struct core_dp_ledger *l, const char *release_id, char **row,
                            size_t *len)
{
    json_t *j;
    core_err rc;

    if (!l || !release_id || !row || !len)
        return CORE_EINVAL;
    *row = NULL;
    *len = 0;
    if (l->db)
        return store_row(l, release_id, row, len);
    struct rel *r = smap_get(&l->rels, release_id);
    if (!r || r->state != REL_COMMITTED)
        return CORE_ENOTFOUND;
    rc = line_at(l, r->off, r->len, row, len);
    if (rc != CORE_OK)
        return rc;
    j = json_loadb(*row, *len, 0, NULL); /* the place must hold that id's row */
    if (!j || !json_is_string(json_object_get(j, "id")) ||
        strcmp(json_string_value(json_object_get(j, "id")), release_id) != 0) {
        free(*row);
        *row = NULL;
        rc = CORE_EPARSE;
    }
    json_decref(j);
    return rc;
}

/* The id committed here: same bytes -> SAME, other bytes -> CORE_EINVARIANT. */
static core_err adopt_known(const char *id, const uint8_t *have, size_t hl, const void *bytes,
                            size_t len, enum core_dp_adopted *what, char *eb, size_t ebn)
{
    if (hl != len || (len > 0 && memcmp(have, bytes, len) != 0)) {
        set_err(eb, ebn,
                "release %s: committed in this ledger with other output bytes than "
                "the row adopted from another instance (two outputs for one release); "
                "refused, nothing published",
                id);
        return CORE_EINVARIANT;
    }
    *what = CORE_DP_ADOPTED_SAME;
    return CORE_OK;
}

core_err core_dp_ledger_adopt(struct core_dp_ledger *l, const char *id, const char *mech,
                              const char *const *units, size_t n_units,
                              const struct core_dp_cost *cost, const char *params_json,
                              const void *bytes, size_t len, enum core_dp_adopted *what, char *eb,
                              size_t ebn)
{
    static const struct core_dp_cost no_cap = {INFINITY, INFINITY, INFINITY};
    uint8_t *have = NULL;
    size_t hl = 0, over;
    struct core_dp_cost cap;
    core_err rc;

    if (!l || !what || (len > 0 && !bytes) || len > CORE_DP_LEDGER_MAX_OUTPUT)
        return CORE_EINVAL;
    rc = charge_args_ok(l, id, mech, units, n_units, cost, params_json);
    if (rc == CORE_OK)
        rc = core_dp_ledger_lookup(l, id, &have, &hl);
    if (rc == CORE_OK) {
        rc = adopt_known(id, have, hl, bytes, len, what, eb, ebn);
        free(have);
        return rc;
    }
    if (rc != CORE_ENOTFOUND)
        return rc;
    over = first_over_cap(l, units, n_units, cost);
    cap = l->cap; /* a fact, not a request: the cap is not asked (restored below) */
    l->cap = no_cap;
    rc = core_dp_ledger_charge(l, id, mech, units, n_units, cost, params_json);
    l->cap = cap;
    if (rc == CORE_EEXPIRED) {
        *what = CORE_DP_ADOPTED_EXPIRED;
        return CORE_OK;
    }
    if (rc == CORE_OK && (rc = core_dp_ledger_commit_output(l, id, bytes, len)) != CORE_OK &&
        core_dp_ledger_cancel(l, id) != CORE_OK)
        CORE_WARN("adopted release %s: reservation not cancelled", id);
    if (rc != CORE_OK) {
        set_err(eb, ebn, "release %s: cannot record the adopted row (%s)", id, core_strerror(rc));
        return rc;
    }
    *what = over < n_units ? CORE_DP_ADOPTED_OVER_CAP : CORE_DP_ADOPTED_NEW;
    if (over < n_units)
        CORE_WARN("adopted release %s takes unit '%s' above its lifetime cap (eps cap %.6g): "
                  "published by another instance, recorded",
                  id, units[over], l->cap.eps);
    return CORE_OK;
}

/* The row's units as borrowed strings (out: n pointers into row). */
static const char **row_units(const json_t *units, size_t *n)
{
    const char **u;
    *n = json_array_size(units);
    u = core_xcalloc(*n ? *n : 1, sizeof(*u));
    for (size_t i = 0; i < *n; i++)
        u[i] = json_string_value(json_array_get(units, i));
    return u;
}

/* base64 "out" of a parsed row into a new buffer. */
static core_err row_out(const json_t *j, uint8_t **bin, size_t *n)
{
    const char *b64 = json_string_value(json_object_get(j, "out"));
    size_t bl = b64 ? strlen(b64) : 0;

    *bin = core_xmalloc(bl / 4 * 3 + 1);
    if (!b64 || sodium_base642bin(*bin, bl / 4 * 3 + 1, b64, bl, NULL, n, NULL,
                                  sodium_base64_VARIANT_ORIGINAL) != 0) {
        free(*bin);
        *bin = NULL;
        return CORE_EPARSE;
    }
    return CORE_OK;
}

core_err core_dp_ledger_adopt_row(struct core_dp_ledger *l, const char *row, size_t len,
                                  enum core_dp_adopted *what, char *id, size_t id_size, char *eb,
                                  size_t ebn)
{
    struct core_dp_row r;
    json_error_t je;
    json_t *j;
    uint8_t *bin = NULL;
    size_t n_bin = 0, n_units = 0;
    const char **units = NULL;
    char *params = NULL;
    core_err rc;

    if (!l || !row || !what)
        return CORE_EINVAL;
    if (len > 0 && row[len - 1] == '\n')
        len--;
    j = json_loadb(row, len, JSON_REJECT_DUPLICATES, &je);
    if (!j) {
        set_err(eb, ebn, "not a ledger row: JSON error at column %d", je.column);
        return CORE_EPARSE;
    }
    rc = core_dp_ledger_parse_row(j, &r, eb, ebn);
    if (rc == CORE_OK && id && id_size)
        snprintf(id, id_size, "%s", r.id);
    if (rc == CORE_OK && (rc = row_out(j, &bin, &n_bin)) != CORE_OK)
        set_err(eb, ebn, "release %s: \"out\" is not base64", r.id);
    if (rc == CORE_OK) {
        const json_t *p = json_object_get(j, "params");
        params = json_is_object(p) ? json_dumps(p, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
        units = row_units(r.units, &n_units);
        rc = core_dp_ledger_adopt(l, r.id, r.mech, units, n_units, &r.cost, params, bin, n_bin,
                                  what, eb, ebn);
    }
    free(units);
    free(params);
    free(bin);
    json_decref(j);
    return rc;
}

/* One row of core_dp_ledger_adopt_rows, parsed (strings borrowed from j). */
struct adopt_in {
    json_t *j;
    struct core_dp_row r;
    const char **units;
    size_t n_units, n_bin;
    uint8_t *bin;
    char *params;
};

static core_err adopt_parse(const char *row, size_t len, struct adopt_in *in, char *eb, size_t ebn)
{
    json_error_t je;
    const json_t *p;

    if (len > 0 && row[len - 1] == '\n')
        len--;
    in->j = json_loadb(row, len, JSON_REJECT_DUPLICATES, &je);
    if (!in->j) {
        set_err(eb, ebn, "not a ledger row: JSON error at column %d", je.column);
        return CORE_EPARSE;
    }
    if (core_dp_ledger_parse_row(in->j, &in->r, eb, ebn) != CORE_OK)
        return CORE_EPARSE;
    if (row_out(in->j, &in->bin, &in->n_bin) != CORE_OK) {
        set_err(eb, ebn, "release %s: \"out\" is not base64", in->r.id);
        return CORE_EPARSE;
    }
    p = json_object_get(in->j, "params");
    in->params = json_is_object(p) ? json_dumps(p, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    in->units = row_units(in->r.units, &in->n_units);
    return CORE_OK;
}

static void adopt_in_free(struct adopt_in *in)
{
    free(in->units);
    free(in->params);
    free(in->bin);
    json_decref(in->j);
}

/* The pending part of a batch: ids[0..*k) charged here, bytes waiting for the commit. */
struct adopt_batch {
    const char **ids;
    const void **bytes;
    size_t *lens, k;
};

/* Charge one parsed row as adopt does (no cap), or decide it is known / in the batch. */
static core_err adopt_stage(struct core_dp_ledger *l, const struct adopt_in *in,
                            struct adopt_batch *b, enum core_dp_adopted *what, char *eb, size_t ebn)
{
    static const struct core_dp_cost no_cap = {INFINITY, INFINITY, INFINITY};
    const char *id = in->r.id;
    uint8_t *have = NULL;
    size_t hl = 0, over;
    struct core_dp_cost cap;
    core_err rc = core_dp_ledger_lookup(l, id, &have, &hl);

    if (rc == CORE_OK) {
        rc = adopt_known(id, have, hl, in->bin, in->n_bin, what, eb, ebn);
        free(have);
        return rc;
    }
    if (rc != CORE_ENOTFOUND)
        return rc;
    for (size_t i = 0; i < b->k; i++) /* the same release twice in one batch */
        if (strcmp(b->ids[i], id) == 0)
            return adopt_known(id, (const uint8_t *)b->bytes[i], b->lens[i], in->bin, in->n_bin,
                               what, eb, ebn);
    over = first_over_cap(l, in->units, in->n_units, &in->r.cost);
    cap = l->cap;
    l->cap = no_cap;
    rc = core_dp_ledger_charge(l, id, in->r.mech, in->units, in->n_units, &in->r.cost, in->params);
    l->cap = cap;
    if (rc == CORE_EEXPIRED) {
        *what = CORE_DP_ADOPTED_EXPIRED;
        return CORE_OK;
    }
    if (rc != CORE_OK) {
        set_err(eb, ebn, "release %s: cannot record the adopted row (%s)", id, core_strerror(rc));
        return rc;
    }
    b->ids[b->k] = id;
    b->bytes[b->k] = in->bin;
    b->lens[b->k++] = in->n_bin;
    *what = over < in->n_units ? CORE_DP_ADOPTED_OVER_CAP : CORE_DP_ADOPTED_NEW;
    if (over < in->n_units)
        CORE_WARN("adopted release %s takes unit '%s' above its lifetime cap (eps cap %.6g): "
                  "published by another instance, recorded",
                  id, in->units[over], l->cap.eps);
    return CORE_OK;
}

core_err core_dp_ledger_adopt_rows(struct core_dp_ledger *l, size_t n, const char *const *rows,
                                   const size_t *lens, enum core_dp_adopted *what, size_t *bad,
                                   char *eb, size_t ebn)
{
    struct adopt_in *in;
    struct adopt_batch b = {0};
    core_err rc = CORE_OK;
    size_t i;

    if (!l || !rows || !lens || !what || n == 0)
        return CORE_EINVAL;
    in = core_xcalloc(n, sizeof(*in));
    b.ids = core_xcalloc(n, sizeof(*b.ids));
    b.bytes = core_xcalloc(n, sizeof(*b.bytes));
    b.lens = core_xcalloc(n, sizeof(*b.lens));
    for (i = 0; i < n && rc == CORE_OK; i++) {
        rc = rows[i] ? adopt_parse(rows[i], lens[i], &in[i], eb, ebn) : CORE_EINVAL;
        if (rc == CORE_OK)
            rc = adopt_stage(l, &in[i], &b, &what[i], eb, ebn);
    }
    if (bad)
        *bad = rc == CORE_OK ? n : i - 1;
    if (rc == CORE_OK && b.k > 0) /* one write(2) + one fsync / one store COMMIT */
        rc = core_dp_ledger_commit_batch(l, b.k, b.ids, b.bytes, b.lens);
    if (rc != CORE_OK)
        for (size_t j = 0; j < b.k; j++)
            if (core_dp_ledger_cancel(l, b.ids[j]) != CORE_OK)
                CORE_WARN("adopted release %s: reservation not cancelled", b.ids[j]);
    for (size_t j = 0; j < n; j++)
        adopt_in_free(&in[j]);
    free(in);
    free(b.ids);
    free(b.bytes);
    free(b.lens);
    return rc;
}
