/* test_dppgcd.c - DP-PGCD: Theorem 5.1 calibration, clipping (outlier rows), the private
 * smoothness estimate, the zCDP budget filter, determinism under a seeded source, and a
 * private end-to-end run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "core/dp_acct.h"
#include "lrn/admm.h"
#include "lrn/dppgcd.h"
#include "lrn/pgcd.h"
#include "lrn/sem.h"
#include "seeded_rng.h"

/* Hand-computed (Python, double precision): K = 20, T = 100, ε = 5, δ = 1/5000²:
 * L = ln(2.5e7) = 17.034386382832476, c = √2000 (√(L+5) + √L)/5 = 78.90058351160992,
 * ρ_step = 1/(2c²) = 8.031738760582078e-05, ρ_tot = 2000/c² = 0.3212695504232831. */
Test(dppgcd, calibration_matches_theorem_5_1_by_hand)
{
    struct lrn_dppgcd_calib c;

    cr_assert_eq(lrn_dppgcd_calibrate(20, 100, 5.0, 1.0 / 25e6, &c), CORE_OK);
    cr_assert_float_eq(c.c, 78.90058351160992, 1e-10);
    cr_assert_float_eq(c.rho_step, 8.031738760582078e-05, 1e-17);
    cr_assert_float_eq(c.rho_total, 0.3212695504232831, 1e-14);
    cr_assert_float_eq(c.eps_check, 5.0, 1e-12);
    cr_assert_eq(lrn_dppgcd_calibrate(0, 100, 5.0, 1e-6, &c), CORE_EINVAL);
    cr_assert_eq(lrn_dppgcd_calibrate(20, 100, NAN, 1e-6, &c), CORE_EINVAL);
    cr_assert_eq(lrn_dppgcd_calibrate(20, 100, 5.0, 0.9, &c), CORE_EINVAL);
}

/* Appendix A.3.2 by hand: n = 5000, d = 20, b = 100, ε_M = 1.25, δ = 1/5000²:
 * σ = (100/5000)·√20·(√(L+1.25) + √L)/(√2·1.25) = 0.42517698868508863. */
Test(dppgcd, smoothness_noise_matches_appendix_a3_by_hand)
{
    double s = 0.0;
    cr_assert_eq(lrn_dppgcd_m_sigma(5000, 20, 100.0, 1.25, 1.0 / 25e6, &s), CORE_OK);
    cr_assert_float_eq(s, 0.42517698868508863, 1e-14);
    cr_assert_eq(lrn_dppgcd_m_sigma(5000, 20, -1.0, 1.25, 1e-6, &s), CORE_EINVAL);
}

enum { N = 400, D = 5 };

static void make_rows(double *X, uint64_t seed)
{
    struct core_prng rng;
    const double W[D * D] = {0,   1.2, 0, 0, 0, 0, 0,   -0.9, 0, 0, 0, 0, 0,
                             0.8, 0,   0, 0, 0, 0, 1.1, 0,    0, 0, 0, 0};
    size_t scratch[LRN_SEM_SCRATCH(D)];

    core_prng_seed(&rng, seed);
    cr_assert_eq(lrn_sem_sample(W, D, N, 1.0, &rng, X, scratch), CORE_OK);
}

static struct lrn_dppgcd_opts base_opts(void)
{
    static const double m_pub[D] = {1.0, 2.0, 3.0, 2.5, 4.0};
    struct lrn_dppgcd_opts o = {
        .lambda = 0.1,
        .gamma = 0.5,
        .steps = 5,
        .rounds = 4,
        .clip = 5.0,
        .eps = 5.0,
        .delta = 0.0,
        .m_source = LRN_M_PUBLIC,
        .eps_m = 1.0,
        .m_bound = 50.0,
        .m_public = m_pub,
    };
    return o;
}

/* The private path reads rows only through clipping: one outlier row (|x| = 1e6) moves
 * every clipped gradient coordinate by at most 2·C_ij/n, and |D_ij| ≤ C_ij. */
