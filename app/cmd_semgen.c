/* cmd_semgen.c - `gcdp sem-gen`: synthetic linear Gaussian SEM data for the learner
 * (Fed-Sparse-BNSL paper Appendix B.1), one CSV per participant plus the true DAG. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app.h"
#include "core/fsutil.h"
#include "core/mem.h"
#include "flags.h"
#include "lrn/sem.h"
#include "lrn/semio.h"

static const char semgen_help[] =
    "usage: gcdp sem-gen --out DIR [options]\n"
    "Erdos-Renyi DAG with d nodes and an expected E edges in a random topological order,\n"
    "weights U([-hi,-lo] u [lo,hi]), N(0, noise-sd^2) noise (paper Appendix B.1).\n"
    "Writes DIR/p1.csv .. DIR/pP.csv (header x0..x{d-1}, one sample per row),\n"
    "DIR/truth.json + DIR/truth.csv (true weighted DAG), and with --hetero-var also\n"
    "DIR/truth_p<k>.json (participant weights); DIR/manifest.json records the options.\n"
    "options:\n";

/* What one command line asks for. */
struct semgen_cli {
    struct lrn_sem_opts o;
    const char *dir;
    double edges, hetero_var; /* NAN: not given */
    int heterogeneous;
};

#define AT(f)  APP_FLAG_AT(struct semgen_cli, f)
#define ANY(f) APP_FLAG_DBL, AT(f), .lo = -DBL_MAX, .hi = DBL_MAX

static const struct app_flag semgen_flags[] = {
    {"out", APP_FLAG_STR, AT(dir), .metavar = "DIR",
     .help = "output directory (created if missing; required)"},
    {"d", APP_FLAG_UINT, AT(o.d), .hi = DBL_MAX, .metavar = "N",
     .help = "nodes (default 20; 2..4096)"},
    {"participants", APP_FLAG_UINT, AT(o.participants), .hi = DBL_MAX, .metavar = "P",
     .help = "participants (default 8)"},
    {"n", APP_FLAG_UINT, AT(o.n_per), .hi = DBL_MAX, .metavar = "N",
     .help = "samples per participant (default 5000)"},
    {"edges", ANY(edges), .metavar = "E", .help = "expected number of edges (default d)"},
    {"w-lo", ANY(o.w_lo), .metavar = "X, --w-hi X",
     .help = "weight magnitude range (default 0.5, 2)"},
    {"w-hi", ANY(o.w_hi)},
    {"noise-sd", ANY(o.noise_sd), .metavar = "X", .help = "noise standard deviation (default 1)"},
    {"hetero-var", ANY(hetero_var), .metavar = "V",
     .help = "heterogeneous setting: participant weight ~ N(w, V) on the\n"
             "true edges (paper B.1.2 uses 0.1; default 0 = homogeneous)"},
    {"heterogeneous", APP_FLAG_TRUE, AT(heterogeneous), .help = "shorthand for --hetero-var 0.1"},
    {"seed", APP_FLAG_UINT, AT(o.seed), .hi = DBL_MAX, .metavar = "S",
     .help = "seed of the generator (default 1)"},
    {.name = NULL},
};

#undef AT
#undef ANY

static void usage(FILE *f)
{
    fputs(semgen_help, f);
    app_flags_help(f, semgen_flags, 21, 0);
    fputs("  -h, --help           this text\n", f);
    fputs(app_common_help, f);
}

/* Returns 0, or -1 after the message. --edges defaults to d; --heterogeneous means
 * --hetero-var 0.1 unless that is given. */
static int parse_opts(int argc, char **argv, struct semgen_cli *c)
{
    int first;

    c->edges = c->hetero_var = NAN;
    first = app_flags_parse("sem-gen", semgen_flags, argc, argv, c, NULL);
    if (first < 0)
        return -1;
    c->o.expected_edges = isnan(c->edges) ? (double)c->o.d : c->edges;
    if (!isnan(c->hetero_var))
        c->o.hetero_var = c->hetero_var;
    else if (c->heterogeneous)
        c->o.hetero_var = 0.1;
    if (first < argc) {
        fprintf(stderr, "gcdp sem-gen: unexpected argument '%s'\n", argv[first]);
        return -1;
    }
    if (!c->dir) {
        fprintf(stderr, "gcdp sem-gen: --out DIR is required (see --help)\n");
        return -1;
    }
    return 0;
}

static int cmd_main(struct app_call *call)
{
    struct semgen_cli c = {.o = lrn_sem_opts_default()};
    struct lrn_sem_opts o;
    struct lrn_sem_problem *pb = NULL;
    const char *dir;
    char eb[1024] = "";
    size_t edges = 0;
    int ret = APP_EXIT_USAGE;
    core_err rc;

    if (parse_opts(call->argc, call->argv, &c) != 0)
        goto out;
    o = c.o;
    dir = c.dir;
    rc = lrn_sem_problem_new(&o, &pb);
    if (rc != CORE_OK) {
        fprintf(stderr,
                "gcdp sem-gen: invalid options (%s): need 2 <= d <= %d, P >= 1, "
                "n >= 1, 0 <= edges <= d(d-1)/2, 0 < w-lo <= w-hi, hetero-var >= 0\n",
                core_strerror(rc), LRN_SEM_MAX_D);
        goto out;
    }
    ret = APP_EXIT_FAILURE;
    if (core_mkdir_p(dir, 0) != 0) {
        fprintf(stderr, "gcdp sem-gen: cannot create %s: %s\n", dir, strerror(errno));
        goto out;
    }
    rc = lrn_sem_problem_write(dir, &o, pb, eb, sizeof(eb));
    if (rc != CORE_OK) {
        fprintf(stderr, "gcdp sem-gen: %s\n", eb);
        goto out;
    }
    for (size_t k = 0; k < o.d * o.d; k++)
        edges += pb->w[k] != 0.0;
    printf("wrote %zu participants x %zu samples, d = %zu, %zu true edges, to %s\n", o.participants,
           o.n_per, o.d, edges, dir);
    ret = APP_EXIT_OK;
out:
    lrn_sem_problem_free(pb);
    return ret;
}

const struct app_command app_cmd_semgen = {
    .name = "sem-gen",
    .summary = "generate linear Gaussian SEM data for the structure learner",
    .help = usage,
    .run = cmd_main,
};
