/* cmd_ledger.c - `gcdp ledger`: read-only inspection of the privacy ledger: totals per
 * protected unit (sequential composition within a unit), remaining budget under the cap. */
#include <stdio.h>

#include "app.h"
#include "flags.h"
#include "pipe/ledger.h"

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

/* Print eb (when there is one) and map rc to the exit status. */
static int status_of(core_err rc, const char *eb)
{
    if (rc != CORE_OK && eb[0])
        fprintf(stderr, "gcdp ledger: %s\n", eb);
    return rc == CORE_OK ? APP_EXIT_OK : rc == CORE_ECONFIG ? APP_EXIT_USAGE : APP_EXIT_FAILURE;
}

static int cmd_main(struct app_call *call)
{
    const struct core_config *cfg = call->cfg;
    struct ledger_cli cli = {0};
    char path[4096], eb[8192] = ""; /* messages name paths */

    if (app_flags_parse_only("ledger", ledger_flags, call->argc, call->argv, &cli, NULL) != 0)
        return APP_EXIT_USAGE;
    if ((cli.imp || cli.to) && (!cli.imp || !cli.to || cli.carry || cli.prefix || cli.flag)) {
        fprintf(stderr, "gcdp ledger: --import OLD --to NEW go together, alone\n");
        return APP_EXIT_USAGE;
    }
    if (cli.imp)
        return status_of(pipe_ledger_import(cli.imp, cli.to, stderr, "gcdp ledger", eb, sizeof(eb)),
                         eb);
    if (app_ledger_path(cfg, cli.flag, path, sizeof(path)) != 0)
        return APP_EXIT_USAGE;
    struct pipe_ledger_view v = {.prefix = cli.prefix,
                                 .as_json = cli.as_json,
                                 .carry = cli.carry,
                                 .out = stdout,
                                 .log = stderr,
                                 .prog = "gcdp ledger"};
    return status_of(pipe_ledger_view(path, &v, cfg, eb, sizeof(eb)), eb);
}

const struct app_command app_cmd_ledger = {
    .name = "ledger",
    .summary = "inspect the privacy ledger: totals per protected unit",
    .help = usage,
    .run = cmd_main,
};
