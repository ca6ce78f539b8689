/* alloc.c - Algorithm 3 (utility-guided adaptive budget allocation), Proposition 2. */
#include "rel/alloc.h"

#include <math.h>

static int in01(double x)
{
    return x >= 0.0 && x <= 1.0; /* false for NaN */
}

/* Lower the largest ε_k until the index-order sum is <= ε_rel (conservative rounding). */
static core_err clamp_sum(size_t d, double eps_rel, double *eps)
{
    for (int iter = 0; iter < 64; iter++) {
        double sum = 0.0;
        size_t kmax = 0;
        for (size_t k = 0; k < d; k++) {
            sum += eps[k];
            if (eps[k] > eps[kmax])
                kmax = k;
        }
        if (sum <= eps_rel)
            return CORE_OK;
        eps[kmax] = nextafter(eps[kmax] - (sum - eps_rel), 0.0);
        if (!(eps[kmax] > 0.0))
            return CORE_ENUMERIC;
    }
    return CORE_ENUMERIC;
}

static size_t count_noisy(size_t d, const double *s)
{
    size_t n = 0;
    for (size_t k = 0; k < d; k++)
        n += s[k] > 0.0;
    return n;
}

static int params_ok(const struct rel_alloc_params *p)
{
    return p->beta_r >= 0.0 && isfinite(p->beta_r) && p->beta_g >= 0.0 && isfinite(p->beta_g) &&
           p->beta_u >= 0.0 && isfinite(p->beta_u) && p->eta > 0.0 && isfinite(p->eta) &&
           isfinite(p->eps_min);
}

core_err rel_alloc(size_t d, double eps_rel, const double *r, const double *s, const double *mu,
                   const struct rel_alloc_params *p, double *eps, double *eps_min_used)
{
    double hsum = 0.0, eps_min, rest;
    size_t dn;

    if (d == 0 || !(eps_rel > 0.0) || !isfinite(eps_rel) || !params_ok(p))
        return CORE_EINVAL;
    for (size_t k = 0; k < d; k++)
        if (!in01(r[k]) || !in01(mu[k]) || !(s[k] >= 0.0) || !isfinite(s[k]))
            return CORE_EINVAL;
    dn = count_noisy(d, s);
    if (dn == 0)
        return CORE_EINVAL;
    eps_min = p->eps_min > 0.0 ? p->eps_min : eps_rel / (100.0 * (double)dn);
    /* Algorithm 3 step 1: refuse unless 0 < ε_min < ε_rel / d'. */
    if (!(eps_min > 0.0) || !(eps_min < eps_rel / (double)dn))
        return CORE_EINVAL;
    /* steps 2-5: h_k; stored in eps[] temporarily */
    for (size_t k = 0; k < d; k++) {
        double pk, uk;
        if (!(s[k] > 0.0)) {
            eps[k] = 0.0;
            continue;
        }
        pk = pow(r[k] + p->eta, p->beta_r) * pow(s[k] + p->eta, p->beta_g);
        uk = pow(mu[k] + p->eta, p->beta_u);
        eps[k] = uk / (pk + p->eta);
        if (!(eps[k] > 0.0) || !isfinite(eps[k]))
            return CORE_ENUMERIC;
        hsum += eps[k];
    }
    if (!(hsum > 0.0) || !isfinite(hsum))
        return CORE_ENUMERIC;
    /* step 6 */
    rest = eps_rel - (double)dn * eps_min;
    for (size_t k = 0; k < d; k++)
        if (s[k] > 0.0)
            eps[k] = eps_min + rest * (eps[k] / hsum);
    if (eps_min_used)
        *eps_min_used = eps_min;
    return clamp_sum(d, eps_rel, eps);
}

core_err rel_alloc_uniform(size_t d, double eps_rel, const double *s, double *eps)
{
    size_t dn;

    if (d == 0 || !(eps_rel > 0.0) || !isfinite(eps_rel))
        return CORE_EINVAL;
    for (size_t k = 0; k < d; k++)
        if (!(s[k] >= 0.0) || !isfinite(s[k]))
            return CORE_EINVAL;
    dn = count_noisy(d, s);
    if (dn == 0)
        return CORE_EINVAL;
    for (size_t k = 0; k < d; k++)
        eps[k] = s[k] > 0.0 ? eps_rel / (double)dn : 0.0;
    return clamp_sum(d, eps_rel, eps);
}
