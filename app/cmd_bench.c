/* cmd_bench.c - `gcdp bench <what>`: benchmarks that print figures and ratios against a
 * baseline measured in the same run (machines are shared and noisy: compare ratios). The
 * benchmarks themselves live in bench/. */
#include <stdio.h>

#include "app.h"
#include "bench.h"
#include "help_texts.h"

static const struct app_command *const benches[] = {
    &app_bench_ingest, &app_bench_calibrate, &app_bench_release,
    &app_bench_ledger, &app_bench_learner,   NULL,
};

const struct app_command app_cmd_bench = {
    .name = "bench",
    .summary = "benchmarks: ingest | calibrate | release | ledger | learner",
    .help = app_help_bench,
    .sub = benches,
    .sub_what = "benchmark",
    .flags = APP_CMD_NEEDS_ARG,
};
