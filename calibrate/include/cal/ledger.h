/* cal/ledger.h - a private calibration charged to the write-ahead privacy ledger
 * (DESIGN §5: every private recalibration is charged to the ledger first; gc-dp Theorem 1:
 * a protected unit's loss is ε_cal + ε_rel per calibrate + release invocation).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Units are the release stage's units (core_dp_units, docs/release.md, "Composition"):
 * '<device>|<slot>' with slot = floor(t / slot_ms). A calibration row with raw timestamp ts
 * charges, for every listed device, every slot of [ts − widen, ts + widen], widen = the
 * release policy's time radius in ms (release.policy.time_radius × period) plus half a
 * period rounded up: ingest snaps a reading to the nearest period grid point, so the slot of
 * the snapped time that release charges is always among these (one reading, one unit, in
 * both stages). So a unit that
 * is both in the calibration data and in released windows is charged ε_cal + ε_rel, and the
 * same lifetime cap (release.ledger.cap_*) bounds the sum.
 *
 * Protocol of cal_calibrate_charged (core/dp_ledger.h):
 *   1. lookup 'calibrate|<version>' -> present: return the stored θ bytes (replay: no noise,
 *      no charge);
 *   2. charge ε_cal = ε_G + ε_τ + ε_μ + ε_ξ (rounded up) to every unit BEFORE any noise is
 *      drawn; CORE_EBUDGET -> refused, nothing drawn, nothing reserved;
 *   3. calibrate (noise); on failure every reservation is cancelled;
 *   4. encode θ and commit it (write + fsync) under the release id 'calibrate|<version>';
 *      only then does the caller write or publish the returned bytes.
 * More than CORE_DP_LEDGER_MAX_UNITS units are charged as several rows 'calibrate|<v>#<k>'
 * (k = 1..parts−1, disjoint units, output a small JSON marker) plus the head row, all in
 * ONE group commit with the head last: the core ledger writes a batch with one write(2) and
 * cuts only a torn last line on reopen, so a durable head implies durable parts (a replay
 * also checks that the parts are present and refuses if not).
 *
 * Thread-safety: one ledger object, one thread (core_dp_ledger's rule).
 */
#ifndef CAL_LEDGER_H
#define CAL_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cal/calibrate.h"
#include "cal/matrix.h"
#include "core/dp_acct.h"
#include "core/dp_ledger.h"
#include "core/dp_rng.h"
#include "core/err.h"

#define CAL_LEDGER_MECH         "calibrate" /* mechanism name in the ledger rows */
#define CAL_LEDGER_MAX_DEVICES  64u         /* devices one calibration may cover */
#define CAL_LEDGER_MAX_DEVICE   200u        /* bytes of a device id */
#define CAL_LEDGER_MAX_UNITS    (1u << 20)  /* units one calibration may charge */
#define CAL_LEDGER_MAX_ROW_SPAN 1024        /* slots one row may charge (widen / slot_ms) */

struct cal_ledger_opts {
    const char *const *devices; /* borrowed, n_devices (1..MAX_DEVICES) device ids */
    size_t n_devices;
    int64_t slot_ms;         /* release.ledger.slot_ms, >= 1 */
    int64_t widen_ms;        /* time_radius x period + ceil(period / 2), >= 0 */
    struct core_dp_cost cap; /* the ledger's lifetime cap (for the refusal message only) */
    int64_t row_len_ms;      /* >= 0: each row stands for [ts, ts + row_len_ms) (a window
                                of that length; 0: one instant), so it charges the slots
                                of [ts - widen, ts + row_len_ms - 1 + widen] */
};

/* Unit names, sorted by device (in the given order) then slot. */
struct cal_units {
    size_t n;
    char **names; /* owned */
};

/* The units a calibration matrix covers (needs mx->ts).
 *   out  new object; caller frees with cal_units_free().
 * Returns CORE_OK, CORE_EINVAL (no timestamps, no/bad device, slot_ms < 1, widen_ms < 0,
 * a timestamp beyond ±2^62; errbuf says which), CORE_ETOOBIG (more than MAX_UNITS units or
 * a row spanning more than MAX_ROW_SPAN slots). */
CORE_MUST_CHECK core_err cal_ledger_units(const struct cal_matrix *mx,
                                          const struct cal_ledger_opts *o, struct cal_units **out,
                                          char *errbuf, size_t errbuf_size);
