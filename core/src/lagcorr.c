/* lagcorr.c - lagged absolute Pearson correlations for Algorithm 1 (gc-dp Sec. 4.1).
 *
 * BLAS path: one global standardization (for conditioning only: Pearson is affine
 * invariant), then for each lag l = 0..L the product C = X[0:n-l]^T X[l:n] (dsyrk for l = 0,
 * dgemm otherwise). Each rho^(l)_ij is then the exact Pearson correlation of the aligned
 * windows (head of i, tail of j), obtained from C with per-window sums:
 *   cov = C_ij - h_i t_j / n_l,  var_i = hq_i - h_i^2 / n_l,  var_j = tq_j - t_j^2 / n_l.
 * rho^(-l)_ij = rho^(l)_ji, so the L+1 products cover all 2L+1 lags.
 */
#include "core/lagcorr.h"

#include <limits.h>
#include <math.h>
#include <string.h>

#include <cblas.h>

size_t core_lagcorr_work_len(size_t n, size_t m, int max_lag)
{
    size_t nl = (size_t)(max_lag < 0 ? 0 : max_lag) + 1;
    return n * m + m * m + 6 * m * nl;
}

/* Workspace views (all doubles). */
struct lc_ws {
    double *xs;                /* n x m standardized copy (row-major, ld m) */
    double *c;                 /* m x m product */
    double *hs, *hq, *ts, *tq; /* (L+1) x m window sums: head [0, n-l), tail [l, n) */
    double *hc, *tc;           /* (L+1) x m: 1.0 when that window is constant */
};

static void ws_split(double *work, size_t n, size_t m, int max_lag, struct lc_ws *w)
{
    size_t nl = (size_t)max_lag + 1;
    w->xs = work;
    w->c = w->xs + n * m;
    w->hs = w->c + m * m;
    w->hq = w->hs + nl * m;
    w->ts = w->hq + nl * m;
    w->tq = w->ts + nl * m;
    w->hc = w->tq + nl * m;
    w->tc = w->hc + nl * m;
}

static core_err check_args(size_t n, size_t m, size_t ld, int max_lag)
{
    if (n == 0 || m == 0 || ld < m || max_lag < 0 || max_lag > CORE_LAGCORR_MAX_LAG)
        return CORE_EINVAL;
    if (n > INT_MAX || m > INT_MAX || ld > INT_MAX)
        return CORE_EINVAL;
    return CORE_OK;
}

/* Exact constancy of the head/tail windows of every node, from the original x:
 * head [0, n-l) is constant iff the first index whose value differs from x[0] is >= n-l;
 * tail [l, n) is constant iff the last index differing from x[n-1] is < l. */
static void constancy(size_t n, size_t m, const double *x, size_t ld, int max_lag,
                      const struct lc_ws *w)
{
    for (size_t j = 0; j < m; j++) {
        size_t first = n, last_plus1 = 0;
        for (size_t t = 1; t < n; t++) {
            if (x[t * ld + j] != x[j]) {
                first = t;
                break;
            }
        }
        for (size_t t = n - 1; t-- > 0;) {
            if (x[t * ld + j] != x[(n - 1) * ld + j]) {
                last_plus1 = t + 1;
                break;
            }
        }
        for (int l = 0; l <= max_lag; l++) {
            size_t ul = (size_t)l, idx = ul * m + j;
            w->hc[idx] = (ul >= n || first >= n - ul) ? 1.0 : 0.0;
            w->tc[idx] = (last_plus1 <= ul) ? 1.0 : 0.0;
        }
    }
}

/* Column means and population standard deviations of x (n x m, leading dimension ld), each
 * summed in row order; a zero deviation becomes 1. */
static void column_moments(size_t n, size_t m, const double *x, size_t ld, double *mean, double *sd)
{
    memset(mean, 0, m * sizeof(*mean));
    memset(sd, 0, m * sizeof(*sd));
    for (size_t t = 0; t < n; t++)
        for (size_t j = 0; j < m; j++)
            mean[j] += x[t * ld + j];
    for (size_t j = 0; j < m; j++)
        mean[j] /= (double)n;
    for (size_t t = 0; t < n; t++)
        for (size_t j = 0; j < m; j++) {
            double dv = x[t * ld + j] - mean[j];
            sd[j] += dv * dv;
        }
    for (size_t j = 0; j < m; j++) {
        sd[j] = sqrt(sd[j] / (double)n);
        if (!(sd[j] > 0.0))
            sd[j] = 1.0; /* constant column: becomes ~0; its rho is 0 by the constancy rule */
    }
}

