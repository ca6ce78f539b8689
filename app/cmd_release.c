/* cmd_release.c - `gcdp release`: offline GC-DP release of window records with θ
 * (paper Algorithms 2-4), write-ahead ledger, byte-identical replay. */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "core/dp_ledger_cfg.h"
#include "flags.h"
#include "pipe/release.h"
#include "rel/release.h"

static const char release_help[] =
    "usage: gcdp release --theta FILE [options] [common options]\n"
    "       gcdp release --serve [--theta FILE] [--group ID] [--exit-idle S] [--check]\n"
    "                    [common options]\n"
    "\n"
    "Privatize window records (gcdp.window/2 JSON lines from ingest) with the GC-DP parameter\n"
    "object theta. Each record states its provenance (per node the statistic, real and\n"
    "imputed samples, longest imputed run; the interpolation gap G, the sampling period and\n"
    "the clip interval); the plan (Algorithms 2 and 3: certified bounds B_k, budgets eps_k,\n"
    "checks s_k >= B_k, eps_k > 0, sum eps_k <= eps_rel) is built from the first record's\n"
    "provenance and the declared policy, never from ingest settings in this configuration,\n"
    "and every window is certified again from its own provenance before any noise is drawn\n"
    "(Algorithm 4). Records of another ingest configuration, or without provenance\n"
    "(gcdp.window/1), are refused by name. Secure noise; a write-ahead ledger: every record\n"
    "is fsync'd in the ledger before it is written out, and a window already in the ledger\n"
    "(same window id and theta version) is republished byte-for-byte, never re-noised.\n"
    "Output: gcdp.released/1 JSON lines (values in normalized units, rounded to 12\n"
    "decimals), written to a temporary file renamed over --output at the end (a failed run\n"
    "leaves an existing output untouched). Excluded windows are skipped; a refused window\n"
    "stops the run after everything before it was committed, unless --skip-refused.\n"
    "\n"
    "options:\n";

static const char release_serve_help[] =
    "service mode (--serve): the same release as a Kafka service. Window records are read\n"
    "from topics.windows (consumer group --group, default gcdp-release) in either encoding\n"
    "ingest writes (ingest.output.format: gcdp.window/2 JSON or gcdp.window/3 binary, told\n"
    "apart by the first byte; the same provenance checks for both), released records\n"
    "go to topics.released (key = device) once their ledger rows are fsync'd, and a window\n"
    "that is refused (malformed, not covered by the plan or its own certificate, over a\n"
    "unit's cap, no plan) is dead-lettered to topics.release_rejected with its reason and\n"
    "the run goes on. theta: --theta FILE, or the newest version on topics.calibration\n"
    "(intake waits until one is known; a newer one is swapped in between two windows and\n"
    "every record names its version). Offsets are committed only after the outputs are\n"
    "acknowledged; after a crash, windows already in the ledger are republished\n"
    "byte-for-byte, never re-noised. One instance per ledger (the file is locked);\n"
    "several instances, each with its own ledger, share one group when\n"
    "release.service.changelog is true: ledger rows go to topics.ledger_changelog and an\n"
    "assigned partition is restored from it first (docs/release.md, \"Several instances\").\n"
    "The ledger's audit log is mirrored to topics.audit, at least once from the offset kept\n"
    "in <ledger>.mirror (release.audit.mirror, default true).\n";

static const char release_end_help[] =
    "An output path that is the same file as the input, the ledger or theta is refused\n"
    "before anything is opened for writing. Other settings are release.* keys (`gcdp config\n"
    "keys`): delta, beta_r/g/u, eta, eps_min, policy.edges/hops/time_radius,\n"
    "query.min_samples/max_samples, ledger.slot_ms/cap_eps/cap_delta/batch, threads; the\n"
    "ledger binds release.ledger.slot_ms, release.policy.time_radius, ingest.period_ms and\n"
    "the caps in its header and refuses a run with other values.\n"
    "exit status: 0 ok (with --skip-refused also when records were skipped); 1 runtime\n"
    "failure or refusal (budget cap, window not covered, ledger I/O); 2 usage,\n"
    "configuration or theta error (also: no plan for theta and the records' provenance,\n"
    "a ledger bound to another scheme or caps, an output aliasing an input).\n\n";

#define TAG_OFFLINE 1u /* the tag of the offline-only flags */

