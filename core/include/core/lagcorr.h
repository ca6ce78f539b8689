/* core/lagcorr.h - the kernel of Algorithm 1 of the GC-DP paper (Sec. 4.1): lagged absolute
 * Pearson correlations for lags -L..L. One owner for every stage that needs the lag-aware
 * correlation summary: calibrate (θ's scores), eval, and release's drift monitor (which may
 * include only calibrate's θ header, so the kernel lives here).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Pure numerical code (STYLE P9): arrays, sizes, leading dimensions and caller-supplied
 * workspace; no allocation, no I/O. Matrices are row-major.
 *
 * Thread-safety: reentrant. The BLAS path uses OpenBLAS, whose thread count is a process
 * setting (openblas_set_num_threads, chosen by the caller).
 */
#ifndef CORE_LAGCORR_H
#define CORE_LAGCORR_H

#include <stddef.h>

#include "core/err.h"

#define CORE_LAGCORR_MAX_LAG 64 /* L cap (θ's CAL_MAX_LAG is the same cap) */

/* Doubles of workspace core_lagcorr_blas / _f32 / _direct need for n rows, m nodes:
 * n*m + m*m + 6*m*(L+1). */
size_t core_lagcorr_work_len(size_t n, size_t m, int max_lag);

/* Lagged absolute Pearson correlations (Sec. 4.1) for lags -L..L, computed as (L+1) dense
 * products X[0:n-l]^T X[l:n] of the globally standardized matrix (OpenBLAS dgemm), with exact
 * per-window mean/variance corrections, so each rho^(l) is the Pearson correlation of the
 * aligned pairs (x_i[t], x_j[t+l]), t = 0..n-l-1.
 * rho_ij^(l) = 0 when fewer than two aligned pairs remain (n - |l| < 2) or either aligned
 * series is constant (exact test: all values equal; a floating-point variance is never
 * compared with 0). Results are clamped to [0, 1] (rounding can exceed 1 by ulps).
 *   x       n x m matrix, leading dimension ld >= m; borrowed.
 *   rho0    out: m x m |rho^(0)| (symmetric, zero diagonal).
 *   rhomax  out: m x m max_{|l|<=L} |rho^(l)| (symmetric, zero diagonal).
 *   work    core_lagcorr_work_len(n, m, max_lag) doubles.
 * Returns CORE_OK, CORE_EINVAL (sizes; m, n > INT_MAX; max_lag out of
 * [0, CORE_LAGCORR_MAX_LAG]), CORE_ENUMERIC (a non-finite result). */
CORE_MUST_CHECK core_err core_lagcorr_blas(size_t n, size_t m, const double *x, size_t ld,
                                           int max_lag, double *rho0, double *rhomax, double *work);

/* The float32 variant: same contract, products in ssyrk/sgemm on a float copy; the window
 * sums and corrections stay in double. work: core_lagcorr_work_len doubles; fwork: n*m + m*m
 * floats. Accuracy is measured, not assumed (bench and docs/calibrate.md). */
CORE_MUST_CHECK core_err core_lagcorr_blas_f32(size_t n, size_t m, const double *x, size_t ld,
                                               int max_lag, double *rho0, double *rhomax,
                                               double *work, float *fwork);

/* Direct reference: two-pass Pearson per pair and lag, straight from the definition
 * (O(m^2 (2L+1) n)); same outputs and rules as core_lagcorr_blas. For tests and the bench.
 * work: core_lagcorr_work_len doubles (a column-major copy of x, for contiguous access). */
CORE_MUST_CHECK core_err core_lagcorr_direct(size_t n, size_t m, const double *x, size_t ld,
                                             int max_lag, double *rho0, double *rhomax,
                                             double *work);

#endif /* CORE_LAGCORR_H */