Test(dppgcd, outlier_row_moves_clipped_gradient_by_at_most_sensitivity)
{
    static double X[N * D], Xo[N * D];
    double B[D * D] = {0}, C = 5.0, rho2 = 1.0, summ = 0.0;
    struct lrn_dppgcd_opts o = base_opts();
    struct ts_rng *r1 = ts_rng_seeded_new(1), *r2 = ts_rng_seeded_new(1);
    struct lrn_dppgcd *a = NULL, *b = NULL;

    make_rows(X, 8);
    memcpy(Xo, X, sizeof(X));
    for (int j = 0; j < D; j++)
        Xo[7 * D + j] = (j % 2 ? -1e6 : 1e6);
    B[0 * D + 1] = 0.7; /* a non-trivial B so residuals involve several columns */
    B[2 * D + 3] = -0.4;
    cr_assert_eq(lrn_dppgcd_new(N, D, X, &o, ts_rng_iface(r1), &a), CORE_OK);
    cr_assert_eq(lrn_dppgcd_new(N, D, Xo, &o, ts_rng_iface(r2), &b), CORE_OK);
    cr_assert_eq(lrn_dppgcd_prepare(a, B, rho2), CORE_OK);
    cr_assert_eq(lrn_dppgcd_prepare(b, B, rho2), CORE_OK);
    for (int i = 0; i < D; i++)
        summ += (o.m_public[i] + rho2) * (D - 1);
    const double *Da = lrn_dppgcd_data_gradient(a), *Db = lrn_dppgcd_data_gradient(b);
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {
            double cij = C * sqrt((o.m_public[i] + rho2) / summ);
            double diff = fabs(Da[i * D + j] - Db[i * D + j]);
            cr_assert(diff <= 2.0 * cij / N * (1.0 + 1e-12), "(%d,%d): %g > %g", i, j, diff,
                      2.0 * cij / N);
            cr_assert(fabs(Db[i * D + j]) <= cij * (1.0 + 1e-12), "(%d,%d)", i, j);
        }
    lrn_dppgcd_free(a);
    lrn_dppgcd_free(b);
    ts_rng_free(r1);
    ts_rng_free(r2);
}

/* The private M estimate (A.3.2) clips x² at b: with the same noise stream, an outlier row
 * changes each M_i by at most b/n (plus one grid step of the exact sampler). */
Test(dppgcd, private_smoothness_estimate_is_clipped)
{
    static double X[N * D], Xo[N * D];
    struct lrn_dppgcd_opts o = base_opts();
    struct ts_rng *r1 = ts_rng_seeded_new(2), *r2 = ts_rng_seeded_new(2);
    struct lrn_dppgcd *a = NULL, *b = NULL;
    struct lrn_dppgcd_spent sp;
    double sigma = 0.0;

    o.m_source = LRN_M_PRIVATE;
    make_rows(X, 9);
    memcpy(Xo, X, sizeof(X));
    for (int j = 0; j < D; j++)
        Xo[3 * D + j] = 1e8;
    cr_assert_eq(lrn_dppgcd_new(N, D, X, &o, ts_rng_iface(r1), &a), CORE_OK);
    cr_assert_eq(lrn_dppgcd_new(N, D, Xo, &o, ts_rng_iface(r2), &b), CORE_OK);
    cr_assert_eq(lrn_dppgcd_m_sigma(N, D, o.m_bound, o.eps_m, 1.0 / (N * (double)N), &sigma),
                 CORE_OK);
    for (int i = 0; i < D; i++) {
        double ma = lrn_dppgcd_m(a)[i], mb = lrn_dppgcd_m(b)[i];
        cr_assert(isfinite(ma) && ma > 0.0);
        cr_assert(fabs(ma - mb) <= o.m_bound / N + 4.0 * sigma * 0x1p-20, "M_%d: %g vs %g", i, ma,
                  mb);
    }
    lrn_dppgcd_spent(a, &sp);
    cr_assert(sp.m_private);
    cr_assert(sp.rho_m > 0.0);
    /* the charge is the rounded-up Gaussian cost of ε_M at δ: within 1 % of the nominal */
    double L = log(N * (double)N), s = sqrt(L + o.eps_m) - sqrt(L);
    cr_assert(sp.rho_m <= s * s * 1.01 && sp.rho_m >= s * s * 0.5, "rho_m %g vs %g", sp.rho_m,
              s * s);
    lrn_dppgcd_free(a);
    lrn_dppgcd_free(b);
    ts_rng_free(r1);
    ts_rng_free(r2);
}

/* T calibrated rounds run; round T+1 is refused before any data access or noise, and the
 * spent ρ converts to at most the target ε. */
