/* lrn/admm.h - the federated ADMM driver of Fed-Sparse-BNSL / Fed-BNSL (paper Algorithm 1).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Solves  min Σ_p [L(B_p; X_p) + λ‖B_p‖₁]  s.t. B_p = W, h(W) = 0  (paper Eq. 3) by ADMM
 * (DESIGN.md §6). One round t:
 *   1. every participant p runs its LOCAL SOLVER on (Wᵗ, β_p, ρ₂) and sends B_p
 *      (pluggable: PGCD for Fed-Sparse-BNSL, DP-PGCD for the private variant, the
 *      closed form (Σ_p+ρ₂I)⁻¹(ρ₂W−β_p+Σ_p) for the Fed-BNSL baseline);
 *   2. the server solves  W ← argmin α h(W) + (ρ₁/2)h(W)² + Σ_p[−tr(β_pᵀW) + (ρ₂/2)‖B_p−W‖²]
 *      by L-BFGS (liblbfgs), warm-started at the previous W, restricted to the union
 *      support of the B_p and β_p (entries outside it stay 0 at a stationary point);
 *      The server's minimiser W̃ is sent sparsified: entries with |W̃| ≥ w_sparsify, plus
 *      (down_own_support) W̃ on every entry participant p uploaded, so W_p differs per p;
 *   3. duals: β_p ← β_p + ρ₂(B_p − W_p) (computed on both sides, never sent),
 *      α ← α + ρ₁ h(W̃) (acyc_on_server); then the ρ schedule (on h(W̃), with a floor);
 *   4. stopping rule (issue 9, docs/learner.md "Convergence"): stop when max_p|B_p − W_p| ≤
 *      primal_tol, ρ₂·max|ΔW_p| ≤ dual_tol, h(W̃) ≤ h_tol and the support {|W| ≥
 *      w_threshold} has not changed for stable_rounds rounds; else end at max_rounds with
 *      status LRN_ADMM_MAX_ROUNDS_REACHED (not converged).
 * After the last round, with refit_threshold > 0 and ops->refit, the participants refit
 * their weights by OLS on the DAG {|W̃| ≥ refit_threshold} and W is their mean (one more
 * message each way); then, with search and ops->node_rss, a greedy search on the DAG
 * {|W| ≥ w_threshold} removes or reverses one edge at a time while that improves the
 * participants' BIC (least-squares score from their own Σ_p; docs/learner.md "Final
 * search"), and the participants refit on the DAG it ends at if it moved; then |W_ij| <
 * w_threshold is set to 0 and, if enforce_dag, the weakest edges are dropped until the
 * graph is acyclic (lrn_dag_prune()).
 *
 * Communication (paper B.2.1). Every message is encoded for real by lrn_wire_encode() and
 * the server works on the decoded values:
 *   sparse wire: u32 count (little-endian), then count × (index i*d+j in b_idx bytes LE,
 *                value as IEEE-754 binary64 LE), b_idx = ⌈log₂(d²)/8⌉ (≥ 1);
 *   dense wire:  the d² values, binary64 LE, row-major, no header.
 * bytes_model counts the paper's model (8 + b_idx per sparse entry, 8·d² per dense
 * matrix; 8 for an entry of W_p the participant uploaded itself: the sparse downlink sends
 * those values in index order without indices, lrn_wire_encode_known; for an upload, when
 * shorter, ⌈|K|/8⌉ bytes of change mask over the positions K of the participant's previous
 * upload, 8 for each changed entry of K and nothing for an unchanged one,
 * lrn_wire_encode_delta); bytes_wire counts the encoded buffers (model + 4-byte count
 * headers + one flag byte per sparse upload).
 * Both directions: every participant uploads B_p, the server sends W to each of P.
 *
 * Thread-safety: lrn_admm_run() is reentrant; the local ops are called from the calling
 * thread, one participant after another, unless they bring a par_run (below).
 */
#ifndef LRN_ADMM_H
#define LRN_ADMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

