/* theta.c - θ lifecycle, validation and strict JSON round-trip (see cal/theta.h). */
#include "cal/theta.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cal/calibrate.h"
#include "core/mem.h"

/* ------------------------------------------------------------------ lifecycle */

core_err cal_theta_new(size_t n_nodes, size_t d, struct cal_theta **out)
{
    struct cal_theta *t;
    struct cal_opts def;

    *out = NULL;
    if (n_nodes == 0 || d == 0)
        return CORE_EINVAL;
    if (n_nodes > CAL_MAX_NODES || d > CAL_MAX_COORDS)
        return CORE_ETOOBIG;
    t = core_xcalloc(1, sizeof(*t));
    t->version = 1;
    t->mode = CAL_MODE_PUBLIC;
    snprintf(t->software, sizeof(t->software), "gcdp 0.1.0");
    cal_opts_default(&def); /* Table 5, as the calibrate.* key rows state it */
    t->L = def.L;
    t->lambda = def.lambda;
    t->K = def.K;
    t->alpha = def.alpha;
    t->gamma = def.gamma;
    t->tau_c = def.tau_c;
    t->kappa = def.kappa;
    t->g_max = def.g_max;
    t->tau = def.tau;
    t->n_nodes = n_nodes;
    t->nodes = core_xcalloc(n_nodes, sizeof(*t->nodes));
    t->norm_lo = core_xcalloc(n_nodes, sizeof(double));
    t->norm_hi = core_xcalloc(n_nodes, sizeof(double));
    for (size_t m = 0; m < n_nodes; m++)
        t->norm_hi[m] = 1.0;
    t->exposure = core_xcalloc(n_nodes, sizeof(double));
    t->d = d;
    t->coords = core_xcalloc(d, sizeof(*t->coords));
    t->mu = core_xcalloc(d, sizeof(double));
    t->xi_hat = core_xcalloc(d, sizeof(double));
    *out = t;
    return CORE_OK;
}

static void coord_cleanup(struct cal_coord *c)
{
    free(c->name);
    free(c->nodes);
    free(c->coef);
    memset(c, 0, sizeof(*c));
}

void cal_theta_free(struct cal_theta *t)
{
    if (!t)
        return;
    for (size_t m = 0; t->nodes && m < t->n_nodes; m++)
        free(t->nodes[m]);
    for (size_t k = 0; t->coords && k < t->d; k++)
        coord_cleanup(&t->coords[k]);
    free(t->nodes);
    free(t->norm_lo);
    free(t->norm_hi);
    free(t->exposure);
    free(t->edges);
    free(t->coords);
    free(t->mu);
    free(t->xi_hat);
    free(t->tau_grid);
    free(t->B);
    free(t->s);
    free(t->eps);
    free(t);
}

static core_err check_name(const char *name)
{
    if (!name || !name[0])
        return CORE_EINVAL;
    if (strlen(name) >= CAL_MAX_NAME)
        return CORE_ETOOBIG;
    return CORE_OK;
}

