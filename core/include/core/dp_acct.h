/* core/dp_acct.h - privacy accounting math: pure-eps / zCDP / delta costs, conservative
 * (upward-rounded) composition and zCDP -> (eps, delta) conversion (NOISE.md §4.10).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Rounding: every sum or product that bounds privacy loss is rounded towards +inf
 * (round-to-nearest, then nextafter(+inf)); libm results get 4 ulps of slack. Every value
 * returned here is >= the exact value.
 * Thread-safety: pure functions.
 */
#ifndef CORE_DP_ACCT_H
#define CORE_DP_ACCT_H

#include <stdbool.h>

#include "core/err.h"

/* One charge. Every field >= 0 and finite; a mechanism fills what applies:
 *   eps    pure-DP epsilon (Laplace, EM, PF), or the eps of an (eps, delta) mechanism;
 *   rho    zCDP rho (discrete Gaussian; Laplace eps^2/2; EM eps^2/8; PF eps^2/2);
 *   delta  approximate-DP delta (AGM baseline, sampler failure events). */
struct core_dp_cost {
    double eps;
    double rho;
    double delta;
};

/* a + b rounded up (both >= 0 finite). */
double core_dp_add_up(double a, double b);

/* acc += c, field by field, rounded up (sequential composition). Returns CORE_OK or
 * CORE_EINVAL (a negative or non-finite field in c or acc; acc unchanged). */
CORE_MUST_CHECK core_err core_dp_cost_add(struct core_dp_cost *acc, const struct core_dp_cost *c);

/* a and b hold the same three values (==, field by field; not a byte comparison). */
bool core_dp_cost_same(const struct core_dp_cost *a, const struct core_dp_cost *b);

/* Parallel composition over disjoint units: acc = field-wise max(acc, c). Same returns. */
CORE_MUST_CHECK core_err core_dp_cost_max(struct core_dp_cost *acc, const struct core_dp_cost *c);

/* zCDP of an eps-DP Laplace release / PF selection: rho = eps^2 / 2, rounded up. */
CORE_MUST_CHECK core_err core_dp_rho_lap(double eps, double *rho);

/* zCDP of an eps-DP exponential mechanism (bounded range): rho = eps^2 / 8, rounded up. */
CORE_MUST_CHECK core_err core_dp_rho_em(double eps, double *rho);

/* rho-zCDP -> (eps, delta), simple bound eps = rho + 2 sqrt(rho ln(1/delta)), rounded up.
 *   rho >= 0 finite, 0 < delta < 1. Returns CORE_OK, CORE_EINVAL. */
CORE_MUST_CHECK core_err core_dp_zcdp_eps_simple(double rho, double delta, double *eps);

/* CKS20 Cor. 13: delta(eps) = min_{a>1} exp((a-1)(a rho - eps) + a ln(1-1/a)) / (a-1),
 * evaluated at the numerically optimal a, rounded up. rho >= 0, eps >= 0 finite. */
CORE_MUST_CHECK core_err core_dp_cdp_delta(double rho, double eps, double *delta);

/* rho-zCDP -> eps at target delta: min(CKS bound inverted by bisection (conservative side),
 * simple bound). 0 < delta < 1. Returns CORE_OK, CORE_EINVAL, CORE_ENUMERIC. */
CORE_MUST_CHECK core_err core_dp_zcdp_eps(double rho, double delta, double *eps);

/* Exact (eps, delta) of a composition of Gaussian mechanisms only, total rho: the single
 * Gaussian with mu = sqrt(2 rho) (NOISE.md §4.7 last paragraph); smallest eps with
 * agm_delta(eps, sigma = 1/mu, 1) <= delta, conservative. Not valid once any non-Gaussian
 * mechanism is composed in. rho > 0. Returns CORE_OK, CORE_EINVAL, CORE_ENUMERIC. */
CORE_MUST_CHECK core_err core_dp_gauss_eps(double rho, double delta, double *eps);

#endif /* CORE_DP_ACCT_H */
