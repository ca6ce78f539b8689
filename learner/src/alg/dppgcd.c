/* dppgcd.c - DP-PGCD (paper §5.2-5.3, Algorithm 2, Theorem 5.1, Appendix A.2-A.3).
 * See lrn/dppgcd.h for the mechanism and its accounting.
 *
 * Data access: the ONLY functions that read participant rows are clipped_column() (the
 * per-sample clipped gradient, paper §5.3 "Gradient clipping") and m_private() (clipped
 * squares, Appendix A.3.2), plus m_exact() which is reachable only with LRN_M_EXACT and
 * marks the result non-private. Every other quantity is a function of those outputs, the
 * noise and public parameters.
 *
 * State: Xc = X column-major (d×n), R = XB − X column-major (residuals r_kj), D = clipped
 * data gradient (row-major d×d), valid for the B in bcache and the C_ij in use. A change of
 * B_ij changes only residual column j, hence only column j of D: O(n·d) per step.
 *
 * Noise (core/dp_mech.h): the selection is core_dp_em_select() (exact exponential
 * mechanism = Gumbel-max) on scores quantised with frac_bits chosen from the public score
 * sensitivity, clamped to the public range [0, 2^(40−f)] (clamping is 1-Lipschitz, so the
 * sensitivity bound still holds); the update is core_dp_gauss_release() of D_ij clamped to
 * its public range [−C_ij, C_ij] (a mean of values clipped at C_ij lies in it). The charges
 * are what those calibrations report (rounded up), not the nominal ρ; the budget filter
 * refuses any step whose charge would take the total over the calibrated ρ_tot, which the
 * 1 % noise margin below (CALIB_MARGIN) leaves room for.
 */
#include "lrn/dppgcd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/dp_acct.h"
#include "core/dp_mech.h"
#include "core/mem.h"
#include "lrn/admm.h"
#include "lrn/pgcd.h"

/* Noise scales are multiplied by this so the grid/quantisation overheads of the exact
 * samplers (≤ 0.5 % in ρ at the frac_bits/grids used here) fit inside the nominal ρ_tot. */
#define CALIB_MARGIN 1.01

struct lrn_dppgcd {
    size_t n, d;
    struct lrn_dppgcd_opts o;
    const struct core_rng *rng;
    double *xc;     /* d×n column-major copy of X */
    double *r;      /* d×n residuals XB − X, column-major */
    double *dg;     /* d×d clipped data gradient, row-major */
    double *bcache; /* d×d: the B that r and dg belong to */
    double *m;      /* d: M_i (private, public or exact) */
    double *score;  /* d×d scratch for selection */
    double *cij;    /* d×d clipping thresholds in use */
    double rho2_c;  /* ρ₂ the thresholds were computed for (NaN: none yet) */
    double delta, rho_budget, c;
    struct core_dp_cost spent, spent_m;
    uint64_t steps;
    double em_scale;
    size_t last_sel;
    bool m_private;
    /* Mangold et al. (2023) variant (o.variant == LRN_DP_MANGOLD): */
    double eps_step;  /* ε₀ of each pure-DP mechanism (advanced composition) */
    uint64_t n_mech;  /* N = 2KT mechanisms the budget covers */
    uint64_t mechs;   /* mechanisms run so far */
    double upd_scale; /* noise scale of the last update (σ or Laplace b) */
};

/* ---- calibration (Theorem 5.1) ---- */

core_err lrn_dppgcd_calibrate(size_t steps, size_t rounds, double eps, double delta,
                              struct lrn_dppgcd_calib *out)
{
    double L, kt;

    if (steps == 0 || rounds == 0 || !(eps >= CORE_DP_EPS_MIN) || !(eps <= CORE_DP_EPS_MAX) ||
        !(delta >= CORE_DP_DELTA_MIN) || !(delta <= CORE_DP_DELTA_MAX) || !out)
        return CORE_EINVAL;
    L = log(1.0 / delta);
    kt = (double)steps * (double)rounds;
    out->c = sqrt(kt) * (sqrt(L + eps) + sqrt(L)) / eps;
    out->rho_step = 1.0 / (2.0 * out->c * out->c);
    out->rho_total = 2.0 * kt * out->rho_step;
    out->eps_check = out->rho_total + 2.0 * sqrt(out->rho_total * L);
    return isfinite(out->c) && out->c > 0.0 ? CORE_OK : CORE_EINVAL;
}

