/* test_dp_exact.c - exact samplers (NOISE.md §6 T1.4, T1.5, T2.1-T2.4, T2.6, T2.12, T3 no
 * holes). Every statistical test states N and its threshold (alpha = 1e-6) and is run
 * against a deliberately broken sampler that the SAME check must reject.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <gsl/gsl_errno.h>

#include "core/dp_exact.h"
#include "core/dp_rng.h"
#include "dp_exact_internal.h"
#include "seeded_rng.h"
#include "test_dp_stat.h"

static void suite_init(void)
{
    gsl_set_error_handler_off();
}

TestSuite(dp_exact, .init = suite_init, .timeout = 120);

/* ---------- T1.4: exact rejection threshold with a scripted byte source ---------- */

static struct ts_rng *script_u64(const uint64_t *w, size_t n)
{
    return ts_rng_script_new((const uint8_t *)w, n * sizeof(*w));
}

static void check_u64_below(uint64_t n, uint64_t rejected, uint64_t accepted, uint64_t want)
{
    const uint64_t w[2] = {rejected, accepted};
    struct ts_rng *r = script_u64(w, 2);
    uint64_t out = 0;
    cr_assert_eq(core_rng_u64_below(ts_rng_iface(r), n, &out), CORE_OK);
    cr_assert_eq(out, want, "n=%llu", (unsigned long long)n);
    cr_assert_eq(ts_rng_served(r), 16, "one rejection then one acceptance");
    ts_rng_free(r);
}

Test(dp_exact, u64_below_rejects_exactly_below_threshold)
{
    /* thr = 2^64 mod n: r = thr - 1 is rejected, r = thr is accepted (-> thr mod n). */
    check_u64_below(3, 0, 1, 1); /* thr = 1 */
    check_u64_below(((uint64_t)1 << 63) + 1, ((uint64_t)1 << 63) - 2, ((uint64_t)1 << 63) - 1,
                    ((uint64_t)1 << 63) - 1); /* thr = 2^63 - 1 */
    check_u64_below(UINT64_MAX, 0, 1, 1);     /* thr = 1 */
    uint64_t w = 12345, out;
    struct ts_rng *r = script_u64(&w, 1); /* n = 1 and n = 2: thr = 0, nothing rejected */
    cr_assert_eq(core_rng_u64_below(ts_rng_iface(r), 1, &out), CORE_OK);
    cr_assert_eq(out, 0);
    ts_rng_free(r);
    r = script_u64(&w, 1);
    cr_assert_eq(core_rng_u64_below(ts_rng_iface(r), 2, &out), CORE_OK);
    cr_assert_eq(out, 1);
    ts_rng_free(r);
}

Test(dp_exact, u128_below_max_rejects_zero_only)
{
    const uint64_t w[4] = {0, 0, 0, 1}; /* hi, lo: r = 0 rejected (thr = 1), then r = 1 */
    struct ts_rng *r = script_u64(w, 4);
    core_u128 out = 0;
    cr_assert_eq(core_rng_u128_below(ts_rng_iface(r), ~(core_u128)0, &out), CORE_OK);
    cr_assert(out == 1);
    cr_assert_eq(ts_rng_served(r), 32);
    ts_rng_free(r);
}

Test(dp_exact, bern_rat_compares_bits_lazily_and_exactly)
{
    /* 1/3 = 0.010101...b; bits are consumed from the low end of each 64-bit word */
    const uint64_t w[3] = {0 /* U = 0.00..: below 1/3 */, 1 /* U = 0.1..: above */,
                           2 /* U = 0.0100..: below 0.0101 */};
    struct ts_rng *r = script_u64(w, 3);
    bool b;
    cr_assert_eq(core_dp_bern_rat(ts_rng_iface(r), 1, 3, &b), CORE_OK);
    cr_assert(b);
    cr_assert_eq(core_dp_bern_rat(ts_rng_iface(r), 1, 3, &b), CORE_OK);
    cr_assert(!b);
    cr_assert_eq(core_dp_bern_rat(ts_rng_iface(r), 1, 3, &b), CORE_OK);
    cr_assert(b);
    cr_assert_eq(core_dp_bern_rat(ts_rng_iface(r), 0, 3, &b), CORE_OK, "no draw needed");
    cr_assert(!b);
    cr_assert_eq(core_dp_bern_rat(ts_rng_iface(r), 3, 3, &b), CORE_OK, "no draw needed");
    cr_assert(b);
    cr_assert_eq(core_dp_bern_rat(ts_rng_iface(r), 1, 3, &b), CORE_ERNG, "script exhausted");
    ts_rng_free(r);
}

