/* app.h - the gcdp executable: the commands' table entries and shared option handling.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Every command is a `struct app_command` (cli.h) run by the one driver (cli.c): help before
 * configuration, the common options, the configuration loaded once, exit codes (0 ok, 1
 * runtime failure, 2 usage/config error). Only the driver and the commands' run functions
 * decide exit codes; library code returns core_err.
 */
#ifndef GCDP_APP_H
#define GCDP_APP_H

#include <stdbool.h>

#include "core/config.h"
#include "core/err.h"

#define APP_EXIT_OK      0
#define APP_EXIT_FAILURE 1
#define APP_EXIT_USAGE   2

#include "cli.h"

extern const struct app_command app_cmd_run, app_cmd_broker, app_cmd_simulate, app_cmd_replay,
    app_cmd_ingest, app_cmd_calibrate, app_cmd_release, app_cmd_ledger, app_cmd_semgen,
    app_cmd_learn, app_cmd_eval, app_cmd_bench, app_cmd_ctl, app_cmd_healthcheck, app_cmd_config,
    app_cmd_windows;

/* The process skeleton of a long-running service command (app/serve.c): app_serve_init
 * makes the loop; the command starts its service on s->loop with app_serve_on_done (arg s)
 * as its on_done and hands the result to app_serve_run, which (on success) stops the service
 * gracefully on the first SIGINT/SIGTERM (app_shutdown_begin: a second signal or the
 * watchdog ends the process), prints its summary when it is done, frees it and closes the
 * loop. A failed start prints "gcdp <cmd>: <why>" and returns 2 for CORE_ECONFIG /
 * CORE_ESTATE, else 1. Returns the exit status: 0 when the service ended with CORE_OK. */
#include <uv.h>
struct app_service_ops {
    const char *cmd;         /* "ingest", ... (messages, watchdog) */
    const char *waiting_for; /* what a graceful shutdown waits for (watchdog text) */
    void (*stop)(void *svc); /* begin the graceful shutdown */
    void (*summary)(const void *svc, core_err status); /* one line on stdout */
    void (*free)(void *svc);
};
struct app_serve {
    uv_loop_t loop;
    uv_signal_t sigint, sigterm;
    const struct core_config *cfg;
    const struct app_service_ops *ops;
    void *svc;
    core_err status;
    bool signals;
};
void app_serve_init(struct app_serve *s, const struct core_config *cfg,
                    const struct app_service_ops *ops);
void app_serve_on_done(void *arg, core_err status);
int app_serve_run(struct app_serve *s, void *svc, core_err started, const char *why);

/* `gcdp release --serve` (app/release_serve.c): the release service until a signal, an
 * error or exit_idle_s of silence. theta NULL: θ from topics.calibration. */
struct release_serve_args {
    const char *theta, *ledger_path, *group;
    double exit_idle_s;
};
int release_serve(struct core_config *cfg, const struct release_serve_args *a);

/* `gcdp calibrate --serve` (app/calibrate_serve.c): public θ versions from input to
 * topics.calibration until a signal (or exit_after_s > 0 seconds). */
int calibrate_serve(struct core_config *cfg, const char *input, double exit_after_s);

/* `gcdp learn --server` / `gcdp learn --participant ID` (app/learn_serve.c): the learner
 * services of lrn/fedsvc.h; `gcdp learn` hands over (its mode) when either flag is present. */
extern const struct app_command app_cmd_learn_serve;
bool learn_serve_wanted(int argc, char **argv);

/* The benchmarks (bench/), the verbs of `gcdp bench`. */
extern const struct app_command app_bench_ingest, app_bench_calibrate, app_bench_release,
    app_bench_ledger, app_bench_learner;

/* Service phase of `gcdp bench release` (bench/bench_release_service.c): windows records of
 * theta's nodes (gcdp.window/3 when binary, else gcdp.window/2 JSON) through the release
 * service on an in-process embedded broker, runs times on each ledger kind (1..15; the
 * median is reported), compared with offline_cps (the offline path's coords/s from the same
 * run). dir: scratch. */
struct cal_theta;
int bench_release_service(const struct cal_theta *theta, size_t windows, size_t batch, size_t runs,
                          double offline_cps, bool binary, const char *dir);

/* Drift phase of `gcdp bench release --drift S` (bench/bench_release_drift.c): for S seeds, the
 * simulator's regime change through the calibrate and release services on an in-process
 * embedded broker; prints the detection delay (windows from the change to the first record
 * under a new θ, seconds from the drift report to the swap) and the false alarms of the
 * no-change twin. mode: backlog or paced (DR_AHEAD unread at most), the monitor's span.
 * dir: scratch. Returns an exit status. */
struct bench_drift_mode {
    bool backlog;   /* produce every window before the services read (a backlog) */
    long long span; /* release.drift.span_ms for the phase; < 0: the key's default */
};
int bench_release_drift(size_t seeds, const struct bench_drift_mode *mode, const char *dir);

/* The plan `gcdp bench release` releases with (bench/bench_release.c): n synthetic public
 * nodes, mechanism gcdp, eps_rel 1, one window a minute; *theta and *plan new (caller frees). */
struct rel_plan;
CORE_MUST_CHECK core_err bench_release_plan(size_t n, struct cal_theta **theta,
                                            struct rel_plan **plan, char *eb, size_t ebn);

/* Sampler and ledger group-commit throughput (part of `gcdp bench release`); dir: scratch. */
int bench_release_primitives(const char *dir);

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

/* First SIGINT/SIGTERM of a long-running command: stop listening (the default disposition is
 * restored, so a second signal ends the process at once, even when the loop thread is stuck
 * in a library call) and arm a watchdog: if the graceful shutdown has not finished after
 * shutdown.deadline_s, the process writes what it was waiting for (waiting_for) to stderr
 * and exits with status 1. Signal handles may be NULL. */
struct uv_signal_s;
void app_shutdown_begin(const struct core_config *cfg, const char *cmd, const char *waiting_for,
                        struct uv_signal_s *a, struct uv_signal_s *b);

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

/* `--check` of a service command (app/check.c): app_require_bootstrap, then the checks of
 * pipe/check.h. Prints "gcdp <cmd>: configuration ok" on stdout and returns 0, or prints
 * "gcdp <cmd>: configuration error: <key or flag>: <why>" on stderr and returns 2. cfg may
 * gain broker.bootstrap=@run/kafka.bootstrap as in app_require_bootstrap. */
#include "pipe/check.h"
int app_service_check(struct core_config *cfg, const struct pipe_check_opts *o);

/* Help text for the common options, for each subcommand's --help. */
extern const char app_common_help[];

#endif /* GCDP_APP_H */