core_err lrn_dppgcd_m_sigma(size_t n, size_t d, double m_bound, double eps_m, double delta_m,
                            double *sigma)
{
    double L;

    if (n == 0 || d == 0 || !(m_bound > 0.0) || !isfinite(m_bound) || !(eps_m >= CORE_DP_EPS_MIN) ||
        !(eps_m <= CORE_DP_EPS_MAX) || !(delta_m >= CORE_DP_DELTA_MIN) ||
        !(delta_m <= CORE_DP_DELTA_MAX))
        return CORE_EINVAL;
    L = log(1.0 / delta_m);
    /* Appendix A.3.2: σ_j = Δ_M √d (√(L+ε_M) + √L) / (√2 ε_M), Δ_M = b/n. */
    *sigma =
        (m_bound / (double)n) * sqrt((double)d) * (sqrt(L + eps_m) + sqrt(L)) / (sqrt(2.0) * eps_m);
    return CORE_OK;
}

/* ---- Mangold et al. (2023) variant: advanced composition ----
 * Dwork & Roth (2014), Theorem 3.20 (advanced composition), the accounting of Mangold et al.
 * (2023) that the paper compares against (§1, §5.2, Appendix A.4 — whose display of their
 * bound is lost in our copy of the paper — and C.4 / Figure 8): N mechanisms, each ε₀-DP
 * (pure), compose to (ε, δ')-DP with
 *     ε = √(2N·log(1/δ'))·ε₀ + N·ε₀·(e^{ε₀} − 1),
 * δ' = δ (pure mechanisms add no δ of their own). Per private step we run two mechanisms
 * (selection and update), each at ε₀, so N = 2KT. The right-hand side is increasing in ε₀
 * and ≥ ε₀ (N ≥ 1), so the root lies in (0, ε]: bisection, keeping the lower end so that
 * the composed ε never exceeds the target. */
double lrn_dppgcd_adv_eps(uint64_t n, double eps_step, double delta)
{
    double nn = (double)n;
    if (n == 0)
        return 0.0;
    return sqrt(2.0 * nn * log(1.0 / delta)) * eps_step + nn * eps_step * expm1(eps_step);
}

core_err lrn_dppgcd_mangold_calibrate(size_t steps, size_t rounds, double eps, double delta,
                                      struct lrn_dppgcd_mangold_calib *out)
{
    double lo = 0.0, hi, kt;
    uint64_t n;

    if (steps == 0 || rounds == 0 || !(eps >= CORE_DP_EPS_MIN) || !(eps <= CORE_DP_EPS_MAX) ||
        !(delta >= CORE_DP_DELTA_MIN) || !(delta <= CORE_DP_DELTA_MAX) || !out)
        return CORE_EINVAL;
    kt = (double)steps * (double)rounds;
    if (!(kt <= 0x1p52))
        return CORE_EINVAL;
    n = 2u * (uint64_t)steps * (uint64_t)rounds;
    hi = eps;
    for (int it = 0; it < 200; it++) {
        double mid = 0.5 * (lo + hi);
        if (lrn_dppgcd_adv_eps(n, mid, delta) <= eps)
            lo = mid;
        else
            hi = mid;
    }
    out->n_mech = n;
    out->eps_step = lo;
    out->eps_check = lrn_dppgcd_adv_eps(n, lo, delta);
    return lo > 0.0 && out->eps_check <= eps ? CORE_OK : CORE_EINVAL;
}

/* ρ such that ρ + 2√(ρL) = ε (Theorem A.2 inverted): √ρ = √(L+ε) − √L. */
static double rho_for_eps(double eps, double delta)
{
    double L = log(1.0 / delta), s = sqrt(L + eps) - sqrt(L);
    return s * s;
}

