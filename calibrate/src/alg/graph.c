/* graph.c - Algorithm 1 steps 1 and 3-8 (gc-dp Sec. 4.1): normalization, scores,
 * thresholded greedy degree-capped graph, D^-1/2 W D^-1/2, exposure and its min-max. */
#include "cal/graph.h"

#include <math.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "core/lagcorr.h"

/* θ's L cap must be one the kernel (core/lagcorr.h) accepts. */
_Static_assert(CAL_MAX_LAG == CORE_LAGCORR_MAX_LAG, "CAL_MAX_LAG != CORE_LAGCORR_MAX_LAG");

/* Algorithm 1 step 1 (fixed bounded normalization with public bounds). */
core_err cal_normalize(size_t n, size_t m, double *x, size_t ld, const double *lo, const double *hi)
{
    if (ld < m)
        return CORE_EINVAL;
    for (size_t j = 0; j < m; j++)
        if (!isfinite(lo[j]) || !isfinite(hi[j]) || !(lo[j] < hi[j]))
            return CORE_EINVAL;
    for (size_t t = 0; t < n; t++) {
        for (size_t j = 0; j < m; j++) {
            double v = x[t * ld + j];
            if (!isfinite(v))
                return CORE_EINVAL;
            v = (v - lo[j]) / (hi[j] - lo[j]);
            x[t * ld + j] = v < 0.0 ? 0.0 : (v > 1.0 ? 1.0 : v);
        }
    }
    return CORE_OK;
}

/* Sec. 4.1: S_ij = lambda rho^(0)_ij + (1 - lambda) max_{|l|<=L} rho^(l)_ij. */
core_err cal_score(size_t m, double lambda, const double *rho0, const double *rhomax, double *s)
{
    if (!(lambda >= 0.0 && lambda <= 1.0))
        return CORE_EINVAL;
    for (size_t i = 0; i < m * m; i++) {
        double v = lambda * rho0[i] + (1.0 - lambda) * rhomax[i];
        if (!isfinite(v))
            return CORE_ENUMERIC;
        s[i] = v < 0.0 ? 0.0 : (v > 1.0 ? 1.0 : v);
    }
    for (size_t i = 0; i < m; i++)
        s[i * m + i] = 0.0;
    return CORE_OK;
}

size_t cal_graph_work_len(size_t m)
{
    size_t p = m * (m - (m > 0)) / 2;
    return p * sizeof(struct cal_edge) + m * sizeof(uint32_t) + alignof(struct cal_edge);
}

/* Decreasing S, then lexicographic (i, j) (Algorithm 1 step 3). */
static int cand_cmp(const void *a, const void *b)
{
    const struct cal_edge *x = a, *y = b;
    if (x->w != y->w)
        return x->w > y->w ? -1 : 1;
    if (x->i != y->i)
        return x->i < y->i ? -1 : 1;
    return (x->j > y->j) - (x->j < y->j);
}

/* Algorithm 1 steps 3-4. */
core_err cal_graph_build(size_t m, const double *s, double tau, int k_cap, struct cal_edge *edges,
                         size_t cap_edges, size_t *n_edges, void *work)
{
    struct cal_edge *cand = work;
    uint32_t *deg;
    size_t nc = 0, ne = 0, p = m * (m - (m > 0)) / 2;
    size_t need = (size_t)k_cap * m / 2 < p ? (size_t)k_cap * m / 2 : p;

    *n_edges = 0;
    if (!(tau >= 0.0 && tau <= 1.0) || k_cap < 1 || m > CAL_MAX_NODES || cap_edges < need)
        return CORE_EINVAL;
    deg = (uint32_t *)(void *)(cand + p);
    for (size_t i = 0; i < m; i++) {
        for (size_t j = i + 1; j < m; j++) {
            double v = s[i * m + j];
            if (!(v >= 0.0 && v <= 1.0))
                return CORE_EINVAL; /* NaN fails closed */
            if (v >= tau)
                cand[nc++] = (struct cal_edge){(uint32_t)i, (uint32_t)j, v};
        }
    }
    qsort(cand, nc, sizeof(*cand), cand_cmp);
    memset(deg, 0, m * sizeof(*deg));
    for (size_t c = 0; c < nc; c++) {
        const struct cal_edge *e = &cand[c];
        if (deg[e->i] < (uint32_t)k_cap && deg[e->j] < (uint32_t)k_cap) {
            if (ne >= cap_edges)
                return CORE_EINVAL; /* unreachable when cap_edges >= need */
            edges[ne++] = *e;
            deg[e->i]++;
            deg[e->j]++;
        }
    }
    *n_edges = ne;
    return CORE_OK;
}

/* Algorithm 1 step 5 for one edge: W~_ij = w_ij / sqrt(d_i d_j); 0 if either degree is 0. */
double cal_wtilde(const double *deg, const struct cal_edge *e)
{
    double di = deg[e->i], dj = deg[e->j];
    if (!(di > 0.0) || !(dj > 0.0))
        return 0.0;
    return e->w / sqrt(di * dj);
}

/* Algorithm 1 steps 5-8. */
core_err cal_exposure(size_t m, const struct cal_edge *edges, size_t n_edges, double alpha,
                      double *deg, double *r_bar, double *work)
{
    double *d = deg ? deg : work, lo, hi;

    if (!d || !(alpha >= 0.0 && alpha <= 1.0))
        return CORE_EINVAL;
    memset(d, 0, m * sizeof(*d));
    for (size_t e = 0; e < n_edges; e++) { /* step 6: d_m = sum_{j != m} w_mj */
        if (edges[e].i >= m || edges[e].j >= m || edges[e].i == edges[e].j)
            return CORE_EINVAL;
        d[edges[e].i] += edges[e].w;
        d[edges[e].j] += edges[e].w;
    }
    for (size_t i = 0; i < m; i++)
        r_bar[i] = alpha * d[i];
    for (size_t e = 0; e < n_edges; e++) { /* step 7: + (1 - alpha) sum_j W~_mj d_j */
        double wt = cal_wtilde(d, &edges[e]);
        r_bar[edges[e].i] += (1.0 - alpha) * wt * d[edges[e].j];
        r_bar[edges[e].j] += (1.0 - alpha) * wt * d[edges[e].i];
    }
    lo = hi = r_bar[0];
    for (size_t i = 0; i < m; i++) {
        if (!isfinite(r_bar[i]))
            return CORE_ENUMERIC;
        lo = r_bar[i] < lo ? r_bar[i] : lo;
        hi = r_bar[i] > hi ? r_bar[i] : hi;
    }
    for (size_t i = 0; i < m; i++) /* step 8: min-max; all equal -> 0 (Sec. 4.1) */
        r_bar[i] = hi > lo ? (r_bar[i] - lo) / (hi - lo) : 0.0;
    return CORE_OK;
}
