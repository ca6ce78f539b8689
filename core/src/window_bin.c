/* window_bin.c - gcdp.window/3 encoder and decoder (layout: schemas/window3.md).
 *
 *   record  magic "\xffGW", u8 version (3), u8 flags (bit 0: excluded; others 0),
 *           str id, str device, str config_version, i64 window_start, i64 window_end,
 *           u32 n, u32 n_slots, str closed_early,
 *           excluded:     str exclude_reason, str exclude_detail
 *           not excluded: u32 interp_gap, i64 period_ms, str norm, u32 n_nodes, node[n_nodes]
 *   node    str name, str stat, str channel, f64 value, f64 clip_lo, f64 clip_hi, u32 n_node,
 *           u32 max_run, u32 n_imputed, i64 imputed[n_imputed]
 *   str     u16 length, that many bytes (no NUL among them), one NUL byte
 * Integers little-endian, fixed width; f64 = IEEE-754 binary64 bits, little-endian. */
#include "core/window_bin.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/mem.h"
#include "core/timefmt.h"

#define NODE_MIN_BYTES (3u * 3u + 3u * 8u + 3u * 4u) /* three empty strings, no imputed */

void core_wrec_init(struct core_wrec *r)
{
    memset(r, 0, sizeof(*r));
}

void core_wrec_cleanup(struct core_wrec *r)
{
    if (!r)
        return;
    free(r->node);
    free(r->imp);
    memset(r, 0, sizeof(*r));
}

bool core_wbin_is(const void *p, size_t len)
{
    return len >= 3 && memcmp(p, CORE_WBIN_MAGIC, 3) == 0;
}

/* ---- encoder ---- */

static void put_le(struct core_buf *b, uint64_t v, unsigned bytes)
{
    unsigned char t[8];

    for (unsigned i = 0; i < bytes; i++)
        t[i] = (unsigned char)(v >> (8 * i));
    core_buf_put(b, t, bytes);
}

static void put_f64(struct core_buf *b, double d)
{
    uint64_t u;

    memcpy(&u, &d, sizeof(u));
    put_le(b, u, 8);
}

static void put_str(struct core_buf *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;

    put_le(b, n, 2);
    core_buf_put(b, s ? s : "", n);
    core_buf_put(b, "", 1);
}

static bool str_fits(const char *s)
{
    return !s || strlen(s) <= CORE_WBIN_MAX_STR;
}

static bool encodable(const struct core_wrec *r)
{
    if (!str_fits(r->id) || !str_fits(r->device) || !str_fits(r->config_version) ||
        !str_fits(r->closed_early) || !str_fits(r->exclude_reason) ||
        !str_fits(r->exclude_detail) || !str_fits(r->norm))
        return false;
    if (r->excluded)
        return true;
    if (r->n_nodes > CORE_WBIN_MAX_NODES)
        return false;
    for (size_t i = 0; i < r->n_nodes; i++) {
        const struct core_wrec_node *nd = &r->node[i];
        if (!str_fits(nd->name) || !str_fits(nd->stat) || !str_fits(nd->channel) ||
            (nd->n_imputed && !nd->imputed))
            return false;
    }
    return true;
}

static void put_node(struct core_buf *b, const struct core_wrec_node *nd)
{
    put_str(b, nd->name);
    put_str(b, nd->stat);
    put_str(b, nd->channel);
    put_f64(b, nd->value);
    put_f64(b, nd->clip_lo);
    put_f64(b, nd->clip_hi);
    put_le(b, nd->n_node, 4);
    put_le(b, nd->max_run, 4);
    put_le(b, nd->n_imputed, 4);
    for (uint32_t k = 0; k < nd->n_imputed; k++)
        put_le(b, (uint64_t)nd->imputed[k], 8);
}

core_err core_wbin_encode(const struct core_wrec *r, struct core_buf *out)
{
    if (!encodable(r))
        return CORE_EINVAL;
    core_buf_put(out, CORE_WBIN_MAGIC, 3);
    put_le(out, CORE_WBIN_VERSION, 1);
    put_le(out, r->excluded ? 1u : 0u, 1);
    put_str(out, r->id);
    put_str(out, r->device);
    put_str(out, r->config_version);
    put_le(out, (uint64_t)r->start, 8);
    put_le(out, (uint64_t)r->end, 8);
    put_le(out, r->n, 4);
    put_le(out, r->n_slots, 4);
    put_str(out, r->closed_early);
    if (r->excluded) {
        put_str(out, r->exclude_reason);
        put_str(out, r->exclude_detail);
        return CORE_OK;
    }
    put_le(out, r->interp_gap, 4);
    put_le(out, (uint64_t)r->period_ms, 8);
    put_str(out, r->norm);
    put_le(out, r->n_nodes, 4);
    for (size_t i = 0; i < r->n_nodes; i++)
        put_node(out, &r->node[i]);
    return CORE_OK;
}