/* ---- smoothness constants ---- */

static void m_exact(struct lrn_dppgcd *s)
{
    for (size_t i = 0; i < s->d; i++) {
        const double *x = s->xc + i * s->n;
        double acc = 0.0;
        for (size_t k = 0; k < s->n; k++)
            acc += x[k] * x[k];
        s->m[i] = acc / (double)s->n;
    }
}

/* Appendix A.3.2: Gaussian mechanism on M_i = (1/n) Σ_k min(x_ki², b); one row changes
 * every coordinate by ≤ b/n, so the vector's L2 sensitivity is b√d/n. */
static core_err m_private(struct lrn_dppgcd *s)
{
    struct core_dp_gauss p;
    struct core_dp_cost c = {0.0, 0.0, 0.0};
    double b = s->o.m_bound, rho = rho_for_eps(s->o.eps_m, s->delta);
    core_err rc;

    for (size_t i = 0; i < s->d; i++) {
        const double *x = s->xc + i * s->n;
        double acc = 0.0;
        for (size_t k = 0; k < s->n; k++)
            acc += fmin(x[k] * x[k], b);
        s->m[i] = acc / (double)s->n;
    }
    rc = core_dp_gauss_params_rho(rho, b * sqrt((double)s->d) / (double)s->n, s->d, b, &p);
    if (rc == CORE_OK)
        rc = core_dp_gauss_release(s->rng, &p, s->d, s->m, s->m);
    if (rc != CORE_OK)
        return rc;
    c.rho = p.rho;
    rc = core_dp_cost_add(&s->spent_m, &c);
    /* Post-processing: a smoothness constant must be positive; floor at Δ_M = b/n. */
    for (size_t i = 0; i < s->d && rc == CORE_OK; i++)
        s->m[i] = fmax(s->m[i], b / (double)s->n);
    return rc;
}

/* ---- clipped gradient ---- */

static double sum_m(const struct lrn_dppgcd *s, double rho2)
{
    /* Σ over the d(d−1) optimised coordinates (i ≠ j) of M_ij = M_i + ρ₂. */
    double acc = 0.0;
    for (size_t i = 0; i < s->d; i++)
        acc += (s->m[i] + rho2) * (double)(s->d - 1);
    return acc;
}

static void set_thresholds(struct lrn_dppgcd *s, double rho2)
{
    double tot = sum_m(s, rho2);
    for (size_t i = 0; i < s->d; i++)
        for (size_t j = 0; j < s->d; j++)
            s->cij[i * s->d + j] = s->o.clip * sqrt((s->m[i] + rho2) / tot);
    s->rho2_c = rho2;
}

/* Column j of D: D_ij = (1/n) Σ_k clip(x_ki·r_kj, C_ij)  (paper §5.3). */
static void clipped_column(struct lrn_dppgcd *s, size_t j)
{
    const double *rj = s->r + j * s->n;

    for (size_t i = 0; i < s->d; i++) {
        const double *xi = s->xc + i * s->n;
        double c = s->cij[i * s->d + j], acc = 0.0;
        for (size_t k = 0; k < s->n; k++) {
            double g = xi[k] * rj[k];
            acc += fmin(fmax(g, -c), c);
        }
        s->dg[i * s->d + j] = acc / (double)s->n;
    }
}

/* R = XB − X and all of D, for the B given. */
static void data_state_full(struct lrn_dppgcd *s, const double *B)
{
    size_t n = s->n, d = s->d;

    for (size_t j = 0; j < d; j++) {
        double *rj = s->r + j * n;
        for (size_t k = 0; k < n; k++)
            rj[k] = -s->xc[j * n + k];
        for (size_t i = 0; i < d; i++) {
            double b = B[i * d + j];
            if (b != 0.0)
                for (size_t k = 0; k < n; k++)
                    rj[k] += b * s->xc[i * n + k];
        }
    }
    for (size_t j = 0; j < d; j++)
        clipped_column(s, j);
    memcpy(s->bcache, B, d * d * sizeof(double));
}

