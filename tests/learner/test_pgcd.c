/* test_pgcd.c - PGCD local solver: known optimum, KKT conditions, incremental gradient,
 * Gauss–Southwell-s selection. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <criterion/criterion.h>

#include "lrn/admm.h"
#include "lrn/pgcd.h"
#include "lrn/sem.h"

/* Σ = XᵀX/n for n random correlated samples (seeded). Caller frees. */
static double *random_sigma(size_t d, size_t n, uint64_t seed)
{
    struct core_prng rng;
    double *X = malloc(n * d * sizeof(double)), *S = malloc(d * d * sizeof(double));

    core_prng_seed(&rng, seed);
    for (size_t k = 0; k < n; k++) {
        double common = core_prng_normal(&rng);
        for (size_t j = 0; j < d; j++)
            X[k * d + j] = (1.0 + 0.3 * (double)j) * core_prng_normal(&rng) + 0.7 * common;
    }
    cr_assert_eq(lrn_covariance(n, d, X, 1.0, S), CORE_OK);
    free(X);
    return S;
}

static void full_gradient(size_t d, const double *S, const double *B, const double *W,
                          const double *beta, double rho2, double *G)
{
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < d; j++) {
            double acc = 0.0;
            for (size_t r = 0; r < d; r++)
                acc += S[i * d + r] * (B[r * d + j] - (r == j ? 1.0 : 0.0));
            G[i * d + j] = acc + beta[i * d + j] + rho2 * (B[i * d + j] - W[i * d + j]);
        }
}

Test(pgcd, soft_threshold_is_the_l1_prox)
{
    cr_assert_float_eq(lrn_soft_threshold(3.0, 1.0), 2.0, 0.0);
    cr_assert_float_eq(lrn_soft_threshold(-3.0, 1.0), -2.0, 0.0);
    cr_assert_float_eq(lrn_soft_threshold(0.5, 1.0), 0.0, 0.0);
    cr_assert_float_eq(lrn_soft_threshold(-1.0, 1.0), 0.0, 0.0);
}

/* d = 2: column 1 has the single variable B_01 with the closed-form optimum
 * B_01 = soft(Σ_01 + ρ₂W_01 − β_01, λ) / (Σ_00 + ρ₂). */
Test(pgcd, two_by_two_matches_closed_form_lasso)
{
    const double S[4] = {2.0, 0.9, 0.9, 1.5}, W[4] = {0, 0.4, -0.2, 0}, beta[4] = {0, 0.05, 0.1, 0};
    const double lambda = 0.3, rho2 = 1.0;
    struct lrn_pgcd *s = NULL;
    struct lrn_pgcd_opts o = {lambda, 1.0, 100, 0.0};
    struct lrn_pgcd_stats st;
    double B[4] = {0};

    cr_assert_eq(lrn_pgcd_new(2, S, &s), CORE_OK);
    cr_assert_eq(lrn_pgcd_solve(s, &o, W, beta, rho2, B, &st), CORE_OK);
    cr_assert_float_eq(B[1], lrn_soft_threshold(0.9 + 0.4 - 0.05, lambda) / 3.0, 1e-14);
    cr_assert_float_eq(B[2], lrn_soft_threshold(0.9 - 0.2 - 0.1, lambda) / 2.5, 1e-14);
    cr_assert_float_eq(B[0], 0.0, 0.0);
    cr_assert_float_eq(B[3], 0.0, 0.0);
    cr_assert_eq(st.nnz, 2);
    lrn_pgcd_free(s);
}

/* KKT of the lasso subproblem: G_ij = −λ sign(B_ij) if B_ij ≠ 0, |G_ij| ≤ λ otherwise. */
Test(pgcd, converges_to_lasso_optimum_satisfying_kkt)
{
    enum { D = 7 };
    double *S = random_sigma(D, 400, 5);
    double W[D * D], beta[D * D], B[D * D] = {0}, G[D * D];
    const double lambda = 0.15, rho2 = 0.5;
    struct lrn_pgcd *s = NULL;
    struct lrn_pgcd_opts o = {lambda, 0.5, 200000, 1e-13};
    struct core_prng rng;
    size_t nz = 0;

    core_prng_seed(&rng, 9);
    for (int x = 0; x < D * D; x++) {
        W[x] = 0.5 * core_prng_normal(&rng);
        beta[x] = 0.1 * core_prng_normal(&rng);
    }
    cr_assert_eq(lrn_pgcd_new(D, S, &s), CORE_OK);
    cr_assert_eq(lrn_pgcd_solve(s, &o, W, beta, rho2, B, NULL), CORE_OK);
    full_gradient(D, S, B, W, beta, rho2, G);
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {
            double b = B[i * D + j], g = G[i * D + j];
            if (i == j) {
                cr_assert_float_eq(b, 0.0, 0.0);
            } else if (b != 0.0) {
                nz++;
                cr_assert_float_eq(g, -lambda * (b > 0 ? 1.0 : -1.0), 1e-9, "(%d,%d)", i, j);
            } else {
                cr_assert(fabs(g) <= lambda + 1e-9, "(%d,%d) |g| = %g", i, j, fabs(g));
            }
        }
    cr_assert(nz > 0 && nz < (size_t)(D * (D - 1)), "a non-trivial sparse optimum (%zu)", nz);
    lrn_pgcd_free(s);
    free(S);
}

