/* test_metrics.c - SHD/TPR/FDR, skeleton, v-structures, cost model on hand-made graphs. */
#include <math.h>

#include <criterion/criterion.h>

#include "lrn/metrics.h"

#define E(w, d, i, j, v) ((w)[(i) * (d) + (j)] = (v))

Test(metrics, identical_graphs_have_zero_shd)
{
    double t[9] = {0}, m_[9];
    struct lrn_metrics m;
    E(t, 3, 0, 1, 1.0);
    E(t, 3, 1, 2, -0.7);
    for (int k = 0; k < 9; k++)
        m_[k] = t[k];
    cr_assert_eq(lrn_metrics_compute(t, m_, 3, 0.0, &m), CORE_OK);
    cr_assert_eq(m.shd, 0);
    cr_assert_float_eq(m.tpr, 1.0, 1e-12);
    cr_assert_float_eq(m.fdr, 0.0, 1e-12);
    cr_assert_eq(m.pred_edges, 2);
}

/* truth 0->1, 1->2; estimate 0->1 (correct), 2->1 (reversed), 0->2 (extra).
 * SHD = 1 extra + 0 missing + 1 reversal = 2; TPR = 1/2; FDR = 2/3. */
Test(metrics, reversal_counts_one_and_extra_counts_one)
{
    double t[9] = {0}, e[9] = {0};
    struct lrn_metrics m;
    E(t, 3, 0, 1, 1.0);
    E(t, 3, 1, 2, 1.0);
    E(e, 3, 0, 1, 0.9);
    E(e, 3, 2, 1, 0.8);
    E(e, 3, 0, 2, 0.5);
    cr_assert_eq(lrn_metrics_compute(t, e, 3, 0.0, &m), CORE_OK);
    cr_assert_eq(m.shd, 2);
    cr_assert_eq(m.reversed, 1);
    cr_assert_eq(m.false_pos, 1);
    cr_assert_eq(m.true_pos, 1);
    cr_assert_float_eq(m.tpr, 0.5, 1e-12);
    cr_assert_float_eq(m.fdr, 2.0 / 3.0, 1e-12);
    cr_assert_eq(m.skel_correct, 2);
    cr_assert_float_eq(m.skel_recall, 1.0, 1e-12);
    cr_assert_float_eq(m.skel_precision, 2.0 / 3.0, 1e-12);
}

Test(metrics, empty_estimate_misses_every_edge)
{
    double t[16] = {0}, e[16] = {0};
    struct lrn_metrics m;
    E(t, 4, 0, 1, 1.0);
    E(t, 4, 2, 3, 1.0);
    E(t, 4, 0, 3, 1.0);
    cr_assert_eq(lrn_metrics_compute(t, e, 4, 0.0, &m), CORE_OK);
    cr_assert_eq(m.shd, 3);
    cr_assert_eq(m.missing_skel, 3);
    cr_assert_float_eq(m.tpr, 0.0, 1e-12);
    cr_assert_float_eq(m.fdr, 0.0, 1e-12); /* no prediction, no false discovery */
}

Test(metrics, threshold_drops_small_weights)
{
    double t[4] = {0, 1, 0, 0}, e[4] = {0, 1, 0.2, 0};
    struct lrn_metrics m;
    cr_assert_eq(lrn_metrics_compute(t, e, 2, 0.3, &m), CORE_OK);
    cr_assert_eq(m.shd, 0);
    cr_assert_eq(lrn_metrics_compute(t, e, 2, 0.0, &m), CORE_OK);
    cr_assert_eq(m.pred_edges, 2); /* 0->1 and 1->0 */
    cr_assert_eq(m.reversed, 1);
    cr_assert_eq(m.shd, 1); /* skeleton identical; the extra reversed arc counts once */
}

/* truth collider 0->2<-1; estimate 1: same collider (found, correct); estimate 2: adds
 * 0->1 (shielded, no longer a v-structure); estimate 3: chain 0->2->1 (none). */
Test(metrics, v_structures_are_found_and_shielded_ones_ignored)
{
    double t[9] = {0}, e[9] = {0};
    struct lrn_metrics m;
    E(t, 3, 0, 2, 1.0);
    E(t, 3, 1, 2, 1.0);
    E(e, 3, 0, 2, 1.0);
    E(e, 3, 1, 2, 1.0);
    cr_assert_eq(lrn_metrics_compute(t, e, 3, 0.0, &m), CORE_OK);
    cr_assert_eq(m.vs_true, 1);
    cr_assert_eq(m.vs_pred, 1);
    cr_assert_eq(m.vs_correct, 1);
    E(e, 3, 0, 1, 1.0);
    cr_assert_eq(lrn_metrics_compute(t, e, 3, 0.0, &m), CORE_OK);
    cr_assert_eq(m.vs_pred, 0);
    cr_assert_eq(m.vs_correct, 0);
    E(e, 3, 0, 1, 0.0);
    E(e, 3, 1, 2, 0.0);
    E(e, 3, 2, 1, 1.0);
    cr_assert_eq(lrn_metrics_compute(t, e, 3, 0.0, &m), CORE_OK);
    cr_assert_eq(m.vs_pred, 0);
    cr_assert_eq(m.reversed, 1);
}

Test(metrics, nan_entries_count_as_edges_and_bad_threshold_is_rejected)
{
    double t[4] = {0, 1, 0, 0}, e[4] = {0, 1, NAN, 0};
    struct lrn_metrics m;
    cr_assert_eq(lrn_metrics_compute(t, e, 2, 0.3, &m), CORE_OK);
    cr_assert_eq(m.pred_edges, 2);
    cr_assert_eq(lrn_metrics_compute(t, e, 2, NAN, &m), CORE_EINVAL);
    cr_assert_eq(lrn_metrics_compute(t, e, 0, 0.0, &m), CORE_EINVAL);
}

/* Appendix B.2.1: b_entry = 8 + ceil(log2(d^2)/8); dense 2*T*P*d^2*8 (5.12 MB and 512 MB
 * for the paper's Table 1 Fed-BNSL rows with T = 100, P = 8). */
Test(metrics, communication_cost_model_matches_the_paper)
{
    cr_assert_eq(lrn_metrics_entry_bytes(20), 10);  /* log2(400) = 8.6 -> 2 bytes */
    cr_assert_eq(lrn_metrics_entry_bytes(16), 9);   /* log2(256) = 8 -> 1 byte */
    cr_assert_eq(lrn_metrics_entry_bytes(200), 10); /* log2(40000) = 15.3 -> 2 bytes */
    cr_assert_eq(lrn_metrics_entry_bytes(300), 11); /* log2(90000) = 16.5 -> 3 bytes */
    cr_assert_float_eq(lrn_metrics_dense_cost(100, 8, 20), 5.12e6, 1e-6);
    cr_assert_float_eq(lrn_metrics_dense_cost(100, 8, 200), 512e6, 1e-3);
}

Test(metrics, normalized_mse_is_relative_squared_error)
{
    double t[3] = {1, 0, 2}, e[3] = {1.5, 0.5, 2};
    cr_assert_float_eq(lrn_metrics_nmse(e, t, 3), 0.5 / 5.0, 1e-12);
    cr_assert(isnan(lrn_metrics_nmse(e, (double[3]){0, 0, 0}, 3)));
}