/* ---- decoder ---- */

struct cur {
    const unsigned char *p;
    size_t len, at;
    char *eb;
    size_t ebn;
    core_err rc; /* first failure; later reads are no-ops */
};

static bool fail(struct cur *c, core_err rc, const char *what)
{
    if (c->rc == CORE_OK) {
        c->rc = rc;
        if (c->eb && c->ebn)
            snprintf(c->eb, c->ebn, "gcdp.window/3: %s (at byte %zu of %zu)", what, c->at, c->len);
    }
    return false;
}

static bool need(struct cur *c, size_t n, const char *what)
{
    if (c->rc != CORE_OK)
        return false;
    if (n > c->len - c->at)
        return fail(c, CORE_EPARSE, what);
    return true;
}

/* Little-endian value of the bytes at p (1..8 of them; a constant at every call, so the
 * copy compiles to one load). */
static inline uint64_t load_le(const unsigned char *p, unsigned bytes)
{
    uint64_t v = 0;

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(&v, p, bytes); /* one load on little-endian hosts */
#else
    for (unsigned i = 0; i < bytes; i++)
        v |= (uint64_t)p[i] << (8 * i);
#endif
    return v;
}

static inline uint64_t get_le(struct cur *c, unsigned bytes, const char *what)
{
    uint64_t v;

    if (!need(c, bytes, what))
        return 0;
    v = load_le(c->p + c->at, bytes);
    c->at += bytes;
    return v;
}

static const char *get_str(struct cur *c, const char *what)
{
    size_t n = (size_t)get_le(c, 2, what);
    const char *s;

    if (!need(c, n + 1, what))
        return "";
    s = (const char *)c->p + c->at;
    if (s[n] != '\0' || memchr(s, '\0', n)) {
        fail(c, CORE_EPARSE, what);
        return "";
    }
    c->at += n + 1;
    return s;
}

#define NODE_FIXED_BYTES (3u * 8u + 3u * 4u) /* value, clip_lo, clip_hi, three counts */

static double f64_of(uint64_t u)
{
    double d;

    memcpy(&d, &u, sizeof(d));
    return d;
}

static void get_node(struct cur *c, struct core_wrec *r, size_t i, size_t *used)
{
    struct core_wrec_node *nd = &r->node[i];
    const unsigned char *src;

    nd->name = get_str(c, "node name");
    nd->stat = get_str(c, "node stat");
    nd->channel = get_str(c, "node channel");
    nd->imputed = NULL;
    if (!need(c, NODE_FIXED_BYTES, "node fields"))
        return;
    /* one length check for the fixed-width fields, then plain loads */
    src = c->p + c->at;
    nd->value = f64_of(load_le(src, 8));
    nd->clip_lo = f64_of(load_le(src + 8, 8));
    nd->clip_hi = f64_of(load_le(src + 16, 8));
    nd->n_node = (uint32_t)load_le(src + 24, 4);
    nd->max_run = (uint32_t)load_le(src + 28, 4);
    nd->n_imputed = (uint32_t)load_le(src + 32, 4);
    if (!isfinite(nd->value) || !isfinite(nd->clip_lo) || !isfinite(nd->clip_hi)) {
        fail(c, CORE_EPARSE, "node value or clip bound not finite");
        return;
    }
    c->at += NODE_FIXED_BYTES;
    if (nd->n_imputed == 0)
        return;
    if ((c->len - c->at) / 8 < nd->n_imputed) {
        fail(c, CORE_EPARSE, "node imputed list");
        return;
    }
    src = c->p + c->at;
    for (uint32_t k = 0; k < nd->n_imputed; k++)
        r->imp[*used + k] = (int64_t)load_le(src + 8 * (size_t)k, 8);
    nd->imputed = r->imp + *used;
    *used += nd->n_imputed;
    c->at += 8 * (size_t)nd->n_imputed;
}

