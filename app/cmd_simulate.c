/* cmd_simulate.c - `gcdp simulate`: thin CLI over sim_run() (sim/sim.h). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "core/log.h"
#include "core/timefmt.h"
#include "flags.h"
#include "help_texts.h"
#include "producer_flags.h"
#include "sim/encode.h"
#include "sim/sim.h"

static struct sim_progress *volatile sim_sig_progress;

static void on_signal(int sig)
{
    (void)sig;
    if (sim_sig_progress)
        atomic_store(&sim_sig_progress->stop, 1); /* lock-free atomic: signal-safe */
}

static int parse_start(const char *s, int64_t *out)
{
    unsigned long long v;
    if (app_flag_parse_u64(s, (unsigned long long)INT64_MAX, &v) == 0) {
        *out = (int64_t)v;
        return 0;
    }
    return core_time_parse(s, strlen(s), out) == CORE_OK ? 0 : -1;
}

/* What one command line asks for: the options over the configuration's values, and the
 * fault flags, which replace sim.faults. */
struct sim_cli {
    struct sim_options o;
    const char *faults;
    double total; /* --fault-rate; < 0: not given */
};

static int take_start(void *cli, const char *arg)
{
    return parse_start(arg, &((struct sim_cli *)cli)->o.start_ms);
}

#define AT(f)  APP_FLAG_AT(struct sim_cli, f)
#define ANY(f) APP_FLAG_DBL, AT(o.f), .lo = -DBL_MAX, .hi = DBL_MAX

static const struct app_flag simulate_flags[] = {
    {"devices", APP_FLAG_UINT, AT(o.devices), .hi = SIM_MAX_DEVICES},
    {"seed", APP_FLAG_UINT, AT(o.seed), .hi = DBL_MAX},
    {"rate", APP_FLAG_DBL, AT(o.rate), .hi = DBL_MAX},
    {"ticks", APP_FLAG_UINT, AT(o.ticks), .hi = DBL_MAX},
    {"duration", APP_FLAG_DBL, AT(o.duration_s), .hi = DBL_MAX},
    {"start", APP_FLAG_FN, .fn = take_start},
    {"period", ANY(period_s)},
    {"wall-clock", APP_FLAG_TRUE, AT(o.wall_clock)},
    {"regime-change-at", APP_FLAG_DBL, AT(o.regime_change_at_s), .hi = DBL_MAX},
    {"hetero-sd", ANY(hetero_sd)},
    {"coupling", ANY(spatial_coupling)},
    {"lag", APP_FLAG_UINT, AT(o.spatial_lag), .hi = SIM_MAX_LAG},
    {"ar", ANY(ar)},
    {"truth", APP_FLAG_STR, AT(o.truth_path)},
    {"fault-rate", APP_FLAG_DBL, AT(total), .lo = 0, .hi = 1},
    {"faults", APP_FLAG_STR, AT(faults)},
    {"gap-ticks", APP_FLAG_UINT, AT(o.gap_ticks), .hi = 1000000},
    {"late-s", ANY(late_s)},
    {"oversize-bytes", APP_FLAG_UINT, AT(o.oversize_bytes), .hi = 64 << 20},
    APP_PROD_FLAG_ROWS(offsetof(struct sim_cli, o.prod)),
    {.name = NULL},
};

#undef AT
#undef ANY

/* Parse the subcommand's own flags into c->o (over the configuration's values).
 * Returns 0, or -1 after printing the reason. */
static int parse_flags(int argc, char **argv, struct sim_cli *c)
{
    char eb[256];

    c->total = -1.0;
    if (app_flags_parse_only("simulate", simulate_flags, argc, argv, c, NULL) != 0)
        return -1;
    if (c->faults || c->total >= 0.0) /* the flags replace sim.faults */
        for (int k = 0; k < SIM_FAULT_COUNT; k++)
            c->o.fault_rate[k] = c->total > 0.0 ? c->total / SIM_FAULT_COUNT : 0.0;
    if (c->faults && sim_faults_parse(c->faults, c->o.fault_rate, eb, sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp simulate: --faults: %s\n(gcdp simulate --help lists the options)\n",
                eb);
        return -1;
    }
    return 0;
}

static void install_signals(struct sim_progress *pr)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sim_sig_progress = pr;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

static int cmd_main(struct app_call *call)
{
    struct core_config *cfg = call->cfg;
    struct sim_cli c = {.faults = NULL};
    struct sim_options *o = &c.o;
    struct sim_progress pr;
    char eb[1024] = "";
    core_err rc;

    sim_progress_init(&pr);
    /* Defaults come from the sim.* keys (and ingest.period_ms / ingest.max_message_bytes,
     * so the readings match what ingest expects); the flags override them. */
    if (sim_options_from_config(cfg, o, eb, sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp simulate: configuration error: %s\n", eb);
        return APP_EXIT_USAGE;
    }
    if (parse_flags(call->argc, call->argv, &c) != 0)
        return APP_EXIT_USAGE;
    install_signals(&pr);
    rc = sim_run(cfg, o, &pr, eb, sizeof(eb));
    sim_sig_progress = NULL;
    sim_progress_print(&pr, stdout);
    return app_exit_status("simulate", rc == CORE_EINVAL ? CORE_ECONFIG : rc, eb);
}

const struct app_command app_cmd_simulate = {
    .name = "simulate",
    .summary = "publish live simulated sensor readings to sensors.raw",
    .help = app_help_simulate,
    .options = simulate_flags,
    .run = cmd_main,
    .component = "simulate",
};
