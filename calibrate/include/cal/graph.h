/* cal/graph.h - Algorithm 1 of the GC-DP paper (Sec. 4.1): lagged |Pearson| scores,
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
CORE_MUST_CHECK core_err cal_normalize(size_t n, size_t m, double *x, size_t ld,
                                       const double *lo, const double *hi);

/* Doubles of workspace cal_lagcorr_blas / _f32 / _direct need for n rows, m nodes:
 * n*m + m*m + 6*m*(L+1). */
size_t cal_lagcorr_work_len(size_t n, size_t m, int max_lag);

/* Lagged absolute Pearson correlations (Sec. 4.1) for lags -L..L, computed as (L+1) dense
 * products X[0:n-l]^T X[l:n] of the globally standardized matrix (OpenBLAS dgemm), with exact
 * per-window mean/variance corrections, so each rho^(l) is the Pearson correlation of the
 * aligned pairs (x_i[t], x_j[t+l]), t = 0..n-l-1.
 * rho_ij^(l) = 0 when fewer than two aligned pairs remain (n - |l| < 2) or either aligned
 * series is constant (exact test: all values equal; a floating-point variance is never
 * compared with 0). Results are clamped to [0, 1] (rounding can exceed 1 by ulps).
 *   x       n x m normalized matrix, leading dimension ld >= m; borrowed.
 *   rho0    out: m x m |rho^(0)| (symmetric, zero diagonal).
 *   rhomax  out: m x m max_{|l|<=L} |rho^(l)| (symmetric, zero diagonal).
 *   work    cal_lagcorr_work_len(n, m, max_lag) doubles.
 * Returns CORE_OK, CORE_EINVAL (sizes; m, n > INT_MAX; max_lag out of [0, CAL_MAX_LAG]),
 * CORE_ENUMERIC (a non-finite result). */
CORE_MUST_CHECK core_err cal_lagcorr_blas(size_t n, size_t m, const double *x, size_t ld,
                                          int max_lag, double *rho0, double *rhomax,
                                          double *work);

/* The float32 variant: same contract, products in ssyrk/sgemm on a float copy; the window
 * sums and corrections stay in double. work: cal_lagcorr_work_len doubles; fwork: n*m + m*m
 * floats. Accuracy is measured, not assumed (bench and docs/calibrate.md). */
CORE_MUST_CHECK core_err cal_lagcorr_blas_f32(size_t n, size_t m, const double *x, size_t ld,
                                              int max_lag, double *rho0, double *rhomax,
                                              double *work, float *fwork);

/* Direct reference: two-pass Pearson per pair and lag, straight from the definition
 * (O(m^2 (2L+1) n)); same outputs and rules as cal_lagcorr_blas. For tests and the bench.
 * work: cal_lagcorr_work_len doubles (a column-major copy of x, for contiguous access). */
CORE_MUST_CHECK core_err cal_lagcorr_direct(size_t n, size_t m, const double *x, size_t ld,
                                            int max_lag, double *rho0, double *rhomax,
                                            double *work);

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
                                         struct cal_edge *edges, size_t cap_edges,
                                         size_t *n_edges, void *work);

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
