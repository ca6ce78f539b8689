/* baselines.c - Fed-BNSL local solver, DP covariance (DP-Fed-BNSL), OLS personalisation. */
#include "lrn/baselines.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <lapacke.h>

#include "core/dp_mech.h"
#include "core/mem.h"

struct lrn_fedbnsl_local {
    size_t d, P;
    const double *const *sigma; /* borrowed */
    double *chol;               /* P factors of Sigma_p + rho2 I (lower, row-major) */
    double *inv;                /* P inverses (Sigma_p + rho2 I)^-1 */
    double *rho_of;             /* rho2 each factor was made for (NaN: none yet) */
};

core_err lrn_fedbnsl_local_new(size_t d, size_t P, const double *const *sigma,
                               struct lrn_fedbnsl_local **out)
{
    struct lrn_fedbnsl_local *l;

    *out = NULL;
    if (d == 0 || P == 0 || !sigma)
        return CORE_EINVAL;
    if (d > LRN_BASELINE_MAX_D || P > LRN_ADMM_MAX_P)
        return CORE_ETOOBIG;
    for (size_t p = 0; p < P; p++)
        if (!sigma[p])
            return CORE_EINVAL;
    l = core_xcalloc(1, sizeof(*l));
    l->d = d;
    l->P = P;
    l->sigma = sigma;
    l->chol = core_xmalloc(P * d * d * sizeof(double));
    l->inv = core_xmalloc(P * d * d * sizeof(double));
    l->rho_of = core_xmalloc(P * sizeof(double));
    for (size_t p = 0; p < P; p++)
        l->rho_of[p] = NAN;
    *out = l;
    return CORE_OK;
}

void lrn_fedbnsl_local_free(struct lrn_fedbnsl_local *l)
{
    if (!l)
        return;
    free(l->chol);
    free(l->inv);
    free(l->rho_of);
    free(l);
}

static core_err factor(struct lrn_fedbnsl_local *l, size_t p, double rho2)
{
    size_t d = l->d;
    double *a = l->chol + p * d * d;
    lapack_int info;

    memcpy(a, l->sigma[p], d * d * sizeof(double));
    for (size_t i = 0; i < d; i++)
        a[i * d + i] += rho2;
    info = LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', (lapack_int)d, a, (lapack_int)d);
    if (info == 0) {
        double *v = l->inv + p * d * d;
        memset(v, 0, d * d * sizeof(double));
        for (size_t i = 0; i < d; i++)
            v[i * d + i] = 1.0;
        info = LAPACKE_dpotrs(LAPACK_ROW_MAJOR, 'L', (lapack_int)d, (lapack_int)d, a, (lapack_int)d,
                              v, (lapack_int)d);
    }
    if (info != 0) {
        l->rho_of[p] = NAN;
        return CORE_ENUMERIC;
    }
    l->rho_of[p] = rho2;
    return CORE_OK;
}

/* Paper eq. (10) / Ng & Zhang (2022): B_p = (Sigma_p + rho2 I)^-1 (rho2 W - beta_p + Sigma_p),
 * with A = Sigma_p + rho2 I and R the right-hand side.
 * Choice (DESIGN.md 6 has diag(B) = 0; notears-admm leaves the diagonal free): we solve the
 * local problem exactly under the constraint B_jj = 0. Column j is independent: minimise
 * 1/2 b^T A b - r^T b with b_j = 0. Its solution is b = A^-1 (r + mu e_j) with mu chosen so
 * that b_j = 0, i.e. b = y - (y_j / Ainv_jj) Ainv[:,j], y = A^-1 r: O(d^2) on top of the
 * unconstrained solve. Zeroing the diagonal of the unconstrained solution instead (what a
 * driver that merely masks the diagonal would do) is not a minimiser and measurably hurts
 * SHD (docs/learner.md). */
