/* pgcd.c - proximal greedy coordinate descent (paper §4.2, Eqs. 8-9; Karimireddy et al.
 * 2019 GS-s rule). See lrn/pgcd.h for the problem.
 *
 * State kept between calls: Dt = (Σ(B − I))ᵀ, the data part of the gradient, stored
 * transposed so that the O(d) update after a change of B_ij (column j of D gains δ·Σ[:,i])
 * is contiguous, together with the B it belongs to. A call whose warm start equals the
 * cached B (the ADMM driver hands back the previous B_p) skips the O(d³) recomputation; any
 * other B triggers a full recomputation by dgemm. The full gradient
 * G = D + β + ρ₂(B − W) is formed coordinate by coordinate when needed.
 */
#include "lrn/pgcd.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/mem.h"

struct lrn_pgcd {
    size_t d;
    const double *sigma; /* borrowed, row-major, symmetric */
    double *dt;          /* d²: Dt[j*d + i] = (Σ(B − I))_ij */
    double *bcache;      /* d²: the B that dt belongs to */
    int have_cache;
    double *g;              /* d²: G at the end of the last call (row-major) */
    double *m;              /* d: M_i = Σ_ii + ρ₂ */
    double *sqm, *lm, *glm; /* d each, per call: √M_i, λ/M_i, γλ/M_i (the same operations
                             * as inline, hoisted out of the O(d)-per-step scans) */
    double *bt, *wt, *btt;  /* d² each, per call: Bᵀ, Wᵀ, βᵀ (column j contiguous) */
    double *score;          /* d: scores of the column being refreshed */
    double *colmax;         /* d: best score in column j */
    size_t *colarg;         /* d: its row */
};

double lrn_soft_threshold(double x, double t)
{
    if (x > t)
        return x - t;
    if (x < -t)
        return x + t;
    return 0.0;
}

core_err lrn_pgcd_new(size_t d, const double *sigma, struct lrn_pgcd **out)
{
    struct lrn_pgcd *s;

    *out = NULL;
    if (d == 0 || !sigma)
        return CORE_EINVAL;
    if (d > LRN_PGCD_MAX_D)
        return CORE_ETOOBIG;
    for (size_t x = 0; x < d * d; x++)
        if (!isfinite(sigma[x]))
            return CORE_EINVAL;
    s = core_xcalloc(1, sizeof(*s));
    s->d = d;
    s->sigma = sigma;
    s->dt = core_xcalloc(6 * d * d, sizeof(double));
    s->bcache = s->dt + d * d;
    s->g = s->bcache + d * d;
    s->bt = s->g + d * d;
    s->wt = s->bt + d * d;
    s->btt = s->wt + d * d;
    s->score = core_xcalloc(d, sizeof(double));
    s->m = core_xcalloc(5 * d, sizeof(double));
    s->colmax = s->m + d;
    s->sqm = s->colmax + d;
    s->lm = s->sqm + d;
    s->glm = s->lm + d;
    s->colarg = core_xcalloc(d, sizeof(size_t));
    *out = s;
    return CORE_OK;
}

void lrn_pgcd_free(struct lrn_pgcd *s)
{
    if (!s)
        return;
    free(s->dt);
    free(s->m);
    free(s->colarg);
    free(s->score);
    free(s);
}

const double *lrn_pgcd_gradient(const struct lrn_pgcd *s)
{
    return s->g;
}

/* Dt = (Σ(B − I))ᵀ = (B − I)ᵀΣ (Σ symmetric), by one dgemm. */
static void data_gradient_full(struct lrn_pgcd *s, const double *B)
{
    size_t d = s->d;
    int n = (int)d;

    /* Row-major C = Bᵀ Σ gives C[j][i] = Σ_r B[r][j] Σ[r][i] = (ΣB)_ij. */
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, n, n, 1.0, B, n, s->sigma, n, 0.0,
                s->dt, n);
    for (size_t x = 0; x < d * d; x++)
        s->dt[x] -= s->sigma[x]; /* Σ symmetric: (Σ)ᵀ = Σ */
    memcpy(s->bcache, B, d * d * sizeof(double));
    s->have_cache = 1;
}

struct step_ctx {
    const double *W, *beta, *B;
    double rho2, lambda;
};

