/* cmd_release.c - `gcdp release`: offline GC-DP release of window records with θ
 * (paper Algorithms 2-4), write-ahead ledger, byte-identical replay. */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "core/dp_ledger_cfg.h"
#include "flags.h"
#include "help_texts.h"
#include "pipe/release.h"
#include "rel/release.h"

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
    {"theta", APP_FLAG_STR, AT(theta)},
    {"input", APP_FLAG_STR, AT(input), .tag = TAG_OFFLINE},
    {"format", APP_FLAG_STR, AT(format), .tag = TAG_OFFLINE},
    {"output", APP_FLAG_STR, AT(output), .tag = TAG_OFFLINE},
    {"ledger", APP_FLAG_STR, AT(ledger)},
    {"mechanism", APP_FLAG_STR, AT(mech)},
    {"eps-rel", APP_FLAG_STR, AT(eps)},
    {"plan", APP_FLAG_TRUE, AT(plan_only), .tag = TAG_OFFLINE},
    {"theta-out", APP_FLAG_STR, AT(theta_out), .tag = TAG_OFFLINE},
    {"skip-refused", APP_FLAG_TRUE, AT(skip), .tag = TAG_OFFLINE},
    {"serve", APP_FLAG_TRUE, AT(serve)},
    {"group", APP_FLAG_STR, AT(group)},
    {"check", APP_FLAG_TRUE, AT(check)},
    {"exit-idle", APP_FLAG_DBL, AT(exit_idle_s), .lo = 0, .hi = 1e6},
    {.name = NULL},
};

#undef AT

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
    .help = app_help_release,
    .options = release_flags,
    .run = cmd_main,
    .component = "release",
};
