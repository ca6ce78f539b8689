/* notears.c - centralized NOTEARS by augmented Lagrangian + OWL-QN (Zheng et al. 2018). */
#include "lrn/notears.h"

#include <lbfgs.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "core/mem.h"
#include "lrn/acyclic.h"

#define NOTEARS_MAX_D 4096

struct lrn_notears_opts lrn_notears_opts_default(void)
{
    struct lrn_notears_opts o = {
        .lambda = 0.1,
        .w_threshold = 0.3,
        .h_tol = 1e-8,
        .rho_max = 1e16,
        .h_shrink = 0.25,
        .max_outer = 100,
        .lbfgs_max_iter = 0,
    };
    return o;
}

struct nt_ctx {
    size_t d;
    const double *sigma;
    struct lrn_acyclic_ws *ws;
    double *w, *m, *t, *gh; /* d*d scratch each */
    double rho, alpha;
    size_t evals;
    int numeric_fail;
};

/* Smooth part of the NOTEARS augmented Lagrangian (Zheng et al. 2018, eq. 13):
 *   f(W) = 1/2 tr((I-W)^T Sigma (I-W)) + (rho/2) h(W)^2 + alpha h(W),
 *   grad = Sigma (W - I) + (rho h + alpha) grad h.
 * The l1 term is added by OWL-QN (orthantwise_c = lambda). */
static lbfgsfloatval_t nt_eval(void *inst, const lbfgsfloatval_t *x, lbfgsfloatval_t *g,
                               const int n, const lbfgsfloatval_t step)
{
    struct nt_ctx *c = inst;
    size_t d = c->d;
    double loss = 0.0, h = 0.0, coef;

    (void)n;
    (void)step;
    c->evals++;
    for (size_t k = 0; k < d * d; k++)
        c->m[k] = -x[k];
    for (size_t i = 0; i < d; i++)
        c->m[i * d + i] = 1.0; /* diagonal held at 0 in W */
    for (size_t k = 0; k < d * d; k++)
        c->w[k] = x[k];
    for (size_t i = 0; i < d; i++)
        c->w[i * d + i] = 0.0;
    /* T = Sigma M, M = I - W */
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)d, (int)d, (int)d, 1.0, c->sigma,
                (int)d, c->m, (int)d, 0.0, c->t, (int)d);
    for (size_t k = 0; k < d * d; k++)
        loss += c->m[k] * c->t[k];
    loss *= 0.5;
    if (lrn_acyclic_h(c->ws, c->w, &h, c->gh) != CORE_OK || !isfinite(h)) {
        c->numeric_fail = 1;
        for (size_t k = 0; k < d * d; k++)
            g[k] = 0.0;
        return INFINITY;
    }
    coef = c->rho * h + c->alpha;
    for (size_t k = 0; k < d * d; k++)
        g[k] = -c->t[k] + coef * c->gh[k];
    for (size_t i = 0; i < d; i++)
        g[i * d + i] = 0.0;
    return loss + 0.5 * c->rho * h * h + c->alpha * h;
}

static core_err nt_check(size_t d, const double *sigma, const struct lrn_notears_opts *o)
{
    if (d == 0 || !sigma || !o || !(o->lambda >= 0.0) || !(o->w_threshold >= 0.0) ||
        !(o->h_tol > 0.0) || !(o->rho_max > 1.0) || !(o->h_shrink > 0.0 && o->h_shrink <= 1.0) ||
        o->max_outer == 0)
        return CORE_EINVAL;
    if (d > NOTEARS_MAX_D)
        return CORE_ETOOBIG;
    for (size_t k = 0; k < d * d; k++)
        if (!isfinite(sigma[k]))
            return CORE_EINVAL;
    return CORE_OK;
}

