/* calibrate.c - one calibration run, public or private (see cal/calibrate.h). */
#include "cal/calibrate.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "cal/config.h"
#include "cal/graph.h"
#include "cal/influence.h"
#include "core/dp_mech.h"
#include "core/lagcorr.h"
#include "core/mem.h"
#include "core/timefmt.h"

/* ------------------------------------------------------------------ options */

void cal_opts_default(struct cal_opts *o)
{
    static const double grid[] = {0.10, 0.15, 0.20, 0.25, 0.30};
    char eb[160];

    memset(o, 0, sizeof(*o));
    /* Table 5's numbers (L, lambda, tau, K, alpha, gamma, tau_c, kappa, g_max, ...) are the
     * calibrate.* rows of cal_config_keys, stated once there; core_config_new and
     * tests/calibrate check that they fit. Were one not to, its field stays 0 and
     * cal_opts_check refuses the options. */
    if (core_cfg_defaults(cal_config_keys, CAL_KEYS_OPTS, o, eb, sizeof(eb)) != CORE_OK)
        o->K = 0;
    o->mode = CAL_MODE_PUBLIC;
    o->format = CAL_FORMAT_CSV;
    snprintf(o->label_column, sizeof(o->label_column), "label");
    snprintf(o->ts_column, sizeof(o->ts_column), "ts");
    o->n_tau_grid = 5;
    memcpy(o->tau_grid, grid, sizeof(grid));
    o->task = CAL_TASK_AGGREGATE;
    o->sens = CAL_SENS_UNIVERSAL;
    o->expansion_nodes = 1;
}

core_err cal_opts_from_config(const struct core_config *cfg, struct cal_opts *o, char *eb,
                              size_t ebn)
{
    const json_t *grid = core_config_json(cfg, "calibrate.tau_grid");
    const char *lc = core_config_str(cfg, "calibrate.input.label_column");
    cal_opts_default(o);
    o->mode = strcmp(core_config_str(cfg, "calibrate.mode"), "private") == 0 ? CAL_MODE_PRIVATE
                                                                             : CAL_MODE_PUBLIC;
    o->format = strcmp(core_config_str(cfg, "calibrate.input.format"), "occupancy") == 0
                    ? CAL_FORMAT_OCCUPANCY
                    : CAL_FORMAT_CSV;
    if (lc && strlen(lc) >= sizeof(o->label_column)) {
        snprintf(eb, ebn, "calibrate.input.label_column: longer than %zu bytes",
                 sizeof(o->label_column) - 1);
        return CORE_ECONFIG;
    }
    snprintf(o->label_column, sizeof(o->label_column), "%s", lc ? lc : "");
    lc = core_config_str(cfg, "calibrate.input.ts_column");
    if (lc && strlen(lc) >= sizeof(o->ts_column)) {
        snprintf(eb, ebn, "calibrate.input.ts_column: longer than %zu bytes",
                 sizeof(o->ts_column) - 1);
        return CORE_ECONFIG;
    }
    snprintf(o->ts_column, sizeof(o->ts_column), "%s", lc ? lc : "");
    core_cfg_read(cfg, cal_config_keys, CAL_KEYS_OPTS, o); /* the table's bound rows */
    o->tau_from_grid = strcmp(core_config_str(cfg, "calibrate.tau_select"), "grid") == 0;
    o->n_tau_grid = json_array_size(grid);
    for (size_t i = 0; i < o->n_tau_grid && i < CAL_MAX_TAU_GRID; i++)
        o->tau_grid[i] = json_number_value(json_array_get(grid, i));
    o->task = strcmp(core_config_str(cfg, "calibrate.task"), "classify") == 0 ? CAL_TASK_CLASSIFY
                                                                              : CAL_TASK_AGGREGATE;
    o->sens = strcmp(core_config_str(cfg, "calibrate.private.sensitivity"), "expansion") == 0
                  ? CAL_SENS_EXPANSION
                  : CAL_SENS_UNIVERSAL;
    o->expansion_nodes = 0; /* derived from the declared policy graph G0 by the caller */
    o->norm = core_config_json(cfg, "calibrate.norm");
    o->norm_default = core_config_json(cfg, "calibrate.norm_default");
    o->coords = core_config_json(cfg, "calibrate.coords");
    o->task_weights = core_config_json(cfg, "calibrate.task_weights");
    core_config_version(cfg, "calibrate.", o->config_version);
    return CORE_OK;
}

