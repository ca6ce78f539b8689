/* config_keys.c - the learner stage's configuration keys (see lrn/config.h).
 *
 * Defaults are the paper's tuned values for synthetic homogeneous data (Appendix B.3.2:
 * ρ₁ = 1000, ρ₂ = 1, λ = 0.1, γ = 0.5, threshold 0.3; B.3.3 Table 5 at ε = 5: T = 100,
 * K = 20) plus our choices where the paper is silent or its value does not carry over to
 * our reading (C: see docs/learner.md, "DP-PGCD").
 */
#include "lrn/config.h"

#include "core/cfg_keys.h"
#include "lrn/admm.h"
#include "lrn/dppgcd.h"

const struct core_cfg_key lrn_config_keys[] = {
    /* ADMM (paper Algorithm 1) */
    K_INT_AT("learner.rounds", "100", 1, 100000, "ADMM rounds T", LRN_KEYS_ADMM, SIZE,
             lrn_admm_opts, max_rounds),
    K_DBL("learner.lambda", "0.1", 0, 1e6, "l1 weight lambda on each B_p (paper B.3.2: 0.1)"),
    K_DBL_AT("learner.rho1", "1000", 1e-12, 1e16, "initial acyclicity penalty rho1 (paper: 1000)",
             LRN_KEYS_ADMM, lrn_admm_opts, rho1),
    K_DBL_AT("learner.rho2", "1", 1e-12, 1e16, "consensus penalty rho2 (paper: 1)", LRN_KEYS_ADMM,
             lrn_admm_opts, rho2),
    K_ENUM("learner.rho_schedule", "\"on_stall\"", "on_stall|every_round",
           "on_stall: rho1 *= rho1_growth when h(W) > h_stall*h(W_prev); every_round: "
           "notears-admm (rho1 *= rho1_growth, rho2 *= rho2_growth each round)"),
    K_DBL_AT("learner.rho1_growth", "2", 1, 1e6,
             "rho1 growth factor: per stalled round (on_stall) or per round (every_round)",
             LRN_KEYS_ADMM, lrn_admm_opts, rho1_growth),
    K_DBL_AT("learner.rho2_growth", "1", 1, 1e6, "rho2 growth factor (every_round only)",
             LRN_KEYS_ADMM, lrn_admm_opts, rho2_growth),
    K_DBL_AT("learner.rho_max", "1e16", 1, 1e300, "cap on rho1 and rho2", LRN_KEYS_ADMM,
             lrn_admm_opts, rho_max),
    K_DBL_AT("learner.h_stall", "0.9", 1e-9, 1,
             "h(W~) must fall below h_stall*h_prev or rho1 grows (tuned on seeds 100-109)",
             LRN_KEYS_ADMM, lrn_admm_opts, h_stall),
    K_DBL_AT("learner.rho2_balance", "10", 0, 1e6,
             "residual balancing of rho2 (Boyd et al. 2011, 3.4.1): rho2 *= rho2_balance_factor "
             "when primal > rho2_balance*dual, /= when dual > rho2_balance*primal; 0: rho2 fixed",
             LRN_KEYS_ADMM, lrn_admm_opts, rho2_balance),
    K_DBL_AT("learner.rho2_balance_factor", "2", 1, 1e6, "rho2 factor of residual balancing",
             LRN_KEYS_ADMM, lrn_admm_opts, rho2_balance_factor),
    K_DBL_AT("learner.rho2_max", "1e4", 1e-12, 1e16, "cap on rho2 under residual balancing",
             LRN_KEYS_ADMM, lrn_admm_opts, rho2_max),
    K_DBL_AT("learner.rho1_h_floor", "1e-5", 0, 1,
             "rho1 grows on stall only while h(W~) > rho1_h_floor (alpha keeps acting)",
             LRN_KEYS_ADMM, lrn_admm_opts, rho1_h_floor),
    K_DBL_AT("learner.h_tol", "1e-5", 0, 1, "stopping rule: h(W~) <= h_tol", LRN_KEYS_ADMM,
             lrn_admm_opts, h_tol),
    K_DBL_AT("learner.primal_tol", "0.03", 0, 1e6,
             "stopping rule: max|B_p - W| <= primal_tol (with dual_tol, h_tol, stable_rounds); "
             "0: no stopping rule, run all rounds",
             LRN_KEYS_ADMM, lrn_admm_opts, primal_tol),
    K_DBL_AT("learner.dual_tol", "0.01", 0, 1e6, "stopping rule: rho2*max|W_t - W_t-1| <= dual_tol",
             LRN_KEYS_ADMM, lrn_admm_opts, dual_tol),
    K_INT_AT("learner.stable_rounds", "10", 0, 100000,
             "stopping rule: support {|W| >= w_threshold} unchanged for this many rounds",
             LRN_KEYS_ADMM, SIZE, lrn_admm_opts, stable_rounds),
    K_DBL_AT("learner.w_keep", "1", 1e-6, 1,
             "hysteresis: an entry already sent stays while |W~| >= w_keep*w_sparsify (1: off)",
             LRN_KEYS_ADMM, lrn_admm_opts, w_keep),
    K_BOOL_AT("learner.down_own_support", "true",
              "the server also sends each participant W~ on the entries it uploaded (exact duals)",
              LRN_KEYS_ADMM, lrn_admm_opts, down_own_support),
    K_BOOL("learner.center", "true",
           "each participant centres its columns (non-private methods; docs/learner.md)"),
    K_BOOL("learner.standardize", "false", "each participant also scales columns to unit variance"),
    K_BOOL("learner.rescale", "false",
           "each participant divides all its centred columns by one common factor (unit mean "
           "variance; keeps relative variances); learner.standardize wins"),
    K_DBL_AT("learner.w_threshold", "0.3", 0, 1e6, "final |w| < threshold -> 0 (paper: 0.3)",
             LRN_KEYS_ADMM, lrn_admm_opts, w_threshold),
    K_DBL_AT("learner.w_sparsify", "0.1", 0, 1e6,
             "server zeroes |W_ij| < w_sparsify each round before sending W (0: off)",
             LRN_KEYS_ADMM, lrn_admm_opts, w_sparsify),
    K_DBL_AT("learner.b_sparsify", "0.02", 0, 1e6,
             "each participant zeroes |B_ij| < b_sparsify each round before sending B_p "
             "(0: off; <= learner.w_threshold)",
             LRN_KEYS_ADMM, lrn_admm_opts, b_sparsify),
    K_DBL_AT("learner.refit_threshold", "0.1", 0, 1e6,
             "final refit: participants' OLS weights on the DAG {|W~| >= refit_threshold}, "
             "averaged, before the final threshold (fed-sparse; 0: off)",
             LRN_KEYS_ADMM, lrn_admm_opts, refit_threshold),
    K_BOOL_AT("learner.search", "true",
              "after the final refit: greedy remove/reverse/add edge search on the participants' "
              "BIC, then a refit on its DAG (fed-sparse; docs/learner.md \"Final search\")",
              LRN_KEYS_ADMM, lrn_admm_opts, search),
    K_BOOL_AT("learner.enforce_dag", "true", "drop weakest edges until acyclic at the end",
              LRN_KEYS_ADMM, lrn_admm_opts, enforce_dag),
    K_ENUM("learner.wire", "\"sparse\"", "sparse|dense",
           "message encoding: (index,value) pairs of nonzeros, or dense d*d"),
    K_ENUM("learner.cov_scale", "\"n\"", "n|nP",
           "Sigma_p = X'X/n_p, or X'X/(n_p*P) as notears-admm does"),
    K_INT("learner.blas_threads", "1", 1, 256,
          "OpenBLAS threads for the learner (1: small matrices; worker threads busy-wait)"),
    K_INT("learner.workers", "0", 0, 64,
          "gcdp learn: threads that read the participant files and run the participants' "
          "local solves of a round (fed-sparse); 0: online CPUs, at most 8; 1: none. The "
          "result is the same for any value"),
    K_INT_AT("learner.lbfgs.max_iter", "100", 1, 100000, "server L-BFGS iterations per round",
             LRN_KEYS_ADMM, SIZE, lrn_admm_opts, lbfgs_max_iter),
    K_DBL_AT("learner.lbfgs.epsilon", "1e-6", 1e-16, 0.5, "liblbfgs relative gradient tolerance",
             LRN_KEYS_ADMM, lrn_admm_opts, lbfgs_epsilon),
    K_DBL_AT("learner.lbfgs.wtol", "1e-6", 0, 1,
             "server stops when no W_ij moved more than this in 3 iterations", LRN_KEYS_ADMM,
             lrn_admm_opts, lbfgs_wtol),
    /* PGCD local solver (paper §4.2) */
    K_DBL("learner.pgcd.gamma", "0.5", 1e-6, 1, "PGCD step gamma (paper: 0.5)"),
    K_INT("learner.pgcd.max_steps", "1000", 1, 100000000,
          "non-private PGCD coordinate steps per round (cap)"),
    K_DBL("learner.pgcd.tol", "1e-6", 0, 1e6, "PGCD stops when the best GS-s score <= tol"),
    /* DP-PGCD (paper §5, Theorem 5.1, Appendix A.3) */
    K_BOOL("learner.dp.enabled", "false", "use DP-PGCD (DP-Fed-Sparse-BNSL)"),
    K_DBL("learner.dp.eps", "5", 1e-3, 1e3, "epsilon of the optimisation (Theorem 5.1)"),
    K_DBL("learner.dp.delta", "0", 0, 0.5, "delta; 0 means 1/n_p^2 (paper default)"),
    K_DBL("learner.dp.clip", "50", 1e-9, 1e12,
          "global clipping threshold C = l2 bound of a per-sample gradient (docs/learner.md)"),
    K_INT("learner.dp.steps", "20", 1, 100000, "private PGCD steps K per round (Table 5: 20)"),
    K_ENUM("learner.dp.m_source", "\"private\"", "private|public|exact",
           "smoothness constants: Gaussian estimate with eps_m (A.3.2), public values "
           "(learner.dp.m_public), or exact from data (NOT private; paper baseline)"),
    K_DBL("learner.dp.eps_m", LRN_STR(LRN_DPPGCD_EPS_M_DEFAULT), 1e-3, 1e3,
          "epsilon for the private M_j estimate (added to learner.dp.eps in the reported eps)"),
    K_DBL("learner.dp.m_bound", LRN_STR(LRN_DPPGCD_M_BOUND_DEFAULT), 1e-12, 1e12,
          "public bound b on x_kj^2 for the private M_j estimate (values are clipped to it)"),
    CORE_KEY("learner.dp.m_public", CORE_CFG_JSON, NULL, 1, 0, NULL,
             "array of d public smoothness constants M_j (m_source = public)", NULL),
    /* the learner services (lrn/fedsvc.h, docs/learner.md "Learner services") */
    K_INT("learner.service.horizon", "2000", 2, 10000000,
          "participant: sample rows kept (ring; the oldest is dropped)"),
    K_INT("learner.service.min_samples", "100", 2, 10000000,
          "a participant takes part in a session once it holds this many rows"),
    K_INT("learner.service.participants", "2", 1, 4096,
          "server: participants (with min_samples rows, same nodes) needed to start a session"),
    K_INT("learner.service.round_timeout_ms", "10000", 100, 3600000,
          "server: a participant that has not answered a round within this is absent for "
          "the rest of the session"),
    K_INT("learner.service.resend_ms", "1000", 50, 600000,
          "server: re-send an unanswered request after this (answers are idempotent)"),
    K_INT("learner.service.announce_ms", "1000", 50, 600000,
          "participant: sample-count announcement period"),
    K_DBL("learner.service.session_interval_s", "60", 0, 1e7,
          "server: pause between the end of a session and the next one"),
    CORE_KEY("learner.service.state_dir", CORE_CFG_STRING, "\"learner-state\"", 1, 0, NULL,
             "server checkpoints and participant snapshots (one directory per deployment); "
             "relative: under state.dir",
             NULL),
    CORE_KEY("learner.service.out_dir", CORE_CFG_STRING, "\"learner-out\"", 1, 0, NULL,
             "server: dag-s<session>.{json,dot,png} of each result; relative: under state.dir",
             NULL),
    CORE_KEY("learner.service.devices", CORE_CFG_STRING, "\"*\"", 1, 0, NULL,
             "participant: its devices, comma-separated globs (--devices overrides)", NULL),
    K_BOOL("learner.service.png", "true", "server: render the result's PNG with graphviz"),
    K_ENUM("learner.service.method", "\"fed-sparse\"", "fed-sparse|fed-bnsl",
           "server: Fed-Sparse-BNSL (PGCD, sparse wire, learner.* options) or Fed-BNSL "
           "(closed form, dense wire, notears-admm options; learner.rounds applies)"),
    {0},
};