Test(dp_exact, bern_rat_matches_wilson_interval)
{
    struct ts_rng *r = ts_rng_seeded_new(350);
    const core_u128 two90 = (core_u128)1 << 90;
    const core_u128 nd[3][2] = {{1, 3}, {999, 1000}, {two90 / 7 * 5, two90}};
    for (int i = 0; i < 3; i++) {
        uint64_t k = 0;
        for (uint64_t j = 0; j < DP_N; j++) {
            bool b;
            cr_assert_eq(core_dp_bern_rat(ts_rng_iface(r), nd[i][0], nd[i][1], &b), CORE_OK);
            k += b;
        }
        double p0 = (double)nd[i][0] / (double)nd[i][1];
        cr_assert(dp_wilson_contains(k, DP_N, p0, DP_Z), "case %d: %llu vs %g (N=1e6)", i,
                  (unsigned long long)k, p0);
        cr_assert(!dp_wilson_contains(k, DP_N, p0 * 1.01, DP_Z) || p0 > 0.99,
                  "a 1%% error would be visible");
    }
    ts_rng_free(r);
}

Test(dp_exact, parameters_are_validated)
{
    struct ts_rng *r = ts_rng_seeded_new(1);
    const struct core_rng *g = ts_rng_iface(r);
    bool b;
    int64_t k;
    uint64_t u;
    cr_assert_eq(core_rng_u64_below(g, 0, &u), CORE_EINVAL);
    cr_assert_eq(core_dp_bern_rat(g, 2, 1, &b), CORE_EINVAL);
    cr_assert_eq(core_dp_bern_rat(g, 0, 0, &b), CORE_EINVAL);
    cr_assert_eq(core_dp_bern_exp(g, 1, 0, &b), CORE_EINVAL);
    cr_assert_eq(core_dp_bern_exp(g, 1, (core_u128)1 << 100, &b), CORE_EINVAL);
    cr_assert_eq(core_dp_dlap(g, 0, &k), CORE_EINVAL);
    cr_assert_eq(core_dp_dlap(g, ((uint64_t)1 << 42) + 1, &k), CORE_EINVAL);
    cr_assert_eq(core_dp_dgauss(g, 0, &k), CORE_EINVAL);
    cr_assert_eq(core_dp_dgauss(g, ((uint64_t)1 << 44) + 1, &k), CORE_EINVAL);
    cr_assert_eq(core_dp_dlap(NULL, 3, &k), CORE_EINVAL);
    ts_rng_free(r);
}

Test(dp_exact, rng_failure_gives_no_output)
{
    /* the source dies after ok bytes: every attempt fails with CORE_ERNG and no output
     * until ok is large enough for one complete draw */
    size_t ok = 0, failures = 0;
    for (;; ok += 8) {
        struct ts_rng *r = ts_rng_failing_new(7, ok);
        int64_t k = 424242;
        core_err rc = core_dp_dgauss(ts_rng_iface(r), 1000, &k);
        ts_rng_free(r);
        if (rc == CORE_OK)
            break;
        cr_assert_eq(rc, CORE_ERNG, "rng failing after %zu bytes", ok);
        cr_assert_eq(k, 424242, "output untouched on failure");
        failures++;
    }
    cr_assert_geq(failures, 2, "a draw needs several words");
}

/* ---------- T1.5: exhaustive enumeration of bern_exp's algebra ---------- */

#define ENUM_MAXD 64

struct enum_ctx {
    int choice[ENUM_MAXD];
    long double prob[ENUM_MAXD];
    int len;   /* choices fixed so far */
    int pos;   /* next call */
    int limit; /* calls allowed on one path */
};