core_err cal_theta_set_node(struct cal_theta *t, size_t m, const char *name)
{
    core_err rc = check_name(name);
    if (rc != CORE_OK)
        return rc;
    if (m >= t->n_nodes)
        return CORE_EINVAL;
    free(t->nodes[m]);
    t->nodes[m] = core_xstrdup(name);
    return CORE_OK;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

core_err cal_theta_set_coord(struct cal_theta *t, size_t k, const char *name, size_t n,
                             const uint32_t *nodes, const double *coef)
{
    struct cal_coord c = {0};
    uint32_t *idx = NULL;
    core_err rc = check_name(name);

    if (rc != CORE_OK)
        return rc;
    if (k >= t->d || n == 0 || !nodes)
        return CORE_EINVAL;
    if (n > CAL_MAX_COORD_NNZ || n > t->n_nodes)
        return n > CAL_MAX_COORD_NNZ ? CORE_ETOOBIG : CORE_EINVAL;
    /* sort (node, original position) pairs so coefficients follow their node */
    idx = core_xmalloc(n * sizeof(*idx));
    c.nodes = core_xmalloc(n * sizeof(*c.nodes));
    c.coef = core_xmalloc(n * sizeof(*c.coef));
    memcpy(idx, nodes, n * sizeof(*idx));
    qsort(idx, n, sizeof(*idx), cmp_u32);
    for (size_t a = 0; a < n; a++) {
        if (idx[a] >= t->n_nodes || (a > 0 && idx[a] == idx[a - 1])) {
            rc = CORE_EINVAL;
            goto out;
        }
        c.nodes[a] = idx[a];
        c.coef[a] = 1.0;
        for (size_t b = 0; coef && b < n; b++)
            if (nodes[b] == idx[a])
                c.coef[a] = coef[b];
        if (!isfinite(c.coef[a])) {
            rc = CORE_EINVAL;
            goto out;
        }
    }
    c.n = n;
    c.name = core_xstrdup(name);
    coord_cleanup(&t->coords[k]);
    t->coords[k] = c;
    memset(&c, 0, sizeof(c));
out:
    coord_cleanup(&c);
    free(idx);
    return rc;
}

core_err cal_theta_set_identity_coords(struct cal_theta *t)
{
    if (t->d != t->n_nodes)
        return CORE_EINVAL;
    for (size_t k = 0; k < t->d; k++) {
        uint32_t node = (uint32_t)k;
        core_err rc;
        if (!t->nodes[k])
            return CORE_EINVAL;
        rc = cal_theta_set_coord(t, k, t->nodes[k], 1, &node, NULL);
        if (rc != CORE_OK)
            return rc;
    }
    return CORE_OK;
}

static int cmp_edge(const void *a, const void *b)
{
    const struct cal_edge *x = a, *y = b;
    if (x->i != y->i)
        return (x->i > y->i) - (x->i < y->i);
    return (x->j > y->j) - (x->j < y->j);
}

core_err cal_theta_set_edges(struct cal_theta *t, const struct cal_edge *edges, size_t n_edges)
{
    struct cal_edge *e = NULL;
    if (n_edges > (size_t)t->n_nodes * (t->n_nodes - 1) / 2)
        return CORE_EINVAL;
    if (n_edges > 0) {
        e = core_xmalloc(n_edges * sizeof(*e));
        memcpy(e, edges, n_edges * sizeof(*e));
        qsort(e, n_edges, sizeof(*e), cmp_edge);
    }
    free(t->edges);
    t->edges = e;
    t->n_edges = n_edges;
    return CORE_OK;
}

core_err cal_theta_set_tau_grid(struct cal_theta *t, const double *grid, size_t n)
{
    double *g = NULL;
    if (n > 1024)
        return CORE_ETOOBIG;
    if (n > 0) {
        g = core_xmalloc(n * sizeof(*g));
        memcpy(g, grid, n * sizeof(*g));
    }
    free(t->tau_grid);
    t->tau_grid = g;
    t->n_tau_grid = n;
    return CORE_OK;
}

void cal_theta_release_alloc(struct cal_theta *t)
{
    if (!t->B)
        t->B = core_xcalloc(t->d, sizeof(double));
    if (!t->s)
        t->s = core_xcalloc(t->d, sizeof(double));
    if (!t->eps)
        t->eps = core_xcalloc(t->d, sizeof(double));
}

double cal_theta_eps_cal_total(const struct cal_theta *t)
{
    return t->eps_cal.G + t->eps_cal.tau + t->eps_cal.mu + t->eps_cal.xi;
}

double cal_theta_coord_exposure(const struct cal_theta *t, size_t k)
{
    const struct cal_coord *c = &t->coords[k];
    double sum = 0.0;
    if (c->n == 0)
        return 0.0;
    for (size_t a = 0; a < c->n; a++)
        sum += t->exposure[c->nodes[a]];
    return sum / (double)c->n;
}

core_err cal_theta_node_index(const struct cal_theta *t, const char *name, size_t *out)
{
    for (size_t m = 0; m < t->n_nodes; m++) {
        if (t->nodes[m] && strcmp(t->nodes[m], name) == 0) {
            *out = m;
            return CORE_OK;
        }
    }
    return CORE_ENOTFOUND;
}

static const char *const reason_names[CAL_N_REASONS] = {"initial", "drift", "command", "periodic"};

const char *cal_reason_name(int i)
{
    return i >= 0 && i < CAL_N_REASONS ? reason_names[i] : "?";
}

int cal_reason_index(const char *r)
{
    for (int i = 0; i < CAL_N_REASONS; i++)
        if (strcmp(r, reason_names[i]) == 0)
            return i;
    return -1;
}

const char *cal_mode_name(enum cal_mode m)
{
    return m == CAL_MODE_PRIVATE ? "private" : "public";
}

const char *cal_sens_name(enum cal_sens s)
{
    return s == CAL_SENS_EXPANSION ? "expansion" : "universal";
}

const char *cal_task_name(enum cal_task t)
{
    return t == CAL_TASK_CLASSIFY ? "classify" : "aggregate";
}

/* ------------------------------------------------------------------ validation */

/* Write the reason (printf-style; eb may be NULL) and return CORE_EINVAL. */
static core_err theta_invalid(char *eb, size_t ebn, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static core_err theta_invalid(char *eb, size_t ebn, const char *fmt, ...)
{
    va_list ap;
    if (eb && ebn) {
        va_start(ap, fmt);
        vsnprintf(eb, ebn, fmt, ap);
        va_end(ap);
    }
    return CORE_EINVAL;
}

/* x ∈ [lo, hi], written so NaN fails. */
static bool in_range(double x, double lo, double hi)
{
    return x >= lo && x <= hi;
}

static core_err validate_params(const struct cal_theta *t, char *eb, size_t ebn)
{
    const double *p[] = {&t->eps_cal.G, &t->eps_cal.tau, &t->eps_cal.mu, &t->eps_cal.xi};
    const char *pn[] = {"eps_cal.G", "eps_cal.tau", "eps_cal.mu", "eps_cal.xi"};

    if (t->version < 1)
        return theta_invalid(eb, ebn, "version: must be >= 1");
    if (t->reason[0] && cal_reason_index(t->reason) < 0)
        return theta_invalid(eb, ebn,
                             "reason: \"%.15s\" is not initial, drift, command or "
                             "periodic",
                             t->reason);
    if (t->L < 0 || t->L > CAL_MAX_LAG)
        return theta_invalid(eb, ebn, "L: %d not in [0,%d]", t->L, CAL_MAX_LAG);
    if (!in_range(t->lambda, 0.0, 1.0))
        return theta_invalid(eb, ebn, "lambda: not in [0,1]");
    if (!in_range(t->tau, 0.0, 1.0))
        return theta_invalid(eb, ebn, "tau: not in [0,1]");
    if (t->K < 1 || (size_t)t->K > CAL_MAX_NODES)
        return theta_invalid(eb, ebn, "K: %d not in [1,%u]", t->K, CAL_MAX_NODES);
    if (!in_range(t->alpha, 0.0, 1.0))
        return theta_invalid(eb, ebn, "alpha: not in [0,1]");
    if (!in_range(t->gamma, 0.0, 1e6))
        return theta_invalid(eb, ebn, "gamma: not in [0,1e6]");
    if (!in_range(t->tau_c, 0.0, 1.0))
        return theta_invalid(eb, ebn, "tau_c: not in [0,1]");
    if (!in_range(t->kappa, 1.0, 1e6))
        return theta_invalid(eb, ebn, "kappa: not in [1,1e6] (Sec. 4.3 requires kappa >= 1)");
    if (!in_range(t->g_max, 0.0, 1e12) || !(t->g_max > 0.0))
        return theta_invalid(eb, ebn, "g_max: not in (0,1e12]");
    for (size_t a = 0; a < 4; a++) {
        if (!in_range(*p[a], 0.0, 1024.0))
            return theta_invalid(eb, ebn, "%s: not in [0,1024]", pn[a]);
        if (t->mode == CAL_MODE_PUBLIC && *p[a] != 0.0)
            return theta_invalid(eb, ebn, "%s: must be 0 in public mode", pn[a]);
    }
    if (t->mode == CAL_MODE_PRIVATE && !(cal_theta_eps_cal_total(t) > 0.0))
        return theta_invalid(eb, ebn, "eps_cal: private mode needs eps_cal > 0");
    for (size_t a = 0; a < t->n_tau_grid; a++)
        if (!in_range(t->tau_grid[a], 0.0, 1.0))
            return theta_invalid(eb, ebn, "tau_grid[%zu]: not in [0,1]", a);
    if (!in_range(t->delta_S, 0.0, 1e12) || !in_range(t->delta_mu, 0.0, 1e12) ||
        !in_range(t->delta_xi, 0.0, 1e12) || !in_range(t->delta_U, 0.0, 1.0))
        return theta_invalid(eb, ebn,
                             "sensitivity: delta_S/mu/xi must be in [0,1e12], delta_U in [0,1]");
    return CORE_OK;
}

static core_err validate_nodes(const struct cal_theta *t, char *eb, size_t ebn)
{
    for (size_t m = 0; m < t->n_nodes; m++) {
        if (!t->nodes[m] || !t->nodes[m][0])
            return theta_invalid(eb, ebn, "nodes[%zu]: missing name", m);
        for (size_t o = 0; o < m; o++)
            if (strcmp(t->nodes[o], t->nodes[m]) == 0)
                return theta_invalid(eb, ebn, "nodes[%zu]: duplicate name \"%s\"", m, t->nodes[m]);
        if (!isfinite(t->norm_lo[m]) || !isfinite(t->norm_hi[m]) ||
            !(t->norm_lo[m] < t->norm_hi[m]))
            return theta_invalid(eb, ebn, "norm[%zu]: need finite lo < hi", m);
        if (!in_range(t->exposure[m], 0.0, 1.0))
            return theta_invalid(eb, ebn, "exposure[%zu]: not in [0,1]", m);
    }
    return CORE_OK;
}

static core_err validate_edges(const struct cal_theta *t, char *eb, size_t ebn)
{
    unsigned *deg = core_xcalloc(t->n_nodes, sizeof(*deg));
    core_err rc = CORE_OK;

    for (size_t e = 0; e < t->n_edges; e++) {
        const struct cal_edge *x = &t->edges[e];
        if (!(x->i < x->j) || x->j >= t->n_nodes) {
            snprintf(eb, ebn, "edges[%zu]: need i < j < %zu", e, t->n_nodes);
            rc = CORE_EINVAL;
            break;
        }
        if (e > 0 && cmp_edge(&t->edges[e - 1], x) >= 0) {
            snprintf(eb, ebn, "edges[%zu]: duplicate or unsorted edge", e);
            rc = CORE_EINVAL;
            break;
        }
        if (!in_range(x->w, t->tau, 1.0)) {
            snprintf(eb, ebn, "edges[%zu]: weight not in [tau,1]", e);
            rc = CORE_EINVAL;
            break;
        }
        if (++deg[x->i] > (unsigned)t->K || ++deg[x->j] > (unsigned)t->K) {
            snprintf(eb, ebn, "edges[%zu]: degree cap K=%d exceeded", e, t->K);
            rc = CORE_EINVAL;
            break;
        }
    }
    free(deg);
    return rc;
}

static core_err validate_coords(const struct cal_theta *t, char *eb, size_t ebn)
{
    for (size_t k = 0; k < t->d; k++) {
        const struct cal_coord *c = &t->coords[k];
        if (!c->name || c->n == 0)
            return theta_invalid(eb, ebn, "coords[%zu]: missing name or empty node map a(k)", k);
        for (size_t a = 0; a < c->n; a++) {
            if (c->nodes[a] >= t->n_nodes || (a > 0 && c->nodes[a] <= c->nodes[a - 1]))
                return theta_invalid(eb, ebn,
                                     "coords[%zu].nodes[%zu]: out of range, duplicate or "
                                     "unsorted",
                                     k, a);
            if (!isfinite(c->coef[a]))
                return theta_invalid(eb, ebn, "coords[%zu].coef[%zu]: not finite", k, a);
        }
        if (!in_range(t->mu[k], 0.0, 1.0))
            return theta_invalid(eb, ebn, "mu[%zu]: not in [0,1]", k);
        if (!in_range(t->xi_hat[k], 0.0, t->g_max))
            return theta_invalid(eb, ebn, "xi_hat[%zu]: not in [0,g_max]", k);
    }
    return CORE_OK;
}

/* DESIGN §7.2 invariants, as runtime checks written so NaN fails closed (STYLE P6). */
static core_err validate_release(const struct cal_theta *t, char *eb, size_t ebn)
{
    double sum = 0.0;
    if (!t->B && !t->s && !t->eps)
        return CORE_OK;
    if (!t->B || !t->s || !t->eps)
        return theta_invalid(eb, ebn, "release: B, s and eps must be present together");
    if (!(t->eps_rel > 0.0) || !isfinite(t->eps_rel))
        return theta_invalid(eb, ebn, "eps_rel: must be finite and > 0");
    for (size_t k = 0; k < t->d; k++) {
        if (!(t->B[k] >= 0.0) || !isfinite(t->B[k]))
            return theta_invalid(eb, ebn, "B[%zu]: must be finite and >= 0", k);
        if (!(t->s[k] >= t->B[k]) || !isfinite(t->s[k]))
            return theta_invalid(eb, ebn, "s[%zu]: must be finite and >= B[%zu]", k, k);
        if (!(t->eps[k] > 0.0) || !isfinite(t->eps[k]))
            return theta_invalid(eb, ebn, "eps[%zu]: must be finite and > 0", k);
        sum += t->eps[k];
    }
    if (!(sum <= t->eps_rel))
        return theta_invalid(eb, ebn, "eps: sum %.17g exceeds eps_rel %.17g", sum, t->eps_rel);
    if (!t->mechanism[0])
        return theta_invalid(eb, ebn, "mechanism: missing");
    return CORE_OK;
}

core_err cal_theta_validate(const struct cal_theta *t, char *eb, size_t ebn)
{
    core_err rc;
    char dummy[8];
    if (!eb || ebn == 0) {
        eb = dummy;
        ebn = sizeof(dummy);
    }
    eb[0] = '\0';
    if (!t)
        return theta_invalid(eb, ebn, "theta: NULL");
    if ((rc = validate_params(t, eb, ebn)) != CORE_OK)
        return rc;
    if ((rc = validate_nodes(t, eb, ebn)) != CORE_OK)
        return rc;
    if ((rc = validate_edges(t, eb, ebn)) != CORE_OK)
        return rc;
    if ((rc = validate_coords(t, eb, ebn)) != CORE_OK)
        return rc;
    return validate_release(t, eb, ebn);
}

/* ------------------------------------------------------------------ to JSON */

static json_t *dvec(const double *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_real(v[i]));
    return a;
}

static json_t *coords_json(const struct cal_theta *t)
{
    json_t *a = json_array();
    for (size_t k = 0; k < t->d; k++) {
        const struct cal_coord *c = &t->coords[k];
        json_t *nodes = json_array();
        for (size_t i = 0; i < c->n; i++)
            json_array_append_new(nodes, json_integer((json_int_t)c->nodes[i]));
        json_array_append_new(a, json_pack("{s:s, s:o, s:o}", "name", c->name, "nodes", nodes,
                                           "coef", dvec(c->coef, c->n)));
    }
    return a;
}

static json_t *graph_json(const struct cal_theta *t, json_t *o)
{
    json_t *nodes = json_array(), *edges = json_array(), *norm = json_array();
    for (size_t m = 0; m < t->n_nodes; m++) {
        json_array_append_new(nodes, json_string(t->nodes[m]));
        json_array_append_new(norm, json_pack("[f,f]", t->norm_lo[m], t->norm_hi[m]));
    }
    for (size_t e = 0; e < t->n_edges; e++)
        json_array_append_new(edges, json_pack("[I,I,f]", (json_int_t)t->edges[e].i,
                                               (json_int_t)t->edges[e].j, t->edges[e].w));
    json_object_set_new(o, "nodes", nodes);
    json_object_set_new(o, "norm", norm);
    json_object_set_new(o, "edges", edges);
    json_object_set_new(o, "exposure", dvec(t->exposure, t->n_nodes));
    return o;
}

core_err cal_theta_to_json(const struct cal_theta *t, json_t **out, char *eb, size_t ebn)
{
    json_t *o;
    core_err rc = cal_theta_validate(t, eb, ebn);

    *out = NULL;
    if (rc != CORE_OK)
        return rc;
    o = json_pack("{s:s, s:I, s:s, s:s, s:s, s:s, s:s, s:I}", "schema", CAL_THETA_SCHEMA, "version",
                  (json_int_t)t->version, "mode", cal_mode_name(t->mode), "created_at",
                  t->created_at, "software", t->software, "config_version", t->config_version,
                  "source", t->source, "n_cal", (json_int_t)t->n_cal);
    if (t->reason[0])
        json_object_set_new(o, "reason", json_string(t->reason));
    json_object_set_new(o, "eps_cal",
                        json_pack("{s:f, s:f, s:f, s:f, s:f}", "G", t->eps_cal.G, "tau",
                                  t->eps_cal.tau, "mu", t->eps_cal.mu, "xi", t->eps_cal.xi, "total",
                                  cal_theta_eps_cal_total(t)));
    json_object_set_new(o, "sensitivity",
                        json_pack("{s:s, s:f, s:f, s:f, s:f}", "choice", cal_sens_name(t->sens),
                                  "delta_S", t->delta_S, "delta_mu", t->delta_mu, "delta_xi",
                                  t->delta_xi, "delta_U", t->delta_U));
    json_object_set_new(o, "task", json_string(cal_task_name(t->task)));
    json_object_set_new(o, "L", json_integer(t->L));
    json_object_set_new(o, "lambda", json_real(t->lambda));
    json_object_set_new(o, "tau", json_real(t->tau));
    json_object_set_new(o, "tau_grid", dvec(t->tau_grid, t->n_tau_grid));
    json_object_set_new(o, "K", json_integer(t->K));
    json_object_set_new(o, "alpha", json_real(t->alpha));
    json_object_set_new(o, "gamma", json_real(t->gamma));
    json_object_set_new(o, "tau_c", json_real(t->tau_c));
    json_object_set_new(o, "kappa", json_real(t->kappa));
    json_object_set_new(o, "g_max", json_real(t->g_max));
    graph_json(t, o);
    json_object_set_new(o, "coords", coords_json(t));
    json_object_set_new(o, "mu", dvec(t->mu, t->d));
    json_object_set_new(o, "xi_hat", dvec(t->xi_hat, t->d));
    if (t->B) {
        json_object_set_new(o, "B", dvec(t->B, t->d));
        json_object_set_new(o, "s", dvec(t->s, t->d));
        json_object_set_new(o, "eps", dvec(t->eps, t->d));
        json_object_set_new(o, "eps_rel", json_real(t->eps_rel));
        json_object_set_new(o, "mechanism", json_string(t->mechanism));
    }
    *out = o;
    return CORE_OK;
}

/* ------------------------------------------------------------------ from JSON */

/* Put the reason into eb and return code: `return parse_fail(CORE_EPARSE, eb, ebn, ...)`. */
static core_err parse_fail(core_err code, char *eb, size_t ebn, const char *fmt, ...)
    CORE_PRINTF(4, 5);

static core_err parse_fail(core_err code, char *eb, size_t ebn, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(eb, ebn, fmt, ap);
    va_end(ap);
    return code;
}

static const char *const known_fields[] = {
    "schema", "version",  "mode",    "created_at", "software",    "config_version",
    "source", "reason",   "n_cal",   "eps_cal",    "sensitivity", "task",
    "L",      "lambda",   "tau",     "tau_grid",   "K",           "alpha",
    "gamma",  "tau_c",    "kappa",   "g_max",      "nodes",       "norm",
    "edges",  "exposure", "coords",  "mu",         "xi_hat",      "B",
    "s",      "eps",      "eps_rel", "mechanism",  NULL};

static core_err get_num(const json_t *o, const char *key, bool required, double *out, char *eb,
                        size_t ebn)
{
    const json_t *v = json_object_get(o, key);
    if (!v) {
        if (required)
            return parse_fail(CORE_EPARSE, eb, ebn, "%s: missing", key);
        return CORE_OK;
    }
    if (!json_is_number(v))
        return parse_fail(CORE_EPARSE, eb, ebn, "%s: not a number", key);
    *out = json_number_value(v);
    if (!isfinite(*out))
        return parse_fail(CORE_EINVAL, eb, ebn, "%s: not finite", key);
    return CORE_OK;
}

static core_err get_int(const json_t *o, const char *key, json_int_t lo, json_int_t hi,
                        json_int_t *out, char *eb, size_t ebn)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return parse_fail(CORE_EPARSE, eb, ebn, "%s: missing", key);
    if (!json_is_integer(v))
        return parse_fail(CORE_EPARSE, eb, ebn, "%s: not an integer", key);
    *out = json_integer_value(v);
    if (*out < lo || *out > hi)
        return parse_fail(CORE_EINVAL, eb, ebn, "%s: %lld not in [%lld,%lld]", key, (long long)*out,
                          (long long)lo, (long long)hi);
    return CORE_OK;
}

