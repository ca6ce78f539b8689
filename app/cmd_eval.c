/* cmd_eval.c - `gcdp eval`: the GC-DP paper's evaluation protocol (eval/eval.h). */
#include <float.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "eval/eval.h"
#include "flags.h"

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: gcdp eval --dataset occupancy|wisdm|sim|smoke [--data DIR] [--out DIR]\n"
        "       gcdp eval --dataset csv --data DATASET.json [options]\n"
        "                 [--eps LIST] [--draws N] [--tune-draws N] [--seed S]\n"
        "                 [--delta D] [--tau-grid LIST] [--exposure minmax|maxnorm]\n"
        "                 [--xi literal|neighbour] [--eps-cal E --tau-grid T]\n"
        "                 [--sensor accel|gyro] [--window-min M] [--no-ablations]\n"
        "                 [--no-runtime] [--no-plots] [--no-tau-sweep] [--quiet]\n"
        "       gcdp eval --tables-from DIR/draws.csv [--md FILE]\n"
        "       gcdp eval --figure7 [--m-list LIST] [--windows N] [--reps R] [--out DIR]\n"
        "                 [--seed S] [--no-plots] [--quiet]\n\n"
        "Run gc-dp Sec. 5 on one dataset: public calibration on the training split, tau\n"
        "chosen by GC-DP validation F1 at eps = 1 (ties to the smaller tau), mechanisms\n"
        "NonPrivate, Lap-DP, Gau-DP (analytic Gaussian, --delta), Ada-DP, Risk-DP, GC-DP and\n"
        "the Table 11 ablations, one fixed logistic-regression classifier and attacker,\n"
        "--draws noise draws per setting. Writes OUT/<dataset>/draws.csv (every draw, with\n"
        "its seed), alloc.csv (B_k, s_k, eps_k per mechanism), runtime.csv, theta.json,\n"
        "run.txt, tables.md and PNG figures (gnuplot). --tables-from rebuilds tables.md\n"
        "from a draws.csv. --exposure/--xi select the readings of gc-dp Sec. 4.1/4.3 compared in\n"
        "docs/evaluation.md (defaults minmax, literal = the calibrate stage's theta).\n"
        "--eps-cal E: private calibration (gc-dp Sec. 4.2) instead of public, eps_G =\n"
        "eps_mu = eps_xi = E/3, one fixed tau; run.txt states the total eps_cal + eps_rel.\n"
        "Defaults: --eps 0.2,0.5,1,2,4 --draws 10 --tune-draws 5\n"
        "--tau-grid 0.10,0.15,0.20,0.25,0.30 --delta 1e-6 --out bench/results/eval\n"
        "--data ../shared/data/<dataset> --window-min 15 (occupancy). --dataset csv reads a\n"
        "window CSV described by a JSON file (docs/evaluation.md, \"Your own dataset\").\n"
        "--figure7 (alias --runtime-scaling): gc-dp Figure 7, runtime of one calibration-and-\n"
        "release pass at eps = 1 vs the number of nodes M, measured by the Table 12 code on\n"
        "synthetic windows of each M; writes OUT/figure7/ (runs.csv, figure7.csv, figure7.md,\n"
        "fig7_runtime_vs_m.png). Defaults: --m-list 8,16,...,512 --windows 2000\n"
        "--reps 9. --rebuild-figure7 DIR recomputes figure7.csv/.md from DIR/runs.csv.\n");
}

/* A comma-separated list of positive numbers. */
static int parse_list(const char *s, double *out, size_t cap, size_t *n)
{
    return app_flag_parse_doubles(s, DBL_MIN, DBL_MAX, out, cap, n);
}

/* What one command line asks for: the run options and the alternative modes. */
struct eval_cli {
    struct eval_opts o;
    const char *tables_from, *md, *rebuild7;
    bool figure7;
};

/* --draws, --tune-draws, --window-min: integers in 1..1000. */
static int parse_count_flag(int c, const char *arg, struct eval_opts *o)
{
    long v;

    if (app_flag_parse_long(arg, 1, 1000, &v) != 0) {
        fprintf(stderr, "gcdp eval: --%s: integer in 1..1000\n",
                c == 'n'   ? "draws"
                : c == 't' ? "tune-draws"
                           : "window-min");
        return APP_EXIT_USAGE;
    }
    if (c == 'n')
        o->draws = (int)v;
    else if (c == 't')
        o->tune_draws = (int)v;
    else
        o->window_ms = (int64_t)v * 60000;
    return APP_EXIT_OK;
}

