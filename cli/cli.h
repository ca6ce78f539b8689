/* cli.h - the one command driver of the gcdp executable: a table of commands and one path
 * from argv to an exit status.
 * SPDX-License-Identifier: Apache-2.0
 *
 * For `gcdp <name> [args]` the driver (app_cli_main) finds the entry, then in this order:
 *   1. APP_CMD_NEEDS_ARG and no argument: the help on stderr, exit 2;
 *   2. sub (a verb table, e.g. `gcdp bench <what>`): argv[1] names the entry to run the
 *      same way; an option with -h/--help anywhere prints this entry's help;
 *   3. mode: an entry may hand the invocation to another one (`learn --server`);
 *   4. -h/--help anywhere (even as a flag's value): the help on stdout, exit 0, before any
 *      configuration is read, so a broken configuration never hides the help;
 *   5. the common options (--config, --set, --log-level; app_config_load) are taken off argv
 *      and the configuration is loaded once: a failure prints the key and exits 2
 *      (APP_CMD_NO_CONFIG: nothing is loaded or taken off, cfg is NULL);
 *   6. the log component is set and run() is called; its return is the exit status
 *      (0 ok, 1 runtime failure, 2 usage or configuration), and the driver frees cfg.
 *
 * Thread-safety: main thread only (getopt, the log component).
 */
#ifndef GCDP_CLI_CLI_H
#define GCDP_CLI_CLI_H

#include <stdio.h>

#include "core/err.h"

/* Exit statuses: only the driver and the commands' run functions decide them. */
#define APP_EXIT_OK      0
#define APP_EXIT_FAILURE 1
#define APP_EXIT_USAGE   2

struct core_config;
struct app_flag;

/* One invocation as run() sees it. */
struct app_call {
    const char *name;        /* the command as typed, for messages: "ingest", "bench ingest" */
    struct core_config *cfg; /* the loaded configuration, borrowed (NULL: APP_CMD_NO_CONFIG).
                                A command that leaves threads running on it at process exit
                                (gcdp run's forced stop) sets it to NULL: not freed then */
    int argc;                /* argv[0] the command's own name; common options removed */
    char **argv;
};

#define APP_CMD_NO_CONFIG 1u /* no common options, no configuration (eval, ctl keygen) */
#define APP_CMD_NEEDS_ARG 2u /* without an argument: help on stderr, exit 2 (bench, ctl) */

struct app_command {
    const char *name;                  /* as typed after `gcdp` (or after the parent) */
    const char *summary;               /* one line for the parent's listing */
    const char *help;                  /* the --help text: docs/cli/<name>.txt (help_texts.h) */
    const struct app_flag *options;    /* its flag table (flags.h), which tests/app checks the
                                          help against; NULL: none */
    int (*run)(struct app_call *call); /* exit status; NULL for a pure verb table */
    /* Optional: the entry that handles this argv instead (NULL: this one). */
    const struct app_command *(*mode)(int argc, char **argv);
    const struct app_command *const *sub; /* optional verb table, NULL-terminated */
    const char *sub_what;                 /* what sub lists ("benchmark"), for messages */
    const char *component;                /* log component (core_log_set_component), or NULL */
    unsigned flags;                       /* APP_CMD_* */
};

/* The gcdp process after its process-wide set-up: `gcdp --help|--version|<command> ...` with
 * the commands of table (NULL-terminated, in `gcdp --help` order). Returns the exit status. */
int app_cli_main(const struct app_command *const *table, int argc, char **argv);

/* The exit status of a command whose work ended with rc: 0 for CORE_OK; otherwise, after
 * "gcdp <name>: <eb, or core_strerror(rc) when eb is empty>" on stderr, 2 (usage or
 * configuration) for CORE_ECONFIG and 1 (runtime failure) for everything else. eb may be NULL. */
int app_exit_status(const char *name, core_err rc, const char *eb);

/* The --help of c: its text, then the listing of its verb table (sub), then, when it reads the
 * configuration (run and not APP_CMD_NO_CONFIG), the common options (app_common_help). */
void app_cli_help(const struct app_command *c, FILE *f);

/* The listing of a verb table: "  name  summary" lines, name padded to width. */
void app_cli_list(FILE *f, const struct app_command *const *table, int width);

#endif /* GCDP_CLI_CLI_H */
