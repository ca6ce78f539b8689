/* lrn/pgcd.h - proximal greedy coordinate descent (PGCD), the Fed-Sparse-BNSL local solver.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Minimises, over B (d×d, row-major, diag(B) = 0), the local ADMM subproblem
 * (paper Eq. 4, restated in DESIGN.md §6 step 1):
 *   F(B) = ½ tr((B−I)ᵀΣ(B−I)) + tr(βᵀ(B − W)) + (ρ₂/2)‖B − W‖²_F + λ‖B‖₁
 * whose smooth gradient is G = Σ(B − I) + β + ρ₂(B − W), coordinate smoothness
 * M_ij = Σ_ii + ρ₂. Each step picks the Gauss–Southwell-s coordinate (paper Eq. 8)
 *   S_ij = √M_ij · |prox_{λ/M_ij}(B_ij − G_ij/M_ij) − B_ij|,   (i ≠ j)
 * and updates it with step γ (paper Eq. 9):
 *   B_ij ← prox_{γλ/M_ij}(B_ij − γ G_ij/M_ij).
 * A change of B_ij alters only column j of G (G[:,j] += δ·Σ[:,i], G_ij += ρ₂δ) and
 * only column j of S, so one step costs O(d): the column maxima of S are kept and the
 * best column found in O(d).
 *
 * Σ here is the participant's X_pᵀX_p/n_p (or whatever scaling the caller chose).
 *
 * Pure: no I/O, no allocation after lrn_pgcd_new().
 * Thread-safety: one lrn_pgcd per thread.
 */
#ifndef LRN_PGCD_H
#define LRN_PGCD_H

#include <stddef.h>

#include "core/err.h"

#define LRN_PGCD_MAX_D 4096

struct lrn_pgcd_opts {
    double lambda;    /* ℓ1 weight λ ≥ 0 (paper B.3.2 tuned: 0.1) */
    double gamma;     /* step γ in (0, 1] (tuned: 0.5) */
    size_t max_steps; /* K: coordinate steps per call (≥ 1) */
    double tol;       /* stop early when max S_ij ≤ tol (0: never stop early) */
};

/* Outcome of one lrn_pgcd_solve(). */
struct lrn_pgcd_stats {
    size_t steps;     /* coordinate steps taken */
    double max_score; /* max S_ij at exit */
    size_t nnz;       /* nonzeros of B at exit */
};

struct lrn_pgcd;

/* New solver for one participant.
 *   sigma  d×d symmetric, row-major; borrowed, must stay valid and unchanged for the
 *          solver's lifetime; diagonal entries must be > 0 or ρ₂ > 0.
 *   out    new; caller frees with lrn_pgcd_free().
 * Returns CORE_OK, CORE_EINVAL (d == 0, non-finite sigma), CORE_ETOOBIG. */
CORE_MUST_CHECK core_err lrn_pgcd_new(size_t d, const double *sigma, struct lrn_pgcd **out);
void lrn_pgcd_free(struct lrn_pgcd *s); /* NULL-safe */

/* Run PGCD on F(B) from the warm start B.
 *   W, beta  in, d×d row-major, borrowed (β_p; NULL means 0).
 *   rho2     ADMM penalty ρ₂ ≥ 0 (with M_ii = Σ_ii + ρ₂ > 0 required for every i).
 *   B        in/out d×d row-major: warm start in, iterate out; its diagonal is zeroed.
 *   stats    out (optional).
 * The gradient is computed once in full (dgemm, O(d³)) per call, then maintained
 * incrementally. Returns CORE_OK, CORE_EINVAL (bad options, non-finite input),
 * CORE_ENUMERIC (iterate became non-finite). */
CORE_MUST_CHECK core_err lrn_pgcd_solve(struct lrn_pgcd *s, const struct lrn_pgcd_opts *o,
                                        const double *W, const double *beta, double rho2, double *B,
                                        struct lrn_pgcd_stats *stats);

/* The smooth gradient G kept by the last lrn_pgcd_solve() (d×d row-major, valid until the
 * next call or free). Exposed so tests can compare it with a full recomputation. */
const double *lrn_pgcd_gradient(const struct lrn_pgcd *s);

/* Soft-threshold prox_{t|·|}(x) = sign(x)·max(|x| − t, 0). */
double lrn_soft_threshold(double x, double t);

#endif /* LRN_PGCD_H */
