/* lrn/baselines.h - the comparison methods of the Fed-Sparse-BNSL paper (Section 6):
 * Fed-BNSL (Ng & Zhang 2022) as a local solver for the lrn/admm.h driver, its DP variant's
 * covariance privatisation (DP-Fed-BNSL, paper Section 6.3), and OLS personalisation
 * (paper Section 6.2 and Appendix B.2.2).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Layout: d x d matrices are row-major, W[i*d+j] is the weight of i -> j.
 * Pure algorithm code: no I/O; allocation only in the _new functions.
 * Thread-safety: one object per thread; functions without an object are reentrant.
 */
#ifndef LRN_BASELINES_H
#define LRN_BASELINES_H

#include <stddef.h>

#include "core/dp_rng.h"
#include "core/err.h"
#include "lrn/admm.h"

#define LRN_BASELINE_MAX_D 4096

/* ---- Fed-BNSL: dense closed-form local update ---- */

struct lrn_fedbnsl_local;

/* One dense solver per participant (paper eq. 10, Ng & Zhang 2022):
 *   B_p = (Sigma_p + rho2 I)^-1 (rho2 W - beta_p + Sigma_p)
 * solved by Cholesky (LAPACK dpotrf/dpotrs); the factor is recomputed only when rho2
 * changes (notears-admm grows rho2 every round).
 *   sigma  P pointers to d x d symmetric Sigma_p, borrowed, valid for the object's life.
 *   out    new; caller frees with lrn_fedbnsl_local_free().
 * Returns CORE_OK, CORE_EINVAL (d or P = 0, NULL sigma), CORE_ETOOBIG (d > cap). */
CORE_MUST_CHECK core_err lrn_fedbnsl_local_new(size_t d, size_t P, const double *const *sigma,
                                               struct lrn_fedbnsl_local **out);
void lrn_fedbnsl_local_free(struct lrn_fedbnsl_local *l); /* NULL-safe */
/* The ops view for lrn_admm_run(); valid while l lives. The solver returns CORE_ENUMERIC
 * when Sigma_p + rho2 I is not positive definite (e.g. rho2 = 0 with singular Sigma_p). */
struct lrn_local_ops lrn_fedbnsl_local_ops(struct lrn_fedbnsl_local *l);

/* Fed-BNSL driver options as in notears-admm (DESIGN.md section 6): dense wire,
 * rho1 = rho2 = 1e-3 multiplied by 1.75 and 1.25 every round up to 1e16, T = 100 rounds
 * (the paper's Table 1 cost 5.12 MB at d = 20, P = 8 is 2*T*P*d^2*8 bytes with T = 100),
 * threshold 0.3, cycle breaking on, no per-round sparsification of W, server L-BFGS up to
 * 200 iterations without the W-movement stop. Choice: Sigma_p is scaled by 1/P by the caller
 * (lrn_covariance(..., scale = P)) as notears-admm does. */
struct lrn_admm_opts lrn_fedbnsl_admm_opts_default(void);

/* ---- DP-Fed-BNSL: Gaussian mechanism on the covariance ---- */

/* Privatise a participant's covariance (paper Section 6.3, Wang 2018 style):
 * every row x of X is clipped to ||x||_2^2 <= b, Sigma = X^T X / n, and the d(d+1)/2 upper
 * triangle entries get discrete Gaussian noise calibrated by the analytic Gaussian
 * mechanism for (eps, delta) (core/dp_mech.h) with L2 sensitivity sqrt(2) b / n (replace-one
 * neighbours: ||x x^T - y y^T||_F^2 = ||x||^4 + ||y||^4 - 2 (x.y)^2 <= 2 b^2), then mirrored
 * and projected onto the PSD cone (eigenvalues floored at 0; post-processing).
 *   x        n x d row-major, borrowed.   b > 0 finite, n >= 2.
 *   rng      noise source (core_rng_os() in production), borrowed.
 *   sigma    out, d x d, symmetric.
 *   work     caller storage of d*(d+1)/2 doubles.
 * Returns CORE_OK, CORE_EINVAL (bad parameters, non-finite data), CORE_ERNG, CORE_ENUMERIC;
 * on failure sigma is zeroed and must not be used. */
CORE_MUST_CHECK core_err lrn_dp_covariance(size_t n, size_t d, const double *x, double b,
                                           double eps, double delta, const struct core_rng *rng,
                                           double *sigma, double *work);

/* ---- Personalisation (Appendix B.2.2) ---- */

/* Residual variance of node j regressed on the parents pa[0..k) (unpenalised OLS, normal
 * equations on sigma): Sigma_jj - Sigma_j,Pa Sigma_Pa,Pa^-1 Sigma_Pa,j; Sigma_jj for k = 0.
 * The least-squares score of a node, used by the final structure search (lrn/admm.h).
 *   sigma  d x d X^T X / n of the participant, borrowed.
 *   work   caller storage of k*k + k doubles.
 *   rv     out; +inf when Sigma[Pa,Pa] is not positive definite (a parent set to reject).
 * Returns CORE_OK, CORE_EINVAL (j or a parent out of range, j among its parents). */
CORE_MUST_CHECK core_err lrn_node_rss(size_t d, const double *sigma, size_t j, const size_t *pa,
                                      size_t k, double *work, double *rv);

/* OLS refit of the edge weights on a fixed DAG: for every node j with parents Pa(j) =
 * {i : dag[i*d+j] != 0}, b = Sigma[Pa,Pa]^-1 Sigma[Pa,j] (normal equations of regressing
 * X_j on X_Pa), written into out[Pa, j]; every other entry of out is 0.
 *   sigma  d x d X^T X / n of the participant, borrowed.
 *   work   caller storage of d*d + d doubles.
 * Returns CORE_OK, CORE_EINVAL, CORE_ENUMERIC (singular Sigma[Pa,Pa]). */
CORE_MUST_CHECK core_err lrn_personalize_ols(size_t d, const double *sigma, const double *dag,
                                             double *out, double *work);

#endif /* LRN_BASELINES_H */
