/* release.c - Algorithm 4 per window with the write-ahead ledger (NOISE.md §4.9 option A):
 * lookup -> charge -> noise -> encode -> group commit (fsync) -> emit. */
#include "rel/release.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"

#define UNIT_BUF (REL_MAX_UNITS_PER_WINDOW * (REL_MAX_DEVICE + 24))

struct pending {
    char id[REL_MAX_ID + 32];
    char *bytes;
    size_t len;
    bool replayed;
};

struct sbuf {
    char *p;
    size_t len, cap;
};

struct rel_releaser {
    const struct rel_plan *plan;
    struct core_dp_ledger *ledger;
    const struct core_rng *rng;
    size_t batch, n_pending;
    struct pending *pending;
    char **coord_json;     /* d JSON-escaped coordinate names, with quotes */
    double *y, *z, *out;   /* d work arrays */
    char *unit_buf;
    const char **units;
    struct rel_release_stats stats;
};

/* ------------------------------------------------------------------ small helpers */

static void sb_reserve(struct sbuf *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return;
    while (b->len + extra + 1 > b->cap)
        b->cap = b->cap ? 2 * b->cap : 1024;
    b->p = core_xrealloc(b->p, b->cap);
}

static void sb_put(struct sbuf *b, const char *s, size_t n)
{
    sb_reserve(b, n);
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_printf(struct sbuf *b, const char *fmt, ...) CORE_PRINTF(2, 3);
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
    va_list ap;
    int n;
    sb_reserve(b, 64);
    va_start(ap, fmt);
    n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n >= b->cap - b->len) {
        sb_reserve(b, (size_t)n);
        va_start(ap, fmt);
        n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
    }
    if (n > 0)
        b->len += (size_t)n;
}

/* JSON string literal of s (quotes included); new string. */
static char *json_quote(const char *s)
{
    json_t *j = json_string(s);
    char *out = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    json_decref(j);
    return out ? out : core_xstrdup("\"?\"");
}

/* Shortest-exact doubles (%.17g), with -0 canonicalized to 0 (NOISE.md §4.11). */
static void sb_double(struct sbuf *b, double v)
{
    if (v == 0.0)
        v = 0.0;
    sb_printf(b, "%.17g", v);
}

/* ------------------------------------------------------------------ lifecycle */

core_err rel_releaser_new(const struct rel_plan *plan, struct core_dp_ledger *ledger,
                          const struct core_rng *rng, size_t batch, struct rel_releaser **out)
{
    struct rel_releaser *r;

    *out = NULL;
    if (!plan || !ledger || !rng || batch == 0 || batch > 65536)
        return CORE_EINVAL;
    r = core_xcalloc(1, sizeof(*r));
    r->plan = plan;
    r->ledger = ledger;
    r->rng = rng;
    r->batch = batch;
    r->pending = core_xcalloc(batch, sizeof(*r->pending));
    r->coord_json = core_xcalloc(plan->d, sizeof(*r->coord_json));
    for (size_t k = 0; k < plan->d; k++)
        r->coord_json[k] = json_quote(plan->theta->coords[k].name ? plan->theta->coords[k].name
                                                                  : plan->theta->nodes[k]);
    r->y = core_xcalloc(plan->d, sizeof(double));
    r->z = core_xcalloc(plan->d, sizeof(double));
    r->out = core_xcalloc(plan->d, sizeof(double));
    r->unit_buf = core_xmalloc(UNIT_BUF);
    r->units = core_xcalloc(REL_MAX_UNITS_PER_WINDOW, sizeof(*r->units));
    *out = r;
    return CORE_OK;
}

static void drop_pending(struct rel_releaser *r)
{
    for (size_t i = 0; i < r->n_pending; i++) {
        if (!r->pending[i].replayed && core_dp_ledger_cancel(r->ledger, r->pending[i].id))
            r->stats.cancel_failed++; /* stays charged: over-counts, never under */
        free(r->pending[i].bytes);
    }
    r->n_pending = 0;
}