#define LRN_ADMM_MAX_D      4096
#define LRN_ADMM_MAX_P      4096
#define LRN_ADMM_MAX_ROUNDS 100000

/* Pluggable local solver (STYLE P10). */
struct lrn_local_ops {
    /* Participant p's local step of round t.
     *   W       in, current global W (d×d row-major), borrowed for the call.
     *   beta_p  in, participant p's dual β_p (d×d), borrowed for the call.
     *   rho2    current ρ₂.
     *   B_p     in/out, d×d: previous B_p in (zeros before round 0, usable as a warm
     *           start), new B_p out. Diagonal must come out 0 (the driver zeroes it).
     * Return non-OK to abort the run (the driver returns that code), except
     * CORE_ENOTFOUND: participant p is ABSENT this round (a remote participant that timed
     * out, lrn/fedsvc.h). The round then goes on with those present: p's B_p, β_p and W_p
     * are left as they were, p is left out of the server's sums (its P counts only the
     * present) and of the dual update and the sending of W; a round with nobody present
     * ends the run with CORE_ENOTFOUND. The in-process solvers never return it. */
    core_err (*solve)(void *self, size_t p, size_t t, const double *W, const double *beta_p,
                      double rho2, double *B_p);
    void *self;
    /* Optional parallel-for (STYLE P10: threads come from outside, e.g. core_pool_run):
     * call fn(arg, i) once for each i in [0, n) and return when all have returned. When
     * set, the driver makes the P solve() calls of a round through it, so calls for
     * different p may overlap: set it only for a solver whose calls share no mutable state.
     * Each call writes only its own B_p; the driver then handles the answers in participant
     * order as before, so W, the duals and the round count do not depend on the threads.
     * NULL: solve() is called for p = 0..P−1 in order on the driver's thread. */
    void (*par_run)(void *par, size_t n, void (*fn)(void *arg, size_t i), void *arg);
    void *par;
    /* Optional final refit (opts refit_threshold; docs/learner.md "Final refit"):
     * participant p's unpenalised least-squares weights on the fixed DAG `dag` (d×d,
     * i → j where dag[i*d+j] != 0), written to B_p (d×d, zero off the DAG). Called once,
     * after the last round, for p = 0..P−1 in order. NULL: no refit. */
    core_err (*refit)(void *self, size_t p, const double *dag, double *B_p);
    /* Optional final search (opts search; docs/learner.md "Final search"): participant
     * p's residual variance of node j regressed on the k parents pa[0..k) (unpenalised
     * OLS on its Σ_p, lrn_node_rss) in *rv (+inf: singular, never chosen), and its row
     * count n_p in *n. Called after the refit, for p = 0..P−1 in order. NULL: no search. */
    core_err (*node_rss)(void *self, size_t p, size_t j, const size_t *pa, size_t k, double *rv,
                         double *n);
};

enum lrn_wire { LRN_WIRE_SPARSE = 0, LRN_WIRE_DENSE = 1 };

enum lrn_rho_schedule {
    LRN_RHO_ON_STALL = 0, /* ρ₁ *= rho1_growth when h(Wᵗ) > h_stall·h(Wᵗ⁻¹); ρ₂ fixed */
    LRN_RHO_EVERY_ROUND = 1 /* notears-admm: ρ₁ *= rho1_growth, ρ₂ *= rho2_growth each round */
};