void cal_units_free(struct cal_units *u); /* NULL-safe */

/* widen_ms for the ledger's unit scheme: time_radius x period_ms + ceil(period_ms / 2). A
 * raw reading time ts is snapped by ingest to the nearest period point, at most half a
 * period away, and release charges the snapped time's slot (widened by the radius): every
 * such slot lies in [ts - widen, ts + widen]. */
int64_t cal_ledger_widen_ms(const struct core_dp_scheme *s);

/* Private mode: the ledger's unit options from configuration, the release stage's keys
 * (core/dp_ledger_cfg.h: the scheme and the cap exactly as release binds them), so both
 * stages name and cap the same units (docs/release.md "Composition"). devices borrowed.
 * sc out: the scheme. */
struct core_config;
void cal_ledger_opts_from_config(const struct core_config *cfg, const char *const *devices,
                                 size_t n_devices, struct cal_ledger_opts *lo,
                                 struct core_dp_scheme *sc);

/* ε_cal = ε_G + ε_τ + ε_μ + ε_ξ rounded up (what is charged per unit). */
double cal_eps_cal_charge(const struct cal_eps_cal *e);

/* Result of one charged calibration. */
struct cal_charged {
    char *bytes; /* owned θ JSON (the exact text written and published); free() */
    size_t len;
    uint64_t version;    /* θ version (the release id is 'calibrate|<version>') */
    bool replayed;       /* stored bytes from the ledger: no noise drawn, nothing charged */
    bool replayed_other; /* replay whose stored θ has another config_version or n_cal than
                            this run's input/configuration (republished unchanged) */
    size_t n_units;      /* units charged (0 on replay) */
    size_t n_parts;      /* ledger rows written (0 on replay) */
    double eps_charged;  /* per unit (0 on replay) */
    struct cal_report rep;
};

/* One private calibration under the ledger protocol above.
 *   ledger  borrowed, open (core_dp_ledger_open with the release stage's path and caps).
 *   mx      borrowed calibration matrix with row timestamps.
 *   o       borrowed; mode must be private; version 0 = milliseconds since the epoch now.
 *   lo      borrowed unit options.
 *   source  optional short description stored in θ ("csv:file.csv"), no values.
 *   rng     the noise source (core_rng_os() in production).
 *   out     filled on CORE_OK (release with cal_charged_cleanup); zeroed otherwise.
 * Returns CORE_OK, CORE_ECONFIG (inconsistent calibrate options, nothing charged),
 * CORE_EINVAL / CORE_ETOOBIG (units, data), CORE_EBUDGET (a unit's lifetime cap: errbuf
 * names the unit, its spent ε, ε_cal and the cap; nothing drawn, nothing charged),
 * CORE_EEXIST (a part row of this version is in the ledger without its head: an earlier
 * commit was torn; use another calibrate.version), CORE_EINVARIANT (a stored θ that does
 * not parse or whose parts are missing), CORE_EIO (ledger commit; nothing may be
 * published), CORE_ERNG / CORE_ENUMERIC (calibration failed; charges cancelled). */
CORE_MUST_CHECK core_err cal_calibrate_charged(struct core_dp_ledger *ledger,
                                               const struct cal_matrix *mx,
                                               const struct cal_opts *o,
                                               const struct cal_ledger_opts *lo, const char *source,
                                               const struct core_rng *rng, struct cal_charged *out,
                                               char *errbuf, size_t errbuf_size);
void cal_charged_cleanup(struct cal_charged *c); /* NULL-safe; frees bytes */

/* θ as the bytes `gcdp calibrate` writes: JSON, one-space indent, 17 significant digits,
 * no trailing newline (the same text cal_theta_save_file writes).
 *   bytes  new NUL-terminated string; caller frees with free(). */
CORE_MUST_CHECK core_err cal_theta_to_bytes(const struct cal_theta *t, char **bytes, size_t *len,
                                            char *errbuf, size_t errbuf_size);

/* Write bytes to path atomically: a temporary file in the same directory, fsync, rename. */
CORE_MUST_CHECK core_err cal_bytes_save_file(const char *bytes, size_t len, const char *path,
                                             char *errbuf, size_t errbuf_size);

#endif /* CAL_LEDGER_H */
