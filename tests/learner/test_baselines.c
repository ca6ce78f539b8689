/* test_baselines.c - Fed-BNSL local solver, DP covariance, OLS personalisation, and the
 * runner's federated baselines end to end on small synthetic problems. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <lapacke.h>

#include "core/dp_rng.h"
#include "lrn/baselines.h"
#include "lrn/metrics.h"
#include "lrn/runner.h"
#include "lrn/sem.h"

static void random_spd(size_t d, struct core_prng *r, double *s)
{
    double a[64];
    for (size_t k = 0; k < d * d; k++)
        a[k] = core_prng_normal(r);
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < d; j++) {
            double v = i == j ? 0.5 : 0.0;
            for (size_t k = 0; k < d; k++)
                v += a[k * d + i] * a[k * d + j] / (double)d;
            s[i * d + j] = v;
        }
}

/* KKT of min 1/2 tr(B^T A B) - tr(R^T B) s.t. diag(B) = 0 with A = Sigma + rho I,
 * R = rho W - beta + Sigma: (A B - R)_ij = 0 for every i != j, B_jj = 0. */
Test(baselines, fedbnsl_local_step_is_the_constrained_minimiser)
{
    enum { D = 6 };
    double s[D * D], w[D * D], beta[D * D], b[D * D], rho = 0.7;
    const double *sp[1] = {s};
    struct lrn_fedbnsl_local *l = NULL;
    struct lrn_local_ops ops;
    struct core_prng r;
    core_prng_seed(&r, 21);
    random_spd(D, &r, s);
    for (size_t k = 0; k < D * D; k++) {
        w[k] = k % (D + 1) ? core_prng_normal(&r) : 0.0;
        beta[k] = 0.3 * core_prng_normal(&r);
        b[k] = 0.0;
    }
    cr_assert_eq(lrn_fedbnsl_local_new(D, 1, sp, &l), CORE_OK);
    ops = lrn_fedbnsl_local_ops(l);
    cr_assert_eq(ops.solve(ops.self, 0, 0, w, beta, rho, b), CORE_OK);
    for (size_t i = 0; i < D; i++) {
        cr_assert_eq(b[i * D + i], 0.0);
        for (size_t j = 0; j < D; j++) {
            double ab = rho * b[i * D + j];
            if (i == j)
                continue;
            for (size_t k = 0; k < D; k++)
                ab += s[i * D + k] * b[k * D + j];
            cr_assert_float_eq(ab, rho * w[i * D + j] - beta[i * D + j] + s[i * D + j], 1e-10,
                               "KKT (%zu,%zu)", i, j);
        }
    }
    /* a changed rho refactors: the result must change */
    {
        double b2[D * D];
        memcpy(b2, b, sizeof(b));
        cr_assert_eq(ops.solve(ops.self, 0, 1, w, beta, 5.0, b2), CORE_OK);
        cr_assert_neq(memcmp(b, b2, sizeof(b)), 0);
    }
    lrn_fedbnsl_local_free(l);
}

Test(baselines, fedbnsl_local_rejects_bad_input)
{
    double s[4] = {0, 0, 0, 0}, w[4] = {0}, b[4] = {0};
    const double *sp[1] = {s};
    struct lrn_fedbnsl_local *l = NULL;
    struct lrn_local_ops ops;
    cr_assert_eq(lrn_fedbnsl_local_new(0, 1, sp, &l), CORE_EINVAL);
    cr_assert_eq(lrn_fedbnsl_local_new(2, 1, sp, &l), CORE_OK);
    ops = lrn_fedbnsl_local_ops(l);
    cr_assert_eq(ops.solve(ops.self, 0, 0, w, NULL, NAN, b), CORE_EINVAL);
    cr_assert_eq(ops.solve(ops.self, 0, 0, w, NULL, 0.0, b), CORE_ENUMERIC); /* singular */
    lrn_fedbnsl_local_free(l);
}

static struct lrn_sem_problem *small_problem(size_t d, size_t P, size_t n, double hv, uint64_t seed)
{
    struct lrn_sem_opts o = lrn_sem_opts_default();
    struct lrn_sem_problem *pb = NULL;
    o.d = d;
    o.expected_edges = (double)d;
    o.participants = P;
    o.n_per = n;
    o.hetero_var = hv;
    o.seed = seed;
    cr_assert_eq(lrn_sem_problem_new(&o, &pb), CORE_OK);
    return pb;
}

