/* dp_mech.c - Laplace and discrete Gaussian releases on a public power-of-two grid, exact
 * exponential mechanism and permute-and-flip (NOISE.md §4.5, §4.6, §4.8).
 * SPDX-License-Identifier: Apache-2.0
 */
#include "core/dp_mech.h"

#include <math.h>
#include <string.h>

#include "core/dp_calib.h"
#include "core/dp_exact.h"
#include "dp_grid.h"
#include "dp_round.h"

_Static_assert(FLT_EVAL_METHOD == 0, "gcdp needs FLT_EVAL_METHOD == 0 (NOISE.md §4.1 item 6)");
#if !defined(__STDC_IEC_559__) && !defined(__GCC_IEC_559)
#error "gcdp needs IEEE 754 binary64 doubles"
#endif

#define LAP_T_MAX   ((uint64_t)1 << 42)
#define GAUSS_S_MAX ((uint64_t)1 << 44)

static int valid_pos(double x)
{
    return x > 0.0 && isfinite(x);
}

static int eps_in_range(double eps)
{
    return eps >= CORE_DP_EPS_MIN && eps <= CORE_DP_EPS_MAX;
}

static core_err check_inputs(size_t n, const double *x, const double *y)
{
    if ((n > 0 && (!x || !y)) || n > (SIZE_MAX / sizeof(double)))
        return CORE_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return CORE_EINVAL;
    return CORE_OK;
}

/* Output y = (n_x + z) 2^k; the conversion to double is the only rounding and is
 * post-processing (NOISE.md §4.5 step 6). Zero comes out as +0.0. */
static core_err grid_output(int64_t nx, int64_t z, int k, double *y)
{
    int64_t r;
    if (z > CORE_DP_MAX_NOISE || z < -CORE_DP_MAX_NOISE || __builtin_add_overflow(nx, z, &r))
        return CORE_ENUMERIC;
    *y = ldexp_grid((double)r, k); /* = ldexp: k in [-1022, 960] is checked by the params */
    return CORE_OK;
}

/* ---- Laplace (NOISE.md §4.5; SNG Prop. 1) ---- */

core_err core_dp_lap_params(double l1, double eps, double bound, uint64_t n_coords,
                            struct core_dp_lap *out)
{
    if (!out || !valid_pos(l1) || !eps_in_range(eps) || !valid_pos(bound) || n_coords == 0 ||
        n_coords > ((uint64_t)1 << 32))
        return CORE_EINVAL;
    double b = l1 / eps; /* only selects the grid: its rounding does not matter (step 1) */
    if (!valid_pos(b))
        return CORE_EINVAL;
    int e = ceil_log2(b), K = CORE_DP_LAP_K;
    while (K >= CORE_DP_LAP_K_MIN && !bound_fits(bound, e - K))
        K--;
    int k = e - K;
    if (K < CORE_DP_LAP_K_MIN || k < -1022)
        return CORE_EINVAL;
    /* Step 3: t = ceil((s/g + m)/eps) with s/g exact and + and / rounded up, so that
     * 1/t <= g eps / (s + m g): neighbours' rounded inputs differ by at most s/g + m grid
     * steps in L1, and shifting dlap(t) by that changes log-probabilities by <= eps. */
    double q = rd_div_up(rd_add_up(ldexp(l1, -k), (double)n_coords), eps);
    if (!(q <= (double)LAP_T_MAX))
        return CORE_EINVAL;
    double t = ceil(q);
    *out = (struct core_dp_lap){.k = k, .t = (uint64_t)t, .bound = bound, .eps = eps};
    return CORE_OK;
}

static int lap_valid(const struct core_dp_lap *p)
{
    return p && p->t >= 1 && p->t <= LAP_T_MAX && p->k >= -1022 && valid_pos(p->bound) &&
           bound_fits(p->bound, p->k);
}

/* An exact integer sampler (core_dp_dlap, core_dp_dgauss) with its public parameter. */
typedef core_err int_sampler_fn(const struct core_rng *rng, uint64_t param, int64_t *out);

/* y[i] = grid value of (round(x[i] on the 2^k grid) + Z_i), Z_i drawn by sample(param).
 * Fails closed: on any error no output survives (y is wiped). */
