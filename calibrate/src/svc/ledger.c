/* ledger.c - a private calibration charged to the write-ahead privacy ledger (cal/ledger.h). */
#include "cal/ledger.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "core/clock.h"
#include "core/dp_ledger_cfg.h"
#include "core/mem.h"

#define TS_LIMIT ((int64_t)1 << 62) /* |ts| bound: ts ± widen never overflows */
#define ID_MAX   64                 /* bytes of a release id we build */

/* ------------------------------------------------------------------ units */

void cal_units_free(struct cal_units *u)
{
    if (!u)
        return;
    for (size_t i = 0; i < u->n; i++)
        free(u->names[i]);
    free(u->names);
    free(u);
}

/* The slot of t: core's unit scheme (one owner for calibrate and release). */
static int64_t slot_of(int64_t t, int64_t slot_ms)
{
    struct core_dp_scheme sc = {slot_ms, 0, 1};
    return core_dp_unit_slot(&sc, t);
}

struct span {
    int64_t a, b; /* slots a..b inclusive */
};

static int by_start(const void *x, const void *y)
{
    const struct span *p = x, *q = y;
    return p->a < q->a ? -1 : p->a > q->a;
}

static core_err check_devices(const struct cal_ledger_opts *o, char *eb, size_t ebn)
{
    if (o->n_devices == 0 || !o->devices) {
        snprintf(eb, ebn,
                 "private calibration needs the device id(s) of the calibration data "
                 "to charge the privacy ledger (--device ID or calibrate.ledger.devices)");
        return CORE_EINVAL;
    }
    if (o->n_devices > CAL_LEDGER_MAX_DEVICES) {
        snprintf(eb, ebn, "calibrate.ledger.devices: more than %u devices", CAL_LEDGER_MAX_DEVICES);
        return CORE_EINVAL;
    }
    for (size_t d = 0; d < o->n_devices; d++) {
        const char *s = o->devices[d];
        size_t n = s ? strlen(s) : 0;
        int bad = n == 0 || n > CAL_LEDGER_MAX_DEVICE;
        for (size_t i = 0; !bad && i < n; i++)
            bad = (unsigned char)s[i] < 0x20 || s[i] == 0x7f;
        if (bad) {
            snprintf(eb, ebn, "device %zu: empty, longer than %u bytes or a control character",
                     d + 1, CAL_LEDGER_MAX_DEVICE);
            return CORE_EINVAL;
        }
    }
    return CORE_OK;
}

/* Merged, sorted slot intervals covered by the rows (each row: [ts − w, ts + w]). */
static core_err row_spans(const struct cal_matrix *mx, const struct cal_ledger_opts *o,
                          struct span **out, size_t *n_out, char *eb, size_t ebn)
{
    struct span *v = core_xmalloc(mx->n * sizeof(*v));
    size_t n = 0, m = 0;

    for (size_t r = 0; r < mx->n; r++) {
        int64_t ts = mx->ts[r], a, b;
        if (ts < -TS_LIMIT || ts > TS_LIMIT) {
            snprintf(eb, ebn, "calibration row %zu: timestamp out of range", r + 1);
            free(v);
            return CORE_EINVAL;
        }
        a = slot_of(ts - o->widen_ms, o->slot_ms);
        b = slot_of(ts + (o->row_len_ms > 0 ? o->row_len_ms - 1 : 0) + o->widen_ms, o->slot_ms);
        if (b - a + 1 > CAL_LEDGER_MAX_ROW_SPAN) {
            snprintf(eb, ebn,
                     "calibration rows span %" PRId64 " ledger slots each (more than %d: "
                     "release.ledger.slot_ms too small for the time radius)",
                     b - a + 1, CAL_LEDGER_MAX_ROW_SPAN);
            free(v);
            return CORE_ETOOBIG;
        }
        if (n > 0 && a <= v[n - 1].b + 1 && b >= v[n - 1].a - 1) { /* touches the last one */
            v[n - 1].a = a < v[n - 1].a ? a : v[n - 1].a;
            v[n - 1].b = b > v[n - 1].b ? b : v[n - 1].b;
        } else {
            v[n].a = a;
            v[n++].b = b;
        }
    }
    qsort(v, n, sizeof(*v), by_start);
    for (size_t i = 0; i < n; i++) { /* merge overlapping or adjacent intervals */
        if (m > 0 && v[i].a <= v[m - 1].b + 1) {
            if (v[i].b > v[m - 1].b)
                v[m - 1].b = v[i].b;
        } else {
            v[m++] = v[i];
        }
    }
    *out = v;
    *n_out = m;
    return CORE_OK;
}

