/* test_dp_stat.h - statistics helpers for the DP sampler tests (NOISE.md §6 conventions:
 * alpha = 1e-6 per test, exact chi-square quantiles from GSL, Wilson z = 4.8916).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef GCDP_TEST_DP_STAT_H
#define GCDP_TEST_DP_STAT_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include <gsl/gsl_cdf.h>

#define DP_ALPHA 1e-6
#define DP_Z     4.8916 /* two-sided normal quantile at alpha = 1e-6 */
#define DP_N     1000000

/* Chi-square critical value at alpha = 1e-6 with df degrees of freedom. */
static inline double dp_chisq_crit(size_t df)
{
    return gsl_cdf_chisq_Qinv(DP_ALPHA, (double)df);
}

/* Pearson statistic of observed counts against probabilities p (summing to 1), N draws. */
static inline double dp_chisq(const uint64_t *obs, const double *p, size_t nbins, uint64_t N)
{
    double x2 = 0.0;
    for (size_t i = 0; i < nbins; i++) {
        double e = p[i] * (double)N;
        double d = (double)obs[i] - e;
        x2 += d * d / e;
    }
    return x2;
}

/* Wilson score interval for k successes in n at z; returns 1 if p0 is inside. */
static inline int dp_wilson_contains(uint64_t k, uint64_t n, double p0, double z)
{
    double nn = (double)n, ph = (double)k / nn, z2 = z * z;
    double c = (ph + z2 / (2 * nn)) / (1 + z2 / nn);
    double h = z / (1 + z2 / nn) * sqrt(ph * (1 - ph) / nn + z2 / (4 * nn * nn));
    return p0 >= c - h && p0 <= c + h;
}

/* Binomial sign test: among pos + neg nonzero samples, |z| of pos - half. */
static inline double dp_sign_z(uint64_t pos, uint64_t neg)
{
    double n = (double)(pos + neg);
    return fabs((double)pos - n / 2) / sqrt(n / 4);
}

#endif /* GCDP_TEST_DP_STAT_H */