static core_err fedbnsl_solve(void *self, size_t p, size_t t, const double *W, const double *beta_p,
                              double rho2, double *B_p)
{
    struct lrn_fedbnsl_local *l = self;
    size_t d = l->d;
    const double *s = l->sigma[p], *v;
    double y[LRN_BASELINE_MAX_D];
    lapack_int info;
    core_err rc;

    (void)t;
    if (!(rho2 >= 0.0) || !isfinite(rho2) || p >= l->P)
        return CORE_EINVAL;
    if (l->rho_of[p] != rho2) { /* NaN compares unequal: first call factors */
        rc = factor(l, p, rho2);
        if (rc != CORE_OK)
            return rc;
    }
    v = l->inv + p * d * d;
    for (size_t k = 0; k < d * d; k++)
        B_p[k] = rho2 * W[k] - (beta_p ? beta_p[k] : 0.0) + s[k];
    info = LAPACKE_dpotrs(LAPACK_ROW_MAJOR, 'L', (lapack_int)d, (lapack_int)d, l->chol + p * d * d,
                          (lapack_int)d, B_p, (lapack_int)d);
    if (info != 0)
        return CORE_ENUMERIC;
    for (size_t j = 0; j < d; j++) {
        double f = B_p[j * d + j] / v[j * d + j];
        for (size_t i = 0; i < d; i++)
            y[i] = B_p[i * d + j] - f * v[i * d + j];
        for (size_t i = 0; i < d; i++)
            B_p[i * d + j] = y[i];
        B_p[j * d + j] = 0.0;
    }
    for (size_t k = 0; k < d * d; k++)
        if (!isfinite(B_p[k]))
            return CORE_ENUMERIC;
    return CORE_OK;
}

struct lrn_local_ops lrn_fedbnsl_local_ops(struct lrn_fedbnsl_local *l)
{
    struct lrn_local_ops ops = {.solve = fedbnsl_solve, .self = l};
    return ops;
}

struct lrn_admm_opts lrn_fedbnsl_admm_opts_default(void)
{
    struct lrn_admm_opts o = lrn_admm_opts_default();
    o.max_rounds = 100;
    o.rho1 = 1e-3;
    o.rho2 = 1e-3;
    o.rho1_growth = 1.75;
    o.rho2_growth = 1.25;
    o.rho_max = 1e16;
    o.schedule = LRN_RHO_EVERY_ROUND;
    o.wire = LRN_WIRE_DENSE;
    o.w_threshold = 0.3;
    o.enforce_dag = true;
    o.primal_tol = 0.0;       /* no early stop: the paper's cost is T full rounds */
    o.acyc_on_server = false; /* no w_sparsify: W̃ is what is sent, same h */
    o.w_keep = 1.0;
    o.down_own_support = false; /* dense wire: every participant gets all of W */
    /* notears-admm neither sparsifies W between rounds nor stops L-BFGS-B early: */
    o.w_sparsify = 0.0;
    o.b_sparsify = 0.0;
    o.lbfgs_max_iter = 200;
    o.lbfgs_wtol = 0.0;
    return o;
}

/* Clip every row to ||x||^2 <= b and accumulate the upper triangle of X^T X / n. */
static core_err clipped_cov_upper(size_t n, size_t d, const double *x, double b, double *up)
{
    size_t m = d * (d + 1) / 2;
    memset(up, 0, m * sizeof(double));
    for (size_t r = 0; r < n; r++) {
        const double *row = x + r * d;
        double nn = 0.0, c;
        size_t k = 0;
        for (size_t j = 0; j < d; j++) {
            if (!isfinite(row[j]))
                return CORE_EINVAL;
            nn += row[j] * row[j];
        }
        c = nn > b ? sqrt(b / nn) : 1.0; /* scale so that ||c x||^2 <= b */
        for (size_t i = 0; i < d; i++)
            for (size_t j = i; j < d; j++)
                up[k++] += (c * row[i]) * (c * row[j]);
    }
    for (size_t k = 0; k < m; k++)
        up[k] /= (double)n;
    return CORE_OK;
}

/* Post-processing (free under DP): the noisy matrix may be indefinite, which would make
 * Sigma_p + rho2 I singular for the small rho2 of the notears-admm schedule. Project onto
 * the PSD cone: eigendecomposition (LAPACK dsyev), eigenvalues floored at 0, rebuilt.
 * Choice: floor 0 (Wang 2018's AdaSSP adds a ridge instead; rho2 > 0 plays that role). */
