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
#include "rel/config.h"

/* ------------------------------------------------------------------ options */

core_err rel_opts_from_config(const struct core_config *cfg, struct rel_opts *o, char *eb,
                              size_t ebn)
{
    memset(o, 0, sizeof(*o));
    o->mech = rel_mech_find(core_config_str(cfg, "release.mechanism"));
    if (!o->mech) {
        snprintf(eb, ebn, "release.mechanism: unknown mechanism");
        return CORE_ECONFIG;
    }
    core_cfg_read(cfg, rel_config_keys, REL_KEYS_OPTS, o); /* the table's bound rows */
    if (rel_query_params_check(&o->query) != CORE_OK) {
        snprintf(eb, ebn, "release.query.max_samples: must be >= release.query.min_samples");
        return CORE_ECONFIG;
    }
    o->policy_edges = core_config_json(cfg, "release.policy.edges");
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
    free(p->counts);
    rel_profile_cleanup(&p->prof);
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

uint8_t *rel_theta_used_nodes(const struct cal_theta *t)
{
    uint8_t *used = core_xcalloc(t->n_nodes ? t->n_nodes : 1, sizeof(*used));
    for (size_t k = 0; k < t->d; k++)
        for (size_t a = 0; a < t->coords[k].n; a++)
            if (t->coords[k].nodes[a] < t->n_nodes)
                used[t->coords[k].nodes[a]] = 1;
    return used;
}

/* The plan's profile: a copy of the record's, or (no profile given) one from θ node names,
 * each of which must then state its statistic, with G and period from the options. */
static core_err make_profile(struct rel_plan *p, char *eb, size_t ebn)
{
    const struct cal_theta *t = p->theta;

    if (p->opts.profile) {
        if (p->opts.profile->n_nodes != t->n_nodes) {
            snprintf(eb, ebn, "window provenance does not match theta's nodes");
            return CORE_EINVAL;
        }
        rel_profile_copy(&p->prof, p->opts.profile);
        return CORE_OK;
    }
    rel_profile_init(&p->prof, t->n_nodes);
    p->prof.interp_gap = p->opts.query.interp_gap;
    p->prof.period_ms = p->opts.period_ms;
    for (size_t m = 0; m < t->n_nodes; m++) {
        struct rel_node_prov *np = &p->prof.node[m];
        if (!p->node_used[m])
            continue;
        if (!t->nodes[m] || strlen(t->nodes[m]) >= sizeof(np->key) ||
            !rel_name_split(t->nodes[m], np->chan, sizeof(np->chan), &np->stat)) {
            snprintf(eb, ebn,
                     "theta node %s names no statistic (<channel>.<stat>): the plan "
                     "needs the windows' provenance (give window records as input)",
                     t->nodes[m] ? t->nodes[m] : "?");
            return CORE_EINVAL;
        }
        snprintf(np->key, sizeof(np->key), "%s", t->nodes[m]);
        np->clip_lo = 0.0;
        np->clip_hi = 1.0;
    }
    return CORE_OK;
}

/* Channels of G0 and each used θ node's (channel, statistic), from the profile. */
static core_err split_nodes(struct rel_plan *p, char *eb, size_t ebn)
{
    const struct cal_theta *t = p->theta;
    core_err rc;

    p->chan_names = core_xcalloc(t->n_nodes, sizeof(*p->chan_names));
    p->node_chan = core_xcalloc(t->n_nodes, sizeof(*p->node_chan));
    p->node_stat = core_xcalloc(t->n_nodes, sizeof(*p->node_stat));
    p->node_used = rel_theta_used_nodes(t);
    if ((rc = make_profile(p, eb, ebn)) != CORE_OK)
        return rc;
    for (size_t m = 0; m < t->n_nodes; m++) {
        const struct rel_node_prov *np = &p->prof.node[m];
        size_t c = 0;
        if (!p->node_used[m])
            continue;
        if (!np->key[0]) {
            snprintf(eb, ebn, "theta node %s has no provenance", t->nodes[m]);
            return CORE_EINVAL;
        }
        p->node_stat[m] = np->stat;
        for (; c < p->n_chan; c++)
            if (strcmp(p->chan_names[c], np->chan) == 0)
                break;
        if (c == p->n_chan)
            p->chan_names[p->n_chan++] = core_xstrdup(np->chan);
        p->node_chan[m] = (uint32_t)c;
    }
    if (p->n_chan == 0) {
        snprintf(eb, ebn, "theta: no coordinate reads a node");
        return CORE_EINVAL;
    }
    return CORE_OK;
}

bool rel_plan_covers(const struct rel_plan *p, const struct rel_profile *wp, char *eb, size_t ebn)
{
    const struct rel_profile *pp = &p->prof;

    if (wp->n_nodes != pp->n_nodes || !wp->from_record) {
        snprintf(eb, ebn, "window provenance missing");
        return false;
    }
    if (wp->period_ms != pp->period_ms || wp->interp_gap > pp->interp_gap) {
        snprintf(eb, ebn,
                 "provenance prov.period_ms %" PRId64 " / prov.interp_gap %" PRIu32
                 " not covered by the plan (period %" PRId64 ", G %" PRIu32 "): windows of "
                 "another ingest configuration need their own release run",
                 wp->period_ms, wp->interp_gap, pp->period_ms, pp->interp_gap);
        return false;
    }
    for (size_t m = 0; m < pp->n_nodes; m++) {
        const struct rel_node_prov *a = &wp->node[m], *b = &pp->node[m];
        if (!p->node_used[m])
            continue;
        if (a->stat != b->stat || strcmp(a->key, b->key) != 0 ||
            (pp->from_record && (a->clip_lo != b->clip_lo || a->clip_hi != b->clip_hi))) {
            snprintf(eb, ebn,
                     "node %s: provenance (%s of %s, clip [%g, %g]) differs from the "
                     "plan's (%s of %s, clip [%g, %g]): windows of another ingest "
                     "configuration need their own release run",
                     a->key, rel_stat_name(a->stat), a->chan, a->clip_lo, a->clip_hi,
                     rel_stat_name(b->stat), b->chan, b->clip_lo, b->clip_hi);
            return false;
        }
    }
    return true;
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
            const char *nm =
                json_string_value(json_array_get(json_array_get(p->opts.policy_edges, e), side));
            if (!nm || chan_index(p, nm, &edges[2 * e + side]) != CORE_OK) {
                snprintf(eb, ebn, "release.policy.edges[%zu]: '%s' is not a channel of theta", e,
                         nm ? nm : "?");
                rc = CORE_ECONFIG;
            }
        }
    }
    if (rc == CORE_OK &&
        rel_policy_counts(p->n_chan, edges, ne, p->opts.policy_hops, p->opts.policy_time_radius,
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
        rc = rel_coord_bound(p->n_chan, counts, c->n, terms, &p->opts.query, &p->lo[k], &p->hi[k],
                             &p->B[k], &p->analytic[k]);
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
        snprintf(eb, ebn,
                 "allocation refused (Algorithm 3): need some coordinate with s_k > 0,"
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
                snprintf(eb, ebn,
                         "coordinate %zu: Laplace parameters refused (eps_k = %g, "
                         "s_k = %g out of the sampler's range)",
                         k, p->eps[k], p->s[k]);
        }
    }
    if (rc != CORE_OK && p->opts.mech->gaussian)
        snprintf(eb, ebn,
                 "gauss: analytic Gaussian calibration failed for eps_rel = %g, "
                 "delta = %g",
                 p->opts.eps_rel, p->opts.delta);
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
             p->theta->version, p->opts.eps_rel, p->opts.mech->gaussian ? p->opts.delta : 0.0, p->d,
             p->n_noisy, cal_theta_eps_cal_total(p->theta));
}