/* Write the reason (printf-style) and return CORE_ECONFIG. */
static core_err opts_invalid(char *eb, size_t ebn, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static core_err opts_invalid(char *eb, size_t ebn, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(eb, ebn, fmt, ap);
    va_end(ap);
    return CORE_ECONFIG;
}

/* Mode / budget consistency (Sec. 4.2): which parts of ε_cal must be positive or zero. */
static core_err check_opts(const struct cal_opts *o, char *eb, size_t ebn)
{
    const struct cal_eps_cal *e = &o->eps;
    if (o->n_tau_grid == 0 || o->n_tau_grid > CAL_MAX_TAU_GRID)
        return opts_invalid(eb, ebn, "calibrate.tau_grid: needs 1..%d thresholds",
                            CAL_MAX_TAU_GRID);
    if (o->mode == CAL_MODE_PUBLIC) {
        if (e->G != 0.0 || e->tau != 0.0 || e->mu != 0.0 || e->xi != 0.0)
            return opts_invalid(eb, ebn,
                                "calibrate.eps_G/eps_tau/eps_mu/eps_xi: must be 0 in public mode "
                                "(set calibrate.mode=private to spend a calibration budget)");
        return CORE_OK;
    }
    if (!(e->G >= CORE_DP_EPS_MIN))
        return opts_invalid(eb, ebn,
                            "calibrate.eps_G: private mode needs eps_G > 0 (the score vector S)");
    if (!(e->xi >= CORE_DP_EPS_MIN))
        return opts_invalid(eb, ebn, "calibrate.eps_xi: private mode needs eps_xi > 0 (xi_hat)");
    if (o->tau_from_grid && !(e->tau >= CORE_DP_EPS_MIN))
        return opts_invalid(eb, ebn,
                            "calibrate.eps_tau: tau_select=grid in private mode needs eps_tau > 0");
    if (!o->tau_from_grid && e->tau != 0.0)
        return opts_invalid(eb, ebn,
                            "calibrate.eps_tau: must be 0 when tau_select=fixed (tau is public "
                            "config)");
    if (o->task == CAL_TASK_CLASSIFY && !(e->mu >= CORE_DP_EPS_MIN))
        return opts_invalid(eb, ebn,
                            "calibrate.eps_mu: the classify task in private mode needs eps_mu > 0");
    if (o->task == CAL_TASK_AGGREGATE && e->mu != 0.0)
        return opts_invalid(eb, ebn,
                            "calibrate.eps_mu: must be 0 for the aggregate task (mu uses public "
                            "weights)");
    return CORE_OK;
}

core_err cal_opts_check(const struct cal_opts *o, char *eb, size_t ebn)
{
    return check_opts(o, eb, ebn);
}

/* ------------------------------------------------------------------ resolution */

/* Built-in public bounds for the UCI Occupancy channels: the same frozen clip intervals
 * ingest normalizes windows with (docs/ingest.md channel table), so θ describes the values
 * release will see. Override with calibrate.norm. */
static const struct {
    const char *node;
    double lo, hi;
} occ_bounds[] = {
    {"temperature", 10.0, 40.0}, {"humidity", 0.0, 100.0},        {"light", 0.0, 2000.0},
    {"co2", 300.0, 2500.0},      {"humidity_ratio", 0.001, 0.01},
};

static core_err resolve_norm(const struct cal_matrix *mx, const struct cal_opts *o, double *lo,
                             double *hi, char *eb, size_t ebn)
{
    const char *key;
    json_t *v;
    double dlo = 0.0, dhi = 1.0;
    if (o->norm_default) {
        dlo = json_number_value(json_array_get(o->norm_default, 0));
        dhi = json_number_value(json_array_get(o->norm_default, 1));
    }
    for (size_t j = 0; j < mx->m; j++) {
        lo[j] = dlo;
        hi[j] = dhi;
        for (size_t b = 0; o->format == CAL_FORMAT_OCCUPANCY && b < 5; b++) {
            if (strcmp(occ_bounds[b].node, mx->names[j]) == 0) {
                lo[j] = occ_bounds[b].lo;
                hi[j] = occ_bounds[b].hi;
            }
        }
    }
    if (!o->norm || json_is_null(o->norm))
        return CORE_OK;
    json_object_foreach((json_t *)o->norm, key, v)
    {
        size_t j = 0;
        while (j < mx->m && strcmp(mx->names[j], key) != 0)
            j++;
        if (j == mx->m)
            return opts_invalid(eb, ebn,
                                "calibrate.norm: node \"%s\" is not a column of the calibration "
                                "matrix",
                                key);
        lo[j] = json_number_value(json_array_get(v, 0));
        hi[j] = json_number_value(json_array_get(v, 1));
    }
    return CORE_OK;
}

static core_err resolve_coord(const struct cal_matrix *mx, const json_t *c, size_t k,
                              struct cal_theta *t, char *eb, size_t ebn)
{
    const json_t *nodes = json_object_get(c, "nodes"), *coef = json_object_get(c, "coef");
    size_t n = json_array_size(nodes);
    uint32_t *idx = core_xmalloc(n * sizeof(*idx));
    double *cf = core_xmalloc(n * sizeof(*cf));
    core_err rc = CORE_OK;

    for (size_t a = 0; a < n && rc == CORE_OK; a++) {
        const char *nm = json_string_value(json_array_get(nodes, a));
        size_t j = 0;
        while (nm && j < mx->m && strcmp(mx->names[j], nm) != 0)
            j++;
        if (!nm || j == mx->m) {
            snprintf(eb, ebn, "calibrate.coords[%zu].nodes[%zu]: %s", k, a,
                     nm ? "not a node of the calibration matrix" : "not a string");
            rc = CORE_EINVAL;
        }
        idx[a] = (uint32_t)j;
        cf[a] = coef ? json_number_value(json_array_get(coef, a)) : 1.0;
        if (rc == CORE_OK && coef && !json_is_number(json_array_get(coef, a))) {
            snprintf(eb, ebn, "calibrate.coords[%zu].coef[%zu]: not a number", k, a);
            rc = CORE_EINVAL;
        }
    }
    if (rc == CORE_OK &&
        (rc = cal_theta_set_coord(t, k, json_string_value(json_object_get(c, "name")), n, idx,
                                  cf)) != CORE_OK)
        snprintf(eb, ebn, "calibrate.coords[%zu]: bad name or duplicate node", k);
    free(idx);
    free(cf);
    return rc;
}

static core_err resolve_coords(const struct cal_matrix *mx, const struct cal_opts *o,
                               struct cal_theta *t, char *eb, size_t ebn)
{
    core_err rc;
    if (!o->coords || json_is_null(o->coords))
        return cal_theta_set_identity_coords(t);
    for (size_t k = 0; k < t->d; k++)
        if ((rc = resolve_coord(mx, json_array_get(o->coords, k), k, t, eb, ebn)) != CORE_OK)
            return rc;
    for (size_t k = 0; k < t->d; k++)
        for (size_t o2 = 0; o2 < k; o2++)
            if (strcmp(t->coords[k].name, t->coords[o2].name) == 0) {
                snprintf(eb, ebn, "calibrate.coords[%zu]: duplicate name \"%s\"", k,
                         t->coords[k].name);
                return CORE_EINVAL;
            }
    return CORE_OK;
}

static core_err resolve_weights(const struct cal_opts *o, const struct cal_theta *t, double *w,
                                char *eb, size_t ebn)
{
    const char *key;
    json_t *v;
    for (size_t k = 0; k < t->d; k++)
        w[k] = 1.0;
    if (!o->task_weights || json_is_null(o->task_weights))
        return CORE_OK;
    if (json_is_array(o->task_weights)) {
        if (json_array_size(o->task_weights) != t->d) {
            snprintf(eb, ebn, "calibrate.task_weights: %zu weights for %zu coordinates",
                     json_array_size(o->task_weights), t->d);
            return CORE_EINVAL;
        }
        for (size_t k = 0; k < t->d; k++)
            w[k] = json_number_value(json_array_get(o->task_weights, k));
        return CORE_OK;
    }
    json_object_foreach((json_t *)o->task_weights, key, v)
    {
        size_t k = 0;
        while (k < t->d && strcmp(t->coords[k].name, key) != 0)
            k++;
        if (k == t->d) {
            snprintf(eb, ebn, "calibrate.task_weights: \"%s\" is not a coordinate", key);
            return CORE_EINVAL;
        }
        w[k] = json_number_value(v);
    }
    return CORE_OK;
}

/* ------------------------------------------------------------------ private releases */

double cal_delta_s(size_t m, enum cal_sens sens, size_t a)
{
    double p = (double)m * (double)(m - (m > 0)) / 2.0, v;
    if (sens == CAL_SENS_UNIVERSAL)
        return p;
    if (a > m)
        a = m;
    v = (double)a * (double)(m - 1) - (double)a * (double)(a - (a > 0)) / 2.0;
    return v < p ? v : p;
}

/* Sec. 4.2: v <- Π_[0,1](v + Laplace(l1/eps)) coordinatewise, through core/dp_mech.h. */
static core_err laplace_unit(const struct core_rng *rng, double l1, double eps, uint64_t n_change,
                             size_t n, double *v)
{
    struct core_dp_lap p;
    core_err rc = core_dp_lap_params(l1, eps, 1.0, n_change, &p);
    if (rc != CORE_OK)
        return rc;
    if ((rc = core_dp_lap_release(rng, &p, n, v, v)) != CORE_OK)
        return rc;
    for (size_t i = 0; i < n; i++) /* projection: post-processing */
        v[i] = v[i] < 0.0 ? 0.0 : (v[i] > 1.0 ? 1.0 : v[i]);
    return CORE_OK;
}

/* Exponential mechanism over the grid with ΔU = 1 (Sec. 4.2): scale such that the exact
 * sampler's accounted epsilon (core_dp_em_eps, rounded up) is <= eps_tau. */
static core_err em_tau(const struct core_rng *rng, const double *u, size_t n, double eps_tau,
                       size_t *out)
{
    const int f = 20;
    double scale = 2.0 * (ldexp(1.0, f) + 1.0) * ldexp(1.0, -f) / eps_tau, got = 0.0;
    core_err rc;
    for (int tries = 0; tries < 64; tries++) {
        if ((rc = core_dp_em_eps(1.0, scale, f, false, &got)) != CORE_OK)
            return rc;
        if (got <= eps_tau)
            return core_dp_em_select(rng, n, u, scale, f, out);
        scale *= 1.0 + 1e-9;
    }
    return CORE_ENUMERIC;
}

/* ------------------------------------------------------------------ the run */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Buffers of one run (all owned, freed in run_cleanup). */
struct run {
    double *x, *lo, *hi, *rho0, *rhomax, *s, *work, *deg, *agg, *w, *svec;
    struct cal_edge *edges;
    void *gwork, *xwork;
    size_t *ptr;
    uint32_t *nbr;
    double *wt;
    size_t cap_edges, n_edges;
};

static void run_cleanup(struct run *r)
{
    free(r->x);
    free(r->lo);
    free(r->hi);
    free(r->rho0);
    free(r->rhomax);
    free(r->s);
    free(r->work);
    free(r->deg);
    free(r->agg);
    free(r->w);
    free(r->svec);
    free(r->edges);
    free(r->gwork);
    free(r->xwork);
    free(r->ptr);
    free(r->nbr);
    free(r->wt);
}

/* Private mode: replace S by S̃ = Π(S + Lap(Δ₁S/ε_G)) on the P upper-triangle pairs. */
static core_err private_scores(struct run *r, size_t m, const struct cal_opts *o,
                               const struct core_rng *rng, struct cal_theta *t)
{
    size_t p = m * (m - 1) / 2, q = 0;
    core_err rc;
    if (o->sens == CAL_SENS_EXPANSION && o->expansion_nodes < 1)
        return CORE_EINVAL; /* |A| not derived from G0: fail closed, nothing drawn */
    t->delta_S = cal_delta_s(m, o->sens, (size_t)o->expansion_nodes);
    if (p == 0)
        return CORE_OK;
    r->svec = core_xmalloc(p * sizeof(double));
    for (size_t i = 0; i < m; i++)
        for (size_t j = i + 1; j < m; j++)
            r->svec[q++] = r->s[i * m + j];
    rc = laplace_unit(rng, t->delta_S, o->eps.G, (uint64_t)ceil(t->delta_S), p, r->svec);
    q = 0;
    for (size_t i = 0; i < m; i++) /* the protected S is overwritten: never read again */
        for (size_t j = i + 1; j < m; j++, q++)
            r->s[i * m + j] = r->s[j * m + i] = rc == CORE_OK ? r->svec[q] : 0.0;
    return rc;
}

static core_err build_graph(struct run *r, size_t m, double tau, int k_cap)
{
    return cal_graph_build(m, r->s, tau, k_cap, r->edges, r->cap_edges, &r->n_edges, r->gwork);
}

/* τ: fixed, or the grid by validation utility (public: argmax, ties -> smaller τ, as the
 * paper's Sec. 5.3; private: exponential mechanism). */
static core_err select_tau(struct run *r, const struct cal_matrix *mx, const struct cal_opts *o,
                           const struct core_rng *rng, struct cal_theta *t, struct cal_report *rep)
{
    size_t m = mx->m, n_tr = (size_t)floor(o->train_frac * (double)mx->n), best = 0;
    double u[CAL_MAX_TAU_GRID];
    core_err rc;

    if (!o->tau_from_grid) {
        t->tau = o->tau;
        return CORE_OK;
    }
    if (n_tr >= mx->n)
        n_tr = mx->n - 1;
    for (size_t g = 0; g < o->n_tau_grid; g++) {
        if ((rc = build_graph(r, m, o->tau_grid[g], o->K)) != CORE_OK)
            return rc;
        if ((rc = cal_tau_utility(mx->n - n_tr, m, r->x + n_tr * m, m, r->edges, r->n_edges,
                                  o->mask_value, &u[g], r->work)) != CORE_OK)
            return rc;
    }
    if (o->mode == CAL_MODE_PRIVATE) {
        if ((rc = em_tau(rng, u, o->n_tau_grid, o->eps.tau, &best)) != CORE_OK)
            return rc;
    } else {
        for (size_t g = 1; g < o->n_tau_grid; g++) {
            int better = u[g] > u[best] || (u[g] == u[best] && o->tau_grid[g] < o->tau_grid[best]);
            best = better ? g : best;
        }
        for (size_t g = 0; g < o->n_tau_grid; g++)
            rep->tau_utility[g] = u[g];
    }
    rep->tau_index = best;
    t->tau = o->tau_grid[best];
    return cal_theta_set_tau_grid(t, o->tau_grid, o->n_tau_grid);
}

static core_err compute_mu(struct run *r, const struct cal_matrix *mx, const struct cal_opts *o,
                           const struct core_rng *rng, struct cal_theta *t, struct cal_report *rep,
                           char *eb, size_t ebn)
{
    core_err rc;
    size_t n_tr = (size_t)floor(o->train_frac * (double)mx->n);
    double *work;

    if (o->task == CAL_TASK_AGGREGATE) {
        if ((rc = resolve_weights(o, t, r->w, eb, ebn)) != CORE_OK)
            return rc;
        return cal_mu_aggregate(t->d, r->w, t->mu);
    }
    if (!mx->labels) {
        snprintf(eb, ebn,
                 "calibrate.task=classify: the calibration matrix has no labels "
                 "(csv: calibrate.input.label_column; occupancy: Occupancy column)");
        return CORE_EINVAL;
    }
    work = core_xmalloc(cal_mu_classify_work_len(mx->n, t->d, mx->n_classes) * sizeof(double));
    rc = cal_mu_classify(mx->n, mx->m, r->x, mx->m, mx->labels, mx->n_classes, n_tr, t->d,
                         t->coords, o->mask_value, &cal_lr_default, t->mu, &rep->f1_full, work);
    free(work);
    if (rc != CORE_OK) {
        snprintf(eb, ebn,
                 "classify task failed (%s): needs >= 2 label classes, >= 2 training "
                 "and >= 1 validation rows (calibrate.classify.train_frac)",
                 core_errname(rc));
        return rc;
    }
    if (o->mode == CAL_MODE_PRIVATE) { /* Sec. 4.2: Δ₁V_μ <= d */
        t->delta_mu = (double)t->d;
        rep->f1_full = -1.0;
        return laplace_unit(rng, t->delta_mu, o->eps.mu, t->d, t->d, t->mu);
    }
    return CORE_OK;
}

static core_err compute_xi(struct run *r, const struct cal_matrix *mx, const struct cal_opts *o,
                           const struct core_rng *rng, struct cal_theta *t)
{
    struct cal_adj adj = {mx->m, NULL, NULL, NULL};
    struct cal_xi_params xp = {o->gamma, o->tau_c, o->kappa, o->g_max, o->mask_value};
    core_err rc;

    r->ptr = core_xmalloc((mx->m + 1) * sizeof(size_t));
    r->nbr = core_xmalloc((2 * r->n_edges + 1) * sizeof(uint32_t));
    r->wt = core_xmalloc((2 * r->n_edges + 1) * sizeof(double));
    r->xwork = core_xmalloc(cal_xi_work_len(mx->m));
    if ((rc = cal_adj_build(mx->m, r->edges, r->n_edges, r->deg, r->ptr, r->nbr, r->wt)))
        return rc;
    adj.ptr = r->ptr;
    adj.nbr = r->nbr;
    adj.wt = r->wt;
    cal_node_means(mx->n, mx->m, r->x, mx->m, r->agg);
    if ((rc = cal_xi_hat(t->d, t->coords, r->agg, &adj, r->s, t->exposure, &xp, t->xi_hat,
                         r->xwork)) != CORE_OK)
        return rc;
    if (o->mode != CAL_MODE_PRIVATE)
        return CORE_OK;
    /* Sec. 4.2: release V_ξ = ξ̂/g_max ∈ [0,1]^d with Δ₁ <= d, then rescale. */
    t->delta_xi = (double)t->d;
    for (size_t k = 0; k < t->d; k++)
        t->xi_hat[k] /= o->g_max;
    rc = laplace_unit(rng, t->delta_xi, o->eps.xi, t->d, t->d, t->xi_hat);
    for (size_t k = 0; k < t->d; k++)
        t->xi_hat[k] = rc == CORE_OK ? fmin(t->xi_hat[k] * o->g_max, o->g_max) : 0.0;
    return rc;
}

static void stamp(struct cal_theta *t, const struct cal_opts *o, const struct cal_matrix *mx)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    core_time_format((int64_t)ts.tv_sec * 1000, CORE_TIME_SEC, t->created_at,
                     sizeof(t->created_at));
    t->version =
        o->version ? o->version : (uint64_t)ts.tv_sec * 1000u + (uint64_t)(ts.tv_nsec / 1000000);
    t->mode = o->mode;
    t->eps_cal = o->mode == CAL_MODE_PRIVATE ? o->eps : (struct cal_eps_cal){0, 0, 0, 0};
    t->delta_U = o->mode == CAL_MODE_PRIVATE && o->tau_from_grid ? 1.0 : 0.0;
    t->sens = o->sens;
    t->task = o->task;
    t->L = o->L;
    t->lambda = o->lambda;
    t->K = o->K;
    t->alpha = o->alpha;
    t->gamma = o->gamma;
    t->tau_c = o->tau_c;
    t->kappa = o->kappa;
    t->g_max = o->g_max;
    t->n_cal = mx->n;
    snprintf(t->config_version, sizeof(t->config_version), "%s", o->config_version);
}

