/* logreg.c - the fixed lightweight classifier / attacker of gc-dp Sec. 5.1 and 5.3:
 * multinomial logistic regression, standardized features (training mean/sd), zero init,
 * full-batch gradient descent on the class-weighted cross-entropy + (l2/2)|W|^2, balanced
 * class weights n / (C n_c). Hyperparameters: cal_lr_default (the calibrate stage's μ
 * classifier uses the same ones; its implementation is private to calibrate/src/alg). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "core/mem.h"
#include "eval/eval.h"

static void softmax_rows(size_t n, size_t nc, double *logit)
{
    for (size_t t = 0; t < n; t++) {
        double *r = logit + t * nc, mx = r[0], sum = 0.0;
        for (size_t c = 1; c < nc; c++)
            mx = r[c] > mx ? r[c] : mx;
        for (size_t c = 0; c < nc; c++) {
            r[c] = exp(r[c] - mx);
            sum += r[c];
        }
        for (size_t c = 0; c < nc; c++)
            r[c] /= sum;
    }
}

/* z (n x d, standardized copy of x) */
static void standardize(const struct eval_lr *m, size_t n, const double *x, size_t ld, double *z)
{
    for (size_t t = 0; t < n; t++)
        for (size_t k = 0; k < m->d; k++)
            z[t * m->d + k] = (x[t * ld + k] - m->mean[k]) / m->sd[k];
}

static void logits(const struct eval_lr *m, size_t n, const double *z, double *lg)
{
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)m->nc, (int)m->d, 1.0, z,
                (int)m->d, m->w, (int)m->nc, 0.0, lg, (int)m->nc);
    for (size_t t = 0; t < n; t++)
        for (size_t c = 0; c < m->nc; c++)
            lg[t * m->nc + c] += m->b[c];
}

/* Per-feature mean and population sd (1 for a constant feature) of x's n rows into m. */
static void feature_moments(struct eval_lr *m, size_t n, const double *x, size_t ld)
{
    for (size_t k = 0; k < m->d; k++) {
        double mean = 0.0, ss = 0.0;
        for (size_t t = 0; t < n; t++)
            mean += x[t * ld + k];
        mean /= (double)n;
        for (size_t t = 0; t < n; t++)
            ss += (x[t * ld + k] - mean) * (x[t * ld + k] - mean);
        m->mean[k] = mean;
        m->sd[k] = ss > 0.0 ? sqrt(ss / (double)n) : 1.0;
    }
}

/* Balanced class weights cw[c] = n / (nc * count of c) (0 for an absent class). */
static void class_weights(size_t n, const int *y, size_t nc, double *cw)
{
    for (size_t t = 0; t < n; t++)
        cw[y[t]] += 1.0;
    for (size_t c = 0; c < nc; c++)
        cw[c] = cw[c] > 0.0 ? (double)n / ((double)nc * cw[c]) : 0.0;
}

/* Workspace of the gradient steps. */
struct lr_work {
    double *z;  /* n x d standardized features */
    double *lg; /* n x nc logits, then probabilities, then weighted residuals */
    double *g;  /* d x nc weight gradient */
    double *gb; /* nc bias gradient */
    double *cw; /* nc class weights */
};

/* One full-batch gradient step on the weighted cross-entropy with L2 on the weights. */
static void gradient_step(struct eval_lr *m, size_t n, const int *y, const struct cal_lr_params *p,
                          const struct lr_work *w)
{
    size_t d = m->d, nc = m->nc;

    logits(m, n, w->z, w->lg);
    softmax_rows(n, nc, w->lg);
    memset(w->gb, 0, nc * sizeof(double));
    for (size_t t = 0; t < n; t++) {
        double wt = w->cw[y[t]] / (double)n;
        for (size_t c = 0; c < nc; c++) {
            double r = (w->lg[t * nc + c] - ((size_t)y[t] == c ? 1.0 : 0.0)) * wt;
            w->lg[t * nc + c] = r;
            w->gb[c] += r;
        }
    }
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)d, (int)nc, (int)n, 1.0, w->z, (int)d,
                w->lg, (int)nc, 0.0, w->g, (int)nc);
    for (size_t i = 0; i < d * nc; i++)
        m->w[i] -= p->step * (w->g[i] + p->l2 * m->w[i]);
    for (size_t c = 0; c < nc; c++)
        m->b[c] -= p->step * w->gb[c];
}

core_err eval_lr_fit(size_t n, size_t d, const double *x, size_t ld, const int *y, size_t nc,
                     const struct cal_lr_params *p, struct eval_lr *m)
{
    struct lr_work w;

    memset(m, 0, sizeof(*m));
    if (n < 2 || d == 0 || ld < d || nc < 2 || nc > EVAL_MAX_CLASSES || n > INT_MAX ||
        d > INT_MAX || p->iters < 1 || !(p->step > 0.0) || !(p->l2 >= 0.0))
        return CORE_EINVAL;
    for (size_t t = 0; t < n; t++)
        if (y[t] < 0 || (size_t)y[t] >= nc)
            return CORE_EINVAL;
    m->d = d;
    m->nc = nc;
    m->w = core_xcalloc(d * nc, sizeof(double));
    m->b = core_xcalloc(nc, sizeof(double));
    m->mean = core_xcalloc(d, sizeof(double));
    m->sd = core_xcalloc(d, sizeof(double));
    feature_moments(m, n, x, ld);
    w.z = core_xmalloc(n * d * sizeof(double));
    w.lg = core_xmalloc(n * nc * sizeof(double));
    w.g = core_xmalloc(d * nc * sizeof(double));
    w.gb = core_xmalloc(nc * sizeof(double));
    w.cw = core_xcalloc(nc, sizeof(double));
    standardize(m, n, x, ld, w.z);
    class_weights(n, y, nc, w.cw);
    for (int it = 0; it < p->iters; it++)
        gradient_step(m, n, y, p, &w);
    free(w.z);
    free(w.lg);
    free(w.g);
    free(w.gb);
    free(w.cw);
    for (size_t i = 0; i < d * nc; i++)
        if (!isfinite(m->w[i])) {
            eval_lr_free(m);
            return CORE_ENUMERIC;
        }
    return CORE_OK;
}

void eval_lr_proba(const struct eval_lr *m, size_t n, const double *x, size_t ld, double *proba)
{
    double *z = core_xmalloc((n ? n : 1) * m->d * sizeof(double));
    standardize(m, n, x, ld, z);
    logits(m, n, z, proba);
    softmax_rows(n, m->nc, proba);
    free(z);
}

void eval_lr_predict(const struct eval_lr *m, size_t n, const double *x, size_t ld, int *pred)
{
    double *pr = core_xmalloc((n ? n : 1) * m->nc * sizeof(double));
    eval_lr_proba(m, n, x, ld, pr);
    for (size_t t = 0; t < n; t++) {
        size_t best = 0;
        for (size_t c = 1; c < m->nc; c++)
            best = pr[t * m->nc + c] > pr[t * m->nc + best] ? c : best;
        pred[t] = (int)best;
    }
    free(pr);
}

void eval_lr_free(struct eval_lr *m)
{
    if (!m)
        return;
    free(m->w);
    free(m->b);
    free(m->mean);
    free(m->sd);
    memset(m, 0, sizeof(*m));
}
