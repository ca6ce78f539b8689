/* test_score.c - calibrate's Algorithm 1 steps on top of core's lagged-correlation kernel:
 * S = λρ0 + (1−λ)max ρ and the fixed bounded normalization. */
#include <math.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "cal/graph.h"
#include "core/lagcorr.h"

Test(score, score_mixes_synchronous_and_lagged)
{
    const double x[] = {1, 1, 2, 3, 3, 2, 4, 4};
    double r0[4], rm[4], s[4], work[64];
    cr_assert_lt(core_lagcorr_work_len(4, 2, 2), 64);
    cr_assert_eq(core_lagcorr_blas(4, 2, x, 2, 2, r0, rm, work), CORE_OK);
    cr_assert_eq(cal_score(2, 0.6, r0, rm, s), CORE_OK);
    cr_assert_float_eq(s[1], 0.6 * 0.8 + 0.4 * 1.0, 1e-14);
    cr_assert_eq(s[0], 0.0);
    cr_assert_eq(cal_score(2, 1.5, r0, rm, s), CORE_EINVAL, "lambda out of [0,1]");
}

Test(score, normalization_uses_fixed_bounds_and_clips)
{
    double x[] = {-5, 50, 0, 100, 10, 150};
    const double lo[] = {0, 0}, hi[] = {10, 100};
    cr_assert_eq(cal_normalize(3, 2, x, 2, lo, hi), CORE_OK);
    cr_assert_eq(x[0], 0.0, "clipped below");
    cr_assert_float_eq(x[1], 0.5, 1e-15);
    cr_assert_eq(x[3], 1.0);
    cr_assert_eq(x[4], 1.0);
    cr_assert_eq(x[5], 1.0, "clipped above");
    x[0] = NAN;
    cr_assert_eq(cal_normalize(3, 2, x, 2, lo, hi), CORE_EINVAL, "NaN rejected");
    const double bad_hi[] = {0, 100};
    cr_assert_eq(cal_normalize(3, 2, x, 2, lo, bad_hi), CORE_EINVAL, "lo == hi rejected");
}