static core_err theta_suits_mech(const struct rel_plan *p, char *eb, size_t ebn)
{
    if (p->opts.mech->need_theta_nolag && p->theta->L != 0) {
        snprintf(eb, ebn, "release.mechanism %s needs a theta calibrated with L = 0 (got L = %d)",
                 p->opts.mech->name, p->theta->L);
        return CORE_ECONFIG;
    }
    if (p->opts.mech->need_theta_nocomp && !(p->theta->tau_c >= 1.0)) {
        snprintf(eb, ebn,
                 "release.mechanism %s needs a theta calibrated with tau_c >= 1 "
                 "(no compression; got %g)",
                 p->opts.mech->name, p->theta->tau_c);
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
    p->opts.profile = NULL; /* borrowed; the plan keeps its own copy in p->prof */
    if (rc == CORE_OK)
        rc = policy_counts(p, &counts, eb, ebn);
    p->counts = counts; /* owned by the plan from here (rel_plan_free) */
    if (rc == CORE_OK) {
        p->opts.query.interp_gap = p->prof.interp_gap; /* G of the windows' provenance */
        p->opts.period_ms = p->prof.period_ms;
        if (rel_query_params_check(&p->opts.query) != CORE_OK || p->opts.period_ms <= 0) {
            snprintf(eb, ebn,
                     "query parameters out of range (n_min >= 2, n_max >= n_min, "
                     "G and period from the provenance)");
            rc = CORE_EINVAL;
        }
    }
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

void rel_plan_scheme(const struct rel_plan *p, struct core_dp_scheme *out)
{
    out->slot_ms = p->opts.slot_ms;
    out->time_radius = p->opts.policy_time_radius;
    out->period_ms = p->opts.period_ms;
}

/* Sequential composition per slot: every window whose data an expansion set can touch
 * charges the slot of the protected occurrence (docs/release.md, "Composition"); the unit
 * scheme itself is core's (core_dp_units), shared with calibrate and `gcdp ledger`. */
core_err rel_plan_units(const struct rel_plan *p, const char *device, int64_t start, int64_t end,
                        char *buf, size_t buf_size, const char **units, size_t max_units, size_t *n)
{
    struct core_dp_scheme sc;

    rel_plan_scheme(p, &sc);
    return core_dp_units(&sc, device, start, end, 0, buf, buf_size, units, max_units, n);
}

/* One coordinate of the plan: its name, the statistics it reads, clip interval, bound B and
 * its certificate, xi_hat, sensitivity, budget and noise scale. */
static json_t *coord_json(const struct rel_plan *p, size_t k)
{
    const struct cal_coord *cc = &p->theta->coords[k];
    json_t *c = json_object(), *stats = json_array();

    for (size_t a2 = 0; a2 < cc->n; a2++)
        json_array_append_new(stats, json_string(p->prof.node[cc->nodes[a2]].key));
    json_object_set_new(c, "name", json_string(cc->name));
    json_object_set_new(c, "reads", stats);
    json_object_set_new(c, "lo", json_real(p->lo[k]));
    json_object_set_new(c, "hi", json_real(p->hi[k]));
    json_object_set_new(c, "B", json_real(p->B[k]));
    json_object_set_new(c, "certificate",
                        json_string(p->analytic[k] ? "analytic" : "clipped_range"));
    json_object_set_new(c, "xi_hat", json_real(p->theta->xi_hat[k]));
    json_object_set_new(c, "s", json_real(p->s[k]));
    json_object_set_new(c, "eps", json_real(p->eps[k]));
    json_object_set_new(c, "scale", json_real(p->scale[k]));
    return c;
}

json_t *rel_plan_to_json(const struct rel_plan *p)
{
    json_t *o = json_object(), *coords = json_array();

    for (size_t k = 0; k < p->d; k++)
        json_array_append_new(coords, coord_json(p, k));
    json_object_set_new(o, "theta_version", json_integer((json_int_t)p->theta->version));
    json_object_set_new(o, "provenance",
                        json_pack("{s:i,s:I}", "interp_gap", (int)p->prof.interp_gap, "period_ms",
                                  (json_int_t)p->prof.period_ms));
    json_object_set_new(o, "mechanism", json_string(p->opts.mech->name));
    json_object_set_new(o, "eps_rel", json_real(p->opts.eps_rel));
    json_object_set_new(o, "eps_cal", json_real(cal_theta_eps_cal_total(p->theta)));
    json_object_set_new(o, "eps_min", json_real(p->eps_min));
    json_object_set_new(o, "d", json_integer((json_int_t)p->d));
    json_object_set_new(o, "d_noisy", json_integer((json_int_t)p->n_noisy));
    json_object_set_new(o, "charge_per_unit",
                        json_pack("{s:f,s:f}", "eps", p->cost.eps, "delta", p->cost.delta));
    json_object_set_new(o, "coords", coords);
    return o;
}
