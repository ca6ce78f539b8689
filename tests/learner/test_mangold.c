/* test_mangold.c - the Mangold et al. (2023) DP-PGCD variant (lrn/dppgcd.h LRN_DP_MANGOLD;
 * `--method dp-fed-sparse-mangold`): the advanced-composition calibration and the noise
 * scales against hand-computed values, clipping on the private path (outlier row), and the
 * budget: a run never spends more than ε and a round past the budget is refused. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "lrn/admm.h"
#include "lrn/dppgcd.h"
#include "lrn/runner.h"
#include "lrn/sem.h"
#include "seeded_rng.h"

/* Advanced composition (Dwork & Roth 2014, Thm 3.20): ε = √(2N ln(1/δ))ε₀ + Nε₀(e^{ε₀} − 1).
 * Hand-computed with mpmath (40 digits, findroot), N = 2KT:
 *   K = 20, T = 100, ε = 5, δ = 1/5000²: ε₀ = 0.011979987589387643815714
 *   K = 5,  T = 4,   ε = 5, δ = 1/400²:  ε₀ = 0.135922890426689292211034 */
Test(mangold, per_step_eps_matches_advanced_composition_by_hand)
{
    struct lrn_dppgcd_mangold_calib c;
    double L = log(25e6), e0;

    cr_assert_eq(lrn_dppgcd_mangold_calibrate(20, 100, 5.0, 1.0 / 25e6, &c), CORE_OK);
    cr_assert_eq(c.n_mech, 4000u);
    cr_assert_float_eq(c.eps_step, 0.011979987589387643, 1e-15);
    cr_assert(c.eps_check <= 5.0 && c.eps_check >= 5.0 - 1e-12, "eps_check %.17g", c.eps_check);
    /* The formula itself, written out here independently of the library. */
    e0 = c.eps_step;
    cr_assert_float_eq(sqrt(2.0 * 4000.0 * L) * e0 + 4000.0 * e0 * (exp(e0) - 1.0), 5.0, 1e-9);
    cr_assert_float_eq(lrn_dppgcd_adv_eps(4000, e0, 1.0 / 25e6), c.eps_check, 1e-15);
    cr_assert_eq(lrn_dppgcd_adv_eps(0, e0, 1.0 / 25e6), 0.0);

    cr_assert_eq(lrn_dppgcd_mangold_calibrate(5, 4, 5.0, 1.0 / 160000.0, &c), CORE_OK);
    cr_assert_eq(c.n_mech, 40u);
    cr_assert_float_eq(c.eps_step, 0.13592289042668929, 1e-15);

    /* More mechanisms at the same ε → a smaller per-mechanism ε₀. */
    struct lrn_dppgcd_mangold_calib c2;
    cr_assert_eq(lrn_dppgcd_mangold_calibrate(5, 8, 5.0, 1.0 / 160000.0, &c2), CORE_OK);
    cr_assert(c2.eps_step < c.eps_step);

    cr_assert_eq(lrn_dppgcd_mangold_calibrate(0, 4, 5.0, 1e-6, &c), CORE_EINVAL);
    cr_assert_eq(lrn_dppgcd_mangold_calibrate(5, 4, NAN, 1e-6, &c), CORE_EINVAL);
    cr_assert_eq(lrn_dppgcd_mangold_calibrate(5, 4, 5.0, 0.9, &c), CORE_EINVAL);
    cr_assert_eq(lrn_dppgcd_mangold_calibrate(5, 4, 5.0, NAN, &c), CORE_EINVAL);
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

static const double m_pub[D] = {1.0, 2.0, 3.0, 2.5, 4.0};

static struct lrn_dppgcd_opts mangold_opts(void)
{
    struct lrn_dppgcd_opts o = {
        .lambda = 0.1,
        .gamma = 0.5,
        .steps = 5,
        .rounds = 4,
        .clip = 5.0,
        .eps = 5.0,
        .delta = 0.0, /* 1/n² = 1/160000 */
        .m_source = LRN_M_PUBLIC,
        .eps_m = 1.0,
        .m_bound = 50.0,
        .m_public = m_pub,
        .variant = LRN_DP_MANGOLD,
    };
    return o;
}

/* Hand-computed (mpmath) for n = 400, C = 5, ρ₂ = 1, the public M above, ε₀ as in the first
 * test (K = 5, T = 4, ε = 5, δ = 1/400²): ΣM = 4·Σ(M_i + 1) = 70,
 * C_i = 5√((M_i+1)/70), Laplace scale b_i = Δ_i/ε₀ = 2C_i/(n ε₀):
 *   b = {0.031089474777773169, 0.038076674788335851, 0.043967156877783081,
 *        0.041127509326801442, 0.049156775778060191};
 * Δ_S = 2C/(n√70) = 0.0029880715233359841, EM scale 2Δ_S·1.01/ε₀ = 0.044406828446560912
 * (the 1 % margin covers core's score quantisation). core rounds the Laplace scale up to a
 * multiple of its grid (g ≈ b·2^-40 plus one grid step of slack): relative 1e-9. */
Test(mangold, noise_scales_match_hand_computation)
{
    static double X[N * D];
    static const double b_hand[D] = {0.031089474777773169, 0.038076674788335851,
                                     0.043967156877783081, 0.041127509326801442,
                                     0.049156775778060191};
    struct lrn_dppgcd_opts o = mangold_opts();
    struct ts_rng *r = ts_rng_seeded_new(11);
    struct lrn_dppgcd *s = NULL;
    struct lrn_dppgcd_spent sp;
    double B[D * D] = {0}, W[D * D] = {0};
    int seen[D] = {0};

    make_rows(X, 3);
    o.steps = 1;
    o.rounds = 20;
    /* Recalibrate the hand value for K = 1, T = 20: N = 40 as well (same ε₀). */
    cr_assert_eq(lrn_dppgcd_new(N, D, X, &o, ts_rng_iface(r), &s), CORE_OK);
    for (int t = 0; t < 20; t++) {
        cr_assert_eq(lrn_dppgcd_solve(s, W, NULL, 1.0, B), CORE_OK);
        lrn_dppgcd_spent(s, &sp);
        size_t i = sp.last_sel / D;
        cr_assert_eq(sp.variant, LRN_DP_MANGOLD);
        cr_assert(fabs(sp.upd_scale - b_hand[i]) <= 1e-9 * b_hand[i] &&
                      sp.upd_scale >= b_hand[i] * (1.0 - 1e-15),
                  "row %zu: Laplace scale %.17g vs %.17g", i, sp.upd_scale, b_hand[i]);
        cr_assert_float_eq(sp.em_scale, 0.044406828446560912, 1e-15);
        seen[i] = 1;
    }
    cr_assert(seen[0] + seen[1] + seen[2] + seen[3] + seen[4] >= 2,
              "selections covered at least two rows");
    lrn_dppgcd_free(s);
    ts_rng_free(r);
}

/* The private path reads rows only through clipping: an outlier row (|x| = 1e6) moves every
 * clipped gradient coordinate by at most 2·C_ij/n and |D_ij| ≤ C_ij, before and after a
 * round of private Mangold steps (same seeded noise on both data sets). */
Test(mangold, outlier_row_is_clipped_on_the_private_path)
{
    static double X[N * D], Xo[N * D];
    double Ba[D * D] = {0}, Bb[D * D] = {0}, W[D * D] = {0}, C = 5.0, rho2 = 1.0, summ = 0.0;
    struct lrn_dppgcd_opts o = mangold_opts();
    struct ts_rng *r1 = ts_rng_seeded_new(1), *r2 = ts_rng_seeded_new(1);
    struct lrn_dppgcd *a = NULL, *b = NULL;

    make_rows(X, 8);
    memcpy(Xo, X, sizeof(X));
    for (int j = 0; j < D; j++)
        Xo[7 * D + j] = (j % 2 ? -1e6 : 1e6);
    Ba[0 * D + 1] = Bb[0 * D + 1] = 0.7;
    Ba[2 * D + 3] = Bb[2 * D + 3] = -0.4;
    cr_assert_eq(lrn_dppgcd_new(N, D, X, &o, ts_rng_iface(r1), &a), CORE_OK);
    cr_assert_eq(lrn_dppgcd_new(N, D, Xo, &o, ts_rng_iface(r2), &b), CORE_OK);
    for (int i = 0; i < D; i++)
        summ += (m_pub[i] + rho2) * (D - 1);
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 0) {
            cr_assert_eq(lrn_dppgcd_prepare(a, Ba, rho2), CORE_OK);
            cr_assert_eq(lrn_dppgcd_prepare(b, Bb, rho2), CORE_OK);
        } else {
            /* One private round on each; then compare D at the SAME B (a's). */
            cr_assert_eq(lrn_dppgcd_solve(a, W, NULL, rho2, Ba), CORE_OK);
            cr_assert_eq(lrn_dppgcd_solve(b, W, NULL, rho2, Bb), CORE_OK);
            for (int x = 0; x < D * D; x++)
                cr_assert(isfinite(Bb[x]) && fabs(Bb[x]) < 1e3, "B[%d] = %g", x, Bb[x]);
            cr_assert_eq(lrn_dppgcd_prepare(b, Ba, rho2), CORE_OK);
        }
        const double *Da = lrn_dppgcd_data_gradient(a), *Db = lrn_dppgcd_data_gradient(b);
        for (int i = 0; i < D; i++)
            for (int j = 0; j < D; j++) {
                double cij = C * sqrt((m_pub[i] + rho2) / summ);
                double diff = fabs(Da[i * D + j] - Db[i * D + j]);
                cr_assert(diff <= 2.0 * cij / N * (1.0 + 1e-12), "pass %d (%d,%d): %g > %g", pass,
                          i, j, diff, 2.0 * cij / N);
                cr_assert(fabs(Db[i * D + j]) <= cij * (1.0 + 1e-12), "(%d,%d)", i, j);
            }
    }
    lrn_dppgcd_free(a);
    lrn_dppgcd_free(b);
    ts_rng_free(r1);
    ts_rng_free(r2);
}

