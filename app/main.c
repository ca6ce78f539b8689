/* main.c - gcdp: dispatch to subcommands. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "app.h"
#include "core/jalloc.h"

struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
    {"run", cmd_run, "run the whole pipeline (embedded broker + simulator + all stages)"},
    {"broker", cmd_broker, "run the embedded in-memory Kafka-protocol broker (dev/test only)"},
    {"simulate", cmd_simulate, "publish live simulated sensor readings to sensors.raw"},
    {"replay", cmd_replay, "replay a recorded dataset (UCI Occupancy CSV, JSONL) to sensors.raw"},
    {"ingest", cmd_ingest, "ingest stage: sensors.raw -> gcdp.windows + sensors.rejected"},
    {"calibrate", cmd_calibrate, "build theta (GC-DP calibration) from a calibration matrix"},
    {"release", cmd_release, "privatize windows with theta (offline) and write the ledger"},
    {"ledger", cmd_ledger, "inspect the privacy ledger: totals per protected unit"},
    {"sem-gen", cmd_semgen, "generate linear Gaussian SEM data for the structure learner"},
    {"learn", cmd_learn, "learn a DAG from participant CSVs (Fed-Sparse-BNSL and baselines)"},
    {"eval", cmd_eval, "evaluation protocol of the GC-DP paper (tables, figures) on a dataset"},
    {"bench", cmd_bench, "benchmarks: ingest | calibrate | release | learner"},
    {"ctl", cmd_ctl, "signed operator commands: recalibrate | pause | resume | status, keygen"},
    {"healthcheck", cmd_healthcheck,
     "probe a running service's /healthz (the container image's HEALTHCHECK)"},
    {"config", cmd_config, "configuration: `config keys` lists every key, `config show`"},
    {NULL, NULL, NULL},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: gcdp <command> [options]   (gcdp <command> --help for details)\n\n"
               "gcdp ingests IoT sensor streams from Kafka and releases window analytics under\n"
               "Graph-Calibrated Differential Privacy; a federated structure learner consumes\n"
               "only the privatized output.\n\ncommands:\n");
    for (const struct command *c = commands; c->name; c++)
        fprintf(f, "  %-11s %s\n", c->name, c->summary);
    fprintf(f, "\n%s", app_common_help);
}

int main(int argc, char **argv)
{
    gsl_set_error_handler_off();
    core_jalloc_install(); /* jansson's allocation hooks, before any thread uses jansson */
    /* A file-size limit (or a full quota) must be an error the command reports (EFBIG), not
     * a silent death by SIGXFSZ between a write and its fsync. */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2) {
        usage(stderr);
        return APP_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return APP_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("gcdp 0.1.0\n");
        return APP_EXIT_OK;
    }
    for (const struct command *c = commands; c->name; c++)
        if (strcmp(argv[1], c->name) == 0)
            return c->fn(argc - 1, argv + 1);
    fprintf(stderr, "gcdp: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return APP_EXIT_USAGE;
}
