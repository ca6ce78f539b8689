/* classify.c - the fixed lightweight classifier and the classify-task utility μ (gc-dp
 * Sec. 4.4: "normalized reduction in validation utility when the associated node or feature
 * group is masked"; Sec. 5.1: one fixed classifier with fixed hyperparameters). */
#include <limits.h>
#include <math.h>
#include <string.h>

#include <cblas.h>

#include "cal/influence.h"

const struct cal_lr_params cal_lr_default = {300, 0.5, 1e-4};

size_t cal_mu_classify_work_len(size_t n, size_t d, size_t nc)
{
    return 2 * n * d + 2 * d + 2 * d * nc + 3 * nc + n * nc + n;
}

double cal_macro_f1(size_t n, const int *truth, const int *pred, size_t nc)
{
    size_t tp[CAL_MAX_CLASSES] = {0}, fp[CAL_MAX_CLASSES] = {0}, fn[CAL_MAX_CLASSES] = {0};
    double sum = 0.0;
    size_t present = 0;

    if (nc > CAL_MAX_CLASSES)
        return 0.0;
    for (size_t t = 0; t < n; t++) {
        if (truth[t] == pred[t]) {
            tp[truth[t]]++;
        } else {
            fp[pred[t]]++;
            fn[truth[t]]++;
        }
    }
    for (size_t c = 0; c < nc; c++) {
        size_t den = 2 * tp[c] + fp[c] + fn[c];
        if (den == 0)
            continue; /* class absent from truth and prediction */
        present++;
        sum += 2.0 * (double)tp[c] / (double)den;
    }
    return present ? sum / (double)present : 0.0;
}

/* Workspace views. */
struct lr_ws {
    double *z, *zv, *mean, *sd, *w, *g, *b, *gb, *cw, *logit;
    int *pred;
};

static void lr_split(double *work, size_t n, size_t d, size_t nc, struct lr_ws *s)
{
    s->z = work;
    s->zv = s->z + n * d;
    s->mean = s->zv + n * d;
    s->sd = s->mean + d;
    s->w = s->sd + d;
    s->g = s->w + d * nc;
    s->b = s->g + d * nc;
    s->gb = s->b + nc;
    s->cw = s->gb + nc;
    s->logit = s->cw + nc;
    s->pred = (int *)(void *)(s->logit + n * nc); /* n doubles reserved, n ints used */
}

/* z[t*d + k] = Σ coef · x[t, a(k)], node `masked_node` set to mask when in a(k)'s nodes
 * of `mask_coord` (mask_coord == d: nothing masked). */
static void features(size_t n, const double *x, size_t ld, size_t d, const struct cal_coord *coords,
                     size_t mask_coord, double mask, double *z)
{
    const struct cal_coord *mc = mask_coord < d ? &coords[mask_coord] : NULL;
    for (size_t t = 0; t < n; t++) {
        for (size_t k = 0; k < d; k++) {
            const struct cal_coord *c = &coords[k];
            double v = 0.0;
            for (size_t a = 0; a < c->n; a++) {
                double xv = x[t * ld + c->nodes[a]];
                for (size_t u = 0; mc && u < mc->n; u++)
                    xv = mc->nodes[u] == c->nodes[a] ? mask : xv;
                v += c->coef[a] * xv;
            }
            z[t * d + k] = v;
        }
    }
}

static void standardize_with(size_t n, size_t d, double *z, const double *mean, const double *sd)
{
    for (size_t t = 0; t < n; t++)
        for (size_t k = 0; k < d; k++)
            z[t * d + k] = (z[t * d + k] - mean[k]) / sd[k];
}

/* Softmax rows of logit (n x nc) in place. */
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

static void lr_logits(const struct lr_ws *s, const double *z, size_t n, size_t d, size_t nc)
{
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)nc, (int)d, 1.0, z, (int)d,
                s->w, (int)nc, 0.0, s->logit, (int)nc);
    for (size_t t = 0; t < n; t++)
        for (size_t c = 0; c < nc; c++)
            s->logit[t * nc + c] += s->b[c];
}

/* Full-batch gradient descent on the class-weighted cross-entropy + (l2/2)|W|^2. */
static void lr_fit(const struct lr_ws *s, size_t n, size_t d, size_t nc, const int *y,
                   const struct cal_lr_params *p)
{
    memset(s->w, 0, d * nc * sizeof(double));
    memset(s->b, 0, nc * sizeof(double));
    for (int it = 0; it < p->iters; it++) {
        lr_logits(s, s->z, n, d, nc);
        softmax_rows(n, nc, s->logit);
        memset(s->gb, 0, nc * sizeof(double));
        for (size_t t = 0; t < n; t++) {
            double wt = s->cw[y[t]] / (double)n;
            for (size_t c = 0; c < nc; c++) {
                double r = (s->logit[t * nc + c] - ((size_t)y[t] == c ? 1.0 : 0.0)) * wt;
                s->logit[t * nc + c] = r;
                s->gb[c] += r;
            }
        }
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)d, (int)nc, (int)n, 1.0, s->z,
                    (int)d, s->logit, (int)nc, 0.0, s->g, (int)nc);
        for (size_t i = 0; i < d * nc; i++)
            s->w[i] -= p->step * (s->g[i] + p->l2 * s->w[i]);
        for (size_t c = 0; c < nc; c++)
            s->b[c] -= p->step * s->gb[c];
    }
}

