/* test_dp_mech.c - gridded Laplace / Gaussian releases and selection (NOISE.md §6 T1.1,
 * T1.3, T2.5, T2.7-T2.10, T3). N and thresholds are stated per test (alpha = 1e-6).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <gsl/gsl_errno.h>

#include "core/dp_acct.h"
#include "core/dp_calib.h"
#include "core/dp_exact.h"
#include "core/dp_mech.h"
#include "dp_grid.h"
#include "seeded_rng.h"
#include "test_dp_stat.h"

static void suite_init(void)
{
    gsl_set_error_handler_off();
}

TestSuite(dp_mech, .init = suite_init, .timeout = 120);

/* T0: build guards */
Test(dp_mech, built_without_fast_math_and_with_ieee_doubles)
{
#ifdef __FAST_MATH__
    cr_assert_fail("-ffast-math must not be used");
#endif
    cr_assert_eq(FLT_EVAL_METHOD, 0);
    cr_assert_eq(DBL_MANT_DIG, 53);
}

/* ---------- T1.1 / T1.2: exact log2 and rounding to the grid ---------- */

Test(dp_mech, ceil_and_floor_log2_are_exact)
{
    for (int e = -1072; e <= 1023; e++) { /* below, next up/down are other powers of 2 */
        double x = ldexp(1.0, e);
        cr_assert_eq(ceil_log2(x), e, "2^%d", e);
        cr_assert_eq(floor_log2(x), e, "2^%d", e);
        double up = nextafter(x, INFINITY), down = nextafter(x, 0.0);
        cr_assert_eq(ceil_log2(up), e + 1, "next up of 2^%d", e);
        cr_assert_eq(floor_log2(up), e);
        if (down > 0) {
            cr_assert_eq(ceil_log2(down), e, "next down of 2^%d", e);
            cr_assert_eq(floor_log2(down), e - 1);
        }
    }
    cr_assert_eq(ceil_log2(0x1p-1074), -1074, "smallest subnormal");
    cr_assert_eq(floor_log2(0x1p-1073), -1073);
    cr_assert_eq(ceil_log2(3 * 0x1p-1074), -1072, "subnormal 3 * 2^-1074");
    cr_assert_eq(floor_log2(3 * 0x1p-1074), -1073);
    cr_assert_eq(ceil_log2(DBL_MAX), 1024);
    cr_assert_eq(floor_log2(DBL_MAX), 1023);
}

Test(dp_mech, grid_rounding_matches_long_double_oracle)
{
    struct ts_rng *r = ts_rng_seeded_new(1900);
    for (int i = 0; i < 100000; i++) {
        uint64_t u, v;
        cr_assert_eq(core_rng_u64(ts_rng_iface(r), &u), CORE_OK);
        cr_assert_eq(core_rng_u64(ts_rng_iface(r), &v), CORE_OK);
        int k = (int)(v % 200) - 100;
        double bound = ldexp(1.0, k + 61); /* largest dyadic bound that fits */
        double x = ldexp((double)(u >> 11), (int)((u & 2047) % 130) - 53 + k - 10);
        if (v & 1)
            x = -x;
        cr_assert(bound_fits(bound, k));
        cr_assert(!bound_fits(bound * 2, k), "|bound|/g = 2^62 is rejected");
        long double xc = fminl(fmaxl((long double)x, -(long double)bound), (long double)bound);
        long double want = nearbyintl(ldexpl(xc, -k)); /* ties to even, like nearbyint */
        int64_t got = grid_index(x, bound, k);
        cr_assert((long double)got == want, "x=%a k=%d: %lld vs %Lf", x, k, (long long)got, want);
    }
    cr_assert_eq(grid_index(0.5, 10, 0), 0, "tie to even");
    cr_assert_eq(grid_index(1.5, 10, 0), 2);
    cr_assert_eq(grid_index(-2.5, 10, 0), -2);
    cr_assert_eq(grid_index(INFINITY, 10, 0), 10, "clamped (release rejects Inf earlier)");
    ts_rng_free(r);
}

/* T3: the support of (y - round_g(x))/g does not depend on x: for x = 0 and x' = Delta the
 * sets of noise values seen in [-20, 20] coincide and are complete (t = 3, 2e5 draws each;
 * the rarest value has expected count 2e5 * 0.165 * e^-20/3 = 42). */
