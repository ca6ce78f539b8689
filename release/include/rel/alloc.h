/* rel/alloc.h - utility-guided budget allocation (paper Algorithm 3, Sec. 4.4,
 * Proposition 2).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Pure code (no I/O, no allocation). Thread-safety: reentrant.
 */
#ifndef REL_ALLOC_H
#define REL_ALLOC_H

#include <stddef.h>

#include "core/err.h"

/* Table 5 defaults. */
#define REL_BETA_R_DEFAULT 1.0
#define REL_BETA_G_DEFAULT 1.0
#define REL_BETA_U_DEFAULT 0.7
#define REL_ETA_DEFAULT    1e-8

struct rel_alloc_params {
    double beta_r;  /* exposure exponent, >= 0 */
    double beta_g;  /* certified-scale exponent, >= 0 */
    double beta_u;  /* utility exponent, >= 0 */
    double eta;     /* numerical stabilizer, > 0 */
    double eps_min; /* per-coordinate floor; <= 0 selects the Table 5 default
                       ε_rel / (100 d'), d' = number of noisy coordinates */
};

/* Algorithm 3. Coordinates with s_k == 0 (zero certified sensitivity and zero empirical
 * influence) are released deterministically (Theorem 1): they get ε_k = 0 and do not
 * count in d'. For the d' noisy coordinates:
 *   p_k = (r_k + η)^β_r (s_k + η)^β_g,  u_k = (μ_k + η)^β_u,  h_k = u_k / (p_k + η),
 *   ε_k = ε_min + (ε_rel − d' ε_min) h_k / Σ_j h_j.
 * Proposition 2: ε_k >= ε_min and Σ ε_k = ε_rel; the sum is evaluated in index order and,
 * if rounding pushed it above ε_rel, the largest ε_k is lowered until Σ ε_k <= ε_rel
 * holds exactly in double arithmetic (never above the budget).
 *   r       borrowed, d coordinate exposures r̄_k^(q) ∈ [0,1] (Sec. 4.4).
 *   s       borrowed, d scales s_k >= 0.
 *   mu      borrowed, d utilities μ_k ∈ [0,1].
 *   eps     out, caller-allocated d.
 *   eps_min_used  out, optional: the floor actually used.
 * Returns CORE_OK; CORE_EINVAL when ε_rel is not finite and > 0, an input is out of range
 * or NaN, a parameter is out of range, every s_k is 0, or the refusal rule of Algorithm 3
 * step 1 fails: 0 < ε_min < ε_rel / d'. */
CORE_MUST_CHECK core_err rel_alloc(size_t d, double eps_rel, const double *r, const double *s,
                                   const double *mu, const struct rel_alloc_params *p, double *eps,
                                   double *eps_min_used);

/* Uniform allocation (Lap-DP): ε_k = ε_rel / d' for the d' coordinates with s_k > 0, 0 for
 * the others; same rounding rule and errors as rel_alloc. */
CORE_MUST_CHECK core_err rel_alloc_uniform(size_t d, double eps_rel, const double *s, double *eps);

#endif /* REL_ALLOC_H */