static core_err get_str(const json_t *o, const char *key, bool required, char *dst, size_t dstn,
                        char *eb, size_t ebn)
{
    const json_t *v = json_object_get(o, key);
    if (!v) {
        if (required)
            return parse_fail(CORE_EPARSE, eb, ebn, "%s: missing", key);
        return CORE_OK;
    }
    if (!json_is_string(v))
        return parse_fail(CORE_EPARSE, eb, ebn, "%s: not a string", key);
    if (json_string_length(v) >= dstn)
        return parse_fail(CORE_ETOOBIG, eb, ebn, "%s: longer than %zu bytes", key, dstn - 1);
    memcpy(dst, json_string_value(v), json_string_length(v) + 1);
    return CORE_OK;
}

static core_err get_enum(const json_t *o, const char *key, const char *a, const char *b, int *out,
                         char *eb, size_t ebn)
{
    char s[32] = "";
    core_err rc = get_str(o, key, true, s, sizeof(s), eb, ebn);
    if (rc != CORE_OK)
        return rc;
    if (strcmp(s, a) == 0)
        *out = 0;
    else if (strcmp(s, b) == 0)
        *out = 1;
    else
        return parse_fail(CORE_EINVAL, eb, ebn, "%s: \"%s\" is not one of %s|%s", key, s, a, b);
    return CORE_OK;
}