/* K steps × T rounds spend exactly the calibrated 2KT mechanisms, the reported ε (advanced
 * composition) is ≤ the budget, and a further round is refused before any draw. */
Test(mangold, run_spends_no_more_than_the_budget)
{
    static double X[N * D];
    struct lrn_dppgcd_opts o = mangold_opts();
    struct ts_rng *r = ts_rng_seeded_new(5);
    struct lrn_dppgcd *s = NULL;
    struct lrn_dppgcd_spent sp;
    double B[D * D] = {0}, W[D * D] = {0}, Bsave[D * D];

    make_rows(X, 4);
    cr_assert_eq(lrn_dppgcd_new(N, D, X, &o, ts_rng_iface(r), &s), CORE_OK);
    for (size_t t = 0; t < o.rounds; t++) {
        cr_assert_eq(lrn_dppgcd_solve(s, W, NULL, 1.0, B), CORE_OK, "round %zu", t);
        lrn_dppgcd_spent(s, &sp);
        cr_assert(sp.eps <= o.eps, "after round %zu: %g > %g", t, sp.eps, o.eps);
    }
    memcpy(Bsave, B, sizeof(B));
    cr_assert_eq(lrn_dppgcd_solve(s, W, NULL, 1.0, B), CORE_EBUDGET);
    cr_assert_eq(memcmp(Bsave, B, sizeof(B)), 0, "a refused round changes nothing");
    lrn_dppgcd_spent(s, &sp);
    cr_assert_eq(sp.mechs, 2u * o.steps * o.rounds);
    cr_assert_eq(sp.steps, o.steps * o.rounds);
    cr_assert(sp.eps <= o.eps && sp.eps >= o.eps - 1e-9, "spent %.17g of %g", sp.eps, o.eps);
    cr_assert_float_eq(sp.delta, 1.0 / 160000.0, 1e-20);
    cr_assert_eq(sp.rho, 0.0, "no zCDP charge in the Mangold variant");
    lrn_dppgcd_free(s);
    ts_rng_free(r);
}

