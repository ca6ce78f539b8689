/* cmd_learn.c - `gcdp learn`: structure learning over participant CSV files with any of the
 * learner's methods (Fed-Sparse-BNSL and the paper's baselines); writes the DAG as JSON, CSV,
 * DOT and PNG, and a metrics JSON. */
#include <float.h>
#include <math.h>
#include <stdio.h>

#include "app.h"
#include "core/pool.h"
#include "flags.h"
#include "help_texts.h"
#include "lrn/config.h"
#include "lrn/learn.h"
#include "lrn/runner.h"

#define LEARN_MAX_P LRN_LEARN_MAX_P

/* What one command line asks for. The overrides are applied after the method's defaults
 * and the learner.* keys (NAN: not given); threads and workers are this process's. */
struct learn_args {
    struct lrn_runner_opts ro;
    enum lrn_method method;
    struct lrn_runner_overrides ov;
    double threads, workers;
    struct lrn_learn_job job; /* the files, outputs and reporting flags */
    const char *ptruth[LEARN_MAX_P];
    int cov_by_p, no_center, standardize;
};

static int parse_method(void *args, const char *arg)
{
    return lrn_method_parse(arg, &((struct learn_args *)args)->method) == CORE_OK ? 0 : -1;
}

#define OV(f) APP_FLAG_DBL, APP_FLAG_AT(struct learn_args, ov.f), .hi = DBL_MAX
#define PR(f) APP_FLAG_DBL, APP_FLAG_AT(struct learn_args, f), .hi = DBL_MAX
#define A(f)  APP_FLAG_AT(struct learn_args, f)

static const struct app_flag learn_flags[] = {
    {"method", APP_FLAG_FN, .fn = parse_method},
    {"out", APP_FLAG_STR, A(job.out)},
    {"truth", APP_FLAG_STR, A(job.truth)},
    {"personalize", APP_FLAG_TRUE, A(job.personalize)},
    {"participant-truth", APP_FLAG_STRS, A(ptruth),
     .n_offset = offsetof(struct learn_args, job.n_ptruth)},
    {"min-rows", APP_FLAG_UINT, A(job.min_rows), .lo = 1, .hi = DBL_MAX},
    {"rounds", OV(rounds)},
    {"rho1", OV(rho1)},
    {"rho2", OV(rho2)},
    {"lambda", OV(lambda)},
    {"gamma", OV(gamma)},
    {"steps", OV(steps)},
    {"threshold", OV(w_threshold)},
    {"server-iters", OV(server_iters)},
    {"pgcd-tol", OV(pgcd_tol)},
    {"eps", OV(eps)},
    {"delta", OV(delta)},
    {"clip", OV(clip)},
    {"cov-bound", OV(cov_bound)},
    {"cov-by-p", APP_FLAG_TRUE, A(cov_by_p)},
    {"no-center", APP_FLAG_TRUE, A(no_center)},
    {"standardize", APP_FLAG_TRUE, A(standardize)},
    {"threads", PR(threads)},
    {"workers", PR(workers)},
    {"no-png", APP_FLAG_FALSE, A(job.png)},
    {"quiet", APP_FLAG_TRUE, A(job.quiet)},
    {"trace", APP_FLAG_TRUE, A(job.trace)},
    {.name = NULL},
};

#undef OV
#undef PR
#undef A

/* Returns 0 ok, -1 usage error. Method defaults need d, so they are set later by
 * finish_opts(). */
static int parse_args(int argc, char **argv, struct learn_args *a)
{
    int first;

    a->ov = lrn_runner_overrides_none();
    a->threads = a->workers = NAN;
    first = app_flags_parse("learn", learn_flags, argc, argv, a, NULL);
    if (first < 0)
        return -1;
    a->job.files = (const char *const *)argv + first;
    a->job.P = (size_t)(argc - first);
    a->job.ptruth = a->ptruth;
    if (a->job.P == 0 || a->job.P > LEARN_MAX_P) {
        fprintf(stderr, "gcdp learn: give 1..%d participant CSV files (see --help)\n", LEARN_MAX_P);
        return -1;
    }
    if (a->job.n_ptruth && a->job.n_ptruth != a->job.P) {
        fprintf(stderr, "gcdp learn: %zu --participant-truth files for %zu participants\n",
                a->job.n_ptruth, a->job.P);
        return -1;
    }
    return 0;
}

