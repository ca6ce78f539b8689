/* lrn/dppgcd.h - DP-PGCD, the local solver of DP-Fed-Sparse-BNSL (paper §5, Algorithm 2,
 * Theorem 5.1, Appendix A.2-A.3).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Same subproblem as lrn/pgcd.h, but the data part of the gradient is computed from the
 * participant's rows with per-sample, per-coordinate clipping (paper §5.3):
 *   D_ij = (1/n) Σ_k clip(x_ki · r_kj, C_ij),  r_k = x_k B − x_k,  C_ij = C·√(M_ij / Σ_{a≠b} M_ab)
 *   G_ij = D_ij + β_ij + ρ₂(B_ij − W_ij)
 * so replacing one row moves D_ij by at most Δ_ij = 2C_ij/n. Each step:
 *   selection: exponential mechanism (Gumbel-max) on S_ij = √M_ij·|prox_{λ/M_ij}(B_ij −
 *              G_ij/M_ij) − B_ij|, score sensitivity Δ_S = Δ_ij/√M_ij = 2C/(n√ΣM), scale β;
 *   update:    B_ij ← prox_{γλ/M_ij}(B_ij − γ(G_ij + N(0, σ_ij²))/M_ij), σ_ij = β·√M_ij.
 * Both are ρ_s = Δ_S²/(2β²)-zCDP (bounded-range EM; Gaussian with Δ_ij/σ_ij = Δ_S/β), so K
 * steps per round and T rounds give ρ_tot = KT·Δ_S²/β² and (ε, δ) with
 * ε = ρ_tot + 2√(ρ_tot·log(1/δ)). Solving for β gives Theorem 5.1:
 *   β = Δ_S·√(KT)·(√(log(1/δ) + ε) + √log(1/δ)) / ε.
 * (Our reading: the paper's Δ in that formula is the score sensitivity Δ_S; with it the
 * two mechanisms cost the same ρ and the composition meets ε exactly.)
 *
 * Smoothness M_ij = M_i + ρ₂ with M_i = (1/n)Σ_k x_ki² comes from one of:
 *   LRN_M_PRIVATE: Gaussian mechanism on the clipped M_i = (1/n)Σ min(x_ki², b) with
 *                  budget (ε_M, δ) (Appendix A.3.2); total guarantee reported in zCDP.
 *   LRN_M_PUBLIC:  caller-supplied public values (no data access).
 *   LRN_M_EXACT:   computed from the data WITHOUT privacy (the paper's "baseline"); the
 *                  object then reports m_private = false and the run is NOT end-to-end DP.
 *
 * Noise comes from the injected struct core_rng (production: core_rng_os()); the samplers
 * are core's (core/dp_mech.h). The object keeps a zCDP budget filter: a step that would
 * exceed the calibrated ρ_tot is refused with CORE_EBUDGET before touching data.
 *
 * Pure: no I/O; allocation only in _new.
 * Thread-safety: one object per thread.
 */
#ifndef LRN_DPPGCD_H
#define LRN_DPPGCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dp_rng.h"
#include "core/err.h"

#define LRN_DPPGCD_MAX_N 100000000
#define LRN_DPPGCD_MAX_D 1024

enum lrn_m_source { LRN_M_PRIVATE = 0, LRN_M_PUBLIC = 1, LRN_M_EXACT = 2 };

/* Defaults of the private M estimate (learner.dp.eps_m, learner.dp.m_bound; docs/learner.md
 * "Smoothness constants"): ε_M = 1.25, additional to the optimisation's ε, and the public
 * bound b = 100 on x_kj² (values clipped to it). One owner: the config keys and the runner
 * defaults both use these. */
#define LRN_DPPGCD_EPS_M_DEFAULT   1.25
#define LRN_DPPGCD_M_BOUND_DEFAULT 100
#define LRN_STR_(x)                #x
#define LRN_STR(x)                 LRN_STR_(x)

