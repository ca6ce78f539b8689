/* pipe/run.h - `gcdp run`: the whole pipeline in one process (the orchestration library: it
 * needs every stage, so it is none of them).
 * SPDX-License-Identifier: Apache-2.0
 *
 * The embedded broker as a child process `<this executable> broker` (skipped when
 * broker.bootstrap is set), the simulator, ingest, calibrate, release and the federated
 * learner, started downstream first and stopped in data-flow order on --duration, SIGINT or
 * SIGTERM (a second signal skips the waiting). A progress line goes to stderr every second;
 * at the end a readable summary on stderr and one JSON line on stdout (docs/operations.md,
 * "gcdp run").
 * Thread-safety: one run per process (it owns SIGINT/SIGTERM while it runs).
 */
#ifndef PIPE_RUN_H
#define PIPE_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include "core/config.h"
#include "core/err.h"

struct pipe_run_opts {
    double duration_s;
    const char *bootstrap_file;
    size_t devices;
    double rate;
    unsigned long long seed;
    bool no_sim;
    const char *dir;         /* --dir: this run's files (default "run") */
    const char *ledger;      /* --ledger FILE; NULL: <dir>/ledger-<UTC stamp>.jsonl (new) */
    const char *calibration; /* --calibration FILE (public CSV); NULL: generated */
    size_t sites;            /* --sites: learner participants (device blocks) */
};

/* The defaults of `gcdp run`'s flags: until a signal, 100 devices, 2000 readings/s, seed 1,
 * the simulator on, --dir run, a new ledger, a generated calibration, 4 sites. */
void pipe_run_opts_default(struct pipe_run_opts *o);

/* Run the pipeline until o->duration_s (0: a signal) and print its summary.
 *   cfg     borrowed; the run sets its defaults (keys not set explicitly) in it. When
 *           *forced is true on return, stages may still be using it: the caller must leave
 *           it (and the process) to process exit.
 *   forced  out: the stages did not stop within 5 s of a second signal.
 * Returns CORE_OK; CORE_ECONFIG when a stage refused a setting at start (e.g. a ledger made
 * with other caps); CORE_ESTATE when a stage failed, an offset gap was detected, no window
 * was released, or the stop was forced. */
CORE_MUST_CHECK core_err pipe_run(struct core_config *cfg, const struct pipe_run_opts *o,
                                  bool *forced);

#endif /* PIPE_RUN_H */