/* Fill v[0..n) from array `key` of exactly n numbers. */
static core_err get_vec(const json_t *o, const char *key, size_t n, double *v, char *eb, size_t ebn)
{
    const json_t *a = json_object_get(o, key);
    if (!a)
        return parse_fail(CORE_EPARSE, eb, ebn, "%s: missing", key);
    if (!json_is_array(a))
        return parse_fail(CORE_EPARSE, eb, ebn, "%s: not an array", key);
    if (json_array_size(a) != n)
        return parse_fail(CORE_EINVAL, eb, ebn, "%s: length %zu, expected %zu", key,
                          json_array_size(a), n);
    for (size_t i = 0; i < n; i++) {
        const json_t *x = json_array_get(a, i);
        if (!json_is_number(x))
            return parse_fail(CORE_EPARSE, eb, ebn, "%s[%zu]: not a number", key, i);
        v[i] = json_number_value(x);
        if (!isfinite(v[i]))
            return parse_fail(CORE_EINVAL, eb, ebn, "%s[%zu]: not finite", key, i);
    }
    return CORE_OK;
}

static const char *const eps_keys[] = {"G", "tau", "mu", "xi", "total", NULL};
static const char *const sens_keys[] = {"choice",   "delta_S", "delta_mu",
                                        "delta_xi", "delta_U", NULL};