/* The numeric run flags: --eps, --tau-grid, --seed, --delta, --eps-cal and the counts. */
static int parse_number_flag(int c, const char *arg, struct eval_opts *o)
{
    unsigned long long seed;

    switch (c) {
    case 'e':
        if (parse_list(arg, o->eps, 8, &o->n_eps) != 0) {
            fprintf(stderr, "gcdp eval: --eps: comma-separated positive numbers (<= 8)\n");
            return APP_EXIT_USAGE;
        }
        return APP_EXIT_OK;
    case 'T':
        if (parse_list(arg, o->tau_grid, 8, &o->n_tau) != 0) {
            fprintf(stderr, "gcdp eval: --tau-grid: comma-separated ascending values\n");
            return APP_EXIT_USAGE;
        }
        return APP_EXIT_OK;
    case 's':
        if (app_flag_parse_u64(arg, ULLONG_MAX, &seed) != 0) {
            fprintf(stderr, "gcdp eval: --seed: a non-negative integer\n");
            return APP_EXIT_USAGE;
        }
        o->seed = seed;
        return APP_EXIT_OK;
    case 'g':
        if (app_flag_parse_double(arg, 0, 0.5, &o->delta) != 0 || o->delta == 0 ||
            o->delta == 0.5) {
            fprintf(stderr, "gcdp eval: --delta in (0, 0.5)\n");
            return APP_EXIT_USAGE;
        }
        return APP_EXIT_OK;
    case 'C':
        if (app_flag_parse_double(arg, 0, 100, &o->eps_cal) != 0 || o->eps_cal == 0) {
            fprintf(stderr, "gcdp eval: --eps-cal in (0, 100]\n");
            return APP_EXIT_USAGE;
        }
        return APP_EXIT_OK;
    default: /* 'n', 't', 'w' */
        return parse_count_flag(c, arg, o);
    }
}

/* --exposure minmax|maxnorm and --xi literal|neighbour. */
static int parse_reading_flag(int c, const char *arg, struct eval_opts *o)
{
    if (c == 'x') {
        if (strcmp(arg, "minmax") == 0)
            o->expo = EVAL_EXPO_MINMAX;
        else if (strcmp(arg, "maxnorm") == 0)
            o->expo = EVAL_EXPO_MAXNORM;
        else {
            fprintf(stderr, "gcdp eval: --exposure minmax|maxnorm\n");
            return APP_EXIT_USAGE;
        }
        return APP_EXIT_OK;
    }
    if (strcmp(arg, "literal") == 0)
        o->xi = EVAL_XI_LITERAL;
    else if (strcmp(arg, "neighbour") == 0)
        o->xi = EVAL_XI_NEIGHBOUR;
    else {
        fprintf(stderr, "gcdp eval: --xi literal|neighbour\n");
        return APP_EXIT_USAGE;
    }
    return APP_EXIT_OK;
}

/* --m-list: node counts, integers in 2..EVAL_MAX_NODES. */
static int parse_m_list(const char *arg, struct eval_opts *o)
{
    double ms[16];
    size_t n = 0;

    if (parse_list(arg, ms, 16, &n) != 0) {
        fprintf(stderr, "gcdp eval: --m-list: comma-separated node counts (<= 16)\n");
        return APP_EXIT_USAGE;
    }
    for (size_t i = 0; i < n; i++) {
        if (ms[i] != floor(ms[i]) || ms[i] < 2 || ms[i] > EVAL_MAX_NODES) {
            fprintf(stderr, "gcdp eval: --m-list: integers in 2..%d\n", EVAL_MAX_NODES);
            return APP_EXIT_USAGE;
        }
        o->scale_m[i] = (size_t)ms[i];
    }
    o->n_scale_m = n;
    return APP_EXIT_OK;
}

/* --windows (20..1000000) and --reps (1..1000) of the Figure 7 run. */
static int parse_scaling_count(int c, const char *arg, struct eval_opts *o)
{
    long v, vlo = c == 9 ? 20 : 1, vhi = c == 9 ? 1000000 : 1000;

    if (app_flag_parse_long(arg, vlo, vhi, &v) != 0) {
        fprintf(stderr, "gcdp eval: --%s: integer in %ld..%ld\n", c == 9 ? "windows" : "reps", vlo,
                vhi);
        return APP_EXIT_USAGE;
    }
    if (c == 9)
        o->scale_windows = (size_t)v;
    else
        o->scale_reps = (int)v;
    return APP_EXIT_OK;
}

