/* test_dp_calib.c - analytic Gaussian calibration against NOISE.md §4.7 / Appendix A.1
 * reference vectors (mpmath, 60 digits), conservativeness and validation (T1.7).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <math.h>

#include <criterion/criterion.h>
#include <gsl/gsl_errno.h>

#include "core/dp_calib.h"

static void suite_init(void)
{
    gsl_set_error_handler_off();
}

TestSuite(dp_calib, .init = suite_init);

static const double EPS[6] = {0.1, 0.5, 1.0, 2.0, 5.0, 10.0};
static const double DELTA[4] = {1e-5, 1e-6, 1e-9, 1e-12};
static const double REF[6][4] = {
    {30.7495661320, 36.3046904262, 50.2098182630, 61.5390559189},
    {7.0318266756, 8.0576184807, 10.6738968151, 12.8441744899},
    {3.7306316348, 4.2246788893, 5.4952661572, 6.5578220675},
    {1.9938124456, 2.2304762712, 2.8445470735, 3.3626725095},
    {0.8918682650, 0.9800490003, 1.2117124661, 1.4098377236},
    {0.4998886197, 0.5410868318, 0.6502469190, 0.7446123229},
};

Test(dp_calib, agm_sigma_matches_reference_table)
{
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 4; j++) {
            double s;
            cr_assert_eq(core_dp_agm_sigma(EPS[i], DELTA[j], 1.0, &s), CORE_OK);
            double rel = (s - REF[i][j]) / REF[i][j];
            /* the table has 11 significant digits (|error| <= 5e-11 abs); the result may
             * only be ABOVE the true sigma (conservative), by the 2^-30 margin at most */
            cr_assert(rel > -1e-9 && rel < 1e-9, "eps=%g delta=%g: %.12g vs %.12g", EPS[i],
                      DELTA[j], s, REF[i][j]);
            cr_assert_geq(s, REF[i][j] - 6e-11, "never below the true sigma");
        }
}

Test(dp_calib, agm_sigma_is_tight_and_safe_on_a_grid)
{
    const double eps[6] = {0.05, 0.3, 1.0, 3.0, 8.0, 20.0};
    const double delta[8] = {0.4, 0.1, 1e-3, 1e-5, 1e-8, 1e-12, 1e-20, 1e-50};
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 8; j++) {
            double s, d_at, d_below;
            cr_assert_eq(core_dp_agm_sigma(eps[i], delta[j], 2.5, &s), CORE_OK);
            cr_assert_eq(core_dp_agm_delta(eps[i], s, 2.5, &d_at), CORE_OK);
            cr_assert_eq(core_dp_agm_delta(eps[i], s * (1 - 1e-6), 2.5, &d_below), CORE_OK);
            cr_assert_leq(d_at, delta[j], "eps=%g delta=%g", eps[i], delta[j]);
            cr_assert_gt(d_below, delta[j], "eps=%g delta=%g: not tight", eps[i], delta[j]);
        }
}

Test(dp_calib, agm_extreme_parameters)
{
    double s, d;
    cr_assert_eq(core_dp_agm_sigma(1000.0, 1e-5, 1.0, &s), CORE_OK, "no overflow at eps=1000");
    cr_assert(isfinite(s) && s > 0);
    cr_assert_eq(core_dp_agm_delta(1000.0, s, 1.0, &d), CORE_OK);
    cr_assert_leq(d, 1e-5);
    cr_assert_eq(core_dp_agm_sigma(1.0, 1e-300, 1.0, &s), CORE_OK, "delta = 1e-300");
    cr_assert_eq(core_dp_agm_delta(1.0, s, 1.0, &d), CORE_OK);
    cr_assert_leq(d, 1e-300);
}

Test(dp_calib, agm_rejects_invalid_inputs)
{
    double s = 42;
    cr_assert_eq(core_dp_agm_sigma(0.0, 1e-5, 1.0, &s), CORE_EINVAL);
    cr_assert_eq(core_dp_agm_sigma(-1.0, 1e-5, 1.0, &s), CORE_EINVAL);
    cr_assert_eq(core_dp_agm_sigma(NAN, 1e-5, 1.0, &s), CORE_EINVAL);
    cr_assert_eq(core_dp_agm_sigma(1.0, 0.0, 1.0, &s), CORE_EINVAL);
    cr_assert_eq(core_dp_agm_sigma(1.0, 1.0, 1.0, &s), CORE_EINVAL);
    cr_assert_eq(core_dp_agm_sigma(1.0, NAN, 1.0, &s), CORE_EINVAL);
    cr_assert_eq(core_dp_agm_sigma(1.0, 1e-5, 0.0, &s), CORE_EINVAL);
    cr_assert_eq(core_dp_agm_sigma(1.0, 1e-5, INFINITY, &s), CORE_EINVAL);
    cr_assert_eq(core_dp_agm_delta(1.0, NAN, 1.0, &s), CORE_EINVAL);
    cr_assert(s == 42, "no output on error");
}
