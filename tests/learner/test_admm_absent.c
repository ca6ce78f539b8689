/* test_admm_absent.c - a participant ABSENT from a round (solve returns CORE_ENOTFOUND,
 * lrn/admm.h; the learner services' timeout): the round goes on with those present. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "lrn/admm.h"
#include "lrn/pgcd.h"
#include "lrn/sem.h"

#define D 6
#define P 3
#define N 300

struct absent_ops {
    struct lrn_local_ops inner;
    size_t who, from; /* participant `who` is absent from round `from` on */
    size_t calls_absent;
};

static core_err absent_solve(void *self, size_t p, size_t t, const double *W, const double *beta,
                             double rho2, double *B)
{
    struct absent_ops *a = self;
    if (p == a->who && t >= a->from) {
        a->calls_absent++;
        return CORE_ENOTFOUND;
    }
    return a->inner.solve(a->inner.self, p, t, W, beta, rho2, B);
}

static void sigmas(const struct lrn_sem_problem *pb, double *sig)
{
    for (size_t p = 0; p < P; p++)
        cr_assert_eq(
            lrn_covariance_ex(N, D, pb->x + p * N * D, 1.0, LRN_COV_CENTER, sig + p * D * D),
            CORE_OK);
}

static struct lrn_sem_problem *problem(void)
{
    struct lrn_sem_opts o = lrn_sem_opts_default();
    struct lrn_sem_problem *pb = NULL;
    o.d = D;
    o.participants = P;
    o.n_per = N;
    o.expected_edges = D;
    o.seed = 11;
    cr_assert_eq(lrn_sem_problem_new(&o, &pb), CORE_OK);
    return pb;
}

static void run(size_t nP, const double *const *sp, size_t who, size_t from, double *W,
                struct lrn_admm_result *res, size_t *absent_calls)
{
    struct lrn_pgcd_opts po = {.lambda = 0.1, .gamma = 0.5, .max_steps = 1000, .tol = 1e-6};
    struct lrn_admm_opts o = lrn_admm_opts_default();
    struct lrn_pgcd_local *l = NULL;
    struct absent_ops a;

    cr_assert_eq(lrn_pgcd_local_new(D, nP, sp, &po, &l), CORE_OK);
    a.inner = lrn_pgcd_local_ops(l);
    a.who = who;
    a.from = from;
    a.calls_absent = 0;
    struct lrn_local_ops ops = {absent_solve, &a, NULL, NULL, NULL, NULL};
    cr_assert_eq(lrn_admm_run(D, nP, &ops, &o, NULL, NULL, W, NULL, res), CORE_OK);
    *absent_calls = a.calls_absent;
    lrn_pgcd_local_free(l);
}

Test(admm_absent, absent_from_round_0_is_the_run_without_that_participant)
{
    struct lrn_sem_problem *pb = problem();
    double sig[P * D * D], W3[D * D], W2[D * D];
    const double *sp[P] = {sig, sig + D * D, sig + 2 * D * D};
    struct lrn_admm_result r3, r2;
    size_t calls = 0, none = 0;

    sigmas(pb, sig);
    run(P, sp, 2, 0, W3, &r3, &calls);
    run(P - 1, sp, SIZE_MAX, 0, W2, &r2, &none);
    cr_assert_eq(calls, r3.rounds, "asked every round");
    cr_assert_eq(none, 0);
    cr_assert_eq(r3.rounds, r2.rounds);
    cr_assert_eq(r3.status, r2.status);
    for (size_t x = 0; x < D * D; x++) {
        cr_assert_eq(W3[x] != 0.0, W2[x] != 0.0, "support differs at %zu", x);
        cr_assert_float_eq(W3[x], W2[x], 1e-9, "entry %zu", x);
    }
    /* and what went over the wire is only the two present participants' traffic */
    cr_assert_eq(r3.bytes_wire, r2.bytes_wire);
    lrn_sem_problem_free(pb);
}

Test(admm_absent, absent_mid_run_finishes_and_nobody_present_is_an_error)
{
    struct lrn_sem_problem *pb = problem();
    double sig[P * D * D], W[D * D];
    const double *sp[P] = {sig, sig + D * D, sig + 2 * D * D};
    struct lrn_admm_result r;
    size_t calls = 0;

    sigmas(pb, sig);
    run(P, sp, 1, 3, W, &r, &calls);
    cr_assert_geq(r.rounds, 4);
    cr_assert_eq(calls, r.rounds - 3);
    cr_assert_eq(r.h, 0.0, "the result is a DAG");

    /* one participant only, absent from round 2: the run ends with CORE_ENOTFOUND */
    struct lrn_pgcd_opts po = {.lambda = 0.1, .gamma = 0.5, .max_steps = 1000, .tol = 1e-6};
    struct lrn_admm_opts o = lrn_admm_opts_default();
    struct lrn_pgcd_local *l = NULL;
    struct absent_ops a;
    cr_assert_eq(lrn_pgcd_local_new(D, 1, sp, &po, &l), CORE_OK);
    a.inner = lrn_pgcd_local_ops(l);
    a.who = 0;
    a.from = 2;
    a.calls_absent = 0;
    struct lrn_local_ops ops = {absent_solve, &a, NULL, NULL, NULL, NULL};
    cr_assert_eq(lrn_admm_run(D, 1, &ops, &o, NULL, NULL, W, NULL, &r), CORE_ENOTFOUND);
    lrn_pgcd_local_free(l);
    lrn_sem_problem_free(pb);
}