struct lrn_admm_opts {
    size_t max_rounds;  /* T ≥ 1 */
    double rho1, rho2;  /* initial penalties (> 0) */
    double rho1_growth; /* ≥ 1 */
    double rho2_growth; /* ≥ 1; LRN_RHO_EVERY_ROUND only */
    double rho_max;     /* cap on ρ₁ and ρ₂ */
    enum lrn_rho_schedule schedule;
    double h_stall;             /* in (0, 1]: the "h did not decrease enough" ratio */
    double rho2_balance;        /* LRN_RHO_ON_STALL: residual balancing of ρ₂ (Boyd et al. 2011,
                                 * §3.4.1, Eq. 3.13): after a round with primal residual >
                                 * rho2_balance × dual residual ρ₂ ×= rho2_balance_factor, with
                                 * dual > rho2_balance × primal ρ₂ /= the factor (never below the
                                 * initial rho2); 0 disables (ρ₂ fixed) */
    double rho2_balance_factor; /* > 1 when rho2_balance > 0 */
    double rho2_max;            /* cap on ρ₂ under balancing (≥ rho2) */
    double h_tol;               /* stopping rule: h ≤ h_tol (h(W̃) when acyc_on_server) */
    double primal_tol;    /* stopping rule: max_p ‖B_p − W‖_max ≤ primal_tol; ≤ 0 disables
                           * the stopping rule (all max_rounds are run) */
    double dual_tol;      /* stopping rule: ρ₂·max|Wᵗ − Wᵗ⁻¹| ≤ dual_tol */
    size_t stable_rounds; /* stopping rule: support {|W| ≥ w_threshold} unchanged for this
                           * many consecutive rounds */
    bool acyc_on_server; /* α ← α + ρ₁h and the ρ₁ schedule use h(W̃) of the server's own
                          * minimiser, before w_sparsify (docs/learner.md "Convergence");
                          * false: h of the sparsified W (blind once that W is a DAG) */
    double w_keep;       /* in (0, 1]: an entry already in the sent W stays while
                          * |W̃_ij| ≥ w_keep·w_sparsify (hysteresis; 1: none) */
    bool down_own_support;  /* the server also sends participant p the W̃ entries p uploaded
                             * (exact duals there; docs/learner.md "Convergence") */
    double rho1_h_floor;    /* acyc_on_server: ρ₁ grows on stall only while h(W̃) > this */
    double w_threshold;     /* final |w| < w_threshold → 0 (paper: 0.3) */
    double w_sparsify;      /* each round, the server zeroes |W_ij| < w_sparsify before
                             * sending W (both sides then use that W); 0 disables */
    double b_sparsify;      /* each round, a participant zeroes |B_p,ij| < b_sparsify before
                             * sending B_p (its own B_p too: both sides use what was sent);
                             * 0 disables; ≤ w_threshold */
    bool enforce_dag;       /* final cycle breaking (lrn_dag_prune) */
    double refit_threshold; /* > 0 and ops->refit set: after the last round the server
                             * sends the DAG {|W̃| ≥ refit_threshold} (cycles broken as
                             * lrn_dag_prune), every participant returns its OLS weights on
                             * it, and W is their mean (relaxed lasso, Meinshausen 2007;
                             * docs/learner.md "Final refit"); 0: off */
    bool search;            /* after the refit, with ops->node_rss: greedy remove/reverse
                             * search on the BIC of the participants' OLS fits (docs/learner.md
                             * "Final search"), then a refit on its DAG */
    enum lrn_wire wire;     /* what participants and server send */
    size_t lbfgs_max_iter;  /* server L-BFGS iteration cap per round */
    double lbfgs_epsilon;   /* liblbfgs relative gradient tolerance */
    double lbfgs_wtol;      /* also stop when no W_ij moved more than this in 3 iterations */
};

/* Fed-Sparse-BNSL defaults (paper B.3.2: ρ₁ = 1000, ρ₂ = 1; T = 100 as the cap; threshold
 * 0.3) and our choices (chosen or re-checked on tuning seeds 100–109, docs/learner.md):
 * sparse wire; h and the schedule on W̃; ρ₁ ×2 on stall (h_stall 0.9) while h(W̃) > 1e-5,
 * cap 1e16; w_sparsify 0.1 (no hysteresis, w_keep 1); down_own_support; b_sparsify 0.02;
 * L-BFGS ≤ 100 iterations, wtol 1e-6, epsilon 1e-6; stopping rule primal 0.03, dual 0.01,
 * h 1e-5, 10 stable rounds; ρ₂ residual balancing 10 (×2, cap 1e4); final refit on
 * {|W̃| ≥ 0.1} (tuning seeds 100–139); the final search; enforce_dag. */
struct lrn_admm_opts lrn_admm_opts_default(void);