Test(dp_mech, noise_support_is_input_independent)
{
    struct ts_rng *r = ts_rng_seeded_new(1950);
    struct core_dp_lap p;
    unsigned char seen[2][41], all[41];
    memset(seen, 0, sizeof(seen));
    cr_assert_eq(core_dp_lap_params(1.0, 1.0, 10.0, 1, &p), CORE_OK);
    p.t = 3;
    const double xs[2] = {0.0, 1.0};
    for (int w = 0; w < 2; w++)
        for (int i = 0; i < 200000; i++) {
            double y;
            cr_assert_eq(core_dp_lap_release(ts_rng_iface(r), &p, 1, &xs[w], &y), CORE_OK);
            int64_t z = (int64_t)ldexp(y, -p.k) - grid_index(xs[w], p.bound, p.k);
            if (z >= -20 && z <= 20)
                seen[w][z + 20] = 1;
        }
    memset(all, 1, sizeof(all));
    cr_assert_eq(memcmp(seen[0], seen[1], sizeof(seen[0])), 0);
    cr_assert_eq(memcmp(seen[0], all, sizeof(all)), 0);
    ts_rng_free(r);
}

/* ---------- T1.1: grid exponent k = ceil_log2(s/eps) - 40 ---------- */

static int lap_k(double s, double eps, double bound)
{
    struct core_dp_lap p;
    cr_assert_eq(core_dp_lap_params(s, eps, bound, 1, &p), CORE_OK, "s=%a eps=%a", s, eps);
    return p.k;
}

Test(dp_mech, lap_grid_exponent_is_exact_ceil_log2)
{
    cr_assert_eq(lap_k(1.0, 1.0, 1.0), -40);
    cr_assert_eq(lap_k(nextafter(1.0, 2.0), 1.0, 1.0), -39);
    cr_assert_eq(lap_k(nextafter(1.0, 0.0), 1.0, 1.0), -40);
    cr_assert_eq(lap_k(0x1p-900, 1.0, 0x1p-900), -940); /* b = 2^-900 */
    struct core_dp_lap sub;
    cr_assert_eq(core_dp_lap_params(0x1p-1074, 0x1p-40, 1e-300, 1, &sub), CORE_EINVAL,
                 "subnormal sensitivity: k = -1074 < -1022");
    cr_assert_eq(lap_k(0x1p-980, 1.0, 0x1p-980), -1020);
    cr_assert_eq(lap_k(3.0, 0.5, 1.0), 3 - 40); /* b = 6 -> ceil log2 = 3 */
    struct core_dp_lap p;
    cr_assert_eq(core_dp_lap_params(0x1p-1020, 1.0, 1.0, 1, &p), CORE_EINVAL, "k < -1022");
    cr_assert_eq(core_dp_lap_params(NAN, 1.0, 1.0, 1, &p), CORE_EINVAL);
    cr_assert_eq(core_dp_lap_params(-1.0, 1.0, 1.0, 1, &p), CORE_EINVAL);
    cr_assert_eq(core_dp_lap_params(1.0, 0.0, 1.0, 1, &p), CORE_EINVAL);
    cr_assert_eq(core_dp_lap_params(1.0, NAN, 1.0, 1, &p), CORE_EINVAL);
    cr_assert_eq(core_dp_lap_params(1.0, 0x1p-41, 1.0, 1, &p), CORE_EINVAL, "eps < 2^-40");
    cr_assert_eq(core_dp_lap_params(1.0, 2000.0, 1.0, 1, &p), CORE_EINVAL, "eps > 2^10");
    cr_assert_eq(core_dp_lap_params(1.0, 1.0, INFINITY, 1, &p), CORE_EINVAL);
    cr_assert_eq(core_dp_lap_params(DBL_MAX, 1.0, 1.0, 1, &p), CORE_EINVAL,
                 "k = 984: outputs could overflow to inf");
    cr_assert_eq(lap_k(0x1p1000, 1.0, 1.0), 960, "largest grid whose outputs stay finite");
    cr_assert_eq(core_dp_lap_params(0x1p1001, 1.0, 1.0, 1, &p), CORE_EINVAL);
    cr_assert_eq(core_dp_lap_params(1.0, 1.0, 1.0, 0, &p), CORE_EINVAL);
}

