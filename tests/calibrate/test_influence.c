/* test_influence.c - ξ̂ (Sec. 4.3: masking, C_k with τ_c and the exposure tie break, κ,
 * g_max, multi-node coordinates), μ (Sec. 4.4: aggregate weights, classify), τ utility. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cal/graph.h"
#include "cal/influence.h"

/* Fixture: 3 nodes, edges {0,1} w .6, {1,2} w .9; S02 = .95 (similar, not an edge). */
struct fx {
    struct cal_edge e[2];
    double deg[3], s[9], r[3];
    size_t ptr[4];
    uint32_t nbr[4];
    double wt[4];
    struct cal_adj adj;
};

static void fx_init(struct fx *f)
{
    double rbar_tmp[3];
    f->e[0] = (struct cal_edge){0, 1, 0.6};
    f->e[1] = (struct cal_edge){1, 2, 0.9};
    cr_assert_eq(cal_exposure(3, f->e, 2, 0.7, f->deg, rbar_tmp, NULL), CORE_OK);
    memset(f->s, 0, sizeof(f->s));
    f->s[1] = f->s[3] = 0.6;
    f->s[5] = f->s[7] = 0.9;
    f->s[2] = f->s[6] = 0.95;
    f->r[0] = 1.0;
    f->r[1] = 0.5;
    f->r[2] = 0.0;
    cr_assert_eq(cal_adj_build(3, f->e, 2, f->deg, f->ptr, f->nbr, f->wt), CORE_OK);
    f->adj = (struct cal_adj){3, f->ptr, f->nbr, f->wt};
}

static struct cal_coord coord(size_t n, uint32_t *nodes, double *coef)
{
    struct cal_coord c = {(char *)"c", n, nodes, coef};
    return c;
}

Test(influence, compression_keeps_higher_exposure_of_a_similar_pair)
{
    struct fx f;
    uint32_t nodes[] = {0, 1}, out[3];
    double coef[] = {1, 1};
    struct cal_coord c = coord(2, nodes, coef);
    size_t n = 0;
    void *w = malloc(cal_xi_work_len(3));
    fx_init(&f);
    /* neighbours of {0,1} = {0,1,2}; by exposure 0 (1.0), 1 (.5), 2 (0); S20 = .95 >= .85 */
    cr_assert_eq(cal_compress_set(&f.adj, f.s, f.r, 0.85, &c, out, &n, w), CORE_OK);
    cr_assert_eq(n, 2);
    cr_assert(out[0] == 0 && out[1] == 1);
    /* equal exposure: the smaller index is the representative */
    f.r[2] = 1.0;
    cr_assert_eq(cal_compress_set(&f.adj, f.s, f.r, 0.85, &c, out, &n, w), CORE_OK);
    cr_assert_eq(n, 2);
    cr_assert(out[0] == 0 && out[1] == 1, "2 ties with 0 on exposure and loses on index");
    /* τ_c = 1: nothing is similar enough, all neighbours kept */
    cr_assert_eq(cal_compress_set(&f.adj, f.s, f.r, 1.0, &c, out, &n, w), CORE_OK);
    cr_assert_eq(n, 3);
    free(w);
}

/* By hand (agg = .8, .4, .1; mask .5; γ 1.2; W~01 = .6/sqrt(.6*1.5)):
 * identity coordinate on node 0: δ00 = .3, C = {1}, δ10 = 0 -> ξ = .3.
 * q = x0 + x1 (range [0,2]): q = 1.2, masks give .9 and 1.3 -> δ0 = .3, δ1 = .1; C = {0,1};
 * i=0: .3 + 1.2*1.0*(W~01*.1); i=1: .1 + 1.2*.5*(W~01*.3); ξ = max. */
Test(influence, xi_hat_hand_computed_single_and_multi_node)
{
    struct fx f;
    const double agg[] = {0.8, 0.4, 0.1};
    uint32_t n0[] = {0}, n01[] = {0, 1};
    double c1[] = {1}, c11[] = {1, 1}, xi[2];
    struct cal_coord cs[2];
    struct cal_xi_params p = {1.2, 0.85, 1.0, 1.0, 0.5};
    void *w = malloc(cal_xi_work_len(3));
    double w01 = 0.6 / sqrt(0.6 * 1.5);
    fx_init(&f);
    cs[0] = coord(1, n0, c1);
    cs[1] = coord(2, n01, c11);
    cr_assert_eq(cal_xi_hat(2, cs, agg, &f.adj, f.s, f.r, &p, xi, w), CORE_OK);
    cr_assert_float_eq(xi[0], 0.3, 1e-15);
    cr_assert_float_eq(xi[1], fmax(0.3 + 1.2 * w01 * 0.1, 0.1 + 0.6 * w01 * 0.3), 1e-15);
    p.kappa = 3.0; /* 3 * .3759 > 1 = g_max */
    cr_assert_eq(cal_xi_hat(2, cs, agg, &f.adj, f.s, f.r, &p, xi, w), CORE_OK);
    cr_assert_float_eq(xi[0], 0.9, 1e-15, "inflated by kappa");
    cr_assert_eq(xi[1], 1.0, "capped at g_max");
    p.kappa = 0.5;
    cr_assert_eq(cal_xi_hat(2, cs, agg, &f.adj, f.s, f.r, &p, xi, w), CORE_EINVAL, "kappa < 1");
    free(w);
}

