/* dp_acct.c - accountant math: conservative composition and zCDP -> (eps, delta)
 * (NOISE.md §4.10; Bun & Steinke 2016 = BS16; Canonne, Kamath & Steinke 2020 = CKS20).
 * SPDX-License-Identifier: Apache-2.0
 */
#include "core/dp_acct.h"

#include <math.h>

#include "core/dp_calib.h"
#include "dp_round.h"

static int valid_nonneg(double x)
{
    return x >= 0.0 && isfinite(x);
}

static int cost_valid(const struct core_dp_cost *c)
{
    return c && valid_nonneg(c->eps) && valid_nonneg(c->rho) && valid_nonneg(c->delta);
}

double core_dp_add_up(double a, double b)
{
    return rd_add_up(a, b);
}

bool core_dp_cost_same(const struct core_dp_cost *a, const struct core_dp_cost *b)
{
    return a->eps == b->eps && a->rho == b->rho && a->delta == b->delta;
}

core_err core_dp_cost_add(struct core_dp_cost *acc, const struct core_dp_cost *c)
{
    if (!cost_valid(acc) || !cost_valid(c))
        return CORE_EINVAL;
    struct core_dp_cost r = {rd_add_up(acc->eps, c->eps), rd_add_up(acc->rho, c->rho),
                             rd_add_up(acc->delta, c->delta)};
    if (!cost_valid(&r))
        return CORE_EINVAL; /* overflow to inf */
    *acc = r;
    return CORE_OK;
}

core_err core_dp_cost_max(struct core_dp_cost *acc, const struct core_dp_cost *c)
{
    if (!cost_valid(acc) || !cost_valid(c))
        return CORE_EINVAL;
    acc->eps = fmax(acc->eps, c->eps);
    acc->rho = fmax(acc->rho, c->rho);
    acc->delta = fmax(acc->delta, c->delta);
    return CORE_OK;
}

/* BS16 Prop. 1.4: an eps-DP mechanism is (eps^2/2)-zCDP. */
core_err core_dp_rho_lap(double eps, double *rho)
{
    if (!rho || !valid_nonneg(eps))
        return CORE_EINVAL;
    double r = rd_mul_up(eps, eps) / 2.0;
    if (r < DBL_MIN && eps != 0.0)
        r = rd_next_up(r); /* halving a subnormal may round */
    if (!isfinite(r))
        return CORE_EINVAL;
    *rho = r;
    return CORE_OK;
}

/* Cesar & Rogers 2021: an eps-DP bounded-range mechanism (the EM) is (eps^2/8)-zCDP. */
core_err core_dp_rho_em(double eps, double *rho)
{
    if (!rho || !valid_nonneg(eps))
        return CORE_EINVAL;
    double r = rd_mul_up(eps, eps) / 8.0;
    if (r < DBL_MIN && eps != 0.0)
        r = rd_next_up(r);
    if (!isfinite(r))
        return CORE_EINVAL;
    *rho = r;
    return CORE_OK;
}

/* BS16 Prop. 1.3: eps = rho + 2 sqrt(rho ln(1/delta)), every step rounded up. */
core_err core_dp_zcdp_eps_simple(double rho, double delta, double *eps)
{
    if (!eps || !valid_nonneg(rho) || !(delta > 0.0) || !(delta < 1.0))
        return CORE_EINVAL;
    double l = rd_slack_up(-log(delta));
    double e = rd_add_up(rho, 2.0 * rd_sqrt_up(rd_mul_up(rho, l)));
    if (!isfinite(e))
        return CORE_EINVAL;
    *eps = e;
    return CORE_OK;
}

/* CKS20 Cor. 13, upper-bounded evaluation at a given alpha > 1:
 * delta = exp((a-1)(a rho - eps) + a log1p(-1/a)) / (a-1). */
static double cks_delta_at(double rho, double eps, double a)
{
    double am1_down = rd_add_down(a, -1.0), am1_up = rd_add_up(a, -1.0);
    double x = rd_add_up(rd_mul_up(a, rho), -eps);
    /* (a-1) x rounded up: the larger (a-1) when x >= 0, the smaller when x < 0. */
    double t1 = rd_mul_up(x >= 0.0 ? am1_up : am1_down, x);
    double inv_a_down = rd_div_down(1.0, a);
    double l1p = rd_slack_up(log1p(-inv_a_down)); /* log1p increasing: argument rounded up */
    double t2 = rd_mul_up(a, l1p);
    double ex = rd_slack_up(exp(rd_add_up(t1, t2)));
    return rd_div_up(ex, am1_down);
}