/* Heterogeneous weights (variance 0.1), n = 20000 per participant: OLS on the true DAG has
 * NMSE ~ d/n relative error, far below 0.01; the shared weights are off by the N(0, 0.1)
 * perturbation, NMSE of order 0.1 / E[w^2] ~ 0.05 (> 0.01). */
Test(baselines, ols_refit_recovers_participant_weights)
{
    struct lrn_sem_problem *pb = small_problem(8, 2, 20000, 0.1, 4);
    size_t d = 8;
    double sig[64], out[64], work[72];
    for (size_t p = 0; p < 2; p++) {
        const double *wp = pb->w_p + p * 64;
        cr_assert_eq(lrn_covariance(20000, d, pb->x + p * 20000 * d, 1.0, sig), CORE_OK);
        cr_assert_eq(lrn_personalize_ols(d, sig, pb->w, out, work), CORE_OK);
        cr_assert_lt(lrn_metrics_nmse(out, wp, 64), 0.01);
        cr_assert_gt(lrn_metrics_nmse(pb->w, wp, 64), lrn_metrics_nmse(out, wp, 64));
        for (size_t k = 0; k < 64; k++)
            if (pb->w[k] == 0.0)
                cr_assert_eq(out[k], 0.0);
    }
    lrn_sem_problem_free(pb);
}

/* eps = 1000, delta = 1e-8, n = 10000, b = 1000 (> every row norm^2 here, so no clipping):
 * L2 sensitivity sqrt(2) b / n = 0.141; the analytic Gaussian sigma at this eps is ~0.0036
 * (it scales like sensitivity / sqrt(2 eps) for large eps). Threshold 0.03 (> 8 sigma) on
 * each of the 15 entries; symmetric by construction. */
Test(baselines, dp_covariance_is_symmetric_and_close_at_huge_eps)
{
    struct lrn_sem_problem *pb = small_problem(5, 1, 10000, 0.0, 8);
    double s[25], e[25], work[15];
    cr_assert_eq(lrn_dp_covariance(10000, 5, pb->x, 1000.0, 1000.0, 1e-8, core_rng_os(), s, work),
                 CORE_OK);
    cr_assert_eq(lrn_covariance(10000, 5, pb->x, 1.0, e), CORE_OK);
    for (size_t i = 0; i < 5; i++)
        for (size_t j = 0; j < 5; j++) {
            cr_assert_eq(s[i * 5 + j], s[j * 5 + i]);
            cr_assert_lt(fabs(s[i * 5 + j] - e[i * 5 + j]), 0.03);
        }
    lrn_sem_problem_free(pb);
}

/* Clipping to ||x||^2 <= b bounds the trace of the covariance by b (up to tiny noise). */
Test(baselines, dp_covariance_clips_rows_and_rejects_bad_bound)
{
    struct lrn_sem_problem *pb = small_problem(5, 1, 10000, 0.0, 8);
    double s[25], work[15], tr = 0;
    cr_assert_eq(lrn_dp_covariance(10000, 5, pb->x, 0.5, 1000.0, 1e-8, core_rng_os(), s, work),
                 CORE_OK);
    for (size_t i = 0; i < 5; i++)
        tr += s[i * 5 + i];
    cr_assert_leq(tr, 0.5 + 0.01);
    cr_assert_eq(lrn_dp_covariance(10000, 5, pb->x, NAN, 1.0, 1e-8, core_rng_os(), s, work),
                 CORE_EINVAL);
    for (size_t k = 0; k < 25; k++)
        cr_assert_eq(s[k], 0.0, "failure must zero the output");
    lrn_sem_problem_free(pb);
}

static struct lrn_metrics run_method(enum lrn_method m, const struct lrn_sem_problem *pb,
                                     struct lrn_runner_result *res)
{
    size_t d = pb->d, n[8];
    const double *x[8];
    double *w = calloc(8 * d * d, sizeof(double));
    struct lrn_runner_opts o = lrn_runner_opts_default(m, d);
    struct lrn_metrics met;
    char eb[256] = "";
    for (size_t p = 0; p < pb->participants; p++) {
        x[p] = pb->x + p * pb->n_per * d;
        n[p] = pb->n_per;
    }
    cr_assert_eq(lrn_runner_run(&o, d, pb->participants, x, n, core_rng_os(), NULL, NULL, w, res,
                                eb, sizeof(eb)),
                 CORE_OK, "%s: %s", lrn_method_name(m), eb);
    cr_assert_eq(lrn_metrics_compute(pb->w, w, d, 0.0, &met), CORE_OK);
    free(w);
    return met;
}

