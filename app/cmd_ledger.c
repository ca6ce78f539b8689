/* cmd_ledger.c - `gcdp ledger`: read-only inspection of the privacy ledger: totals per
 * protected unit (sequential composition within a unit), remaining budget under the cap. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "app.h"
#include "core/dp_acct.h"
#include "core/dp_ledger.h"
#include "core/dp_ledger_cfg.h"
#include "core/dp_tally.h"
#include "core/fsutil.h"
#include "core/mem.h"
#include "flags.h"

static const char ledger_help[] =
    "usage: gcdp ledger [options] [common options]\n"
    "\n"
    "Read the write-ahead privacy ledger (read-only; safe while a release runs) and print\n"
    "the composed cost per privacy unit '<device>|<slot>': every release that covered the\n"
    "unit adds up (sequential composition); different units never add (parallel\n"
    "composition). Totals are rounded up. A torn last line (a commit that never returned,\n"
    "so its output was never published) is reported and not counted. Every row is\n"
    "validated exactly as release and calibrate validate it when they open the ledger;\n"
    "any row they would reject fails this command (a ledger is never read leniently).\n"
    "The unit scheme and caps shown are the ones bound in the ledger's header.\n"
    "\n"
    "options:\n";

static const char ledger_help_end[] =
    "  -h, --help      this text\n"
    "exit status: 0 ok; 1 unreadable, empty, header-less or corrupt ledger; 2 usage.\n\n";

/* --import OLD --to NEW: the one-off migration of a JSONL ledger to the store. */
static int import_to(const char *old, const char *nw)
{
    struct core_dp_ledger_opts o;
    char eb[1024] = "";
    uint64_t rows = 0;
    core_err rc;

    memset(&o, 0, sizeof(o));
    o.path = old;
    rc = core_dp_ledger_read_header(old, &o.scheme, &o.cap, eb, sizeof(eb));
    if (rc == CORE_OK)
        rc = core_dp_ledger_import(&o, nw, &rows, eb, sizeof(eb));
    if (rc != CORE_OK) {
        fprintf(stderr, "gcdp ledger: --import %s --to %s: %s (%s)\n", old, nw,
                eb[0] ? eb : core_strerror(rc), core_errname(rc));
        return APP_EXIT_FAILURE;
    }
    fprintf(stderr,
            "gcdp ledger: imported %" PRIu64 " releases from %s into the store %s; "
            "every unit's total and every release's bytes verified equal. %s stays in place "
            "as the store's audit log\n",
            rows, old, nw, old);
    return APP_EXIT_OK;
}

static int import_args(const char *imp, const char *to, int other_options)
{
    if (imp && to && !other_options)
        return import_to(imp, to);
    fprintf(stderr, "gcdp ledger: --import OLD --to NEW go together, alone\n");
    return APP_EXIT_USAGE;
}

/* One unit's line (or JSON object) of `gcdp ledger`; the worst total and the count kept. */
struct units_out {
    int as_json;
    struct core_dp_cost cap, worst;
    size_t n_units;
};

static void print_unit(void *arg, const char *unit, size_t releases, const struct core_dp_cost *tot)
{
    struct units_out *o = arg;

    if (o->as_json) {
        json_t *j = json_pack("{s:s,s:I,s:f,s:f,s:f,s:f,s:f}", "unit", unit, "releases",
                              (json_int_t)releases, "eps", tot->eps, "delta", tot->delta, "rho",
                              tot->rho, "eps_cap", o->cap.eps, "delta_cap", o->cap.delta);
        json_dumpf(j, stdout, JSON_COMPACT | JSON_REAL_PRECISION(17));
        putchar('\n');
        json_decref(j);
    } else
        printf("%-40s %9zu %14.6g %12.4g %12.4g %14.6g\n", unit, releases, tot->eps, tot->delta,
               tot->rho, o->cap.eps - tot->eps);
    if (core_dp_cost_max(&o->worst, tot) != CORE_OK)
        o->worst.eps = INFINITY;
    o->n_units++;
}

static void print_units(struct core_dp_tally *t, int as_json)
{
    struct units_out o = {as_json, {0, 0, 0}, {0, 0, 0}, 0};
    struct core_dp_scheme sc;
    uint64_t rows, torn;

    core_dp_tally_header(t, &sc, &o.cap, &rows, &torn);
    if (!as_json)
        printf("%-40s %9s %14s %12s %12s %14s\n", "unit", "releases", "eps", "delta", "rho",
               "eps_remaining");
    core_dp_tally_foreach(t, print_unit, &o);
    fprintf(stderr,
            "gcdp ledger: %" PRIu64 " releases, %zu units, max per unit eps=%.6g "
            "delta=%.4g (cap eps=%.6g delta=%.4g)%s\n",
            rows, o.n_units, o.worst.eps, o.worst.delta, o.cap.eps, o.cap.delta,
            torn ? "; torn last line ignored (never published)" : "");
}

/* --carry-to: a new ledger (release.ledger.* scheme and caps) holding what the old one
 * spent, per new unit, and its releases for replay. */