static core_err grid_release(const struct core_rng *rng, int_sampler_fn *sample, uint64_t param,
                             double bound, int k, size_t n, const double *x, double *y)
{
    core_err rc = check_inputs(n, x, y);
    if (rc != CORE_OK)
        return rc;
    for (size_t i = 0; i < n; i++) {
        int64_t z;
        int64_t nx = grid_index(x[i], bound, k);
        rc = sample(rng, param, &z);
        if (rc == CORE_OK)
            rc = grid_output(nx, z, k, &y[i]);
        if (rc != CORE_OK)
            goto fail;
    }
    return CORE_OK;
fail:
    explicit_bzero(y, n * sizeof(*y));
    return rc;
}

core_err core_dp_lap_release(const struct core_rng *rng, const struct core_dp_lap *p, size_t n,
                             const double *x, double *y)
{
    if (!rng || !lap_valid(p))
        return CORE_EINVAL;
    return grid_release(rng, core_dp_dlap, p->t, p->bound, p->k, n, x, y);
}

core_err core_dp_lap_release_coords(const struct core_rng *rng, size_t n, const double *x,
                                    const double *s, const double *eps, double bound, double *y)
{
    if (!rng || (n > 0 && (!s || !eps)))
        return CORE_EINVAL;
    core_err rc = check_inputs(n, x, y);
    if (rc != CORE_OK)
        return rc;
    for (size_t i = 0; i < n; i++) { /* all parameters first: nothing drawn on a bad one */
        struct core_dp_lap p;
        rc = core_dp_lap_params(s[i], eps[i], bound, 1, &p);
        if (rc != CORE_OK)
            return rc;
    }
    for (size_t i = 0; i < n; i++) {
        struct core_dp_lap p;
        rc = core_dp_lap_params(s[i], eps[i], bound, 1, &p);
        if (rc == CORE_OK)
            rc = core_dp_lap_release(rng, &p, 1, &x[i], &y[i]);
        if (rc != CORE_OK)
            goto fail;
    }
    return CORE_OK;
fail:
    explicit_bzero(y, n * sizeof(*y));
    return rc;
}

/* ---- discrete Gaussian on a fine grid (NOISE.md §4.6; CKS20 Thm. 14 for zCDP) ---- */

/* Fill *out for grid exponent k and integer variance S; rho = Delta_int^2 / (2S) with
 * Delta_int = l2/g + sqrt(d) (the L2 rounding slack, as OpenDP get_rounding_distance). */
static core_err gauss_fill(int k, uint64_t S, double l2, uint64_t d, double bound,
                           struct core_dp_gauss *out)
{
    if (S == 0 || S > GAUSS_S_MAX || k < -1022 || !bound_fits(bound, k))
        return CORE_EINVAL;
    double dint = rd_add_up(ldexp(l2, -k), rd_sqrt_up((double)d));
    double rho = rd_div_up(rd_mul_up(dint, dint), 2.0 * (double)S);
    if (!valid_pos(rho))
        return CORE_EINVAL;
    *out = (struct core_dp_gauss){
        .k = k, .S = S, .bound = bound, .sigma = ldexp(sqrt((double)S), k), .rho = rho};
    return CORE_OK;
}

static int gauss_args_ok(double l2, uint64_t d, double bound, const struct core_dp_gauss *out)
{
    return out && valid_pos(l2) && d >= 1 && d <= ((uint64_t)1 << 40) && valid_pos(bound);
}

/* S = ceil(x) for x > 0 finite, or 0 (invalid) when x does not fit. */
static uint64_t ceil_to_s(double x)
{
    if (!(x > 0.0) || !(x <= (double)GAUSS_S_MAX))
        return 0;
    return (uint64_t)ceil(x);
}

core_err core_dp_gauss_params_sigma(double sigma, double l2, uint64_t d, double bound,
                                    struct core_dp_gauss *out)
{
    if (!valid_pos(sigma) || !gauss_args_ok(l2, d, bound, out))
        return CORE_EINVAL;
    int k = floor_log2(sigma) - 20; /* sigma/g in [2^20, 2^21) */
    double sg = ldexp(sigma, -k);   /* exact */
    return gauss_fill(k, ceil_to_s(rd_mul_up(sg, sg)), l2, d, bound, out);
}

core_err core_dp_gauss_params_rho(double rho, double l2, uint64_t d, double bound,
                                  struct core_dp_gauss *out)
{
    struct core_dp_gauss p;

