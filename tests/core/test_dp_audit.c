/* test_dp_audit.c - black-box empirical DP audit (NOISE.md §6 T4, Gilbert-McMillan /
 * DP-Auditorium histogram tester) and a fail-closed sweep over special parameter values
 * (T7, without a fuzzer).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Audit: n = 1e6 outputs per neighbour, m = 20 fixed bins, beta = 1e-6;
 * dhat = sum_b max(0, p_b - e^eps q_b) (both directions) and
 * LB = dhat - [(2/sqrt n) sum sqrt(p) + (2 e^eps/sqrt n) sum sqrt(q)
 *              + 6 (1 + e^eps) sqrt(ln(4/beta) / 2n)]; the mechanism fails if LB > delta = 0.
 * Negative controls that must be flagged: Laplace at scale b/2 (eps' = 2 eps) and the EM
 * run at 4x the charged eps.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <gsl/gsl_errno.h>

#include "core/dp_acct.h"
#include "core/dp_calib.h"
#include "core/dp_mech.h"
#include "seeded_rng.h"

static void suite_init(void)
{
    gsl_set_error_handler_off();
}

TestSuite(dp_audit, .init = suite_init, .timeout = 120);

#define AUD_N    1000000
#define AUD_M    20
#define AUD_BETA 1e-6

static double audit_lb(const uint64_t *a, const uint64_t *b, size_t m, double eps)
{
    double best = -INFINITY;
    for (int dir = 0; dir < 2; dir++) {
        const uint64_t *p = dir ? b : a, *q = dir ? a : b;
        double dh = 0, sp = 0, sq = 0, n = AUD_N;
        for (size_t i = 0; i < m; i++) {
            double ph = (double)p[i] / n, qh = (double)q[i] / n;
            dh += fmax(0.0, ph - exp(eps) * qh);
            sp += sqrt(ph);
            sq += sqrt(qh);
        }
        double tol = 2 / sqrt(n) * sp + 2 * exp(eps) / sqrt(n) * sq +
                     6 * (1 + exp(eps)) * sqrt(log(4 / AUD_BETA) / (2 * n));
        best = fmax(best, dh - tol);
    }
    return best;
}

/* Bin Laplace releases of x with (sensitivity 1, eps_run) into 20 bins of width 0.5 on
 * [-4.5, 5.5) (outer bins take the tails). */
static void lap_hist(double x, double eps_run, uint64_t seed, uint64_t *h)
{
    struct ts_rng *r = ts_rng_seeded_new(seed);
    struct core_dp_lap p;
    enum { CH = 4096 };
    double xs[CH], ys[CH];
    memset(h, 0, AUD_M * sizeof(*h));
    cr_assert_eq(core_dp_lap_params(1.0, eps_run, 100.0, 1, &p), CORE_OK);
    for (size_t i = 0; i < CH; i++)
        xs[i] = x;
    for (size_t done = 0; done < AUD_N; done += CH) {
        size_t n = AUD_N - done < CH ? AUD_N - done : CH;
        cr_assert_eq(core_dp_lap_release(ts_rng_iface(r), &p, n, xs, ys), CORE_OK);
        for (size_t i = 0; i < n; i++) {
            long b = (long)floor((ys[i] + 4.5) / 0.5);
            h[b < 0 ? 0 : (b >= AUD_M ? AUD_M - 1 : b)]++;
        }
    }
    ts_rng_free(r);
}

Test(dp_audit, laplace_passes_and_half_scale_is_flagged)
{
    uint64_t a[AUD_M], b[AUD_M];
    lap_hist(0.0, 1.0, 4000, a);
    lap_hist(1.0, 1.0, 4001, b); /* worst-case neighbour x + Delta */
    double lb = audit_lb(a, b, AUD_M, 1.0);
    cr_assert_leq(lb, 0.0, "eps = 1 Laplace flagged: LB = %g", lb);
    lap_hist(0.0, 2.0, 4002, a); /* scale b/2: true eps' = 2 while claiming eps = 1 */
    lap_hist(1.0, 2.0, 4003, b);
    double bad = audit_lb(a, b, AUD_M, 1.0);
    cr_assert_gt(bad, 0.0, "scale b/2 must be flagged: LB = %g", bad);
}

Test(dp_audit, clamp_edges_pass)
{
    /* inputs beyond the public bound B = 100 are clamped: x = B vs x = B + 5 (clamped to B)
     * are identical in law; x = B - 1 vs B differ by the sensitivity 1 */
    struct ts_rng *r = ts_rng_seeded_new(4100);
    struct core_dp_lap p;
    uint64_t a[AUD_M] = {0}, b[AUD_M] = {0};
    cr_assert_eq(core_dp_lap_params(1.0, 1.0, 100.0, 1, &p), CORE_OK);
    for (uint64_t i = 0; i < AUD_N; i++) {
        double x1 = 99.0, x2 = 105.0, y1, y2;
        cr_assert_eq(core_dp_lap_release(ts_rng_iface(r), &p, 1, &x1, &y1), CORE_OK);
        cr_assert_eq(core_dp_lap_release(ts_rng_iface(r), &p, 1, &x2, &y2), CORE_OK);
        long b1 = (long)floor((y1 - 95.5) / 0.5), b2 = (long)floor((y2 - 95.5) / 0.5);
        a[b1 < 0 ? 0 : (b1 >= AUD_M ? AUD_M - 1 : b1)]++;
        b[b2 < 0 ? 0 : (b2 >= AUD_M ? AUD_M - 1 : b2)]++;
    }
    double lb = audit_lb(a, b, AUD_M, 1.0);
    cr_assert_leq(lb, 0.0, "LB = %g", lb);
    ts_rng_free(r);
}