core_err core_dp_cdp_delta(double rho, double eps, double *delta)
{
    if (!delta || !valid_nonneg(rho) || !valid_nonneg(eps))
        return CORE_EINVAL;
    if (rho == 0.0) {
        *delta = 0.0;
        return CORE_OK;
    }
    /* Any alpha > 1 gives a valid bound, so the search for the optimum (the root of the
     * derivative (2a-1) rho - eps + log(1 - 1/a)) needs no directed rounding (as OpenDP). */
    double a_min = 1.01, a_max = (eps + 1.0) / (2.0 * rho) + 2.0;
    for (int i = 0; i < 1000; i++) {
        double a = a_min + (a_max - a_min) / 2.0;
        if (!(a > a_min && a < a_max))
            break; /* converged to adjacent doubles */
        double der = (2.0 * a - 1.0) * rho - eps + log1p(-1.0 / a);
        if (der < 0.0)
            a_min = a;
        else
            a_max = a;
    }
    double d = cks_delta_at(rho, eps, a_min + (a_max - a_min) / 2.0);
    if (isnan(d))
        return CORE_ENUMERIC;
    *delta = d > 1.0 ? 1.0 : d;
    return CORE_OK;
}

/* Smallest eps (conservative side) with f(eps) <= delta for a decreasing f, between lo
 * (f(lo) > delta or lo = 0) and hi (f(hi) <= delta). */
typedef core_err (*delta_of_eps_fn)(double param, double eps, double *delta);

static core_err invert_delta(delta_of_eps_fn f, double param, double delta, double hi, double *eps)
{
    double lo = 0.0, d;

    for (int i = 0; i < 200 && hi - lo > 0x1p-45 * hi; i++) {
        double mid = lo + (hi - lo) / 2.0;
        if (mid <= lo || mid >= hi)
            break;
        core_err rc = f(param, mid, &d);
        if (rc != CORE_OK)
            return rc;
        if (d > delta)
            lo = mid;
        else
            hi = mid;
    }
    *eps = hi;
    return CORE_OK;
}

core_err core_dp_zcdp_eps(double rho, double delta, double *eps)
{
    double simple, cks, d;

    core_err rc = core_dp_zcdp_eps_simple(rho, delta, &simple);
    if (rc != CORE_OK || !eps)
        return rc == CORE_OK ? CORE_EINVAL : rc;
    if (rho == 0.0) {
        *eps = 0.0;
        return CORE_OK;
    }
    rc = invert_delta(core_dp_cdp_delta, rho, delta, simple, &cks);
    if (rc != CORE_OK)
        return rc;
    /* Post-check the returned side; fall back to the simple bound if it does not hold. */
    if (core_dp_cdp_delta(rho, cks, &d) != CORE_OK || !(d <= delta) || !(cks <= simple))
        cks = simple;
    *eps = cks;
    return CORE_OK;
}

/* agm_delta(eps, sigma, 1) as a function of eps, sigma fixed (param). */
static core_err gauss_delta_of_eps(double sigma, double eps, double *delta)
{
    if (eps == 0.0) {
        *delta = 1.0;
        return CORE_OK;
    }
    return core_dp_agm_delta(eps, sigma, 1.0, delta);
}

/* NOISE.md §4.7 last paragraph: Gaussian mechanisms with total rho compose to one Gaussian
 * with mu = Delta/sigma = sqrt(2 rho) (Dong, Roth & Su 2019, GDP composition). sigma is
 * rounded DOWN (less noise = more privacy loss), the bisection returns the safe side and a
 * 2^-30 relative margin covers the Phi evaluation, as in core_dp_agm_sigma. */
core_err core_dp_gauss_eps(double rho, double delta, double *eps)
{
    double hi, e, d;

    if (!eps || !(rho > 0.0) || !isfinite(rho) || !(delta > 0.0) || !(delta < 1.0))
        return CORE_EINVAL;
    double mu = rd_sqrt_up(rd_mul_up(2.0, rho));
    double sigma = rd_div_down(1.0, mu);
    core_err rc = core_dp_zcdp_eps_simple(rho, delta, &hi);
    if (rc != CORE_OK)
        return rc;
    for (int i = 0; gauss_delta_of_eps(sigma, hi, &d) == CORE_OK && d > delta; i++) {
        if (i > 64)
            return CORE_ENUMERIC;
        hi *= 2.0;
    }
    rc = invert_delta(gauss_delta_of_eps, sigma, delta, hi, &e);
    if (rc != CORE_OK)
        return rc;
    e = rd_mul_up(e, 1.0 + 0x1p-30);
    if (gauss_delta_of_eps(sigma, e, &d) != CORE_OK || !(d <= delta))
        return CORE_ENUMERIC;
    *eps = e;
    return CORE_OK;
}
