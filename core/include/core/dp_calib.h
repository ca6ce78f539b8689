/* core/dp_calib.h - analytic Gaussian mechanism calibration (Balle & Wang 2018, Thm. 8;
 * NOISE.md §4.7), conservative: the returned sigma always satisfies delta(sigma) <= delta.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Thread-safety: pure functions (GSL special functions, no global state beyond GSL's error
 * handler, which callers switch off with gsl_set_error_handler_off()).
 */
#ifndef CORE_DP_CALIB_H
#define CORE_DP_CALIB_H

#include "core/err.h"

/* delta(eps, sigma) of the Gaussian mechanism with L2 sensitivity l2 (Balle-Wang Thm. 8):
 * Phi(l2/(2 sigma) - eps sigma/l2) - e^eps Phi(-l2/(2 sigma) - eps sigma/l2), the second
 * term computed in log space (no overflow for eps up to 1e300).
 *   eps > 0, sigma > 0, l2 > 0, all finite. out in [0, 1].
 * Returns CORE_OK, CORE_EINVAL. */
CORE_MUST_CHECK core_err core_dp_agm_delta(double eps, double sigma, double l2, double *out);

/* Smallest sigma (up to relative 2^-40, then times (1 + 2^-30)) with delta(sigma) <= delta,
 * by doubling + bisection on sigma/l2, post-checked.
 *   eps > 0 finite; 0 < delta < 1; l2 > 0 finite.
 * Returns CORE_OK, CORE_EINVAL, CORE_ENUMERIC (post-check failed; no output). */
CORE_MUST_CHECK core_err core_dp_agm_sigma(double eps, double delta, double l2, double *out);

#endif /* CORE_DP_CALIB_H */