/* EM: two candidates whose scores move by Delta = 1 in opposite directions, scale 2. The
 * audited claim is the exact range-distance eps = 2 Delta / scale = 1 (sharper than the
 * quantisation-padded charge of core_dp_em_eps, which must be >= it). The control runs at
 * scale/4 while keeping the claim. */
static double em_audit(double scale_run, uint64_t seed)
{
    struct ts_rng *r = ts_rng_seeded_new(seed);
    const double s1[3] = {1, 0, 0.5}, s2[3] = {0, 1, 0.5};
    uint64_t a[3] = {0}, b[3] = {0};
    double charged, claim = 2.0 * 1.0 / 2.0;
    cr_assert_eq(core_dp_em_eps(1.0, 2.0, 0, false, &charged), CORE_OK);
    cr_assert_geq(charged, claim);
    for (uint64_t i = 0; i < AUD_N; i++) {
        size_t k1, k2;
        cr_assert_eq(core_dp_em_select(ts_rng_iface(r), 3, s1, scale_run, 0, &k1), CORE_OK);
        cr_assert_eq(core_dp_em_select(ts_rng_iface(r), 3, s2, scale_run, 0, &k2), CORE_OK);
        a[k1]++;
        b[k2]++;
    }
    ts_rng_free(r);
    return audit_lb(a, b, 3, claim);
}

Test(dp_audit, em_passes_and_undercharged_run_is_flagged)
{
    double lb = em_audit(2.0, 4200);
    cr_assert_leq(lb, 0.0, "EM flagged: LB = %g", lb);
    double bad = em_audit(0.5, 4201); /* 4x the claimed eps */
    cr_assert_gt(bad, 0.0, "EM at scale/4 must be flagged: LB = %g", bad);
}

/* ---------- T7: fail-closed sweep over special values ---------- */

static const double SPECIAL[] = {NAN,         INFINITY, -INFINITY, 0.0,    -0.0, -1.0,
                                 DBL_MIN / 4, DBL_MIN,  0x1p-40,   1e-300, 0.5,  1.0,
                                 3.0,         1e10,     1e300,     DBL_MAX};
#define NSPECIAL (sizeof(SPECIAL) / sizeof(SPECIAL[0]))

Test(dp_audit, special_parameter_values_fail_closed)
{
    struct ts_rng *r = ts_rng_seeded_new(4300);
    size_t ok = 0;
    for (size_t i = 0; i < NSPECIAL; i++)
        for (size_t j = 0; j < NSPECIAL; j++)
            for (size_t k = 0; k < NSPECIAL; k++) {
                double a = SPECIAL[i], b = SPECIAL[j], c = SPECIAL[k];
                struct core_dp_lap lp;
                struct core_dp_gauss gp;
                double y[2], x[2] = {c, -c};
                if (core_dp_lap_params(a, b, c, 1, &lp) == CORE_OK) {
                    ok++;
                    cr_assert(lp.t >= 1 && isfinite(lp.bound) && lp.bound > 0);
                    core_err rc = core_dp_lap_release(ts_rng_iface(r), &lp, 2, x, y);
                    cr_assert(rc == CORE_OK || rc == CORE_ENUMERIC, "rc=%d", rc);
                    if (rc == CORE_OK)
                        cr_assert(isfinite(y[0]) && isfinite(y[1]));
                }
                if (core_dp_gauss_params_sigma(a, b, 1, c, &gp) == CORE_OK) {
                    ok++;
                    cr_assert(gp.S >= 1 && gp.rho > 0 && isfinite(gp.rho));
                    core_err rc = core_dp_gauss_release(ts_rng_iface(r), &gp, 2, x, y);
                    cr_assert(rc == CORE_OK || rc == CORE_ENUMERIC);
                }
                if (core_dp_gauss_params_rho(a, b, 3, c, &gp) == CORE_OK) {
                    ok++;
                    cr_assert(gp.rho <= a && gp.rho > 0, "rho %g <= %g", gp.rho, a);
                }
                double s;
                if (core_dp_agm_sigma(a, b, c, &s) == CORE_OK) {
                    double d;
                    cr_assert(isfinite(s) && s > 0);
                    cr_assert_eq(core_dp_agm_delta(a, s, c, &d), CORE_OK);
                    cr_assert_leq(d, b);
                }
                double e;
                if (core_dp_zcdp_eps(a, b, &e) == CORE_OK)
                    cr_assert(isfinite(e) && e >= 0);
                const double sc[3] = {a, b, c};
                size_t idx = 99;
                core_err rc = core_dp_em_select(ts_rng_iface(r), 3, sc, 1.0, 0, &idx);
                cr_assert(rc == CORE_OK ? idx < 3 : idx == 99);
            }
    cr_assert_gt(ok, 50, "the sweep reaches valid combinations too");
    ts_rng_free(r);
}
