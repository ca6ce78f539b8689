/* cmd_run.c - `gcdp run`: the whole pipeline in one command (pipeline/, pipe/run.h); this
 * file is its command line. */
#include <getopt.h>
#include <stdio.h>

#include "app.h"
#include "flags.h"
#include "pipe/run.h"
#include "sim/sim.h"

/* The --help text: what runs, and the options. */
static const char usage_text[] =
    "usage: gcdp run [options]\n\n"
    "Run the pipeline in one command: the embedded in-memory broker (a `gcdp broker`\n"
    "child process; skipped when broker.bootstrap is set), the sensor simulator\n"
    "feeding topics.raw, ingest (topics.windows, dead letters on topics.rejected),\n"
    "the calibrate service (public theta versions on topics.calibration, made from\n"
    "public calibration rows), and the release service (topics.windows ->\n"
    "topics.released, every release charged to a privacy ledger first, with the\n"
    "drift monitor), and the federated learner: a server and one participant per\n"
    "site, reading only topics.released (gcdp learn --server/--participant). A\n"
    "progress line goes to stderr every second (readings in, windows out, released,\n"
    "refused, theta version, eps spent: the largest total of any protected unit,\n"
    "drift score, learner session/round/h/edges/MB) and a summary at the end: a\n"
    "readable one on stderr and one JSON line on stdout, with the DAG learned from\n"
    "the privatized stream beside the simulator's true DAG (SHD, TPR, FDR, chance)\n"
    "and a picture of both.\n\n"
    "options:\n"
    "  --duration S        stop after S seconds (default 0 = until Ctrl-C/SIGTERM)\n"
    "  --devices N         simulated devices (default 100)\n"
    "  --rate R            simulated readings per second, all devices (default 2000)\n"
    "  --seed S            simulator seed (default 1)\n"
    "                      (other simulator settings: the sim.* keys, e.g.\n"
    "                      --set sim.faults=all=0.001; see gcdp config keys)\n"
    "  --no-simulator      do not start the simulator (feed topics.raw yourself,\n"
    "                      e.g. `gcdp replay`; then also give --calibration)\n"
    "  --dir DIR           this run's files (default run): the broker address, the\n"
    "                      control key control.key (made once, mode 0600, unless\n"
    "                      control.key_file is set), calibration.csv, the ledger,\n"
    "                      truth.json, learner-<UTC time>/ (DAGs, pictures,\n"
    "                      checkpoints), state/ (state.dir unless set)\n"
    "  --ledger FILE       the privacy ledger to charge (default: a NEW ledger\n"
    "                      DIR/ledger-<UTC time>.jsonl for every run, since the\n"
    "                      simulator's devices and times repeat from run to run;\n"
    "                      an existing FILE is reopened and its spending counts)\n"
    "  --calibration FILE  public calibration rows for the calibrate service (CSV,\n"
    "                      calibrate.input.*; default: DIR/calibration.csv, made from\n"
    "                      a pilot run of the simulator's model with noise of its own)\n"
    "  --sites K           learner participants (default 4): site k holds the motes\n"
    "                      mote-i, i in [k*N/K, (k+1)*N/K) (1 with --no-simulator)\n"
    "  --bootstrap-file F  where the embedded broker writes its address\n"
    "                      (default DIR/kafka.bootstrap; other commands can join with\n"
    "                      --set broker.bootstrap=@F while it runs); its log: F.log\n"
    "  --help              this text\n\n";

/* The --help text: this command's defaults, metrics, stopping and exit status (followed by
 * app_common_help). */
static const char usage_defaults_text[] =
    "Defaults of this command (each applies unless you set the key): a simulator\n"
    "whose SEM signal dominates (sim.channel_params without diurnal terms, sim.ar\n"
    "0.9), complete windows only (ingest.max_interp_gap 0, ingest.min_coverage 1),\n"
    "release.query.min_samples 15, release.eps_rel 8 per window with\n"
    "release.eps_min 1.9 per coordinate, sites rescaled (learner.rescale, lambda\n"
    "0.01, threshold 0.1; a session every 15 s from 500 samples per site): see\n"
    "docs/operations.md \"gcdp run\" for why and what it costs in privacy.\n\n"
    "metrics: --set metrics.port=P serves /metrics and /healthz for every stage.\n"
    "Ctrl-C (or SIGTERM) stops gracefully: the simulator flushes, ingest drains and\n"
    "commits, release releases what ingest emitted, calibrate stops, the learner\n"
    "finishes a session in progress (at most 30 s), the broker stops last; a second\n"
    "Ctrl-C skips the waiting (and if the stages still have not stopped 5 s later,\n"
    "gcdp run gives up and exits 1).\n"
    "Exit status: 0 ok, 1 a stage failed, an offset gap was detected or no window\n"
    "was released, 2 usage or configuration (also a setting a stage refuses at\n"
    "start, e.g. a ledger made with other caps).\n\n";

