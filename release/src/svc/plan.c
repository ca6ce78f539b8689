/* plan.c - θ + configuration -> per-coordinate bounds, scales, budgets and noise parameters
 * (paper Algorithms 2 and 3; Algorithm 4 step 1 checks before any window is released). */
#include "rel/plan.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dp_calib.h"
#include "core/mem.h"

/* ------------------------------------------------------------------ options */

static core_err resolve_int(int64_t mine, int64_t unset, int64_t theirs, const char *key,
                            int64_t *out, char *eb, size_t ebn)
{
    if (mine != unset) {
        if (theirs >= 0 && mine < theirs && unset < 0) {
            snprintf(eb, ebn, "%s: %" PRId64 " is below ingest.max_interp_gap = %" PRId64
                     " (the certified bound would not hold)", key, mine, theirs);
            return CORE_ECONFIG;
        }
        *out = mine;
        return CORE_OK;
    }
    if (theirs < 0) {
        snprintf(eb, ebn, "%s: not set and the ingest value is unknown; set it", key);
        return CORE_ECONFIG;
    }
    *out = theirs;
    return CORE_OK;
}

core_err rel_opts_from_config(const struct core_config *cfg, int64_t ingest_interp_gap,
                              int64_t ingest_period_ms, struct rel_opts *o, char *eb,
                              size_t ebn)
{
    int64_t gap = 0, period = 0;
    core_err rc;

    memset(o, 0, sizeof(*o));
    o->mech = rel_mech_find(core_config_str(cfg, "release.mechanism"));
    if (!o->mech) {
        snprintf(eb, ebn, "release.mechanism: unknown mechanism");
        return CORE_ECONFIG;
    }
    o->eps_rel = core_config_double(cfg, "release.eps_rel");
    o->delta = core_config_double(cfg, "release.delta");
    o->alloc.beta_r = core_config_double(cfg, "release.beta_r");
    o->alloc.beta_g = core_config_double(cfg, "release.beta_g");
    o->alloc.beta_u = core_config_double(cfg, "release.beta_u");
    o->alloc.eta = core_config_double(cfg, "release.eta");
    o->alloc.eps_min = core_config_double(cfg, "release.eps_min");
    o->query.min_samples = (uint32_t)core_config_int(cfg, "release.query.min_samples");
    o->query.max_samples = (uint32_t)core_config_int(cfg, "release.query.max_samples");
    rc = resolve_int(core_config_int(cfg, "release.query.interp_gap"), -1, ingest_interp_gap,
                     "release.query.interp_gap", &gap, eb, ebn);
    if (rc != CORE_OK)
        return rc;
    o->query.interp_gap = (uint32_t)gap;
    if (rel_query_params_check(&o->query) != CORE_OK) {
        snprintf(eb, ebn, "release.query.max_samples: must be >= release.query.min_samples");
        return CORE_ECONFIG;
    }
    o->policy_edges = core_config_json(cfg, "release.policy.edges");
    o->policy_hops = (uint32_t)core_config_int(cfg, "release.policy.hops");
    o->policy_time_radius = (uint32_t)core_config_int(cfg, "release.policy.time_radius");
    o->policy_per_slot = (uint32_t)core_config_int(cfg, "release.policy.max_per_slot");
    rc = resolve_int(core_config_int(cfg, "release.period_ms"), 0, ingest_period_ms,
                     "release.period_ms", &period, eb, ebn);
    if (rc != CORE_OK)
        return rc;
    o->period_ms = period;
    o->slot_ms = core_config_int(cfg, "release.ledger.slot_ms");
    o->cap.eps = core_config_double(cfg, "release.ledger.cap_eps");
    o->cap.delta = core_config_double(cfg, "release.ledger.cap_delta");
    o->cap.rho = 0.0; /* no mechanism here charges zCDP */
    return CORE_OK;
}

/* ------------------------------------------------------------------ plan */

void rel_plan_free(struct rel_plan *p)
{
    if (!p)
        return;
    for (size_t c = 0; c < p->n_chan; c++)
        free(p->chan_names[c]);
    free(p->chan_names);
    free(p->node_chan);
    free(p->node_stat);
    free(p->node_used);
    free(p->lo);
    free(p->hi);
    free(p->B);
    free(p->s);
    free(p->eps);
    free(p->scale);
    free(p->analytic);
    free(p->lap);
    free(p);
}

/* θ node "<channel>.<stat>" -> (channel, stat); a name without a known suffix is a mean
 * of the channel of the same name (ingest's single-feature naming). */