void rel_releaser_free(struct rel_releaser *r)
{
    if (!r)
        return;
    drop_pending(r);
    free(r->pending);
    for (size_t k = 0; k < r->plan->d; k++)
        free(r->coord_json[k]);
    free(r->coord_json);
    free(r->y);
    free(r->z);
    free(r->out);
    free(r->unit_buf);
    free(r->units);
    free(r);
}

void rel_releaser_stats(const struct rel_releaser *r, struct rel_release_stats *out)
{
    *out = r->stats;
}

/* ------------------------------------------------------------------ Algorithm 4 */

/* y_k = Π_k(q_k(D)): public clamps of every node statistic, then of the combination.
 * Refuses windows the certified bounds do not cover (n outside [n_min, n_max]). */
static core_err project(struct rel_releaser *r, const struct rel_window *w, char *eb,
                        size_t ebn)
{
    const struct rel_plan *p = r->plan;
    const struct cal_theta *t = p->theta;

    for (size_t m = 0; m < t->n_nodes; m++) {
        if (!p->node_used[m])
            continue;
        if (w->n[m] < p->opts.query.min_samples || w->n[m] > p->opts.query.max_samples) {
            snprintf(eb, ebn, "window %s: node %s has %" PRIu32 " real samples, outside the "
                     "certified range [%" PRIu32 ", %" PRIu32 "] (release.query.*); refused",
                     w->id, t->nodes[m], w->n[m], p->opts.query.min_samples,
                     p->opts.query.max_samples);
            return CORE_EINVAL;
        }
        if (!isfinite(w->x[m])) {
            snprintf(eb, ebn, "window %s: node %s is not a finite number", w->id, t->nodes[m]);
            return CORE_EINVAL;
        }
    }
    for (size_t k = 0; k < p->d; k++) {
        const struct cal_coord *c = &t->coords[k];
        double q = 0.0;
        for (size_t a = 0; a < c->n; a++) {
            double lo, hi;
            rel_stat_range(p->node_stat[c->nodes[a]], &p->opts.query, &lo, &hi);
            q += c->coef[a] * fmin(fmax(w->x[c->nodes[a]], lo), hi);
        }
        r->y[k] = fmin(fmax(q, p->lo[k]), p->hi[k]);
    }
    return CORE_OK;
}

/* Name the unit that the cap refuses, with its totals (public accounting numbers only). */
static void budget_message(struct rel_releaser *r, size_t n_units, char *eb, size_t ebn)
{
    const struct core_dp_cost *c = &r->plan->cost, *cap = &r->plan->opts.cap;
    for (size_t u = 0; u < n_units; u++) {
        struct core_dp_cost spent;
        if (core_dp_ledger_spent(r->ledger, r->units[u], &spent) != CORE_OK)
            continue;
        if (!(spent.eps + c->eps <= cap->eps) || !(spent.delta + c->delta <= cap->delta)) {
            snprintf(eb, ebn, "privacy budget: unit '%s' has spent eps=%.6g delta=%.3g; this "
                     "release needs eps=%.6g delta=%.3g; lifetime cap eps=%.6g delta=%.3g "
                     "(release.ledger.cap_*); refused", r->units[u], spent.eps, spent.delta,
                     c->eps, c->delta, cap->eps, cap->delta);
            return;
        }
    }
    snprintf(eb, ebn, "privacy budget: lifetime cap reached (eps cap %.6g); refused", cap->eps);
}

/* Algorithm 4 steps 2-5: independent noise per coordinate; zero-sensitivity coordinates
 * exactly (Theorem 1). Noise comes only from core's exact samplers (NOISE.md §4.5/4.6). */
