/* test_notears.c - centralized NOTEARS (augmented Lagrangian + OWL-QN). */
#include <math.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "lrn/acyclic.h"
#include "lrn/admm.h"
#include "lrn/metrics.h"
#include "lrn/notears.h"
#include "lrn/sem.h"

/* Collider + chain 0->2<-1, 2->3, 3->4 with n = 20000 samples: NOTEARS (lambda 0.1,
 * threshold 0.3) finds it exactly (equal noise variances make it identifiable). */
Test(notears, recovers_a_small_dag_from_its_covariance, .timeout = 60)
{
    enum { D = 5, N = 20000 };
    double w[D * D] = {0}, est[D * D], sig[D * D], h = 1;
    double *x = malloc((size_t)N * D * sizeof(double));
    size_t scratch[LRN_SEM_SCRATCH(D)], work[2 * D];
    struct core_prng r;
    struct lrn_notears_opts o = lrn_notears_opts_default();
    struct lrn_notears_result res;
    struct lrn_metrics m;
    struct lrn_acyclic_ws *ws = NULL;
    w[0 * D + 2] = 1.2;
    w[1 * D + 2] = -0.9;
    w[2 * D + 3] = 1.5;
    w[3 * D + 4] = -0.7;
    core_prng_seed(&r, 17);
    cr_assert_eq(lrn_sem_sample(w, D, N, 1.0, &r, x, scratch), CORE_OK);
    cr_assert_eq(lrn_covariance(N, D, x, 1.0, sig), CORE_OK);
    cr_assert_eq(lrn_notears_run(D, sig, &o, est, &res), CORE_OK);
    cr_assert_eq(lrn_metrics_compute(w, est, D, 0.0, &m), CORE_OK);
    cr_assert_eq(m.shd, 0, "SHD %zu", m.shd);
    cr_assert(lrn_graph_is_dag(D, est, work));
    cr_assert_eq(lrn_acyclic_ws_new(D, &ws), CORE_OK);
    cr_assert_eq(lrn_acyclic_h(ws, est, &h, NULL), CORE_OK);
    cr_assert_lt(h, 1e-12);
    cr_assert_float_eq(est[2 * D + 3], 1.5, 0.1); /* weights close, l1-shrunk slightly */
    cr_assert_gt(res.outer, 0);
    lrn_acyclic_ws_free(ws);
    free(x);
}

Test(notears, rejects_bad_options_and_input)
{
    double sig[4] = {1, 0, 0, 1}, est[4];
    struct lrn_notears_opts o = lrn_notears_opts_default();
    o.lambda = NAN;
    cr_assert_eq(lrn_notears_run(2, sig, &o, est, NULL), CORE_EINVAL);
    o = lrn_notears_opts_default();
    sig[1] = INFINITY;
    cr_assert_eq(lrn_notears_run(2, sig, &o, est, NULL), CORE_EINVAL);
    sig[1] = 0;
    cr_assert_eq(lrn_notears_run(0, sig, &o, est, NULL), CORE_EINVAL);
}

/* Independent variables: nothing to learn, the result must be empty. */
Test(notears, independent_variables_give_an_empty_graph)
{
    double sig[9] = {1, 0.001, 0, 0.001, 2, 0, 0, 0, 0.5}, est[9];
    struct lrn_notears_opts o = lrn_notears_opts_default();
    cr_assert_eq(lrn_notears_run(3, sig, &o, est, NULL), CORE_OK);
    for (int k = 0; k < 9; k++)
        cr_assert_eq(est[k], 0.0);
}
