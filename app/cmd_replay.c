/* cmd_replay.c - `gcdp replay`: thin CLI over sim_replay_run() (sim/sim.h). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "core/log.h"
#include "flags.h"
#include "help_texts.h"
#include "producer_flags.h"
#include "sim/sim.h"

static struct sim_progress *volatile replay_sig_progress;

static void on_signal(int sig)
{
    (void)sig;
    if (replay_sig_progress)
        atomic_store(&replay_sig_progress->stop, 1); /* lock-free atomic: signal-safe */
}

static int take_format(void *args, const char *arg)
{
    struct sim_replay_options *o = args;

    if (strcmp(arg, "occupancy") == 0)
        o->format = SIM_REPLAY_OCCUPANCY;
    else if (strcmp(arg, "jsonl") == 0)
        o->format = SIM_REPLAY_JSONL;
    else if (strcmp(arg, "corpus") == 0 || strcmp(arg, "jsonl-raw") == 0)
        o->format = SIM_REPLAY_CORPUS;
    else
        return -1;
    return 0;
}

#define AT(f) APP_FLAG_AT(struct sim_replay_options, f)

static const struct app_flag replay_flags[] = {
    {"file", APP_FLAG_STR, AT(path)},
    {"format", APP_FLAG_FN, .fn = take_format},
    {"device", APP_FLAG_STR, AT(device)},
    {"speed", APP_FLAG_DBL, AT(speed), .lo = 0, .hi = 1e9},
    {"rate", APP_FLAG_DBL, AT(rate), .lo = 0, .hi = 1e9},
    APP_PROD_FLAG_ROWS(offsetof(struct sim_replay_options, prod)),
    {.name = NULL},
};

#undef AT

static int cmd_main(struct app_call *call)
{
    struct core_config *cfg = call->cfg;
    int argc = call->argc;
    char **argv = call->argv;
    struct sim_replay_options o;
    struct sim_progress pr;
    char eb[1024] = "";
    int first;
    struct sigaction sa;
    core_err rc;

    sim_replay_options_default(&o);
    sim_progress_init(&pr);
    /* the lag guard's keys, as gcdp simulate reads them (sim.max_inflight is simulate's
     * only: replay's in-flight cap is --max-inflight or its default) */
    o.prod.lag_group = core_config_str(cfg, "sim.lag_group");
    o.prod.max_lag_bytes = (size_t)core_config_int(cfg, "sim.max_lag_bytes");
    first = app_flags_parse("replay", replay_flags, argc, argv, &o, NULL);
    if (first < 0)
        return APP_EXIT_USAGE;
    if (first < argc || !o.path) {
        fprintf(stderr, "gcdp replay: %s\n", o.path ? "unexpected argument" : "--file is required");
        goto usage_err;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    replay_sig_progress = &pr;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    rc = sim_replay_run(cfg, &o, &pr, eb, sizeof(eb));
    replay_sig_progress = NULL;
    sim_progress_print(&pr, stdout);
    return app_exit_status("replay", rc == CORE_EINVAL ? CORE_ECONFIG : rc, eb);
usage_err:
    fprintf(stderr, "(gcdp replay --help lists the options)\n");
    return APP_EXIT_USAGE;
}

const struct app_command app_cmd_replay = {
    .name = "replay",
    .summary = "replay a recorded dataset (UCI Occupancy CSV, JSONL) to sensors.raw",
    .help = app_help_replay,
    .options = replay_flags,
    .run = cmd_main,
    .component = "replay",
};