/* ---- lifecycle ---- */

static core_err opts_check(size_t n, size_t d, const struct lrn_dppgcd_opts *o)
{
    if (n == 0 || d < 2 || !o)
        return CORE_EINVAL;
    if (n > LRN_DPPGCD_MAX_N || d > LRN_DPPGCD_MAX_D || n * d > (size_t)1 << 31)
        return CORE_ETOOBIG;
    if (!(o->lambda >= 0.0) || !isfinite(o->lambda) || !(o->gamma > 0.0) || !(o->gamma <= 1.0) ||
        o->steps == 0 || o->rounds == 0 || !(o->clip > 0.0) || !isfinite(o->clip) ||
        !(o->delta >= 0.0) || !(o->delta <= CORE_DP_DELTA_MAX))
        return CORE_EINVAL;
    if (o->m_source == LRN_M_PRIVATE &&
        (!(o->eps_m >= CORE_DP_EPS_MIN) || !(o->eps_m <= CORE_DP_EPS_MAX) || !(o->m_bound > 0.0) ||
         !isfinite(o->m_bound)))
        return CORE_EINVAL;
    if (o->m_source == LRN_M_PUBLIC) {
        if (!o->m_public)
            return CORE_EINVAL;
        for (size_t i = 0; i < d; i++)
            if (!(o->m_public[i] > 0.0) || !isfinite(o->m_public[i]))
                return CORE_EINVAL;
    } else if (o->m_source != LRN_M_PRIVATE && o->m_source != LRN_M_EXACT) {
        return CORE_EINVAL;
    }
    if (o->variant != LRN_DP_ZCDP && o->variant != LRN_DP_MANGOLD)
        return CORE_EINVAL;
    return CORE_OK;
}

static struct lrn_dppgcd *alloc_state(size_t n, size_t d)
{
    struct lrn_dppgcd *s = core_xcalloc(1, sizeof(*s));

    s->n = n;
    s->d = d;
    s->xc = core_xcalloc(2 * n * d, sizeof(double));
    s->r = s->xc + n * d;
    s->dg = core_xcalloc(4 * d * d + d, sizeof(double));
    s->bcache = s->dg + d * d;
    s->score = s->bcache + d * d;
    s->cij = s->score + d * d;
    s->m = s->cij + d * d;
    s->rho2_c = NAN;
    return s;
}

/* The noise calibration of s for o's budget (s->delta set): the per-step scale c, the zCDP
 * budget, and for Mangold et al.'s variant its per-mechanism epsilon. */
static core_err calibrate_noise(struct lrn_dppgcd *s, const struct lrn_dppgcd_opts *o)
{
    struct lrn_dppgcd_calib cal;
    core_err rc = lrn_dppgcd_calibrate(o->steps, o->rounds, o->eps, s->delta, &cal);

    if (rc != CORE_OK)
        return rc;
    s->c = cal.c * CALIB_MARGIN;
    s->rho_budget = rho_for_eps(o->eps, s->delta);
    if (o->variant == LRN_DP_MANGOLD) {
        struct lrn_dppgcd_mangold_calib mc;
        rc = lrn_dppgcd_mangold_calibrate(o->steps, o->rounds, o->eps, s->delta, &mc);
        if (rc != CORE_OK)
            return rc;
        s->eps_step = mc.eps_step;
        s->n_mech = mc.n_mech;
    }
    return CORE_OK;
}