    if (!valid_pos(rho) || !gauss_args_ok(l2, d, bound, out))
        return CORE_EINVAL;
    double sigma0 = l2 / sqrt(2.0 * rho); /* selects the grid only */
    if (!valid_pos(sigma0))
        return CORE_EINVAL;
    int k = floor_log2(sigma0) - 20;
    double dint = rd_add_up(ldexp(l2, -k), rd_sqrt_up((double)d));
    /* NOISE.md §4.6 step 3: sigma_g = Delta_int / sqrt(2 rho), S = ceil(sigma_g^2) */
    double sq = rd_div_up(rd_mul_up(dint, dint), rd_mul_down(2.0, rho));
    uint64_t S = ceil_to_s(sq);
    core_err rc = gauss_fill(k, S, l2, d, bound, &p);
    for (int i = 0; rc == CORE_OK && !(p.rho <= rho); i++) { /* rounding of p.rho: step S */
        if (i > 1000)
            return CORE_ENUMERIC;
        rc = gauss_fill(k, p.S + 1, l2, d, bound, &p);
    }
    if (rc == CORE_OK)
        *out = p;
    return rc;
}

/* AGM on the rounded sensitivity l2 + g sqrt(d) with a (1 + 2^-10) lattice margin
 * (NOISE.md §4.6 option ii); the margin is checked against the exact discrete curve in
 * the tests. */
core_err core_dp_gauss_params_agm(double eps, double delta, double l2, uint64_t d, double bound,
                                  struct core_dp_gauss *out)
{
    double sigma0, sigma1, check;
    struct core_dp_gauss p;

    if (!eps_in_range(eps) || !(delta >= CORE_DP_DELTA_MIN) || !(delta <= CORE_DP_DELTA_MAX) ||
        !gauss_args_ok(l2, d, bound, out))
        return CORE_EINVAL;
    core_err rc = core_dp_agm_sigma(eps, delta, l2, &sigma0);
    if (rc != CORE_OK)
        return rc;
    int k = floor_log2(sigma0) - 20;
    double l2r = rd_add_up(l2, ldexp(rd_sqrt_up((double)d), k));
    rc = core_dp_agm_sigma(eps, delta, l2r, &sigma1);
    if (rc != CORE_OK)
        return rc;
    double sg = ldexp(rd_mul_up(sigma1, 1.0 + 0x1p-10), -k);
    rc = gauss_fill(k, ceil_to_s(rd_mul_up(sg, sg)), l2, d, bound, &p);
    if (rc != CORE_OK)
        return rc;
    /* post-check with the sigma actually used, sqrt(S) g >= sigma1 (1 + 2^-10) */
    if (core_dp_agm_delta(eps, rd_mul_down(rd_sqrt_down((double)p.S), ldexp(1.0, k)), l2r,
                          &check) != CORE_OK ||
        !(check <= delta))
        return CORE_ENUMERIC;
    *out = p;
    return CORE_OK;
}

static int gauss_valid(const struct core_dp_gauss *p)
{
    return p && p->S >= 1 && p->S <= GAUSS_S_MAX && p->k >= -1022 && valid_pos(p->bound) &&
           bound_fits(p->bound, p->k);
}

core_err core_dp_gauss_release(const struct core_rng *rng, const struct core_dp_gauss *p, size_t n,
                               const double *x, double *y)
{
    if (!rng || !gauss_valid(p))
        return CORE_EINVAL;
    return grid_release(rng, core_dp_dgauss, p->S, p->bound, p->k, n, x, y);
}

/* ---- selection (NOISE.md §4.8) ---- */

#define SCORE_MAX  0x1p40
#define SEL_Q_BITS 32

struct sel_ctx {
    int64_t umax; /* max quantised score */
    core_u128 p;  /* scale' = p / 2^(32 + f) */
};

static core_err quantise(double score, int f, int64_t *u)
{
    if (!isfinite(score))
        return CORE_EINVAL;
    double a = nearbyint(ldexp(score, f));
    if (!(fabs(a) <= SCORE_MAX))
        return CORE_EINVAL;
    *u = (int64_t)a;
    return CORE_OK;
}

