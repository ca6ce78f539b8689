/* dp_calib.c - analytic Gaussian mechanism (Balle & Wang 2018, "Improving the Gaussian
 * mechanism for differential privacy", Theorem 8), conservative calibration by bisection
 * (NOISE.md §4.7).
 * SPDX-License-Identifier: Apache-2.0
 */
#include "core/dp_calib.h"

#include <math.h>

#include <gsl/gsl_sf_erf.h>

#include "dp_round.h"

/* log Phi(z) = log(erfc(-z/sqrt2)/2), accurate in both tails (GSL log_erfc). */
static double log_phi(double z)
{
    return gsl_sf_log_erfc(-z / M_SQRT2) - M_LN2;
}

/* Balle-Wang Thm. 8: delta = Phi(a - b) - e^eps Phi(-a - b), a = l2/(2 sigma),
 * b = eps sigma / l2. Both terms are taken in log space and the difference is formed as
 * T1 * (-expm1(log T2 - log T1)), so there is neither overflow (eps up to 1e300) nor
 * catastrophic cancellation at small delta. */
static double agm_delta_raw(double eps, double sigma, double l2)
{
    double a = l2 / (2.0 * sigma);
    double b = eps * sigma / l2;
    if (!isfinite(b) || isnan(a))
        return 0.0; /* as Google: infinite b means no privacy loss beyond delta = 0 */
    double lt1 = log_phi(a - b);
    double lt2 = eps + log_phi(-a - b);
    if (!(lt2 < lt1))
        return 0.0;
    return exp(lt1) * -expm1(lt2 - lt1);
}

static int valid_pos(double x)
{
    return x > 0.0 && isfinite(x);
}

core_err core_dp_agm_delta(double eps, double sigma, double l2, double *out)
{
    if (!out || !valid_pos(eps) || !valid_pos(sigma) || !valid_pos(l2))
        return CORE_EINVAL;
    double d = agm_delta_raw(eps, sigma, l2);
    if (!(d >= 0.0) || !(d <= 1.0))
        return CORE_ENUMERIC;
    *out = d;
    return CORE_OK;
}

/* NOISE.md §4.7 steps 2-4: delta depends only on u = sigma/l2, and decreases in u. Doubling
 * finds hi with delta(hi) <= delta; bisection keeps that invariant and stops at relative
 * 2^-40; hi (the safe side) is returned with a 2^-30 margin for the Phi evaluation error
 * and post-checked. */
core_err core_dp_agm_sigma(double eps, double delta, double l2, double *out)
{
    double lo = 0.0, hi = 1.0;
    int iter = 0;

    if (!out || !valid_pos(eps) || !valid_pos(l2) || !(delta > 0.0) || !(delta < 1.0))
        return CORE_EINVAL;
    while (agm_delta_raw(eps, hi, 1.0) > delta) {
        lo = hi;
        hi *= 2.0;
        if (++iter > 1100 || !isfinite(hi))
            return CORE_ENUMERIC;
    }
    for (iter = 0; iter < 2000 && hi - lo > 0x1p-40 * hi; iter++) {
        double mid = lo + (hi - lo) / 2.0;
        if (mid <= lo || mid >= hi)
            break;
        if (agm_delta_raw(eps, mid, 1.0) > delta)
            lo = mid;
        else
            hi = mid;
    }
    double sigma = rd_mul_up(rd_mul_up(hi, l2), 1.0 + 0x1p-30);
    double check;
    if (!isfinite(sigma) || core_dp_agm_delta(eps, sigma, l2, &check) != CORE_OK ||
        !(check <= delta))
        return CORE_ENUMERIC;
    *out = sigma;
    return CORE_OK;
}