static void usage(FILE *f)
{
    fputs(usage_text, f);
    fputs(usage_defaults_text, f);
    fputs(app_common_help, f);
}

/* One numeric flag (--duration, --devices, --rate, --seed, --sites) into o. Returns 0, or -1
 * when the value is out of range. */
static int parse_number_opt(int ch, const char *arg, struct pipe_run_opts *o)
{
    unsigned long long u;

    switch (ch) {
    case 'd':
        return app_flag_parse_double(arg, 0, 1e7, &o->duration_s) != 0 ? -1 : 0;
    case 'n':
        if (app_flag_parse_u64(arg, SIM_MAX_DEVICES, &u) != 0 || u < 1)
            return -1;
        o->devices = (size_t)u;
        return 0;
    case 'r':
        return app_flag_parse_double(arg, 0, 1e7, &o->rate) != 0 || o->rate == 0 ? -1 : 0;
    case 's':
        if (app_flag_parse_u64(arg, UINT64_MAX, &u) != 0)
            return -1;
        o->seed = u;
        return 0;
    default: /* 'S' */
        if (app_flag_parse_u64(arg, 64, &u) != 0 || u < 1)
            return -1;
        o->sites = (size_t)u;
        return 0;
    }
}

/* Parse argv into o. Returns -1 to go on, else the exit status (--help: APP_EXIT_OK after
 * the usage; a bad flag: APP_EXIT_USAGE after the message). */
static int parse_opts(int argc, char **argv, struct pipe_run_opts *o)
{
    static const struct option longopts[] = {
        {"duration", required_argument, NULL, 'd'},
        {"devices", required_argument, NULL, 'n'},
        {"rate", required_argument, NULL, 'r'},
        {"seed", required_argument, NULL, 's'},
        {"no-simulator", no_argument, NULL, 'N'},
        {"bootstrap-file", required_argument, NULL, 'f'},
        {"dir", required_argument, NULL, 'D'},
        {"ledger", required_argument, NULL, 'L'},
        {"calibration", required_argument, NULL, 'C'},
        {"sites", required_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int ch;

    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'd':
        case 'n':
        case 'r':
        case 's':
        case 'S':
            if (parse_number_opt(ch, optarg, o) != 0) {
                fprintf(stderr, "gcdp run: invalid value '%s' (see gcdp run --help)\n", optarg);
                return APP_EXIT_USAGE;
            }
            break;
        case 'N':
            o->no_sim = true;
            break;
        case 'f':
            o->bootstrap_file = optarg;
            break;
        case 'D':
            o->dir = optarg;
            break;
        case 'L':
            o->ledger = optarg;
            break;
        case 'C':
            o->calibration = optarg;
            break;
        case 'h':
            usage(stdout);
            return APP_EXIT_OK;
        default:
            usage(stderr);
            return APP_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gcdp run: unexpected argument '%s'\n", argv[optind]);
        return APP_EXIT_USAGE;
    }
    return -1;
}

static int cmd_main(struct app_call *call)
{
    struct pipe_run_opts o;
    bool forced;
    int ret;
    core_err rc;

    pipe_run_opts_default(&o);
    if ((ret = parse_opts(call->argc, call->argv, &o)) >= 0)
        return ret;
    rc = pipe_run(call->cfg, &o, &forced);
    if (forced)
        call->cfg = NULL; /* stages may still read it: not freed (cli.h) */
    return rc == CORE_OK ? APP_EXIT_OK : rc == CORE_ECONFIG ? APP_EXIT_USAGE : APP_EXIT_FAILURE;
}

const struct app_command app_cmd_run = {
    .name = "run",
    .summary = "run the whole pipeline (embedded broker + simulator + all stages)",
    .help = usage,
    .run = cmd_main,
    .component = "run",
};