static double grad_at(const struct lrn_pgcd *s, const struct step_ctx *c, size_t i, size_t j)
{
    size_t x = i * s->d + j;
    double g = s->dt[j * s->d + i] + c->rho2 * (c->B[x] - c->W[x]);
    return c->beta ? g + c->beta[x] : g;
}

/* GS-s score (paper Eq. 8) of one entry: S = √M·|prox_{λ/M}(b − g/M) − b| with
 * g = (Dt + ρ₂(B − W)) + β, by the same operations in the same order as the per-entry
 * solver this file had before issue 9 (tests/learner/test_pgcd.c runs it as an oracle).
 * Without β, be holds +0.0; g + 0.0 differs from g only for g = −0.0, and then u = b
 * unless b = ±0, where z = 0 and the score is 0 either way: the same bits. */
static double score_one(double dt, double b, double w, double be, double rho2, double m, double lm,
                        double sqm)
{
    double g = (dt + rho2 * (b - w)) + be, u = b - g / m;
    double z = lrn_soft_threshold(u, lm);
    return sqm * fabs(z - b);
}

#if defined(__SSE2__)
/* Two rows at a time, the same IEEE operations as score_one (divpd rounds as divsd; the
 * soft-threshold is two exact selects): bit-identical, about twice the throughput. */
static size_t scores_sse2(size_t d, const double *dt, const double *bt, const double *wt,
                          const double *be, double rho2, const double *m, const double *lm,
                          const double *sqm, double *sc)
{
    const __m128d sign = _mm_set1_pd(-0.0), r2 = _mm_set1_pd(rho2), zero = _mm_setzero_pd();
    size_t i = 0;

    for (; i + 2 <= d; i += 2) {
        __m128d b = _mm_loadu_pd(bt + i), t = _mm_loadu_pd(lm + i);
        __m128d g =
            _mm_add_pd(_mm_loadu_pd(dt + i), _mm_mul_pd(r2, _mm_sub_pd(b, _mm_loadu_pd(wt + i))));
        __m128d u, gt, lt, z;
        g = _mm_add_pd(g, _mm_loadu_pd(be + i));
        u = _mm_sub_pd(b, _mm_div_pd(g, _mm_loadu_pd(m + i)));
        gt = _mm_cmpgt_pd(u, t);                   /* u > t (false on NaN, as in C) */
        lt = _mm_cmplt_pd(u, _mm_xor_pd(t, sign)); /* u < −t */
        z = _mm_or_pd(_mm_and_pd(gt, _mm_sub_pd(u, t)),
                      _mm_andnot_pd(gt, _mm_or_pd(_mm_and_pd(lt, _mm_add_pd(u, t)),
                                                  _mm_andnot_pd(lt, zero))));
        z = _mm_andnot_pd(sign, _mm_sub_pd(z, b)); /* fabs */
        _mm_storeu_pd(sc + i, _mm_mul_pd(_mm_loadu_pd(sqm + i), z));
    }
    return i;
}
#endif

/* Scores of column j into s->score, read from the transposed copies (contiguous). */
static void column_scores(struct lrn_pgcd *s, const struct step_ctx *c, size_t j)
{
    size_t d = s->d, i = 0;
    const double *dt = s->dt + j * d, *bt = s->bt + j * d, *wt = s->wt + j * d;
    const double *be = s->btt + j * d;

#if defined(__SSE2__)
    i = scores_sse2(d, dt, bt, wt, be, c->rho2, s->m, s->lm, s->sqm, s->score);
#endif
    for (; i < d; i++)
        s->score[i] = score_one(dt[i], bt[i], wt[i], be[i], c->rho2, s->m[i], s->lm[i], s->sqm[i]);
}

static void column_refresh(struct lrn_pgcd *s, const struct step_ctx *c, size_t j)
{
    double best = -1.0;
    size_t arg = j == 0 ? 1 : 0;

    column_scores(s, c, j);
    for (size_t i = 0; i < s->d; i++) {
        if (i == j)
            continue;
        if (s->score[i] > best) {
            best = s->score[i];
            arg = i;
        }
    }
    s->colmax[j] = best;
    s->colarg[j] = arg;
}

/* Bᵀ, Wᵀ and βᵀ for column_scores() (once per call, O(d²)). */
static void transpose_inputs(struct lrn_pgcd *s, const struct step_ctx *c)
{
    size_t d = s->d;
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < d; j++) {
            s->bt[j * d + i] = c->B[i * d + j];
            s->wt[j * d + i] = c->W[i * d + j];
            s->btt[j * d + i] = c->beta ? c->beta[i * d + j] : 0.0;
        }
}