/* Window sums for lags 1..max_lag: peel row n-l off the head sums and row l-1 off the tail
 * sums (row 0 of hs/hq holds the full sums). */
static void peel_window_sums(size_t n, size_t m, int max_lag, const struct lc_ws *w)
{
    for (size_t j = 0; j < m; j++) {
        w->ts[j] = w->hs[j];
        w->tq[j] = w->hq[j];
        for (int l = 1; l <= max_lag; l++) {
            size_t ul = (size_t)l, cur = ul * m + j, prev = cur - m;
            double vh = (ul <= n) ? w->xs[(n - ul) * m + j] : 0.0;
            double vt = (ul <= n) ? w->xs[(ul - 1) * m + j] : 0.0;
            w->hs[cur] = w->hs[prev] - vh;
            w->hq[cur] = w->hq[prev] - vh * vh;
            w->ts[cur] = w->ts[prev] - vt;
            w->tq[cur] = w->tq[prev] - vt * vt;
        }
    }
}

/* Global standardization into xs, then window sums by peeling rows off both ends.
 * Row-major passes (per-column accumulators in hs/hq/ts/tq row 0) keep the access
 * contiguous; each column's sums are still taken in row order t = 0..n-1. */
static void standardize(size_t n, size_t m, const double *x, size_t ld, int max_lag,
                        const struct lc_ws *w)
{
    double *mean = w->ts, *sd = w->tq; /* row 0 of ts/tq as scratch until the peel */
    column_moments(n, m, x, ld, mean, sd);
    memset(w->hs, 0, m * sizeof(double));
    memset(w->hq, 0, m * sizeof(double));
    for (size_t t = 0; t < n; t++)
        for (size_t j = 0; j < m; j++) {
            double v = (x[t * ld + j] - mean[j]) / sd[j];
            w->xs[t * m + j] = v;
            w->hs[j] += v;
            w->hq[j] += v * v;
        }
    peel_window_sums(n, m, max_lag, w);
}

/* |Pearson| of head-window of i and tail-window of j at lag l from the cross product cij. */
static double window_rho(const struct lc_ws *w, size_t m, size_t nl, size_t l, size_t i, size_t j,
                         double cij)
{
    size_t a = l * m + i, b = l * m + j;
    double fn = (double)nl, num, vi, vj, r;

    if (nl < 2 || w->hc[a] != 0.0 || w->tc[b] != 0.0)
        return 0.0; /* Sec. 4.1: fewer than two pairs or a zero-variance series */
    num = cij - w->hs[a] * w->ts[b] / fn;
    vi = w->hq[a] - w->hs[a] * w->hs[a] / fn;
    vj = w->tq[b] - w->ts[b] * w->ts[b] / fn;
    if (!(vi > 0.0) || !(vj > 0.0))
        return 0.0; /* non-constant but variance lost to rounding: treat as zero-variance */
    r = fabs(num) / sqrt(vi * vj);
    return r > 1.0 ? 1.0 : r;
}

/* Fold the lag-l product in w->c into rho0 / rhomax. */
static void fold_lag(const struct lc_ws *w, size_t n, size_t m, size_t l, double *rho0,
                     double *rhomax)
{
    size_t nl = n > l ? n - l : 0;
    for (size_t i = 0; i < m; i++) {
        for (size_t j = 0; j < m; j++) {
            double cij, r;
            if (i == j)
                continue;
            if (l == 0 && j < i)
                continue; /* symmetric; dsyrk filled the upper triangle only */
            cij = w->c[i * m + j];
            r = window_rho(w, m, nl, l, i, j, cij);
            if (l == 0) {
                rho0[i * m + j] = rho0[j * m + i] = r;
            }
            if (r > rhomax[i * m + j]) {
                rhomax[i * m + j] = r;
                rhomax[j * m + i] = r;
            }
        }
    }
}

static core_err finish(size_t m, double *rho0, double *rhomax)
{
    for (size_t i = 0; i < m * m; i++)
        if (!isfinite(rho0[i]) || !isfinite(rhomax[i]))
            return CORE_ENUMERIC;
    return CORE_OK;
}