static core_err enum_bern_rat(void *p, core_u128 num, core_u128 den, bool *out)
{
    struct enum_ctx *c = p;
    if (num > den || den == 0)
        return CORE_EINVAL;
    if (c->pos >= c->limit)
        return CORE_ENUMERIC; /* path cut: its mass is "unexplored" */
    long double pt = (long double)num / (long double)den;
    if (c->pos == c->len) {
        c->choice[c->len++] = 1; /* new branch point: explore "true" first */
    }
    int ch = c->choice[c->pos];
    c->prob[c->pos] = ch ? pt : 1.0L - pt;
    c->pos++;
    *out = ch != 0;
    return CORE_OK;
}

typedef core_err (*bexp_src_fn)(const struct core__bern_src *, core_u128, core_u128, bool *);

/* A copy of bern_exp with the division bug class of OpenDP #2638: the k-th step uses
 * Bernoulli(a/b) instead of Bernoulli(a/(b k)). */
static core_err broken_bern_exp(const struct core__bern_src *src, core_u128 num, core_u128 den,
                                bool *out)
{
    core_u128 q = num / den, r = num % den;
    bool more;
    for (core_u128 i = 0; i <= q; i++) {
        core_u128 a = i < q ? 1 : r, b = i < q ? 1 : den;
        core_u128 k = 1;
        for (;;) {
            core_err rc = src->bern_rat(src->ctx, a, b, &more); /* BUG: b instead of b*k */
            if (rc != CORE_OK)
                return rc;
            if (!more)
                break;
            k++;
        }
        if (!(k & 1)) {
            *out = false;
            return CORE_OK;
        }
    }
    *out = true;
    return CORE_OK;
}

/* Enumerate every decision path; lo = P(true) on finished paths, hi = lo + cut mass. */
static void enumerate(bexp_src_fn f, core_u128 num, core_u128 den, long double *lo, long double *hi)
{
    struct enum_ctx c = {.len = 0};
    const struct core__bern_src src = {.bern_rat = enum_bern_rat, .ctx = &c};
    c.limit = 12 * (int)(num / den + 1);
    if (c.limit > ENUM_MAXD)
        c.limit = ENUM_MAXD;
    *lo = 0;
    long double cut = 0;
    for (;;) {
        bool out = false;
        c.pos = 0;
        core_err rc = f(&src, num, den, &out);
        cr_assert(rc == CORE_OK || rc == CORE_ENUMERIC);
        long double p = 1;
        for (int i = 0; i < c.pos; i++)
            p *= c.prob[i];
        if (rc == CORE_ENUMERIC)
            cut += p;
        else if (out)
            *lo += p;
        c.len = c.pos; /* backtrack: drop trailing "false", flip the last "true" */
        while (c.len > 0 && c.choice[c.len - 1] == 0)
            c.len--;
        if (c.len == 0)
            break;
        c.choice[c.len - 1] = 0;
    }
    *hi = *lo + cut;
}

Test(dp_exact, bern_exp_algebra_brackets_exp_exactly)
{
    static const uint64_t xs[][2] = {{0, 1}, {1, 7}, {1, 2}, {1, 1}, {3, 2}, {5, 1}, {37, 10}};
    for (size_t i = 0; i < sizeof(xs) / sizeof(xs[0]); i++) {
        long double lo, hi, want = expl(-(long double)xs[i][0] / (long double)xs[i][1]);
        enumerate(core__dp_bern_exp_src, xs[i][0], xs[i][1], &lo, &hi);
        /* long double rounding only: 1e-15 relative slack */
        cr_assert(lo <= want * (1 + 1e-15L) && want <= hi * (1 + 1e-15L),
                  "x=%llu/%llu: [%Lg, %Lg] vs %Lg", (unsigned long long)xs[i][0],
                  (unsigned long long)xs[i][1], lo, hi, want);
        cr_assert(hi - lo < 1e-6L, "enumeration deep enough");
    }
}

Test(dp_exact, bern_exp_enumeration_rejects_division_bug)
{
    long double lo, hi, want = expl(-0.5L);
    enumerate(broken_bern_exp, 1, 2, &lo, &hi);
    cr_assert(!(lo <= want && want <= hi), "the broken algebra must fall outside the bracket");
}

