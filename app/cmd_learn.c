/* cmd_learn.c - `gcdp learn`: structure learning over participant CSV files with any of the
 * learner's methods (Fed-Sparse-BNSL and the paper's baselines); writes the DAG as JSON, CSV,
 * DOT and PNG, and a metrics JSON. */
#include <float.h>
#include <math.h>
#include <stdio.h>

#include "app.h"
#include "core/pool.h"
#include "flags.h"
#include "lrn/config.h"
#include "lrn/learn.h"
#include "lrn/runner.h"

#define LEARN_MAX_P LRN_LEARN_MAX_P

static const char learn_help[] =
    "usage: gcdp learn [options] P1.csv P2.csv ...\n"
    "       gcdp learn --server | --participant ID  (services: --server --help)\n"
    "Learn one DAG from participant CSV files (one sample per row, same columns in every\n"
    "file, optional header line; see `gcdp sem-gen`).\n"
    "options:\n";

/* the rest of the help (one string would pass the 4095 bytes C99 promises) */
static const char learn_help_more[] =
    "Progress (stderr, one line per ADMM round): round, h(W~) of the server's minimiser,\n"
    "primal and dual residuals, support changes, edges, bytes so far. The run stops when\n"
    "the residuals and h(W~) are under learner.primal_tol / dual_tol / h_tol and the\n"
    "support has not changed for learner.stable_rounds rounds, or after --rounds (then\n"
    "reported as NOT converged in the summary and metrics).\n"
    "dp-fed-sparse(-mangold) privatise the smoothness constants M by default (learner.dp.\n"
    "eps_m = 1.25 on top of --eps, learner.dp.m_bound = 100); the reported eps includes\n"
    "it. --set learner.dp.m_source=exact uses exact M as the paper's experiments: the run\n"
    "is then NOT end-to-end private (eps reported as infinite, private: false).\n"
    "learner.* configuration keys (`gcdp config keys`) given in a file, the environment or\n"
    "--set override the defaults above; the flags override both.\n";

