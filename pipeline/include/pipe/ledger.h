/* pipe/ledger.h - `gcdp ledger`'s work on a privacy ledger file: the composed cost per
 * protected unit (core/dp_tally.h) as a table or JSON lines, the carry to a new unit scheme,
 * and the one-off import of a JSONL ledger into the store. Read-only except the carry and the
 * import, which create a new file.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Thread-safety: reentrant (each call opens what it reads).
 */
#ifndef PIPE_LEDGER_H
#define PIPE_LEDGER_H

#include <stdbool.h>
#include <stdio.h>

#include "core/config.h"
#include "core/err.h"

/* What one inspection asks for (pointers borrowed). */
struct pipe_ledger_view {
    const char *prefix; /* only units starting with it; NULL: every unit */
    bool as_json;       /* one JSON object per unit on out instead of the table */
    const char *carry;  /* NULL, or: carry every unit to this new ledger instead of printing */
    FILE *out;          /* the units */
    FILE *log;          /* the ledger's header line, the totals line, the carry's result */
    const char *prog;   /* prefix of the lines on log, e.g. "gcdp ledger" */
};

/* Read the ledger at path (every row validated as an open validates it) and print its header
 * line, then either its units and totals or, with v->carry, create that ledger with this
 * configuration's scheme and caps (release.ledger.*, ingest.period_ms) holding what path
 * spent, per new unit (core_dp_tally_carry_to).
 * Returns CORE_OK; CORE_ECONFIG for a usage error (v->carry with v->prefix, or a carry target
 * that exists); any other code for an unreadable or corrupt ledger or a failed carry (eb). */
CORE_MUST_CHECK core_err pipe_ledger_view(const char *path, const struct pipe_ledger_view *v,
                                          const struct core_config *cfg, char *eb, size_t ebn);

/* Import the JSONL ledger old once into the store nw (core_dp_ledger_import, with old's own
 * scheme and caps) and say so on log. Returns CORE_OK or the failure (eb: the whole line
 * after the program name); never CORE_ECONFIG. */
CORE_MUST_CHECK core_err pipe_ledger_import(const char *old, const char *nw, FILE *log,
                                            const char *prog, char *eb, size_t ebn);

#endif /* PIPE_LEDGER_H */
