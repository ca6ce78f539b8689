/* dp_round.h - core-internal: directed (upward / downward) rounding of the privacy-relevant
 * real arithmetic (NOISE.md §4.1 item 3, §4.10 "conservative arithmetic").
 * SPDX-License-Identifier: Apache-2.0
 *
 * + - x / sqrt are correctly rounded to nearest by IEEE 754; the exact rounding error is
 * recovered with TwoSum or fma and the result is stepped one ulp in the required direction
 * only when the error says the rounded value is on the wrong side. libm exp/log/log1p are
 * not correctly rounded: they get LIBM_SLACK_ULPS ulps of slack. Requires
 * -ffp-contract=off (set project-wide) so TwoSum is not fused.
 */
#ifndef CORE_DP_ROUND_H
#define CORE_DP_ROUND_H

#include <float.h>
#include <math.h>

#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0
#error "gcdp needs FLT_EVAL_METHOD == 0 (use -msse2 -mfpmath=sse on x86-32)"
#endif
#if defined(__FAST_MATH__)
#error "gcdp must not be built with -ffast-math"
#endif

#define LIBM_SLACK_ULPS 4

static inline double rd_next_up(double x)
{
    return nextafter(x, INFINITY);
}

static inline double rd_next_down(double x)
{
    return nextafter(x, -INFINITY);
}

/* Exact error of s = fl(a + b) (Knuth TwoSum): a + b = s + e exactly. */
static inline double rd_twosum_err(double a, double b, double s)
{
    double bb = s - a;
    return (a - (s - bb)) + (b - bb);
}

static inline double rd_add_up(double a, double b)
{
    double s = a + b;
    if (!isfinite(s))
        return s;
    return rd_twosum_err(a, b, s) > 0 ? rd_next_up(s) : s;
}

static inline double rd_add_down(double a, double b)
{
    double s = a + b;
    if (!isfinite(s))
        return s;
    return rd_twosum_err(a, b, s) < 0 ? rd_next_down(s) : s;
}

static inline double rd_mul_up(double a, double b)
{
    double p = a * b;
    if (!isfinite(p))
        return p;
    return fma(a, b, -p) > 0 ? rd_next_up(p) : p;
}

static inline double rd_mul_down(double a, double b)
{
    double p = a * b;
    if (!isfinite(p))
        return p;
    return fma(a, b, -p) < 0 ? rd_next_down(p) : p;
}

/* a / b for b > 0: the remainder a - q b is exact with fma (when q is not subnormal). */
static inline double rd_div_up(double a, double b)
{
    double q = a / b;
    if (!isfinite(q))
        return q;
    return fma(-q, b, a) > 0 || (q != 0 && fabs(q) < DBL_MIN) || (q == 0 && a != 0) ? rd_next_up(q)
                                                                                    : q;
}

static inline double rd_div_down(double a, double b)
{
    double q = a / b;
    if (!isfinite(q))
        return q;
    return fma(-q, b, a) < 0 || (q != 0 && fabs(q) < DBL_MIN) || (q == 0 && a != 0)
               ? rd_next_down(q)
               : q;
}

static inline double rd_sqrt_up(double x)
{
    double s = sqrt(x);
    return fma(s, s, -x) < 0 ? rd_next_up(s) : s;
}

static inline double rd_sqrt_down(double x)
{
    double s = sqrt(x);
    return fma(s, s, -x) > 0 ? rd_next_down(s) : s;
}

static inline double rd_slack_up(double x)
{
    for (int i = 0; i < LIBM_SLACK_ULPS; i++)
        x = rd_next_up(x);
    return x;
}

static inline double rd_slack_down(double x)
{
    for (int i = 0; i < LIBM_SLACK_ULPS; i++)
        x = rd_next_down(x);
    return x;
}

#endif /* CORE_DP_ROUND_H */