core_err cal_ledger_units(const struct cal_matrix *mx, const struct cal_ledger_opts *o,
                          struct cal_units **out, char *eb, size_t ebn)
{
    struct span *sp = NULL;
    struct cal_units *u;
    size_t n_sp = 0;
    uint64_t slots = 0;
    core_err rc;

    *out = NULL;
    if (!mx || !mx->ts) {
        snprintf(eb, ebn,
                 "calibration rows have no timestamps: a private calibration charges "
                 "the ledger units '<device>|<slot>' of its rows (csv: a timestamp "
                 "column, calibrate.input.ts_column; occupancy: the date column)");
        return CORE_EINVAL;
    }
    if ((rc = check_devices(o, eb, ebn)) != CORE_OK)
        return rc;
    if (o->slot_ms < 1 || o->widen_ms < 0 || o->widen_ms > TS_LIMIT || o->row_len_ms < 0 ||
        o->row_len_ms > ((int64_t)1 << 40)) {
        snprintf(eb, ebn,
                 "release.ledger.slot_ms must be >= 1, the time radius and the row "
                 "length >= 0");
        return CORE_EINVAL;
    }
    if ((rc = row_spans(mx, o, &sp, &n_sp, eb, ebn)) != CORE_OK)
        return rc;
    for (size_t i = 0; i < n_sp && slots <= CAL_LEDGER_MAX_UNITS; i++)
        slots += (uint64_t)(sp[i].b - sp[i].a) + 1u;
    if (slots * o->n_devices > CAL_LEDGER_MAX_UNITS) {
        snprintf(eb, ebn,
                 "the calibration rows cover more than %u ledger units (devices x "
                 "release.ledger.slot_ms slots); calibrate on a shorter span",
                 CAL_LEDGER_MAX_UNITS);
        free(sp);
        return CORE_ETOOBIG;
    }
    u = core_xcalloc(1, sizeof(*u));
    u->names = core_xcalloc((size_t)slots * o->n_devices, sizeof(char *));
    for (size_t d = 0; d < o->n_devices; d++)
        for (size_t i = 0; i < n_sp; i++)
            for (int64_t s = sp[i].a; s <= sp[i].b; s++) {
                char name[CAL_LEDGER_MAX_DEVICE + 32];
                if (core_dp_unit_name(name, sizeof(name), o->devices[d], s) < 0)
                    name[0] = '\0'; /* cannot happen: device <= MAX_DEVICE bytes */
                u->names[u->n++] = core_xstrdup(name);
            }
    free(sp);
    *out = u;
    return CORE_OK;
}

int64_t cal_ledger_widen_ms(const struct core_dp_scheme *s)
{
    return s->time_radius * s->period_ms + (s->period_ms + 1) / 2;
}

double cal_eps_cal_charge(const struct cal_eps_cal *e)
{
    return core_dp_add_up(core_dp_add_up(core_dp_add_up(e->G, e->tau), e->mu), e->xi);
}

/* ------------------------------------------------------------------ θ bytes */

