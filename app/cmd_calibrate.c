/* cmd_calibrate.c - `gcdp calibrate`: calibration matrix -> θ JSON (public or private),
 * and `gcdp calibrate --check FILE` to validate an existing θ. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "cal/ledger.h"
#include "flags.h"
#include "pipe/calibrate.h"

/* The --help text of the offline command. */
static const char usage_text[] =
    "usage: gcdp calibrate -i FILE [-f csv|occupancy] [-o FILE] [--mode public|private]\n"
    "                      [--device ID]... [--ledger FILE] [--publish]\n"
    "       gcdp calibrate --check THETA.json\n"
    "       gcdp calibrate --serve -i FILE [-f csv|occupancy] [--exit-after S]\n"
    "                      [--check]\n"
    "       gcdp calibrate --serve --set calibrate.mode=private [--exit-after S]\n"
    "                      [--check]   (theta from a span of gcdp.windows, no -i)\n\n"
    "Build the GC-DP parameter object theta (paper Sec. 4.1-4.4: Algorithm 1 graph,\n"
    "exposure, utility mu, empirical influence xi_hat) from a calibration matrix.\n"
    "public mode: eps_cal = 0, the input must be public data independent of the\n"
    "protected records; no ledger is opened. private mode (Sec. 4.2): spends\n"
    "eps_cal = eps_G + eps_tau + eps_mu + eps_xi (calibrate.eps_*), noise from the OS\n"
    "CSPRNG, recorded in theta, and CHARGED to the privacy ledger the release stage uses\n"
    "(release.ledger.path, cap_eps/cap_delta) BEFORE any noise is drawn: every unit\n"
    "'<device>|<floor(t/release.ledger.slot_ms)>' of the calibration rows (widened by\n"
    "release.policy.time_radius) is charged eps_cal; a unit that would exceed the\n"
    "lifetime cap refuses the run (exit 1, no theta). The charge and theta are committed\n"
    "(fsync) as release id 'calibrate|<version>' before theta is written or published;\n"
    "a re-run with the same calibrate.version writes the stored theta bytes again (no\n"
    "noise, no new charge). Rows need timestamps: occupancy's date column, or a CSV\n"
    "column named by calibrate.input.ts_column (default ts: ms since the epoch or a UTC\n"
    "date YYYY-MM-DD HH:MM:SS[.fff][Z|+hh:mm]).\n\n"
    "options:\n";

/* The --help text of --serve and the parameters (followed by app_common_help). */
static const char usage_serve_text[] =
    "      --check         with --serve: validate the configuration (file, env,\n"
    "                      --set), --input (parsed) and the control key file, print\n"
    "                      \"gcdp calibrate: configuration ok\" and exit 0 (2 naming\n"
    "                      the key otherwise); opens nothing for writing, no network\n"
    "  -h, --help          this help\n\n"
    "Parameters are configuration keys (defaults = paper Table 5): calibrate.L,\n"
    "lambda, tau, tau_select, tau_grid, K, alpha, gamma, tau_c, kappa, g_max,\n"
    "mask_value, coords, norm, norm_default, task, task_weights, classify.train_frac,\n"
    "eps_G, eps_tau, eps_mu, eps_xi, private.sensitivity, version, threads,\n"
    "input.ts_column, ledger.devices; private mode also reads state.dir,\n"
    "release.ledger.path, slot_ms, cap_eps, cap_delta, release.policy.edges, hops and\n"
    "time_radius (the expansion set: |A| for Delta_1 S comes from the policy graph) and\n"
    "ingest.period_ms (the ledger's unit scheme, as release binds it). `gcdp config\n"
    "keys` lists them with ranges.\n"
    "exit status: 0 ok, 1 runtime failure (bad data, invalid theta, ledger refusal or\n"
    "I/O: no theta written), 2 usage/config.\n\n";

/* What one command line asks for. */
struct calibrate_cli {
    struct core_config *cfg; /* -f/--format and --mode set keys in it */
    const char *input, *output, *check;
    const char *ledger; /* --ledger FILE, used as given */
    const char *dev[CAL_LEDGER_MAX_DEVICES];
    size_t n_dev;
    int publish, serve;
    bool serve_check; /* --serve --check */
    double exit_after;
};

/* `--serve --check` validates the service's configuration; the offline `--check FILE`
 * takes a θ file. With --serve in argv, a bare --check is taken out before getopt sees it.
 * Returns whether it was there. */