static int carry_to(struct core_dp_tally *t, const char *old_path, const struct core_dp_scheme *old,
                    const struct core_config *cfg, const char *new_path)
{
    struct core_dp_scheme nw;
    struct core_dp_cost cap = {0, 0, 0};
    size_t units = 0, releases = 0;
    char eb[1024] = "";
    core_err rc;

    core_dp_scheme_from_config(cfg, &nw);
    core_dp_cap_from_config(cfg, &cap);
    rc =
        core_dp_tally_carry_to(t, old_path, &nw, &cap, new_path, &units, &releases, eb, sizeof(eb));
    if (rc != CORE_OK) {
        if (eb[0])
            fprintf(stderr, "gcdp ledger: %s\n", eb);
        return rc == CORE_EEXIST ? APP_EXIT_USAGE : APP_EXIT_FAILURE;
    }
    fprintf(stderr,
            "gcdp ledger: %zu units and %zu releases carried to %s (slot_ms %lld -> "
            "%lld); use it from now on and keep %s as the record of what was "
            "spent\n",
            units, releases, new_path, (long long)old->slot_ms, (long long)nw.slot_ms, old_path);
    return APP_EXIT_OK;
}

/* What one command line asks for. */
struct ledger_cli {
    const char *flag, *prefix, *carry, *imp, *to; /* --ledger, --unit, --carry-to, --import, --to */
    int as_json;
};

#define AT(f) APP_FLAG_AT(struct ledger_cli, f)

static const struct app_flag ledger_flags[] = {
    {"ledger", APP_FLAG_STR, AT(flag), .metavar = "FILE",
     .help = "ledger path (default: release.ledger.path under state.dir)"},
    {"unit", APP_FLAG_STR, AT(prefix), .metavar = "PREFIX",
     .help = "only units starting with PREFIX (e.g. a device id)"},
    {"json", APP_FLAG_TRUE, AT(as_json), .help = "one JSON object per unit instead of the table"},
    {"carry-to", APP_FLAG_STR, AT(carry), .metavar = "NEW",
     .help = "change the unit scheme or caps: create the ledger NEW with the scheme\n"
             "and caps of this run's configuration (release.ledger.slot_ms,\n"
             "release.policy.time_radius, ingest.period_ms, release.ledger.cap_*)\n"
             "and carry the spent budget forward conservatively: every new unit\n"
             "starts at the maximum spent over any old unit whose time span it\n"
             "overlaps. NEW must not exist; refused when a carried total is over\n"
             "the new cap. The old ledger is left as it is (keep it: it is the\n"
             "record of what was spent); use only NEW from then on."},
    {"import", APP_FLAG_STR, AT(imp), .metavar = "OLD --to NEW",
     .help = "migrate the JSONL ledger OLD once to the embedded store NEW (SQLite;\n"
             "docs/operations.md, \"Ledger store\"): every release's output bytes\n"
             "and every unit's total are copied and verified equal before NEW is\n"
             "put in place. NEW must not exist; OLD keeps the same scheme and caps\n"
             "and stays where it is as NEW's audit log (new rows are appended to\n"
             "it). Takes the ledger's lock: stop release/calibrate first."},
    {"to", APP_FLAG_STR, AT(to)},
    {.name = NULL},
};

#undef AT

static void usage(FILE *f)
{
    fputs(ledger_help, f);
    app_flags_help(f, ledger_flags, 16, 0);
    fprintf(f, "%s%s", ledger_help_end, app_common_help);
}

/* Inspect (or with --carry-to, carry) the ledger at path. */
static int inspect(const char *path, const struct ledger_cli *cli, const struct core_config *cfg)
{
    struct core_dp_tally *t = NULL;
    struct core_dp_cost cap;
    struct core_dp_scheme sc;
    uint64_t rows, torn;
    char eb[1024] = "";
    int ex;

    if (cli->carry && cli->prefix) {
        fprintf(stderr, "gcdp ledger: --carry-to carries every unit; --unit does not apply\n");
        return APP_EXIT_USAGE;
    }
    if (core_dp_tally_new(path, cli->prefix, &t, eb, sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp ledger: %s\n", eb);
        return APP_EXIT_FAILURE;
    }
    core_dp_tally_header(t, &sc, &cap, &rows, &torn);
    fprintf(stderr,
            "gcdp ledger: %s: units " CORE_DP_UNIT_FORMAT ", slot_ms %lld, time radius "
            "%lld x period %lld ms; cap eps=%.6g delta=%.4g\n",
            path, (long long)sc.slot_ms, (long long)sc.time_radius, (long long)sc.period_ms,
            cap.eps, cap.delta);
    if (cli->carry)
        ex = carry_to(t, path, &sc, cfg, cli->carry);
    else {
        print_units(t, cli->as_json);
        ex = APP_EXIT_OK;
    }
    core_dp_tally_free(t);
    return ex;
}

static int cmd_main(struct app_call *call)
{
    const struct core_config *cfg = call->cfg;
    struct ledger_cli cli = {0};
    char path[4096];

    if (app_flags_parse_only("ledger", ledger_flags, call->argc, call->argv, &cli, NULL) != 0)
        return APP_EXIT_USAGE;
    if (cli.imp || cli.to)
        return import_args(cli.imp, cli.to, cli.carry || cli.prefix || cli.flag);
    if (app_ledger_path(cfg, cli.flag, path, sizeof(path)) != 0)
        return APP_EXIT_USAGE;
    return inspect(path, &cli, cfg);
}

const struct app_command app_cmd_ledger = {
    .name = "ledger",
    .summary = "inspect the privacy ledger: totals per protected unit",
    .help = usage,
    .run = cmd_main,
};
