/* cmd_eval.c - `gcdp eval`: the GC-DP paper's evaluation protocol (eval/eval.h). */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "eval/eval.h"
#include "flags.h"
#include "help_texts.h"

/* What one command line asks for: the run options and the alternative modes. */
struct eval_cli {
    struct eval_opts o;
    const char *tables_from, *md, *rebuild7;
    bool figure7;
    long window_min; /* 0: not given */
};

static int take_exposure(void *cli, const char *arg)
{
    if (eval_expo_parse(arg, &((struct eval_cli *)cli)->o.expo) == CORE_OK)
        return 0;
    fprintf(stderr, "gcdp eval: --exposure minmax|maxnorm\n");
    return -2;
}

static int take_xi(void *cli, const char *arg)
{
    if (eval_xi_parse(arg, &((struct eval_cli *)cli)->o.xi) == CORE_OK)
        return 0;
    fprintf(stderr, "gcdp eval: --xi literal|neighbour\n");
    return -2;
}

/* --m-list: node counts, integers in 2..EVAL_MAX_NODES. */
static int take_m_list(void *cli, const char *arg)
{
    struct eval_opts *o = &((struct eval_cli *)cli)->o;
    double ms[16];
    size_t n = 0;

    if (app_flag_parse_doubles(arg, 2, EVAL_MAX_NODES, ms, 16, &n) != 0) {
        fprintf(stderr, "gcdp eval: --m-list: comma-separated node counts in 2..%d (<= 16)\n",
                EVAL_MAX_NODES);
        return -2;
    }
    for (size_t i = 0; i < n; i++) {
        if (ms[i] != floor(ms[i])) {
            fprintf(stderr, "gcdp eval: --m-list: integers in 2..%d\n", EVAL_MAX_NODES);
            return -2;
        }
        o->scale_m[i] = (size_t)ms[i];
    }
    o->n_scale_m = n;
    return 0;
}

#define AT(f) APP_FLAG_AT(struct eval_cli, f)
#define N(f)  .n_offset = offsetof(struct eval_cli, f)

static const struct app_flag eval_flags[] = {
    {"dataset", APP_FLAG_STR, AT(o.dataset)},
    {"data", APP_FLAG_STR, AT(o.data_dir)},
    {"out", APP_FLAG_STR, AT(o.out_dir)},
    {"eps", APP_FLAG_DBLS, AT(o.eps), N(o.n_eps), .hi = DBL_MAX, .flags = APP_FLAG_OPEN_LO},
    {"draws", APP_FLAG_INT, AT(o.draws), .lo = 1, .hi = 1000},
    {"tune-draws", APP_FLAG_INT, AT(o.tune_draws), .lo = 1, .hi = 1000},
    {"seed", APP_FLAG_UINT, AT(o.seed), .hi = DBL_MAX},
    {"delta", APP_FLAG_DBL, AT(o.delta), .hi = 0.5, .flags = APP_FLAG_OPEN_LO | APP_FLAG_OPEN_HI},
    {"tau-grid", APP_FLAG_DBLS, AT(o.tau_grid), N(o.n_tau), .hi = DBL_MAX,
     .flags = APP_FLAG_OPEN_LO},
    {"exposure", APP_FLAG_FN, .fn = take_exposure},
    {"sensor", APP_FLAG_STR, AT(o.sensor)},
    {"window-min", APP_FLAG_INT, AT(window_min), .lo = 1, .hi = 1000},
    {"no-ablations", APP_FLAG_FALSE, AT(o.ablations)},
    {"no-runtime", APP_FLAG_FALSE, AT(o.runtime)},
    {"no-plots", APP_FLAG_FALSE, AT(o.plots)},
    {"no-tau-sweep", APP_FLAG_FALSE, AT(o.tau_sweep)},
    {"quiet", APP_FLAG_TRUE, AT(o.quiet), .short_name = 'q'},
    {"tables-from", APP_FLAG_STR, AT(tables_from)},
    {"md", APP_FLAG_STR, AT(md)},
    {"xi", APP_FLAG_FN, .fn = take_xi},
    {"eps-cal", APP_FLAG_DBL, AT(o.eps_cal), .hi = 100, .flags = APP_FLAG_OPEN_LO},
    {"figure7", APP_FLAG_TRUE, AT(figure7)},
    {"runtime-scaling", APP_FLAG_TRUE, AT(figure7)},
    {"m-list", APP_FLAG_FN, .fn = take_m_list},
    {"windows", APP_FLAG_UINT, AT(o.scale_windows), .lo = 20, .hi = 1000000},
    {"reps", APP_FLAG_INT, AT(o.scale_reps), .lo = 1, .hi = 1000},
    {"rebuild-figure7", APP_FLAG_STR, AT(rebuild7)},
    {.name = NULL},
};