static core_err setup(struct run *r, const struct cal_matrix *mx, const struct cal_opts *o,
                      struct cal_theta **tp, char *eb, size_t ebn)
{
    size_t m = mx->m, n = mx->n;
    size_t d = json_is_array(o->coords) ? json_array_size(o->coords) : m;
    core_err rc;

    if ((rc = check_opts(o, eb, ebn)) != CORE_OK)
        return rc;
    if ((rc = cal_theta_new(m, d, tp)) != CORE_OK) {
        snprintf(eb, ebn, "calibration matrix: %zu nodes / %zu coordinates exceed the caps", m, d);
        return rc;
    }
    for (size_t j = 0; j < m; j++)
        if ((rc = cal_theta_set_node(*tp, j, mx->names[j])) != CORE_OK) {
            snprintf(eb, ebn, "calibration matrix: node %zu has a bad name", j);
            return rc;
        }
    if ((rc = resolve_coords(mx, o, *tp, eb, ebn)) != CORE_OK)
        return rc;
    r->lo = core_xmalloc(m * sizeof(double));
    r->hi = core_xmalloc(m * sizeof(double));
    if ((rc = resolve_norm(mx, o, r->lo, r->hi, eb, ebn)) != CORE_OK)
        return rc;
    memcpy((*tp)->norm_lo, r->lo, m * sizeof(double));
    memcpy((*tp)->norm_hi, r->hi, m * sizeof(double));
    r->x = core_xmalloc(n * m * sizeof(double));
    memcpy(r->x, mx->x, n * m * sizeof(double));
    r->rho0 = core_xmalloc(m * m * sizeof(double));
    r->rhomax = core_xmalloc(m * m * sizeof(double));
    r->s = r->rho0; /* S overwrites rho0 (cal_score allows aliasing) */
    r->rho0 = NULL;
    r->work = core_xmalloc((core_lagcorr_work_len(n, m, o->L) + 2 * m) * sizeof(double));
    r->cap_edges = (size_t)o->K * m / 2 + 1;
    r->edges = core_xmalloc(r->cap_edges * sizeof(struct cal_edge));
    r->gwork = core_xmalloc(cal_graph_work_len(m));
    r->deg = core_xmalloc(m * sizeof(double));
    r->agg = core_xmalloc(m * sizeof(double));
    r->w = core_xmalloc(d * sizeof(double));
    return CORE_OK;
}