/* Check an options struct. Returns CORE_OK or CORE_EINVAL (errbuf names the field). */
CORE_MUST_CHECK core_err lrn_admm_opts_check(const struct lrn_admm_opts *o, char *errbuf,
                                             size_t errbuf_size);

/* Per-round progress, handed to the callback after the dual update of round `round`. */
struct lrn_admm_progress {
    size_t round;           /* 0-based */
    double h;               /* h(W) of the sent (sparsified) W */
    double h_server;        /* h(W̃) of the server's minimiser before w_sparsify */
    size_t edges;           /* entries of W with |w| ≥ w_threshold (off-diagonal) */
    size_t nnz_up;          /* entries of the participants' uploads this round (sum over p;
                             * the unchanged ones of nnz_up_same included: not re-sent) */
    size_t nnz_up_known;    /* of which at the positions of the participant's previous upload
                             * (zeros included), without an index, when that encoding is
                             * shorter (one flag byte per upload says which) */
    size_t nnz_up_same;     /* of those, unchanged since that upload: not re-sent (one clear
                             * bit each in the change mask, lrn_wire_encode_delta) */
    uint64_t up_mask_bytes; /* this round's change masks, ⌈|K|/8⌉ per such upload */
    size_t nnz_down;        /* nonzeros of W sent down this round (sum over participants) */
    size_t nnz_down_known;  /* of which sent without an index: the entries the participant
                             * uploaded itself (lrn_wire_encode_known) */
    uint64_t bytes_model;   /* cumulative, paper B.2.1 model, both directions */
    uint64_t bytes_wire;    /* cumulative encoded bytes, both directions */
    double rho1, rho2, alpha;
    double primal_residual; /* max_p max_ij |B_p − W| */
    double dual_residual;   /* ρ₂·max_ij |Wᵗ − Wᵗ⁻¹| (sent W) */
    size_t support_changes; /* entries that entered or left {|W| ≥ w_threshold} this round */
    size_t stable_rounds;   /* consecutive rounds (ending here) without support change */
    double beta_dropped;    /* max_p |β_p,ij| over entries with W_ij = 0 */
    size_t lbfgs_iters;     /* server L-BFGS iterations this round */
    size_t lbfgs_evals;     /* server objective evaluations (each one h(W) and ∇h) */
    size_t server_vars;     /* size of the union support the server optimised over */
};

/* Return false to stop after this round (the result is then thresholded as usual). */
typedef bool lrn_admm_progress_fn(void *arg, const struct lrn_admm_progress *pr);

enum lrn_admm_status {
    LRN_ADMM_MAX_ROUNDS_REACHED = 1,
    LRN_ADMM_CONVERGED = 2,
    LRN_ADMM_STOPPED = 3 /* the progress callback asked to stop */
};

struct lrn_admm_result {
    enum lrn_admm_status status;
    size_t rounds;        /* rounds run */
    double h_raw;         /* h(W) before thresholding */
    double h;             /* h(W) after thresholding/pruning (0 when enforce_dag) */
    size_t edges;         /* edges of the returned W */
    size_t pruned;        /* edges dropped by cycle breaking */
    uint64_t bytes_model; /* total, both directions */
    uint64_t bytes_wire;
    uint64_t bytes_up_model; /* participants → server part of bytes_model */
    size_t search_moves;     /* edges the final search removed or reversed */
    /* the last round's stopping quantities (see struct lrn_admm_progress) */
    double primal_residual, dual_residual, h_server;
    size_t stable_rounds;
};

/* Run ADMM.
 *   d, P     dimension and participants (1 ≤ each ≤ caps).
 *   ops      local solver, borrowed.
 *   o        options, borrowed (checked with lrn_admm_opts_check()).
 *   cb       optional progress callback (NULL: none), cb_arg handed back.
 *   W        out, d×d row-major: the final thresholded W.
 *   W_raw    out (optional), d×d: W before thresholding.
 *   res      out.
 * Returns CORE_OK, CORE_EINVAL/CORE_ETOOBIG (bad sizes/options), CORE_ENUMERIC (server
 * solver or h(W) produced non-finite values), or the local solver's error (e.g.
 * CORE_EBUDGET from DP-PGCD when max_rounds exceeds the rounds it was calibrated for).
 * On failure W and W_raw are unspecified and must not be used. */