Test(pgcd, incremental_gradient_equals_full_recomputation)
{
    enum { D = 12 };
    double *S = random_sigma(D, 300, 21);
    double W[D * D], beta[D * D], B[D * D] = {0}, G[D * D];
    struct lrn_pgcd *s = NULL;
    struct lrn_pgcd_opts o = {0.05, 0.5, 3000, 0.0};
    struct core_prng rng;
    struct lrn_pgcd_stats st;

    core_prng_seed(&rng, 4);
    cr_assert_eq(lrn_pgcd_new(D, S, &s), CORE_OK);
    /* several calls with changing W, β, ρ₂ (the cached data gradient is reused) */
    for (int call = 0; call < 5; call++) {
        for (int x = 0; x < D * D; x++) {
            W[x] = 0.3 * core_prng_normal(&rng);
            beta[x] = 0.05 * core_prng_normal(&rng);
        }
        double rho2 = 0.5 + call;
        cr_assert_eq(lrn_pgcd_solve(s, &o, W, beta, rho2, B, &st), CORE_OK);
        cr_assert(st.steps > 100, "many steps were taken (%zu)", st.steps);
        full_gradient(D, S, B, W, beta, rho2, G);
        const double *Gi = lrn_pgcd_gradient(s);
        for (int x = 0; x < D * D; x++)
            cr_assert_float_eq(Gi[x], G[x], 1e-10, "call %d entry %d", call, x);
    }
    /* a warm start the solver has not seen forces a full recomputation */
    for (int x = 0; x < D * D; x++)
        B[x] = x % (D + 1) == 0 ? 0.0 : 0.1 * core_prng_normal(&rng);
    o.max_steps = 1;
    cr_assert_eq(lrn_pgcd_solve(s, &o, W, beta, 1.0, B, NULL), CORE_OK);
    full_gradient(D, S, B, W, beta, 1.0, G);
    for (int x = 0; x < D * D; x++)
        cr_assert_float_eq(lrn_pgcd_gradient(s)[x], G[x], 1e-10, "entry %d", x);
    lrn_pgcd_free(s);
    free(S);
}

/* One step from B = 0 must update the coordinate with the largest GS-s score (Eq. 8). */
Test(pgcd, first_step_takes_the_gauss_southwell_s_coordinate)
{
    enum { D = 6 };
    double *S = random_sigma(D, 200, 33);
    double W[D * D] = {0}, beta[D * D] = {0}, B[D * D] = {0}, G[D * D];
    const double lambda = 0.05, rho2 = 1.0, gamma = 0.5;
    struct lrn_pgcd *s = NULL;
    struct lrn_pgcd_opts o = {lambda, gamma, 1, 0.0};
    int bi = -1, bj = -1;
    double best = -1.0;

    full_gradient(D, S, B, W, beta, rho2, G);
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {
            double M = S[i * D + i] + rho2;
            double sc = sqrt(M) * fabs(lrn_soft_threshold(-G[i * D + j] / M, lambda / M));
            if (i != j && sc > best) {
                best = sc;
                bi = i;
                bj = j;
            }
        }
    cr_assert_eq(lrn_pgcd_new(D, S, &s), CORE_OK);
    cr_assert_eq(lrn_pgcd_solve(s, &o, W, beta, rho2, B, NULL), CORE_OK);
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {
            double M = S[i * D + i] + rho2;
            double expect = i == bi && j == bj
                                ? lrn_soft_threshold(-gamma * G[i * D + j] / M, gamma * lambda / M)
                                : 0.0;
            cr_assert_float_eq(B[i * D + j], expect, 1e-15, "(%d,%d)", i, j);
        }
    cr_assert(B[bi * D + bj] != 0.0);
    lrn_pgcd_free(s);
    free(S);
}

Test(pgcd, rejects_bad_options_and_inputs)
{
    const double S[4] = {1, 0, 0, 1}, W[4] = {0};
    double B[4] = {0};
    struct lrn_pgcd *s = NULL;
    struct lrn_pgcd_opts o = {0.1, 0.5, 10, 0.0};

    cr_assert_eq(lrn_pgcd_new(0, S, &s), CORE_EINVAL);
    cr_assert_eq(lrn_pgcd_new(2, S, &s), CORE_OK);
    o.gamma = 0.0;
    cr_assert_eq(lrn_pgcd_solve(s, &o, W, NULL, 1.0, B, NULL), CORE_EINVAL);
    o.gamma = NAN;
    cr_assert_eq(lrn_pgcd_solve(s, &o, W, NULL, 1.0, B, NULL), CORE_EINVAL);
    o.gamma = 0.5;
    o.lambda = -1.0;
    cr_assert_eq(lrn_pgcd_solve(s, &o, W, NULL, 1.0, B, NULL), CORE_EINVAL);
    o.lambda = 0.1;
    cr_assert_eq(lrn_pgcd_solve(s, &o, W, NULL, NAN, B, NULL), CORE_EINVAL);
    B[1] = INFINITY;
    cr_assert_eq(lrn_pgcd_solve(s, &o, W, NULL, 1.0, B, NULL), CORE_EINVAL);
    lrn_pgcd_free(s);
}