core_err cal_theta_to_bytes(const struct cal_theta *t, char **bytes, size_t *len, char *eb,
                            size_t ebn)
{
    json_t *j = NULL;
    core_err rc = cal_theta_to_json(t, &j, eb, ebn);
    *bytes = NULL;
    *len = 0;
    if (rc != CORE_OK)
        return rc;
    *bytes = json_dumps(j, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
    json_decref(j);
    if (!*bytes) {
        snprintf(eb, ebn, "theta: JSON encoding failed");
        return CORE_ENOMEM;
    }
    *len = strlen(*bytes);
    return CORE_OK;
}

core_err cal_bytes_save_file(const char *bytes, size_t len, const char *path, char *eb, size_t ebn)
{
    char tmp[4096];
    size_t off = 0;
    int fd;

    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= sizeof(tmp)) {
        snprintf(eb, ebn, "output path too long");
        return CORE_ETOOBIG;
    }
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
        snprintf(eb, ebn, "%s: cannot write (%s)", path, strerror(errno));
        return CORE_EIO;
    }
    while (off < len) {
        ssize_t w = write(fd, bytes + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    if (off < len || fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
        int e = errno;
        if (off < len)
            close(fd);
        unlink(tmp);
        snprintf(eb, ebn, "%s: cannot write (%s)", path, strerror(e));
        return CORE_EIO;
    }
    return CORE_OK;
}

/* ------------------------------------------------------------------ the protocol */

void cal_charged_cleanup(struct cal_charged *c)
{
    if (!c)
        return;
    free(c->bytes);
    memset(c, 0, sizeof(*c));
}

static void head_id(char *id, uint64_t v)
{
    snprintf(id, ID_MAX, "calibrate|%" PRIu64, v);
}

static void part_id(char *id, uint64_t v, size_t k)
{
    snprintf(id, ID_MAX, "calibrate|%" PRIu64 "#%zu", v, k);
}

/* Drop the reservations ids[0..n) (ENOTFOUND: not pending any more, nothing to drop). */
static void cancel_all(struct core_dp_ledger *l, char (*ids)[ID_MAX], size_t n)
{
    for (size_t p = 0; p < n; p++)
        if (core_dp_ledger_cancel(l, ids[p]) != CORE_OK)
            continue;
}

/* Stored θ: parse it (fail closed), check its parts are all in the ledger. */
static core_err replay(struct core_dp_ledger *l, const struct cal_matrix *mx,
                       const struct cal_opts *o, uint8_t *bytes, size_t len,
                       struct cal_charged *out, char *eb, size_t ebn)
{
    char id[ID_MAX];
    uint8_t *pb = NULL;
    size_t plen = 0, parts = 1;
    struct cal_theta *t = NULL;
    json_t *j = json_loadb((const char *)bytes, len, JSON_REJECT_DUPLICATES, NULL), *pj;
    core_err rc = CORE_EINVARIANT;

    if (json_is_true(json_object_get(j, "calibrate_failed"))) {
        snprintf(eb, ebn,
                 "ledger: calibrate|%" PRIu64 " failed after its noise was drawn; its "
                 "charge stands and it has no theta to replay (use a new calibrate.version)",
                 o->version);
        goto out;
    }
    if (!j || cal_theta_from_json(j, &t, eb, ebn) != CORE_OK || t->version != o->version ||
        t->mode != CAL_MODE_PRIVATE) {
        snprintf(eb, ebn,
                 "ledger: the stored theta of calibrate|%" PRIu64 " is not a valid "
                 "private theta of that version; refusing to replay it",
                 o->version);
        goto out;
    }
    part_id(id, o->version, 1);
    if (core_dp_ledger_lookup(l, id, &pb, &plen) == CORE_OK) {
        pj = json_loadb((const char *)pb, plen, 0, NULL);
        parts = (size_t)json_integer_value(json_object_get(pj, "parts"));
        json_decref(pj);
        free(pb);
        for (size_t k = 2; parts >= 2 && k < parts; k++) {
            part_id(id, o->version, k);
            if (core_dp_ledger_lookup(l, id, &pb, &plen) != CORE_OK) {
                parts = 0;
                break;
            }
            free(pb);
        }
        if (parts < 2) {
            snprintf(eb, ebn,
                     "ledger: calibrate|%" PRIu64 " is present but some of its part "
                     "rows are missing; refusing to replay it",
                     o->version);
            goto out;
        }
    }
    out->replayed = true;
    out->replayed_other = strcmp(t->config_version, o->config_version) != 0 || t->n_cal != mx->n;
    out->bytes = core_xmalloc(len + 1);
    memcpy(out->bytes, bytes, len);
    out->bytes[len] = '\0';
    out->len = len;
    out->version = o->version;
    rc = CORE_OK;
out:
    cal_theta_free(t);
    json_decref(j);
    return rc;
}

/* Name the unit the cap refuses with its totals (public accounting numbers only). */

static char *params_json(const struct cal_opts *o, const struct cal_ledger_opts *lo, size_t n_cal,
                         double eps, size_t part, size_t parts)
{
    json_t *p = json_pack(
        "{s:s,s:I,s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:I,s:I,s:I,s:I}", "stage", "calibrate",
        "theta_version", (json_int_t)o->version, "part", (json_int_t)part, "parts",
        (json_int_t)parts, "eps_G", o->eps.G, "eps_tau", o->eps.tau, "eps_mu", o->eps.mu, "eps_xi",
        o->eps.xi, "eps_cal", eps, "n_cal", (json_int_t)n_cal, "slot_ms", (json_int_t)lo->slot_ms,
        "widen_ms", (json_int_t)lo->widen_ms, "devices", (json_int_t)lo->n_devices);
    char *s = p ? json_dumps(p, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(p);
    return s;
}

/* Charge every part (ids[p], units chunk p); on any refusal cancel what was reserved. */
static core_err charge_parts(struct core_dp_ledger *l, const struct cal_opts *o,
                             const struct cal_ledger_opts *lo, const struct cal_units *u,
                             size_t n_cal, char (*ids)[ID_MAX], size_t parts,
                             const struct core_dp_cost *cost, size_t *charged, char *eb, size_t ebn)
{
    core_err rc = CORE_OK;
    *charged = 0;
    for (size_t p = 0; p < parts && rc == CORE_OK; p++) {
        size_t first = p * CORE_DP_LEDGER_MAX_UNITS;
        size_t cnt =
            u->n - first < CORE_DP_LEDGER_MAX_UNITS ? u->n - first : CORE_DP_LEDGER_MAX_UNITS;
        const char *const *names = (const char *const *)u->names + first;
        char *pj = params_json(o, lo, n_cal, cost->eps, p + 1, parts);
        rc = core_dp_ledger_charge(l, ids[p], CAL_LEDGER_MECH, names, cnt, cost, pj);
        free(pj);
        if (rc == CORE_OK) {
            (*charged)++;
        } else if (rc == CORE_EBUDGET) { /* core's message, as its decision */
            size_t used;
            core_dp_ledger_refusal(l, names, cnt, cost, "calibration", "eps_cal", eb, ebn);
            used = strlen(eb);
            if (used + 1 < ebn)
                snprintf(eb + used, ebn - used, ": no noise drawn, no theta written");
        } else if (rc == CORE_EEXIST) {
            snprintf(eb, ebn,
                     "ledger: %s is already committed without its theta (an earlier "
                     "run was cut off while committing; its charge stays counted); set another "
                     "calibrate.version",
                     ids[p]);
        } else {
            snprintf(eb, ebn, "ledger: charging %s failed (%s)", ids[p], core_errname(rc));
        }
    }
    if (rc != CORE_OK)
        cancel_all(l, ids, *charged);
    return rc;
}

/* After cal_calibrate ran, noise may have been drawn: the charge stands. The reserved rows
 * are committed with a failure marker as their output (no θ), so the ε_cal stays on every
 * unit and a replay of this version is refused (the marker is not a θ). Returns true when
 * the rows are durable. */
static bool commit_failure(struct core_dp_ledger *l, const struct cal_opts *o, char (*ids)[ID_MAX],
                           size_t parts, char *eb, size_t ebn)
{
    char mark[160];
    const char **idp = core_xcalloc(parts, sizeof(char *));
    const void **bp = core_xcalloc(parts, sizeof(void *));
    size_t *lens = core_xcalloc(parts, sizeof(size_t)), used;
    int n = snprintf(mark, sizeof(mark),
                     "{\"calibrate_failed\":true,\"theta_version\":%" PRIu64 "}", o->version);
    bool ok;

    for (size_t p = 0; p < parts; p++) {
        idp[p] = ids[p];
        bp[p] = mark;
        lens[p] = (size_t)n;
    }
    ok = core_dp_ledger_commit_batch(l, parts, idp, bp, lens) == CORE_OK;
    used = strlen(eb);
    if (ok && used + 1 < ebn)
        snprintf(eb + used, ebn - used,
                 "; noise had been drawn, so the eps_cal charge of "
                 "calibrate|%" PRIu64 " stands in the ledger (use a new calibrate.version)",
                 o->version);
    free(idp);
    free(bp);
    free(lens);
    return ok;
}

/* Steps 3-4: calibrate (noise), encode θ, one group commit with the head row last. */
static core_err run_and_commit(struct core_dp_ledger *l, const struct cal_matrix *mx,
                               const struct cal_opts *o, const char *source,
                               const struct core_rng *rng, char (*ids)[ID_MAX], size_t parts,
                               struct cal_charged *out, char *eb, size_t ebn)
{
    struct cal_theta *t = NULL;
    char **marks = core_xcalloc(parts, sizeof(char *));
    const char **idp = core_xcalloc(parts, sizeof(char *));
    const void **bp = core_xcalloc(parts, sizeof(void *));
    size_t *lens = core_xcalloc(parts, sizeof(size_t));
    core_err rc = cal_calibrate(mx, o, rng, &t, &out->rep, eb, ebn);

    if (rc != CORE_OK)
        goto out;
    if (source)
        snprintf(t->source, sizeof(t->source), "%s", source);
    if (o->reason[0]) /* part of the committed bytes, so a replay republishes it too */
        snprintf(t->reason, sizeof(t->reason), "%s", o->reason);
    if ((rc = cal_theta_to_bytes(t, &out->bytes, &out->len, eb, ebn)) != CORE_OK)
        goto out;
    for (size_t p = 0; p + 1 < parts; p++) {
        json_t *m = json_pack("{s:I,s:I,s:I}", "calibrate_part", (json_int_t)p + 1, "parts",
                              (json_int_t)parts, "theta_version", (json_int_t)o->version);
        marks[p] = json_dumps(m, JSON_COMPACT);
        json_decref(m);
        bp[p] = marks[p];
        lens[p] = marks[p] ? strlen(marks[p]) : 0;
    }
    for (size_t p = 0; p < parts; p++)
        idp[p] = ids[p];
    bp[parts - 1] = out->bytes;
    lens[parts - 1] = out->len;
    rc = core_dp_ledger_commit_batch(l, parts, idp, bp, lens);
    if (rc != CORE_OK)
        snprintf(eb, ebn,
                 "ledger: committing calibrate|%" PRIu64 " failed (%s); theta not "
                 "written",
                 o->version, core_errname(rc));
out:
    if (rc != CORE_OK && !commit_failure(l, o, ids, parts, eb, ebn))
        cancel_all(l, ids, parts); /* nothing durable could be written: nothing stands */
    if (rc != CORE_OK) {
        free(out->bytes);
        out->bytes = NULL;
        out->len = 0;
    }
    for (size_t p = 0; p < parts; p++)
        free(marks[p]);
    free(marks);
    free(idp);
    free(bp);
    free(lens);
    cal_theta_free(t);
    return rc;
}

/* Version o->version already committed: republish its stored θ into out (never re-noised;
 * CORE_OK or the replay's error). CORE_ENOTFOUND when it is not in the ledger. */
static core_err replay_if_committed(struct core_dp_ledger *l, const struct cal_matrix *mx,
                                    const struct cal_opts *o, struct cal_charged *out, char *eb,
                                    size_t ebn)
{
    char hid[ID_MAX];
    uint8_t *stored = NULL;
    size_t stored_len = 0;
    core_err rc;

    head_id(hid, o->version);
    rc = core_dp_ledger_lookup(l, hid, &stored, &stored_len);
    if (rc == CORE_OK) {
        rc = replay(l, mx, o, stored, stored_len, out, eb, ebn);
        free(stored);
        return rc; /* CORE_OK or CORE_EINVARIANT, never CORE_ENOTFOUND */
    }
    if (rc != CORE_ENOTFOUND)
        snprintf(eb, ebn, "ledger: lookup of %s failed (%s)", hid, core_errname(rc));
    return rc;
}

core_err cal_calibrate_charged(struct core_dp_ledger *l, const struct cal_matrix *mx,
                               const struct cal_opts *o_in, const struct cal_ledger_opts *lo,
                               const char *source, const struct core_rng *rng,
                               struct cal_charged *out, char *eb, size_t ebn)
{
    struct cal_opts o = *o_in;
    struct cal_units *u = NULL;
    struct core_dp_cost cost = {0.0, 0.0, 0.0};
    char(*ids)[ID_MAX] = NULL;
    size_t parts = 0, charged = 0;
    core_err rc;

    memset(out, 0, sizeof(*out));
    if (!l || !mx || !lo || o.mode != CAL_MODE_PRIVATE) {
        snprintf(eb, ebn, "ledger charge: needs a ledger, a matrix and private mode");
        return CORE_EINVAL;
    }
    if (o.version == 0)
        o.version = (uint64_t)core_wall_ms();
    if ((rc = cal_opts_check(&o, eb, ebn)) != CORE_OK)
        return rc;
    cost.eps = cal_eps_cal_charge(&o.eps);
    if (!(cost.eps > 0.0) || !isfinite(cost.eps)) { /* NaN fails closed */
        snprintf(eb, ebn, "calibrate.eps_*: eps_cal must be finite and > 0 in private mode");
        return CORE_ECONFIG;
    }
    /* 1. replay */
    if ((rc = replay_if_committed(l, mx, &o, out, eb, ebn)) != CORE_ENOTFOUND)
        return rc;
    /* 2. charge every unit before any noise */
    if ((rc = cal_ledger_units(mx, lo, &u, eb, ebn)) != CORE_OK)
        return rc;
    parts = (u->n + CORE_DP_LEDGER_MAX_UNITS - 1) / CORE_DP_LEDGER_MAX_UNITS;
    ids = core_xcalloc(parts, sizeof(*ids));
    for (size_t p = 0; p + 1 < parts; p++)
        part_id(ids[p], o.version, p + 1);
    head_id(ids[parts - 1], o.version);
    rc = charge_parts(l, &o, lo, u, mx->n, ids, parts, &cost, &charged, eb, ebn);
    /* 3-4. noise, θ, durable commit */
    if (rc == CORE_OK)
        rc = run_and_commit(l, mx, &o, source, rng, ids, parts, out, eb, ebn);
    if (rc == CORE_OK) {
        out->version = o.version;
        out->n_units = u->n;
        out->n_parts = parts;
        out->eps_charged = cost.eps;
    } else {
        cal_charged_cleanup(out);
    }
    free(ids);
    cal_units_free(u);
    return rc;
}

void cal_ledger_opts_from_config(const struct core_config *cfg, const char *const *devices,
                                 size_t n_devices, struct cal_ledger_opts *lo,
                                 struct core_dp_scheme *sc)
{
    core_dp_scheme_from_config(cfg, sc); /* the ledger's scheme, exactly as release binds it */
    memset(lo, 0, sizeof(*lo));
    lo->devices = devices;
    lo->n_devices = n_devices;
    lo->slot_ms = sc->slot_ms;
    lo->widen_ms = cal_ledger_widen_ms(sc); /* raw times: ingest snaps them (<= p/2) */
    core_dp_cap_from_config(cfg, &lo->cap);
}
