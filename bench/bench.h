/* bench.h - the benchmarks of `gcdp bench <what>` (cmd_bench.c lists them) and the phases
 * bench_release.c runs from its sibling files.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef GCDP_BENCH_H
#define GCDP_BENCH_H

#include <stdbool.h>
#include <stddef.h>

#include "cli.h"
#include "core/err.h"

/* The verbs of `gcdp bench`. */
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

#endif /* GCDP_BENCH_H */
