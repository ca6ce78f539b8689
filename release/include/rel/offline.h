/* rel/offline.h - the offline release of window records read one line at a time (`gcdp
 * release`): the plan built from the first non-excluded record's provenance, then every
 * record released (or replayed byte for byte) through a releaser charging the ledger.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Thread-safety: one run per struct rel_offline, on the calling thread (the releaser may use
 * release.threads workers of its own).
 */
#ifndef REL_OFFLINE_H
#define REL_OFFLINE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cal/theta.h"
#include "core/config.h"
#include "core/dp_ledger.h"
#include "rel/plan.h"
#include "rel/release.h"

/* A refused record skipped (skip_refused): its line, the reason and the code. */
typedef void rel_offline_skip_fn(void *arg, size_t lineno, const char *why, core_err rc);

/* One offline run: the caller fills the inputs (zero the struct first), calls
 * rel_offline_run once, reads the outputs, then rel_offline_cleanup. */
struct rel_offline {
    /* in */
    const struct core_config *cfg; /* release.ledger.batch, release.threads */
    struct cal_theta *theta;       /* borrowed; with theta_out its plan fields are filled */
    struct rel_opts opts;          /* rel_opts_from_config */
    struct core_dp_ledger *ledger; /* borrowed; NULL: build the plan only (plan_only) */
    struct core_dp_scheme scheme;  /* the ledger's */
    const char *theta_out;         /* NULL, or save θ with its plan fields here */
    bool skip_refused;             /* a record refused alone is reported (on_skip), skipped */
    bool plan_only;                /* stop once the plan is built (no ledger, no output) */
    rel_offline_skip_fn *on_skip;
    void *arg;
    /* out */
    struct rel_plan *plan;    /* NULL until built; freed by rel_offline_cleanup */
    struct rel_releaser *rr;  /* NULL with plan_only; freed by rel_offline_cleanup */
    uint64_t excluded_before; /* excluded records before the plan existed */
    bool plan_failed;         /* θ, configuration and the records' provenance do not make a
                                 plan: a configuration/θ error, not a record's */
    size_t lineno;            /* the line of the error, 0 when it is not one line's */
    size_t skipped;           /* records refused and skipped */
};

/* Release every record of in, writing each released record and a newline to out; stops at
 * the first refusal after committing and writing everything before it (or, with
 * skip_refused, goes on). Returns CORE_OK, or the first error with eb saying why ("" for an
 * output error) and r->lineno its line. */
CORE_MUST_CHECK core_err rel_offline_run(struct rel_offline *r, FILE *in, FILE *out, char *eb,
                                         size_t ebn);

/* Free the plan and the releaser; NULL-safe fields. */
void rel_offline_cleanup(struct rel_offline *r);

#endif /* REL_OFFLINE_H */