/* Algorithm 1 steps 1-2 (scores) on the normalized copy. */
static core_err scores(struct run *r, const struct cal_matrix *mx, const struct cal_opts *o,
                       struct cal_report *rep, char *eb, size_t ebn)
{
    double t0;
    core_err rc = cal_normalize(mx->n, mx->m, r->x, mx->m, r->lo, r->hi);
    if (rc != CORE_OK) {
        snprintf(eb, ebn, "normalization: bad bounds or a non-finite value");
        return rc;
    }
    t0 = now_s();
    rc = core_lagcorr_blas(mx->n, mx->m, r->x, mx->m, o->L, r->s, r->rhomax, r->work);
    rep->t_lagcorr = now_s() - t0;
    if (rc == CORE_OK)
        rc = cal_score(mx->m, o->lambda, r->s, r->rhomax, r->s);
    if (rc != CORE_OK)
        snprintf(eb, ebn, "lagged correlations failed (%s)", core_errname(rc));
    return rc;
}

/* Algorithm 1 proper (timed from here; setup and copies are not counted): lagged scores,
 * their private release in private mode, tau, the graph and its exposure. */
static core_err run_alg1(struct run *r, const struct cal_matrix *mx, const struct cal_opts *o,
                         const struct core_rng *rng, struct cal_theta *t, struct cal_report *rep,
                         char *eb, size_t ebn)
{
    double ta = now_s(), t1;
    core_err rc;

    if ((rc = scores(r, mx, o, rep, eb, ebn)) != CORE_OK)
        return rc;
    if (o->mode == CAL_MODE_PRIVATE && (rc = private_scores(r, mx->m, o, rng, t)) != CORE_OK) {
        snprintf(eb, ebn, "private release of S failed (%s)", core_errname(rc));
        return rc;
    }
    t1 = now_s();
    if ((rc = select_tau(r, mx, o, rng, t, rep)) != CORE_OK) {
        snprintf(eb, ebn, "tau selection failed (%s)", core_errname(rc));
        return rc;
    }
    rep->t_tau = now_s() - t1;
    if ((rc = build_graph(r, mx->m, t->tau, o->K)) != CORE_OK ||
        (rc = cal_exposure(mx->m, r->edges, r->n_edges, o->alpha, r->deg, t->exposure, NULL)) ||
        (rc = cal_theta_set_edges(t, r->edges, r->n_edges)) != CORE_OK) {
        snprintf(eb, ebn, "graph construction failed (%s)", core_errname(rc));
        return rc;
    }
    rep->t_alg1 = now_s() - ta - rep->t_tau;
    rep->n_edges = r->n_edges;
    return CORE_OK;
}