/* Validate everything (nothing is drawn on a bad input) and compute u_max and p. */
static core_err sel_prepare(size_t n, const double *score, double scale, int f, struct sel_ctx *c)
{
    if (n == 0 || n > CORE_DP_SELECT_MAX_N || !score || !valid_pos(scale) || f < 0 || f > 40)
        return CORE_EINVAL;
    c->umax = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        int64_t u;
        core_err rc = quantise(score[i], f, &u);
        if (rc != CORE_OK)
            return rc;
        if (u > c->umax)
            c->umax = u;
    }
    /* p = ceil(scale 2^(32+f)): scale rounded up, so the true eps is <= the nominal one */
    double sp = ceil(ldexp(scale, SEL_Q_BITS + f));
    if (!(sp >= 1.0) || !(sp <= 0x1p99))
        return CORE_EINVAL;
    c->p = (core_u128)sp;
    return CORE_OK;
}

/* Accept candidate i with probability exp(-(u_max - u_i) 2^32 / p) = exp((q_i - q_max)/scale'). */
static core_err sel_accept(const struct core_rng *rng, const struct sel_ctx *c, double score, int f,
                           bool *ok)
{
    int64_t u;
    core_err rc = quantise(score, f, &u);
    if (rc != CORE_OK)
        return rc;
    core_u128 gap = (core_u128)(uint64_t)(c->umax - u) << SEL_Q_BITS;
    return core_dp_bern_exp(rng, gap, c->p, ok);
}

/* Exact EM by rejection (OpenDP; NOISE.md §4.8): propose i uniformly, accept with
 * exp((q_i - q_max)/scale'); P(i) is proportional to exp(q_i/scale'), exactly the law of
 * argmax_i(q_i/scale' + Gumbel_i). */
core_err core_dp_em_select(const struct core_rng *rng, size_t n, const double *score, double scale,
                           int frac_bits, size_t *out)
{
    struct sel_ctx c;

    if (!rng || !out)
        return CORE_EINVAL;
    core_err rc = sel_prepare(n, score, scale, frac_bits, &c);
    if (rc != CORE_OK)
        return rc;
    for (;;) {
        uint64_t i;
        bool ok;
        rc = core_rng_u64_below(rng, (uint64_t)n, &i);
        if (rc == CORE_OK)
            rc = sel_accept(rng, &c, score[i], frac_bits, &ok);
        if (rc != CORE_OK)
            return rc;
        if (ok) {
            *out = (size_t)i;
            return CORE_OK;
        }
    }
}

/* Permute-and-flip (McKenna & Sheldon 2020, Alg. 1): a running Fisher-Yates shuffle visits
 * candidates without replacement; the first accepted one is returned. The maximum is
 * always accepted, so at most n steps. */
core_err core_dp_pf_select(const struct core_rng *rng, size_t n, const double *score, double scale,
                           int frac_bits, size_t *work, size_t *out)
{
    struct sel_ctx c;

    if (!rng || !out || !work)
        return CORE_EINVAL;
    core_err rc = sel_prepare(n, score, scale, frac_bits, &c);
    if (rc != CORE_OK)
        return rc;
    for (size_t i = 0; i < n; i++)
        work[i] = i;
    for (size_t j = 0; j < n; j++) {
        uint64_t r;
        bool ok;
        rc = core_rng_u64_below(rng, (uint64_t)(n - j), &r);
        if (rc != CORE_OK)
            return rc;
        size_t tmp = work[j];
        work[j] = work[j + r];
        work[j + r] = tmp;
        rc = sel_accept(rng, &c, score[work[j]], frac_bits, &ok);
        if (rc != CORE_OK)
            return rc;
        if (ok) {
            *out = work[j];
            return CORE_OK;
        }
    }
    return CORE_EINVARIANT; /* unreachable: the maximum is accepted with probability 1 */
}

/* NOISE.md §4.8 accounting: quantised L-inf sensitivity u = ceil(sens 2^f) + 1 units
 * (rounding adds at most one unit), range distance 2u (u if monotone), eps = r 2^-f/scale. */
core_err core_dp_em_eps(double sens, double scale, int frac_bits, bool monotone, double *eps)
{
    if (!eps || !(sens >= 0.0) || !isfinite(sens) || !valid_pos(scale) || frac_bits < 0 ||
        frac_bits > 40)
        return CORE_EINVAL;
    double u = rd_add_up(ceil(ldexp(sens, frac_bits)), 1.0);
    double r = monotone ? u : rd_mul_up(2.0, u);
    double e = rd_div_up(ldexp(r, -frac_bits), scale);
    if (!valid_pos(e))
        return CORE_EINVAL;
    *eps = e;
    return CORE_OK;
}
