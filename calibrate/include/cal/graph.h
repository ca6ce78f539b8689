/* cal/graph.h - Algorithm 1 of the GC-DP paper (Sec. 4.1): scores from core's lagged |Pearson|,
 * thresholded degree-capped graph, normalized adjacency and exposure.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Pure numerical code (STYLE P9): arrays, sizes, leading dimensions and caller-supplied
 * workspace; no allocation, no I/O. Matrices are row-major.
 *
 * Thread-safety: reentrant. The BLAS path uses OpenBLAS, whose thread count is a process
 * setting (openblas_set_num_threads, chosen by the caller).
 */
#ifndef CAL_GRAPH_H
#define CAL_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "cal/theta.h"
#include "core/err.h"

/* Algorithm 1 step 1: fixed bounded normalization, in place:
 * x[t*ld + m] <- clamp((x - lo[m]) / (hi[m] - lo[m]), 0, 1). lo/hi are public, fixed
 * (never learned from the data), lo[m] < hi[m] finite. Non-finite x -> CORE_EINVAL
 * (the matrix is then partially normalized and must be discarded).
 * Returns CORE_OK or CORE_EINVAL. */
CORE_MUST_CHECK core_err cal_normalize(size_t n, size_t m, double *x, size_t ld, const double *lo,
                                       const double *hi);

/* The lagged |Pearson| kernel (step 2) is core's: core/lagcorr.h (core_lagcorr_blas,
 * _f32, _direct, core_lagcorr_work_len). */

/* S_ij = lambda rho0_ij + (1 - lambda) rhomax_ij (Sec. 4.1), m x m, S may alias rho0. */
CORE_MUST_CHECK core_err cal_score(size_t m, double lambda, const double *rho0,
                                   const double *rhomax, double *s);

/* Algorithm 1 steps 3-4: candidates {i<j : S_ij >= tau} sorted by decreasing S_ij, ties by
 * lexicographic (i, j); accept {i, j} only if deg(i) < K and deg(j) < K.
 *   s         m x m scores (only the upper triangle is read); values must be in [0, 1].
 *   edges     out: accepted edges in acceptance order, capacity cap_edges >= m*K/2 + 1.
 *   n_edges   out: how many.
 *   work      cal_graph_work_len(m) bytes, aligned for struct cal_edge.
 * Returns CORE_OK, CORE_EINVAL (S outside [0,1] or NaN, tau/K out of range, cap too small). */
size_t cal_graph_work_len(size_t m);
CORE_MUST_CHECK core_err cal_graph_build(size_t m, const double *s, double tau, int k_cap,
                                         struct cal_edge *edges, size_t cap_edges, size_t *n_edges,
                                         void *work);

/* Algorithm 1 steps 5-8 from an edge list: d_m = sum_j w_mj, W~ = D^-1/2 W D^-1/2 (zero
 * inverse degree for isolated nodes), r_m = alpha d_m + (1 - alpha) sum_j W~_mj d_j, then
 * min-max to [0,1] (all equal -> all 0).
 *   deg    out: m weighted degrees d_m (may be NULL).
 *   r_bar  out: m normalized exposures.
 *   work   m doubles (may be NULL when deg != NULL: deg is then used as the work). */
CORE_MUST_CHECK core_err cal_exposure(size_t m, const struct cal_edge *edges, size_t n_edges,
                                      double alpha, double *deg, double *r_bar, double *work);

/* W~_ij for an accepted edge (step 5), given the weighted degrees. */
double cal_wtilde(const double *deg, const struct cal_edge *e);

#endif /* CAL_GRAPH_H */