/* Every member of object o must be one of known[]. */
static core_err check_keys(const json_t *o, const char *what, const char *const *known, char *eb,
                           size_t ebn)
{
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)o, key, v)
    {
        bool ok = false;
        for (size_t i = 0; known[i]; i++)
            ok = ok || strcmp(known[i], key) == 0;
        if (!ok)
            return parse_fail(CORE_EPARSE, eb, ebn, "%s.%s: unknown field", what, key);
    }
    return CORE_OK;
}

/* Prefix the field name in errbuf with the enclosing object's name. */
static core_err prefix_err(core_err rc, const char *prefix, char *eb, size_t ebn)
{
    char tmp[512];
    snprintf(tmp, sizeof(tmp), "%s%s", prefix, eb);
    snprintf(eb, ebn, "%s", tmp);
    return rc;
}

/* schema, version, mode, the provenance strings, reason and n_cal. */
static core_err parse_identity(const json_t *j, struct cal_theta *t, char *eb, size_t ebn)
{
    char schema[32] = "";
    json_int_t iv = 0;
    int e = 0;
    core_err rc;

    if ((rc = get_str(j, "schema", true, schema, sizeof(schema), eb, ebn)) != CORE_OK)
        return rc;
    if (strcmp(schema, CAL_THETA_SCHEMA) != 0)
        return parse_fail(CORE_EPARSE, eb, ebn, "schema: \"%s\", expected \"%s\"", schema,
                          CAL_THETA_SCHEMA);
    if ((rc = get_int(j, "version", 1, INT64_MAX, &iv, eb, ebn)) != CORE_OK)
        return rc;
    t->version = (uint64_t)iv;
    if ((rc = get_enum(j, "mode", "public", "private", &e, eb, ebn)) != CORE_OK)
        return rc;
    t->mode = (enum cal_mode)e;
    if ((rc = get_str(j, "created_at", true, t->created_at, sizeof(t->created_at), eb, ebn)) ||
        (rc = get_str(j, "software", false, t->software, sizeof(t->software), eb, ebn)) ||
        (rc = get_str(j, "config_version", false, t->config_version, sizeof(t->config_version), eb,
                      ebn)) ||
        (rc = get_str(j, "source", false, t->source, sizeof(t->source), eb, ebn)) ||
        (rc = get_str(j, "reason", false, t->reason, sizeof(t->reason), eb, ebn)))
        return rc;
    if (t->reason[0] && cal_reason_index(t->reason) < 0)
        return parse_fail(CORE_EPARSE, eb, ebn,
                          "reason: \"%s\", expected initial, drift, command or periodic",
                          t->reason);
    if ((rc = get_int(j, "n_cal", 0, INT64_MAX, &iv, eb, ebn)) != CORE_OK)
        return rc;
    t->n_cal = (uint64_t)iv;
    return CORE_OK;
}

