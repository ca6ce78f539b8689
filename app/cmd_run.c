/* cmd_run.c - `gcdp run`: the whole pipeline in one command (pipeline/, pipe/run.h); this
 * file is its command line. */
#include <stdio.h>

#include "app.h"
#include "flags.h"
#include "help_texts.h"
#include "pipe/run.h"
#include "sim/sim.h"

#define AT(f) APP_FLAG_AT(struct pipe_run_opts, f)

static const struct app_flag run_flags[] = {
    {"duration", APP_FLAG_DBL, AT(duration_s), .lo = 0, .hi = 1e7},
    {"devices", APP_FLAG_UINT, AT(devices), .lo = 1, .hi = SIM_MAX_DEVICES},
    {"rate", APP_FLAG_DBL, AT(rate), .lo = 0, .hi = 1e7, .flags = APP_FLAG_OPEN_LO},
    {"seed", APP_FLAG_UINT, AT(seed), .hi = DBL_MAX},
    {"no-simulator", APP_FLAG_TRUE, AT(no_sim)},
    {"dir", APP_FLAG_STR, AT(dir)},
    {"ledger", APP_FLAG_STR, AT(ledger)},
    {"calibration", APP_FLAG_STR, AT(calibration)},
    {"sites", APP_FLAG_UINT, AT(sites), .lo = 1, .hi = 64},
    {"bootstrap-file", APP_FLAG_STR, AT(bootstrap_file)},
    {.name = NULL},
};

#undef AT

static int cmd_main(struct app_call *call)
{
    struct pipe_run_opts o;
    bool forced;
    core_err rc;

    pipe_run_opts_default(&o);
    if (app_flags_parse_only("run", run_flags, call->argc, call->argv, &o, NULL) != 0)
        return APP_EXIT_USAGE;
    rc = pipe_run(call->cfg, &o, &forced);
    if (forced)
        call->cfg = NULL; /* stages may still read it: not freed (cli.h) */
    return rc == CORE_OK ? APP_EXIT_OK : rc == CORE_ECONFIG ? APP_EXIT_USAGE : APP_EXIT_FAILURE;
}

const struct app_command app_cmd_run = {
    .name = "run",
    .summary = "run the whole pipeline (embedded broker + simulator + all stages)",
    .help = app_help_run,
    .options = run_flags,
    .run = cmd_main,
    .component = "run",
};
