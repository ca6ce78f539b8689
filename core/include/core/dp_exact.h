/* core/dp_exact.h - exact integer samplers (Canonne, Kamath, Steinke 2020 = CKS20;
 * NOISE.md §4.4). No floating point anywhere: parameters are exact integers/rationals,
 * intermediate arithmetic is 128-bit and every overflow is an error (fail closed).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Thread-safety: pure functions of their arguments and the rng; thread-safe if the rng is.
 * On any error (CORE_EINVAL, CORE_ERNG, CORE_ENUMERIC) *out is left untouched: no output.
 */
#ifndef CORE_DP_EXACT_H
#define CORE_DP_EXACT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/dp_rng.h"
#include "core/err.h"

/* Largest magnitude any integer sampler returns; beyond it the draw fails (CORE_ENUMERIC).
 * Reaching it has probability < exp(-2^20) for every parameter we accept. */
#define CORE_DP_MAX_NOISE ((int64_t)1 << 61)

/* Bernoulli(num/den), 0 <= num <= den, 1 <= den < 2^100, exactly: the bits of a uniform
 * U in [0,1) are compared lazily with the binary expansion of num/den (2 bits expected).
 * Returns CORE_OK, CORE_EINVAL (num > den, den == 0 or too large), CORE_ERNG. */
CORE_MUST_CHECK core_err core_dp_bern_rat(const struct core_rng *rng, core_u128 num, core_u128 den,
                                          bool *out);

/* Bernoulli(exp(-num/den)), num >= 0, 1 <= den < 2^100 (CKS20 Alg. 1, §4.4 items 2-3).
 * Returns CORE_OK, CORE_EINVAL, CORE_ENUMERIC (k*den overflow; probability < 1/(2^27)!),
 * CORE_ERNG. */
CORE_MUST_CHECK core_err core_dp_bern_exp(const struct core_rng *rng, core_u128 num, core_u128 den,
                                          bool *out);

/* Geometric: P(V = v) = (1 - e^-1) e^-v, v >= 0 (§4.4 item 4). */
CORE_MUST_CHECK core_err core_dp_geom_e1(const struct core_rng *rng, uint64_t *out);

/* Discrete Laplace with integer scale t >= 1: P(k) proportional to exp(-|k|/t)
 * (CKS20 Alg. 2, §4.4 item 5). Requires t <= 2^42.
 * Returns CORE_OK, CORE_EINVAL (t == 0 or too large), CORE_ENUMERIC (|k| > 2^61), CORE_ERNG. */
CORE_MUST_CHECK core_err core_dp_dlap(const struct core_rng *rng, uint64_t t, int64_t *out);

/* Discrete Gaussian with integer variance parameter S = sigma^2 >= 1:
 * P(k) proportional to exp(-k^2 / (2S)) (CKS20 Alg. 3, §4.4 item 6). Requires S <= 2^44
 * (sigma <= 2^22, enough for the sigma/g in [2^20, 2^21] of §4.6), so every product fits.
 * Returns CORE_OK, CORE_EINVAL, CORE_ENUMERIC (|k| > 2^40 or 128-bit overflow), CORE_ERNG. */
CORE_MUST_CHECK core_err core_dp_dgauss(const struct core_rng *rng, uint64_t S, int64_t *out);

#endif /* CORE_DP_EXACT_H */