static core_err check_inputs(const struct lrn_pgcd *s, const struct lrn_pgcd_opts *o,
                             const double *W, const double *beta, double rho2, const double *B)
{
    size_t d2 = s->d * s->d;

    if (!o || !W || !B || !(o->lambda >= 0.0) || !isfinite(o->lambda) || !(o->gamma > 0.0) ||
        !(o->gamma <= 1.0) || o->max_steps == 0 || !(o->tol >= 0.0) || !(rho2 >= 0.0) ||
        !isfinite(rho2) || s->d < 2)
        return CORE_EINVAL;
    for (size_t x = 0; x < d2; x++)
        if (!isfinite(W[x]) || !isfinite(B[x]) || (beta && !isfinite(beta[x])))
            return CORE_EINVAL;
    for (size_t i = 0; i < s->d; i++)
        if (!(s->sigma[i * s->d + i] + rho2 > 0.0))
            return CORE_EINVAL;
    return CORE_OK;
}

/* One coordinate update (paper Eq. 9) at (i, j); returns the change δ. */
static double update_at(struct lrn_pgcd *s, const struct step_ctx *c, const struct lrn_pgcd_opts *o,
                        double *B, size_t i, size_t j)
{
    size_t d = s->d;
    double M = s->m[i], b = B[i * d + j];
    double step = o->gamma * grad_at(s, c, i, j) / M;
    double nb = lrn_soft_threshold(b - step, s->glm[i]); /* γλ/M */
    double delta = nb - b;

    if (delta == 0.0)
        return 0.0;
    B[i * d + j] = nb;
    /* Column j of Σ(B − I) changes by δ·Σ[:,i] = δ·Σ[i,:] (symmetric): O(d). */
    cblas_daxpy((int)d, delta, s->sigma + i * d, 1, s->dt + j * d, 1);
    s->bcache[i * d + j] = nb;
    s->bt[j * d + i] = nb;
    return delta;
}

static size_t best_column(const struct lrn_pgcd *s)
{
    size_t jb = 0;
    double best = s->colmax[0]; /* in a register: no reload through the moving index */
    for (size_t j = 1; j < s->d; j++)
        if (s->colmax[j] > best) {
            best = s->colmax[j];
            jb = j;
        }
    return jb;
}

core_err lrn_pgcd_solve(struct lrn_pgcd *s, const struct lrn_pgcd_opts *o, const double *W,
                        const double *beta, double rho2, double *B, struct lrn_pgcd_stats *stats)
{
    size_t d = s->d, steps = 0, nnz = 0, j;
    struct step_ctx c = {W, beta, B, rho2, 0.0};
    core_err rc;

    rc = check_inputs(s, o, W, beta, rho2, B);
    if (rc != CORE_OK)
        return rc;
    c.lambda = o->lambda;
    for (size_t i = 0; i < d; i++) {
        B[i * d + i] = 0.0;
        s->m[i] = s->sigma[i * d + i] + rho2;
        s->sqm[i] = sqrt(s->m[i]);
        s->lm[i] = c.lambda / s->m[i];
        s->glm[i] = o->gamma * c.lambda / s->m[i];
    }
    if (!s->have_cache || memcmp(s->bcache, B, d * d * sizeof(double)) != 0)
        data_gradient_full(s, B);
    transpose_inputs(s, &c);
    for (j = 0; j < d; j++)
        column_refresh(s, &c, j);
    while (steps < o->max_steps) {
        j = best_column(s);
        if (!(s->colmax[j] > o->tol))
            break;
        if (update_at(s, &c, o, B, s->colarg[j], j) == 0.0)
            break; /* the γ-step is a fixed point: nothing left to gain here */
        column_refresh(s, &c, j);
        steps++;
    }
    for (size_t i = 0; i < d; i++)
        for (j = 0; j < d; j++) {
            double b = B[i * d + j];
            if (!isfinite(b))
                return CORE_ENUMERIC;
            nnz += b != 0.0;
            s->g[i * d + j] = grad_at(s, &c, i, j);
        }
    if (stats) {
        stats->steps = steps;
        stats->max_score = s->colmax[best_column(s)];
        stats->nnz = nnz;
    }
    return CORE_OK;
}