static core_err add_noise(struct rel_releaser *r)
{
    const struct rel_plan *p = r->plan;
    size_t j = 0;
    core_err rc = CORE_OK;

    if (p->opts.mech->gaussian) {
        for (size_t k = 0; k < p->d; k++)
            if (p->s[k] > 0.0)
                r->z[j++] = r->y[k] / p->s[k]; /* sensitivity <= 1 per coordinate */
        rc = core_dp_gauss_release(r->rng, &p->gauss, j, r->z, r->z);
        j = 0;
        for (size_t k = 0; rc == CORE_OK && k < p->d; k++)
            r->out[k] = p->s[k] > 0.0 ? p->s[k] * r->z[j++] : r->y[k];
        return rc;
    }
    for (size_t k = 0; rc == CORE_OK && k < p->d; k++) {
        if (p->s[k] > 0.0)
            rc = core_dp_lap_release(r->rng, &p->lap[k], 1, &r->y[k], &r->out[k]);
        else
            r->out[k] = r->y[k];
    }
    return rc;
}

static char *encode(struct rel_releaser *r, const struct rel_window *w, const char *rid,
                    size_t *len)
{
    const struct rel_plan *p = r->plan;
    struct sbuf b = {0};
    char *q;

    sb_reserve(&b, 256 + p->d * 64);
    sb_printf(&b, "{\"schema\":\"%s\",\"release_id\":", REL_SCHEMA_RELEASED);
    q = json_quote(rid);
    sb_put(&b, q, strlen(q));
    free(q);
    sb_printf(&b, ",\"device\":\"%s\",\"window_start\":%" PRId64 ",\"window_end\":%" PRId64
              ",\"theta_version\":%" PRIu64 ",\"mechanism\":\"%s\",\"eps_rel\":",
              w->device, w->start, w->end, p->theta->version, p->opts.mech->name);
    sb_double(&b, p->opts.eps_rel);
    if (p->opts.mech->gaussian) {
        sb_put(&b, ",\"delta\":", 9);
        sb_double(&b, p->opts.delta);
    }
    for (int part = 0; part < 2; part++) {
        sb_put(&b, part ? "},\"scale\":{" : ",\"values\":{", part ? 11 : 11);
        for (size_t k = 0; k < p->d; k++) {
            if (k)
                sb_put(&b, ",", 1);
            sb_put(&b, r->coord_json[k], strlen(r->coord_json[k]));
            sb_put(&b, ":", 1);
            sb_double(&b, part ? p->scale[k] : r->out[k]);
        }
    }
    sb_put(&b, "}}", 2);
    *len = b.len;
    return b.p;
}

core_err rel_releaser_flush(struct rel_releaser *r, rel_emit_fn *emit, void *arg, char *eb,
                            size_t ebn)
{
    const char **ids = NULL;
    const void **bytes = NULL;
    size_t *lens = NULL, n = 0;
    core_err rc = CORE_OK;

    if (r->n_pending == 0)
        return CORE_OK;
    ids = core_xcalloc(r->n_pending, sizeof(*ids));
    bytes = core_xcalloc(r->n_pending, sizeof(*bytes));
    lens = core_xcalloc(r->n_pending, sizeof(*lens));
    for (size_t i = 0; i < r->n_pending; i++) {
        if (r->pending[i].replayed)
            continue;
        ids[n] = r->pending[i].id;
        bytes[n] = r->pending[i].bytes;
        lens[n++] = r->pending[i].len;
    }
    if (n > 0)
        rc = core_dp_ledger_commit_batch(r->ledger, n, ids, bytes, lens); /* fsync */
    if (rc != CORE_OK) {
        snprintf(eb, ebn, "ledger commit failed (%s); nothing of the batch was published",
                 core_strerror(rc));
        goto out;
    }
    for (size_t i = 0; i < r->n_pending; i++) {
        r->pending[i].replayed ? r->stats.replayed++ : r->stats.released++;
        if (rc == CORE_OK)
            rc = emit(arg, r->pending[i].bytes, r->pending[i].len, r->pending[i].replayed);
        free(r->pending[i].bytes);
        r->pending[i].replayed = true; /* committed: nothing left to cancel */
    }
    r->n_pending = 0;
    if (rc != CORE_OK)
        snprintf(eb, ebn, "output failed after the ledger commit (%s); rerun to republish "
                 "from the ledger", core_strerror(rc));
out:
    free(ids);
    free(bytes);
    free(lens);
    return rc;
}

