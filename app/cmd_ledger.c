/* cmd_ledger.c - `gcdp ledger`: read-only inspection of the privacy ledger: totals per
 * protected unit (sequential composition within a unit), remaining budget under the cap. */
#include <stdio.h>

#include "app.h"
#include "flags.h"
#include "help_texts.h"
#include "pipe/ledger.h"

/* What one command line asks for. */
struct ledger_cli {
    const char *flag, *prefix, *carry, *imp, *to; /* --ledger, --unit, --carry-to, --import, --to */
    int as_json;
};

#define AT(f) APP_FLAG_AT(struct ledger_cli, f)

static const struct app_flag ledger_flags[] = {
    {"ledger", APP_FLAG_STR, AT(flag)},
    {"unit", APP_FLAG_STR, AT(prefix)},
    {"json", APP_FLAG_TRUE, AT(as_json)},
    {"carry-to", APP_FLAG_STR, AT(carry)},
    {"import", APP_FLAG_STR, AT(imp)},
    {"to", APP_FLAG_STR, AT(to)},
    {.name = NULL},
};

#undef AT

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
    .help = app_help_ledger,
    .options = ledger_flags,
    .run = cmd_main,
};