/* ---- the per-entry solver as it was before the column scan was restructured (issue 9),
 * kept as an oracle: the same operations in the same order, so the iterates must agree to
 * the last bit (the speed-up may not change any answer) ---- */

struct oracle {
    size_t d;
    const double *S;
    double dt[16 * 16], colmax[16], m[16], bcache[16 * 16];
    size_t colarg[16];
    int have_cache;
};

static double oracle_grad(const struct oracle *q, const double *W, const double *beta,
                          const double *B, double rho2, size_t i, size_t j)
{
    size_t x = i * q->d + j;
    double g = q->dt[j * q->d + i] + rho2 * (B[x] - W[x]);
    return beta ? g + beta[x] : g;
}

static void oracle_refresh(struct oracle *q, const double *W, const double *beta, const double *B,
                           double rho2, double lambda, size_t j)
{
    double best = -1.0;
    size_t arg = j == 0 ? 1 : 0;
    for (size_t i = 0; i < q->d; i++) {
        double M = q->m[i], b = B[i * q->d + j], z, sc;
        if (i == j)
            continue;
        z = lrn_soft_threshold(b - oracle_grad(q, W, beta, B, rho2, i, j) / M, lambda / M);
        sc = sqrt(M) * fabs(z - b);
        if (sc > best) {
            best = sc;
            arg = i;
        }
    }
    q->colmax[j] = best;
    q->colarg[j] = arg;
}

static void oracle_solve(struct oracle *q, const struct lrn_pgcd_opts *o, const double *W,
                         const double *beta, double rho2, double *B)
{
    size_t d = q->d, steps = 0;
    int n = (int)d;

    for (size_t i = 0; i < d; i++) {
        B[i * d + i] = 0.0;
        q->m[i] = q->S[i * d + i] + rho2;
    }
    if (!q->have_cache || memcmp(q->bcache, B, d * d * sizeof(double)) != 0) {
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, n, n, 1.0, B, n, q->S, n, 0.0,
                    q->dt, n);
        for (size_t x = 0; x < d * d; x++)
            q->dt[x] -= q->S[x];
        memcpy(q->bcache, B, d * d * sizeof(double));
        q->have_cache = 1;
    }
    for (size_t j = 0; j < d; j++)
        oracle_refresh(q, W, beta, B, rho2, o->lambda, j);
    while (steps < o->max_steps) {
        size_t jb = 0, i;
        double M, b, nb, delta;
        for (size_t j = 1; j < d; j++)
            if (q->colmax[j] > q->colmax[jb])
                jb = j;
        if (!(q->colmax[jb] > o->tol))
            break;
        i = q->colarg[jb];
        M = q->m[i];
        b = B[i * d + jb];
        nb = lrn_soft_threshold(b - o->gamma * oracle_grad(q, W, beta, B, rho2, i, jb) / M,
                                o->gamma * o->lambda / M);
        delta = nb - b;
        if (delta == 0.0)
            break;
        B[i * d + jb] = nb;
        cblas_daxpy(n, delta, q->S + i * d, 1, q->dt + jb * d, 1);
        q->bcache[i * d + jb] = nb;
        oracle_refresh(q, W, beta, B, rho2, o->lambda, jb);
        steps++;
    }
}

Test(pgcd, the_column_scan_gives_the_per_entry_solvers_bits)
{
    enum { DMAX = 16 };
    struct core_prng rng;

    core_prng_seed(&rng, 99);
    for (uint64_t seed = 1; seed <= 8; seed++) {
        size_t D = seed % 2 ? 15 : 16; /* odd: the scalar tail after the two-row loop */
        double *S = random_sigma(D, 200, seed);
        double W[DMAX * DMAX], beta[DMAX * DMAX], B[DMAX * DMAX] = {0}, Bq[DMAX * DMAX] = {0};
        struct lrn_pgcd *s = NULL;
        struct lrn_pgcd_opts o = {0.02 * (double)seed, 0.5, 50 + 150 * seed, 1e-9};
        struct oracle q = {.d = D, .S = S};

        cr_assert_eq(lrn_pgcd_new(D, S, &s), CORE_OK);
        for (int call = 0; call < 4; call++) { /* warm starts, with and without β */
            double rho2 = 0.25 + (double)call;
            const double *bp = call % 2 ? beta : NULL;
            for (size_t x = 0; x < D * D; x++) {
                W[x] = 0.4 * core_prng_normal(&rng);
                beta[x] = 0.1 * core_prng_normal(&rng);
            }
            cr_assert_eq(lrn_pgcd_solve(s, &o, W, bp, rho2, B, NULL), CORE_OK);
            oracle_solve(&q, &o, W, bp, rho2, Bq);
            cr_assert_eq(memcmp(B, Bq, D * D * sizeof(double)), 0, "seed %llu call %d",
                         (unsigned long long)seed, call);
        }
        lrn_pgcd_free(s);
        free(S);
    }
}
