/* drift.c - the GC-DP-Cache drift monitor (rel/drift.h): one tumbling horizon of released
 * windows -> pooled matrix -> core's lagged |Pearson| kernel -> attenuation-corrected
 * Algorithm 1 summary -> sup distance to θ (or to a baseline horizon) -> patience.
 * Pure: no I/O, no clock; memory allocated in rel_drift_new / rel_drift_reset only. */
#include "rel/drift.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/lagcorr.h"
#include "core/mem.h"
#include "rel/config.h"

#define DEF_MIN_REL 0.1
/* On window time a device enters its horizon only with at least this fraction of the
 * fullest device's windows (a device read halfway through the span would weigh one time of
 * day: the diurnal bias a backlog caused); a few excluded windows per device still pass. */
#define SPAN_COVER 0.9

/* What a θ contributes (rebuilt by reset). */
struct drift_theta {
    const struct cal_theta *theta;
    size_t m;       /* observed nodes */
    uint32_t *node; /* m θ node indices, ascending */
    size_t *coord;  /* m coordinate indices (a(k) = {node}) */
    double *thw;    /* m x m θ edge weights, 0 = no edge */
    uint8_t *sat;   /* m: θ degree >= K */
};

/* Sort key of one horizon row (qsort has no context argument in C11). */
struct drift_key {
    const char *dev;
    int64_t start;
    size_t idx;
};

/* One open horizon: rows [slot * horizon, slot * horizon + n) of the row arrays. */
struct drift_bucket {
    int64_t index; /* floor(window_start / span_ms); in arrival order the horizon count */
    size_t n;
    bool open;
};

struct rel_drift {
    struct rel_drift_opts o;
    struct drift_theta t;
    /* the open horizons (1 slot in arrival order, REL_DRIFT_OPEN with span_ms) */
    size_t slots;
    struct drift_bucket b[REL_DRIFT_OPEN];
    int64_t closed_upto; /* highest span index closed since the last reset */
    bool any_closed;
    int64_t arrival; /* arrival order: index of the open horizon */
    char (*dev)[REL_DRIFT_MAX_DEVICE + 1];
    int64_t *start;
    double *val, *nv; /* horizon x m */
    struct drift_key *order;
    /* evaluation scratch */
    double *x, *rho0, *rmax, *work, *s, *base, *rel, *nvsum;
    bool have_base, have_summary, fired;
    unsigned consecutive;
    struct rel_drift_stats st;
};

void rel_drift_opts_default(struct rel_drift_opts *o)
{
    char eb[160];

    memset(o, 0, sizeof(*o));
    o->ref = REL_DRIFT_REF_THETA;
    o->correct = true;
    o->min_reliability = DEF_MIN_REL;
    /* The release.drift.* rows of rel_config_keys state the other defaults (once). They
     * are checked by core_config_new and tests/release/test_drift.c; were one not to fit,
     * its field stays 0 and rel_drift_opts_check refuses the options (fail closed). */
    if (core_cfg_defaults(rel_config_keys, REL_KEYS_DRIFT, o, eb, sizeof(eb)) != CORE_OK)
        memset(&o->horizon, 0, sizeof(o->horizon));
}

static core_err bad(char *eb, size_t ebn, const char *what)
{
    if (eb && ebn)
        snprintf(eb, ebn, "drift monitor: %s", what);
    return CORE_EINVAL;
}

core_err rel_drift_opts_check(const struct rel_drift_opts *o, char *eb, size_t ebn)
{
    if (!o)
        return bad(eb, ebn, "no options");
    if (o->horizon < 8 || o->horizon > REL_DRIFT_MAX_HORIZON)
        return bad(eb, ebn, "horizon (release.drift.horizon) must be in [8, 65536] windows");
    if (!(o->threshold > 0.0 && o->threshold <= 1.0))
        return bad(eb, ebn, "threshold (release.drift.threshold) must be in (0, 1]");
    if (o->patience < 1 || o->patience > REL_DRIFT_MAX_PATIENCE)
        return bad(eb, ebn, "patience (release.drift.patience) must be in [1, 1000]");
    if (o->min_samples < 2 || o->min_samples > o->horizon)
        return bad(eb, ebn, "min_samples (release.drift.min_samples) must be in [2, horizon]");
    if (o->ref != REL_DRIFT_REF_THETA && o->ref != REL_DRIFT_REF_BASELINE)
        return bad(eb, ebn, "unknown reference");
    if (!(o->min_reliability > 0.0 && o->min_reliability < 1.0))
        return bad(eb, ebn, "min_reliability must be in (0, 1)");
    if (o->span_ms < 0 || o->span_ms > REL_DRIFT_MAX_SPAN_MS)
        return bad(eb, ebn, "span_ms (release.drift.span_ms) must be in [0, 30 days]");
    if (!(o->min_fill > 0.0 && o->min_fill <= 1.0))
        return bad(eb, ebn, "min_fill (release.drift.min_fill) must be in (0, 1]");
    return CORE_OK;
}