/* ---------- T2.1: uniform below n ---------- */

static double u64_below_chisq(core_err (*f)(const struct core_rng *, uint64_t, uint64_t *),
                              uint64_t n, size_t bins, uint64_t seed)
{
    struct ts_rng *r = ts_rng_seeded_new(seed);
    uint64_t *obs = calloc(bins, sizeof(*obs));
    double *p = calloc(bins, sizeof(*p));
    for (size_t i = 0; i < bins; i++)
        p[i] = 1.0 / (double)bins;
    for (uint64_t i = 0; i < DP_N; i++) {
        uint64_t v;
        cr_assert_eq(f(ts_rng_iface(r), n, &v), CORE_OK);
        cr_assert_lt(v, n);
        obs[bins == n ? v : (size_t)(v / (n / bins))]++;
    }
    double x2 = dp_chisq(obs, p, bins, DP_N);
    free(obs);
    free(p);
    ts_rng_free(r);
    return x2;
}

static core_err naive_mod(const struct core_rng *rng, uint64_t n, uint64_t *out)
{
    uint64_t r;
    core_err rc = core_rng_u64(rng, &r);
    *out = r % n; /* BUG: biased unless n divides 2^64 */
    return rc;
}

Test(dp_exact, u64_below_is_uniform_chisq)
{
    static const uint64_t ns[] = {3, 6, 10, 1000};
    for (size_t i = 0; i < 4; i++) {
        double x2 = u64_below_chisq(core_rng_u64_below, ns[i], ns[i], 100 + i);
        cr_assert_lt(x2, dp_chisq_crit(ns[i] - 1), "n=%llu x2=%g (N=1e6, alpha=1e-6)",
                     (unsigned long long)ns[i], x2);
    }
    uint64_t big = 3 * ((uint64_t)1 << 61);
    double good = u64_below_chisq(core_rng_u64_below, big, 3, 200);
    double bad = u64_below_chisq(naive_mod, big, 3, 200);
    cr_assert_lt(good, dp_chisq_crit(2), "n=3*2^61 x2=%g", good);
    cr_assert_gt(bad, dp_chisq_crit(2), "naive r mod n (mass 3:3:2) must be rejected: %g", bad);
}

/* ---------- T2.2 / T2.3: Bernoulli(exp(-x)) ---------- */

typedef core_err (*bexp_fn)(const struct core_rng *, core_u128, core_u128, bool *);

static uint64_t count_true(bexp_fn f, core_u128 num, core_u128 den, uint64_t seed)
{
    struct ts_rng *r = ts_rng_seeded_new(seed);
    uint64_t k = 0;
    for (uint64_t i = 0; i < DP_N; i++) {
        bool b;
        cr_assert_eq(f(ts_rng_iface(r), num, den, &b), CORE_OK);
        k += b;
    }
    ts_rng_free(r);
    return k;
}

/* Broken: Bernoulli(1.01 exp(-num/den)) via a float approximation. */
static core_err bern_exp_plus1pct(const struct core_rng *rng, core_u128 num, core_u128 den,
                                  bool *out)
{
    double p = 1.01 * exp(-(double)num / (double)den);
    core_u128 scaled = (core_u128)ldexp(p, 53);
    return core_dp_bern_rat(rng, scaled, (core_u128)1 << 53, out);
}

Test(dp_exact, bern_exp_matches_wilson_interval)
{
    const core_u128 p61 = ((core_u128)1 << 61) - 1;
    const core_u128 xs[][2] = {{1, 1000000000},       {1, 3}, {1, 2}, {1, 1}, {2, 1}, {5, 1},
                               {p61 / 3 + 12345, p61}};
    for (size_t i = 0; i < sizeof(xs) / sizeof(xs[0]); i++) {
        double p0 = exp(-(double)xs[i][0] / (double)xs[i][1]);
        uint64_t k = count_true(core_dp_bern_exp, xs[i][0], xs[i][1], 300 + i);
        cr_assert(dp_wilson_contains(k, DP_N, p0, DP_Z), "x index %zu: %llu/1e6 vs p=%g", i,
                  (unsigned long long)k, p0);
    }
    uint64_t kb = count_true(bern_exp_plus1pct, 1, 2, 399);
    cr_assert(!dp_wilson_contains(kb, DP_N, exp(-0.5), DP_Z), "p*1.01 sampler must be rejected");
}

