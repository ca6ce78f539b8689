/* lrn/metrics.h - structure-learning accuracy and communication-cost metrics.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Graphs are d x d row-major weighted adjacencies; entry (i,j) nonzero means i -> j.
 * Definitions follow notears' count_accuracy (Zheng et al. 2018), which the paper's
 * Table 1 uses: SHD = extra skeleton edges + missing skeleton edges + reversed edges
 * (a reversal counts 1), TPR = correct / |true|, FDR = (reversed + false) / |predicted|.
 * Thread-safety: pure functions, reentrant.
 */
#ifndef LRN_METRICS_H
#define LRN_METRICS_H

#include <stddef.h>

#include "core/err.h"

/* Largest d accepted (caps the O(d^3) v-structure enumeration). */
#define LRN_METRICS_MAX_D 4096

struct lrn_metrics {
    size_t d;
    size_t true_edges;     /* |E_true| */
    size_t pred_edges;     /* |E_pred| (number of edges of the estimate) */
    size_t true_pos;       /* predicted i->j with i->j true */
    size_t reversed;       /* predicted i->j with j->i true (and i->j not true) */
    size_t false_pos;      /* predicted edges whose pair is not in the true skeleton */
    size_t extra_skel;     /* skeleton pairs predicted but not true */
    size_t missing_skel;   /* skeleton pairs true but not predicted */
    size_t shd;            /* extra_skel + missing_skel + reversed */
    double tpr;            /* true_pos / max(true_edges, 1) */
    double fdr;            /* (reversed + false_pos) / max(pred_edges, 1) */
    double fpr;            /* (reversed + false_pos) / max(d(d-1)/2 - true_edges, 1) */
    size_t skel_correct;   /* undirected pairs in both skeletons */
    double skel_recall;    /* skel_correct / max(|true skeleton|, 1) */
    double skel_precision; /* skel_correct / max(|pred skeleton|, 1) */
    size_t vs_true;        /* v-structures a->c<-b, a,b non-adjacent, in the true graph */
    size_t vs_pred;        /* same in the estimate */
    size_t vs_correct;     /* v-structures present in both */
};

/* Compare an estimate with the truth. An entry counts as an edge when |w| > thresh
 * (thresh = 0: any nonzero). NaN entries in est count as edges (fail visible, not silent).
 *   truth, est  borrowed d*d matrices. out  caller storage, fully written.
 * Returns CORE_OK, CORE_EINVAL (d = 0 or > LRN_METRICS_MAX_D, negative/NaN thresh). */
CORE_MUST_CHECK core_err lrn_metrics_compute(const double *truth, const double *est, size_t d,
                                             double thresh, struct lrn_metrics *out);

/* Normalized MSE of Appendix B.2.2: ||est - truth||_F^2 / ||truth||_F^2 over n entries.
 * Returns NaN when ||truth||_F = 0. */
double lrn_metrics_nmse(const double *est, const double *truth, size_t n);

/* Bytes per transmitted (index, value) pair in the paper's cost model (Appendix B.2.1):
 * 8 + ceil(log2(d^2) / 8). */
size_t lrn_metrics_entry_bytes(size_t d);

/* Paper Appendix B.2.1, dense model: 2 * T * P * d^2 * 8 bytes. */
double lrn_metrics_dense_cost(size_t rounds, size_t participants, size_t d);

#endif /* LRN_METRICS_H */