static core_err split_nodes(struct rel_plan *p, char *eb, size_t ebn)
{
    const struct cal_theta *t = p->theta;

    p->chan_names = core_xcalloc(t->n_nodes, sizeof(*p->chan_names));
    p->node_chan = core_xcalloc(t->n_nodes, sizeof(*p->node_chan));
    p->node_stat = core_xcalloc(t->n_nodes, sizeof(*p->node_stat));
    p->node_used = core_xcalloc(t->n_nodes, sizeof(*p->node_used));
    for (size_t k = 0; k < t->d; k++)
        for (size_t a = 0; a < t->coords[k].n; a++)
            if (t->coords[k].nodes[a] < t->n_nodes)
                p->node_used[t->coords[k].nodes[a]] = 1;
    for (size_t m = 0; m < t->n_nodes; m++) {
        const char *name = t->nodes[m], *dot = name ? strrchr(name, '.') : NULL;
        size_t len;
        if (!name) {
            snprintf(eb, ebn, "theta node %zu has no name", m);
            return CORE_EINVAL;
        }
        len = strlen(name);
        p->node_stat[m] = REL_STAT_MEAN;
        if (dot && rel_stat_parse(dot + 1, &p->node_stat[m]) == CORE_OK)
            len = (size_t)(dot - name);
        size_t c = 0;
        for (; c < p->n_chan; c++)
            if (strlen(p->chan_names[c]) == len && strncmp(p->chan_names[c], name, len) == 0)
                break;
        if (c == p->n_chan) {
            p->chan_names[c] = core_xmalloc(len + 1);
            memcpy(p->chan_names[c], name, len);
            p->chan_names[c][len] = '\0';
            p->n_chan++;
        }
        p->node_chan[m] = (uint32_t)c;
    }
    return CORE_OK;
}

static core_err chan_index(const struct rel_plan *p, const char *name, uint32_t *out)
{
    for (size_t c = 0; c < p->n_chan; c++) {
        if (strcmp(p->chan_names[c], name) == 0) {
            *out = (uint32_t)c;
            return CORE_OK;
        }
    }
    return CORE_ENOTFOUND;
}

/* Γ(u) occurrence counts from the declared G0 (release.policy.*). new array, caller frees */
static core_err policy_counts(const struct rel_plan *p, uint32_t **out, char *eb, size_t ebn)
{
    size_t ne = p->opts.policy_edges ? json_array_size(p->opts.policy_edges) : 0;
    uint32_t *edges = core_xcalloc(2 * ne + 1, sizeof(*edges));
    uint32_t *counts = core_xcalloc(p->n_chan * p->n_chan, sizeof(*counts));
    uint32_t *work = core_xcalloc(2 * p->n_chan, sizeof(*work));
    core_err rc = CORE_OK;

    for (size_t e = 0; e < ne && rc == CORE_OK; e++) {
        for (size_t side = 0; side < 2 && rc == CORE_OK; side++) {
            const char *nm = json_string_value(
                json_array_get(json_array_get(p->opts.policy_edges, e), side));
            if (!nm || chan_index(p, nm, &edges[2 * e + side]) != CORE_OK) {
                snprintf(eb, ebn, "release.policy.edges[%zu]: '%s' is not a channel of theta",
                         e, nm ? nm : "?");
                rc = CORE_ECONFIG;
            }
        }
    }
    if (rc == CORE_OK &&
        rel_policy_counts(p->n_chan, edges, ne, p->opts.policy_hops,
                          p->opts.policy_time_radius,
                          p->opts.policy_per_slot ? p->opts.policy_per_slot : 1, counts,
                          work) != CORE_OK) {
        snprintf(eb, ebn, "release.policy: invalid policy graph");
        rc = CORE_ECONFIG;
    }
    free(edges);
    free(work);
    if (rc != CORE_OK) {
        free(counts);
        return rc;
    }
    *out = counts;
    return CORE_OK;
}

/* Algorithm 2 step 2 for every coordinate. */
static core_err bounds_all(struct rel_plan *p, const uint32_t *counts, char *eb, size_t ebn)
{
    const struct cal_theta *t = p->theta;
    struct rel_term *terms = NULL;
    core_err rc = CORE_OK;

    for (size_t k = 0; k < p->d && rc == CORE_OK; k++) {
        const struct cal_coord *c = &t->coords[k];
        terms = core_xrealloc(terms, (c->n ? c->n : 1) * sizeof(*terms));
        for (size_t a = 0; a < c->n; a++) {
            terms[a].chan = p->node_chan[c->nodes[a]];
            terms[a].stat = p->node_stat[c->nodes[a]];
            terms[a].coef = c->coef[a];
        }
        rc = rel_coord_bound(p->n_chan, counts, c->n, terms, &p->opts.query, &p->lo[k],
                             &p->hi[k], &p->B[k], &p->analytic[k]);
        if (rc != CORE_OK)
            snprintf(eb, ebn, "coordinate %zu (%s): no certified bound (bad map a(k))", k,
                     c->name ? c->name : "?");
    }
    free(terms);
    return rc;
}