#undef AT
#undef N

/* Parse argv into cli (options defaulted first). Returns APP_EXIT_OK or APP_EXIT_USAGE. */
static int parse_args(int argc, char **argv, struct eval_cli *cli)
{
    memset(cli, 0, sizeof(*cli));
    eval_opts_default(&cli->o);
    if (app_flags_parse_only("eval", eval_flags, argc, argv, cli, NULL) != 0)
        return APP_EXIT_USAGE;
    if (cli->window_min > 0)
        cli->o.window_ms = (int64_t)cli->window_min * 60000;
    return APP_EXIT_OK;
}

/* --tables-from F [--md M]: tables.md beside F unless --md names one. */
static int run_tables_from(const char *tables_from, const char *md)
{
    char mdp[4200], eb[1024] = "";

    if (!md) {
        const char *sl = strrchr(tables_from, '/');
        snprintf(mdp, sizeof(mdp), "%.*stables.md", sl ? (int)(sl - tables_from + 1) : 0,
                 tables_from);
        md = mdp;
    }
    if (eval_tables_from_csv(tables_from, md, eb, sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp eval: %s\n", eb);
        return APP_EXIT_FAILURE;
    }
    return APP_EXIT_OK;
}

/* The evaluation of one dataset (data directory defaulted from its name). */
static int run_dataset(struct eval_opts *o)
{
    char data_dir[4096], eb[1024] = "";

    if (!o->data_dir && strcmp(o->dataset, "csv") == 0) {
        fprintf(stderr, "gcdp eval: --dataset csv needs --data DATASET.json\n");
        return APP_EXIT_USAGE;
    }
    if (!o->data_dir) {
        snprintf(data_dir, sizeof(data_dir), "../shared/data/%s", o->dataset);
        o->data_dir = data_dir;
    }
    return app_exit_status("eval", eval_run(o, eb, sizeof(eb)), eb);
}

static int cmd_main(struct app_call *call)
{
    struct eval_cli cli;
    char eb[1024] = "";
    core_err rc;
    int st;

    st = parse_args(call->argc, call->argv, &cli);
    if (st != APP_EXIT_OK)
        return st;
    if (cli.rebuild7) {
        rc = eval_scaling_report(cli.rebuild7, eb, sizeof(eb));
        if (rc != CORE_OK) {
            fprintf(stderr, "gcdp eval: %s\n", eb);
            return APP_EXIT_FAILURE;
        }
        return APP_EXIT_OK;
    }
    if (cli.figure7)
        return app_exit_status("eval", eval_run_scaling(&cli.o, eb, sizeof(eb)), eb);
    if (cli.tables_from)
        return run_tables_from(cli.tables_from, cli.md);
    return run_dataset(&cli.o);
}

/* The evaluation takes its settings from its flags only (no configuration keys). */
const struct app_command app_cmd_eval = {
    .name = "eval",
    .summary = "evaluation protocol of the GC-DP paper (tables, figures) on a dataset",
    .help = app_help_eval,
    .options = eval_flags,
    .run = cmd_main,
    .flags = APP_CMD_NO_CONFIG,
};
