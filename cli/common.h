/* common.h - what every gcdp command shares beyond the driver (cli.h): the common options and
 * the configuration they load, and the checks and set-up the service commands share.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Functions that can refuse print "gcdp <cmd>: <why>" on stderr themselves and return -1 (or
 * an exit status): the driver and the commands decide exit codes, libraries return core_err.
 * Thread-safety: main thread only.
 */
#ifndef GCDP_CLI_COMMON_H
#define GCDP_CLI_COMMON_H

#include <stdbool.h>
#include <stddef.h>

#include "core/config.h"
#include "core/err.h"
#include "pipe/check.h"

/* Build the configuration from every stage's key table, then layer: defaults < config file
 * (--config F, or $GCDP_CONFIG) < GCDP_* environment < --set key=value flags; applies
 * --log-level / $GCDP_LOG_LEVEL / log.level. The common options are removed from argv
 * (*argc updated) so the subcommand's own getopt_long sees only its options.
 *   out  on success a new configuration; free with core_config_free().
 * On failure prints the reason (naming the key) to stderr and returns CORE_ECONFIG etc. */
CORE_MUST_CHECK core_err app_config_load(int *argc, char **argv, struct core_config **out);

/* As app_config_load, naming the command cmd ("bench ingest") in its messages instead of
 * argv[0]. */
CORE_MUST_CHECK core_err app_config_load_named(const char *cmd, int *argc, char **argv,
                                               struct core_config **out);

/* True when argv[1..argc) holds -h or --help: commands print their usage and exit 0 before
 * loading any configuration, so --help works even with a broken config file. */
bool app_help_requested(int argc, char **argv);

/* The privacy ledger's path: flag (a path given on the command line, used as given) or
 * release.ledger.path, which when relative lives under state.dir (created if missing).
 * Writes into buf. Returns 0, or -1 after printing why (naming the key) to stderr. */
int app_ledger_path(const struct core_config *cfg, const char *flag, char *buf, size_t n);

/* As app_ledger_path; create false: state.dir is not created (--check). */
int app_ledger_path_resolve(const struct core_config *cfg, const char *flag, char *buf, size_t n,
                            bool create);

/* Refuse before anything is opened for writing: every output path must differ from every
 * input, the ledger and every other output (same file: same inode, symlinks included).
 * paths/roles: n entries, NULL paths skipped; first outputs (n_out of them), then the rest.
 * Returns 0, or -1 after printing which two collide. */
int app_paths_distinct(const char *cmd, const char *const *paths, const char *const *roles,
                       size_t n_out, size_t n);

/* Where `gcdp broker` writes its address by default. */
#define APP_BOOTSTRAP_FILE "run/kafka.bootstrap"

/* A service needs a broker: broker.bootstrap, else @APP_BOOTSTRAP_FILE when that file
 * exists. Returns 0, or -1 after printing what to do. */
int app_require_bootstrap(struct core_config *cfg, const char *cmd);

/* New metrics registry in *out (always; caller frees with core_metrics_free), served on
 * metrics.bind:metrics.port when the port is > 0. Returns 0, or -1 after printing why the
 * endpoint could not be served. */
struct core_metrics;
int app_metrics_start(const struct core_config *cfg, const char *cmd, struct core_metrics **out);

/* `--check` of a service command (cli/check.c): app_require_bootstrap, then the checks of
 * pipe/check.h. Prints "gcdp <cmd>: configuration ok" on stdout and returns 0, or prints
 * "gcdp <cmd>: configuration error: <key or flag>: <why>" on stderr and returns 2. cfg may
 * gain broker.bootstrap=@run/kafka.bootstrap as in app_require_bootstrap. */
int app_service_check(struct core_config *cfg, const struct pipe_check_opts *o);

/* Help text for the common options, for each subcommand's --help. */
extern const char app_common_help[];

#endif /* GCDP_CLI_COMMON_H */
