/* core/dp_ledger_cfg.h - the privacy ledger as the configuration describes it: its unit
 * scheme and its back end (JSONL or store), one owner for every command and service that
 * charges it (calibrate, release, gcdp run, the checks).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Keys read: release.ledger.slot_ms, release.policy.time_radius, ingest.period_ms (the
 * scheme; each window's provenance must agree), release.ledger.cap_eps and cap_delta (the
 * cap), release.ledger.path, release.ledger.store,
 * release.ledger.replay_horizon_ms and state.dir. They are declared by the stages' key tables
 * (the configuration must hold them).
 * Thread-safety: as the configuration (read-only use).
 */
#ifndef CORE_DP_LEDGER_CFG_H
#define CORE_DP_LEDGER_CFG_H

#include <stdbool.h>
#include <stddef.h>

#include "core/config.h"
#include "core/dp_ledger.h"

/* The ledger's unit scheme from configuration into out. */
void core_dp_scheme_from_config(const struct core_config *cfg, struct core_dp_scheme *out);

/* The ledger's lifetime cap from configuration: release.ledger.cap_eps and cap_delta; rho 0
 * (no mechanism that charges a ledger charges zCDP). */
void core_dp_cap_from_config(const struct core_config *cfg, struct core_dp_cost *out);

/* The ledger's path: flag (a --ledger FILE, used as given) when not NULL, else
 * release.ledger.path, relative to state.dir unless absolute.
 *   create  create state.dir (with parents) when the path is under it; false for checks
 *           that must not write.
 *   buf     out: the path, n bytes.
 * Returns CORE_OK, CORE_ECONFIG (an empty release.ledger.path or state.dir, a path that does
 * not fit) or CORE_EIO (state.dir cannot be created), with eb saying why. */
CORE_MUST_CHECK core_err core_dp_ledger_path(const struct core_config *cfg, const char *flag,
                                             bool create, char *buf, size_t n, char *eb,
                                             size_t ebn);

/* release.ledger.store resolved (relative: under state.dir) into buf; "" when no store is
 * configured. Returns 0, or -1 when it does not fit or is relative with state.dir empty
 * (refused as core_dp_ledger_path refuses it: never under the working directory). */
int core_dp_ledger_store_path(const struct core_config *cfg, char *buf, size_t n);

/* Open the ledger opts describes on the back end the configuration names:
 * release.ledger.store empty -> the JSONL ledger (core_dp_ledger_open); set -> the store
 * (core_dp_ledger_open_store) with release.ledger.replay_horizon_ms, opts->path being its
 * audit log. Returns as those, or CORE_ECONFIG when core_dp_ledger_store_path refuses the store
 * path (eb says why). */
CORE_MUST_CHECK core_err core_dp_ledger_open_config(const struct core_config *cfg,
                                                    const struct core_dp_ledger_opts *opts,
                                                    struct core_dp_ledger **out, char *eb,
                                                    size_t ebn);

#endif /* CORE_DP_LEDGER_CFG_H */