/* Long: one flat switch over the flags (getopt codes of the option table); splitting it
 * scatters the table. Returns APP_EXIT_OK or APP_EXIT_USAGE (message printed). */
// One case per flag, a flat switch: split, it would only scatter the flag list.
// NOLINTNEXTLINE(readability-function-size)
static int apply_flag(int c, const char *arg, struct eval_cli *cli)
{
    struct eval_opts *o = &cli->o;

    switch (c) {
    case 'd':
        o->dataset = arg;
        break;
    case 'D':
        o->data_dir = arg;
        break;
    case 'o':
        o->out_dir = arg;
        break;
    case 'S':
        o->sensor = arg;
        break;
    case 'e':
    case 'T':
    case 'n':
    case 't':
    case 'w':
    case 's':
    case 'g':
    case 'C':
        return parse_number_flag(c, arg, o);
    case 'x':
    case 'X':
        return parse_reading_flag(c, arg, o);
    case 1:
        o->ablations = false;
        break;
    case 2:
        o->runtime = false;
        break;
    case 3:
        o->plots = false;
        break;
    case 4:
        o->tau_sweep = false;
        break;
    case 'q':
        o->quiet = true;
        break;
    case 5:
        cli->tables_from = arg;
        break;
    case 6:
        cli->md = arg;
        break;
    case 7:
        cli->figure7 = true;
        break;
    case 8:
        return parse_m_list(arg, o);
    case 9:
    case 10:
        return parse_scaling_count(c, arg, o);
    case 11:
        cli->rebuild7 = arg;
        break;
    default:
        usage(stderr);
        return APP_EXIT_USAGE;
    }
    return APP_EXIT_OK;
}

/* Parse argv into cli (options defaulted first). Returns APP_EXIT_OK or APP_EXIT_USAGE. */
static int parse_args(int argc, char **argv, struct eval_cli *cli)
{
    static const struct option lo[] = {{"dataset", required_argument, 0, 'd'},
                                       {"data", required_argument, 0, 'D'},
                                       {"out", required_argument, 0, 'o'},
                                       {"eps", required_argument, 0, 'e'},
                                       {"draws", required_argument, 0, 'n'},
                                       {"tune-draws", required_argument, 0, 't'},
                                       {"seed", required_argument, 0, 's'},
                                       {"delta", required_argument, 0, 'g'},
                                       {"tau-grid", required_argument, 0, 'T'},
                                       {"exposure", required_argument, 0, 'x'},
                                       {"sensor", required_argument, 0, 'S'},
                                       {"window-min", required_argument, 0, 'w'},
                                       {"no-ablations", no_argument, 0, 1},
                                       {"no-runtime", no_argument, 0, 2},
                                       {"no-plots", no_argument, 0, 3},
                                       {"no-tau-sweep", no_argument, 0, 4},
                                       {"quiet", no_argument, 0, 'q'},
                                       {"tables-from", required_argument, 0, 5},
                                       {"md", required_argument, 0, 6},
                                       {"xi", required_argument, 0, 'X'},
                                       {"eps-cal", required_argument, 0, 'C'},
                                       {"figure7", no_argument, 0, 7},
                                       {"runtime-scaling", no_argument, 0, 7},
                                       {"m-list", required_argument, 0, 8},
                                       {"windows", required_argument, 0, 9},
                                       {"reps", required_argument, 0, 10},
                                       {"rebuild-figure7", required_argument, 0, 11},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    int c, st;

    memset(cli, 0, sizeof(*cli));
    eval_opts_default(&cli->o);
    optind = 1;
    while ((c = getopt_long(argc, argv, "qh", lo, NULL)) != -1) {
        st = apply_flag(c, optarg, cli);
        if (st != APP_EXIT_OK)
            return st;
    }
    if (optind < argc) {
        fprintf(stderr, "gcdp eval: unexpected argument '%s'\n", argv[optind]);
        return APP_EXIT_USAGE;
    }
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
    .help = usage,
    .run = cmd_main,
    .flags = APP_CMD_NO_CONFIG,
};