double rel_drift_noise_var(double scale, bool gaussian)
{
    if (!isfinite(scale) || scale < 0.0)
        return NAN;
    return gaussian ? scale * scale : 2.0 * scale * scale;
}

static void theta_free(struct drift_theta *t)
{
    free(t->node);
    free(t->coord);
    free(t->thw);
    free(t->sat);
    memset(t, 0, sizeof(*t));
}

/* Node -> first single-node coordinate reading it (SIZE_MAX: none). */
static size_t *single_coords(const struct cal_theta *th)
{
    size_t *by_node = core_xmalloc(th->n_nodes * sizeof(*by_node));
    for (size_t i = 0; i < th->n_nodes; i++)
        by_node[i] = SIZE_MAX;
    for (size_t k = th->d; k-- > 0;) {
        const struct cal_coord *c = &th->coords[k];
        if (c->n == 1 && c->nodes[0] < th->n_nodes && (!c->coef || c->coef[0] != 0.0))
            by_node[c->nodes[0]] = k; /* descending k: the first one wins */
    }
    return by_node;
}

static core_err theta_check(const struct cal_theta *th, char *eb, size_t ebn)
{
    if (!th || th->n_nodes == 0 || th->d == 0 || !th->coords)
        return bad(eb, ebn, "no θ");
    if (th->L < 0 || th->L > CORE_LAGCORR_MAX_LAG || th->K < 1)
        return bad(eb, ebn, "θ's L or K out of range");
    if (!(th->tau >= 0.0 && th->tau <= 1.0) || !(th->lambda >= 0.0 && th->lambda <= 1.0))
        return bad(eb, ebn, "θ's tau or lambda out of [0, 1]");
    return CORE_OK;
}

/* Observed nodes, θ weights among them and saturated endpoints. */
static core_err theta_build(const struct cal_theta *th, struct drift_theta *t, char *eb, size_t ebn)
{
    size_t *by_node, *pos, *deg;
    core_err rc = theta_check(th, eb, ebn);
    if (rc != CORE_OK)
        return rc;
    by_node = single_coords(th);
    pos = core_xmalloc(th->n_nodes * sizeof(*pos));
    deg = core_xcalloc(th->n_nodes, sizeof(*deg));
    memset(t, 0, sizeof(*t));
    t->theta = th;
    t->node = core_xmalloc(th->n_nodes * sizeof(*t->node));
    t->coord = core_xmalloc(th->n_nodes * sizeof(*t->coord));
    for (size_t i = 0; i < th->n_nodes; i++) {
        pos[i] = SIZE_MAX;
        if (by_node[i] != SIZE_MAX) {
            pos[i] = t->m;
            t->node[t->m] = (uint32_t)i;
            t->coord[t->m++] = by_node[i];
        }
    }
    t->thw = core_xcalloc(t->m * t->m + 1, sizeof(*t->thw));
    t->sat = core_xcalloc(t->m + 1, sizeof(*t->sat));
    for (size_t e = 0; e < th->n_edges; e++) {
        const struct cal_edge *ed = &th->edges[e];
        if (ed->i >= th->n_nodes || ed->j >= th->n_nodes)
            continue;
        deg[ed->i]++, deg[ed->j]++;
        if (pos[ed->i] != SIZE_MAX && pos[ed->j] != SIZE_MAX) {
            t->thw[pos[ed->i] * t->m + pos[ed->j]] = ed->w;
            t->thw[pos[ed->j] * t->m + pos[ed->i]] = ed->w;
        }
    }
    for (size_t a = 0; a < t->m; a++)
        t->sat[a] = deg[t->node[a]] >= (size_t)th->K;
    free(by_node), free(pos), free(deg);
    if (t->m < 2) {
        theta_free(t);
        return bad(eb, ebn,
                   "θ has fewer than two nodes released through a single-node "
                   "coordinate: nothing to monitor");
    }
    return CORE_OK;
}

