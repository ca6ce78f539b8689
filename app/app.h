/* app.h - the gcdp executable's commands: their table entries (each a `struct app_command` of
 * the driver, cli/cli.h) and the service commands' entry points. The driver, the flag tables
 * and the helpers every command shares are cli/ (common.h, serve.h); the benchmarks bench/.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef GCDP_APP_H
#define GCDP_APP_H

#include <stdbool.h>

#include "cli.h"
#include "common.h"
#include "core/config.h"
#include "core/err.h"
#include "serve.h"

/* The top-level commands, in `gcdp --help` order; NULL-terminated (app/commands.c). */
extern const struct app_command *const app_commands[];

extern const struct app_command app_cmd_run, app_cmd_broker, app_cmd_simulate, app_cmd_replay,
    app_cmd_ingest, app_cmd_calibrate, app_cmd_release, app_cmd_ledger, app_cmd_semgen,
    app_cmd_learn, app_cmd_eval, app_cmd_bench, app_cmd_ctl, app_cmd_healthcheck, app_cmd_config,
    app_cmd_windows;

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

#endif /* GCDP_APP_H */
