/* dp_exact_internal.h - core-internal: the CKS20 Bernoulli(exp(-x)) algebra written against
 * an abstract Bernoulli(num/den) oracle, so tests can replace the oracle by an exhaustive
 * enumerator (NOISE.md §6 T1.5) and check the num/den/k bookkeeping exactly.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef CORE_DP_EXACT_INTERNAL_H
#define CORE_DP_EXACT_INTERNAL_H

#include <stdbool.h>

#include "core/dp_rng.h"
#include "core/err.h"

struct core__bern_src {
    /* Bernoulli(num/den) with 0 <= num <= den, den >= 1. */
    core_err (*bern_rat)(void *ctx, core_u128 num, core_u128 den, bool *out);
    void *ctx;
};

/* Bernoulli(exp(-num/den)) through src (same contract as core_dp_bern_exp). */
CORE_MUST_CHECK core_err core__dp_bern_exp_src(const struct core__bern_src *src, core_u128 num,
                                               core_u128 den, bool *out);

#endif /* CORE_DP_EXACT_INTERNAL_H */
