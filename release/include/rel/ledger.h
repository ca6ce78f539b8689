/* rel/ledger.h - the privacy ledger the release service charges, opened from configuration.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Thread-safety: call from one thread; the ledger returned is as core/dp_ledger.h says.
 */
#ifndef REL_LEDGER_H
#define REL_LEDGER_H

#include <stddef.h>

#include "core/config.h"
#include "core/dp_ledger.h"

/* The ledger `gcdp release --serve` (and `gcdp run`) charges, at path: the JSONL or store
 * back end (release.ledger.store) with release.ledger.cap_* and the unit scheme of the
 * configuration (core_dp_scheme_from_config); lo filled (lo->path borrows path).
 *   out  on CORE_OK a new ledger; caller frees with core_dp_ledger_free().
 * Returns CORE_OK; CORE_ECONFIG (a release.* key refused) or the ledger's own refusal
 * (CORE_ESTATE / CORE_ECONFIG: another scheme or caps than the ledger's; CORE_EAGAIN: held
 * by another process; else I/O), with eb saying why ("configuration error: ...", or
 * "ledger '<path>': <why> (<code>)"). */
CORE_MUST_CHECK core_err rel_ledger_open(const struct core_config *cfg, const char *path,
                                         struct core_dp_ledger_opts *lo,
                                         struct core_dp_ledger **out, char *eb, size_t ebn);

#endif /* REL_LEDGER_H */
