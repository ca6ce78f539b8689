/* test_dp_acct.c - accountant math (NOISE.md §6 T1.8, Appendix A.2 reference table).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <math.h>

#include <criterion/criterion.h>
#include <gsl/gsl_errno.h>

#include "core/dp_acct.h"

static void suite_init(void)
{
    gsl_set_error_handler_off();
}

TestSuite(dp_acct, .init = suite_init);

struct a2 {
    double rho, delta, simple, cks, gauss;
};

static const struct a2 A2[] = {
    {0.001, 1e-5, 0.21560, 0.15734, 0}, {0.01, 1e-5, 0.68861, 0.54573, 0},
    {0.1, 1e-5, 2.24597, 1.91424, 0},   {0.5, 1e-5, 5.29853, 4.72839, 4.37718},
    {1.0, 1e-5, 7.78614, 7.07720, 0},   {0.1, 1e-9, 2.97912, 2.71548, 0},
    {1.0, 1e-9, 10.10456, 9.52146, 0},  {2.0, 1e-9, 14.87580, 14.15015, 0},
};

Test(dp_acct, zcdp_conversion_matches_reference_table)
{
    for (size_t i = 0; i < sizeof(A2) / sizeof(A2[0]); i++) {
        double s, c, g;
        cr_assert_eq(core_dp_zcdp_eps_simple(A2[i].rho, A2[i].delta, &s), CORE_OK);
        cr_assert_eq(core_dp_zcdp_eps(A2[i].rho, A2[i].delta, &c), CORE_OK);
        cr_assert_eq(core_dp_gauss_eps(A2[i].rho, A2[i].delta, &g), CORE_OK);
        cr_assert(fabs(s - A2[i].simple) < 1e-4 * 1.01, "simple rho=%g: %.6f", A2[i].rho, s);
        cr_assert(fabs(c - A2[i].cks) < 1e-4 * 1.01, "cks rho=%g: %.6f", A2[i].rho, c);
        cr_assert_leq(c, s, "CKS <= simple");
        cr_assert_leq(g, c, "exact Gaussian <= CKS");
        if (A2[i].gauss > 0)
            cr_assert(fabs(g - A2[i].gauss) < 1e-4 * 1.01, "gauss: %.6f", g);
    }
}

Test(dp_acct, conversions_are_monotone)
{
    double prev = 0;
    for (double rho = 0.01; rho < 5; rho *= 1.5) {
        double e;
        cr_assert_eq(core_dp_zcdp_eps(rho, 1e-6, &e), CORE_OK);
        cr_assert_gt(e, prev, "monotone in rho");
        prev = e;
    }
    prev = INFINITY;
    for (double d = 1e-12; d < 0.1; d *= 10) {
        double e;
        cr_assert_eq(core_dp_zcdp_eps(0.3, d, &e), CORE_OK);
        cr_assert_lt(e, prev, "decreasing in delta");
        prev = e;
    }
}

Test(dp_acct, cdp_delta_round_trip_is_safe)
{
    for (double rho = 0.001; rho < 10; rho *= 3) {
        double e, d;
        cr_assert_eq(core_dp_zcdp_eps(rho, 1e-7, &e), CORE_OK);
        cr_assert_eq(core_dp_cdp_delta(rho, e, &d), CORE_OK);
        cr_assert_leq(d, 1e-7, "rho=%g: delta(eps(delta)) <= delta", rho);
    }
}

Test(dp_acct, composition_rounds_up_and_is_order_invariant)
{
    const double xs[5] = {0.1, 0.2, 0.3, 1e-17, 0.7};
    struct core_dp_cost a = {0, 0, 0}, b = {0, 0, 0};
    long double exact = 0;
    for (int i = 0; i < 5; i++) {
        struct core_dp_cost c = {xs[i], xs[i] / 2, 0};
        struct core_dp_cost r = {xs[4 - i], xs[4 - i] / 2, 0};
        cr_assert_eq(core_dp_cost_add(&a, &c), CORE_OK);
        cr_assert_eq(core_dp_cost_add(&b, &r), CORE_OK);
        exact += xs[i];
    }
    cr_assert_geq((long double)a.eps, exact, "never below the exact sum");
    cr_assert_geq((long double)b.eps, exact);
    cr_assert_geq(a.eps, 0.1 + 0.2 + 0.3 + 1e-17 + 0.7, ">= the round-to-nearest sum");
    cr_assert_lt(fabs(a.eps - b.eps), 1e-15, "order changes at most a few ulps");
    double up = core_dp_add_up(0.1, 0.2);
    cr_assert_geq((long double)up, 0.1L + 0.2L);
    cr_assert_eq(core_dp_add_up(1.0, 2.0), 3.0, "exact sums are not inflated");
    struct core_dp_cost bad = {NAN, 0, 0};
    cr_assert_eq(core_dp_cost_add(&a, &bad), CORE_EINVAL);
    bad.eps = -1;
    cr_assert_eq(core_dp_cost_add(&a, &bad), CORE_EINVAL);
    struct core_dp_cost m = {1, 0, 0}, m2 = {0.5, 2, 0};
    cr_assert_eq(core_dp_cost_max(&m, &m2), CORE_OK);
    cr_assert(m.eps == 1 && m.rho == 2, "parallel composition = max");
}

Test(dp_acct, mechanism_rho_conversions)
{
    double r;
    cr_assert_eq(core_dp_rho_lap(1.0, &r), CORE_OK);
    cr_assert_eq(r, 0.5);
    cr_assert_eq(core_dp_rho_em(1.0, &r), CORE_OK);
    cr_assert_eq(r, 0.125);
    cr_assert_eq(core_dp_rho_lap(0.1, &r), CORE_OK);
    cr_assert_geq((long double)r, 0.1L * 0.1L / 2 - 1e-30L);
    cr_assert_geq(r, 0.1 * 0.1 / 2);
    cr_assert_eq(core_dp_rho_lap(NAN, &r), CORE_EINVAL);
    cr_assert_eq(core_dp_zcdp_eps(0.5, 0.0, &r), CORE_EINVAL);
    cr_assert_eq(core_dp_zcdp_eps(-0.5, 1e-5, &r), CORE_EINVAL);
    cr_assert_eq(core_dp_gauss_eps(0.0, 1e-5, &r), CORE_EINVAL);
}