struct args {
    const char *theta, *input, *format, *output, *ledger, *mech, *eps, *theta_out, *group;
    int plan_only, skip, serve, check;
    unsigned tags; /* TAG_OFFLINE: an offline-only option was given */
    double exit_idle_s;
    char ledger_path[4096];
};

/* The parsed flags fit together: no stray argument, --theta unless --serve, --check only with
 * --serve, no offline-only flag with --serve, --format jsonl. Returns APP_EXIT_OK or
 * APP_EXIT_USAGE after the message. */
static int check_args(int first, int argc, const struct args *a)
{
    if (first != argc || (!a->theta && !a->serve)) {
        fprintf(stderr, "gcdp release: %s\n",
                first != argc ? "unexpected argument" : "--theta FILE is required");
        return APP_EXIT_USAGE;
    }
    if (a->check && !a->serve) {
        fprintf(stderr, "gcdp release: --check validates the service's configuration: use it "
                        "with --serve\n");
        return APP_EXIT_USAGE;
    }
    if (a->serve && (a->tags & TAG_OFFLINE)) {
        fprintf(stderr, "gcdp release: --serve reads topics.windows and writes topics.released: "
                        "--input, --output, --format, --plan, --theta-out and --skip-refused "
                        "are for the offline release\n");
        return APP_EXIT_USAGE;
    }
    if (a->format && strcmp(a->format, "jsonl") != 0) {
        fprintf(stderr,
                "gcdp release: --format %s: only jsonl (gcdp.window/2 records): CSV "
                "rows carry no provenance to certify from\n",
                a->format);
        return APP_EXIT_USAGE;
    }
    return APP_EXIT_OK;
}

#define AT(f) APP_FLAG_AT(struct args, f)

static const struct app_flag release_flags[] = {
    {"theta", APP_FLAG_STR, AT(theta), .metavar = "FILE",
     .help = "theta JSON from `gcdp calibrate` (required)"},
    {"input", APP_FLAG_STR, AT(input), .tag = TAG_OFFLINE, .metavar = "FILE",
     .help = "window records (JSON lines); '-' = stdin (default -)"},
    {"format", APP_FLAG_STR, AT(format), .tag = TAG_OFFLINE},
    {"output", APP_FLAG_STR, AT(output), .tag = TAG_OFFLINE, .metavar = "FILE",
     .help = "released records; '-' = stdout, line-buffered (default -)"},
    {"ledger", APP_FLAG_STR, AT(ledger), .metavar = "FILE",
     .help = "ledger path (default: release.ledger.path under state.dir)"},
    {"mechanism", APP_FLAG_STR, AT(mech), .metavar = "M",
     .help = REL_MECH_CHOICES "\n(default: release.mechanism = gcdp)"},
    {"eps-rel", APP_FLAG_STR, AT(eps), .metavar = "E",
     .help = "release budget per window (default: release.eps_rel = 1)"},
    {"plan", APP_FLAG_TRUE, AT(plan_only), .tag = TAG_OFFLINE,
     .help = "print the per-coordinate plan (B, s, eps, scale) as JSON for the\n"
             "first non-excluded record of --input and exit; draws no noise,\n"
             "opens no ledger"},
    {"theta-out", APP_FLAG_STR, AT(theta_out), .tag = TAG_OFFLINE, .metavar = "FILE",
     .help = "also write theta with its release part (B, s, eps) filled"},
    {"skip-refused", APP_FLAG_TRUE, AT(skip), .tag = TAG_OFFLINE,
     .help = "report a refused record (malformed, not covered by the plan or its\n"
             "certificate, over the lifetime cap) with its line number and go on;\n"
             "the run then exits 0 and prints how many were skipped"},
    {"serve", APP_FLAG_TRUE, AT(serve), .section = 1,
     .help = "run as a service until SIGINT/SIGTERM (a one-line JSON summary\n"
             "goes to stdout at exit); needs broker.bootstrap (or\n"
             "run/kafka.bootstrap); metrics.port serves /metrics and /healthz"},
    {"group", APP_FLAG_STR, AT(group), .metavar = "ID", .section = 1,
     .help = "consumer group of topics.windows (default gcdp-release)"},
    {"check", APP_FLAG_TRUE, AT(check), .section = 1,
     .help = "validate the configuration (file, env, --set), --theta, the\n"
             "ledger's location and the control key file, print \"gcdp release:\n"
             "configuration ok\" and exit 0 (2 naming the key otherwise); opens\n"
             "nothing for writing, no network"},
    {"exit-idle", APP_FLAG_DBL, AT(exit_idle_s), .lo = 0, .hi = 1e6, .metavar = "S", .section = 1,
     .help = "stop after S seconds with nothing consumed, counted while windows\n"
             "can be read (theta known, partitions assigned); default 0: until a\n"
             "signal"},
    {.name = NULL},
};

