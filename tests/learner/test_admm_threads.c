/* test_admm_threads.c - the participants' local solves of a round on a thread pool (issue 9):
 * W, the round count, the stopping state and the byte counts are bit-identical for 1, 2 and
 * 3 threads, and the parallel path really ran. */
#include <string.h>

#include <criterion/criterion.h>

#include "core/pool.h"
#include "lrn/admm.h"
#include "lrn/runner.h"
#include "lrn/sem.h"

struct outcome {
    double w[12 * 12], w_raw[12 * 12];
    struct lrn_admm_result res;
    uint64_t steps;
};

/* lrn_local_ops.par_run on a core_pool that also counts its jobs */
struct counted_pool {
    struct core_pool *pool;
    size_t jobs;
};

static void counted_run(void *par, size_t n, void (*fn)(void *arg, size_t i), void *arg)
{
    struct counted_pool *cp = par;
    cp->jobs++;
    core_pool_run(cp->pool, n, fn, arg);
}

static void run_with(const struct lrn_sem_problem *pb, size_t threads, struct outcome *out,
                     size_t *jobs)
{
    size_t d = pb->d, P = pb->participants;
    struct lrn_runner_opts o = lrn_runner_opts_default(LRN_METHOD_FED_SPARSE, d);
    double *sig = malloc(P * d * d * sizeof(double));
    const double *sp[8];
    struct lrn_pgcd_local *loc = NULL;
    struct lrn_local_ops ops;
    struct counted_pool cp = {NULL, 0};

    cr_assert_leq(P, 8);
    if (threads > 1)
        cr_assert_eq(core_pool_new(threads, &cp.pool), CORE_OK);
    for (size_t p = 0; p < P; p++) {
        cr_assert_eq(lrn_covariance_ex(pb->n_per, d, pb->x + p * pb->n_per * d, 1.0, LRN_COV_CENTER,
                                       sig + p * d * d),
                     CORE_OK);
        sp[p] = sig + p * d * d;
    }
    cr_assert_eq(lrn_pgcd_local_new(d, P, sp, &o.pgcd, &loc), CORE_OK);
    ops = lrn_pgcd_local_ops(loc);
    if (threads > 1) {
        ops.par_run = counted_run;
        ops.par = &cp;
    }
    memset(out, 0, sizeof(*out));
    cr_assert_eq(lrn_admm_run(d, P, &ops, &o.admm, NULL, NULL, out->w, out->w_raw, &out->res),
                 CORE_OK);
    out->steps = lrn_pgcd_local_steps(loc);
    *jobs = cp.jobs;
    lrn_pgcd_local_free(loc);
    core_pool_free(cp.pool);
    free(sig);
}

static void expect_same(const struct outcome *a, const struct outcome *b, size_t threads)
{
    cr_assert_eq(memcmp(a->w, b->w, sizeof(a->w)), 0, "W differs with %zu threads", threads);
    cr_assert_eq(memcmp(a->w_raw, b->w_raw, sizeof(a->w_raw)), 0, "W_raw, %zu threads", threads);
    cr_assert_eq(a->res.rounds, b->res.rounds, "rounds %zu vs %zu", a->res.rounds, b->res.rounds);
    cr_assert_eq(a->res.status, b->res.status);
    cr_assert_eq(a->res.bytes_wire, b->res.bytes_wire);
    cr_assert_eq(a->res.bytes_model, b->res.bytes_model);
    cr_assert_eq(memcmp(&a->res.primal_residual, &b->res.primal_residual, sizeof(double)), 0);
    cr_assert_eq(memcmp(&a->res.dual_residual, &b->res.dual_residual, sizeof(double)), 0);
    cr_assert_eq(memcmp(&a->res.h_server, &b->res.h_server, sizeof(double)), 0);
    cr_assert_eq(a->steps, b->steps, "PGCD steps %llu vs %llu", (unsigned long long)a->steps,
                 (unsigned long long)b->steps);
}

Test(admm_threads, one_two_and_three_threads_give_identical_w_and_rounds, .timeout = 120)
{
    struct lrn_sem_opts so = lrn_sem_opts_default();
    struct lrn_sem_problem *pb = NULL;
    static struct outcome one, many;
    size_t jobs = 0;

    so.d = 12;
    so.participants = 6;
    so.n_per = 400;
    so.expected_edges = 12;
    for (uint64_t seed = 2; seed <= 4; seed++) {
        so.seed = seed;
        cr_assert_eq(lrn_sem_problem_new(&so, &pb), CORE_OK);
        run_with(pb, 1, &one, &jobs);
        cr_assert_eq(jobs, 0);
        cr_assert_gt(one.res.rounds, 1);
        for (size_t threads = 2; threads <= 3; threads++) {
            run_with(pb, threads, &many, &jobs);
            cr_assert_eq(jobs, many.res.rounds, "one parallel job per round (%zu of %zu)", jobs,
                         many.res.rounds);
            expect_same(&one, &many, threads);
        }
        lrn_sem_problem_free(pb);
        pb = NULL;
    }
}

/* Through the runner as `gcdp learn` uses it (o.pool): same W and rounds. */
Test(admm_threads, the_runner_with_a_pool_gives_the_sequential_answer, .timeout = 120)
{
    struct lrn_sem_opts so = lrn_sem_opts_default();
    struct lrn_sem_problem *pb = NULL;
    struct lrn_runner_opts o;
    struct lrn_runner_result r1, r2;
    struct core_pool *pool = NULL;
    const double *x[8];
    size_t n[8], d = 10;
    double w1[100], w2[100];
    char eb[256] = "";

    so.d = d;
    so.participants = 5;
    so.n_per = 300;
    so.seed = 7;
    cr_assert_eq(lrn_sem_problem_new(&so, &pb), CORE_OK);
    for (size_t p = 0; p < so.participants; p++) {
        x[p] = pb->x + p * so.n_per * d;
        n[p] = so.n_per;
    }
    o = lrn_runner_opts_default(LRN_METHOD_FED_SPARSE, d);
    cr_assert_eq(
        lrn_runner_run(&o, d, so.participants, x, n, NULL, NULL, NULL, w1, &r1, eb, sizeof(eb)),
        CORE_OK, "%s", eb);
    cr_assert_eq(core_pool_new(2, &pool), CORE_OK);
    o.pool = pool;
    cr_assert_eq(
        lrn_runner_run(&o, d, so.participants, x, n, NULL, NULL, NULL, w2, &r2, eb, sizeof(eb)),
        CORE_OK, "%s", eb);
    cr_assert_eq(memcmp(w1, w2, sizeof(w1)), 0);
    cr_assert_eq(r1.admm.rounds, r2.admm.rounds);
    cr_assert_eq(r1.local_steps, r2.local_steps);
    core_pool_free(pool);
    lrn_sem_problem_free(pb);
}