/* eps_cal {G, tau, mu, xi[, total]}; total, when present, must be their sum. */
static core_err parse_eps_cal(const json_t *ec, struct cal_theta *t, char *eb, size_t ebn)
{
    core_err rc;

    if (!json_is_object(ec))
        return parse_fail(CORE_EPARSE, eb, ebn, "eps_cal: missing or not an object {G,tau,mu,xi}");
    if ((rc = get_num(ec, "G", true, &t->eps_cal.G, eb, ebn)) ||
        (rc = get_num(ec, "tau", true, &t->eps_cal.tau, eb, ebn)) ||
        (rc = get_num(ec, "mu", true, &t->eps_cal.mu, eb, ebn)) ||
        (rc = get_num(ec, "xi", true, &t->eps_cal.xi, eb, ebn)))
        return prefix_err(rc, "eps_cal.", eb, ebn);
    if ((rc = check_keys(ec, "eps_cal", eps_keys, eb, ebn)) != CORE_OK)
        return rc;
    if (json_object_get(ec, "total")) {
        double tot = 0.0;
        if ((rc = get_num(ec, "total", true, &tot, eb, ebn)) != CORE_OK)
            return prefix_err(rc, "eps_cal.", eb, ebn);
        if (!(fabs(tot - cal_theta_eps_cal_total(t)) <= 1e-12 * (1.0 + tot)))
            return parse_fail(CORE_EINVAL, eb, ebn, "eps_cal.total: not G + tau + mu + xi");
    }
    return CORE_OK;
}

/* sensitivity {choice, delta_S, delta_mu, delta_xi, delta_U}. */
static core_err parse_sensitivity(const json_t *se, struct cal_theta *t, char *eb, size_t ebn)
{
    int e = 0;
    core_err rc;

    if (!json_is_object(se))
        return parse_fail(CORE_EPARSE, eb, ebn, "sensitivity: missing or not an object");
    if ((rc = check_keys(se, "sensitivity", sens_keys, eb, ebn)) != CORE_OK)
        return rc;
    if ((rc = get_enum(se, "choice", "universal", "expansion", &e, eb, ebn)) != CORE_OK)
        return prefix_err(rc, "sensitivity.", eb, ebn);
    t->sens = (enum cal_sens)e;
    if ((rc = get_num(se, "delta_S", true, &t->delta_S, eb, ebn)) ||
        (rc = get_num(se, "delta_mu", true, &t->delta_mu, eb, ebn)) ||
        (rc = get_num(se, "delta_xi", true, &t->delta_xi, eb, ebn)) ||
        (rc = get_num(se, "delta_U", true, &t->delta_U, eb, ebn)))
        return prefix_err(rc, "sensitivity.", eb, ebn);
    return CORE_OK;
}

/* The header of a theta document: identity, eps_cal, sensitivity and task. */
static core_err parse_header(const json_t *j, struct cal_theta *t, char *eb, size_t ebn)
{
    int e = 0;
    core_err rc;

    if ((rc = parse_identity(j, t, eb, ebn)) != CORE_OK ||
        (rc = parse_eps_cal(json_object_get(j, "eps_cal"), t, eb, ebn)) != CORE_OK ||
        (rc = parse_sensitivity(json_object_get(j, "sensitivity"), t, eb, ebn)) != CORE_OK)
        return rc;
    if ((rc = get_enum(j, "task", "aggregate", "classify", &e, eb, ebn)) != CORE_OK)
        return rc;
    t->task = (enum cal_task)e;
    return CORE_OK;
}

static core_err parse_params(const json_t *j, struct cal_theta *t, char *eb, size_t ebn)
{
    json_int_t iv = 0;
    const json_t *g = json_object_get(j, "tau_grid");
    core_err rc;

    if ((rc = get_int(j, "L", 0, CAL_MAX_LAG, &iv, eb, ebn)) != CORE_OK)
        return rc;
    t->L = (int)iv;
    if ((rc = get_int(j, "K", 1, CAL_MAX_NODES, &iv, eb, ebn)) != CORE_OK)
        return rc;
    t->K = (int)iv;
    if ((rc = get_num(j, "lambda", true, &t->lambda, eb, ebn)) ||
        (rc = get_num(j, "tau", true, &t->tau, eb, ebn)) ||
        (rc = get_num(j, "alpha", true, &t->alpha, eb, ebn)) ||
        (rc = get_num(j, "gamma", true, &t->gamma, eb, ebn)) ||
        (rc = get_num(j, "tau_c", true, &t->tau_c, eb, ebn)) ||
        (rc = get_num(j, "kappa", true, &t->kappa, eb, ebn)) ||
        (rc = get_num(j, "g_max", true, &t->g_max, eb, ebn)))
        return rc;
    if (!json_is_array(g))
        return parse_fail(CORE_EPARSE, eb, ebn, "tau_grid: missing or not an array");
    if (json_array_size(g) > 1024)
        return parse_fail(CORE_ETOOBIG, eb, ebn, "tau_grid: more than 1024 entries");
    t->n_tau_grid = json_array_size(g);
    t->tau_grid = t->n_tau_grid ? core_xcalloc(t->n_tau_grid, sizeof(double)) : NULL;
    return t->n_tau_grid ? get_vec(j, "tau_grid", t->n_tau_grid, t->tau_grid, eb, ebn) : CORE_OK;
}