CORE_MUST_CHECK core_err lrn_admm_run(size_t d, size_t P, const struct lrn_local_ops *ops,
                                      const struct lrn_admm_opts *o, lrn_admm_progress_fn *cb,
                                      void *cb_arg, double *W, double *W_raw,
                                      struct lrn_admm_result *res);

/* ---- wire encoding (also used by the Kafka participants) ---- */

/* Bytes per index, ⌈log₂(d²)/8⌉, at least 1. */
size_t lrn_wire_index_bytes(size_t d);
/* Upper bound of the encoded size of a d×d matrix under wire. */
size_t lrn_wire_max_len(size_t d, enum lrn_wire wire);

/* Encode M (d×d row-major): sparse → only entries != 0 (and not -0.0 treated as 0).
 *   buf      out, cap bytes (≥ lrn_wire_max_len()).
 *   len      out, bytes written.
 *   nnz      out (optional), entries written (d² for dense).
 * Returns CORE_OK, CORE_EINVAL (non-finite entry), CORE_ETOOBIG (cap too small). */
CORE_MUST_CHECK core_err lrn_wire_encode(size_t d, const double *M, enum lrn_wire wire,
                                         uint8_t *buf, size_t cap, size_t *len, size_t *nnz);

/* Decode into M (d×d, fully overwritten; absent entries are 0).
 * Returns CORE_OK, CORE_EPARSE (truncated, trailing bytes, index ≥ d², duplicate or
 * unordered index, non-finite value). */
CORE_MUST_CHECK core_err lrn_wire_decode(size_t d, const uint8_t *buf, size_t len,
                                         enum lrn_wire wire, double *M);

/* Sparse message to a receiver that already knows a support K (known[x] != 0; the
 * downlink to participant p: K = the entries p uploaded this round, so W̃ on them needs no
 * index): u32 count c (LE), the |K| values of M on K in index order (binary64 LE, zeros
 * included), then c × (index, value) as the sparse wire for the nonzeros of M outside K.
 * Bytes: 4 + 8·|K| + c·(8 + b_idx).
 *   n_known, n_pairs  out: |K| and c.
 * Returns CORE_OK, CORE_EINVAL (non-finite value), CORE_ETOOBIG (cap too small; at most
 * lrn_wire_max_len(d, LRN_WIRE_SPARSE) is needed). */
CORE_MUST_CHECK core_err lrn_wire_encode_known(size_t d, const double *M, const double *known,
                                               uint8_t *buf, size_t cap, size_t *len,
                                               size_t *n_known, size_t *n_pairs);
/* Decode a lrn_wire_encode_known() message with the same `known` into M (fully
 * overwritten). Returns CORE_OK, CORE_EPARSE (length, index ≥ d², in K, unordered or
 * duplicate, a zero or non-finite pair value, a non-finite value on K). */
CORE_MUST_CHECK core_err lrn_wire_decode_known(size_t d, const double *known, const uint8_t *buf,
                                               size_t len, double *M);

/* Upload to a receiver that holds the sender's previous message K (known[x] != 0: the
 * server has participant p's previous upload, values included): u32 count c (LE), a change
 * mask of ⌈|K|/8⌉ bytes (bit k, LSB first, set when M differs from K on the k-th entry of K
 * in index order; unused high bits 0), the values of M on the changed entries of K in index
 * order (binary64 LE, zeros included), then c × (index, value) as the sparse wire for the
 * nonzeros of M outside K. An unchanged entry is not re-sent: the receiver takes K's value,
 * so the decoded M is bit for bit the sender's. Bytes: 4 + ⌈|K|/8⌉ + 8·changed + c·(8 + b_idx).
 *   n_known, n_changed, n_pairs  out: |K|, the changed entries of K, c.
 * Returns CORE_OK, CORE_EINVAL (non-finite value), CORE_ETOOBIG (cap too small; at most
 * lrn_wire_max_len(d, LRN_WIRE_SPARSE) is needed). */
