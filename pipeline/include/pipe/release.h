/* pipe/release.h - the offline `gcdp release` around the record loop of rel/offline.h: θ and
 * the options from the configuration, the input (file or standard input), the ledger, the
 * output file (temporary, renamed at the end), the plan-only mode and the closing counts.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Thread-safety: one run at a time per process (noise from the OS CSPRNG, wiped at the end).
 */
#ifndef PIPE_RELEASE_H
#define PIPE_RELEASE_H

#include <stdbool.h>
#include <stdio.h>

#include "core/config.h"
#include "core/err.h"

/* What one offline run asks for (pointers borrowed). */
struct pipe_release_offline {
    const char *theta;       /* θ file (required) */
    const char *input;       /* window records; "-": standard input (refused when a terminal) */
    const char *output;      /* released records; "-": standard output, line-buffered */
    const char *ledger_path; /* resolved ledger path (unused with plan_only) */
    const char *theta_out;   /* NULL, or also write θ with its release part here */
    bool skip_refused;       /* report a refused record and go on */
    bool plan_only;          /* print the plan of the first record as JSON; no ledger, no output */
    FILE *log;               /* every message, one line each, prefixed "<prog>: " */
    const char *prog;        /* e.g. "gcdp release" */
};

/* Run the offline release: every message goes to req->log.
 *   cfg  borrowed; release.*, ingest.period_ms (the ledger's unit scheme).
 * Returns CORE_OK; CORE_ECONFIG for a usage, configuration or θ error (configuration, θ,
 * input from a terminal or a directory, a ledger bound to another scheme, no plan for θ and
 * the records' provenance); any other code for a runtime failure or refusal. */
CORE_MUST_CHECK core_err pipe_release_offline(const struct core_config *cfg,
                                              const struct pipe_release_offline *req);

#endif /* PIPE_RELEASE_H */