core_err lrn_dppgcd_new(size_t n, size_t d, const double *X, const struct lrn_dppgcd_opts *o,
                        const struct core_rng *rng, struct lrn_dppgcd **out)
{
    struct lrn_dppgcd *s = NULL;
    core_err rc;

    *out = NULL;
    rc = opts_check(n, d, o);
    if (rc != CORE_OK)
        return rc;
    if (!X || !rng)
        return CORE_EINVAL;
    for (size_t x = 0; x < n * d; x++)
        if (!isfinite(X[x]))
            return CORE_EINVAL;
    s = alloc_state(n, d);
    s->o = *o;
    s->o.m_public = NULL;
    s->rng = rng;
    s->delta = o->delta > 0.0 ? o->delta : 1.0 / ((double)n * (double)n);
    rc = calibrate_noise(s, o);
    if (rc != CORE_OK)
        goto out;
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < d; i++)
            s->xc[i * n + k] = X[k * d + i];
    s->m_private = o->m_source != LRN_M_EXACT;
    if (o->m_source == LRN_M_PUBLIC)
        memcpy(s->m, o->m_public, d * sizeof(double));
    else if (o->m_source == LRN_M_EXACT)
        m_exact(s);
    else
        rc = m_private(s);
out:
    if (rc != CORE_OK) {
        lrn_dppgcd_free(s);
        return rc;
    }
    *out = s;
    return CORE_OK;
}

void lrn_dppgcd_free(struct lrn_dppgcd *s)
{
    if (!s)
        return;
    /* The copies hold participant data: wipe before release. */
    memset(s->xc, 0, 2 * s->n * s->d * sizeof(double));
    free(s->xc);
    free(s->dg);
    free(s);
}

/* ---- one private step ---- */

struct dp_step {
    const double *W, *beta;
    double rho2, delta_s, scale; /* Δ_S, Gumbel/EM scale β */
    int frac_bits;
    double score_max;
    struct core_dp_cost cost; /* charge of one step (EM + Gaussian), rounded up */
};

static double g_public(const struct dp_step *st, const double *B, size_t x)
{
    /* The data-independent part of G: β_ij + ρ₂(B_ij − W_ij). */
    return (st->beta ? st->beta[x] : 0.0) + st->rho2 * (B[x] - st->W[x]);
}

/* Scores from the clipped gradient (paper Eq. 8 / A.2.2 Eq. 13), clamped to [0, max], for
 * the d(d−1) off-diagonal candidates in row-major order (the diagonal is not a coordinate). */
static void scores(struct lrn_dppgcd *s, const struct dp_step *st, const double *B)
{
    size_t d = s->d, k = 0;

    for (size_t i = 0; i < d; i++) {
        double M = s->m[i] + st->rho2;
        for (size_t j = 0; j < d; j++) {
            size_t x = i * d + j;
            if (i == j)
                continue;
            double g = s->dg[x] + g_public(st, B, x), b = B[x];
            double z = lrn_soft_threshold(b - g / M, s->o.lambda / M);
            s->score[k++] = fmin(sqrt(M) * fabs(z - b), st->score_max);
        }
    }
}

/* Public per-call calibration: Δ_S = 2C/(n√ΣM) (= Δ_ij/√M_ij for every ij), β = c·Δ_S.
 * st->cost bounds the charge of any one step: the EM charge plus the largest Gaussian grid
 * charge over the rows (C_ij depends on i only, and the grid rounding on σ's binade). */
/* Mangold variant: both mechanisms of a step at ε₀. Selection: exponential mechanism with
 * scale 2Δ_S/ε₀ (non-monotone scores: ε = 2Δ_S/scale), times CALIB_MARGIN so the score
 * quantisation core charges (core_dp_em_eps, rounded up) stays ≤ ε₀. Update: Laplace on the
 * scalar D_ij, ℓ1 sensitivity Δ_ij = 2C_ij/n, at ε₀ (scale Δ_ij/ε₀, core rounds t up). Any
 * charge above ε₀ fails closed (the composition bound assumes ε₀ per mechanism). */
