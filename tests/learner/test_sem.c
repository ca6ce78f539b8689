/* test_sem.c - synthetic SEM generator (paper Appendix B.1). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "lrn/sem.h"

Test(sem, same_seed_gives_same_stream_and_different_seed_differs)
{
    struct core_prng a, b, c;
    int differ = 0;
    core_prng_seed(&a, 42);
    core_prng_seed(&b, 42);
    core_prng_seed(&c, 43);
    for (int i = 0; i < 100; i++) {
        uint64_t x = core_prng_next(&a);
        cr_assert_eq(x, core_prng_next(&b));
        differ |= x != core_prng_next(&c);
    }
    cr_assert(differ);
}

/* N = 400000 normals: se(mean) = 0.0016, se(var) ~ 0.0022; thresholds at > 5 se. */
Test(sem, normal_draws_have_unit_variance_and_zero_mean)
{
    struct core_prng r;
    double s = 0, s2 = 0;
    const int n = 400000;
    core_prng_seed(&r, 7);
    for (int i = 0; i < n; i++) {
        double z = core_prng_normal(&r);
        s += z;
        s2 += z * z;
    }
    cr_assert_lt(fabs(s / n), 0.01);
    cr_assert_lt(fabs(s2 / n - 1.0), 0.012);
}

/* 300 graphs, d = 20: edges ~ Binomial(190, 20/190), sd 4.35 per graph, 0.25 for the mean;
 * threshold 1.25 (5 sd). Every weight in [0.5, 2] in magnitude, both signs, no cycle. */
Test(sem, er_dag_has_expected_edge_count_weights_in_range_and_no_cycle)
{
    struct lrn_sem_opts o = lrn_sem_opts_default();
    struct core_prng r;
    double w[400];
    size_t order[20], scratch[40], total = 0, neg = 0;
    const int graphs = 300;
    core_prng_seed(&r, 11);
    for (int g = 0; g < graphs; g++) {
        cr_assert_eq(lrn_sem_dag(&o, &r, w), CORE_OK);
        cr_assert_eq(lrn_sem_topo_order(w, 20, order, scratch), CORE_OK);
        for (size_t k = 0; k < 400; k++) {
            if (w[k] == 0.0)
                continue;
            cr_assert_neq(k / 20, k % 20, "self loop");
            cr_assert(fabs(w[k]) >= 0.5 && fabs(w[k]) <= 2.0, "weight %g", w[k]);
            total++;
            neg += w[k] < 0.0;
        }
    }
    cr_assert_lt(fabs((double)total / graphs - 20.0), 1.25, "mean edges %g",
                 (double)total / graphs);
    /* sign ~ Bernoulli(1/2) over ~6000 edges: sd 0.0065; threshold 0.04 */
    cr_assert_lt(fabs((double)neg / (double)total - 0.5), 0.04);
}

Test(sem, topo_order_rejects_a_cycle)
{
    double w[9] = {0, 1, 0, 0, 0, 1, 1, 0, 0};
    size_t order[3], scratch[6];
    cr_assert_eq(lrn_sem_topo_order(w, 3, order, scratch), CORE_EINVAL);
}

/* x0 = z0, x1 = 1.5 x0 + z1: var x0 = 1, var x1 = 3.25, cov = 1.5. N = 200000:
 * se(cov) ~ 0.004, se(var x1) ~ 0.01; thresholds 0.03 and 0.06. */
Test(sem, samples_follow_the_linear_sem_covariance)
{
    double w[4] = {0, 1.5, 0, 0}, c00 = 0, c01 = 0, c11 = 0;
    const size_t n = 200000;
    double *x = malloc(n * 2 * sizeof(double));
    size_t scratch[LRN_SEM_SCRATCH(2)];
    struct core_prng r;
    core_prng_seed(&r, 5);
    cr_assert_eq(lrn_sem_sample(w, 2, n, 1.0, &r, x, scratch), CORE_OK);
    for (size_t i = 0; i < n; i++) {
        c00 += x[2 * i] * x[2 * i];
        c01 += x[2 * i] * x[2 * i + 1];
        c11 += x[2 * i + 1] * x[2 * i + 1];
    }
    cr_assert_lt(fabs(c00 / (double)n - 1.0), 0.03);
    cr_assert_lt(fabs(c01 / (double)n - 1.5), 0.03);
    cr_assert_lt(fabs(c11 / (double)n - 3.25), 0.06);
    free(x);
}

/* Heterogeneous weights: zeros stay zero; perturbation variance 0.1 (N = 20000 draws on
 * 2 edges: se of the variance ~ 0.001; threshold 0.01). */
Test(sem, perturbation_keeps_support_and_has_the_requested_variance)
{
    double w[9] = {0, 1.0, 0, 0, 0, -1.0, 0, 0, 0}, wp[9], s2 = 0;
    struct core_prng r;
    const int n = 10000;
    core_prng_seed(&r, 3);
    for (int i = 0; i < n; i++) {
        lrn_sem_perturb(w, 3, 0.1, &r, wp);
        for (int k = 0; k < 9; k++)
            if (w[k] == 0.0)
                cr_assert_eq(wp[k], 0.0);
        s2 += (wp[1] - 1.0) * (wp[1] - 1.0) + (wp[5] + 1.0) * (wp[5] + 1.0);
    }
    cr_assert_lt(fabs(s2 / (2.0 * n) - 0.1), 0.01);
}

Test(sem, problem_is_reproducible_from_its_seed)
{
    struct lrn_sem_opts o = lrn_sem_opts_default();
    struct lrn_sem_problem *a = NULL, *b = NULL;
    o.d = 8;
    o.participants = 3;
    o.n_per = 50;
    o.expected_edges = 8;
    o.hetero_var = 0.1;
    o.seed = 9;
    cr_assert_eq(lrn_sem_problem_new(&o, &a), CORE_OK);
    cr_assert_eq(lrn_sem_problem_new(&o, &b), CORE_OK);
    cr_assert_eq(memcmp(a->w, b->w, 64 * sizeof(double)), 0);
    cr_assert_eq(memcmp(a->x, b->x, 3 * 50 * 8 * sizeof(double)), 0);
    cr_assert_eq(memcmp(a->w_p, b->w_p, 3 * 64 * sizeof(double)), 0);
    lrn_sem_problem_free(a);
    lrn_sem_problem_free(b);
}

Test(sem, rejects_invalid_options)
{
    struct lrn_sem_opts o = lrn_sem_opts_default();
    struct lrn_sem_problem *pb = NULL;
    o.d = 1;
    cr_assert_eq(lrn_sem_problem_new(&o, &pb), CORE_EINVAL);
    o = lrn_sem_opts_default();
    o.expected_edges = NAN;
    cr_assert_eq(lrn_sem_problem_new(&o, &pb), CORE_EINVAL);
    o = lrn_sem_opts_default();
    o.expected_edges = 1000; /* > d(d-1)/2 = 190 */
    cr_assert_eq(lrn_sem_problem_new(&o, &pb), CORE_EINVAL);
    cr_assert_null(pb);
}
