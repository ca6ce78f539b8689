/* pipe/release_proc.h - `gcdp release --serve` as one process: the release service
 * (rel/service.h) on its ledger, with the ledger's audit log mirrored to topics.audit
 * (core/audit_mirror.h; release.audit.mirror). Stopping it stops the service (graceful:
 * pending group committed, acknowledgements awaited, offsets committed, groups left), then
 * the mirror sends the last committed rows; on_done follows.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Thread-safety: every call on the thread that runs the loop.
 */
#ifndef PIPE_RELEASE_PROC_H
#define PIPE_RELEASE_PROC_H

#include <stdio.h>

#include <uv.h>

#include "core/config.h"
#include "core/err.h"
#include "core/metrics.h"

struct pipe_release_proc;

/* How the process runs (pointers borrowed, outliving the process). */
struct pipe_release_proc_opts {
    const char *theta;  /* θ file, or NULL: the newest version on topics.calibration */
    const char *group;  /* consumer group of topics.windows */
    double exit_idle_s; /* > 0: stop after this long with nothing consumed */
    void (*on_done)(void *arg, core_err status); /* the service and the mirror are done */
    void *arg;
};

/* Open the ledger at ledger_path (rel_ledger_open: release's scheme and caps, locked).
 *   out  on CORE_OK a new process, not started; free with pipe_release_proc_free().
 * Returns CORE_OK or rel_ledger_open's error (CORE_ESTATE / CORE_ECONFIG: a ledger bound to
 * another scheme or caps, a configuration error; eb says why). */
CORE_MUST_CHECK core_err pipe_release_proc_new(const struct core_config *cfg,
                                               const char *ledger_path,
                                               struct pipe_release_proc **out, char *eb,
                                               size_t ebn);

/* Start the mirror (unless release.audit.mirror is false) and the service on loop. On
 * failure whatever started is closed again (run the loop once more to finish closing).
 *   cfg, metrics  borrowed, outliving the process.
 * Returns CORE_OK, or the mirror's or rel_service_new's error (eb). */
CORE_MUST_CHECK core_err pipe_release_proc_start(struct pipe_release_proc *p, uv_loop_t *loop,
                                                 const struct core_config *cfg,
                                                 const struct pipe_release_proc_opts *o,
                                                 struct core_metrics *metrics, char *eb,
                                                 size_t ebn);

/* Begin the graceful stop; on_done is called when the service and the mirror are done. */
void pipe_release_proc_stop(struct pipe_release_proc *p);

/* The one-line JSON summary (status, counts by refusal reason, θ, changelog, audit mirror)
 * to f, flushed. */
void pipe_release_proc_summary_print(FILE *f, const struct pipe_release_proc *p, core_err status);

/* Free the service and the mirror (their handles close on the next loop run). The ledger
 * stays open until pipe_release_proc_free. */
void pipe_release_proc_stop_free(struct pipe_release_proc *p);

/* Free what is left (the ledger) and p. NULL-safe. */
void pipe_release_proc_free(struct pipe_release_proc *p);

#endif /* PIPE_RELEASE_PROC_H */