static void get_nodes(struct cur *c, struct core_wrec *r)
{
    uint32_t n = (uint32_t)get_le(c, 4, "n_nodes");
    size_t used = 0;

    if (c->rc != CORE_OK)
        return;
    if (n > CORE_WBIN_MAX_NODES) {
        fail(c, CORE_ETOOBIG, "n_nodes past the cap");
        return;
    }
    if ((c->len - c->at) / NODE_MIN_BYTES < n) {
        fail(c, CORE_EPARSE, "n_nodes larger than the record");
        return;
    }
    if (n > r->node_cap) {
        r->node = core_xrealloc(r->node, n * sizeof(*r->node));
        r->node_cap = n;
    }
    /* the imputed lists fit in what is left of the record: one allocation, never moved */
    if ((c->len - c->at) / 8 > r->imp_cap) {
        r->imp_cap = (c->len - c->at) / 8;
        r->imp = core_xrealloc(r->imp, r->imp_cap * sizeof(*r->imp));
    }
    r->n_nodes = n;
    for (size_t i = 0; i < n && c->rc == CORE_OK; i++)
        get_node(c, r, i, &used);
}

static void get_head(struct cur *c, struct core_wrec *r)
{
    unsigned flags;

    if (!need(c, 5, "shorter than its header") || memcmp(c->p, CORE_WBIN_MAGIC, 3) != 0) {
        fail(c, CORE_EPARSE, "not a gcdp.window/3 record (magic)");
        return;
    }
    c->at = 3;
    if (get_le(c, 1, "version") != CORE_WBIN_VERSION) {
        fail(c, CORE_EPARSE, "unknown version");
        return;
    }
    flags = (unsigned)get_le(c, 1, "flags");
    if (flags > 1u)
        fail(c, CORE_EPARSE, "unknown flags");
    r->excluded = flags == 1u;
    r->id = get_str(c, "id");
    r->device = get_str(c, "device");
    r->config_version = get_str(c, "config_version");
    r->start = (int64_t)get_le(c, 8, "window_start");
    r->end = (int64_t)get_le(c, 8, "window_end");
    r->n = (uint32_t)get_le(c, 4, "n");
    r->n_slots = (uint32_t)get_le(c, 4, "n_slots");
    r->closed_early = get_str(c, "closed_early");
}

core_err core_wbin_decode(const void *p, size_t len, struct core_wrec *r, char *errbuf,
                          size_t errbuf_size)
{
    struct cur c = {p, len, 0, errbuf, errbuf_size, CORE_OK};

    if (errbuf && errbuf_size)
        errbuf[0] = '\0';
    if (len > CORE_WBIN_MAX_LEN) {
        fail(&c, CORE_ETOOBIG, "record longer than the cap");
        return c.rc;
    }
    r->n_nodes = 0;
    r->exclude_reason = r->exclude_detail = r->norm = "";
    r->interp_gap = 0;
    r->period_ms = 0;
    get_head(&c, r);
    if (r->excluded) {
        r->exclude_reason = get_str(&c, "exclude_reason");
        r->exclude_detail = get_str(&c, "exclude_detail");
    } else {
        r->interp_gap = (uint32_t)get_le(&c, 4, "interp_gap");
        r->period_ms = (int64_t)get_le(&c, 8, "period_ms");
        r->norm = get_str(&c, "norm");
        get_nodes(&c, r);
    }
    if (c.rc == CORE_OK && c.at != len)
        fail(&c, CORE_EPARSE, "trailing bytes after the record");
    if (c.rc != CORE_OK)
        r->n_nodes = 0;
    return c.rc;
}

/* ---- window/2 JSON view ---- */

static void json_key(struct core_buf *b, const char *k)
{
    core_buf_json_str(b, k, strlen(k));
    core_buf_putc(b, ':');
}

static void json_sval(struct core_buf *b, const char *k, const char *v)
{
    json_key(b, k);
    core_buf_json_str(b, v, strlen(v));
    core_buf_putc(b, ',');
}

static void json_ival(struct core_buf *b, const char *k, int64_t v)
{
    json_key(b, k);
    core_buf_int(b, v);
    core_buf_putc(b, ',');
}

static void json_dbl(struct core_buf *b, double v)
{
    core_buf_printf(b, "%.17g", v);
}