static void buffers_free(struct rel_drift *d)
{
    free(d->dev), free(d->start), free(d->val), free(d->nv), free(d->order);
    free(d->x), free(d->rho0), free(d->rmax), free(d->work), free(d->s), free(d->base);
    free(d->rel), free(d->nvsum);
}

static void buffers_alloc(struct rel_drift *d)
{
    size_t h = d->o.horizon, m = d->t.m, rows = d->slots * h;
    d->dev = core_xcalloc(rows, sizeof(*d->dev));
    d->start = core_xcalloc(rows, sizeof(*d->start));
    d->val = core_xcalloc(rows * m, sizeof(double));
    d->nv = core_xcalloc(rows * m, sizeof(double));
    d->order = core_xcalloc(h, sizeof(*d->order));
    d->x = core_xcalloc(h * m, sizeof(double));
    d->rho0 = core_xcalloc(m * m, sizeof(double));
    d->rmax = core_xcalloc(m * m, sizeof(double));
    d->work = core_xcalloc(core_lagcorr_work_len(h, m, d->t.theta->L), sizeof(double));
    d->s = core_xcalloc(m * m, sizeof(double));
    d->base = core_xcalloc(m * m, sizeof(double));
    d->rel = core_xcalloc(m, sizeof(double));
    d->nvsum = core_xcalloc(m, sizeof(double));
}

static void clear_state(struct rel_drift *d)
{
    memset(d->b, 0, sizeof(d->b));
    d->closed_upto = 0;
    d->any_closed = false;
    d->arrival = 0;
    d->have_base = d->have_summary = d->fired = false;
    d->consecutive = 0;
    memset(&d->st, 0, sizeof(d->st));
}

core_err rel_drift_new(const struct cal_theta *theta, const struct rel_drift_opts *o,
                       struct rel_drift **out, char *eb, size_t ebn)
{
    struct rel_drift *d;
    struct drift_theta t;
    core_err rc;

    if (!out)
        return bad(eb, ebn, "no output");
    *out = NULL;
    if ((rc = rel_drift_opts_check(o, eb, ebn)) != CORE_OK)
        return rc;
    if ((rc = theta_build(theta, &t, eb, ebn)) != CORE_OK)
        return rc;
    size_t slots = o->span_ms > 0 ? REL_DRIFT_OPEN : 1;
    if (slots * o->horizon * t.m > REL_DRIFT_MAX_CELLS) {
        theta_free(&t);
        if (eb && ebn)
            snprintf(eb, ebn,
                     "drift monitor: %zu open horizon(s) x horizon x observed nodes "
                     "over %u",
                     slots, REL_DRIFT_MAX_CELLS);
        return CORE_ETOOBIG;
    }
    d = core_xcalloc(1, sizeof(*d));
    d->o = *o;
    d->t = t;
    d->slots = slots;
    buffers_alloc(d);
    clear_state(d);
    *out = d;
    return CORE_OK;
}

void rel_drift_free(struct rel_drift *d)
{
    if (!d)
        return;
    buffers_free(d);
    theta_free(&d->t);
    free(d);
}

core_err rel_drift_reset(struct rel_drift *d, const struct cal_theta *theta, char *eb, size_t ebn)
{
    struct rel_drift *n;
    core_err rc;

    if (!d)
        return bad(eb, ebn, "no monitor");
    if (!theta || theta == d->t.theta) {
        clear_state(d);
        return CORE_OK;
    }
    if ((rc = rel_drift_new(theta, &d->o, &n, eb, ebn)) != CORE_OK)
        return rc; /* unchanged */
    buffers_free(d);
    theta_free(&d->t);
    *d = *n;
    free(n);
    return CORE_OK;
}

/* ------------------------------------------------------------------ evaluation */

static int row_cmp(const void *pa, const void *pb)
{
    const struct drift_key *a = pa, *b = pb;
    int c = strcmp(a->dev, b->dev);
    if (c != 0)
        return c;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return a->idx < b->idx ? -1 : (a->idx > b->idx); /* arrival: a duplicate's first copy wins */
}

/* Append device group order[g..e) to d->x (duplicates of a window_start left out) and add
 * its noise variances to d->rel (scratch); returns the rows appended. */