static core_err step_setup_mangold(struct lrn_dppgcd *s, struct dp_step *st, double tot)
{
    struct core_dp_lap lp;
    double eps_em = INFINITY;
    core_err rc;

    st->scale = 2.0 * st->delta_s * CALIB_MARGIN / s->eps_step;
    rc = core_dp_em_eps(st->delta_s, st->scale, st->frac_bits, false, &eps_em);
    if (rc != CORE_OK)
        return rc;
    if (!(eps_em <= s->eps_step))
        return CORE_EINVARIANT;
    for (size_t i = 0; i < s->d; i++) {
        double cij = s->o.clip * sqrt((s->m[i] + st->rho2) / tot), dij = 2.0 * cij / (double)s->n;
        rc = core_dp_lap_params(dij, s->eps_step, cij, 1, &lp);
        if (rc != CORE_OK)
            return rc;
        if (!(lp.eps <= s->eps_step))
            return CORE_EINVARIANT;
    }
    st->cost.eps = st->cost.delta = st->cost.rho = 0.0; /* counted in mechanisms instead */
    return CORE_OK;
}

static core_err step_setup(struct lrn_dppgcd *s, struct dp_step *st)
{
    struct core_dp_gauss gp;
    double eps_em = 0.0, rho_em = 0.0, rho_g = 0.0, tot = sum_m(s, st->rho2);
    core_err rc;

    st->delta_s = 2.0 * s->o.clip / ((double)s->n * sqrt(tot));
    st->scale = s->c * st->delta_s;
    st->frac_bits = (int)fmin(40.0, fmax(0.0, ceil(-log2(st->delta_s)) + 10.0));
    st->score_max = ldexp(1.0, 40 - st->frac_bits);
    if (s->o.variant == LRN_DP_MANGOLD)
        return step_setup_mangold(s, st, tot);
    rc = core_dp_em_eps(st->delta_s, st->scale, st->frac_bits, false, &eps_em);
    if (rc == CORE_OK)
        rc = core_dp_rho_em(eps_em, &rho_em);
    for (size_t i = 0; i < s->d && rc == CORE_OK; i++) {
        double cij = s->o.clip * sqrt((s->m[i] + st->rho2) / tot), dij = 2.0 * cij / (double)s->n;
        rc = core_dp_gauss_params_sigma(s->c * dij, dij, 1, cij, &gp);
        rho_g = fmax(rho_g, gp.rho);
    }
    if (rc != CORE_OK)
        return rc;
    st->cost.eps = 0.0;
    st->cost.delta = 0.0;
    st->cost.rho = core_dp_add_up(rho_em, rho_g);
    return CORE_OK;
}

static core_err noisy_update(struct lrn_dppgcd *s, const struct dp_step *st, double *B, size_t i,
                             size_t j, double *delta_out)
{
    struct core_dp_gauss gp;
    size_t x = i * s->d + j;
    double M = s->m[i] + st->rho2, cij = s->cij[x], dij = 2.0 * cij / (double)s->n;
    double noisy, b = B[x], nb;
    core_err rc;

    if (s->o.variant == LRN_DP_MANGOLD) {
        /* Mangold et al. (2023): Laplace(Δ_ij/ε₀) on the clipped coordinate, clamped to
         * its public range [−C_ij, C_ij]. */
        struct core_dp_lap lp;
        rc = core_dp_lap_params(dij, s->eps_step, cij, 1, &lp);
        if (rc == CORE_OK && !(lp.eps <= s->eps_step))
            rc = CORE_EINVARIANT;
        if (rc == CORE_OK)
            rc = core_dp_lap_release(s->rng, &lp, 1, &s->dg[x], &noisy);
        if (rc != CORE_OK)
            return rc;
        s->upd_scale = ldexp((double)lp.t, lp.k);
    } else {
        /* σ_ij = c·Δ_ij = β·√M_ij (Theorem 5.1 with matched costs). */
        rc = core_dp_gauss_params_sigma(s->c * dij, dij, 1, cij, &gp);
        if (rc == CORE_OK)
            rc = core_dp_gauss_release(s->rng, &gp, 1, &s->dg[x], &noisy);
        if (rc != CORE_OK)
            return rc;
        s->upd_scale = gp.sigma;
    }
    nb = lrn_soft_threshold(b - s->o.gamma * (noisy + g_public(st, B, x)) / M,
                            s->o.gamma * s->o.lambda / M);
    if (!isfinite(nb))
        return CORE_ENUMERIC;
    *delta_out = nb - b;
    B[x] = nb;
    return CORE_OK;
}

