/* cmd_calibrate.c - `gcdp calibrate`: calibration matrix -> θ JSON (public or private),
 * and `gcdp calibrate --check FILE` to validate an existing θ. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "cal/ledger.h"
#include "flags.h"
#include "help_texts.h"
#include "pipe/calibrate.h"

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
    {"input", APP_FLAG_STR, AT(input), .short_name = 'i'},
    {"format", APP_FLAG_FN, .fn = take_format, .short_name = 'f'},
    {"output", APP_FLAG_STR, AT(output), .short_name = 'o'},
    {"mode", APP_FLAG_FN, .fn = take_mode},
    {"device", APP_FLAG_FN, .fn = take_device},
    {"ledger", APP_FLAG_STR, AT(ledger)},
    {"publish", APP_FLAG_TRUE, AT(publish)},
    {"check", APP_FLAG_STR, AT(check)},
    {"serve", APP_FLAG_TRUE, AT(serve)},
    {"exit-after", APP_FLAG_DBL, AT(exit_after), .lo = 0, .hi = 1e6},
    {.name = NULL},
};

#undef AT

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
    .help = app_help_calibrate,
    .options = calibrate_flags,
    .run = cmd_main,
    .component = "calibrate",
};