/* Algorithm 3 or the mechanism's rule. */
static core_err allocate(struct rel_plan *p, char *eb, size_t ebn)
{
    const struct cal_theta *t = p->theta;
    const struct rel_mech *m = p->opts.mech;
    struct rel_alloc_params ap = p->opts.alloc;
    double *r;
    core_err rc;

    if (m->uniform) {
        rc = rel_alloc_uniform(p->d, p->opts.eps_rel, p->s, p->eps);
    } else {
        if (m->zero_beta_r)
            ap.beta_r = 0.0;
        if (m->zero_beta_u)
            ap.beta_u = 0.0;
        r = core_xcalloc(p->d, sizeof(*r));
        for (size_t k = 0; k < p->d; k++)
            r[k] = cal_theta_coord_exposure(t, k); /* r̄_k^(q), Sec. 4.4 */
        rc = rel_alloc(p->d, p->opts.eps_rel, r, p->s, t->mu, &ap, p->eps, &p->eps_min);
        free(r);
    }
    if (rc != CORE_OK)
        snprintf(eb, ebn, "allocation refused (Algorithm 3): need some coordinate with s_k > 0,"
                 " inputs in range and 0 < release.eps_min < eps_rel/d' (d' = %zu)",
                 p->n_noisy);
    return rc;
}

static core_err noise_params(struct rel_plan *p, char *eb, size_t ebn)
{
    double zb = 0.0;
    core_err rc = CORE_OK;

    p->bound = 0.0;
    for (size_t k = 0; k < p->d; k++) {
        double b = fmax(fabs(p->lo[k]), fabs(p->hi[k]));
        p->bound = fmax(p->bound, b);
        if (p->s[k] > 0.0)
            zb = fmax(zb, b / p->s[k]);
    }
    if (!(p->bound > 0.0))
        p->bound = 1.0;
    if (p->opts.mech->gaussian) {
        /* z_k = y_k / s_k moves by <= 1 per coordinate, so ||Δz||_2 <= sqrt(d'). */
        rc = core_dp_gauss_params_agm(p->opts.eps_rel, p->opts.delta, sqrt((double)p->n_noisy),
                                      p->n_noisy, zb > 0.0 ? zb : 1.0, &p->gauss);
        for (size_t k = 0; rc == CORE_OK && k < p->d; k++)
            p->scale[k] = p->s[k] * p->gauss.sigma;
    } else {
        for (size_t k = 0; rc == CORE_OK && k < p->d; k++) {
            if (!(p->s[k] > 0.0))
                continue;
            /* public clamp: Π_k already keeps y_k in [lo_k, hi_k] */
            double bk = fmax(fabs(p->lo[k]), fabs(p->hi[k]));
            rc = core_dp_lap_params(p->s[k], p->eps[k], bk > 0.0 ? bk : 1.0, 1, &p->lap[k]);
            p->scale[k] = p->s[k] / p->eps[k]; /* b_k, Algorithm 4 step 3 */
            if (rc != CORE_OK)
                snprintf(eb, ebn, "coordinate %zu: Laplace parameters refused (eps_k = %g, "
                         "s_k = %g out of the sampler's range)", k, p->eps[k], p->s[k]);
        }
    }
    if (rc != CORE_OK && p->opts.mech->gaussian)
        snprintf(eb, ebn, "gauss: analytic Gaussian calibration failed for eps_rel = %g, "
                 "delta = %g", p->opts.eps_rel, p->opts.delta);
    return rc;
}

static void plan_cost(struct rel_plan *p)
{
    memset(&p->cost, 0, sizeof(p->cost));
    if (p->opts.mech->gaussian) {
        p->cost.eps = p->opts.eps_rel;
        p->cost.delta = p->opts.delta;
    } else {
        for (size_t k = 0; k < p->d; k++)
            p->cost.eps = core_dp_add_up(p->cost.eps, p->eps[k]);
    }
    snprintf(p->params_json, sizeof(p->params_json),
             "{\"theta_version\":%" PRIu64 ",\"eps_rel\":%.17g,\"delta\":%.17g,\"d\":%zu,"
             "\"d_noisy\":%zu,\"eps_cal\":%.17g}",
             p->theta->version, p->opts.eps_rel, p->opts.mech->gaussian ? p->opts.delta : 0.0,
             p->d, p->n_noisy, cal_theta_eps_cal_total(p->theta));
}

static core_err theta_suits_mech(const struct rel_plan *p, char *eb, size_t ebn)
{
    if (p->opts.mech->need_theta_nolag && p->theta->L != 0) {
        snprintf(eb, ebn, "release.mechanism %s needs a theta calibrated with L = 0 (got L = %d)",
                 p->opts.mech->name, p->theta->L);
        return CORE_ECONFIG;
    }
    if (p->opts.mech->need_theta_nocomp && !(p->theta->tau_c >= 1.0)) {
        snprintf(eb, ebn, "release.mechanism %s needs a theta calibrated with tau_c >= 1 "
                 "(no compression; got %g)", p->opts.mech->name, p->theta->tau_c);
        return CORE_ECONFIG;
    }
    return CORE_OK;
}