#undef AT

static void usage(FILE *f)
{
    fputs(release_help, f);
    app_flags_help(f, release_flags, 18, 0);
    fputs("  -h, --help        this text\n\n", f);
    fputs(release_serve_help, f);
    app_flags_help(f, release_flags, 18, 1);
    fprintf(f, "\n%s%s", release_end_help, app_common_help);
}

/* Parse argv into a (defaults first), then check_args. */
static int parse_args(int argc, char **argv, struct args *a)
{
    int first;

    memset(a, 0, sizeof(*a));
    a->input = "-";
    a->output = "-";
    a->group = "gcdp-release";
    first = app_flags_parse("release", release_flags, argc, argv, a, &a->tags);
    return first < 0 ? APP_EXIT_USAGE : check_args(first, argc, a);
}

/* --mechanism / --eps-rel are shorthands for --set release.*=... */
static core_err apply_shorthands(struct core_config *cfg, const struct args *a)
{
    char eb[512] = "";
    core_err rc = CORE_OK;
    if (a->mech)
        rc = core_config_set(cfg, "release.mechanism", a->mech, "flag", eb, sizeof(eb));
    if (rc == CORE_OK && a->eps)
        rc = core_config_set(cfg, "release.eps_rel", a->eps, "flag", eb, sizeof(eb));
    if (rc != CORE_OK)
        fprintf(stderr, "gcdp release: configuration error: %s\n", eb);
    return rc;
}

/* Every output must differ from every input, the ledger (and its store) and the other
 * outputs. */
static int check_paths(const struct core_config *cfg, const struct args *a)
{
    char store[4096];
    if (core_dp_ledger_store_path(cfg, store, sizeof(store)) != 0) {
        fprintf(stderr, "gcdp release: configuration error: release.ledger.store: a relative "
                        "path needs state.dir, and the path must fit in 4096 bytes\n");
        return -1;
    }
    const char *paths[] = {a->plan_only ? NULL : a->output,
                           a->theta_out,
                           a->input,
                           a->theta,
                           a->plan_only ? NULL : a->ledger_path,
                           a->plan_only || !store[0] ? NULL : store};
    const char *roles[] = {"--output", "--theta-out", "--input",
                           "--theta",  "the ledger",  "the ledger store"};
    return app_paths_distinct("release", paths, roles, 2, 6);
}

static int cmd_main(struct app_call *call)
{
    struct core_config *cfg = call->cfg;
    struct args a;
    int ex = parse_args(call->argc, call->argv, &a);

    if (ex != APP_EXIT_OK || apply_shorthands(cfg, &a) != CORE_OK)
        return APP_EXIT_USAGE;
    if (app_ledger_path_resolve(cfg, a.ledger, a.ledger_path, sizeof(a.ledger_path), !a.check) !=
            0 ||
        check_paths(cfg, &a) != 0)
        return APP_EXIT_USAGE;
    if (a.check) {
        struct pipe_check_opts co = {"release", true, a.theta, NULL, a.ledger_path};
        return app_service_check(cfg, &co);
    }
    if (a.serve) {
        struct release_serve_args sa = {a.theta, a.ledger_path, a.group, a.exit_idle_s};
        return release_serve(cfg, &sa);
    }
    struct pipe_release_offline req = {.theta = a.theta,
                                       .input = a.input,
                                       .output = a.output,
                                       .ledger_path = a.ledger_path,
                                       .theta_out = a.theta_out,
                                       .skip_refused = a.skip,
                                       .plan_only = a.plan_only,
                                       .log = stderr,
                                       .prog = "gcdp release"};
    core_err rc = pipe_release_offline(cfg, &req);
    return rc == CORE_OK ? APP_EXIT_OK : rc == CORE_ECONFIG ? APP_EXIT_USAGE : APP_EXIT_FAILURE;
}

const struct app_command app_cmd_release = {
    .name = "release",
    .summary = "privatize windows with theta and charge the ledger (offline, or --serve)",
    .help = usage,
    .run = cmd_main,
    .component = "release",
};
