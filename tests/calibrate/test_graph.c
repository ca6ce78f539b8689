/* test_graph.c - Algorithm 1 steps 3-8: threshold, sort with lexicographic tie break,
 * greedy symmetric degree cap, D^-1/2 W D^-1/2 with isolated nodes, exposure, min-max. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cal/graph.h"

static size_t build(size_t m, const double *s, double tau, int k, struct cal_edge *e, size_t cap)
{
    void *w = malloc(cal_graph_work_len(m));
    size_t ne = 99;
    cr_assert_eq(cal_graph_build(m, s, tau, k, e, cap, &ne, w), CORE_OK);
    free(w);
    return ne;
}

/* Three equal scores, K = 1: sorted (0,1), (0,2), (1,2) by the lexicographic tie break, so
 * only {0,1} is accepted. A reversed tie break would accept {1,2}. */
Test(graph, ties_broken_lexicographically)
{
    const double s[9] = {0, 0.5, 0.5, 0.5, 0, 0.5, 0.5, 0.5, 0};
    struct cal_edge e[4];
    size_t ne = build(3, s, 0.2, 1, e, 4);
    cr_assert_eq(ne, 1);
    cr_assert_eq(e[0].i, 0);
    cr_assert_eq(e[0].j, 1);
    cr_assert_float_eq(e[0].w, 0.5, 0.0, "w_ij = S_ij");
}

/* Higher score wins over lexicographic order; a score exactly at tau is a candidate,
 * below tau is not (and is never reinstated). */
Test(graph, sorted_by_decreasing_score_threshold_inclusive)
{
    /* S_01 = 0.3, S_23 = 0.9, S_12 = 0.2 (= tau), S_03 = 0.1999 */
    double s[16] = {0};
    s[0 * 4 + 1] = s[1 * 4 + 0] = 0.3;
    s[2 * 4 + 3] = s[3 * 4 + 2] = 0.9;
    s[1 * 4 + 2] = s[2 * 4 + 1] = 0.2;
    s[0 * 4 + 3] = s[3 * 4 + 0] = 0.1999;
    struct cal_edge e[8];
    size_t ne = build(4, s, 0.2, 1, e, 8);
    cr_assert_eq(ne, 2);
    cr_assert(e[0].i == 2 && e[0].j == 3, "0.9 first");
    cr_assert(e[1].i == 0 && e[1].j == 1, "then 0.3; {1,2} rejected by the cap");
    ne = build(4, s, 0.2, 2, e, 8);
    cr_assert_eq(ne, 3, "K=2: {1,2} at exactly tau accepted; {0,3} below tau never");
    cr_assert(e[2].i == 1 && e[2].j == 2);
}

/* deg(i) <= K for every node on random scores, and the greedy is maximal: every rejected
 * candidate has an endpoint already at K. N = 50 random matrices per K. */
Test(graph, degree_cap_guaranteed_on_random_scores)
{
    uint64_t st = 3;
    const size_t m = 40;
    double *s = calloc(m * m, sizeof(double));
    struct cal_edge *e = malloc((m * m) * sizeof(*e));
    unsigned deg[40];
    for (int k = 1; k <= 6; k++) {
        for (int rep = 0; rep < 50; rep++) {
            for (size_t i = 0; i < m; i++)
                for (size_t j = i + 1; j < m; j++) {
                    st = st * 6364136223846793005ull + 1442695040888963407ull;
                    s[i * m + j] = s[j * m + i] = (double)(st >> 40) * 0x1p-24;
                }
            size_t ne = build(m, s, 0.3, k, e, m * m);
            memset(deg, 0, sizeof(deg));
            for (size_t x = 0; x < ne; x++) {
                deg[e[x].i]++;
                deg[e[x].j]++;
                cr_assert_geq(e[x].w, 0.3);
                if (x > 0)
                    cr_assert_geq(e[x - 1].w, e[x].w, "acceptance order follows the sort");
            }
            for (size_t i = 0; i < m; i++)
                cr_assert_leq(deg[i], (unsigned)k, "deg(%zu)=%u > K=%d", i, deg[i], k);
            for (size_t i = 0; i < m; i++)
                for (size_t j = i + 1; j < m; j++) {
                    int accepted = 0;
                    for (size_t x = 0; x < ne; x++)
                        accepted |= e[x].i == i && e[x].j == j;
                    if (s[i * m + j] >= 0.3 && !accepted)
                        cr_assert(deg[i] == (unsigned)k || deg[j] == (unsigned)k,
                                  "rejected {%zu,%zu} with both endpoints below K", i, j);
                }
        }
    }
    free(s);
    free(e);
}