Test(dp_exact, bern_exp_factorizes)
{
    /* two-proportion z-test: exp(-1/3) exp(-1/2) vs exp(-5/6), N = 1e6 each, |z| <= 4.89 */
    struct ts_rng *r = ts_rng_seeded_new(400);
    uint64_t both = 0, single = 0;
    for (uint64_t i = 0; i < DP_N; i++) {
        bool a, b, c;
        cr_assert_eq(core_dp_bern_exp(ts_rng_iface(r), 1, 3, &a), CORE_OK);
        cr_assert_eq(core_dp_bern_exp(ts_rng_iface(r), 1, 2, &b), CORE_OK);
        cr_assert_eq(core_dp_bern_exp(ts_rng_iface(r), 5, 6, &c), CORE_OK);
        both += a && b;
        single += c;
    }
    double p1 = (double)both / DP_N, p2 = (double)single / DP_N, pp = (p1 + p2) / 2;
    double z = fabs(p1 - p2) / sqrt(pp * (1 - pp) * 2.0 / DP_N);
    cr_assert_lt(z, DP_Z, "z=%g", z);
    ts_rng_free(r);
}

/* ---------- T2.4 / T2.12: discrete Laplace ---------- */

typedef core_err (*int_sampler)(const struct core_rng *, uint64_t param, int64_t *out);

/* Chi-square of f(t) against P(k) = (1-q)/(1+q) q^|k|, q = e^-1/t: bins |k| <= K with expected
 * count >= 20, plus one pooled tail bin. repeat > 1 repeats every draw (T2.12). */
static double dlap_chisq(int_sampler f, uint64_t t, uint64_t seed, unsigned repeat, size_t *df)
{
    double q = exp(-1.0 / (double)t), p0 = (1 - q) / (1 + q);
    long K = 0;
    while ((double)DP_N * p0 * pow(q, (double)(K + 1)) >= 20 &&
           (double)DP_N * 2 * p0 * pow(q, (double)(K + 2)) / (1 - q) >= 20)
        K++;
    size_t nb = (size_t)(2 * K + 2);
    uint64_t *obs = calloc(nb, sizeof(*obs));
    double *p = calloc(nb, sizeof(*p));
    for (long k = -K; k <= K; k++)
        p[k + K] = p0 * pow(q, (double)labs(k));
    p[nb - 1] = 2 * p0 * pow(q, (double)(K + 1)) / (1 - q);
    struct ts_rng *r = ts_rng_seeded_new(seed);
    for (uint64_t i = 0; i < DP_N; i += repeat) {
        int64_t v;
        cr_assert_eq(f(ts_rng_iface(r), t, &v), CORE_OK);
        size_t b = (v >= -K && v <= K) ? (size_t)(v + K) : nb - 1;
        obs[b] += repeat;
    }
    double x2 = dp_chisq(obs, p, nb, DP_N);
    *df = nb - 1;
    free(obs);
    free(p);
    ts_rng_free(r);
    return x2;
}

static double unif01(const struct core_rng *g)
{
    uint64_t u;
    cr_assert_eq(core_rng_u64(g, &u), CORE_OK);
    return ldexp((double)((u >> 11) + 1), -53); /* (0, 1] */
}

/* Broken: the two-sided geometric at scale 1.02 t (difference of two float geometrics). */
static core_err dlap_scale102(const struct core_rng *g, uint64_t t, int64_t *out)
{
    double lq = -1.0 / (1.02 * (double)t);
    double a = floor(log(unif01(g)) / lq), b = floor(log(unif01(g)) / lq);
    *out = (int64_t)a - (int64_t)b;
    return CORE_OK;
}