static double lr_f1(const struct lr_ws *s, const double *z, size_t n, size_t d, size_t nc,
                    const int *y)
{
    lr_logits(s, z, n, d, nc);
    for (size_t t = 0; t < n; t++) {
        size_t best = 0;
        for (size_t c = 1; c < nc; c++)
            best = s->logit[t * nc + c] > s->logit[t * nc + best] ? c : best;
        s->pred[t] = (int)best;
    }
    return cal_macro_f1(n, y, s->pred, nc);
}

static core_err check_classify(size_t n, size_t m, size_t ld, const int *labels, size_t nc,
                               size_t n_train, size_t d, const struct cal_lr_params *p)
{
    if (n_train < 2 || n_train >= n || nc < 2 || nc > CAL_MAX_CLASSES || d == 0 || ld < m)
        return CORE_EINVAL;
    if (n > INT_MAX || d > INT_MAX || p->iters < 1 || !(p->step > 0.0) || !(p->l2 >= 0.0))
        return CORE_EINVAL;
    for (size_t t = 0; t < n; t++)
        if (labels[t] < 0 || (size_t)labels[t] >= nc)
            return CORE_EINVAL;
    return CORE_OK;
}

/* Balanced class weights n / (nc * n_c) over the training rows, and feature scaling. */
static void train_stats(const struct lr_ws *s, size_t n_tr, size_t d, size_t nc, const int *y)
{
    memset(s->cw, 0, nc * sizeof(double));
    for (size_t t = 0; t < n_tr; t++)
        s->cw[y[t]] += 1.0;
    for (size_t c = 0; c < nc; c++)
        s->cw[c] = s->cw[c] > 0.0 ? (double)n_tr / ((double)nc * s->cw[c]) : 0.0;
    for (size_t k = 0; k < d; k++) {
        double mean = 0.0, ss = 0.0;
        for (size_t t = 0; t < n_tr; t++)
            mean += s->z[t * d + k];
        mean /= (double)n_tr;
        for (size_t t = 0; t < n_tr; t++)
            ss += (s->z[t * d + k] - mean) * (s->z[t * d + k] - mean);
        s->mean[k] = mean;
        s->sd[k] = ss > 0.0 ? sqrt(ss / (double)n_tr) : 1.0;
    }
}

core_err cal_mu_classify(size_t n, size_t m, const double *x, size_t ld, const int *labels,
                         size_t nc, size_t n_train, size_t d, const struct cal_coord *coords,
                         double mask_value, const struct cal_lr_params *lr, double *mu,
                         double *f1_full, double *work)
{
    struct lr_ws s;
    size_t nv = n - n_train;
    const double *xv = x + n_train * ld;
    const int *yv = labels + n_train;
    double full, mx = 0.0;
    core_err rc = check_classify(n, m, ld, labels, nc, n_train, d, lr);

    if (rc != CORE_OK)
        return rc;
    if (!(mask_value >= 0.0 && mask_value <= 1.0))
        return CORE_EINVAL;
    lr_split(work, n, d, nc, &s);
    features(n_train, x, ld, d, coords, d, 0.0, s.z);
    train_stats(&s, n_train, d, nc, labels);
    standardize_with(n_train, d, s.z, s.mean, s.sd);
    lr_fit(&s, n_train, d, nc, labels, lr);
    features(nv, xv, ld, d, coords, d, 0.0, s.zv);
    standardize_with(nv, d, s.zv, s.mean, s.sd);
    full = lr_f1(&s, s.zv, nv, d, nc, yv);
    for (size_t k = 0; k < d; k++) {
        double drop;
        features(nv, xv, ld, d, coords, k, mask_value, s.zv);
        standardize_with(nv, d, s.zv, s.mean, s.sd);
        drop = full - lr_f1(&s, s.zv, nv, d, nc, yv);
        mu[k] = drop > 0.0 ? drop : 0.0;
        mx = mu[k] > mx ? mu[k] : mx;
    }
    for (size_t k = 0; k < d; k++) {
        mu[k] = mx > 0.0 ? mu[k] / mx : 0.0;
        if (!isfinite(mu[k]))
            return CORE_ENUMERIC;
    }
    if (f1_full)
        *f1_full = full;
    return CORE_OK;
}
