/* core/dp_tally.h - what a privacy ledger spent, per protected unit, read without opening it
 * for writing; and the carry of that spending to a new ledger with another unit scheme or
 * caps (`gcdp ledger`, `gcdp ledger --carry-to`).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Every row is validated as release and calibrate validate it when they open the ledger
 * (core_dp_ledger_scan); a release id committed twice makes the ledger corrupt. Totals
 * compose sequentially within a unit and fail closed (an overflowing sum is +inf).
 * Thread-safety: a tally is used by one thread.
 */
#ifndef CORE_DP_TALLY_H
#define CORE_DP_TALLY_H

#include <stddef.h>
#include <stdint.h>

#include "core/dp_ledger.h"
#include "core/err.h"

struct core_dp_tally;

/* Read the ledger at path (read-only; safe while a release runs).
 *   prefix  NULL, or count only units starting with it.
 *   out     on CORE_OK a new tally; free with core_dp_tally_free().
 * Returns CORE_OK, or the scan's error / CORE_EPARSE (an id committed twice) with eb saying
 * why. */
CORE_MUST_CHECK core_err core_dp_tally_new(const char *path, const char *prefix,
                                           struct core_dp_tally **out, char *eb, size_t ebn);

void core_dp_tally_free(struct core_dp_tally *t); /* NULL-safe */

/* The scheme and caps bound in the ledger's header; rows committed; torn last lines. */
void core_dp_tally_header(const struct core_dp_tally *t, struct core_dp_scheme *scheme,
                          struct core_dp_cost *cap, uint64_t *rows, uint64_t *torn);

/* Calls fn for every unit counted, in unit order, with the number of releases that charged
 * it and their composed total. */
typedef void core_dp_tally_fn(void *arg, const char *unit, size_t releases,
                              const struct core_dp_cost *total);
void core_dp_tally_foreach(struct core_dp_tally *t, core_dp_tally_fn *fn, void *arg);

/* Create the ledger new_path with scheme nw and caps cap, holding what the tally's ledger
 * (old_path; the tally must count every unit: prefix NULL) spent: every new unit starts at
 * the maximum total of any old unit whose time span it overlaps, and every old release is
 * copied with its bytes and charged nothing (a replay republishes the same bytes). On any
 * failure new_path is removed: a partial carry would undercount.
 *   n_units, n_releases  out: the new units charged and the releases copied.
 * Returns CORE_OK; CORE_EEXIST when new_path exists (or is old_path); CORE_EBUDGET when a
 * carried total is over the new cap; others from the ledgers; eb says why (may be "" when
 * the ledger gave no reason). */
CORE_MUST_CHECK core_err core_dp_tally_carry_to(struct core_dp_tally *t, const char *old_path,
                                                const struct core_dp_scheme *nw,
                                                const struct core_dp_cost *cap,
                                                const char *new_path, size_t *n_units,
                                                size_t *n_releases, char *eb, size_t ebn);

#endif /* CORE_DP_TALLY_H */
