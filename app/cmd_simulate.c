/* cmd_simulate.c - `gcdp simulate`: thin CLI over sim_run() (sim/sim.h). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "core/log.h"
#include "core/timefmt.h"
#include "flags.h"
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

static const char *const fault_help[SIM_FAULT_COUNT][2] = {
#define X(name, str, help) {str, help},
    SIM_FAULT_MAP(X)
#undef X
};

static void usage(FILE *f)
{
    struct sim_options d;
    sim_options_default(&d);
    fprintf(
        f,
        "usage: gcdp simulate [options]\n\n"
        "Publish live readings of simulated motes (temperature, humidity, light, voltage)\n"
        "to topics.raw, keyed by device id. Deterministic given --seed.\n"
        "The flags have sim.* configuration keys (gcdp config keys; --topic is topics.raw,\n"
        "--fault-rate and --flush-timeout have none); the defaults shown are the keys'\n"
        "defaults, and a flag wins over its key. --faults/--fault-rate replace sim.faults.\n\n"
        "  --devices N          number of motes mote-0..mote-(N-1) (default %zu, max %d)\n"
        "  --seed S             PRNG seed, unsigned 64-bit (default %llu)\n"
        "  --rate R             messages/s, token bucket; 0 = as fast as the in-flight cap\n"
        "                       allows (default %.0f; see docs/simulator.md before using 0)\n"
        "  --ticks N            readings per device, then stop (default 0 = unbounded)\n"
        "  --duration S         stop after S wall-clock seconds (default 0 = unbounded)\n"
        "  --start TS           simulated clock start, RFC 3339 UTC or epoch ms\n"
        "                       (default %lld = 2026-11-01T00:00:00Z)\n"
        "  --period S           seconds between a device's readings\n"
        "                       (default: sim.period_ms, else ingest.period_ms; i.e. %g)\n"
        "  --wall-clock         ts = wall-clock time, one tick per period in real time\n"
        "                       (default: simulated clock, start + tick*period, paced by --rate)\n"
        "  --regime-change-at S switch to the second SEM after S seconds of (simulated or\n"
        "                       wall) time (default: never)\n"
        "  --hetero-sd X        per-device edge weight sd (default %g)\n"
        "  --coupling A         spatial coupling to the neighbour mote, [0,1) (default %g)\n"
        "  --lag K              spatial lag in ticks, 0..%d (default %u)\n"
        "  --ar PHI             temporal AR(1) coefficient, [0,1) (default %g)\n"
        "  --truth FILE         write the ground-truth SEM (JSON, gcdp.sim-truth/1)\n"
        "  --fault-rate P       total fault probability per reading, spread evenly over\n"
        "                       all kinds (default 0)\n"
        "  --faults SPEC        kind=rate,... per-kind probabilities (after --fault-rate);\n"
        "                       (kinds below; \"all=P\" sets every kind); the sum must be <= 1\n"
        "  --gap-ticks N        readings skipped by one gap fault (default %u)\n"
        "  --late-s S           how far a late reading goes back (default %g s)\n"
        "  --oversize-bytes N   an oversize message has N+1 bytes\n"
        "                       (default: sim.oversize_bytes, else ingest.max_message_bytes;\n"
        "                       i.e. %zu)\n",
        d.devices, SIM_MAX_DEVICES, (unsigned long long)d.seed, d.rate, (long long)d.start_ms,
        d.period_s, d.hetero_sd, d.spatial_coupling, SIM_MAX_LAG, d.spatial_lag, d.ar, d.gap_ticks,
        d.late_s, d.oversize_bytes);
    app_prod_flags_help(f, 21, &d.prod);
    fprintf(f, "  -h, --help           this text\n\n"
               "Broker: broker.bootstrap (e.g. --set broker.bootstrap=@run/kafka.bootstrap).\n"
               "Faulty messages carry the Kafka header gcdp-fault: <kind>. On exit a JSON summary\n"
               "{generated,sent,acked,failed,retries,faults{kind:n}} is printed on stdout.\n"
               "SIGINT/SIGTERM stop cleanly (in-flight messages are flushed).\n"
               "Exit: 0 all delivered, 1 runtime failure or any undelivered message, 2 usage.\n\n"
               "fault kinds:\n");
    for (size_t k = 0; k < SIM_FAULT_COUNT; k++)
        fprintf(f, "  %-16s %s\n", fault_help[k][0], fault_help[k][1]);
    fprintf(f, "\n%s", app_common_help);
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
    .help = usage,
    .run = cmd_main,
    .component = "simulate",
};