static core_err psd_project(size_t d, double *sigma)
{
    double *v = core_xmalloc(d * d * sizeof(double)), *ev = core_xmalloc(d * sizeof(double));
    core_err rc = CORE_OK;

    memcpy(v, sigma, d * d * sizeof(double));
    if (LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'V', 'U', (lapack_int)d, v, (lapack_int)d, ev) != 0) {
        rc = CORE_ENUMERIC;
        memset(sigma, 0, d * d * sizeof(double));
        goto out;
    }
    for (size_t i = 0; i < d; i++)
        for (size_t j = i; j < d; j++) {
            double acc = 0.0;
            for (size_t k = 0; k < d; k++)
                acc += v[i * d + k] * (ev[k] > 0.0 ? ev[k] : 0.0) * v[j * d + k];
            sigma[i * d + j] = sigma[j * d + i] = acc;
        }
out:
    free(v);
    free(ev);
    return rc;
}

core_err lrn_dp_covariance(size_t n, size_t d, const double *x, double b, double eps, double delta,
                           const struct core_rng *rng, double *sigma, double *work)
{
    struct core_dp_gauss gp;
    size_t m = d * (d + 1) / 2, k = 0;
    core_err rc;

    memset(sigma, 0, d * d * sizeof(double));
    if (n < 2 || d == 0 || d > LRN_BASELINE_MAX_D || !(b > 0.0) || !isfinite(b) || !rng)
        return CORE_EINVAL;
    rc = clipped_cov_upper(n, d, x, b, work);
    if (rc != CORE_OK)
        return rc;
    /* Replace-one L2 sensitivity of the upper triangle: <= ||xx^T - yy^T||_F <= sqrt(2) b/n.
     * Entries are bounded by b (|x_i x_j| <= ||x||^2 <= b): the public clamp. */
    rc = core_dp_gauss_params_agm(eps, delta, sqrt(2.0) * b / (double)n, (uint64_t)m, b, &gp);
    if (rc == CORE_OK)
        rc = core_dp_gauss_release(rng, &gp, m, work, work);
    if (rc != CORE_OK) {
        memset(work, 0, m * sizeof(double));
        return rc;
    }
    for (size_t i = 0; i < d; i++)
        for (size_t j = i; j < d; j++, k++)
            sigma[i * d + j] = sigma[j * d + i] = work[k];
    return psd_project(d, sigma);
}

/* Appendix B.2.2: per-participant OLS on the learned structure (normal equations). */
core_err lrn_node_rss(size_t d, const double *sigma, size_t j, const size_t *pa, size_t k,
                      double *work, double *rv)
{
    double *a = work, *rhs = work + k * k, v;

    *rv = INFINITY;
    if (j >= d || k >= d)
        return CORE_EINVAL;
    for (size_t r = 0; r < k; r++) {
        if (pa[r] >= d || pa[r] == j)
            return CORE_EINVAL;
        for (size_t c = 0; c < k; c++)
            a[r * k + c] = sigma[pa[r] * d + pa[c]];
        rhs[r] = sigma[pa[r] * d + j];
    }
    v = sigma[j * d + j];
    if (k > 0) {
        if (LAPACKE_dposv(LAPACK_ROW_MAJOR, 'L', (lapack_int)k, 1, a, (lapack_int)k, rhs, 1) != 0)
            return CORE_OK; /* singular: +inf, never chosen */
        for (size_t r = 0; r < k; r++)
            v -= rhs[r] * sigma[pa[r] * d + j];
    }
    *rv = v;
    return CORE_OK;
}

core_err lrn_personalize_ols(size_t d, const double *sigma, const double *dag, double *out,
                             double *work)
{
    size_t pa[LRN_BASELINE_MAX_D];
    double *a = work, *rhs = work + d * d;

    if (d == 0 || d > LRN_BASELINE_MAX_D)
        return CORE_EINVAL;
    memset(out, 0, d * d * sizeof(double));
    for (size_t j = 0; j < d; j++) {
        size_t q = 0;
        lapack_int info;
        for (size_t i = 0; i < d; i++)
            if (i != j && dag[i * d + j] != 0.0)
                pa[q++] = i;
        if (q == 0)
            continue;
        for (size_t r = 0; r < q; r++) {
            for (size_t c = 0; c < q; c++)
                a[r * q + c] = sigma[pa[r] * d + pa[c]];
            rhs[r] = sigma[pa[r] * d + j];
        }
        info = LAPACKE_dposv(LAPACK_ROW_MAJOR, 'L', (lapack_int)q, 1, a, (lapack_int)q, rhs, 1);
        if (info != 0)
            return CORE_ENUMERIC;
        for (size_t r = 0; r < q; r++)
            out[pa[r] * d + j] = rhs[r];
    }
    return CORE_OK;
}