/* Broken: CKS20 Alg. 2 without rejecting (negative, 0): zero gets double mass. */
static core_err dlap_zero_doubled(const struct core_rng *g, uint64_t t, int64_t *out)
{
    for (;;) {
        uint64_t u, v, s;
        bool keep;
        cr_assert_eq(core_rng_u64_below(g, t, &u), CORE_OK);
        cr_assert_eq(core_dp_bern_exp(g, u, t, &keep), CORE_OK);
        if (!keep)
            continue;
        cr_assert_eq(core_dp_geom_e1(g, &v), CORE_OK);
        cr_assert_eq(core_rng_u64(g, &s), CORE_OK);
        int64_t m = (int64_t)(u + t * v);
        *out = (s & 1) ? -m : m; /* BUG: (-, 0) accepted */
        return CORE_OK;
    }
}

/* Broken: 1 % of negative draws flipped to positive. */
static core_err dlap_sign_biased(const struct core_rng *g, uint64_t t, int64_t *out)
{
    bool flip;
    cr_assert_eq(core_dp_dlap(g, t, out), CORE_OK);
    cr_assert_eq(core_dp_bern_rat(g, 1, 100, &flip), CORE_OK);
    if (*out < 0 && flip)
        *out = -*out;
    return CORE_OK;
}

Test(dp_exact, dlap_matches_pmf_chisq_and_rejects_broken)
{
    static const uint64_t ts[] = {1, 3, 10, 30};
    for (size_t i = 0; i < 4; i++) {
        size_t df;
        double x2 = dlap_chisq(core_dp_dlap, ts[i], 500 + i, 1, &df);
        double crit = dp_chisq_crit(df);
        cr_assert_lt(x2, crit, "t=%llu x2=%g df=%zu crit=%g (N=1e6)", (unsigned long long)ts[i], x2,
                     df, crit);
        double bs = dlap_chisq(dlap_scale102, ts[i], 600 + i, 1, &df);
        cr_assert_gt(bs, crit, "scale x1.02 must be rejected at t=%llu (x2=%g)",
                     (unsigned long long)ts[i], bs);
        double bz = dlap_chisq(dlap_zero_doubled, ts[i], 700 + i, 1, &df);
        cr_assert_gt(bz, crit, "(-,0) not rejected must be caught at t=%llu",
                     (unsigned long long)ts[i]);
        double bd = dlap_chisq(core_dp_dlap, ts[i], 800 + i, 200, &df);
        cr_assert_gt(bd, crit, "T2.12: each draw repeated 200x must be rejected");
    }
    size_t df;
    (void)dlap_chisq(core_dp_dlap, 1, 501, 1, &df);
    cr_assert_eq(df, 21, "binning for t=1 as NOISE.md A.3");
    cr_assert(fabs(dp_chisq_crit(21) - 67.1) < 0.05, "exact crit %g", dp_chisq_crit(21));
}

static double dlap_sign_test(int_sampler f, uint64_t t, uint64_t seed)
{
    struct ts_rng *r = ts_rng_seeded_new(seed);
    uint64_t pos = 0, neg = 0;
    for (uint64_t i = 0; i < DP_N; i++) {
        int64_t v;
        cr_assert_eq(f(ts_rng_iface(r), t, &v), CORE_OK);
        pos += v > 0;
        neg += v < 0;
    }
    ts_rng_free(r);
    return dp_sign_z(pos, neg);
}

Test(dp_exact, dlap_sign_is_symmetric_and_1pct_bias_rejected)
{
    static const uint64_t ts[] = {1, 30};
    for (size_t i = 0; i < 2; i++) {
        double z = dlap_sign_test(core_dp_dlap, ts[i], 900 + i);
        cr_assert_lt(z, DP_Z, "t=%llu sign z=%g (N=1e6)", (unsigned long long)ts[i], z);
        double zb = dlap_sign_test(dlap_sign_biased, ts[i], 910 + i);
        cr_assert_gt(zb, DP_Z, "1%% sign bias must be rejected, z=%g", zb);
    }
}

/* T3 "no holes": for t = 30 every integer in [-5t, 5t] appears in 1e6 draws (expected count
 * at +-150 is about 110); a sampler on even integers only must fail the same check. */