Test(dp_mech, lap_grid_lowers_K_for_large_bounds_and_refuses_huge_ones)
{
    struct core_dp_lap p;
    cr_assert_eq(core_dp_lap_params(1.0, 1.0, 0x1p21, 1, &p), CORE_OK);
    cr_assert_eq(p.k, -40, "bound 2^21 b fits with K = 40");
    cr_assert_eq(core_dp_lap_params(1.0, 1.0, 0x1p22, 1, &p), CORE_OK);
    cr_assert_eq(p.k, -39, "bound 2^22 b needs K = 39");
    cr_assert_lt(ldexp(p.bound, -p.k), 0x1p62);
    cr_assert_eq(core_dp_lap_params(1.0, 1.0, 0x1p50, 1, &p), CORE_EINVAL, "K would be < 20");
}

/* ---------- T1.3: t g eps >= s + n g, checked in exact double-double arithmetic ---------- */

/* exact sign of (t*eps) - (a + n), a = s/g exact, using fma/TwoSum error terms */
static int t_is_conservative(uint64_t t, double eps, double a, double n)
{
    double p = (double)t * eps, pe = fma((double)t, eps, -p);
    double q = a + n, bb = q - a, qe = (a - (q - bb)) + (n - bb);
    long double diff = ((long double)p - (long double)q) + ((long double)pe - (long double)qe);
    return diff >= 0;
}

Test(dp_mech, lap_integer_scale_is_conservative)
{
    struct ts_rng *r = ts_rng_seeded_new(2000);
    for (int i = 0; i < 10000; i++) {
        uint64_t u, v;
        cr_assert_eq(core_rng_u64(ts_rng_iface(r), &u), CORE_OK);
        cr_assert_eq(core_rng_u64(ts_rng_iface(r), &v), CORE_OK);
        double s = ldexp((double)(u >> 11) + 1, -53 + (int)(u % 40) - 20);
        double eps = ldexp((double)(v >> 11) + 1, -53 + (int)(v % 16) - 10);
        uint64_t n = 1 + (u >> 60);
        struct core_dp_lap p;
        if (eps < CORE_DP_EPS_MIN || eps > CORE_DP_EPS_MAX)
            continue;
        cr_assert_eq(core_dp_lap_params(s, eps, s, n, &p), CORE_OK);
        cr_assert(t_is_conservative(p.t, eps, ldexp(s, -p.k), (double)n), "t=%llu eps=%a s=%a",
                  (unsigned long long)p.t, eps, s);
        cr_assert(!t_is_conservative(p.t - 2, eps, ldexp(s, -p.k), (double)n),
                  "t is at most one above the minimum");
    }
    ts_rng_free(r);
}

/* ---------- T2.5: gridded Laplace release at t ~ 2^40 ---------- */