/* The utility mu and the empirical influence xi, each timed. */
static core_err run_utility(struct run *r, const struct cal_matrix *mx, const struct cal_opts *o,
                            const struct core_rng *rng, struct cal_theta *t, struct cal_report *rep,
                            char *eb, size_t ebn)
{
    double t1 = now_s();
    core_err rc;

    if ((rc = compute_mu(r, mx, o, rng, t, rep, eb, ebn)) != CORE_OK) {
        if (!eb[0])
            snprintf(eb, ebn, "utility mu failed (%s)", core_errname(rc));
        return rc;
    }
    rep->t_mu = now_s() - t1;
    t1 = now_s();
    if ((rc = compute_xi(r, mx, o, rng, t)) != CORE_OK) {
        snprintf(eb, ebn, "empirical influence failed (%s)", core_errname(rc));
        return rc;
    }
    rep->t_xi = now_s() - t1;
    return CORE_OK;
}

core_err cal_calibrate(const struct cal_matrix *mx, const struct cal_opts *o,
                       const struct core_rng *rng, struct cal_theta **out,
                       struct cal_report *rep_out, char *eb, size_t ebn)
{
    struct run r = {0};
    struct cal_report rep = {0};
    struct cal_theta *t = NULL;
    double t0 = now_s();
    core_err rc;

    *out = NULL;
    rep.f1_full = -1.0;
    if (o->mode == CAL_MODE_PRIVATE && !rng) {
        snprintf(eb, ebn, "private mode needs a noise source");
        return CORE_EINVAL;
    }
    if (o->threads > 0)
        openblas_set_num_threads(o->threads);
    if ((rc = setup(&r, mx, o, &t, eb, ebn)) != CORE_OK)
        goto out;
    stamp(t, o, mx);
    if ((rc = run_alg1(&r, mx, o, rng, t, &rep, eb, ebn)) != CORE_OK)
        goto out;
    if ((rc = run_utility(&r, mx, o, rng, t, &rep, eb, ebn)) != CORE_OK)
        goto out;
    if ((rc = cal_theta_validate(t, eb, ebn)) != CORE_OK)
        goto out;
    rep.t_total = now_s() - t0;
    *out = t;
    t = NULL;
out:
    if (rep_out)
        *rep_out = rep;
    cal_theta_free(t);
    run_cleanup(&r);
    return rc;
}
