/* metrics.c - AUC (Mann-Whitney), oriented AUC (gc-dp Sec. 5.3: max{AUC, 1 - AUC}), F1. */
#include <math.h>
#include <stdlib.h>

#include "core/mem.h"
#include "eval/eval.h"

struct sl {
    double s;
    int l;
};

static int cmp_sl(const void *a, const void *b)
{
    const struct sl *x = a, *y = b;
    return (x->s > y->s) - (x->s < y->s);
}

/* AUC = (R_pos - n_pos (n_pos + 1) / 2) / (n_pos n_neg), R_pos = sum of the positives' ranks
 * with tied scores sharing the mean rank (so a tie counts 1/2). */
double eval_auc(size_t n, const double *score, const int *label)
{
    struct sl *v;
    double npos = 0.0, nneg = 0.0, rsum = 0.0;
    size_t i = 0;

    if (n == 0)
        return NAN;
    v = core_xmalloc(n * sizeof(*v));
    for (size_t t = 0; t < n; t++) {
        v[t].s = score[t];
        v[t].l = label[t] != 0;
        npos += v[t].l;
    }
    nneg = (double)n - npos;
    if (npos == 0.0 || nneg == 0.0) {
        free(v);
        return NAN;
    }
    qsort(v, n, sizeof(*v), cmp_sl);
    while (i < n) {
        size_t j = i;
        double pos_in_tie = 0.0, mean_rank;
        while (j < n && v[j].s == v[i].s)
            j++;
        for (size_t k = i; k < j; k++)
            pos_in_tie += v[k].l;
        mean_rank = ((double)(i + 1) + (double)j) / 2.0; /* ranks i+1..j */
        rsum += pos_in_tie * mean_rank;
        i = j;
    }
    free(v);
    return (rsum - npos * (npos + 1.0) / 2.0) / (npos * nneg);
}

double eval_auc_oriented(double auc)
{
    if (isnan(auc))
        return auc;
    return auc >= 0.5 ? auc : 1.0 - auc;
}

double eval_f1_class(size_t n, const int *truth, const int *pred, int positive)
{
    size_t tp = 0, fp = 0, fn = 0;
    for (size_t t = 0; t < n; t++) {
        int tr = truth[t] == positive, pr = pred[t] == positive;
        tp += tr && pr;
        fp += !tr && pr;
        fn += tr && !pr;
    }
    if (2 * tp + fp + fn == 0)
        return 0.0;
    return 2.0 * (double)tp / (double)(2 * tp + fp + fn);
}