/* One inner solve from x (in/out); returns h of the result in *h. */
static core_err nt_inner(struct nt_ctx *c, const struct lrn_notears_opts *o, lbfgsfloatval_t *x,
                         double *h)
{
    lbfgs_parameter_t par;
    lbfgsfloatval_t fx;
    int n = (int)(c->d * c->d);

    lbfgs_parameter_init(&par);
    par.orthantwise_c = o->lambda;
    par.orthantwise_start = 0;
    par.orthantwise_end = n;
    par.linesearch = LBFGS_LINESEARCH_BACKTRACKING;
    par.max_iterations = (int)o->lbfgs_max_iter;
    par.epsilon = 1e-6;
    par.delta = 1e-10;
    par.past = 3;
    if (o->lambda == 0.0)
        par.orthantwise_c = 0.0;
    (void)lbfgs(n, x, &fx, nt_eval, NULL, c, &par); /* any stop code: keep the iterate */
    if (c->numeric_fail)
        return CORE_ENUMERIC;
    for (size_t k = 0; k < c->d * c->d; k++)
        c->w[k] = x[k];
    for (size_t i = 0; i < c->d; i++)
        c->w[i * c->d + i] = 0.0;
    if (lrn_acyclic_h(c->ws, c->w, h, NULL) != CORE_OK || !isfinite(*h))
        return CORE_ENUMERIC;
    return CORE_OK;
}

/* Zheng et al. (2018) Algorithm 1 (dual ascent with progressive rho). */
static core_err nt_loop(struct nt_ctx *c, const struct lrn_notears_opts *o, lbfgsfloatval_t *x,
                        lbfgsfloatval_t *xn, struct lrn_notears_result *r)
{
    size_t n = c->d * c->d;
    double h = INFINITY, h_new = INFINITY;
    core_err rc = CORE_OK;

    for (r->outer = 0; r->outer < o->max_outer;) {
        while (c->rho < o->rho_max) {
            memcpy(xn, x, n * sizeof(*x));
            rc = nt_inner(c, o, xn, &h_new);
            r->inner_solves++;
            if (rc != CORE_OK)
                return rc;
            if (h_new > o->h_shrink * h)
                c->rho *= 10.0;
            else
                break;
        }
        memcpy(x, xn, n * sizeof(*x));
        h = h_new;
        c->alpha += c->rho * h;
        r->outer++;
        if (h <= o->h_tol || c->rho >= o->rho_max)
            break;
    }
    r->h_raw = h;
    return CORE_OK;
}

core_err lrn_notears_run(size_t d, const double *sigma, const struct lrn_notears_opts *o, double *W,
                         struct lrn_notears_result *res)
{
    struct nt_ctx c = {0};
    struct lrn_notears_result r = {0};
    lbfgsfloatval_t *x = NULL, *xn = NULL;
    void *pw = NULL;
    core_err rc = nt_check(d, sigma, o);

    if (rc != CORE_OK)
        return rc;
    rc = lrn_acyclic_ws_new(d, &c.ws);
    if (rc != CORE_OK)
        goto out;
    c.d = d;
    c.sigma = sigma;
    c.rho = 1.0;
    c.w = core_xcalloc(4 * d * d, sizeof(double));
    c.m = c.w + d * d;
    c.t = c.m + d * d;
    c.gh = c.t + d * d;
    x = lbfgs_malloc((int)(d * d));
    xn = lbfgs_malloc((int)(d * d));
    pw = core_xmalloc(lrn_dag_prune_work_len(d));
    if (!x || !xn) {
        rc = CORE_ENOMEM;
        goto out;
    }
    memset(x, 0, d * d * sizeof(*x));
    rc = nt_loop(&c, o, x, xn, &r);
    if (rc != CORE_OK)
        goto out;
    for (size_t k = 0; k < d * d; k++)
        W[k] = x[k];
    rc = lrn_dag_prune(d, W, o->w_threshold, pw, NULL);
    for (size_t k = 0; rc == CORE_OK && k < d * d; k++)
        r.edges += (W[k] != 0.0);
    r.evals = c.evals;
    if (res)
        *res = r;
out:
    lbfgs_free(x);
    lbfgs_free(xn);
    free(pw);
    free(c.w);
    lrn_acyclic_ws_free(c.ws);
    return rc;
}