CORE_MUST_CHECK core_err lrn_wire_encode_delta(size_t d, const double *M, const double *known,
                                               uint8_t *buf, size_t cap, size_t *len,
                                               size_t *n_known, size_t *n_changed, size_t *n_pairs);
/* Decode a lrn_wire_encode_delta() message with the same `known` into M (fully overwritten).
 * Returns CORE_OK, CORE_EPARSE (length, mask bits past |K|, a pair index ≥ d², in K,
 * unordered or duplicate, a zero or non-finite pair value, a non-finite changed value). */
CORE_MUST_CHECK core_err lrn_wire_decode_delta(size_t d, const double *known, const uint8_t *buf,
                                               size_t len, double *M);

/* ---- the PGCD local solver as lrn_local_ops (Fed-Sparse-BNSL) ---- */

struct lrn_pgcd_opts;
struct lrn_pgcd_local;

/* One PGCD solver per participant over Σ_p.
 *   sigma  P pointers to d×d Σ_p, borrowed, valid for the object's lifetime.
 *   o      PGCD options, copied.
 *   out    new; caller frees with lrn_pgcd_local_free().
 * Returns CORE_OK, CORE_EINVAL, CORE_ETOOBIG. */
CORE_MUST_CHECK core_err lrn_pgcd_local_new(size_t d, size_t P, const double *const *sigma,
                                            const struct lrn_pgcd_opts *o,
                                            struct lrn_pgcd_local **out);
void lrn_pgcd_local_free(struct lrn_pgcd_local *l); /* NULL-safe */
/* The participants' row counts n_p (P values, copied), which the final search's BIC needs;
 * without them the ops have no node_rss (no search). */
void lrn_pgcd_local_set_rows(struct lrn_pgcd_local *l, const size_t *n);
/* The ops view; valid while l lives. */
struct lrn_local_ops lrn_pgcd_local_ops(struct lrn_pgcd_local *l);
/* Total PGCD coordinate steps taken so far (all participants). */
uint64_t lrn_pgcd_local_steps(const struct lrn_pgcd_local *l);

/* Σ = XᵀX / (n·scale) by dsyrk (both triangles filled).
 *   X      n×d row-major, borrowed.  scale > 0 (1, or P for notears-admm's scaling).
 *   sigma  out, d×d.
 * Returns CORE_OK, CORE_EINVAL (n == 0, d == 0, scale ≤ 0, non-finite X),
 * CORE_ETOOBIG (n or d larger than INT_MAX for BLAS). */
CORE_MUST_CHECK core_err lrn_covariance(size_t n, size_t d, const double *X, double scale,
                                        double *sigma);

/* Each participant's local statistic with its own centring (issue 9): X̃ = X − 1μᵀ with μ
 * the column means of X (two-pass, on a copy, so large offsets do not cancel), and with
 * standardize each column of X̃ also divided by its standard deviation (1/n), so Σ is the
 * correlation matrix, or with rescale every column divided by ONE common factor, the root
 * of the mean column variance, so the columns' relative variances (which orient edges when
 * the noises have equal variances) are kept while the penalties see unit-scale data.
 * Σ = X̃ᵀX̃ / (n·scale).
 *   flags  LRN_COV_CENTER, LRN_COV_STANDARDIZE or LRN_COV_RESCALE (each implies centring;
 *          standardize wins over rescale), or 0 (= lrn_covariance).
 * Returns as lrn_covariance(); CORE_EINVAL also for a constant column with standardize, or
 * every column constant with rescale. */
#define LRN_COV_CENTER      1u
#define LRN_COV_STANDARDIZE 2u
#define LRN_COV_RESCALE     4u
CORE_MUST_CHECK core_err lrn_covariance_ex(size_t n, size_t d, const double *X, double scale,
                                           unsigned flags, double *sigma);

#endif /* LRN_ADMM_H */