static size_t pool_device(struct rel_drift *d, size_t g, size_t e, size_t rows)
{
    size_t m = d->t.m, added = 0;
    memset(d->rel, 0, m * sizeof(double));
    for (size_t q = g; q < e; q++) {
        size_t r = d->order[q].idx;
        if (q > g && d->order[q].start == d->order[q - 1].start) {
            d->st.duplicates++;
            continue;
        }
        memcpy(d->x + (rows + added) * m, d->val + r * m, m * sizeof(double));
        for (size_t a = 0; a < m; a++)
            d->rel[a] += d->nv[r * m + a];
        added++;
    }
    return added;
}

/* Stack the series of devices with >= min_samples windows into d->x (devices in byte order
 * of their ids, each series in window_start order); sums their noise variances into
 * d->nvsum. Returns the rows. */
/* End of the device group starting at order[g] (of n); *distinct: its distinct windows. */
static size_t group_end(const struct rel_drift *d, size_t g, size_t n, size_t *distinct)
{
    size_t e = g + 1;
    *distinct = 1;
    while (e < n && strcmp(d->order[e].dev, d->order[g].dev) == 0) {
        *distinct += d->order[e].start != d->order[e - 1].start;
        e++;
    }
    return e;
}

/* Windows a device needs to enter the horizon: min_samples, and on window time
 * SPAN_COVER of the fullest device's distinct windows (order[0..n) sorted). */
static size_t device_need(const struct rel_drift *d, size_t n)
{
    size_t most = 0, need = d->o.min_samples, k;
    if (d->o.span_ms == 0)
        return need;
    for (size_t g = 0, e; g < n; g = e) {
        e = group_end(d, g, n, &k);
        most = k > most ? k : most;
    }
    k = (size_t)ceil(SPAN_COVER * (double)most);
    return k > need ? k : need;
}

static size_t pool(struct rel_drift *d, size_t base, size_t n, size_t *devices)
{
    size_t m = d->t.m, rows = 0, g = 0, need, distinct;
    for (size_t i = 0; i < n; i++)
        d->order[i] = (struct drift_key){d->dev[base + i], d->start[base + i], base + i};
    qsort(d->order, n, sizeof(*d->order), row_cmp);
    memset(d->nvsum, 0, m * sizeof(double));
    need = device_need(d, n);
    *devices = 0;
    while (g < n) {
        size_t e = group_end(d, g, n, &distinct), added;
        added = pool_device(d, g, e, rows);
        if (added < need) {
            d->st.sparse += added; /* too short a series: left out */
        } else {
            for (size_t a = 0; a < m; a++)
                d->nvsum[a] += d->rel[a];
            rows += added;
            (*devices)++;
        }
        g = e;
    }
    return rows;
}

/* Reliability r_a = (var_obs − mean σ²) / var_obs of each pooled column (NAN: below
 * min_reliability, or a constant column; 1 for all when the correction is off). */
static void reliability(struct rel_drift *d, size_t rows)
{
    size_t m = d->t.m;
    for (size_t a = 0; a < m; a++) {
        double mean = 0.0, var = 0.0, r;
        for (size_t t = 0; t < rows; t++)
            mean += d->x[t * m + a];
        mean /= (double)rows;
        for (size_t t = 0; t < rows; t++) {
            double dv = d->x[t * m + a] - mean;
            var += dv * dv;
        }
        var /= (double)rows;
        if (!d->o.correct) {
            d->rel[a] = 1.0;
            continue;
        }
        r = var > 0.0 ? (var - d->nvsum[a] / (double)rows) / var : 0.0;
        d->rel[a] = r >= d->o.min_reliability ? r : NAN;
    }
}

static double corrected(double rho, double ra, double rb)
{
    double c = rho / sqrt(ra * rb);
    return c > 1.0 ? 1.0 : c;
}

/* S = λ c(ρ0) + (1 − λ) c(ρmax) into d->s (NAN on pairs with an unreliable node). */
static void summary(struct rel_drift *d)
{
    size_t m = d->t.m;
    double lam = d->t.theta->lambda;
    for (size_t a = 0; a < m; a++) {
        for (size_t b = 0; b < m; b++) {
            size_t ij = a * m + b;
            if (a == b) {
                d->s[ij] = 0.0;
            } else if (isnan(d->rel[a]) || isnan(d->rel[b])) {
                d->s[ij] = NAN;
            } else {
                d->s[ij] = lam * corrected(d->rho0[ij], d->rel[a], d->rel[b]) +
                           (1.0 - lam) * corrected(d->rmax[ij], d->rel[a], d->rel[b]);
            }
        }
    }
}