/* d = 10, P = 4, n_p = 2000 (seed 6): both federated methods and pooled NOTEARS recover the
 * DAG (SHD <= 2 for Fed-BNSL and NOTEARS; <= 4 for Fed-Sparse-BNSL, whose PGCD/ADMM with
 * the paper defaults reverses an edge or two on this small problem); Fed-BNSL's cost is
 * exactly the dense model 2*T*P*d^2*8 bytes and Fed-Sparse-BNSL sends less. */
Test(baselines, federated_methods_recover_a_small_dag, .timeout = 120)
{
    struct lrn_sem_problem *pb = small_problem(10, 4, 2000, 0.0, 6);
    struct lrn_runner_result rs, rb, rn;
    struct lrn_metrics ms = run_method(LRN_METHOD_FED_SPARSE, pb, &rs);
    struct lrn_metrics mb = run_method(LRN_METHOD_FED_BNSL, pb, &rb);
    struct lrn_metrics mn = run_method(LRN_METHOD_NOTEARS, pb, &rn);
    cr_assert_leq(ms.shd, 4, "fed-sparse SHD %zu", ms.shd); /* 12 true edges */
    cr_assert_leq(mb.shd, 2, "fed-bnsl SHD %zu", mb.shd);
    cr_assert_leq(mn.shd, 2, "notears SHD %zu", mn.shd);
    cr_assert_eq(rb.admm.bytes_model, (uint64_t)lrn_metrics_dense_cost(rb.admm.rounds, 4, 10));
    cr_assert_lt(rs.admm.bytes_model, rb.admm.bytes_model);
    lrn_sem_problem_free(pb);
}

Test(baselines, local_notears_learns_one_graph_per_participant, .timeout = 120)
{
    struct lrn_sem_problem *pb = small_problem(6, 3, 3000, 0.0, 12);
    size_t d = 6, n[3] = {3000, 3000, 3000};
    const double *x[3] = {pb->x, pb->x + 3000 * d, pb->x + 6000 * d};
    double *w = calloc(3 * d * d, sizeof(double));
    struct lrn_runner_opts o = lrn_runner_opts_default(LRN_METHOD_LOCAL_NOTEARS, d);
    struct lrn_runner_result res;
    struct lrn_metrics m;
    char eb[256] = "";
    cr_assert_eq(lrn_runner_run(&o, d, 3, x, n, NULL, NULL, NULL, w, &res, eb, sizeof(eb)), CORE_OK,
                 "%s", eb);
    for (size_t p = 0; p < 3; p++) {
        cr_assert_eq(lrn_metrics_compute(pb->w, w + p * d * d, d, 0.0, &m), CORE_OK);
        cr_assert_leq(m.shd, 2, "participant %zu SHD %zu", p, m.shd);
    }
    free(w);
    lrn_sem_problem_free(pb);
}

Test(baselines, method_names_round_trip)
{
    enum lrn_method m;
    for (int k = 0; k < LRN_METHOD_COUNT; k++) {
        cr_assert_eq(lrn_method_parse(lrn_method_name((enum lrn_method)k), &m), CORE_OK);
        cr_assert_eq((int)m, k);
    }
    cr_assert_eq(lrn_method_parse("fed-sparse-bnsl", &m), CORE_EINVAL);
}

/* eps = 0.1, n = 200, b = 10: sensitivity 0.07, noise sd ~ 3 dominates the covariance, so
 * the raw noisy matrix is indefinite; the released one must be PSD (min eigenvalue >= -1e-9). */
Test(baselines, dp_covariance_is_positive_semidefinite_under_heavy_noise)
{
    struct lrn_sem_problem *pb = small_problem(6, 1, 200, 0.0, 10);
    double s[36], work[21], ev[6];
    cr_assert_eq(lrn_dp_covariance(200, 6, pb->x, 10.0, 0.1, 1e-5, core_rng_os(), s, work),
                 CORE_OK);
    cr_assert_eq(LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'N', 'U', 6, s, 6, ev), 0);
    cr_assert_geq(ev[0], -1e-9, "min eigenvalue %g", ev[0]);
    lrn_sem_problem_free(pb);
}