static void plan_alloc_arrays(struct rel_plan *p)
{
    p->lo = core_xcalloc(p->d, sizeof(double));
    p->hi = core_xcalloc(p->d, sizeof(double));
    p->B = core_xcalloc(p->d, sizeof(double));
    p->s = core_xcalloc(p->d, sizeof(double));
    p->eps = core_xcalloc(p->d, sizeof(double));
    p->scale = core_xcalloc(p->d, sizeof(double));
    p->analytic = core_xcalloc(p->d, sizeof(int));
    p->lap = core_xcalloc(p->d, sizeof(*p->lap));
}

core_err rel_plan_new(const struct cal_theta *theta, const struct rel_opts *o,
                      struct rel_plan **out, char *eb, size_t ebn)
{
    struct rel_plan *p = core_xcalloc(1, sizeof(*p));
    uint32_t *counts = NULL;
    size_t bad = 0;
    enum rel_refusal why = REL_REFUSE_NONE;
    core_err rc;

    *out = NULL;
    p->theta = theta;
    p->opts = *o;
    p->d = theta->d;
    plan_alloc_arrays(p);
    rc = theta_suits_mech(p, eb, ebn);
    if (rc == CORE_OK)
        rc = split_nodes(p, eb, ebn);
    if (rc == CORE_OK)
        rc = policy_counts(p, &counts, eb, ebn);
    if (rc == CORE_OK)
        rc = bounds_all(p, counts, eb, ebn); /* Algorithm 2 step 2 */
    if (rc == CORE_OK) {                     /* Algorithm 2 step 5 */
        rc = rel_scale_compute(p->d, p->B, o->mech->use_xi ? theta->xi_hat : NULL, p->s);
        if (rc != CORE_OK)
            snprintf(eb, ebn, "theta xi_hat: negative or not finite");
    }
    for (size_t k = 0; rc == CORE_OK && k < p->d; k++)
        p->n_noisy += p->s[k] > 0.0;
    if (rc == CORE_OK)
        rc = allocate(p, eb, ebn);
    if (rc == CORE_OK) { /* Algorithm 4 step 1: verify before any noise can be drawn */
        rc = rel_release_check(p->d, p->B, p->B, p->s, p->eps, o->eps_rel, &bad, &why);
        if (rc != CORE_OK)
            snprintf(eb, ebn, "release refused (Algorithm 4): coordinate %zu: %s", bad,
                     rel_refusal_str(why));
    }
    if (rc == CORE_OK)
        rc = noise_params(p, eb, ebn);
    free(counts);
    if (rc != CORE_OK) {
        rel_plan_free(p);
        return rc;
    }
    plan_cost(p);
    *out = p;
    return CORE_OK;
}

void rel_plan_fill_theta(const struct rel_plan *p, struct cal_theta *theta)
{
    cal_theta_release_alloc(theta);
    memcpy(theta->B, p->B, p->d * sizeof(double));
    memcpy(theta->s, p->s, p->d * sizeof(double));
    memcpy(theta->eps, p->eps, p->d * sizeof(double));
    theta->eps_rel = p->opts.eps_rel;
    snprintf(theta->mechanism, sizeof(theta->mechanism), "%s", p->opts.mech->name);
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Sequential composition per slot: every window whose data an expansion set can touch
 * charges the slot of the protected occurrence (docs/release.md, "Composition"). */
core_err rel_plan_units(const struct rel_plan *p, const char *device, int64_t start,
                        int64_t end, char *buf, size_t buf_size, const char **units,
                        size_t max_units, size_t *n)
{
    int64_t widen = (int64_t)p->opts.policy_time_radius * p->opts.period_ms;
    int64_t s0, s1;
    size_t used = 0;

    *n = 0;
    if (end <= start || start < INT64_MIN / 4 || end > INT64_MAX / 4)
        return CORE_EINVAL;
    s0 = floor_div(start - widen, p->opts.slot_ms);
    s1 = floor_div(end - 1 + widen, p->opts.slot_ms);
    if (s1 - s0 + 1 > (int64_t)max_units || s1 - s0 + 1 > (int64_t)REL_MAX_UNITS_PER_WINDOW)
        return CORE_ETOOBIG;
    for (int64_t sl = s0; sl <= s1; sl++) {
        int w = snprintf(buf + used, buf_size - used, "%s|%" PRId64, device, sl);
        if (w < 0 || (size_t)w >= buf_size - used)
            return CORE_ETOOBIG;
        units[(*n)++] = buf + used;
        used += (size_t)w + 1;
    }
    return CORE_OK;
}
