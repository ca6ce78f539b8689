/* lrn/runner.h - one entry point that runs any of the learner's methods on in-memory
 * participant data: used by `gcdp learn` and `gcdp bench learner`.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Methods (Fed-Sparse-BNSL paper, Section 6):
 *   fed-sparse     Fed-Sparse-BNSL: ADMM (lrn/admm.h) with PGCD local solver, sparse wire
 *   dp-fed-sparse  DP-Fed-Sparse-BNSL: ADMM with DP-PGCD (lrn/dppgcd.h)
 *   fed-bnsl       Fed-BNSL (Ng & Zhang 2022): ADMM with the dense closed form, dense wire
 *   dp-fed-bnsl    DP-Fed-BNSL: Gaussian mechanism on each Sigma_p, then Fed-BNSL
 *   notears        centralized NOTEARS on the pooled data (not federated; reference)
 *   local-notears  NOTEARS on each participant alone (P separate graphs)
 *   dp-fed-sparse-mangold  DP-Fed-Sparse-BNSL with the Mangold et al. (2023) DP-PGCD
 *                  (Laplace + advanced composition; lrn/dppgcd.h LRN_DP_MANGOLD), same
 *                  hyperparameters as dp-fed-sparse: the Appendix C.4 comparison
 * Thread-safety: reentrant; callbacks are called from the calling thread.
 */
#ifndef LRN_RUNNER_H
#define LRN_RUNNER_H

#include <stdbool.h>
#include <stddef.h>

#include "core/dp_rng.h"
#include "core/err.h"
#include "core/pool.h"
#include "lrn/admm.h"
#include "lrn/dppgcd.h"
#include "lrn/notears.h"
#include "lrn/pgcd.h"

enum lrn_method {
    LRN_METHOD_FED_SPARSE = 0,
    LRN_METHOD_DP_FED_SPARSE,
    LRN_METHOD_FED_BNSL,
    LRN_METHOD_DP_FED_BNSL,
    LRN_METHOD_NOTEARS,
    LRN_METHOD_LOCAL_NOTEARS,
    LRN_METHOD_DP_FED_SPARSE_MANGOLD, /* federated; appended so the values above stay */
    LRN_METHOD_COUNT
};

/* "fed-sparse" ... ; NULL for an unknown value. */
const char *lrn_method_name(enum lrn_method m);
/* Parse a name. Returns CORE_OK or CORE_EINVAL. */
CORE_MUST_CHECK core_err lrn_method_parse(const char *name, enum lrn_method *out);

struct lrn_runner_opts {
    enum lrn_method method;
    struct lrn_admm_opts admm;       /* federated methods */
    struct lrn_pgcd_opts pgcd;       /* fed-sparse local solver */
    struct lrn_dppgcd_opts dppgcd;   /* dp-fed-sparse local solver */
    struct lrn_notears_opts notears; /* notears, local-notears */
    double cov_eps, cov_delta; /* dp-fed-bnsl: (eps, delta) per participant; delta 0 -> 1/n^2 */
    double cov_bound;          /* dp-fed-bnsl: b, rows clipped to ||x||^2 <= b */
    bool fs_cov_by_p;          /* fed-sparse: Sigma_p = X^T X / (n_p P) as notears-admm */
    bool center;               /* each participant centres its columns (default true);
                                * non-private methods only: see lrn_runner_run() */
    bool standardize;          /* ... and scales them to unit variance (default false) */
    bool rescale;              /* ... or all by one factor to unit mean variance (false) */
    struct core_pool *pool;    /* borrowed, optional (default NULL): fed-sparse runs the
                                * participants' local solves of a round on it; the
                                * result is bit-identical for any thread count */
};

/* The paper's tuned defaults (Appendix B.3) for method m at dimension d:
 *   fed-sparse:    rho1 = 1000, rho2 = 1, lambda = 0.1, gamma = 0.5, T = 100, K = 1000 steps
 *                  with early stop at best score <= 1e-6 (K is not given for the
 *                  non-private runs; our measured choice), threshold 0.3
 *   dp-fed-sparse: Table 7 (eps = 10 row for d) / Table 5: C, T, K by d; lambda, gamma
 *                  from Table 7; threshold 0.3; M private (eps_m 1.25 on top of eps, b = 100;
 *                  the paper's experiments used exact M: m_source = LRN_M_EXACT, reported
 *                  as not end-to-end private)
 *   fed-bnsl:      lrn_fedbnsl_admm_opts_default() (notears-admm schedule, T = 100)
 *   dp-fed-bnsl:   as fed-bnsl, b from Table 7 by d, T = 300 (Table 7), eps = 10
 *   notears:       lrn_notears_opts_default() (lambda 0.1, threshold 0.3).
 * eps for the DP methods defaults to 10 (Figure 4). */
struct lrn_runner_opts lrn_runner_opts_default(enum lrn_method m, size_t d);

/* Federated method (ADMM driver)? */
bool lrn_method_is_federated(enum lrn_method m);
/* dp-fed-sparse or dp-fed-sparse-mangold (DP-PGCD local solver)? */
bool lrn_method_is_dppgcd(enum lrn_method m);

/* Adjust the dp-fed-sparse hyperparameters to the paper's Table 5 row for eps (Figure 3;
 * d = 20): C, T, K. eps values between rows use the next smaller row. Sets dppgcd.eps. */
void lrn_runner_opts_table5(struct lrn_runner_opts *o, double eps);

struct lrn_runner_result {
    struct lrn_admm_result admm; /* federated methods (zero otherwise) */
    struct lrn_notears_result notears;
    double eps_spent;            /* DP methods: per-participant end-to-end eps actually spent
                                  * (dp-fed-sparse: optimisation + private M); INFINITY
                                  * when M was exact (not end-to-end private) */
    double eps_opt;              /* the mechanisms run by the optimisation (+ private M when
                                  * it was private), i.e. what eps_spent would be if the
                                  * exact M were public */
    bool m_private;              /* dp-fed-sparse: was M privatised? */
    uint64_t local_steps;        /* fed-sparse: PGCD coordinate steps (all participants) */
    bool centered, standardized; /* what was applied to each participant's data */
};

/* Run o->method.
 * Centring (o->center, o->standardize) is applied by each participant to its own rows for
 * the non-private methods. The DP methods read raw rows: the participant's mean is itself a
 * statistic of the protected data and centring by it would change the per-row sensitivity
 * that the clipping certifies, so they are not centred (res->centered = false).
 *   d, P     dimension, participants.
 *   x, n     P pointers to n[p] x d row-major samples, borrowed.
 *   rng      noise for DP methods (core_rng_os() in production); may be NULL otherwise.
 *   cb       ADMM progress callback (may be NULL).
 *   W        out d*d learned DAG; for local-notears, P*d*d (one DAG per participant).
 *   res      out.
 *   eb       reason on failure.
 * Returns CORE_OK or the failing component's code (CORE_EINVAL options, CORE_ENUMERIC, ...). */
CORE_MUST_CHECK core_err lrn_runner_run(const struct lrn_runner_opts *o, size_t d, size_t P,
                                        const double *const *x, const size_t *n,
                                        const struct core_rng *rng, lrn_admm_progress_fn *cb,
                                        void *cb_arg, double *W, struct lrn_runner_result *res,
                                        char *eb, size_t ebn);

#endif /* LRN_RUNNER_H */