Test(graph, rejects_nan_scores_and_bad_parameters)
{
    double s[4] = {0, NAN, NAN, 0};
    struct cal_edge e[2];
    size_t ne;
    void *w = malloc(cal_graph_work_len(2));
    cr_assert_eq(cal_graph_build(2, s, 0.2, 1, e, 2, &ne, w), CORE_EINVAL, "NaN fails closed");
    s[1] = s[2] = 0.5;
    cr_assert_eq(cal_graph_build(2, s, 1.5, 1, e, 2, &ne, w), CORE_EINVAL, "tau > 1");
    cr_assert_eq(cal_graph_build(2, s, 0.2, 0, e, 2, &ne, w), CORE_EINVAL, "K = 0");
    free(w);
}

/* Path 0-1-2 with w01 = 0.4, w12 = 0.8, node 3 isolated, alpha = 0.7, by hand:
 * d = (0.4, 1.2, 0.8, 0); W~01 = 0.4/sqrt(0.48), W~12 = 0.8/sqrt(0.96);
 * r0 = .7(.4) + .3 W~01 (1.2); r1 = .7(1.2) + .3 (W~01 (.4) + W~12 (.8));
 * r2 = .7(.8) + .3 W~12 (1.2); r3 = 0 (zero inverse degree, no neighbours). */
Test(graph, exposure_hand_computed_with_isolated_node)
{
    const struct cal_edge e[] = {{0, 1, 0.4}, {1, 2, 0.8}};
    double deg[4], r[4], w01 = 0.4 / sqrt(0.48), w12 = 0.8 / sqrt(0.96);
    double raw[4] = {0.28 + 0.3 * w01 * 1.2, 0.84 + 0.3 * (w01 * 0.4 + w12 * 0.8),
                     0.56 + 0.3 * w12 * 1.2, 0.0};
    double hi = fmax(raw[0], fmax(raw[1], raw[2]));
    cr_assert_eq(cal_exposure(4, e, 2, 0.7, deg, r, NULL), CORE_OK);
    cr_assert_float_eq(deg[0], 0.4, 1e-15);
    cr_assert_float_eq(deg[1], 1.2, 1e-15);
    cr_assert_eq(deg[3], 0.0);
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(r[i], raw[i] / hi, 1e-12, "r_bar[%d]", i);
    cr_assert_eq(r[3], 0.0, "isolated node has the minimum exposure");
    struct cal_edge iso = {0, 3, 0.5};
    cr_assert_eq(cal_wtilde(deg, &iso), 0.0, "zero inverse degree");
}

Test(graph, exposure_all_equal_gives_zero)
{
    const struct cal_edge tri[] = {{0, 1, 0.5}, {0, 2, 0.5}, {1, 2, 0.5}};
    double r[3] = {9, 9, 9}, deg[3];
    cr_assert_eq(cal_exposure(3, tri, 3, 0.7, deg, r, NULL), CORE_OK);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(r[i], 0.0, "all-equal rule");
    cr_assert_eq(cal_exposure(3, tri, 0, 0.7, deg, r, NULL), CORE_OK, "empty graph");
    for (int i = 0; i < 3; i++)
        cr_assert_eq(r[i], 0.0);
    cr_assert_eq(cal_exposure(3, tri, 3, 1.5, deg, r, NULL), CORE_EINVAL, "alpha > 1");
}
