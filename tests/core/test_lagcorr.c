/* test_lagcorr.c - core's Algorithm 1 kernel: lagged |Pearson| (BLAS, float32 and direct),
 * the zero-variance and fewer-than-two-pairs rules. (S = λρ0 + (1−λ)max ρ and the
 * normalization are calibrate's: tests/calibrate/test_score.c.) */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "core/lagcorr.h"

static uint64_t sm_state;
static double unif(void)
{
    uint64_t z = (sm_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}

/* Both paths on x (n x m, ld m); returns new arrays (free). */
struct both {
    double *r0, *rm, *d0, *dm;
};

static struct both run_both(size_t n, size_t m, const double *x, int L)
{
    struct both b;
    double *work = malloc(core_lagcorr_work_len(n, m, L) * sizeof(double));
    b.r0 = malloc(m * m * sizeof(double));
    b.rm = malloc(m * m * sizeof(double));
    b.d0 = malloc(m * m * sizeof(double));
    b.dm = malloc(m * m * sizeof(double));
    cr_assert_eq(core_lagcorr_blas(n, m, x, m, L, b.r0, b.rm, work), CORE_OK);
    cr_assert_eq(core_lagcorr_direct(n, m, x, m, L, b.d0, b.dm, work), CORE_OK);
    free(work);
    return b;
}

static void free_both(struct both *b)
{
    free(b->r0);
    free(b->rm);
    free(b->d0);
    free(b->dm);
}

/* x1 = [1,2,3,4], x2 = [1,3,2,4]. By hand: lag 0: deviations (-1.5,-.5,.5,1.5) and
 * (-1.5,.5,-.5,1.5): Σab = 4, Σa² = Σb² = 5 -> 0.8. Lag +1 (x1[t], x2[t+1]) = ([1,2,3],
 * [3,2,4]): Σab = 1, Σa² = Σb² = 2 -> 0.5. Lag -1: ([2,3,4], [1,3,2]) -> 0.5.
 * Lag +2: ([1,2], [2,4]) -> 1. Lag 3: one pair -> 0. */
Test(lagcorr, hand_computed_lags_blas_and_direct)
{
    const double x[] = {1, 1, 2, 3, 3, 2, 4, 4};
    const int lags[] = {0, 1, 2, 3};
    const double want_max[] = {0.8, 0.8, 1.0, 1.0};
    for (size_t c = 0; c < 4; c++) {
        struct both b = run_both(4, 2, x, lags[c]);
        cr_assert_float_eq(b.r0[1], 0.8, 1e-14, "L=%d rho0 blas", lags[c]);
        cr_assert_float_eq(b.d0[1], 0.8, 1e-14, "L=%d rho0 direct", lags[c]);
        cr_assert_float_eq(b.rm[1], want_max[c], 1e-14, "L=%d max blas", lags[c]);
        cr_assert_float_eq(b.dm[1], want_max[c], 1e-14, "L=%d max direct", lags[c]);
        cr_assert_float_eq(b.rm[2], b.rm[1], 0.0, "symmetric");
        cr_assert_eq(b.r0[0], 0.0, "zero diagonal");
        free_both(&b);
    }
}

/* x_j[t] = x_i[t-2]: only lag +2 aligns them exactly. */
Test(lagcorr, detects_a_pure_lag_only_when_L_reaches_it)
{
    enum { N = 200 };
    double x[N * 2];
    sm_state = 7;
    for (size_t t = 0; t < N; t++)
        x[t * 2] = unif();
    for (size_t t = 0; t < N; t++)
        x[t * 2 + 1] = t >= 2 ? x[(t - 2) * 2] : 0.5;
    for (int L = 0; L <= 3; L++) {
        struct both b = run_both(N, 2, x, L);
        if (L >= 2)
            cr_assert_float_eq(b.rm[1], 1.0, 1e-12, "L=%d", L);
        else
            cr_assert_lt(b.rm[1], 0.5, "L=%d must not see the lag-2 dependence", L);
        cr_assert_lt(b.r0[1], 0.5);
        free_both(&b);
    }
}

/* Column 1 is constant: every rho with it is 0, never NaN. Column 2 = [5,5,...,5,1]: its
 * head window at lag >= 1 is constant (so rho^(l) with 2 leading is 0) but its full series
 * is not. */
Test(lagcorr, zero_variance_rule_exact_and_per_window)
{
    enum { N = 6 };
    double x[N * 3] = {0.1, 0.3, 5, 0.7, 0.3, 5, 0.2, 0.3, 5,
                       0.9, 0.3, 5, 0.4, 0.3, 5, 0.6, 0.3, 1};
    struct both b = run_both(N, 3, x, 2);
    for (size_t j = 0; j < 3; j++) {
        cr_assert_eq(b.r0[1 * 3 + j], 0.0);
        cr_assert_eq(b.rm[1 * 3 + j], 0.0);
        cr_assert_eq(b.dm[1 * 3 + j], 0.0);
    }
    /* rho0(0,2) is non-zero (last value differs), and both paths agree on every entry */
    cr_assert_gt(b.r0[0 * 3 + 2], 0.0);
    for (size_t i = 0; i < 9; i++) {
        cr_assert_float_eq(b.r0[i], b.d0[i], 1e-12);
        cr_assert_float_eq(b.rm[i], b.dm[i], 1e-12);
    }
    free_both(&b);
}

Test(lagcorr, fewer_than_two_pairs_gives_zero)
{
    const double x2[] = {0.0, 1.0, 1.0, 0.0}; /* n = 2: lag 0 has two pairs, lag 1 one */
    const double x1[] = {0.2, 0.9};           /* n = 1: nothing */
    struct both b = run_both(2, 2, x2, 1);
    cr_assert_float_eq(b.r0[1], 1.0, 1e-14);
    cr_assert_float_eq(b.rm[1], 1.0, 1e-14);
    free_both(&b);
    b = run_both(1, 2, x1, 3);
    cr_assert_eq(b.r0[1], 0.0);
    cr_assert_eq(b.rm[1], 0.0);
    cr_assert_eq(b.dm[1], 0.0);
    free_both(&b);
}

/* The acceptance criterion: BLAS path equals the direct reference to 1e-12 on random inputs
 * (uniform, binary-valued, correlated-through-a-factor, with a constant column), several
 * shapes and L up to 5. */
Test(lagcorr, blas_equals_direct_reference_on_random_inputs)
{
    const size_t shapes[][2] = {{3, 2}, {10, 4}, {57, 9}, {300, 17}, {1000, 33}};
    double worst = 0.0;
    sm_state = 12345;
    for (size_t sh = 0; sh < 5; sh++) {
        size_t n = shapes[sh][0], m = shapes[sh][1];
        double *x = malloc(n * m * sizeof(double));
        for (int L = 0; L <= 5; L += 1) {
            for (size_t t = 0; t < n; t++) {
                double f = unif();
                for (size_t j = 0; j < m; j++) {
                    double v = (j % 3 == 0)
                                   ? unif()
                                   : (j % 3 == 1 ? (unif() < 0.5) : 0.7 * f + 0.3 * unif());
                    x[t * m + j] = j == m - 1 ? 0.25 : v; /* last column constant */
                }
            }
            struct both b = run_both(n, m, x, L);
            for (size_t i = 0; i < m * m; i++) {
                worst = fmax(worst, fabs(b.r0[i] - b.d0[i]));
                worst = fmax(worst, fabs(b.rm[i] - b.dm[i]));
                cr_assert(b.rm[i] >= 0.0 && b.rm[i] <= 1.0);
                cr_assert(b.rm[i] >= b.r0[i], "max over lags includes lag 0");
            }
            free_both(&b);
        }
        free(x);
    }
    cr_assert_lt(worst, 1e-12, "max |blas - direct| = %g", worst);
}

/* float32 products: measured error on S stays below 1e-5 for a moderate shape. */
Test(lagcorr, float32_path_error_on_s_below_1e5)
{
    size_t n = 2000, m = 40;
    int L = 3;
    double *x = malloc(n * m * sizeof(double)),
           *work = malloc(core_lagcorr_work_len(n, m, L) * sizeof(double));
    float *fw = malloc((n * m + m * m) * sizeof(float));
    double *a0 = malloc(m * m * sizeof(double)), *am = malloc(m * m * sizeof(double));
    double *b0 = malloc(m * m * sizeof(double)), *bm = malloc(m * m * sizeof(double)), err = 0.0;
    sm_state = 99;
    for (size_t t = 0; t < n; t++) {
        double f = unif();
        for (size_t j = 0; j < m; j++)
            x[t * m + j] = 0.5 * f + 0.5 * unif();
    }
    cr_assert_eq(core_lagcorr_blas(n, m, x, m, L, a0, am, work), CORE_OK);
    cr_assert_eq(core_lagcorr_blas_f32(n, m, x, m, L, b0, bm, work, fw), CORE_OK);
    for (size_t i = 0; i < m * m; i++) /* S = 0.6 rho0 + 0.4 rhomax, as calibrate scores */
        err = fmax(err, fabs((0.6 * a0[i] + 0.4 * am[i]) - (0.6 * b0[i] + 0.4 * bm[i])));
    cr_assert_lt(err, 1e-5, "float32 max |dS| = %g", err);
    free(x), free(work), free(fw), free(a0), free(am), free(b0), free(bm);
}

Test(lagcorr, rejects_bad_arguments)
{
    double x[4] = {0}, r0[4], rm[4], work[64];
    cr_assert_eq(core_lagcorr_blas(2, 2, x, 1, 1, r0, rm, work), CORE_EINVAL, "ld < m");
    cr_assert_eq(core_lagcorr_blas(2, 2, x, 2, -1, r0, rm, work), CORE_EINVAL, "negative L");
    cr_assert_eq(core_lagcorr_blas(2, 2, x, 2, CORE_LAGCORR_MAX_LAG + 1, r0, rm, work),
                 CORE_EINVAL);
    cr_assert_eq(core_lagcorr_blas(0, 2, x, 2, 1, r0, rm, work), CORE_EINVAL, "no rows");
}
