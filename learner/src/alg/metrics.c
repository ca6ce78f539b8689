/* metrics.c - SHD/TPR/FDR, skeleton and v-structure metrics, communication cost model. */
#include "lrn/metrics.h"

#include <math.h>
#include <string.h>

static int is_edge(const double *w, size_t d, size_t i, size_t j, double thresh)
{
    double v = w[i * d + j];
    return i != j && (isnan(v) || fabs(v) > thresh);
}

static int adjacent(const double *w, size_t d, size_t i, size_t j, double thresh)
{
    return is_edge(w, d, i, j, thresh) || is_edge(w, d, j, i, thresh);
}

/* Is a -> c <- b a v-structure of w (a < b, a and b non-adjacent)? */
static int is_vstruct(const double *w, size_t d, size_t a, size_t b, size_t c, double t)
{
    return is_edge(w, d, a, c, t) && is_edge(w, d, b, c, t) && !adjacent(w, d, a, b, t);
}

static void count_vstructs(const double *truth, const double *est, size_t d, double t,
                           struct lrn_metrics *m)
{
    for (size_t c = 0; c < d; c++) {
        for (size_t a = 0; a < d; a++) {
            int ta, ea;
            if (a == c)
                continue;
            ta = is_edge(truth, d, a, c, 0.0);
            ea = is_edge(est, d, a, c, t);
            if (!ta && !ea)
                continue;
            for (size_t b = a + 1; b < d; b++) {
                int vt, ve;
                if (b == c)
                    continue;
                vt = ta && is_vstruct(truth, d, a, b, c, 0.0);
                ve = ea && is_vstruct(est, d, a, b, c, t);
                m->vs_true += (size_t)vt;
                m->vs_pred += (size_t)ve;
                m->vs_correct += (size_t)(vt && ve);
            }
        }
    }
}

/* Directed counts (notears count_accuracy): true_pos, reversed, false_pos, pred_edges. */
static void count_directed(const double *truth, const double *est, size_t d, double t,
                           struct lrn_metrics *m)
{
    for (size_t i = 0; i < d; i++) {
        for (size_t j = 0; j < d; j++) {
            if (is_edge(truth, d, i, j, 0.0))
                m->true_edges++;
            if (!is_edge(est, d, i, j, t))
                continue;
            m->pred_edges++;
            if (is_edge(truth, d, i, j, 0.0))
                m->true_pos++;
            else if (is_edge(truth, d, j, i, 0.0))
                m->reversed++;
            else
                m->false_pos++;
        }
    }
}

static void count_skeleton(const double *truth, const double *est, size_t d, double t,
                           struct lrn_metrics *m, size_t *skel_true, size_t *skel_pred)
{
    for (size_t i = 0; i < d; i++) {
        for (size_t j = i + 1; j < d; j++) {
            int a = adjacent(truth, d, i, j, 0.0), b = adjacent(est, d, i, j, t);
            *skel_true += (size_t)a;
            *skel_pred += (size_t)b;
            m->skel_correct += (size_t)(a && b);
            m->extra_skel += (size_t)(b && !a);
            m->missing_skel += (size_t)(a && !b);
        }
    }
}

static double ratio(size_t num, size_t den)
{
    return (double)num / (double)(den > 0 ? den : 1);
}

core_err lrn_metrics_compute(const double *truth, const double *est, size_t d, double thresh,
                             struct lrn_metrics *m)
{
    size_t skel_true = 0, skel_pred = 0, neg;

    if (d == 0 || d > LRN_METRICS_MAX_D || !(thresh >= 0.0))
        return CORE_EINVAL;
    memset(m, 0, sizeof(*m));
    m->d = d;
    count_directed(truth, est, d, thresh, m);
    count_skeleton(truth, est, d, thresh, m, &skel_true, &skel_pred);
    count_vstructs(truth, est, d, thresh, m);
    m->shd = m->extra_skel + m->missing_skel + m->reversed;
    m->tpr = ratio(m->true_pos, m->true_edges);
    m->fdr = ratio(m->reversed + m->false_pos, m->pred_edges);
    neg = d * (d - 1) / 2 > m->true_edges ? d * (d - 1) / 2 - m->true_edges : 0;
    m->fpr = ratio(m->reversed + m->false_pos, neg);
    m->skel_recall = ratio(m->skel_correct, skel_true);
    m->skel_precision = ratio(m->skel_correct, skel_pred);
    return CORE_OK;
}

/* Appendix B.2.2: MSE_p = ||B_hat - B_true||_F^2 / ||B_true||_F^2. */
double lrn_metrics_nmse(const double *est, const double *truth, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t k = 0; k < n; k++) {
        double e = est[k] - truth[k];
        num += e * e;
        den += truth[k] * truth[k];
    }
    return den > 0.0 ? num / den : NAN;
}

/* Appendix B.2.1: b_entry = 8 + ceil(log2(d^2) / 8) bytes. */
size_t lrn_metrics_entry_bytes(size_t d)
{
    size_t bits = 0;
    unsigned long long dd = (unsigned long long)d * d;
    /* ceil(log2(dd)) computed exactly in integers: bits needed to index 0..dd-1 */
    while (bits < 64 && (1ULL << bits) < dd)
        bits++;
    return 8 + (bits + 7) / 8;
}

/* Appendix B.2.1, dense exchange: Cost = 2 * T * P * d^2 * 8 bytes. */
double lrn_metrics_dense_cost(size_t rounds, size_t participants, size_t d)
{
    return 2.0 * (double)rounds * (double)participants * (double)d * (double)d * 8.0;
}