core_err core_lagcorr_blas(size_t n, size_t m, const double *x, size_t ld, int max_lag,
                           double *rho0, double *rhomax, double *work)
{
    struct lc_ws w;
    core_err rc = check_args(n, m, ld, max_lag);
    if (rc != CORE_OK)
        return rc;
    ws_split(work, n, m, max_lag, &w);
    memset(rho0, 0, m * m * sizeof(*rho0));
    memset(rhomax, 0, m * m * sizeof(*rhomax));
    constancy(n, m, x, ld, max_lag, &w);
    standardize(n, m, x, ld, max_lag, &w);
    for (int l = 0; l <= max_lag; l++) {
        size_t ul = (size_t)l;
        if (ul + 2 > n)
            break; /* fewer than two aligned pairs: rho^(l) = 0 */
        if (l == 0)
            cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)m, (int)n, 1.0, w.xs, (int)m,
                        0.0, w.c, (int)m);
        else
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)m, (int)m, (int)(n - ul), 1.0,
                        w.xs, (int)m, w.xs + ul * m, (int)m, 0.0, w.c, (int)m);
        fold_lag(&w, n, m, ul, rho0, rhomax);
    }
    return finish(m, rho0, rhomax);
}

core_err core_lagcorr_blas_f32(size_t n, size_t m, const double *x, size_t ld, int max_lag,
                               double *rho0, double *rhomax, double *work, float *fwork)
{
    struct lc_ws w;
    float *xf = fwork, *cf = fwork + n * m;
    core_err rc = check_args(n, m, ld, max_lag);
    if (rc != CORE_OK)
        return rc;
    ws_split(work, n, m, max_lag, &w);
    memset(rho0, 0, m * m * sizeof(*rho0));
    memset(rhomax, 0, m * m * sizeof(*rhomax));
    constancy(n, m, x, ld, max_lag, &w);
    standardize(n, m, x, ld, max_lag, &w);
    for (size_t i = 0; i < n * m; i++)
        xf[i] = (float)w.xs[i];
    for (int l = 0; l <= max_lag; l++) {
        size_t ul = (size_t)l;
        if (ul + 2 > n)
            break;
        if (l == 0)
            cblas_ssyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)m, (int)n, 1.0f, xf, (int)m,
                        0.0f, cf, (int)m);
        else
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)m, (int)m, (int)(n - ul),
                        1.0f, xf, (int)m, xf + ul * m, (int)m, 0.0f, cf, (int)m);
        for (size_t i = 0; i < m * m; i++)
            w.c[i] = (double)cf[i];
        fold_lag(&w, n, m, ul, rho0, rhomax);
    }
    return finish(m, rho0, rhomax);
}

/* ------------------------------------------------------------------ direct reference */

static int window_constant(const double *v, size_t len)
{
    for (size_t t = 1; t < len; t++)
        if (v[t] != v[0])
            return 0;
    return 1;
}

/* Two-pass |Pearson| of a[0..len) and b[0..len), straight from the definition. */
static double pearson_pair(const double *a, const double *b, size_t len)
{
    double ma = 0.0, mb = 0.0, sab = 0.0, saa = 0.0, sbb = 0.0, r;
    if (len < 2 || window_constant(a, len) || window_constant(b, len))
        return 0.0;
    for (size_t t = 0; t < len; t++) {
        ma += a[t];
        mb += b[t];
    }
    ma /= (double)len;
    mb /= (double)len;
    for (size_t t = 0; t < len; t++) {
        double da = a[t] - ma, db = b[t] - mb;
        sab += da * db;
        saa += da * da;
        sbb += db * db;
    }
    if (!(saa > 0.0) || !(sbb > 0.0))
        return 0.0;
    r = fabs(sab) / sqrt(saa * sbb);
    return r > 1.0 ? 1.0 : r;
}

core_err core_lagcorr_direct(size_t n, size_t m, const double *x, size_t ld, int max_lag,
                             double *rho0, double *rhomax, double *work)
{
    double *col = work; /* column-major copy: col[j*n + t] */
    core_err rc = check_args(n, m, ld, max_lag);
    if (rc != CORE_OK)
        return rc;
    for (size_t t = 0; t < n; t++)
        for (size_t j = 0; j < m; j++)
            col[j * n + t] = x[t * ld + j];
    memset(rho0, 0, m * m * sizeof(*rho0));
    memset(rhomax, 0, m * m * sizeof(*rhomax));
    for (size_t i = 0; i < m; i++) {
        for (size_t j = i + 1; j < m; j++) {
            const double *xi = col + i * n, *xj = col + j * n;
            double best = 0.0;
            for (int l = -max_lag; l <= max_lag; l++) {
                size_t al = (size_t)(l < 0 ? -l : l), len = n > al ? n - al : 0;
                /* lag l pairs (x_i[t], x_j[t + l]) */
                double r = l >= 0 ? pearson_pair(xi, xj + al, len) : pearson_pair(xi + al, xj, len);
                if (l == 0)
                    rho0[i * m + j] = rho0[j * m + i] = r;
                if (r > best)
                    best = r;
            }
            rhomax[i * m + j] = rhomax[j * m + i] = best;
        }
    }
    return finish(m, rho0, rhomax);
}