Test(influence, mu_aggregate_normalizes_public_weights)
{
    const double w[] = {2, 0, 4, 1}, z[] = {0, 0}, bad[] = {1, -1};
    double mu[4];
    cr_assert_eq(cal_mu_aggregate(4, w, mu), CORE_OK);
    cr_assert_float_eq(mu[0], 0.5, 1e-15);
    cr_assert_eq(mu[2], 1.0);
    cr_assert_float_eq(mu[3], 0.25, 1e-15);
    cr_assert_eq(cal_mu_aggregate(2, z, mu), CORE_OK);
    cr_assert_eq(mu[0], 0.0, "all-zero weights give zero utility");
    cr_assert_eq(cal_mu_aggregate(2, bad, mu), CORE_EINVAL);
}

Test(influence, macro_f1_hand_computed)
{
    const int truth[] = {0, 0, 1, 1}, pred[] = {0, 1, 1, 1};
    /* class 0: tp 1, fp 0, fn 1 -> 2/3; class 1: tp 2, fp 1, fn 0 -> 4/5 */
    cr_assert_float_eq(cal_macro_f1(4, truth, pred, 3), (2.0 / 3.0 + 0.8) / 2.0, 1e-15,
                       "class 2 absent from truth and prediction is not averaged");
}

/* Labels depend on node 0 only: masking node 0 destroys the classifier, masking the noise
 * nodes does not. N = 600 rows, 70 % train. */
Test(influence, mu_classify_ranks_the_informative_node_first)
{
    enum { N = 600, M = 3 };
    double *x = malloc(N * M * sizeof(double)), mu[M], f1 = 0.0;
    int *y = malloc(N * sizeof(int));
    uint32_t nodes[M] = {0, 1, 2};
    double one[M] = {1, 1, 1};
    struct cal_coord cs[M];
    uint64_t st = 11;
    double *work = malloc(cal_mu_classify_work_len(N, M, 2) * sizeof(double));
    for (size_t t = 0; t < N; t++) {
        for (size_t j = 0; j < M; j++) {
            st = st * 6364136223846793005ull + 1442695040888963407ull;
            x[t * M + j] = (double)(st >> 11) * 0x1p-53;
        }
        y[t] = x[t * M] > 0.5;
    }
    for (size_t k = 0; k < M; k++)
        cs[k] = coord(1, &nodes[k], &one[k]);
    cr_assert_eq(cal_mu_classify(N, M, x, M, y, 2, 420, M, cs, 0.5, &cal_lr_default, mu, &f1, work),
                 CORE_OK);
    cr_assert_gt(f1, 0.9, "validation macro-F1 %g", f1);
    cr_assert_eq(mu[0], 1.0, "the informative node has the largest drop");
    cr_assert_lt(mu[1], 0.2);
    cr_assert_lt(mu[2], 0.2);
    y[0] = 5;
    cr_assert_eq(cal_mu_classify(N, M, x, M, y, 2, 420, M, cs, 0.5, &cal_lr_default, mu, &f1, work),
                 CORE_EINVAL, "label out of range");
    free(x), free(y), free(work);
}

Test(influence, tau_utility_bounded_and_hand_computed)
{
    const double x[] = {0.2, 0.2, 0.9, 0.9}; /* two identical columns, two rows */
    const struct cal_edge e = {0, 1, 0.7};
    double u = -1, work[4];
    cr_assert_eq(cal_tau_utility(2, 2, x, 2, &e, 1, 0.5, &u, work), CORE_OK);
    cr_assert_float_eq(u, 1.0, 1e-15, "neighbours predict exactly");
    cr_assert_eq(cal_tau_utility(2, 2, x, 2, &e, 0, 0.5, &u, work), CORE_OK);
    cr_assert_float_eq(u, 1.0 - (0.3 + 0.3 + 0.4 + 0.4) / 4.0, 1e-15, "isolated: mask value");
}
