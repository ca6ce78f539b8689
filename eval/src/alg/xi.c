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
#include "core/lagcorr.h"
#include "cal/influence.h"
#include "core/mem.h"
#include "eval/eval.h"

core_err eval_xi_neighbour(const struct cal_theta *t, size_t n, const double *x, double mask,
                           double *xi)
{
    size_t m = t->n_nodes, wl = core_lagcorr_work_len(n, m, t->L);
    double *work = core_xmalloc(wl * sizeof(double));
    double *rho0 = core_xcalloc(m * m, sizeof(double)), *rmax = core_xcalloc(m * m, sizeof(double));
    double *deg = core_xcalloc(m, sizeof(double)), *agg = core_xcalloc(m, sizeof(double));
    double *own = core_xcalloc(m, sizeof(double));
    size_t *ptr = core_xcalloc(m + 1, sizeof(size_t));
    uint32_t *nbr = core_xcalloc(2 * t->n_edges + 1, sizeof(uint32_t));
    double *wt = core_xcalloc(2 * t->n_edges + 1, sizeof(double));
    uint32_t *ck = core_xcalloc(m, sizeof(uint32_t));
    void *cw = core_xmalloc(cal_xi_work_len(m));
    struct cal_adj adj = {m, ptr, nbr, wt};
    core_err rc;

    rc = core_lagcorr_blas(n, m, x, m, t->L, rho0, rmax, work);
    if (rc == CORE_OK)
        rc = cal_score(m, t->lambda, rho0, rmax, rho0); /* S (Sec. 4.1) */
    for (size_t e = 0; rc == CORE_OK && e < t->n_edges; e++) {
        deg[t->edges[e].i] += t->edges[e].w;
        deg[t->edges[e].j] += t->edges[e].w;
    }
    if (rc == CORE_OK)
        rc = cal_adj_build(m, t->edges, t->n_edges, deg, ptr, nbr, wt);
    if (rc == CORE_OK) {
        cal_node_means(n, m, x, m, agg);
        for (size_t j = 0; j < m; j++) /* δ_j: node j masked on its own mean coordinate */
            own[j] = fabs(fmin(1.0, fmax(0.0, agg[j])) - mask);
    }
    for (size_t k = 0; rc == CORE_OK && k < t->d; k++) {
        const struct cal_coord *c = &t->coords[k];
        size_t nck = 0;
        double best = 0.0;
        rc = cal_compress_set(&adj, rho0, t->exposure, t->tau_c, c, ck, &nck, cw);
        for (size_t a = 0; rc == CORE_OK && a < c->n; a++) {
            uint32_t i = c->nodes[a];
            double inner = 0.0, v;
            for (size_t q = 0; q < nck; q++)
                for (size_t p = ptr[i]; p < ptr[i + 1]; p++)
                    if (nbr[p] == ck[q])
                        inner += wt[p] * own[ck[q]];
            v = (c->n == 1 ? own[i] : fabs(c->coef[a]) * own[i]) +
                t->gamma * t->exposure[i] * inner;
            best = v > best ? v : best;
        }
        best *= t->kappa;
        if (rc == CORE_OK && !isfinite(best))
            rc = CORE_ENUMERIC;
        if (rc == CORE_OK)
            xi[k] = best < t->g_max ? best : t->g_max;
    }
    free(work);
    free(rho0);
    free(rmax);
    free(deg);
    free(agg);
    free(own);
    free(ptr);
    free(nbr);
    free(wt);
    free(ck);
    free(cw);
    return rc;
}