Test(dppgcd, budget_filter_refuses_more_rounds_than_calibrated)
{
    static double X[N * D];
    double W[D * D] = {0}, beta[D * D] = {0}, B[D * D] = {0}, before[D * D];
    struct lrn_dppgcd_opts o = base_opts();
    struct ts_rng *r = ts_rng_seeded_new(3);
    struct lrn_dppgcd *s = NULL;
    struct lrn_dppgcd_spent sp;
    uint64_t served;

    o.rounds = 3;
    make_rows(X, 10);
    cr_assert_eq(lrn_dppgcd_new(N, D, X, &o, ts_rng_iface(r), &s), CORE_OK);
    for (int t = 0; t < 3; t++)
        cr_assert_eq(lrn_dppgcd_solve(s, W, beta, 1.0, B), CORE_OK, "round %d", t);
    memcpy(before, B, sizeof(B));
    served = ts_rng_served(r);
    cr_assert_eq(lrn_dppgcd_solve(s, W, beta, 1.0, B), CORE_EBUDGET);
    cr_assert_arr_eq(B, before, sizeof(B));
    cr_assert_eq(ts_rng_served(r), served, "no noise drawn for a refused round");
    lrn_dppgcd_spent(s, &sp);
    cr_assert_eq(sp.steps, 15);
    cr_assert(sp.eps <= o.eps, "spent eps %g ≤ %g", sp.eps, o.eps);
    cr_assert(sp.eps >= 0.9 * o.eps, "and most of it was used (%g)", sp.eps);
    cr_assert_float_eq(sp.delta, 1.0 / (N * (double)N), 1e-20);
    lrn_dppgcd_free(s);
    ts_rng_free(r);
}

Test(dppgcd, seeded_source_makes_runs_reproducible_and_exact_m_is_flagged)
{
    static double X[N * D];
    double W[D * D] = {0}, B1[D * D] = {0}, B2[D * D] = {0};
    struct lrn_dppgcd_opts o = base_opts();
    struct ts_rng *r1 = ts_rng_seeded_new(4), *r2 = ts_rng_seeded_new(4);
    struct lrn_dppgcd *a = NULL, *b = NULL;
    struct lrn_dppgcd_spent sp;

    o.m_source = LRN_M_EXACT;
    make_rows(X, 11);
    cr_assert_eq(lrn_dppgcd_new(N, D, X, &o, ts_rng_iface(r1), &a), CORE_OK);
    cr_assert_eq(lrn_dppgcd_new(N, D, X, &o, ts_rng_iface(r2), &b), CORE_OK);
    cr_assert_eq(lrn_dppgcd_solve(a, W, NULL, 1.0, B1), CORE_OK);
    cr_assert_eq(lrn_dppgcd_solve(b, W, NULL, 1.0, B2), CORE_OK);
    cr_assert_arr_eq(B1, B2, sizeof(B1));
    size_t nz = 0;
    for (int x = 0; x < D * D; x++)
        nz += B1[x] != 0.0;
    cr_assert(nz >= 1 && nz <= 5, "K = 5 steps touch at most 5 coordinates (%zu)", nz);
    lrn_dppgcd_spent(a, &sp);
    cr_assert_not(sp.m_private, "exact M is reported as not private");
    lrn_dppgcd_free(a);
    lrn_dppgcd_free(b);
    ts_rng_free(r1);
    ts_rng_free(r2);
}

Test(dppgcd, rng_failure_fails_closed)
{
    static double X[N * D];
    double W[D * D] = {0}, B[D * D] = {0};
    struct lrn_dppgcd_opts o = base_opts();
    struct ts_rng *r = ts_rng_failing_new(5, 64);
    struct lrn_dppgcd *s = NULL;

    make_rows(X, 12);
    cr_assert_eq(lrn_dppgcd_new(N, D, X, &o, ts_rng_iface(r), &s), CORE_OK);
    core_err rc = CORE_OK;
    for (int t = 0; t < 4 && rc == CORE_OK; t++)
        rc = lrn_dppgcd_solve(s, W, NULL, 1.0, B);
    cr_assert_eq(rc, CORE_ERNG);
    lrn_dppgcd_free(s);
    ts_rng_free(r);
}

Test(dppgcd, rejects_bad_options)
{
    static double X[N * D];
    struct lrn_dppgcd_opts o = base_opts();
    struct ts_rng *r = ts_rng_seeded_new(6);
    struct lrn_dppgcd *s = NULL;

    make_rows(X, 13);
    o.clip = 0.0;
    cr_assert_eq(lrn_dppgcd_new(N, D, X, &o, ts_rng_iface(r), &s), CORE_EINVAL);
    o = base_opts();
    o.delta = 0.9;
    cr_assert_eq(lrn_dppgcd_new(N, D, X, &o, ts_rng_iface(r), &s), CORE_EINVAL);
    o = base_opts();
    o.eps = NAN;
    cr_assert_eq(lrn_dppgcd_new(N, D, X, &o, ts_rng_iface(r), &s), CORE_EINVAL);
    o = base_opts();
    o.m_public = NULL;
    cr_assert_eq(lrn_dppgcd_new(N, D, X, &o, ts_rng_iface(r), &s), CORE_EINVAL);
    o = base_opts();
    o.m_source = LRN_M_PRIVATE;
    o.m_bound = 0.0;
    cr_assert_eq(lrn_dppgcd_new(N, D, X, &o, ts_rng_iface(r), &s), CORE_EINVAL);
    o = base_opts();
    X[3] = NAN;
    cr_assert_eq(lrn_dppgcd_new(N, D, X, &o, ts_rng_iface(r), &s), CORE_EINVAL);
    cr_assert_null(s);
    ts_rng_free(r);
}