static bool take_serve_check(int *argc, char **argv)
{
    bool serve = false, found = false;

    for (int i = 1; i < *argc && strcmp(argv[i], "--") != 0; i++)
        serve = serve || strcmp(argv[i], "--serve") == 0;
    for (int i = 1; serve && i < *argc && strcmp(argv[i], "--") != 0;) {
        if (strcmp(argv[i], "--check") != 0) {
            i++;
            continue;
        }
        memmove(argv + i, argv + i + 1, (size_t)(*argc - i) * sizeof(*argv));
        (*argc)--;
        found = true;
    }
    return found;
}

/* -f/--format and --mode are shorthands for --set calibrate.input.format / calibrate.mode. */
static int set_key(struct calibrate_cli *cli, const char *key, const char *arg)
{
    char eb[512] = "";

    if (core_config_set(cli->cfg, key, arg, "flag", eb, sizeof(eb)) == CORE_OK)
        return 0;
    fprintf(stderr, "gcdp calibrate: %s\n", eb);
    return -2;
}

static int take_format(void *cli, const char *arg)
{
    return set_key(cli, "calibrate.input.format", arg);
}

static int take_mode(void *cli, const char *arg)
{
    return set_key(cli, "calibrate.mode", arg);
}

static int take_device(void *args, const char *arg)
{
    struct calibrate_cli *cli = args;

    if (cli->n_dev == CAL_LEDGER_MAX_DEVICES || !arg[0] || strlen(arg) > CAL_LEDGER_MAX_DEVICE) {
        fprintf(stderr, "gcdp calibrate: --device: at most %u ids of 1..%u bytes\n",
                CAL_LEDGER_MAX_DEVICES, CAL_LEDGER_MAX_DEVICE);
        return -2;
    }
    cli->dev[cli->n_dev++] = arg;
    return 0;
}

#define AT(f) APP_FLAG_AT(struct calibrate_cli, f)

static const struct app_flag calibrate_flags[] = {
    {"input", APP_FLAG_STR, AT(input), .short_name = 'i', .metavar = "FILE",
     .help = "calibration matrix (required; - = standard input): CSV\n"
             "with a header of node names, one row per time step,\n"
             "complete numeric rows"},
    {"format", APP_FLAG_FN, .fn = take_format, .short_name = 'f', .metavar = "FMT",
     .help = "csv | occupancy (UCI Occupancy: temperature, humidity,\n"
             "light, co2, humidity_ratio; labels from Occupancy)\n"
             "(default: calibrate.input.format = csv)"},
    {"output", APP_FLAG_STR, AT(output), .short_name = 'o', .metavar = "FILE",
     .help = "write theta here (atomic rename); default: stdout"},
    {"mode", APP_FLAG_FN, .fn = take_mode, .metavar = "MODE",
     .help = "public | private (default: calibrate.mode = public)"},
    {"device", APP_FLAG_FN, .fn = take_device, .metavar = "ID",
     .help = "private: device id of the calibration rows (repeat for rows\n"
             "that hold several devices' readings: each is charged);\n"
             "replaces calibrate.ledger.devices (default: [] = required)"},
    {"ledger", APP_FLAG_STR, AT(ledger), .metavar = "FILE",
     .help = "private: ledger path, used as given (default:\n"
             "release.ledger.path under state.dir); the same file\n"
             "`gcdp release` charges"},
    {"publish", APP_FLAG_TRUE, AT(publish),
     .help = "also produce theta to topics.calibration (key = version)\n"
             "and wait for the broker's acknowledgement (needs\n"
             "broker.bootstrap, e.g. --set broker.bootstrap=@FILE)"},
    {"check", APP_FLAG_STR, AT(check), .metavar = "FILE",
     .help = "validate a theta file strictly; exit 0 if valid, 1 if not"},
    {"serve", APP_FLAG_TRUE, AT(serve), .section = 1,
     .help = "run the calibrate SERVICE: public theta versions made from\n"
             "--input (read again for every version) and published to\n"
             "topics.calibration: an initial one when the topic holds\n"
             "none, one per accepted recalibration request, and one\n"
             "every calibrate.service.refresh_s (periodic fallback);\n"
             "versions only grow (max(now ms, newest + 1)), each states\n"
             "its reason; requests closer than\n"
             "calibrate.service.min_interval_s are refused (rate limit).\n"
             "calibrate.mode=private (no --input): each version from\n"
             "the declared span of protected windows on topics.windows\n"
             "(calibrate.service.private_span_s), charged to the\n"
             "service's own ledger (calibrate.ledger.path) after\n"
             "adopting release's changelog; refusals on topics.status\n"
             "(docs/calibrate.md). Until SIGINT/SIGTERM; one-line JSON\n"
             "summary on stdout at exit"},
    {"exit-after", APP_FLAG_DBL, AT(exit_after), .lo = 0, .hi = 1e6, .metavar = "S", .section = 1,
     .help = "with --serve: stop after S seconds"},
    {.name = NULL},
};

