/* rel/mech.h - the release mechanisms of paper Table 4 and the Table 11 ablations, and the
 * Algorithm 4 preconditions checked before any noise is drawn.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Pure code (no I/O, no allocation). Thread-safety: immutable table; reentrant functions.
 */
#ifndef REL_MECH_H
#define REL_MECH_H

#include <stddef.h>

#include "core/err.h"

enum rel_mech_id {
    REL_MECH_LAP = 0,        /* Lap-DP: s_k = B_k, uniform ε_k */
    REL_MECH_GAUSS,          /* Gau-DP: s_k = B_k, analytic Gaussian (ε_rel, δ), l2 cert. */
    REL_MECH_ADA,            /* Ada-DP: s_k = B_k, Algorithm 3 with β_r = 0 */
    REL_MECH_RISK,           /* Risk-DP: s_k = B_k, Algorithm 3 with β_u = 0 */
    REL_MECH_GCDP,           /* GC-DP: s_k = max(B_k, ξ̂_k), Algorithm 3 */
    REL_MECH_GCDP_NOLAG,     /* Table 11 w/o Lag: GC-DP on a θ calibrated with L = 0 */
    REL_MECH_GCDP_NOCOMP,    /* Table 11 w/o Comp.: GC-DP on a θ calibrated with τ_c >= 1 */
    REL_MECH_GCDP_NOUTILITY, /* Table 11 w/o Utility: GC-DP with β_u = 0 */
    REL_MECH_GCDP_NORISK,    /* Table 11 w/o Risk: GC-DP with β_r = 0 */
    REL_MECH_N_
};

struct rel_mech {
    enum rel_mech_id id;
    const char *name;      /* configuration / CLI name, e.g. "gcdp-nolag" */
    int gaussian;          /* 1: analytic Gaussian; 0: Laplace (pure ε) */
    int uniform;           /* 1: ε_k = ε_rel / d'; 0: Algorithm 3 */
    int use_xi;            /* 1: s_k = max(B_k, ξ̂_k); 0: s_k = B_k */
    int zero_beta_r;       /* Algorithm 3 with β_r forced to 0 */
    int zero_beta_u;       /* Algorithm 3 with β_u forced to 0 */
    int need_theta_nolag;  /* θ must have been calibrated with L = 0 */
    int need_theta_nocomp; /* θ must have been calibrated with τ_c >= 1 (no compression) */
    const char *summary;
};

/* Mechanism by name, or NULL. */
const struct rel_mech *rel_mech_find(const char *name);
/* Mechanism by id (id < REL_MECH_N_), never NULL for a valid id. */
const struct rel_mech *rel_mech_get(enum rel_mech_id id);
/* "lap|gauss|ada|risk|gcdp|..." for help and config choices. */
#define REL_MECH_CHOICES "lap|gauss|ada|risk|gcdp|gcdp-nolag|gcdp-nocomp|gcdp-noutility|gcdp-norisk"

/* Why Algorithm 4 refused. */
enum rel_refusal {
    REL_REFUSE_NONE = 0,
    REL_REFUSE_EPS_REL,      /* ε_rel not finite and > 0 */
    REL_REFUSE_BOUND,        /* B_k negative / not finite, or below the certified bound */
    REL_REFUSE_SCALE,        /* s_k < B_k (or NaN / infinite) */
    REL_REFUSE_EPS,          /* s_k > 0 but ε_k not finite and > 0 */
    REL_REFUSE_EPS_CONSTANT, /* s_k == 0 (deterministic) but ε_k != 0 */
    REL_REFUSE_NOISE_SCALE,  /* b_k = s_k / ε_k not finite */
    REL_REFUSE_BUDGET        /* Σ ε_k > ε_rel */
};
const char *rel_refusal_str(enum rel_refusal r); /* never NULL */

/* Algorithm 4 step 1: verify s_k >= B_k >= B_cert_k, ε_k > 0 for every noisy coordinate
 * (s_k > 0), ε_k == 0 for deterministic ones (s_k == 0, Theorem 1), b_k = s_k/ε_k finite,
 * and Σ_k ε_k <= ε_rel (summed in index order, the order rel_alloc uses). Every comparison
 * is written so that NaN fails closed.
 *   B_cert  optional (NULL: skipped): the certified bounds recomputed by Algorithm 2 from the
 *           fixed configuration; B_k must not be below them.
 *   bad_k   out, optional: the first offending coordinate (d for budget / ε_rel refusals).
 *   why     out, optional: the reason.
 * Returns CORE_OK, or CORE_EINVARIANT (release refused), CORE_EINVAL (d == 0). */
CORE_MUST_CHECK core_err rel_release_check(size_t d, const double *B, const double *B_cert,
                                           const double *s, const double *eps, double eps_rel,
                                           size_t *bad_k, enum rel_refusal *why);

#endif /* REL_MECH_H */