/* DP-Fed-Sparse-BNSL end to end at a weak privacy level recovers a chain: the private
 * solver plugs into the same ADMM driver. */
Test(dppgcd, private_admm_recovers_a_chain_at_large_epsilon)
{
    enum { P = 4, NP = 3000, DD = 4 };
    const double truth[DD * DD] = {0, 1.5, 0, 0, 0, 0, -1.2, 0, 0, 0, 0, 1.0, 0, 0, 0, 0};
    static double X[P * NP * DD];
    const double *xp[P];
    size_t n[P], scratch[LRN_SEM_SCRATCH(DD)];
    struct core_prng rng;
    struct ts_rng *r = ts_rng_seeded_new(7);
    struct lrn_dppgcd_opts o = base_opts();
    struct lrn_dppgcd_local *l = NULL;
    struct lrn_admm_opts ao = lrn_admm_opts_default();
    struct lrn_admm_result res;
    struct lrn_local_ops ops;
    struct lrn_dppgcd_spent sp;
    double W[DD * DD];

    core_prng_seed(&rng, 14);
    for (int p = 0; p < P; p++) {
        cr_assert_eq(lrn_sem_sample(truth, DD, NP, 1.0, &rng, X + p * NP * DD, scratch), CORE_OK);
        xp[p] = X + p * NP * DD;
        n[p] = NP;
    }
    o.m_source = LRN_M_PRIVATE;
    o.m_bound = 50.0;
    o.eps_m = 5.0;
    o.eps = 500.0;
    o.steps = 20;
    o.rounds = 30;
    o.clip = 20.0;
    ao.max_rounds = 30;
    cr_assert_eq(lrn_dppgcd_local_new(DD, P, xp, n, &o, ts_rng_iface(r), &l), CORE_OK);
    ops = lrn_dppgcd_local_ops(l);
    cr_assert_eq(lrn_admm_run(DD, P, &ops, &ao, NULL, NULL, W, NULL, &res), CORE_OK);
    for (int x = 0; x < DD * DD; x++)
        cr_assert_eq(truth[x] != 0.0, W[x] != 0.0, "entry %d: %g", x, W[x]);
    lrn_dppgcd_spent(lrn_dppgcd_local_get(l, 0), &sp);
    cr_assert(sp.m_private);
    cr_assert_eq(sp.steps, 600);
    double eps_opt = 0.0;
    cr_assert_eq(core_dp_zcdp_eps_simple(sp.rho, sp.delta, &eps_opt), CORE_OK);
    cr_assert(eps_opt <= o.eps, "optimisation spent eps %g ≤ %g", eps_opt, o.eps);
    cr_assert(sp.eps > eps_opt, "the reported total includes the M estimate");
    lrn_dppgcd_local_free(l);
    ts_rng_free(r);
}

/* Running ADMM for more rounds than DP-PGCD was calibrated for fails closed. */
Test(dppgcd, admm_beyond_calibrated_rounds_is_refused)
{
    static double X[N * D];
    const double *xp[1] = {X};
    size_t n[1] = {N};
    struct lrn_dppgcd_opts o = base_opts();
    struct ts_rng *r = ts_rng_seeded_new(15);
    struct lrn_dppgcd_local *l = NULL;
    struct lrn_admm_opts ao = lrn_admm_opts_default();
    struct lrn_admm_result res;
    struct lrn_local_ops ops;
    double W[D * D];

    make_rows(X, 16);
    o.rounds = 2;
    ao.max_rounds = 3;
    cr_assert_eq(lrn_dppgcd_local_new(D, 1, xp, n, &o, ts_rng_iface(r), &l), CORE_OK);
    ops = lrn_dppgcd_local_ops(l);
    cr_assert_eq(lrn_admm_run(D, 1, &ops, &ao, NULL, NULL, W, NULL, &res), CORE_EBUDGET);
    ao.max_rounds = 2;
    lrn_dppgcd_local_free(l);
    cr_assert_eq(lrn_dppgcd_local_new(D, 1, xp, n, &o, ts_rng_iface(r), &l), CORE_OK);
    ops = lrn_dppgcd_local_ops(l);
    cr_assert_eq(lrn_admm_run(D, 1, &ops, &ao, NULL, NULL, W, NULL, &res), CORE_OK);
    lrn_dppgcd_local_free(l);
    ts_rng_free(r);
}

