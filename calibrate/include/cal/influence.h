/* cal/influence.h - empirical influence ξ̂ (gc-dp Sec. 4.3) and utility μ (Sec. 4.4) on
 * public (or, in private mode, protected-then-noised) calibration data.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Pure numerical code (STYLE P9): caller-supplied workspace, no I/O. Matrices row-major.
 *
 * Query model (our choice where the paper is general): coordinate k is the linear
 * combination q_k = Σ_{a∈a(k)} coef_a · mean_t x_{t,a} of node aggregates of the normalized
 * calibration matrix (x ∈ [0,1]); its fixed projection Π_k clips to
 * [L_k, U_k] = [Σ min(coef,0), Σ max(coef,0)]. The mask M_i replaces node i's values by a
 * fixed public value (calibrate.mask_value, default 0.5 = midpoint of the normalized range).
 *
 * Thread-safety: reentrant.
 */
#ifndef CAL_INFLUENCE_H
#define CAL_INFLUENCE_H

#include <stddef.h>
#include <stdint.h>

#include "cal/theta.h"
#include "core/err.h"

/* Adjacency (CSR) of the accepted graph with W~ weights (Algorithm 1 step 5). */
struct cal_adj {
    size_t m;
    size_t *ptr;   /* m + 1 */
    uint32_t *nbr; /* 2 * n_edges */
    double *wt;    /* 2 * n_edges, W~_ij */
};

/* Build the CSR from edges and weighted degrees (cal_exposure's deg). Arrays caller-owned:
 * ptr m+1, nbr and wt 2*n_edges each. Returns CORE_OK or CORE_EINVAL. */
CORE_MUST_CHECK core_err cal_adj_build(size_t m, const struct cal_edge *edges, size_t n_edges,
                                       const double *deg, size_t *ptr, uint32_t *nbr, double *wt);

/* Node aggregates agg[j] = mean_t x[t*ld + j] over n rows. */
void cal_node_means(size_t n, size_t m, const double *x, size_t ld, double *agg);

/* Sec. 4.3 parameters. */
struct cal_xi_params {
    double gamma;      /* expansion γ >= 0 */
    double tau_c;      /* compression threshold in [0,1] on the similarity S */
    double kappa;      /* inflation >= 1 */
    double g_max;      /* cap > 0 */
    double mask_value; /* fixed mask value in [0,1] */
};

/* Compressed set C_k (Sec. 4.3): the graph neighbours of a(k), visited by decreasing
 * exposure with ascending node index as tie break; a node is kept unless its similarity
 * S with an already kept node is >= tau_c (one representative per similar pair).
 *   s      m x m similarity (the released/public score matrix S).
 *   out    capacity m; n_out receives |C_k|.
 *   work   cal_xi_work_len(m) bytes. */
size_t cal_xi_work_len(size_t m);
CORE_MUST_CHECK core_err cal_compress_set(const struct cal_adj *adj, const double *s,
                                          const double *r_bar, double tau_c,
                                          const struct cal_coord *c, uint32_t *out, size_t *n_out,
                                          void *work);

/* ξ̂_k = min{g_max, κ max_{i∈a(k)} [δ_ik + γ r̄_i Σ_{j∈C_k} W~_ij δ_jk]} (Sec. 4.3), with
 * δ_ik = |Π_k(q_k(D)) − Π_k(q_k(M_i(D)))| from the node aggregates agg.
 *   coords  d coordinates (a(k), coefficients); xi out: d values in [0, g_max].
 *   work    cal_xi_work_len(m) bytes.
 * Returns CORE_OK, CORE_EINVAL (parameters), CORE_ENUMERIC. */
CORE_MUST_CHECK core_err cal_xi_hat(size_t d, const struct cal_coord *coords, const double *agg,
                                    const struct cal_adj *adj, const double *s, const double *r_bar,
                                    const struct cal_xi_params *p, double *xi, void *work);

/* μ for the aggregate task: μ_k = w_k / max_j w_j (public weights w_k >= 0; all zero -> μ = 0).
 * Returns CORE_OK or CORE_EINVAL (negative / non-finite weight). */
CORE_MUST_CHECK core_err cal_mu_aggregate(size_t d, const double *weights, double *mu);

/* The fixed lightweight classifier: multinomial logistic regression on standardized
 * features, zero init, full-batch gradient descent with fixed step, iterations and L2,
 * balanced class weights. Chosen once; never tuned per run. */
struct cal_lr_params {
    int iters;   /* 300 */
    double step; /* 0.5 */
    double l2;   /* 1e-4 */
};
extern const struct cal_lr_params cal_lr_default;

#define CAL_MAX_CLASSES 64

/* Doubles of workspace cal_mu_classify needs. */
size_t cal_mu_classify_work_len(size_t n, size_t d, size_t nc);

/* μ for the classify task (Sec. 4.4): features z_{t,k} = Σ coef x_{t,a(k)}; rows
 * [0, n_train) train the classifier, [n_train, n) validate; F1_full = validation macro-F1;
 * for each k, the nodes a(k) are masked (set to mask_value) in the validation rows, the
 * features recomputed and F1_k measured; drop_k = max(0, F1_full − F1_k) and
 * μ_k = drop_k / max_j drop_j (all drops 0 -> μ = 0).
 *   x        n x m normalized matrix (ld), borrowed; labels n values in [0, n_classes).
 *   f1_full  out (may be NULL): the unmasked validation macro-F1.
 * Returns CORE_OK, CORE_EINVAL (n_train < 2 or n - n_train < 1, bad labels),
 * CORE_ENUMERIC. */
CORE_MUST_CHECK core_err cal_mu_classify(size_t n, size_t m, const double *x, size_t ld,
                                         const int *labels, size_t n_classes, size_t n_train,
                                         size_t d, const struct cal_coord *coords,
                                         double mask_value, const struct cal_lr_params *lr,
                                         double *mu, double *f1_full, double *work);

/* Bounded validation utility U(D, tau) ∈ [0,1] used to choose τ (Sec. 4.2 requires only a
 * bounded utility; the paper's full-pipeline F1 needs release and noise, so we use this
 * graph-only proxy, our choice): how well each node is predicted, on validation rows, by
 * the W-weighted mean of its graph neighbours (isolated nodes: the fixed mask value):
 * U = 1 − mean_{t,m} |x_tm − x̂_tm|, x normalized to [0,1]. ΔU <= 1 because U ∈ [0,1].
 *   x     n validation rows (ld), normalized; work: 2*m doubles. */
CORE_MUST_CHECK core_err cal_tau_utility(size_t n, size_t m, const double *x, size_t ld,
                                         const struct cal_edge *edges, size_t n_edges,
                                         double mask_value, double *u, double *work);

/* Macro-F1 over the classes present in truth or prediction. */
double cal_macro_f1(size_t n, const int *truth, const int *pred, size_t nc);

#endif /* CAL_INFLUENCE_H */