/* Noise/accounting variant of a DP-PGCD step (same clipping, scores and update rule):
 *   LRN_DP_ZCDP     this paper's DP-PGCD (above): Gumbel-max EM + Gaussian, zCDP.
 *   LRN_DP_MANGOLD  the Mangold et al. (2023) variant for the Appendix C.4 comparison:
 *                   every step is two pure ε₀-DP mechanisms — the exponential mechanism
 *                   (ε₀ = 2Δ_S/scale, our stand-in for their report-noisy-max with Laplace
 *                   scores: same ε₀-DP guarantee) and the Laplace mechanism on D_ij with
 *                   scale Δ_ij/ε₀ (Δ_ij = 2C_ij/n, a scalar's ℓ1 sensitivity) — and the
 *                   N = 2KT mechanisms compose by the advanced composition theorem
 *                   (Dwork & Roth 2014, Thm 3.20) with δ' = δ:
 *                     ε = √(2N·log(1/δ))·ε₀ + N·ε₀·(e^{ε₀} − 1).
 *                   ε₀ is the largest solution (bisection, rounded down) for the given ε. */
enum lrn_dp_variant { LRN_DP_ZCDP = 0, LRN_DP_MANGOLD = 1 };

struct lrn_dppgcd_opts {
    double lambda; /* ℓ1 weight */
    double gamma;  /* step */
    size_t steps;  /* K: private steps per round */
    size_t rounds; /* T: ADMM rounds the budget is split over */
    double clip;   /* C > 0 (global clipping threshold) */
    double eps;    /* ε for the optimisation (> 0) */
    double delta;  /* δ in (0, 0.5]; 0 → 1/n² (paper default) */
    enum lrn_m_source m_source;
    double eps_m;                /* ε_M for LRN_M_PRIVATE (> 0), additional to eps */
    double m_bound;              /* b: public bound on x_kj² for LRN_M_PRIVATE (> 0) */
    const double *m_public;      /* d values M_i for LRN_M_PUBLIC, borrowed (copied in _new) */
    enum lrn_dp_variant variant; /* LRN_DP_ZCDP (0, default) or LRN_DP_MANGOLD */
};

/* Theorem 5.1 calibration for given public quantities. */
struct lrn_dppgcd_calib {
    double c;         /* β/Δ_S = σ_ij/Δ_ij = √(KT)(√(L+ε)+√L)/ε, L = log(1/δ) */
    double rho_step;  /* nominal zCDP of ONE mechanism = 1/(2c²) */
    double rho_total; /* 2KT·rho_step */
    double eps_check; /* ρ_tot + 2√(ρ_tot L), equals eps up to rounding */
};

/* Compute the calibration. Returns CORE_OK or CORE_EINVAL (K, T = 0; ε, δ out of range;
 * any NaN). */
CORE_MUST_CHECK core_err lrn_dppgcd_calibrate(size_t steps, size_t rounds, double eps, double delta,
                                              struct lrn_dppgcd_calib *out);

/* Private estimate noise (Appendix A.3.2): σ_j = (b/n)·√d·(√(L_M+ε_M)+√L_M)/(√2·ε_M). */
CORE_MUST_CHECK core_err lrn_dppgcd_m_sigma(size_t n, size_t d, double m_bound, double eps_m,
                                            double delta_m, double *sigma);

/* Advanced-composition calibration of the Mangold variant (see LRN_DP_MANGOLD). */
struct lrn_dppgcd_mangold_calib {
    uint64_t n_mech;  /* N = 2·K·T pure-DP mechanisms (selection + update per step) */
    double eps_step;  /* ε₀ of each mechanism: largest value with eps_check ≤ ε */
    double eps_check; /* √(2N log(1/δ))ε₀ + Nε₀(e^{ε₀} − 1) ≤ ε */
};

/* Solve the advanced composition formula for ε₀. Returns CORE_OK or CORE_EINVAL (K, T = 0;
 * ε, δ out of range; NaN). */
CORE_MUST_CHECK core_err lrn_dppgcd_mangold_calibrate(size_t steps, size_t rounds, double eps,
                                                      double delta,
                                                      struct lrn_dppgcd_mangold_calib *out);

/* ε of n pure ε₀-DP mechanisms by advanced composition at δ (n = 0 → 0). */
double lrn_dppgcd_adv_eps(uint64_t n, double eps_step, double delta);

struct lrn_dppgcd;