/* The worker pool: --workers, else learner.workers; 0 means the online CPUs, at most 8
 * (P = 8 participants at d = 20; more threads than participants only wait). */
static int make_pool(const struct core_config *cfg, double workers, struct core_pool **pool)
{
    double w = !isnan(workers) ? workers : (double)core_config_int(cfg, "learner.workers");
    size_t n = w < 1.0 ? core_pool_cpu_count(8) : (size_t)fmin(w, CORE_POOL_MAX_THREADS);

    if (n > 1 && core_pool_new(n, pool) != CORE_OK) {
        fprintf(stderr, "gcdp learn: cannot start %zu worker threads\n", n);
        return -1;
    }
    return 0;
}

/* The run's options over the defaults in a->ro: learner.* keys, then the flags; the BLAS
 * thread count. 0, or -1 after the message (a usage or configuration error). */
static int set_options(const struct core_config *cfg, struct lrn_learn *l, struct learn_args *a)
{
    double threads = a->threads;
    char eb[256];

    lrn_blas_set_threads(isnan(threads) || threads < 1 ? 1 : (int)fmin(threads, 64));
    if (lrn_learn_configure(l, cfg, &a->ro, eb, sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp learn: configuration error: %s\n", eb);
        return -1;
    }
    lrn_runner_opts_override(&a->ro, &a->ov);
    if (a->cov_by_p || !core_config_is_explicit(cfg, "learner.cov_scale"))
        a->ro.fs_cov_by_p = a->cov_by_p;
    if (a->no_center)
        a->ro.center = false;
    if (a->standardize)
        a->ro.standardize = true;
    if (!isnan(threads))
        lrn_blas_set_threads(threads < 1 ? 1 : (int)fmin(threads, 64));
    return 0;
}

static int cmd_main(struct app_call *call)
{
    const struct core_config *cfg = call->cfg;
    struct core_pool *pool = NULL;
    struct learn_args a = {.job = {.out = "learned",
                                   .min_rows = 10,
                                   .png = true,
                                   .out_f = stdout,
                                   .log_f = stderr,
                                   .prog = "gcdp learn"}};
    struct lrn_learn *l = NULL;
    char eb[8192] = ""; /* a message may name paths of up to 4096 bytes */
    int ret = APP_EXIT_USAGE;

    a.method = LRN_METHOD_FED_SPARSE;
    lrn_blas_set_threads(1); /* first: OpenBLAS's idle workers spin from load time on */
    if (parse_args(call->argc, call->argv, &a) != 0)
        goto out;
    ret = APP_EXIT_FAILURE; /* bad data is a runtime failure (exit 1), as in calibrate */
    if (make_pool(cfg, a.workers, &pool) != 0 ||
        app_exit_status("learn", lrn_learn_load(&a.job, pool, &l, eb, sizeof(eb)), eb) != 0)
        goto out;
    a.ro = lrn_runner_opts_default(a.method, lrn_learn_d(l));
    a.ro.pool = pool;
    ret = set_options(cfg, l, &a) != 0
              ? APP_EXIT_USAGE
              : app_exit_status("learn", lrn_learn_run(l, &a.ro, eb, sizeof(eb)), eb);
out:
    lrn_learn_free(l);
    core_pool_free(pool);
    return ret;
}

static const struct app_command *mode(int argc, char **argv)
{
    return learn_serve_wanted(argc, argv) ? &app_cmd_learn_serve : NULL;
}

const struct app_command app_cmd_learn = {
    .name = "learn",
    .summary = "learn a DAG from participant CSVs (Fed-Sparse-BNSL and baselines; --server)",
    .help = app_help_learn,
    .options = learn_flags,
    .run = cmd_main,
    .mode = mode,
};