/* The private selection follows the exponential mechanism at the calibrated scale:
 * P(select ij) ∝ exp(S_ij/β), β = c·Δ_S (Theorem 5.1 with the 1 % margin). d = 3 (6
 * candidates), N = 4000 selections from the same state; Pearson χ² with 5 degrees of
 * freedom against the continuous-score probabilities must stay below 35.89 (α = 1e-6;
 * the quantisation at 2^-frac_bits ≪ β moves probabilities by < 1e-4 relative). */
Test(dppgcd, selection_follows_exponential_mechanism_at_calibrated_scale)
{
    enum { DN = 400, DD = 3, NSEL = 4000 };
    static double X[DN * DD];
    const double Wt[DD * DD] = {0, 1.2, 0, 0, 0, -0.9, 0, 0, 0};
    static const double m_pub[DD] = {1.0, 2.0, 3.0};
    double W[DD * DD] = {0}, B[DD * DD], S[DD * DD] = {0}, p[DD * DD] = {0}, tot = 0.0;
    size_t scratch[LRN_SEM_SCRATCH(DD)], count[DD * DD] = {0};
    struct core_prng rng;
    struct lrn_dppgcd_opts o = base_opts();
    struct lrn_dppgcd_calib cal;
    struct lrn_dppgcd_spent sp;
    struct ts_rng *r = ts_rng_seeded_new(17);
    struct lrn_dppgcd *s = NULL;
    double rho2 = 1.0, summ = 0.0, chi2 = 0.0;

    core_prng_seed(&rng, 18);
    cr_assert_eq(lrn_sem_sample(Wt, DD, DN, 1.0, &rng, X, scratch), CORE_OK);
    o.m_public = m_pub;
    o.steps = 1;
    o.rounds = NSEL;
    o.eps = 200.0;
    cr_assert_eq(lrn_dppgcd_new(DN, DD, X, &o, ts_rng_iface(r), &s), CORE_OK);
    memset(B, 0, sizeof(B));
    cr_assert_eq(lrn_dppgcd_prepare(s, B, rho2), CORE_OK);
    const double *Dg = lrn_dppgcd_data_gradient(s);
    for (int i = 0; i < DD; i++) {
        double M = m_pub[i] + rho2;
        summ += M * (DD - 1);
        for (int j = 0; j < DD; j++)
            if (i != j)
                S[i * DD + j] =
                    sqrt(M) * fabs(lrn_soft_threshold(-Dg[i * DD + j] / M, o.lambda / M));
    }
    cr_assert_eq(lrn_dppgcd_calibrate(1, NSEL, 200.0, 1.0 / (DN * (double)DN), &cal), CORE_OK);
    double beta = cal.c * 1.01 * 2.0 * o.clip / (DN * sqrt(summ));
    for (int x = 0; x < DD * DD; x++)
        if (x % (DD + 1) != 0)
            tot += p[x] = exp(S[x] / beta);
    for (int k = 0; k < NSEL; k++) {
        memset(B, 0, sizeof(B));
        cr_assert_eq(lrn_dppgcd_solve(s, W, NULL, rho2, B), CORE_OK);
        lrn_dppgcd_spent(s, &sp);
        count[sp.last_sel]++;
    }
    cr_assert_float_eq(sp.em_scale, beta, 1e-12 * beta);
    double pmax = 0.0;
    for (int x = 0; x < DD * DD; x++) {
        if (x % (DD + 1) == 0) {
            cr_assert_eq(count[x], 0, "the diagonal is never selected");
            continue;
        }
        double e = NSEL * p[x] / tot;
        pmax = fmax(pmax, p[x] / tot);
        double c = (double)count[x];
        chi2 += (c - e) * (c - e) / e;
    }
    cr_assert(pmax > 0.3 && pmax < 0.95, "a non-degenerate distribution (max p %g)", pmax);
    cr_assert(chi2 < 35.89, "chi2 = %g with 5 df", chi2);
    lrn_dppgcd_free(s);
    ts_rng_free(r);
}