/* Distance of one pair to the reference; NAN when the pair is not compared. */
static double pair_distance(const struct rel_drift *d, size_t a, size_t b)
{
    size_t m = d->t.m, ij = a * m + b;
    double s = d->s[ij], w = d->t.thw[ij], tau = d->t.theta->tau;
    if (isnan(s))
        return NAN;
    if (d->o.ref == REL_DRIFT_REF_BASELINE && !d->have_base)
        return 0.0; /* this horizon becomes the baseline: count its usable pairs */
    if (d->o.ref == REL_DRIFT_REF_BASELINE)
        return isnan(d->base[ij]) ? NAN : fabs(s - d->base[ij]);
    if (w > 0.0)
        return fabs(s - w); /* an edge of θ: its weight is the calibrated S */
    if (d->t.sat[a] || d->t.sat[b])
        return NAN;                 /* the pair may have been capped by K rather than below τ */
    return s > tau ? s - tau : 0.0; /* a non-edge: only the excess above τ */
}

static void distance(const struct rel_drift *d, struct rel_drift_result *r)
{
    double sum = 0.0;
    r->score = 0.0;
    r->pairs = 0;
    for (size_t a = 0; a < d->t.m; a++)
        for (size_t b = a + 1; b < d->t.m; b++) {
            double x = pair_distance(d, a, b);
            if (isnan(x))
                continue;
            r->pairs++;
            sum += x;
            r->score = x > r->score ? x : r->score;
        }
    r->mean = r->pairs ? sum / (double)r->pairs : 0.0;
}

/* Patience bookkeeping of one evaluated horizon. */
static void decide(struct rel_drift *d, struct rel_drift_result *r)
{
    if (d->o.ref == REL_DRIFT_REF_BASELINE && r->valid && !d->have_base) {
        memcpy(d->base, d->s, d->t.m * d->t.m * sizeof(double));
        d->have_base = true;
        r->baseline = true;
        r->score = r->mean = 0.0;
    } else if (r->valid) {
        r->above = r->score > d->o.threshold;
        d->consecutive = r->above ? d->consecutive + 1 : 0;
        if (r->above)
            d->st.above++;
        if (!d->fired && d->consecutive >= d->o.patience) {
            r->fire = true;
            d->fired = true;
            d->st.fired++;
        }
    }
    r->consecutive = d->consecutive;
    d->st.valid += r->valid;
}

/* Evaluate the horizon in slot s (its rows are then free). */
static core_err evaluate(struct rel_drift *d, size_t s, struct rel_drift_result *r)
{
    size_t m = d->t.m, rows = pool(d, s * d->o.horizon, d->b[s].n, &r->devices);
    core_err rc;

    if (d->o.span_ms > 0 && (double)rows < d->o.min_fill * (double)d->o.horizon) {
        d->st.partial++; /* too few devices covered the span: no decision */
        r->devices = 0;
        return CORE_OK;
    }
    r->evaluated = true;
    r->rows = rows;
    r->span_start_ms = d->o.span_ms > 0 ? d->b[s].index * d->o.span_ms : 0;
    d->st.horizons++;
    r->horizon_index = d->st.horizons;
    if (rows >= 2) {
        rc = core_lagcorr_blas(rows, m, d->x, m, d->t.theta->L, d->rho0, d->rmax, d->work);
        if (rc != CORE_OK) {
            d->st.horizons--;
            return rc;
        }
        reliability(d, rows);
        for (size_t a = 0; a < m; a++)
            r->noisy += isnan(d->rel[a]);
        summary(d);
        d->have_summary = true;
        distance(d, r);
        r->valid = r->pairs > 0;
    }
    if (!r->valid)
        r->score = r->mean = 0.0;
    decide(d, r);
    return CORE_OK;
}

/* Close the horizon in slot s: evaluated into *r when it holds at least min_fill x horizon
 * rows (always in arrival order, where only a full horizon closes), else discarded as
 * partial (r untouched). */