#undef AT

static void usage(FILE *f)
{
    fputs(usage_text, f);
    app_flags_help(f, calibrate_flags, 20, 0);
    app_flags_help(f, calibrate_flags, 20, 1);
    fputs(usage_serve_text, f);
    fputs(app_common_help, f);
}

/* The flags fit together: an input (or --check, --serve), no stray argument, a broker for
 * --publish, and the offline paths distinct. Returns APP_EXIT_OK or APP_EXIT_USAGE. */
static int check_args(int first, int argc, char **argv, const struct core_config *cfg,
                      const struct calibrate_cli *cli)
{
    if (cli->serve && !cli->input && first == argc &&
        strcmp(core_config_str(cfg, "calibrate.mode"), "private") != 0) {
        fprintf(stderr, "gcdp calibrate: --serve needs -i/--input FILE, the public calibration "
                        "source each theta version is made from\n");
        return APP_EXIT_USAGE;
    }
    if (first < argc || (!cli->input && !cli->check && !cli->serve)) {
        fprintf(stderr, "gcdp calibrate: %s%s (see gcdp calibrate --help)\n",
                first < argc ? "unexpected argument " : "missing -i/--input (or --check)",
                first < argc ? argv[first] : "");
        return APP_EXIT_USAGE;
    }
    if (cli->publish && !cli->check && !core_config_str(cfg, "broker.bootstrap")) {
        fprintf(stderr, "gcdp calibrate: --publish needs broker.bootstrap (e.g. --set "
                        "broker.bootstrap=@FILE written by `gcdp broker`)\n");
        return APP_EXIT_USAGE;
    }
    return APP_EXIT_OK;
}

/* --serve: the calibrate service, or with --check its configuration check. */
static int run_serve(struct core_config *cfg, const struct calibrate_cli *cli)
{
    if (cli->check || cli->output || cli->publish || cli->n_dev || cli->ledger) {
        fprintf(stderr, "gcdp calibrate: --serve publishes public theta versions to "
                        "topics.calibration: --check, --output, --publish, --device and "
                        "--ledger are for the offline command\n");
        return APP_EXIT_USAGE;
    }
    if (cli->serve_check) {
        struct pipe_check_opts co = {"calibrate", true, NULL, cli->input, NULL};
        return app_service_check(cfg, &co);
    }
    return calibrate_serve(cfg, cli->input, cli->exit_after);
}

/* The offline command (pipe/calibrate.h) or --check FILE. */
static int run_offline(struct core_config *cfg, const struct calibrate_cli *cli)
{
    struct pipe_cal_offline req = {.input = cli->input,
                                   .output = cli->output,
                                   .ledger = cli->ledger,
                                   .devices = cli->dev,
                                   .n_devices = cli->n_dev,
                                   .publish = cli->publish};
    char eb[8192] = ""; /* a message may name paths of up to 4096 bytes */

    if (cli->check)
        return app_exit_status("calibrate",
                               pipe_calibrate_check_file(cli->check, stdout, eb, sizeof(eb)), eb);
    const char *paths[] = {cli->output, cli->input, cli->ledger};
    const char *roles[] = {"--output", "--input", "the ledger (--ledger)"};
    if (app_paths_distinct("calibrate", paths, roles, 1, 3) != 0)
        return APP_EXIT_USAGE;
    return app_exit_status("calibrate", pipe_calibrate_offline(cfg, &req, eb, sizeof(eb)), eb);
}

static int cmd_main(struct app_call *call)
{
    struct core_config *cfg = call->cfg;
    int argc = call->argc;
    char **argv = call->argv;
    struct calibrate_cli cli = {.cfg = cfg};
    int ret, first;

    cli.serve_check = take_serve_check(&argc, argv);
    first = app_flags_parse("calibrate", calibrate_flags, argc, argv, &cli, NULL);
    ret = first < 0 ? APP_EXIT_USAGE : check_args(first, argc, argv, cfg, &cli);
    if (ret == APP_EXIT_OK)
        ret = cli.serve ? run_serve(cfg, &cli) : run_offline(cfg, &cli);
    return ret;
}

const struct app_command app_cmd_calibrate = {
    .name = "calibrate",
    .summary = "build theta (GC-DP calibration) from a calibration matrix (or --serve)",
    .help = usage,
    .run = cmd_main,
    .component = "calibrate",
};