static void json_time(struct core_buf *b, const char *k, int64_t ms)
{
    char ts[CORE_TIME_TEXT_MAX];

    json_key(b, k);
    core_buf_putc(b, '"');
    core_buf_put(b, ts, core_time_format(ms, CORE_TIME_AUTO, ts, sizeof(ts)));
    core_buf_puts(b, "\",");
}

/* {"<name>": <what of the node>, ...}: 0 value, 1 n_node, 2 imputed list, 3 provenance */
static void json_nodes(struct core_buf *b, const struct core_wrec *r, int what)
{
    core_buf_putc(b, '{');
    for (size_t i = 0; i < r->n_nodes; i++) {
        const struct core_wrec_node *nd = &r->node[i];
        if (i)
            core_buf_putc(b, ',');
        json_key(b, nd->name);
        if (what == 0) {
            json_dbl(b, nd->value);
        } else if (what == 1) {
            core_buf_int(b, nd->n_node);
        } else if (what == 2) {
            core_buf_putc(b, '[');
            for (uint32_t k = 0; k < nd->n_imputed; k++) {
                if (k)
                    core_buf_putc(b, ',');
                core_buf_int(b, nd->imputed[k]);
            }
            core_buf_putc(b, ']');
        } else {
            core_buf_putc(b, '{');
            json_sval(b, "stat", nd->stat);
            json_sval(b, "channel", nd->channel);
            core_buf_puts(b, "\"clip\":[");
            json_dbl(b, nd->clip_lo);
            core_buf_putc(b, ',');
            json_dbl(b, nd->clip_hi);
            core_buf_puts(b, "],");
            json_ival(b, "n_imputed", nd->n_imputed);
            json_key(b, "max_run");
            core_buf_int(b, nd->max_run);
            core_buf_putc(b, '}');
        }
    }
    core_buf_putc(b, '}');
}

void core_wbin_to_json(const struct core_wrec *r, struct core_buf *out)
{
    core_buf_putc(out, '{');
    json_sval(out, "schema", "gcdp.window/2");
    json_sval(out, "id", r->id);
    json_sval(out, "device", r->device);
    json_ival(out, "window_start", r->start);
    json_ival(out, "window_end", r->end);
    json_time(out, "window_start_utc", r->start);
    json_time(out, "window_end_utc", r->end);
    json_sval(out, "config_version", r->config_version);
    json_ival(out, "n", r->n);
    json_ival(out, "n_slots", r->n_slots);
    if (r->closed_early && r->closed_early[0])
        json_sval(out, "closed_early", r->closed_early);
    if (r->excluded) {
        core_buf_puts(out, "\"excluded\":true,");
        json_sval(out, "exclude_reason", r->exclude_reason);
        json_key(out, "exclude_detail");
        core_buf_json_str(out, r->exclude_detail, strlen(r->exclude_detail));
        core_buf_putc(out, '}');
        return;
    }
    core_buf_puts(out, "\"excluded\":false,\"nodes\":");
    json_nodes(out, r, 0);
    core_buf_puts(out, ",\"n_node\":");
    json_nodes(out, r, 1);
    core_buf_puts(out, ",\"imputed\":");
    json_nodes(out, r, 2);
    core_buf_puts(out, ",\"prov\":{");
    json_ival(out, "interp_gap", r->interp_gap);
    json_ival(out, "period_ms", r->period_ms);
    json_sval(out, "norm", r->norm);
    core_buf_puts(out, "\"nodes\":");
    json_nodes(out, r, 3);
    core_buf_puts(out, "}}");
}

core_err core_wrec_print(const void *p, size_t len, struct core_wrec *r, struct core_buf *out,
                         char *eb, size_t ebn)
{
    json_error_t jerr;
    json_t *j;
    size_t at;

    if (core_wbin_is(p, len)) {
        core_err rc = core_wbin_decode(p, len, r, eb, ebn);
        if (rc == CORE_OK)
            core_wbin_to_json(r, out);
        return rc;
    }
    j = json_loadb(p, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!j || !json_is_object(j)) {
        snprintf(eb, ebn, "neither gcdp.window/3 nor a JSON object: %s",
                 j ? "a JSON value that is not an object" : jerr.text);
        json_decref(j);
        return CORE_EPARSE;
    }
    json_decref(j);
    at = out->len;
    core_buf_put(out, p, len);
    for (size_t i = at; core_buf_status(out) == CORE_OK && i < out->len; i++)
        if (out->p[i] == '\n' || out->p[i] == '\r')
            out->p[i] = ' ';
    return CORE_OK;
}