static double lap_cdf(double x, double b)
{
    return x < 0 ? 0.5 * exp(x / b) : 1 - 0.5 * exp(-x / b);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct lap_run {
    double ks, zmean, zvar, zsign;
};

/* N = 1e6 releases of x0 with s = 1, eps, compared with Laplace(0, b = s/eps):
 * KS (DKW/exact crit 0.0026932), mean within 4.89 sqrt(2b^2/N), variance within
 * 4.89 sqrt(20) b^2/sqrt(N), binomial sign test. */
static struct lap_run lap_stats(double x0, double eps_used, double b, uint64_t seed)
{
    struct ts_rng *r = ts_rng_seeded_new(seed);
    struct core_dp_lap p;
    double *y = malloc(DP_N * sizeof(*y)), *x = malloc(DP_N * sizeof(*x));
    for (size_t i = 0; i < DP_N; i++)
        x[i] = x0;
    cr_assert_eq(core_dp_lap_params(1.0, eps_used, 1000.0, 1, &p), CORE_OK);
    cr_assert_eq(core_dp_lap_release(ts_rng_iface(r), &p, DP_N, x, y), CORE_OK);
    double sum = 0, ss = 0;
    uint64_t pos = 0, neg = 0;
    for (size_t i = 0; i < DP_N; i++) {
        sum += y[i];
        ss += y[i] * y[i];
        pos += y[i] > 0;
        neg += y[i] < 0;
    }
    qsort(y, DP_N, sizeof(*y), cmp_double);
    double ks = 0;
    for (size_t i = 0; i < DP_N; i++) {
        double f = lap_cdf(y[i], b);
        ks = fmax(ks, fmax(fabs((double)(i + 1) / DP_N - f), fabs(f - (double)i / DP_N)));
    }
    double mean = sum / DP_N, var = ss / DP_N - mean * mean;
    struct lap_run out = {
        .ks = ks,
        .zmean = fabs(mean) / sqrt(2 * b * b / DP_N),
        .zvar = fabs(var - 2 * b * b) / (sqrt(20.0) * b * b / sqrt((double)DP_N)),
        .zsign = dp_sign_z(pos, neg),
    };
    free(x);
    free(y);
    ts_rng_free(r);
    return out;
}

Test(dp_mech, lap_release_matches_laplace_ks_mean_var_sign)
{
    const double crit = 0.0026932; /* exact KS critical value, N = 1e6, alpha = 1e-6 */
    struct lap_run g = lap_stats(0.0, 1.0, 1.0, 2100);
    cr_assert_lt(g.ks, crit, "KS=%g", g.ks);
    cr_assert_lt(g.zmean, DP_Z, "mean z=%g", g.zmean);
    cr_assert_lt(g.zvar, DP_Z, "var z=%g", g.zvar);
    cr_assert_lt(g.zsign, DP_Z, "sign z=%g", g.zsign);
    struct lap_run wide = lap_stats(0.0, 1.0 / 1.05, 1.0, 2101); /* scale x1.05 */
    cr_assert_gt(wide.ks, crit, "scale x1.05 must be rejected (KS=%g)", wide.ks);
    struct lap_run shift = lap_stats(0.01, 1.0, 1.0, 2102); /* mean shift 0.01 b */
    cr_assert_gt(shift.ks, crit, "mean shift 0.01b must be rejected (KS=%g)", shift.ks);
}

/* ---------- T2.10 + T3 lattice ---------- */

Test(dp_mech, lap_noise_low_bits_uniform_and_outputs_on_lattice)
{
    struct ts_rng *r = ts_rng_seeded_new(2200);
    struct core_dp_lap p;
    uint64_t obs[256] = {0}, bad[256] = {0};
    double prob[256];
    cr_assert_eq(core_dp_lap_params(1.0, 1.0, 1000.0, 1, &p), CORE_OK);
    cr_assert_gt(p.t, (uint64_t)1 << 39);
    for (size_t i = 0; i < 256; i++)
        prob[i] = 1.0 / 256;
    for (size_t i = 0; i < DP_N; i++) {
        double x, y;
        uint64_t u;
        cr_assert_eq(core_rng_u64(ts_rng_iface(r), &u), CORE_OK);
        x = ldexp((double)(u >> 11), -53) * 200.0 - 100.0; /* arbitrary real inputs */
        cr_assert_eq(core_dp_lap_release(ts_rng_iface(r), &p, 1, &x, &y), CORE_OK);
        double back = ldexp(nearbyint(ldexp(y, -p.k)), p.k);
        cr_assert(memcmp(&back, &y, sizeof(y)) == 0, "output off the lattice");
        int64_t i_noise = (int64_t)ldexp(y, -p.k) - (int64_t)nearbyint(ldexp(x, -p.k));
        obs[(uint64_t)i_noise & 255]++;
        bad[((uint64_t)i_noise * 2) & 255]++; /* broken: even multiples only */
    }
    double x2 = dp_chisq(obs, prob, 256, DP_N), xb = dp_chisq(bad, prob, 256, DP_N);
    cr_assert_lt(x2, dp_chisq_crit(255), "i mod 256: x2=%g", x2);
    cr_assert_gt(xb, dp_chisq_crit(255), "even-only noise must be rejected");
    ts_rng_free(r);
}

Test(dp_mech, release_rejects_nan_inf_and_canonicalises_negative_zero)
{
    struct ts_rng *r = ts_rng_seeded_new(2300);
    struct core_dp_lap p;
    double x[3] = {1.0, NAN, 2.0}, y[3] = {5, 5, 5};
    cr_assert_eq(core_dp_lap_params(1.0, 1.0, 10.0, 1, &p), CORE_OK);
    uint64_t before = ts_rng_served(r);
    cr_assert_eq(core_dp_lap_release(ts_rng_iface(r), &p, 3, x, y), CORE_EINVAL);
    x[1] = INFINITY;
    cr_assert_eq(core_dp_lap_release(ts_rng_iface(r), &p, 3, x, y), CORE_EINVAL);
    cr_assert_eq(ts_rng_served(r), before, "nothing drawn before validation");
    /* a clamped input far outside [-B, B] is released around B */
    double big = 1e300, yb;
    cr_assert_eq(core_dp_lap_release(ts_rng_iface(r), &p, 1, &big, &yb), CORE_OK);
    cr_assert_lt(fabs(yb - 10.0), 60.0);
    /* no -0.0 ever: draws that come out as zero are +0.0 */
    int zeros = 0;
    struct core_dp_lap small;
    cr_assert_eq(core_dp_lap_params(1.0, 1.0, 10.0, 1, &small), CORE_OK);
    small.t = 1; /* tiny integer scale so that zero noise happens often */
    for (int i = 0; i < 2000; i++) {
        double nz = -0.0, out;
        cr_assert_eq(core_dp_lap_release(ts_rng_iface(r), &small, 1, &nz, &out), CORE_OK);
        if (out == 0.0) {
            zeros++;
            cr_assert(!signbit(out), "-0.0 must be canonicalised");
        }
    }
    cr_assert_gt(zeros, 100);
    ts_rng_free(r);
}

/* T3 negative control (Mironov 2012): the textbook x + b*sign*ln(U) has float holes: from
 * outputs drawn at x = 0, a distinguisher that asks "can x' = 1 produce exactly this y?"
 * succeeds for most y. The gridded release never leaves the lattice, so every output is
 * reachable from every input (checked as: (y - round_g(x'))/g is an integer). */
static int naive_reachable(double y, double x, double b)
{
    double v = y - x;
    double s = v < 0 ? -1.0 : 1.0;
    double u = exp(-fabs(v) / b);
    for (int d = -4; d <= 4; d++) {
        double uu = u;
        for (int j = 0; j < abs(d); j++)
            uu = nextafter(uu, d < 0 ? 0.0 : 2.0);
        if (x + s * -b * log(uu) == y)
            return 1;
    }
    return 0;
}

Test(dp_mech, mironov_distinguisher_flags_naive_but_not_gridded)
{
    struct ts_rng *r = ts_rng_seeded_new(2400);
    struct core_dp_lap p;
    int naive_unreachable = 0, grid_unreachable = 0;
    const int n = 20000;
    cr_assert_eq(core_dp_lap_params(1.0, 1.0, 10.0, 1, &p), CORE_OK);
    for (int i = 0; i < n; i++) {
        uint64_t u, sb;
        cr_assert_eq(core_rng_u64(ts_rng_iface(r), &u), CORE_OK);
        cr_assert_eq(core_rng_u64(ts_rng_iface(r), &sb), CORE_OK);
        double U = ldexp((double)((u >> 11) + 1), -53);
        double yn = 0.0 + ((sb & 1) ? -1.0 : 1.0) * -1.0 * log(U);
        naive_unreachable += !naive_reachable(yn, 1.0, 1.0);
        double x0 = 0.0, yg;
        cr_assert_eq(core_dp_lap_release(ts_rng_iface(r), &p, 1, &x0, &yg), CORE_OK);
        double steps = ldexp(yg, -p.k) - nearbyint(ldexp(1.0, -p.k));
        grid_unreachable += steps != nearbyint(steps);
    }
    cr_assert_gt(naive_unreachable, n / 10, "naive sampler: %d of %d unreachable",
                 naive_unreachable, n);
    cr_assert_eq(grid_unreachable, 0);
    ts_rng_free(r);
}

/* ---------- per-coordinate release (gc-dp Sec. 4.5) ---------- */

Test(dp_mech, per_coordinate_release_uses_each_scale)
{
    struct ts_rng *r = ts_rng_seeded_new(2500);
    enum { N = 200000 };
    double s[2] = {1.0, 4.0}, e[2] = {1.0, 0.5}, x[2] = {0.0, 0.0}, y[2];
    double abs_sum[2] = {0, 0};
    for (int i = 0; i < N; i++) {
        cr_assert_eq(core_dp_lap_release_coords(ts_rng_iface(r), 2, x, s, e, 100.0, y), CORE_OK);
        abs_sum[0] += fabs(y[0]);
        abs_sum[1] += fabs(y[1]);
    }
    /* E|Lap(b)| = b, sd b: |mean - b| < 4.89 b / sqrt(N) */
    cr_assert_lt(fabs(abs_sum[0] / N - 1.0), DP_Z * 1.0 / sqrt(N));
    cr_assert_lt(fabs(abs_sum[1] / N - 8.0), DP_Z * 8.0 / sqrt(N));
    double bad_eps[2] = {1.0, 0.0};
    cr_assert_eq(core_dp_lap_release_coords(ts_rng_iface(r), 2, x, s, bad_eps, 100.0, y),
                 CORE_EINVAL);
    ts_rng_free(r);
}

/* ---------- Gaussian on a grid ---------- */

Test(dp_mech, gauss_params_from_rho_and_sigma)
{
    struct core_dp_gauss g;
    cr_assert_eq(core_dp_gauss_params_rho(0.5, 1.0, 1, 100.0, &g), CORE_OK);
    cr_assert_leq(g.rho, 0.5);
    cr_assert_gt(g.rho, 0.5 * (1 - 1e-5), "rho=%g", g.rho);
    cr_assert(fabs(g.sigma - 1.0) < 1e-5, "sigma=%g for rho 0.5, l2 1", g.sigma);
    double sg = ldexp(g.sigma, -g.k);
    cr_assert(sg >= 0x1p20 && sg < 0x1p21 + 2);
    cr_assert_eq(core_dp_gauss_params_sigma(3.0, 1.0, 1, 100.0, &g), CORE_OK);
    /* rho = Delta_int^2/(2S) ~ 1/(2*9) */
    cr_assert(g.rho >= 1.0 / 18 && g.rho < 1.0 / 18 * (1 + 1e-5), "rho=%.17g", g.rho);
    cr_assert_eq(core_dp_gauss_params_sigma(-1, 1.0, 1, 1.0, &g), CORE_EINVAL);
    cr_assert_eq(core_dp_gauss_params_rho(0.5, 1.0, 0, 1.0, &g), CORE_EINVAL);
}

/* NOISE.md §4.6 (ii): the AGM-calibrated discrete Gaussian with its (1 + 2^-10) margin must
 * satisfy the exact lattice hockey-stick divergence
 * delta = sum_y max(0, P(y) - e^eps P(y - D)), D = the largest integer shift. */
static double discrete_delta(uint64_t S, int64_t D, double eps)
{
    double sd = sqrt((double)S);
    /* normaliser: sum_k exp(-k^2/2S) = sd sqrt(2 pi) (1 + O(e^{-2 pi^2 S})), S ~ 2^40 here */
    double lz = log(sd * sqrt(2 * M_PI));
    /* P(y) > e^eps P(y - D) iff y < D/2 - eps S / D; below -(that + 13 sd) nothing counts */
    double y1 = (double)D / 2.0 - eps * (double)S / (double)D, d = 0;
    for (long y = (long)floor(y1 - 13 * sd); y <= (long)ceil(y1) + 2; y++) {
        double lp = -(double)y * (double)y / (2.0 * (double)S) - lz;
        double lq = -(double)(y - D) * (double)(y - D) / (2.0 * (double)S) - lz;
        double diff = exp(lp) - exp(eps + lq);
        if (diff > 0)
            d += diff;
    }
    return d;
}

Test(dp_mech, gauss_agm_margin_holds_on_the_lattice)
{
    struct core_dp_gauss g;
    cr_assert_eq(core_dp_gauss_params_agm(1.0, 1e-5, 1.0, 1, 100.0, &g), CORE_OK);
    int64_t D = (int64_t)ceil(ldexp(1.0, -g.k)) + 1;
    double d = discrete_delta(g.S, D, 1.0);
    cr_assert_leq(d, 1e-5, "exact lattice delta %g", d);
    cr_assert_gt(d, 0.9e-5, "calibration is not wasteful: %g", d);
    double s_ref = 3.7306316348; /* NOISE.md §4.7 table */
    cr_assert(g.sigma >= s_ref && g.sigma < s_ref * 1.002, "sigma=%.10g", g.sigma);
}

Test(dp_mech, gauss_release_on_lattice_with_variance)
{
    struct ts_rng *r = ts_rng_seeded_new(2600);
    struct core_dp_gauss g;
    enum { N = 200000 };
    cr_assert_eq(core_dp_gauss_params_sigma(2.0, 1.0, 1, 50.0, &g), CORE_OK);
    double ss = 0;
    for (int i = 0; i < N; i++) {
        double x = 1.25, y;
        cr_assert_eq(core_dp_gauss_release(ts_rng_iface(r), &g, 1, &x, &y), CORE_OK);
        double back = ldexp(nearbyint(ldexp(y, -g.k)), g.k);
        cr_assert(memcmp(&back, &y, sizeof(y)) == 0);
        ss += (y - 1.25) * (y - 1.25);
    }
    double var = ss / N, want = g.sigma * g.sigma;
    cr_assert_lt(fabs(var - want), DP_Z * sqrt(2.0) * want / sqrt(N), "var=%g want=%g", var, want);
    ts_rng_free(r);
}

/* ---------- T2.7 - T2.9: exponential mechanism and permute-and-flip ---------- */

typedef core_err (*select_fn)(const struct core_rng *, size_t, const double *, double, int,
                              size_t *);

static core_err pf_adapter(const struct core_rng *g, size_t n, const double *s, double sc, int f,
                           size_t *out)
{
    size_t work[64];
    cr_assert_leq(n, 64);
    return core_dp_pf_select(g, n, s, sc, f, work, out);
}

static void count_sel_f(select_fn f, size_t n, const double *sc, double scale, int fbits,
                        uint64_t seed, uint64_t *obs)
{
    struct ts_rng *r = ts_rng_seeded_new(seed);
    memset(obs, 0, n * sizeof(*obs));
    for (uint64_t i = 0; i < DP_N; i++) {
        size_t k;
        cr_assert_eq(f(ts_rng_iface(r), n, sc, scale, fbits, &k), CORE_OK);
        cr_assert_lt(k, n);
        obs[k]++;
    }
    ts_rng_free(r);
}

static void count_sel(select_fn f, size_t n, const double *sc, double scale, uint64_t seed,
                      uint64_t *obs)
{
    count_sel_f(f, n, sc, scale, 0, seed, obs);
}

/* PF pmf by enumerating all n! orders (McKenna & Sheldon 2020). */
static void pf_pmf(size_t n, const double *s, double scale, double *p)
{
    size_t perm[8];
    double mx = s[0];
    for (size_t i = 1; i < n; i++)
        mx = fmax(mx, s[i]);
    for (size_t i = 0; i < n; i++)
        p[i] = 0;
    for (size_t i = 0; i < n; i++)
        perm[i] = i;
    double nf = 1;
    for (size_t i = 2; i <= n; i++)
        nf *= (double)i;
    for (;;) {
        double rest = 1.0 / nf;
        for (size_t j = 0; j < n; j++) {
            double a = exp((s[perm[j]] - mx) / scale);
            p[perm[j]] += rest * a;
            rest *= 1 - a;
        }
        /* next permutation (lexicographic) */
        long i = (long)n - 2;
        while (i >= 0 && perm[i] > perm[i + 1])
            i--;
        if (i < 0)
            break;
        long j = (long)n - 1;
        while (perm[j] < perm[i])
            j--;
        size_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
        for (long a = i + 1, b = (long)n - 1; a < b; a++, b--) {
            t = perm[a];
            perm[a] = perm[b];
            perm[b] = t;
        }
    }
}

Test(dp_mech, em_matches_softmax_and_pf_matches_its_pmf)
{
    const double sc[4] = {0, 1, 2, 3};
    double soft[4], z = 0, pf[4];
    uint64_t obs[4];
    for (int i = 0; i < 4; i++)
        z += exp(sc[i]);
    for (int i = 0; i < 4; i++)
        soft[i] = exp(sc[i]) / z; /* 0.0321 0.0871 0.2369 0.6439 */
    pf_pmf(4, sc, 1.0, pf);
    double crit = dp_chisq_crit(3);
    count_sel(core_dp_em_select, 4, sc, 1.0, 2700, obs);
    cr_assert_lt(dp_chisq(obs, soft, 4, DP_N), crit, "EM vs softmax (N=1e6)");
    cr_assert_gt(dp_chisq(obs, pf, 4, DP_N), crit, "EM must not look like PF");
    count_sel(pf_adapter, 4, sc, 1.0, 2701, obs);
    cr_assert_lt(dp_chisq(obs, pf, 4, DP_N), crit, "PF vs its pmf (N=1e6)");
    cr_assert_gt(dp_chisq(obs, soft, 4, DP_N), crit, "PF substituted for EM must be caught");
}

Test(dp_mech, em_two_candidates_wilson_separates_em_from_pf)
{
    const double sc[2] = {1, -1};
    uint64_t obs[2];
    count_sel(core_dp_em_select, 2, sc, 1.0, 2800, obs);
    cr_assert(dp_wilson_contains(obs[0], DP_N, 0.8807970779778823, DP_Z));
    cr_assert(!dp_wilson_contains(obs[0], DP_N, 0.9323323583816936, DP_Z));
    count_sel(pf_adapter, 2, sc, 1.0, 2801, obs);
    cr_assert(dp_wilson_contains(obs[0], DP_N, 0.9323323583816936, DP_Z));
    cr_assert(!dp_wilson_contains(obs[0], DP_N, 0.8807970779778823, DP_Z));
}

/* T2.9: shifting all scores by a constant and permuting them does not change the law;
 * a selector biased towards low indices (here: the EM run on scores with index-dependent
 * bonus) is detected by the same two-sample chi-square. */
static double two_sample_chisq(const uint64_t *a, const uint64_t *b, size_t n)
{
    double x2 = 0;
    for (size_t i = 0; i < n; i++) {
        double tot = (double)(a[i] + b[i]);
        if (tot == 0)
            continue;
        double d = (double)a[i] - (double)b[i];
        x2 += d * d / tot;
    }
    return x2;
}

Test(dp_mech, em_is_invariant_to_shift_and_order)
{
    const double s1[4] = {0, 1, 2, 3}, s2[4] = {3 + 7, 2 + 7, 1 + 7, 0 + 7};
    const double biased[4] = {0.05, 1.0, 2.0, 3.0};
    uint64_t a[4], b[4], c[4], b_rev[4];
    count_sel(core_dp_em_select, 4, s1, 1.0, 2900, a);
    count_sel(core_dp_em_select, 4, s2, 1.0, 2901, b);
    for (int i = 0; i < 4; i++)
        b_rev[i] = b[3 - i];
    double crit = dp_chisq_crit(3);
    cr_assert_lt(two_sample_chisq(a, b_rev, 4), crit);
    count_sel_f(core_dp_em_select, 4, biased, 1.0, 8, 2902, c);
    cr_assert_gt(two_sample_chisq(a, c, 4), crit, "a 0.05 bonus on index 0 must be detected");
}

Test(dp_mech, em_rejects_bad_scores_and_computes_eps)
{
    struct ts_rng *r = ts_rng_seeded_new(3000);
    size_t k = 99;
    const double nan_s[2] = {0, NAN}, huge[2] = {0, 0x1p41};
    cr_assert_eq(core_dp_em_select(ts_rng_iface(r), 2, nan_s, 1.0, 0, &k), CORE_EINVAL);
    cr_assert_eq(core_dp_em_select(ts_rng_iface(r), 2, huge, 1.0, 0, &k), CORE_EINVAL);
    cr_assert_eq(core_dp_em_select(ts_rng_iface(r), 0, huge, 1.0, 0, &k), CORE_EINVAL);
    cr_assert_eq(core_dp_em_select(ts_rng_iface(r), 2, nan_s, 0.0, 0, &k), CORE_EINVAL);
    cr_assert_eq(k, 99);
    double eps;
    cr_assert_eq(core_dp_em_eps(1.0, 2.0, 0, false, &eps), CORE_OK);
    cr_assert(eps == 2.0, "u = 1 + 1, r = 4, eps = 4/2: %g", eps);
    cr_assert_eq(core_dp_em_eps(1.0, 2.0, 10, true, &eps), CORE_OK);
    cr_assert(eps >= (1024.0 + 1) / 1024 / 2 && eps < 0.5007, "%g", eps);
    ts_rng_free(r);
}
