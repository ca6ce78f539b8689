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
#include "help_texts.h"
#include "lrn/sem.h"
#include "lrn/semio.h"

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
    {"out", APP_FLAG_STR, AT(dir)},
    {"d", APP_FLAG_UINT, AT(o.d), .lo = 2, .hi = LRN_SEM_MAX_D},
    {"participants", APP_FLAG_UINT, AT(o.participants), .hi = DBL_MAX},
    {"n", APP_FLAG_UINT, AT(o.n_per), .hi = DBL_MAX},
    {"edges", ANY(edges)},
    {"w-lo", ANY(o.w_lo)},
    {"w-hi", ANY(o.w_hi)},
    {"noise-sd", ANY(o.noise_sd)},
    {"hetero-var", ANY(hetero_var)},
    {"heterogeneous", APP_FLAG_TRUE, AT(heterogeneous)},
    {"seed", APP_FLAG_UINT, AT(o.seed), .hi = DBL_MAX},
    {.name = NULL},
};

#undef AT
#undef ANY

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
    .help = app_help_sem_gen,
    .options = semgen_flags,
    .run = cmd_main,
};