static core_err parse_nodes(const json_t *j, struct cal_theta *t, char *eb, size_t ebn)
{
    const json_t *nodes = json_object_get(j, "nodes"), *norm = json_object_get(j, "norm");
    core_err rc;

    for (size_t m = 0; m < t->n_nodes; m++) {
        const json_t *nm = json_array_get(nodes, m), *b = json_array_get(norm, m);
        if (!json_is_string(nm))
            return parse_fail(CORE_EPARSE, eb, ebn, "nodes[%zu]: not a string", m);
        if ((rc = cal_theta_set_node(t, m, json_string_value(nm))) != CORE_OK)
            return parse_fail(rc, eb, ebn, "nodes[%zu]: empty or longer than %u bytes", m,
                              CAL_MAX_NAME - 1);
        if (!json_is_array(b) || json_array_size(b) != 2 || !json_is_number(json_array_get(b, 0)) ||
            !json_is_number(json_array_get(b, 1)))
            return parse_fail(CORE_EPARSE, eb, ebn, "norm[%zu]: expected [lo, hi]", m);
        t->norm_lo[m] = json_number_value(json_array_get(b, 0));
        t->norm_hi[m] = json_number_value(json_array_get(b, 1));
    }
    if (!json_is_array(norm) || json_array_size(norm) != t->n_nodes)
        return parse_fail(CORE_EINVAL, eb, ebn, "norm: expected %zu [lo, hi] pairs", t->n_nodes);
    return get_vec(j, "exposure", t->n_nodes, t->exposure, eb, ebn);
}

static core_err parse_edges(const json_t *j, struct cal_theta *t, char *eb, size_t ebn)
{
    const json_t *a = json_object_get(j, "edges");
    size_t n;
    struct cal_edge *e;
    core_err rc = CORE_OK;

    if (!json_is_array(a))
        return parse_fail(CORE_EPARSE, eb, ebn, "edges: missing or not an array");
    n = json_array_size(a);
    if (n > t->n_nodes * (t->n_nodes - 1) / 2)
        return parse_fail(CORE_EINVAL, eb, ebn, "edges: %zu edges exceed M(M-1)/2", n);
    e = core_xcalloc(n ? n : 1, sizeof(*e));
    for (size_t x = 0; x < n && rc == CORE_OK; x++) {
        const json_t *r = json_array_get(a, x);
        const json_t *i = json_array_get(r, 0), *jj = json_array_get(r, 1),
                     *w = json_array_get(r, 2);
        if (!json_is_array(r) || json_array_size(r) != 3 || !json_is_integer(i) ||
            !json_is_integer(jj) || !json_is_number(w)) {
            snprintf(eb, ebn, "edges[%zu]: expected [i, j, w]", x);
            rc = CORE_EPARSE;
        } else if (json_integer_value(i) < 0 || json_integer_value(jj) < 0 ||
                   json_integer_value(i) >= (json_int_t)t->n_nodes ||
                   json_integer_value(jj) >= (json_int_t)t->n_nodes) {
            snprintf(eb, ebn, "edges[%zu]: node index out of range", x);
            rc = CORE_EINVAL;
        } else {
            e[x].i = (uint32_t)json_integer_value(i);
            e[x].j = (uint32_t)json_integer_value(jj);
            e[x].w = json_number_value(w);
        }
    }
    /* keep the document's order for validation: an unsorted list is reported, not fixed */
    if (rc == CORE_OK) {
        free(t->edges);
        t->edges = e;
        t->n_edges = n;
        e = NULL;
    }
    free(e);
    return rc;
}

static core_err parse_coords(const json_t *j, struct cal_theta *t, char *eb, size_t ebn)
{
    const json_t *a = json_object_get(j, "coords");
    uint32_t *nodes = NULL;
    double *coef = NULL;
    core_err rc = CORE_OK;

    for (size_t k = 0; k < t->d && rc == CORE_OK; k++) {
        const json_t *c = json_array_get(a, k);
        const json_t *nm = json_object_get(c, "name"), *nd = json_object_get(c, "nodes"),
                     *cf = json_object_get(c, "coef");
        size_t n = json_array_size(nd);
        if (!json_is_object(c) || json_object_size(c) != 3 || !json_is_string(nm) ||
            !json_is_array(nd) || !json_is_array(cf) || json_array_size(cf) != n || n == 0 ||
            n > CAL_MAX_COORD_NNZ) {
            snprintf(eb, ebn, "coords[%zu]: expected {name, nodes[1..%u], coef[same length]}", k,
                     CAL_MAX_COORD_NNZ);
            rc = CORE_EPARSE;
            break;
        }
        nodes = core_xrealloc(nodes, n * sizeof(*nodes));
        coef = core_xrealloc(coef, n * sizeof(*coef));
        for (size_t x = 0; x < n && rc == CORE_OK; x++) {
            const json_t *ni = json_array_get(nd, x), *ci = json_array_get(cf, x);
            if (!json_is_integer(ni) || json_integer_value(ni) < 0 ||
                json_integer_value(ni) >= (json_int_t)t->n_nodes || !json_is_number(ci)) {
                snprintf(eb, ebn, "coords[%zu].nodes[%zu]: not a node index or coef not a number",
                         k, x);
                rc = CORE_EINVAL;
            } else {
                nodes[x] = (uint32_t)json_integer_value(ni);
                coef[x] = json_number_value(ci);
            }
        }
        if (rc == CORE_OK &&
            (rc = cal_theta_set_coord(t, k, json_string_value(nm), n, nodes, coef)) != CORE_OK)
            snprintf(eb, ebn, "coords[%zu]: bad name, duplicate node or non-finite coef", k);
    }
    free(nodes);
    free(coef);
    return rc;
}