/* New DP-PGCD solver over one participant's rows.
 *   X    n×d row-major, borrowed for the object's lifetime (the only data it reads).
 *   o    options, copied (m_public copied too).
 *   rng  noise source, borrowed for the lifetime.
 *   out  new; caller frees with lrn_dppgcd_free().
 * With LRN_M_PRIVATE this draws the M noise now and charges ρ_M.
 * Returns CORE_OK, CORE_EINVAL, CORE_ETOOBIG, CORE_ERNG, CORE_ENUMERIC. */
CORE_MUST_CHECK core_err lrn_dppgcd_new(size_t n, size_t d, const double *X,
                                        const struct lrn_dppgcd_opts *o, const struct core_rng *rng,
                                        struct lrn_dppgcd **out);
void lrn_dppgcd_free(struct lrn_dppgcd *s); /* NULL-safe */

/* Prepare the clipped data state for (B, ρ₂) without any private step or charge: sets
 * C_ij for ρ₂ and computes the residuals and D. lrn_dppgcd_solve() does this itself; it is
 * public so audits can inspect D (lrn_dppgcd_data_gradient()) for a given B.
 * Returns CORE_OK, CORE_EINVAL. */
CORE_MUST_CHECK core_err lrn_dppgcd_prepare(struct lrn_dppgcd *s, const double *B, double rho2);

/* K private steps from the warm start B (in/out, d×d; diagonal zeroed).
 *   W, beta  d×d borrowed (beta NULL = 0).  rho2 ≥ 0.
 * Returns CORE_OK, CORE_EINVAL, CORE_EBUDGET (more rounds than calibrated: nothing done),
 * CORE_ERNG/CORE_ENUMERIC (sampler failure: B is left unchanged from the last good step;
 * the run must be abandoned). */
CORE_MUST_CHECK core_err lrn_dppgcd_solve(struct lrn_dppgcd *s, const double *W, const double *beta,
                                          double rho2, double *B);

/* Privacy spent so far. */
struct lrn_dppgcd_spent {
    double rho;   /* zCDP spent by the optimisation steps */
    double rho_m; /* zCDP spent estimating M (0 unless LRN_M_PRIVATE) */
    double eps;   /* (ε, δ) of rho + rho_m at delta (simple conversion, Theorem A.2);
                   * Mangold: advanced composition of the steps at δ, plus (when M is
                   * private) ρ_M converted at δ, composed basically: delta is then 2δ */
    double delta;
    bool m_private; /* false for LRN_M_EXACT: the guarantee does NOT cover M */
    uint64_t steps;
    double em_scale;  /* β of the last call (public: derived from public parameters) */
    size_t last_sel;  /* i·d + j of the last selected coordinate (a released output) */
    double upd_scale; /* noise scale of the last update: Gaussian σ_ij (zCDP) or the
                       * Laplace scale b = t·g (Mangold) as calibrated by core */
    enum lrn_dp_variant variant;
    uint64_t mechs; /* Mangold: pure-DP mechanisms run so far (2 per step) */
};
void lrn_dppgcd_spent(const struct lrn_dppgcd *s, struct lrn_dppgcd_spent *out);

/* The clipped data gradient D (d×d, valid until the next call). For tests/audit. */
const double *lrn_dppgcd_data_gradient(const struct lrn_dppgcd *s);
/* The M_i in use (d values). */
const double *lrn_dppgcd_m(const struct lrn_dppgcd *s);

/* DP-PGCD as ADMM local ops: one lrn_dppgcd per participant.
 *   X     P pointers to n[p]×d rows, borrowed.  n: P sizes, copied.
 *   out   new; caller frees with lrn_dppgcd_local_free(). */
struct lrn_dppgcd_local;
struct lrn_local_ops;
CORE_MUST_CHECK core_err lrn_dppgcd_local_new(size_t d, size_t P, const double *const *X,
                                              const size_t *n, const struct lrn_dppgcd_opts *o,
                                              const struct core_rng *rng,
                                              struct lrn_dppgcd_local **out);
void lrn_dppgcd_local_free(struct lrn_dppgcd_local *l); /* NULL-safe */
struct lrn_local_ops lrn_dppgcd_local_ops(struct lrn_dppgcd_local *l);
/* The participant's solver (for lrn_dppgcd_spent()); p < P. */
const struct lrn_dppgcd *lrn_dppgcd_local_get(const struct lrn_dppgcd_local *l, size_t p);

#endif /* LRN_DPPGCD_H */