static core_err one_step(struct lrn_dppgcd *s, struct dp_step *st, double *B)
{
    size_t sel = 0, i, j, n = s->n, d = s->d;
    double delta = 0.0;
    struct core_dp_cost after = s->spent;
    core_err rc;

    rc = core_dp_cost_add(&after, &st->cost);
    if (rc != CORE_OK)
        return rc;
    if (!(after.rho <= s->rho_budget)) /* budget filter; NaN fails closed */
        return CORE_EBUDGET;
    if (s->o.variant == LRN_DP_MANGOLD && !(s->mechs + 2 <= s->n_mech))
        return CORE_EBUDGET; /* advanced composition covers N = 2KT mechanisms only */
    scores(s, st, B);
    rc = core_dp_em_select(s->rng, d * (d - 1), s->score, st->scale, st->frac_bits, &sel);
    if (rc != CORE_OK)
        return rc;
    s->spent = after; /* charged as soon as a noisy output exists (the bound of both parts) */
    if (s->o.variant == LRN_DP_MANGOLD)
        s->mechs += 2;
    s->steps++;
    i = sel / (d - 1);
    j = sel % (d - 1);
    j += j >= i; /* skip the diagonal */
    s->last_sel = i * d + j;
    rc = noisy_update(s, st, B, i, j, &delta);
    if (rc != CORE_OK || delta == 0.0)
        return rc;
    for (size_t k = 0; k < n; k++)
        s->r[j * n + k] += delta * s->xc[i * n + k];
    s->bcache[i * d + j] = B[i * d + j];
    clipped_column(s, j);
    return CORE_OK;
}

static void prepare(struct lrn_dppgcd *s, const double *B, double rho2)
{
    if (!(rho2 == s->rho2_c)) { /* thresholds depend on ρ₂ through ΣM */
        set_thresholds(s, rho2);
        data_state_full(s, B);
    } else if (memcmp(s->bcache, B, s->d * s->d * sizeof(double)) != 0) {
        data_state_full(s, B);
    }
}

core_err lrn_dppgcd_prepare(struct lrn_dppgcd *s, const double *B, double rho2)
{
    if (!B || !(rho2 >= 0.0) || !isfinite(rho2))
        return CORE_EINVAL;
    for (size_t x = 0; x < s->d * s->d; x++)
        if (!isfinite(B[x]) || (x / s->d == x % s->d && B[x] != 0.0))
            return CORE_EINVAL;
    prepare(s, B, rho2);
    return CORE_OK;
}

core_err lrn_dppgcd_solve(struct lrn_dppgcd *s, const double *W, const double *beta, double rho2,
                          double *B)
{
    struct dp_step st = {W, beta, rho2, 0, 0, 0, 0, {0, 0, 0}};
    size_t d = s->d;
    struct core_dp_cost need = s->spent;
    core_err rc;

    if (!W || !B || !(rho2 >= 0.0) || !isfinite(rho2))
        return CORE_EINVAL;
    for (size_t x = 0; x < d * d; x++)
        if (!isfinite(W[x]) || !isfinite(B[x]) || (beta && !isfinite(beta[x])))
            return CORE_EINVAL;
    rc = step_setup(s, &st);
    if (rc != CORE_OK)
        return rc;
    s->em_scale = st.scale;
    for (size_t k = 0; k < s->o.steps && rc == CORE_OK; k++)
        rc = core_dp_cost_add(&need, &st.cost);
    if (rc != CORE_OK)
        return rc;
    if (!(need.rho <= s->rho_budget))
        return CORE_EBUDGET; /* refuse the whole round before touching data */
    if (s->o.variant == LRN_DP_MANGOLD && !(s->mechs + 2 * (uint64_t)s->o.steps <= s->n_mech))
        return CORE_EBUDGET;
    for (size_t i = 0; i < d; i++)
        B[i * d + i] = 0.0;
    prepare(s, B, rho2);
    for (size_t k = 0; k < s->o.steps && rc == CORE_OK; k++)
        rc = one_step(s, &st, B);
    return rc;
}

