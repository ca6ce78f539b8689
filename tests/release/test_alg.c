/* test_alg.c - Algorithms 2-4 pure code: Propositions 1 and 2 as property tests over
 * random inputs, the Algorithm 3 refusal rule and every Algorithm 4 refusal. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "rel/alloc.h"
#include "rel/bounds.h"
#include "rel/mech.h"

/* splitmix64: deterministic test inputs (not noise). */
static uint64_t sm_state;
static uint64_t sm_next(void)
{
    uint64_t z = (sm_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static double sm_unif(void)
{
    return (double)(sm_next() >> 11) * 0x1p-53;
}
static uint32_t sm_below(uint32_t n)
{
    return (uint32_t)(sm_next() % n);
}

static const struct rel_query_params QP = {10, 1000, 0};

Test(rel_bounds, policy_counts_follow_graph_hops_and_time_radius)
{
    /* path 0-1-2-3, hops 1, radius 2 -> 5 occurrences per reached channel */
    const uint32_t edges[] = {0, 1, 1, 2, 2, 3};
    uint32_t counts[16], work[8];
    const uint32_t expect[16] = {5, 5, 0, 0, 5, 5, 5, 0, 0, 5, 5, 5, 0, 0, 5, 5};

    cr_assert_eq(rel_policy_counts(4, edges, 3, 1, 2, 1, counts, work), CORE_OK);
    cr_assert_arr_eq(counts, expect, sizeof(expect));
    cr_assert_eq(rel_policy_counts(4, edges, 3, 0, 0, 3, counts, work), CORE_OK);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            cr_assert_eq(counts[i * 4 + j], i == j ? 1u : 0u);
    cr_assert_eq(rel_policy_counts(4, edges, 3, 3, 0, 1, counts, work), CORE_OK);
    cr_assert_eq(counts[0 * 4 + 3], 1u, "three hops reach the far end");
    cr_assert_eq(rel_policy_counts(4, edges, 3, 1, 2, 2, counts, work), CORE_OK);
    cr_assert_eq(counts[0], 10u, "two readings per slot double the count");
    const uint32_t bad[] = {0, 4};
    cr_assert_eq(rel_policy_counts(4, bad, 1, 1, 0, 1, counts, work), CORE_EINVAL);
    cr_assert_eq(rel_policy_counts(4, edges, 3, 1, 1, 0, counts, work), CORE_EINVAL);
}

Test(rel_bounds, stat_sensitivities_match_design_formulas)
{
    struct rel_query_params qp = {20, 500, 2};
    cr_assert_float_eq(rel_stat_sensitivity(REL_STAT_MEAN, 1, &qp), 5.0 / 20.0, 1e-15);
    cr_assert_float_eq(rel_stat_sensitivity(REL_STAT_MEAN, 100, &qp), 1.0, 0.0,
                       "mean capped at the clipped range");
    cr_assert_float_eq(rel_stat_sensitivity(REL_STAT_SUM, 2, &qp), 10.0, 1e-15);
    cr_assert_eq(rel_stat_sensitivity(REL_STAT_COUNT, 5, &qp), 0.0);
    cr_assert_eq(rel_stat_sensitivity(REL_STAT_MIN, 1, &qp), 1.0);
    cr_assert_eq(rel_stat_sensitivity(REL_STAT_MAX, 1, &qp), 1.0);
    cr_assert_float_eq(rel_stat_sensitivity(REL_STAT_STD, 1, &qp), sqrt(5.0 / 19.0), 1e-15);
    cr_assert_eq(rel_stat_sensitivity(REL_STAT_MEAN, 0, &qp), 0.0);
}

Test(rel_bounds, linear_combination_adds_abs_coefficients_and_falls_back_to_range)
{
    /* channels 0,1 joined in G0; time radius 0 */
    const uint32_t edges[] = {0, 1};
    uint32_t counts[4], work[4];
    struct rel_term t[2] = {{0, REL_STAT_MEAN, 2.0}, {1, REL_STAT_MEAN, -1.0}};
    double lo, hi, B;
    int analytic;

    cr_assert_eq(rel_policy_counts(2, edges, 1, 1, 0, 1, counts, work), CORE_OK);
    cr_assert_eq(rel_coord_bound(2, counts, 2, t, &QP, &lo, &hi, &B, &analytic), CORE_OK);
    cr_assert_float_eq(lo, -1.0, 0.0);
    cr_assert_float_eq(hi, 2.0, 0.0);
    cr_assert_float_eq(B, 3.0 / 10.0, 1e-15); /* (2 + 1) * 1/10 */
    cr_assert(B >= 0.3, "rounded up, never down");
    cr_assert_eq(analytic, 1);
    t[0].stat = REL_STAT_MAX; /* max falls back to the clipped range: 2*1 + 0.1 > 3 ? */
    cr_assert_eq(rel_coord_bound(2, counts, 2, t, &QP, &lo, &hi, &B, &analytic), CORE_OK);
    cr_assert_float_eq(B, 2.1, 1e-12);
    t[1].coef = NAN;
    cr_assert_eq(rel_coord_bound(2, counts, 2, t, &QP, &lo, &hi, &B, &analytic), CORE_EINVAL);
}

/* Evaluate stat over m samples (population std). */
static double eval_stat(enum rel_stat s, const double *x, size_t m)
{
    double acc = 0.0, mn = x[0], mx = x[0], mean, v = 0.0;
    for (size_t i = 0; i < m; i++) {
        acc += x[i];
        mn = fmin(mn, x[i]);
        mx = fmax(mx, x[i]);
    }
    mean = acc / (double)m;
    for (size_t i = 0; i < m; i++)
        v += (x[i] - mean) * (x[i] - mean);
    switch (s) {
    case REL_STAT_MEAN:
        return mean;
    case REL_STAT_SUM:
        return acc;
    case REL_STAT_COUNT:
        return (double)m;
    case REL_STAT_MIN:
        return mn;
    case REL_STAT_MAX:
        return mx;
    default:
        return sqrt(v / (double)(m - 1));
    }
}

#define PC 4  /* channels */
#define PM 10 /* samples per channel per window (= n_min: the tight case) */

static double eval_coord(const struct rel_term *t, size_t nt, double x[PC][PM])
{
    double q = 0.0;
    for (size_t i = 0; i < nt; i++)
        q += t[i].coef * eval_stat(t[i].stat, x[t[i].chan], PM);
    return q;
}

/* Proposition 1 / Algorithm 2 step 2 as a property: for random policies, coordinates and
 * windows, every neighbour D' (values inside Γ(u) replaced arbitrarily in [0,1], extremes
 * included) moves the projected coordinate by at most B_k <= s_k.
 * N = 300 random (policy, coordinate) cases x 200 neighbours; threshold: zero violations. */
Test(rel_bounds, proposition1_certified_bound_dominates_neighbour_displacement)
{
    struct rel_query_params qp = {10, 1000, 0};
    double tightest = 0.0; /* max |dq| / B over all cases: the test must get close to B */
    sm_state = 42;
    for (int cs = 0; cs < 300; cs++) {
        uint32_t edges[8], counts[PC * PC], work[2 * PC], ne = sm_below(4), radius = sm_below(3);
        struct rel_term t[3];
        size_t nt = 1 + sm_below(3);
        double lo, hi, B, s, xi = sm_unif() * 0.5, x[PC][PM], y[PC][PM];
        for (uint32_t e = 0; e < 2 * ne; e++)
            edges[e] = sm_below(PC);
        cr_assert_eq(rel_policy_counts(PC, edges, ne, 1, radius, 1, counts, work), CORE_OK);
        for (size_t i = 0; i < nt; i++) {
            t[i].chan = sm_below(PC);
            t[i].stat = (enum rel_stat)sm_below(REL_STAT_N_);
            t[i].coef = (sm_unif() - 0.5) * 4.0;
        }
        cr_assert_eq(rel_coord_bound(PC, counts, nt, t, &qp, &lo, &hi, &B, NULL), CORE_OK);
        cr_assert_eq(rel_scale_compute(1, &B, &xi, &s), CORE_OK);
        cr_assert(s >= B);
        for (int nb = 0; nb < 200; nb++) {
            uint32_t ui = sm_below(PC), ut = sm_below(PM);
            for (int c = 0; c < PC; c++)
                for (int m = 0; m < PM; m++)
                    x[c][m] = y[c][m] = sm_unif();
            for (uint32_t c = 0; c < PC; c++) {
                if (!counts[ui * PC + c])
                    continue;
                for (int m = (int)ut - (int)radius; m <= (int)ut + (int)radius; m++)
                    if (m >= 0 && m < PM)
                        y[c][m] = (nb & 1) ? (double)sm_below(2) : sm_unif();
            }
            if (nb % 4 == 3) /* adversarial pair: x at one extreme, y at the other */
                for (uint32_t c = 0; c < PC; c++)
                    for (int m = 0; m < PM; m++)
                        if (x[c][m] != y[c][m]) {
                            x[c][m] = 0.0;
                            y[c][m] = 1.0;
                        }
            double q1 = fmin(fmax(eval_coord(t, nt, x), lo), hi);
            double q2 = fmin(fmax(eval_coord(t, nt, y), lo), hi);
            cr_assert(fabs(q1 - q2) <= B * (1 + 1e-12), "case %d: |dq| = %g > B = %g", cs,
                      fabs(q1 - q2), B);
            if (B > 0.0)
                tightest = fmax(tightest, fabs(q1 - q2) / B);
        }
    }
    cr_assert(tightest > 0.99, "the neighbours never came near B (max ratio %g)", tightest);
}

Test(rel_bounds, scale_is_max_of_bound_and_influence_and_nan_fails_closed)
{
    double B[3] = {0.1, 0.5, 0.0}, xi[3] = {0.3, 0.2, 0.0}, s[3];
    cr_assert_eq(rel_scale_compute(3, B, xi, s), CORE_OK);
    cr_assert_float_eq(s[0], 0.3, 0.0);
    cr_assert_float_eq(s[1], 0.5, 0.0);
    cr_assert_eq(s[2], 0.0);
    cr_assert_eq(rel_scale_compute(3, B, NULL, s), CORE_OK);
    cr_assert_float_eq(s[0], 0.1, 0.0);
    xi[1] = NAN;
    cr_assert_eq(rel_scale_compute(3, B, xi, s), CORE_EINVAL);
    xi[1] = 0.2;
    B[0] = -1.0;
    cr_assert_eq(rel_scale_compute(3, B, xi, s), CORE_EINVAL);
}

static const struct rel_alloc_params AP = {1.0, 1.0, 0.7, 1e-8, 0.0};

/* Proposition 2 over random θ: N = 2000 random (d, r, s, μ, β, ε_rel) draws; every ε_k >=
 * ε_min, Σ ε_k <= ε_rel exactly in double arithmetic and within 1e-12 relative of ε_rel. */
Test(rel_alloc, proposition2_floor_and_exact_total_over_random_theta)
{
    double r[64], s[64], mu[64], eps[64], emin;
    sm_state = 7;
    for (int it = 0; it < 2000; it++) {
        size_t d = 1 + sm_below(64);
        double eps_rel = 0.05 + 8.0 * sm_unif(), sum = 0.0;
        struct rel_alloc_params p = {2 * sm_unif(), 2 * sm_unif(), 2 * sm_unif(), 1e-8, 0.0};
        for (size_t k = 0; k < d; k++) {
            r[k] = sm_unif();
            s[k] = 0.001 + 3 * sm_unif();
            mu[k] = sm_unif();
        }
        if (it % 3 == 0)
            p.eps_min = eps_rel / (double)d * 0.5 * sm_unif() + 1e-9;
        cr_assert_eq(rel_alloc(d, eps_rel, r, s, mu, &p, eps, &emin), CORE_OK);
        for (size_t k = 0; k < d; k++) {
            cr_assert(eps[k] >= emin * (1 - 1e-12), "eps[%zu]=%g < eps_min=%g", k, eps[k], emin);
            sum += eps[k];
        }
        cr_assert(sum <= eps_rel, "sum %.17g > eps_rel %.17g", sum, eps_rel);
        cr_assert(fabs(sum - eps_rel) <= 1e-12 * eps_rel);
        if (p.eps_min == 0.0)
            cr_assert_float_eq(emin, eps_rel / (100.0 * (double)d), 1e-15);
    }
}

Test(rel_alloc, weights_follow_exposure_scale_and_utility)
{
    double r[2] = {0.9, 0.1}, s[2] = {1.0, 1.0}, mu[2] = {0.5, 0.5}, eps[2];
    cr_assert_eq(rel_alloc(2, 1.0, r, s, mu, &AP, eps, NULL), CORE_OK);
    cr_assert(eps[0] < eps[1], "higher exposure gets less budget");
    r[0] = r[1] = 0.5;
    mu[0] = 0.9;
    mu[1] = 0.1;
    cr_assert_eq(rel_alloc(2, 1.0, r, s, mu, &AP, eps, NULL), CORE_OK);
    cr_assert(eps[0] > eps[1], "higher utility gets more budget");
    /* hand-computed h_k with beta = (1,1,0.7), eta = 1e-8 */
    r[0] = 0.2;
    r[1] = 0.6;
    s[0] = 0.1;
    s[1] = 0.3;
    mu[0] = 0.4;
    mu[1] = 0.8;
    cr_assert_eq(rel_alloc(2, 2.0, r, s, mu, &AP, eps, NULL), CORE_OK);
    double h0 = pow(0.4 + 1e-8, 0.7) / ((0.2 + 1e-8) * (0.1 + 1e-8) + 1e-8);
    double h1 = pow(0.8 + 1e-8, 0.7) / ((0.6 + 1e-8) * (0.3 + 1e-8) + 1e-8);
    double emin = 2.0 / 200.0;
    cr_assert_float_eq(eps[0], emin + (2.0 - 2 * emin) * h0 / (h0 + h1), 1e-12);
    cr_assert_float_eq(eps[1], emin + (2.0 - 2 * emin) * h1 / (h0 + h1), 1e-12);
}

Test(rel_alloc, refuses_eps_min_at_or_above_eps_rel_over_d)
{
    double r[4] = {0}, s[4] = {1, 1, 1, 1}, mu[4] = {0}, eps[4];
    struct rel_alloc_params p = AP;
    p.eps_min = 0.25; /* == eps_rel / d */
    cr_assert_eq(rel_alloc(4, 1.0, r, s, mu, &p, eps, NULL), CORE_EINVAL);
    p.eps_min = 0.3;
    cr_assert_eq(rel_alloc(4, 1.0, r, s, mu, &p, eps, NULL), CORE_EINVAL);
    p.eps_min = 0.2499;
    cr_assert_eq(rel_alloc(4, 1.0, r, s, mu, &p, eps, NULL), CORE_OK);
    p.eps_min = NAN;
    cr_assert_eq(rel_alloc(4, 1.0, r, s, mu, &p, eps, NULL), CORE_EINVAL);
    cr_assert_eq(rel_alloc(4, 0.0, r, s, mu, &AP, eps, NULL), CORE_EINVAL);
    cr_assert_eq(rel_alloc(4, NAN, r, s, mu, &AP, eps, NULL), CORE_EINVAL);
    mu[2] = 1.5;
    cr_assert_eq(rel_alloc(4, 1.0, r, s, mu, &AP, eps, NULL), CORE_EINVAL);
}

Test(rel_alloc, zero_sensitivity_coordinates_get_no_budget)
{
    double r[3] = {0.1, 0.2, 0.3}, s[3] = {0.5, 0.0, 0.25}, mu[3] = {0.5, 0.5, 0.5}, eps[3];
    cr_assert_eq(rel_alloc(3, 1.0, r, s, mu, &AP, eps, NULL), CORE_OK);
    cr_assert_eq(eps[1], 0.0);
    cr_assert_float_eq(eps[0] + eps[2], 1.0, 1e-12);
    cr_assert_eq(rel_alloc_uniform(3, 1.0, s, eps), CORE_OK);
    cr_assert_float_eq(eps[0], 0.5, 0.0);
    cr_assert_eq(eps[1], 0.0);
    s[0] = s[2] = 0.0;
    cr_assert_eq(rel_alloc(3, 1.0, r, s, mu, &AP, eps, NULL), CORE_EINVAL);
}

/* ---- Algorithm 4 step 1: one test per violated precondition ---- */

static double B4[3] = {0.1, 0.2, 0.0}, S4[3] = {0.1, 0.3, 0.0}, E4[3] = {0.4, 0.6, 0.0};

static void expect_refusal(const double *B, const double *Bc, const double *s, const double *e,
                           double eps_rel, size_t want_k, enum rel_refusal want)
{
    size_t k = 99;
    enum rel_refusal why = REL_REFUSE_NONE;
    cr_assert_eq(rel_release_check(3, B, Bc, s, e, eps_rel, &k, &why), CORE_EINVARIANT);
    cr_assert_eq(why, want, "why = %s", rel_refusal_str(why));
    cr_assert_eq(k, want_k);
}

Test(rel_check, accepts_valid_theta)
{
    size_t k;
    enum rel_refusal why;
    cr_assert_eq(rel_release_check(3, B4, B4, S4, E4, 1.0, &k, &why), CORE_OK);
    cr_assert_eq(why, REL_REFUSE_NONE);
}

Test(rel_check, refuses_scale_below_bound)
{
    double s[3] = {0.1, 0.19, 0.0};
    expect_refusal(B4, NULL, s, E4, 1.0, 1, REL_REFUSE_SCALE);
    s[1] = NAN;
    expect_refusal(B4, NULL, s, E4, 1.0, 1, REL_REFUSE_SCALE);
}

Test(rel_check, refuses_bound_below_certificate_or_nan)
{
    double Bc[3] = {0.1, 0.25, 0.0}, B[3] = {0.1, NAN, 0.0};
    expect_refusal(B4, Bc, S4, E4, 1.0, 1, REL_REFUSE_BOUND);
    expect_refusal(B, NULL, S4, E4, 1.0, 1, REL_REFUSE_BOUND);
}

Test(rel_check, refuses_nonpositive_or_nan_eps_on_noisy_coordinate)
{
    double e[3] = {0.0, 0.6, 0.0};
    expect_refusal(B4, NULL, S4, e, 1.0, 0, REL_REFUSE_EPS);
    e[0] = -0.1;
    expect_refusal(B4, NULL, S4, e, 1.0, 0, REL_REFUSE_EPS);
    e[0] = NAN;
    expect_refusal(B4, NULL, S4, e, 1.0, 0, REL_REFUSE_EPS);
    e[0] = 1e-320; /* subnormal: s/eps overflows */
    expect_refusal(B4, NULL, S4, e, 1.0, 0, REL_REFUSE_NOISE_SCALE);
}

Test(rel_check, refuses_budget_on_a_deterministic_coordinate)
{
    double e[3] = {0.3, 0.3, 0.1};
    expect_refusal(B4, NULL, S4, e, 1.0, 2, REL_REFUSE_EPS_CONSTANT);
}

Test(rel_check, refuses_total_above_eps_rel)
{
    double e[3] = {0.4, 0.6000001, 0.0};
    expect_refusal(B4, NULL, S4, e, 1.0, 3, REL_REFUSE_BUDGET);
}

Test(rel_check, refuses_bad_eps_rel)
{
    expect_refusal(B4, NULL, S4, E4, NAN, 3, REL_REFUSE_EPS_REL);
    expect_refusal(B4, NULL, S4, E4, 0.0, 3, REL_REFUSE_EPS_REL);
    expect_refusal(B4, NULL, S4, E4, INFINITY, 3, REL_REFUSE_EPS_REL);
}

Test(rel_mech, table_has_every_mechanism_and_ablation)
{
    const char *names[] = {"lap",         "gauss",          "ada",
                           "risk",        "gcdp",           "gcdp-nolag",
                           "gcdp-nocomp", "gcdp-noutility", "gcdp-norisk"};
    for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
        const struct rel_mech *m = rel_mech_find(names[i]);
        cr_assert_not_null(m, "%s", names[i]);
        cr_assert_eq(rel_mech_get(m->id), m);
    }
    cr_assert_null(rel_mech_find("laplace"));
    cr_assert(rel_mech_find("ada")->zero_beta_r && !rel_mech_find("ada")->use_xi);
    cr_assert(rel_mech_find("risk")->zero_beta_u && !rel_mech_find("risk")->use_xi);
    cr_assert(rel_mech_find("gcdp")->use_xi);
    cr_assert(rel_mech_find("gauss")->gaussian);
}