static int dlap_has_holes(int_sampler f, uint64_t t, uint64_t seed)
{
    struct ts_rng *r = ts_rng_seeded_new(seed);
    static unsigned char seen[301];
    memset(seen, 0, sizeof(seen));
    for (uint64_t i = 0; i < DP_N; i++) {
        int64_t v;
        cr_assert_eq(f(ts_rng_iface(r), t, &v), CORE_OK);
        if (v >= -150 && v <= 150)
            seen[v + 150] = 1;
    }
    ts_rng_free(r);
    for (size_t i = 0; i < 301; i++)
        if (!seen[i])
            return 1;
    return 0;
}

static core_err dlap_even_only(const struct core_rng *g, uint64_t t, int64_t *out)
{
    core_err rc = core_dp_dlap(g, t / 2, out);
    *out *= 2;
    return rc;
}

Test(dp_exact, dlap_has_no_holes)
{
    cr_assert(!dlap_has_holes(core_dp_dlap, 30, 950));
    cr_assert(dlap_has_holes(dlap_even_only, 30, 951), "even-only sampler must be flagged");
}

/* ---------- T2.6: discrete Gaussian ---------- */

static double dgauss_chisq(int_sampler f, uint64_t S, uint64_t seed, size_t *df)
{
    double sd = sqrt((double)S), Z = 0;
    long M = (long)(40 * sd) + 40, K = 0;
    for (long k = -M; k <= M; k++)
        Z += exp(-(double)k * (double)k / (2.0 * (double)S));
    while ((double)DP_N * exp(-(double)(K + 1) * (double)(K + 1) / (2.0 * (double)S)) / Z >= 20)
        K++;
    /* keep the pooled tail bin >= 20 expected too */
    double tail;
    for (;;) {
        tail = 0;
        for (long k = K + 1; k <= M; k++)
            tail += 2 * exp(-(double)k * (double)k / (2.0 * (double)S)) / Z;
        if (tail * DP_N >= 20 || K == 0)
            break;
        K--;
    }
    size_t nb = (size_t)(2 * K + 2);
    uint64_t *obs = calloc(nb, sizeof(*obs));
    double *p = calloc(nb, sizeof(*p));
    for (long k = -K; k <= K; k++)
        p[k + K] = exp(-(double)k * (double)k / (2.0 * (double)S)) / Z;
    p[nb - 1] = tail;
    struct ts_rng *r = ts_rng_seeded_new(seed);
    for (uint64_t i = 0; i < DP_N; i++) {
        int64_t v;
        cr_assert_eq(f(ts_rng_iface(r), S, &v), CORE_OK);
        obs[(v >= -K && v <= K) ? (size_t)(v + K) : nb - 1]++;
    }
    double x2 = dp_chisq(obs, p, nb, DP_N);
    *df = nb - 1;
    free(obs);
    free(p);
    ts_rng_free(r);
    return x2;
}

/* Broken: the Laplace proposal returned without the acceptance step. */
static core_err dgauss_no_accept(const struct core_rng *g, uint64_t S, int64_t *out)
{
    return core_dp_dlap(g, (uint64_t)floor(sqrt((double)S)) + 1, out);
}

/* Broken: sigma x 1.02 (S x 1.0404) at S = 1000. */
static core_err dgauss_sigma102(const struct core_rng *g, uint64_t S, int64_t *out)
{
    return core_dp_dgauss(g, (uint64_t)llround((double)S * 1.0404), out);
}

Test(dp_exact, dgauss_matches_pmf_chisq_and_rejects_broken)
{
    static const uint64_t Ss[] = {1, 10, 1000};
    for (size_t i = 0; i < 3; i++) {
        size_t df;
        double x2 = dgauss_chisq(core_dp_dgauss, Ss[i], 1000 + i, &df);
        double crit = dp_chisq_crit(df);
        cr_assert_lt(x2, crit, "S=%llu x2=%g df=%zu crit=%g (N=1e6)", (unsigned long long)Ss[i], x2,
                     df, crit);
        double bl = dgauss_chisq(dgauss_no_accept, Ss[i], 1100 + i, &df);
        cr_assert_gt(bl, crit, "Laplace-shaped candidate must be rejected at S=%llu",
                     (unsigned long long)Ss[i]);
    }
    size_t df;
    double bs = dgauss_chisq(dgauss_sigma102, 1000, 1200, &df);
    cr_assert_gt(bs, dp_chisq_crit(df), "sigma x1.02 must be rejected (x2=%g)", bs);
}