void lrn_dppgcd_spent(const struct lrn_dppgcd *s, struct lrn_dppgcd_spent *out)
{
    double rho = core_dp_add_up(s->spent.rho, s->spent_m.rho), eps = INFINITY;

    out->rho = s->spent.rho;
    out->rho_m = s->spent_m.rho;
    out->delta = s->delta;
    if (s->o.variant == LRN_DP_MANGOLD) {
        /* Steps: advanced composition of the mechanisms run. Private M (zCDP, converted at δ)
         * composes basically: ε adds, δ adds. */
        double eps_m = 0.0;
        rho = s->spent_m.rho;
        if (rho > 0.0) {
            if (core_dp_zcdp_eps_simple(rho, s->delta, &eps_m) != CORE_OK)
                eps_m = INFINITY;
            out->delta = 2.0 * s->delta;
        }
        eps = lrn_dppgcd_adv_eps(s->mechs, s->eps_step, s->delta) + eps_m;
    } else if (core_dp_zcdp_eps_simple(rho, s->delta, &eps) != CORE_OK) {
        eps = INFINITY;
    }
    out->eps = eps;
    out->upd_scale = s->upd_scale;
    out->variant = s->o.variant;
    out->mechs = s->mechs;
    out->m_private = s->m_private;
    out->steps = s->steps;
    out->em_scale = s->em_scale;
    out->last_sel = s->last_sel;
}

const double *lrn_dppgcd_data_gradient(const struct lrn_dppgcd *s)
{
    return s->dg;
}

const double *lrn_dppgcd_m(const struct lrn_dppgcd *s)
{
    return s->m;
}

/* ---- as ADMM local ops ---- */

struct lrn_dppgcd_local {
    size_t d, P;
    struct lrn_dppgcd **s;
};

static core_err dppgcd_local_solve(void *self, size_t p, size_t t, const double *W,
                                   const double *beta_p, double rho2, double *B_p)
{
    struct lrn_dppgcd_local *l = self;
    (void)t;
    if (p >= l->P)
        return CORE_EINVAL;
    return lrn_dppgcd_solve(l->s[p], W, beta_p, rho2, B_p);
}

core_err lrn_dppgcd_local_new(size_t d, size_t P, const double *const *X, const size_t *n,
                              const struct lrn_dppgcd_opts *o, const struct core_rng *rng,
                              struct lrn_dppgcd_local **out)
{
    struct lrn_dppgcd_local *l;
    core_err rc = CORE_OK;

    *out = NULL;
    if (P == 0 || !X || !n || !o || !rng)
        return CORE_EINVAL;
    if (P > LRN_ADMM_MAX_P)
        return CORE_ETOOBIG;
    l = core_xcalloc(1, sizeof(*l));
    l->d = d;
    l->P = P;
    // NOLINTNEXTLINE(bugprone-sizeof-expression): array of pointers
    l->s = core_xcalloc(P, sizeof(*l->s));
    for (size_t p = 0; p < P && rc == CORE_OK; p++)
        rc = lrn_dppgcd_new(n[p], d, X[p], o, rng, &l->s[p]);
    if (rc != CORE_OK) {
        lrn_dppgcd_local_free(l);
        return rc;
    }
    *out = l;
    return CORE_OK;
}

void lrn_dppgcd_local_free(struct lrn_dppgcd_local *l)
{
    if (!l)
        return;
    for (size_t p = 0; p < l->P; p++)
        lrn_dppgcd_free(l->s[p]);
    free(l->s);
    free(l);
}

struct lrn_local_ops lrn_dppgcd_local_ops(struct lrn_dppgcd_local *l)
{
    struct lrn_local_ops ops = {
        dppgcd_local_solve, l, NULL, NULL, NULL, NULL}; /* RNG shared: in order */
    return ops;
}

const struct lrn_dppgcd *lrn_dppgcd_local_get(const struct lrn_dppgcd_local *l, size_t p)
{
    return p < l->P ? l->s[p] : NULL;
}