static core_err parse_release(const json_t *j, struct cal_theta *t, char *eb, size_t ebn)
{
    bool any = json_object_get(j, "B") || json_object_get(j, "s") || json_object_get(j, "eps") ||
               json_object_get(j, "eps_rel") || json_object_get(j, "mechanism");
    core_err rc;
    if (!any)
        return CORE_OK;
    cal_theta_release_alloc(t);
    if ((rc = get_vec(j, "B", t->d, t->B, eb, ebn)) ||
        (rc = get_vec(j, "s", t->d, t->s, eb, ebn)) ||
        (rc = get_vec(j, "eps", t->d, t->eps, eb, ebn)) ||
        (rc = get_num(j, "eps_rel", true, &t->eps_rel, eb, ebn)) ||
        (rc = get_str(j, "mechanism", true, t->mechanism, sizeof(t->mechanism), eb, ebn)))
        return rc;
    return CORE_OK;
}

static core_err check_shape(const json_t *j, size_t *m, size_t *d, char *eb, size_t ebn)
{
    const char *key;
    const json_t *v;
    if (!json_is_object(j))
        return parse_fail(CORE_EPARSE, eb, ebn, "theta: not a JSON object");
    json_object_foreach((json_t *)j, key, v)
    {
        bool ok = false;
        for (size_t i = 0; known_fields[i]; i++)
            ok = ok || strcmp(known_fields[i], key) == 0;
        if (!ok)
            return parse_fail(CORE_EPARSE, eb, ebn, "%s: unknown field", key);
    }
    if (!json_is_array(json_object_get(j, "nodes")))
        return parse_fail(CORE_EPARSE, eb, ebn, "nodes: missing or not an array");
    if (!json_is_array(json_object_get(j, "coords")))
        return parse_fail(CORE_EPARSE, eb, ebn, "coords: missing or not an array");
    *m = json_array_size(json_object_get(j, "nodes"));
    *d = json_array_size(json_object_get(j, "coords"));
    if (*m == 0 || *d == 0)
        return parse_fail(CORE_EINVAL, eb, ebn, "%s: must not be empty",
                          *m == 0 ? "nodes" : "coords");
    if (*m > CAL_MAX_NODES || *d > CAL_MAX_COORDS)
        return parse_fail(CORE_ETOOBIG, eb, ebn, "%s: more than %u entries",
                          *m > CAL_MAX_NODES ? "nodes" : "coords",
                          *m > CAL_MAX_NODES ? CAL_MAX_NODES : CAL_MAX_COORDS);
    return CORE_OK;
}

core_err cal_theta_from_json(const json_t *j, struct cal_theta **out, char *eb, size_t ebn)
{
    struct cal_theta *t = NULL;
    size_t m = 0, d = 0;
    char dummy[8];
    core_err rc;

    if (!eb || ebn == 0) {
        eb = dummy;
        ebn = sizeof(dummy);
    }
    eb[0] = '\0';
    *out = NULL;
    if ((rc = check_shape(j, &m, &d, eb, ebn)) != CORE_OK)
        goto out;
    if ((rc = cal_theta_new(m, d, &t)) != CORE_OK)
        goto out;
    if ((rc = parse_header(j, t, eb, ebn)) || (rc = parse_params(j, t, eb, ebn)) ||
        (rc = parse_nodes(j, t, eb, ebn)) || (rc = parse_edges(j, t, eb, ebn)) ||
        (rc = parse_coords(j, t, eb, ebn)) || (rc = get_vec(j, "mu", d, t->mu, eb, ebn)) ||
        (rc = get_vec(j, "xi_hat", d, t->xi_hat, eb, ebn)) || (rc = parse_release(j, t, eb, ebn)))
        goto out;
    if ((rc = cal_theta_validate(t, eb, ebn)) != CORE_OK)
        goto out;
    *out = t;
    t = NULL;
out:
    cal_theta_free(t);
    return rc;
}

/* ------------------------------------------------------------------ files */

core_err cal_theta_load_file(const char *path, struct cal_theta **out, char *eb, size_t ebn)
{
    json_error_t je;
    json_t *j;
    FILE *f;
    long sz;
    core_err rc;

    *out = NULL;
    f = fopen(path, "rb");
    if (!f) {
        snprintf(eb, ebn, "%s: %s", path, strerror(errno));
        return CORE_EIO;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (sz = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        snprintf(eb, ebn, "%s: cannot determine size", path);
        return CORE_EIO;
    }
    if ((unsigned long)sz > CAL_MAX_THETA_BYTES) {
        fclose(f);
        snprintf(eb, ebn, "%s: larger than %u bytes", path, CAL_MAX_THETA_BYTES);
        return CORE_ETOOBIG;
    }
    j = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    fclose(f);
    if (!j) {
        snprintf(eb, ebn, "%s:%d:%d: %s", path, je.line, je.column, je.text);
        return CORE_EPARSE;
    }
    rc = cal_theta_from_json(j, out, eb, ebn);
    json_decref(j);
    return rc;
}

core_err cal_theta_save_file(const struct cal_theta *t, const char *path, char *eb, size_t ebn)
{
    json_t *j = NULL;
    char tmp[4096];
    core_err rc = cal_theta_to_json(t, &j, eb, ebn);

    if (rc != CORE_OK)
        return rc;
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= sizeof(tmp)) {
        snprintf(eb, ebn, "output path too long");
        rc = CORE_ETOOBIG;
        goto out;
    }
    if (json_dump_file(j, tmp, JSON_INDENT(1) | JSON_REAL_PRECISION(17)) != 0 ||
        rename(tmp, path) != 0) {
        snprintf(eb, ebn, "%s: cannot write (%s)", path, strerror(errno));
        unlink(tmp);
        rc = CORE_EIO;
    }
out:
    json_decref(j);
    return rc;
}