static core_err close_slot(struct rel_drift *d, size_t s, struct rel_drift_result *r)
{
    struct drift_bucket *b = &d->b[s];
    core_err rc = CORE_OK;

    if (d->o.span_ms == 0 || (double)b->n >= d->o.min_fill * (double)d->o.horizon)
        rc = evaluate(d, s, r); /* may still find it partial once pooled */
    else
        d->st.partial++;
    if (d->o.span_ms == 0)
        d->arrival++;
    else if (!d->any_closed || b->index > d->closed_upto)
        d->closed_upto = b->index;
    d->any_closed = true;
    b->open = false;
    b->n = 0;
    return rc;
}

/* floor(a / b) for b > 0. */
static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* The open slot of horizon idx, opening one (and closing the oldest open horizon when every
 * slot is taken: *r may then hold its evaluation). SIZE_MAX: idx was already closed (late). */
static size_t slot_for(struct rel_drift *d, int64_t idx, struct rel_drift_result *r, core_err *rc)
{
    size_t free_slot = SIZE_MAX, oldest = SIZE_MAX;
    for (size_t s = 0; s < d->slots; s++) {
        if (d->b[s].open && d->b[s].index == idx)
            return s;
        if (!d->b[s].open && free_slot == SIZE_MAX)
            free_slot = s;
        if (d->b[s].open && (oldest == SIZE_MAX || d->b[s].index < d->b[oldest].index))
            oldest = s;
    }
    if (d->o.span_ms > 0 && d->any_closed && idx <= d->closed_upto)
        return SIZE_MAX;
    if (free_slot == SIZE_MAX) {
        *rc = close_slot(d, oldest, r);
        free_slot = oldest;
    }
    d->b[free_slot] = (struct drift_bucket){idx, 0, true};
    return free_slot;
}

/* Span mode: an open horizon older than slot s is closed once s holds min_fill x horizon
 * rows (its stragglers are not coming). At most one evaluation per push: r may be taken. */
static core_err close_overtaken(struct rel_drift *d, size_t s, struct rel_drift_result *r)
{
    if (d->o.span_ms == 0 || r->evaluated ||
        (double)d->b[s].n < d->o.min_fill * (double)d->o.horizon)
        return CORE_OK;
    for (size_t o = 0; o < d->slots; o++)
        if (d->b[o].open && d->b[o].index < d->b[s].index)
            return close_slot(d, o, r);
    return CORE_OK;
}

core_err rel_drift_push(struct rel_drift *d, const char *device, int64_t window_start,
                        const double *value, const double *noise_var, struct rel_drift_result *out)
{
    size_t m, len, s, row;
    core_err rc = CORE_OK;
    int64_t idx;

    if (out)
        memset(out, 0, sizeof(*out));
    if (!d || !device || !value || !noise_var || !out)
        return CORE_EINVAL;
    len = strnlen(device, REL_DRIFT_MAX_DEVICE + 1);
    if (len == 0 || len > REL_DRIFT_MAX_DEVICE)
        return CORE_EINVAL;
    m = d->t.m;
    for (size_t a = 0; a < m; a++) {
        size_t k = d->t.coord[a];
        if (!isfinite(value[k]) || !isfinite(noise_var[k]) || noise_var[k] < 0.0)
            return CORE_EINVAL;
    }
    idx = d->o.span_ms > 0 ? floor_div(window_start, d->o.span_ms) : d->arrival;
    s = slot_for(d, idx, out, &rc);
    if (rc != CORE_OK)
        return rc;
    if (s == SIZE_MAX) {
        d->st.late++; /* its horizon was already evaluated or discarded */
        return CORE_OK;
    }
    row = s * d->o.horizon + d->b[s].n++;
    memcpy(d->dev[row], device, len);
    d->dev[row][len] = '\0';
    d->start[row] = window_start;
    for (size_t a = 0; a < m; a++) {
        d->val[row * m + a] = value[d->t.coord[a]];
        d->nv[row * m + a] = noise_var[d->t.coord[a]];
    }
    d->st.pushed++;
    if (d->b[s].n == d->o.horizon && !out->evaluated)
        return close_slot(d, s, out);
    return close_overtaken(d, s, out);
}

void rel_drift_stats(const struct rel_drift *d, struct rel_drift_stats *out)
{
    *out = d->st;
}

const double *rel_drift_summary(const struct rel_drift *d, size_t *m, const uint32_t **nodes,
                                const double **reliability)
{
    if (!d->have_summary)
        return NULL;
    if (m)
        *m = d->t.m;
    if (nodes)
        *nodes = d->t.node;
    if (reliability)
        *reliability = d->rel;
    return d->s;
}
