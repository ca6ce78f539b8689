/* commands.c - the table of gcdp's commands (app.h), in `gcdp --help` order. */
#include "app.h"

const struct app_command *const app_commands[] = {
    &app_cmd_run,
    &app_cmd_broker,
    &app_cmd_simulate,
    &app_cmd_replay,
    &app_cmd_ingest,
    &app_cmd_calibrate,
    &app_cmd_release,
    &app_cmd_ledger,
    &app_cmd_semgen,
    &app_cmd_learn,
    &app_cmd_eval,
    &app_cmd_bench,
    &app_cmd_ctl,
    &app_cmd_healthcheck,
    &app_cmd_config,
    &app_cmd_windows,
    NULL,
};