/* With a private M (zCDP, converted at δ) the two parts compose basically: ε adds and the
 * reported δ is 2δ. */
Test(mangold, private_m_composes_basically)
{
    static double X[N * D];
    struct lrn_dppgcd_opts o = mangold_opts();
    struct ts_rng *r = ts_rng_seeded_new(6);
    struct lrn_dppgcd *s = NULL;
    struct lrn_dppgcd_spent sp;

    o.m_source = LRN_M_PRIVATE;
    make_rows(X, 5);
    cr_assert_eq(lrn_dppgcd_new(N, D, X, &o, ts_rng_iface(r), &s), CORE_OK);
    lrn_dppgcd_spent(s, &sp);
    cr_assert(sp.m_private);
    cr_assert(sp.eps > 0.0 && sp.eps <= o.eps_m * (1.0 + 1e-9), "M alone: %g", sp.eps);
    cr_assert_float_eq(sp.delta, 2.0 / 160000.0, 1e-20);
    lrn_dppgcd_free(s);
    ts_rng_free(r);
}

/* End to end through the runner (`gcdp learn --method dp-fed-sparse-mangold`): the method
 * name parses, the run finishes with a DAG, and the spent ε (optimisation + private M) is
 * within the budget. */
Test(mangold, runner_method_runs_within_budget)
{
    static double X1[N * D], X2[N * D];
    const double *x[2] = {X1, X2};
    size_t n[2] = {N, N};
    enum lrn_method m;
    struct lrn_runner_opts o;
    struct lrn_runner_result res;
    struct ts_rng *r = ts_rng_seeded_new(7);
    double Wout[D * D];
    char eb[256] = "";

    cr_assert_eq(lrn_method_parse("dp-fed-sparse-mangold", &m), CORE_OK);
    cr_assert_eq(m, LRN_METHOD_DP_FED_SPARSE_MANGOLD);
    cr_assert_str_eq(lrn_method_name(m), "dp-fed-sparse-mangold");
    cr_assert(lrn_method_is_federated(m) && lrn_method_is_dppgcd(m));
    make_rows(X1, 21);
    make_rows(X2, 22);
    o = lrn_runner_opts_default(m, D);
    cr_assert_eq(o.dppgcd.variant, LRN_DP_MANGOLD);
    o.dppgcd.rounds = o.admm.max_rounds = 5;
    o.dppgcd.steps = 5;
    o.dppgcd.eps = 20.0;
    cr_assert_eq(
        lrn_runner_run(&o, D, 2, x, n, ts_rng_iface(r), NULL, NULL, Wout, &res, eb, sizeof(eb)),
        CORE_OK, "%s", eb);
    /* private M by default (issue 8): the budget is the optimisation's ε plus ε_M */
    cr_assert(res.m_private);
    cr_assert(res.eps_spent > 20.0 && res.eps_spent <= 20.0 + o.dppgcd.eps_m + 1e-9, "spent %g",
              res.eps_spent);
    for (int k = 0; k < D * D; k++)
        cr_assert(isfinite(Wout[k]));
    ts_rng_free(r);
}