/* sigma ~ 2^20 (S = 2^40): bins of width sigma/8 over +-6 sigma against the normal CDF
 * (the lattice correction is < 1e-12 here); variance within 4.89 sqrt(2) S / sqrt(N). */
static void dgauss_big(int_sampler f, uint64_t seed, double *x2, double *zvar, size_t *df)
{
    const uint64_t S = (uint64_t)1 << 40;
    const double sd = ldexp(1.0, 20), w = sd / 8;
    const size_t nb = 96 + 2;
    uint64_t obs[98] = {0};
    double p[98], ss = 0;
    for (size_t b = 0; b < 96; b++)
        p[b + 1] = gsl_cdf_ugaussian_P((-6 * sd + (double)(b + 1) * w - 0.5) / sd) -
                   gsl_cdf_ugaussian_P((-6 * sd + (double)b * w - 0.5) / sd);
    p[0] = p[97] = gsl_cdf_ugaussian_P((-6 * sd - 0.5) / sd);
    struct ts_rng *r = ts_rng_seeded_new(seed);
    for (uint64_t i = 0; i < DP_N; i++) {
        int64_t v;
        cr_assert_eq(f(ts_rng_iface(r), S, &v), CORE_OK);
        double x = (double)v;
        ss += x * x;
        long b = (long)floor((x + 0.5 + 6 * sd) / w);
        obs[b < 0 ? 0 : (b >= 96 ? 97 : (size_t)b + 1)]++;
    }
    ts_rng_free(r);
    *x2 = dp_chisq(obs, p, nb, DP_N);
    *df = nb - 1;
    double var = ss / DP_N;
    *zvar = fabs(var - (double)S) / (sqrt(2.0) * (double)S / sqrt((double)DP_N));
}

Test(dp_exact, dgauss_large_sigma_binned_and_variance)
{
    double x2, zv;
    size_t df;
    dgauss_big(core_dp_dgauss, 1300, &x2, &zv, &df);
    cr_assert_lt(x2, dp_chisq_crit(df), "x2=%g df=%zu", x2, df);
    cr_assert_lt(zv, DP_Z, "variance z=%g", zv);
    dgauss_big(dgauss_no_accept, 1301, &x2, &zv, &df);
    cr_assert_gt(x2, dp_chisq_crit(df), "Laplace proposal must be rejected at sigma=2^20");
}

/* Random-word economy of the lazy Bernoulli (NOISE.md §4.4 reports about 9.6 uniform draws
 * per dlap(2^40+1) and 14.6 per dgauss(sigma ~ 2^20) for the textbook u128_below variant).
 * Deterministic with the seeded stream; N = 1e5; the bounds catch a regression to
 * one uniform per Bernoulli. */
Test(dp_exact, samplers_use_few_random_words)
{
    const long N = 100000;
    int64_t v;
    struct ts_rng *r = ts_rng_seeded_new(1400);
    for (long i = 0; i < N; i++)
        cr_assert_eq(core_dp_dlap(ts_rng_iface(r), ((uint64_t)1 << 40) + 1, &v), CORE_OK);
    double wl = (double)ts_rng_served(r) / 8.0 / (double)N;
    ts_rng_free(r);
    r = ts_rng_seeded_new(1401);
    for (long i = 0; i < N; i++)
        cr_assert_eq(core_dp_dgauss(ts_rng_iface(r), (uint64_t)1 << 40, &v), CORE_OK);
    double wg = (double)ts_rng_served(r) / 8.0 / (double)N;
    ts_rng_free(r);
    cr_log_info("64-bit words per sample: dlap(2^40+1) %.2f, dgauss(2^40) %.2f", wl, wg);
    cr_assert_lt(wl, 3.5, "dlap uses %.2f words/sample", wl);
    cr_assert_lt(wg, 4.5, "dgauss uses %.2f words/sample", wg);
}
