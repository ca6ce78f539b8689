/* xi.c - a second reading of the empirical influence ξ̂ (gc-dp Sec. 4.3), for the
 * "explain, not hide" analysis in docs/evaluation.md.
 *
 * Literal reading (calibrate's cal_xi_hat, the default): δ_jk = |Π_k(q_k(D)) −
 * Π_k(q_k(M_j(D)))|. With one released coordinate per node (a(k) = {v_k}), masking a
 * neighbour j ≠ k leaves q_k unchanged, so δ_jk = 0 and the graph term γ r̄_i Σ W~_ij δ_jk
 * vanishes: γ, τ_c and the "w/o Comp." ablation cannot change ξ̂.
 * Neighbour reading (this file): δ_jk for j ∉ a(k) is read as neighbour j's own influence
 * δ_j = δ_jj (masking j on the coordinate made of j alone), so a coordinate's score grows
 * with the influence of its compressed graph neighbourhood:
 *   ξ̂_k = min{g_max, κ max_{i∈a(k)} [δ_ik + γ r̄_i Σ_{j∈C_k} W~_ij δ_j]}.
 * Everything else (S, C_k, W~, r̄, κ, g_max) is computed with calibrate's own functions. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cal/graph.h"
#include "cal/influence.h"
#include "core/lagcorr.h"
#include "core/mem.h"
#include "eval/eval.h"

/* Buffers of one eval_xi_neighbour call (m nodes, the theta's edges). */
struct xi_ws {
    double *work, *rho0, *rmax; /* lagged correlations, then S in rho0 */
    double *deg, *agg, *own;    /* weighted degree, node means, δ_j */
    size_t *ptr;                /* adjacency (CSR) over ptr/nbr/wt */
    uint32_t *nbr, *ck;         /* ck: the compressed set of one coordinate */
    double *wt;
    void *cw;
    struct cal_adj adj;
};

static void xi_ws_init(struct xi_ws *w, const struct cal_theta *t, size_t n)
{
    size_t m = t->n_nodes;

    w->work = core_xmalloc(core_lagcorr_work_len(n, m, t->L) * sizeof(double));
    w->rho0 = core_xcalloc(m * m, sizeof(double));
    w->rmax = core_xcalloc(m * m, sizeof(double));
    w->deg = core_xcalloc(m, sizeof(double));
    w->agg = core_xcalloc(m, sizeof(double));
    w->own = core_xcalloc(m, sizeof(double));
    w->ptr = core_xcalloc(m + 1, sizeof(size_t));
    w->nbr = core_xcalloc(2 * t->n_edges + 1, sizeof(uint32_t));
    w->wt = core_xcalloc(2 * t->n_edges + 1, sizeof(double));
    w->ck = core_xcalloc(m, sizeof(uint32_t));
    w->cw = core_xmalloc(cal_xi_work_len(m));
    w->adj = (struct cal_adj){m, w->ptr, w->nbr, w->wt};
}

static void xi_ws_free(struct xi_ws *w)
{
    free(w->work);
    free(w->rho0);
    free(w->rmax);
    free(w->deg);
    free(w->agg);
    free(w->own);
    free(w->ptr);
    free(w->nbr);
    free(w->wt);
    free(w->ck);
    free(w->cw);
}

/* S of x (Sec. 4.1), the theta graph's adjacency, and δ_j: node j masked on its own mean
 * coordinate. */
static core_err xi_prepare(const struct cal_theta *t, size_t n, const double *x, double mask,
                           struct xi_ws *w)
{
    size_t m = t->n_nodes;
    core_err rc;

    rc = core_lagcorr_blas(n, m, x, m, t->L, w->rho0, w->rmax, w->work);
    if (rc == CORE_OK)
        rc = cal_score(m, t->lambda, w->rho0, w->rmax, w->rho0); /* S (Sec. 4.1) */
    if (rc != CORE_OK)
        return rc;
    for (size_t e = 0; e < t->n_edges; e++) {
        w->deg[t->edges[e].i] += t->edges[e].w;
        w->deg[t->edges[e].j] += t->edges[e].w;
    }
    if ((rc = cal_adj_build(m, t->edges, t->n_edges, w->deg, w->ptr, w->nbr, w->wt)) != CORE_OK)
        return rc;
    cal_node_means(n, m, x, m, w->agg);
    for (size_t j = 0; j < m; j++)
        w->own[j] = fabs(fmin(1.0, fmax(0.0, w->agg[j])) - mask);
    return CORE_OK;
}

/* Influence of node i (position a of coordinate c): its own δ, plus γ r_i times the weighted
 * δ of its neighbours in the compressed set ck[0..nck). */
static double node_xi(const struct cal_theta *t, const struct xi_ws *w, const struct cal_coord *c,
                      size_t a, size_t nck)
{
    uint32_t i = c->nodes[a];
    double inner = 0.0;

    for (size_t q = 0; q < nck; q++)
        for (size_t p = w->ptr[i]; p < w->ptr[i + 1]; p++)
            if (w->nbr[p] == w->ck[q])
                inner += w->wt[p] * w->own[w->ck[q]];
    return (c->n == 1 ? w->own[i] : fabs(c->coef[a]) * w->own[i]) +
           t->gamma * t->exposure[i] * inner;
}

/* ξ of coordinate k: κ times the largest node influence, capped at g_max. */
static core_err coord_xi(const struct cal_theta *t, struct xi_ws *w, size_t k, double *out)
{
    const struct cal_coord *c = &t->coords[k];
    size_t nck = 0;
    double best = 0.0;
    core_err rc;

    rc = cal_compress_set(&w->adj, w->rho0, t->exposure, t->tau_c, c, w->ck, &nck, w->cw);
    for (size_t a = 0; rc == CORE_OK && a < c->n; a++) {
        double v = node_xi(t, w, c, a, nck);
        best = v > best ? v : best;
    }
    best *= t->kappa;
    if (rc == CORE_OK && !isfinite(best))
        rc = CORE_ENUMERIC;
    if (rc == CORE_OK)
        *out = best < t->g_max ? best : t->g_max;
    return rc;
}

core_err eval_xi_neighbour(const struct cal_theta *t, size_t n, const double *x, double mask,
                           double *xi)
{
    struct xi_ws w;
    core_err rc;

    xi_ws_init(&w, t, n);
    rc = xi_prepare(t, n, x, mask, &w);
    for (size_t k = 0; rc == CORE_OK && k < t->d; k++)
        rc = coord_xi(t, &w, k, &xi[k]);
    xi_ws_free(&w);
    return rc;
}