static const char learn_help_exit[] =
    "exit status: 0 ok; 1 runtime failure (a data or truth file that cannot be read or\n"
    "parsed, a failed run); 2 usage or configuration error.\n\n";

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
    {"method", APP_FLAG_FN, .fn = parse_method, .metavar = "M",
     .help = "fed-sparse (default) | dp-fed-sparse | fed-bnsl | dp-fed-bnsl |\n"
             "notears (centralized, pooled data) | local-notears (per participant)\n"
             "| dp-fed-sparse-mangold (DP-PGCD of Mangold et al. 2023: Laplace +\n"
             "advanced composition, same defaults as dp-fed-sparse; Appendix C.4)"},
    {"out", APP_FLAG_STR, A(job.out), .metavar = "PREFIX",
     .help = "outputs PREFIX.json, PREFIX.csv, PREFIX.dot, PREFIX.png,\n"
             "PREFIX.metrics.json (default: learned); local-notears and\n"
             "--personalize add PREFIX.p<k>.* per participant"},
    {"truth", APP_FLAG_STR, A(job.truth), .metavar = "FILE",
     .help = "true DAG (sem-gen truth.json, or a CSV adjacency): SHD/TPR/FDR,\n"
             "skeleton and v-structure metrics, and a coloured picture"},
    {"personalize", APP_FLAG_TRUE, A(job.personalize),
     .help = "refit the weights per participant by OLS on the learned DAG"},
    {"participant-truth", APP_FLAG_STRS, A(ptruth),
     .n_offset = offsetof(struct learn_args, job.n_ptruth), .metavar = "FILE",
     .flags = APP_FLAG_HELP_INLINE,
     .help = "true weights of participant k (repeat in file order):\n"
             "normalized MSE with and without personalization"},
    {"min-rows", APP_FLAG_UINT, A(job.min_rows), .lo = 1, .hi = DBL_MAX, .metavar = "N",
     .help = "minimum data rows per file (default 10)"},
    {"rounds", OV(rounds), .metavar = "T",
     .help = "ADMM round cap T_max (default: 100; dp methods: paper Table 7\n"
             "by d); the run stops earlier when it converges (below)"},
    {"rho1", OV(rho1), .metavar = "X --rho2 X",
     .help = "ADMM penalties (fed-sparse default 1000 and 1; fed-bnsl: the\n"
             "notears-admm schedule from 1e-3 growing x1.75 / x1.25 per round)"},
    {"rho2", OV(rho2)},
    {"lambda", OV(lambda), .metavar = "X",
     .help = "l1 weight (fed-sparse 0.1; notears 0.1; dp-fed-sparse Table 7)"},
    {"gamma", OV(gamma), .metavar = "X",
     .help = "PGCD step (fed-sparse 0.5; dp-fed-sparse Table 7)"},
    {"steps", OV(steps), .metavar = "K",
     .help = "PGCD / DP-PGCD coordinate steps per round (fed-sparse 1000;\n"
             "dp-fed-sparse Table 7 by d)"},
    {"threshold", OV(w_threshold), .metavar = "X",
     .help = "final |w| pruning threshold (default 0.3)"},
    {"server-iters", OV(server_iters), .metavar = "N",
     .help = "server L-BFGS iteration cap per round (default: the ADMM\n"
             "driver's, lrn_admm_opts_default())"},
    {"pgcd-tol", OV(pgcd_tol), .metavar = "X",
     .help = "stop a PGCD call early when the best score <= X (default 1e-6)"},
    {"eps", OV(eps), .metavar = "X",
     .help = "privacy budget per participant for dp-* methods (default 10)"},
    {"delta", OV(delta), .metavar = "X", .help = "delta (default 1/n_p^2)"},
    {"clip", OV(clip), .metavar = "C", .help = "DP-PGCD clipping threshold (default Table 7 by d)"},
    {"cov-bound", OV(cov_bound), .metavar = "B",
     .help = "DP-Fed-BNSL row bound ||x||^2 <= B (default Table 7 by d)"},
    {"cov-by-p", APP_FLAG_TRUE, A(cov_by_p),
     .help = "fed-sparse: local loss uses X^T X / (n_p P) (notears-admm scaling)"},
    {"no-center", APP_FLAG_TRUE, A(no_center),
     .help = "do not centre each participant's columns (default: centred;\n"
             "non-private methods; DP methods never centre, see docs)"},
    {"standardize", APP_FLAG_TRUE, A(standardize),
     .help = "also scale each participant's columns to unit variance"},
    {"threads", PR(threads), .metavar = "N",
     .help = "OpenBLAS threads (default 1; more rarely helps below d = 200)"},
    {"workers", PR(workers), .metavar = "N",
     .help = "threads that read the files and run the participants' local\n"
             "solves (fed-sparse) in parallel (default learner.workers = 0:\n"
             "online CPUs, at most 8; 1: none); same result for any N"},
    {"no-png", APP_FLAG_FALSE, A(job.png), .help = "do not run graphviz"},
    {"quiet", APP_FLAG_TRUE, A(job.quiet), .help = "no per-round progress lines"},
    {"trace", APP_FLAG_TRUE, A(job.trace),
     .help = "per-round diagnostic line instead: h of the sent W and of the\n"
             "server's W~, residuals, support changes, largest dual on entries\n"
             "a participant did not receive, rho1, alpha, nonzeros up/down"},
    {.name = NULL},
};

#undef OV
#undef PR
#undef A

static void usage(FILE *f)
{
    fputs(learn_help, f);
    app_flags_help(f, learn_flags, 18, 0);
    fputs("  -h, --help        this text\n", f);
    fputs(learn_help_more, f);
    fputs(learn_help_exit, f);
    fputs(app_common_help, f);
}

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
    .help = usage,
    .run = cmd_main,
    .mode = mode,
};
