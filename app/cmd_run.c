/* cmd_run.c - `gcdp run`: the whole pipeline in one command (pipeline/, pipe/run.h); this
 * file is its command line. */
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
    "options:\n";

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

#define AT(f) APP_FLAG_AT(struct pipe_run_opts, f)

static const struct app_flag run_flags[] = {
    {"duration", APP_FLAG_DBL, AT(duration_s), .lo = 0, .hi = 1e7, .metavar = "S",
     .help = "stop after S seconds (default 0 = until Ctrl-C/SIGTERM)"},
    {"devices", APP_FLAG_UINT, AT(devices), .lo = 1, .hi = SIM_MAX_DEVICES, .metavar = "N",
     .help = "simulated devices (default 100)"},
    {"rate", APP_FLAG_DBL, AT(rate), .lo = 0, .hi = 1e7, .flags = APP_FLAG_OPEN_LO, .metavar = "R",
     .help = "simulated readings per second, all devices (default 2000)"},
    {"seed", APP_FLAG_UINT, AT(seed), .hi = DBL_MAX, .metavar = "S",
     .help = "simulator seed (default 1)\n"
             "(other simulator settings: the sim.* keys, e.g.\n"
             "--set sim.faults=all=0.001; see gcdp config keys)"},
    {"no-simulator", APP_FLAG_TRUE, AT(no_sim),
     .help = "do not start the simulator (feed topics.raw yourself,\n"
             "e.g. `gcdp replay`; then also give --calibration)"},
    {"dir", APP_FLAG_STR, AT(dir), .metavar = "DIR",
     .help = "this run's files (default run): the broker address, the\n"
             "control key control.key (made once, mode 0600, unless\n"
             "control.key_file is set), calibration.csv, the ledger,\n"
             "truth.json, learner-<UTC time>/ (DAGs, pictures,\n"
             "checkpoints), state/ (state.dir unless set)"},
    {"ledger", APP_FLAG_STR, AT(ledger), .metavar = "FILE",
     .help = "the privacy ledger to charge (default: a NEW ledger\n"
             "DIR/ledger-<UTC time>.jsonl for every run, since the\n"
             "simulator's devices and times repeat from run to run;\n"
             "an existing FILE is reopened and its spending counts)"},
    {"calibration", APP_FLAG_STR, AT(calibration), .metavar = "FILE",
     .help = "public calibration rows for the calibrate service (CSV,\n"
             "calibrate.input.*; default: DIR/calibration.csv, made from\n"
             "a pilot run of the simulator's model with noise of its own)"},
    {"sites", APP_FLAG_UINT, AT(sites), .lo = 1, .hi = 64, .metavar = "K",
     .help = "learner participants (default 4): site k holds the motes\n"
             "mote-i, i in [k*N/K, (k+1)*N/K) (1 with --no-simulator)"},
    {"bootstrap-file", APP_FLAG_STR, AT(bootstrap_file), .metavar = "F",
     .help = "where the embedded broker writes its address\n"
             "(default DIR/kafka.bootstrap; other commands can join with\n"
             "--set broker.bootstrap=@F while it runs); its log: F.log"},
    {.name = NULL},
};

#undef AT

static void usage(FILE *f)
{
    fputs(usage_text, f);
    app_flags_help(f, run_flags, 20, 0);
    fputs("  --help              this text\n\n", f);
    fputs(usage_defaults_text, f);
    fputs(app_common_help, f);
}

static int cmd_main(struct app_call *call)
{
    struct pipe_run_opts o;
    bool forced;
    core_err rc;

    pipe_run_opts_default(&o);
    if (app_flags_parse_only("run", run_flags, call->argc, call->argv, &o, NULL) != 0)
        return APP_EXIT_USAGE;
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