static core_err queue(struct rel_releaser *r, const char *rid, char *bytes, size_t len,
                      bool replayed, rel_emit_fn *emit, void *arg, char *eb, size_t ebn)
{
    struct pending *e = &r->pending[r->n_pending++];
    snprintf(e->id, sizeof(e->id), "%s", rid);
    e->bytes = bytes;
    e->len = len;
    e->replayed = replayed;
    return r->n_pending == r->batch ? rel_releaser_flush(r, emit, arg, eb, ebn) : CORE_OK;
}

static core_err charge(struct rel_releaser *r, const struct rel_window *w, const char *rid,
                       char *eb, size_t ebn)
{
    const struct rel_plan *p = r->plan;
    size_t n_units = 0;
    core_err rc = rel_plan_units(p, w->device, w->start, w->end, r->unit_buf, UNIT_BUF,
                                 r->units, REL_MAX_UNITS_PER_WINDOW, &n_units);
    if (rc != CORE_OK) {
        snprintf(eb, ebn, "window %s: spans more than %u ledger slots "
                 "(release.ledger.slot_ms too small)", w->id, REL_MAX_UNITS_PER_WINDOW);
        return rc;
    }
    rc = core_dp_ledger_charge(r->ledger, rid, p->opts.mech->name, r->units, n_units, &p->cost,
                               p->params_json);
    if (rc == CORE_EBUDGET)
        budget_message(r, n_units, eb, ebn);
    else if (rc != CORE_OK)
        snprintf(eb, ebn, "window %s: ledger charge failed (%s)", w->id, core_strerror(rc));
    return rc;
}

core_err rel_releaser_push(struct rel_releaser *r, const struct rel_window *w, rel_emit_fn *emit,
                           void *arg, char *eb, size_t ebn)
{
    const struct rel_plan *p = r->plan;
    char rid[REL_MAX_ID + 32], *bytes = NULL;
    uint8_t *stored = NULL;
    size_t len = 0;
    core_err rc;

    if (w->excluded) {
        r->stats.excluded++;
        return CORE_OK;
    }
    snprintf(rid, sizeof(rid), "%s@%" PRIu64, w->id, p->theta->version);
    rc = core_dp_ledger_lookup(r->ledger, rid, &stored, &len);
    if (rc == CORE_ENOTFOUND) {
        /* a duplicate of a release still pending in this batch: commit it, then replay */
        for (size_t i = 0; i < r->n_pending; i++)
            if (strcmp(r->pending[i].id, rid) == 0) {
                rc = rel_releaser_flush(r, emit, arg, eb, ebn);
                if (rc != CORE_OK)
                    return rc;
                return rel_releaser_push(r, w, emit, arg, eb, ebn);
            }
    }
    if (rc == CORE_OK) /* replay: the stored bytes, never new noise */
        return queue(r, rid, (char *)stored, len, true, emit, arg, eb, ebn);
    if (rc != CORE_ENOTFOUND) {
        snprintf(eb, ebn, "ledger lookup failed (%s)", core_strerror(rc));
        return rc;
    }
    rc = project(r, w, eb, ebn);
    if (rc == CORE_OK)
        rc = charge(r, w, rid, eb, ebn); /* write-ahead: charged before any noise */
    if (rc != CORE_OK)
        return rc;
    rc = add_noise(r);
    if (rc != CORE_OK) {
        if (core_dp_ledger_cancel(r->ledger, rid) != CORE_OK)
            r->stats.cancel_failed++;
        snprintf(eb, ebn, "window %s: noise generation failed (%s); nothing released", w->id,
                 core_strerror(rc));
        return rc;
    }
    bytes = encode(r, w, rid, &len);
    r->stats.coords_noisy += p->n_noisy;
    r->stats.coords_exact += p->d - p->n_noisy;
    return queue(r, rid, bytes, len, false, emit, arg, eb, ebn);
}
