/* core/dp_ledger.h - write-ahead privacy ledger: lifetime caps per privacy unit, charge
 * before noise, durable output before publication, byte-identical replay (NOISE.md §4.9
 * option A, §4.10; DESIGN §5 release, §7.1).
 * SPDX-License-Identifier: Apache-2.0
 *
 * File: append-only JSON lines, one per committed release:
 *   {"v":1,"id":...,"mech":...,"units":[...],"eps":..,"rho":..,"delta":..,
 *    "params":{...},"out":"<base64 of the output bytes>"}
 * Doubles are printed with 17 significant digits, so a rescan rebuilds the same
 * upward-rounded totals. The first line is a header written once, when the file is created,
 * that binds the ledger to its unit scheme, caps and accounting (DESIGN §5 release):
 *   {"gcdp_ledger":2,"scheme":{"unit":"<device>|floor(t/slot_ms)","slot_ms":..,
 *    "time_radius":..,"period_ms":..},"cap":{"eps":..,"rho":..,"delta":..},
 *    "accounting":"basic"}
 * A ledger is never silently new: a path that does not exist is created with its header
 * (atomically: written under a temporary name, then linked in place); an existing file that
 * is empty, has no or another header (format 1 had no scheme), or was created with another
 * scheme or other caps is refused by name (CORE_ESTATE), never reinterpreted. Changing the
 * scheme or the caps means a new ledger file (docs/release.md, "The ledger").
 *
 * Protocol for one release (the caller is the release/calibrate/learner stage):
 *   1. core_dp_ledger_lookup(id)      -> CORE_OK: republish the stored bytes, stop.
 *   2. core_dp_ledger_charge(id, ...) -> CORE_EBUDGET: refuse the work (nothing drawn).
 *   3. draw noise, encode the output bytes;  on failure core_dp_ledger_cancel(id).
 *   4. core_dp_ledger_commit_output(id, bytes) -> on CORE_OK the row is on disk (fsync'd);
 *      only now may the caller publish the bytes.
 * Many releases may share one fsync with core_dp_ledger_commit_batch (group commit): nothing
 * of the batch may be published before it returns CORE_OK.
 *
 * Composition: a charge is added to EVERY unit listed (sequential composition per unit).
 * Overlapping windows / repeated releases / recalibrations name the same unit and add up;
 * disjoint windows name different units and do not add (parallel composition). A calibrate
 * + release invocation charges eps_cal and eps_rel as two charges (or one with the sum).
 * The cap is per unit; a charge that would take ANY listed unit above the cap in ANY field
 * (eps, rho, delta; compared on upward-rounded totals, NaN fails closed) is refused whole.
 *
 * Crash safety: a row is written with one write(2), then the file and its directory are
 * fsync'd, before commit returns. On reopen, totals are rebuilt by
 * scanning; a torn LAST line (no newline / unparseable) belongs to a commit that never
 * returned, so its output was never published; it is cut off (and counted in
 * stats.torn_dropped). A bad line that is not the last one fails the open (CORE_EPARSE):
 * the operator must inspect the file. Totals therefore never undercount a published output.
 *
 * Thread-safety: one ledger object per file, used by one thread at a time (no internal
 * lock). The file is locked with flock(LOCK_EX) so a second process gets CORE_EAGAIN.
 *
 * Two back ends behind the same functions (docs/operations.md, "Ledger store"):
 *   - core_dp_ledger_open: the JSONL file above is the ledger; every id and unit is kept in
 *     memory and the file is read whole at open. Kept as the reference implementation
 *     (the differential test drives both) and for existing files until they are imported.
 *   - core_dp_ledger_open_store: a SQLite file (WAL, synchronous=NORMAL) holds the unit
 *     totals, the replay table (release time and id -> where its row is in the audit log)
 *     and the header; the JSONL file at opts.path is the audit log (same header, same
 *     rows, the output bytes' one copy) and the write-ahead log: a group commit write(2)s its
 *     rows to it and fsyncs it (the durability point), then commits ONE store transaction.
 *     Open reads only the audit log's tail beyond what the store recorded: whole rows there
 *     (a crash between the fsync and the store's COMMIT, or a power loss that took the
 *     store's last transactions) are applied to the store, since their outputs may have been
 *     published; a torn last line (its fsync never returned) is cut off (stats.torn_dropped);
 *     an audit log shorter than the store recorded is refused (CORE_ESTATE).
 *     Memory holds pending releases, the units that can still be charged
 *     (core_dp_ledger_advance evicts the others; a charge to an evicted unit reads its total
 *     back from the store, so no decision depends on the cache) and an index of the RECENT
 *     release ids (16 B per slot, a keyed-hash tag -> the row's place; a tag match is
 *     confirmed by the row's id): those whose own time (core_dp_id_time) is after the unit
 *     cache's cut minus index_keep_ms, and those without a time. An older id is looked up in
 *     the store's (id time, id) index, so no decision depends on what is in memory either;
 *     memory is bounded by the release rate x index_keep_ms, neither by the history nor by
 *     the replay horizon. Open reads the header, five counters, one index probe and the
 *     recent ids: O(recent state), not O(history).
 *     Release time: a release's time is the earliest END of the slots of its units
 *     ("<device>|<slot>", core_dp_unit_parse). Releases and units at or before the replay
 *     floor (watermark - replay_horizon_ms, moved by core_dp_ledger_advance) are deleted;
 *     a charge naming a unit whose slot ended at or before the floor is refused with
 *     CORE_EEXPIRED -- a replay older than the horizon is refused by name, never re-noised.
 *     Units that are not "<device>|<slot>" carry no time and are never compacted.
 */
#ifndef CORE_DP_LEDGER_H
#define CORE_DP_LEDGER_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/dp_acct.h"
#include "core/err.h"

/* Input caps (STYLE P8). */
#define CORE_DP_LEDGER_MAX_ID          256        /* bytes in a release id or unit name */
#define CORE_DP_LEDGER_MAX_MECH        32         /* bytes in a mechanism name */
#define CORE_DP_LEDGER_MAX_UNITS       4096       /* units per charge */
#define CORE_DP_LEDGER_MAX_PARAMS      4096       /* bytes of params JSON per charge */
#define CORE_DP_LEDGER_MAX_OUTPUT      (1u << 24) /* output bytes per release (16 MiB) */
#define CORE_DP_LEDGER_MAX_LINE        (1u << 26) /* bytes per ledger line on reopen */
#define CORE_DP_LEDGER_DEF_MAX_TRACKED (1u << 22) /* default cap on distinct ids + units */

struct core_dp_ledger;

/* The privacy-unit scheme (one owner: calibrate, release and `gcdp ledger` all use it).
 * A protected occurrence at time t of device D belongs to unit "D|floor(t / slot_ms)". Work
 * on data spanning [t0, t1) charges every unit whose occurrences' expansion sets (time
 * radius h sampling periods) can touch the span: the slots of [t0 - h p - extra,
 * t1 - 1 + h p + extra], p = period_ms (extra: the caller's own tolerance, e.g. half a
 * period for raw reading times that ingest snaps to the period grid). */
struct core_dp_scheme {
    int64_t slot_ms;     /* >= 1 */
    int64_t time_radius; /* h >= 0, in sampling periods */
    int64_t period_ms;   /* p >= 1 */
};

#define CORE_DP_UNIT_FORMAT    "<device>|floor(t/slot_ms)"
#define CORE_DP_MAX_SPAN_UNITS 1024u /* units one span may charge */

/* Units of device over [t0, t1) widened as above, written into buf (buf_size) as consecutive
 * NUL-terminated strings pointed to by units[0..*n). Returns CORE_OK, CORE_EINVAL (bad
 * scheme, t1 <= t0, times beyond +-2^62, device empty or holding '|'), CORE_ETOOBIG (more
 * than max_units / CORE_DP_MAX_SPAN_UNITS units, or buf too small). */
CORE_MUST_CHECK core_err core_dp_units(const struct core_dp_scheme *s, const char *device,
                                       int64_t t0, int64_t t1, int64_t extra_ms, char *buf,
                                       size_t buf_size, const char **units, size_t max_units,
                                       size_t *n);

/* Slot index of time t under s (floor division); s->slot_ms >= 1. */
int64_t core_dp_unit_slot(const struct core_dp_scheme *s, int64_t t);

/* Unit name "<device>|<slot>" into buf; returns its length, or -1 when it does not fit. */
int core_dp_unit_name(char *buf, size_t n, const char *device, int64_t slot);

/* The inverse: split a unit name into its device (into dev, dev_size) and slot.
 * Returns 0, or -1 when unit is not "<device>|<integer slot>" or the device does not fit. */
int core_dp_unit_parse(const char *unit, char *dev, size_t dev_size, int64_t *slot);

/* A release id's own time, for the store back end's id lookup: the decimal integer (1..18
 * digits, epoch ms) after the id's first '|', ended by '|', '@' or the end ("<device>|<window
 * start ms>|<config>@<θ version>" as release names them). Returns 1 with *t set, 0 when the
 * id has none. Pure. */
int core_dp_id_time(const char *id, int64_t *t);

struct core_dp_ledger_opts {
    const char *path;             /* ledger file, borrowed; created (0600) if absent */
    struct core_dp_cost cap;      /* lifetime cap per unit; each field finite and >= 0
                                   * (0 forbids that kind of charge); bound in the header */
    size_t max_tracked;           /* cap on distinct release ids + units (0 -> default) */
    struct core_dp_scheme scheme; /* required; bound in the header */
};

/* The store back end (core_dp_ledger_open_store). A separate struct so that existing
 * positional initialisers of core_dp_ledger_opts keep compiling. */
struct core_dp_store_opts {
    const char *path;          /* the SQLite store file, borrowed; must differ from the audit
                                * log's path. A store that does not exist is created only when
                                * the audit log does not exist either (an existing JSONL ledger
                                * is imported once: core_dp_ledger_import) */
    int64_t replay_horizon_ms; /* releases and units whose slots ended more than this before
                                * the watermark given to core_dp_ledger_advance are deleted;
                                * 0 keeps everything. Must be >= the retention of every input
                                * topic a window may be replayed from and >= the longest span
                                * a recalibration charges (docs/release.md, "The ledger") */
    int64_t compact_step_ms;   /* the compaction floor moves in steps of at least this (0: at
                                * every core_dp_ledger_advance): one compaction then deletes a
                                * step's releases together, rewriting each page of the replay
                                * index once instead of once per advance (the store holds up
                                * to horizon + step). Callers use horizon / 4. */
    int64_t index_keep_ms;     /* ids stay in the memory index while their own time
                                * (core_dp_id_time) is after the unit cache's cut
                                * (core_dp_ledger_advance) minus this; older ones are found in
                                * the store (one indexed read). 0: CORE_DP_INDEX_KEEP_MS;
                                * < 0: 0 (tests) */
};

#define CORE_DP_INDEX_KEEP_MS 900000 /* 15 minutes */

struct core_dp_ledger_stats {
    uint64_t releases;       /* committed rows (after reopen: rows scanned + new) */
    uint64_t units;          /* distinct units with a charge */
    uint64_t pending;        /* charged, not yet committed or cancelled */
    uint64_t fsyncs;         /* durability points (fsync of file + directory) */
    uint64_t torn_dropped;   /* torn last lines cut off at open */
    uint64_t cached_units;   /* store: units held in memory (JSONL: = units) */
    uint64_t compacted;      /* store: releases deleted by compaction since open */
    uint64_t audit_bytes;    /* bytes of the ledger file (store: audit log) whose rows are
                              * committed: what a mirror may publish (core/audit_mirror.h) */
    uint64_t id_collisions;  /* store: rows read for an id that held another id (the in-memory
                              * id index keeps a 32-bit tag of a keyed hash; never a wrong
                              * answer, one read each) */
    uint64_t index_bytes;    /* store: memory of the in-memory id index (16 B per slot) */
    uint64_t index_ids;      /* store: ids in it now (the recent ones: index_keep_ms) */
    uint64_t id_store_reads; /* store: ids looked up in the store's (idt, id) index because
                              * they were older than the memory index keeps */
    double max_eps;          /* high-water mark of a unit's eps total (committed + pending)
                              * over the units this object has totalled: every unit of a JSONL
                              * ledger; store: the units charged or loaded since open */
};

/* Open (or create, when the path does not exist) the ledger and rebuild the totals.
 *   opts    borrowed; out: new object, caller frees with core_dp_ledger_free().
 *   errbuf  optional reason (line number, key name; never output bytes).
 * Returns CORE_OK, CORE_EINVAL (opts), CORE_EIO, CORE_EAGAIN (locked by another process),
 * CORE_ESTATE (empty or header-less file, format 1, or a header with another scheme / other
 * caps: errbuf names the field and both values), CORE_EPARSE (corrupt line before the
 * last), CORE_ETOOBIG (more than max_tracked). */
CORE_MUST_CHECK core_err core_dp_ledger_open(const struct core_dp_ledger_opts *opts,
                                             struct core_dp_ledger **out, char *errbuf,
                                             size_t errbuf_size);

/* Open (or create, when neither the store nor the audit log opts->path exists) a ledger on
 * the store back end; every other function then behaves as documented above, with the
 * additions marked "store". opts->path is the audit log. Returns as core_dp_ledger_open,
 * plus CORE_ESTATE when: the audit log exists without its store (import it), the store is
 * empty or not a ledger store, its header differs (errbuf names the field and both values),
 * or the audit log is shorter than the store recorded and its rows cannot be written again.
 * max_tracked caps the cache (units in memory + pending releases); a charge that finds it
 * full first drops every unit without a pending charge (their totals are in the store), and
 * gets CORE_ETOOBIG only when pending releases alone fill it. */
CORE_MUST_CHECK core_err core_dp_ledger_open_store(const struct core_dp_ledger_opts *opts,
                                                   const struct core_dp_store_opts *store,
                                                   struct core_dp_ledger **out, char *errbuf,
                                                   size_t errbuf_size);

/* Close (pending charges are dropped: their outputs were never published). NULL is a no-op. */
void core_dp_ledger_free(struct core_dp_ledger *l);

/* Reserve cost for release_id against every unit (in memory; no I/O). Must precede any
 * noise drawn for the release.
 *   release_id, mech  borrowed NUL-terminated strings (1..MAX_ID / 1..MAX_MECH bytes).
 *   units             borrowed array of n_units (1..MAX_UNITS) unit names; duplicates are
 *                     charged once.
 *   cost              borrowed; fields finite, >= 0.
 *   params_json       optional (NULL): public parameters as a JSON object text, stored in
 *                     the row for audit (never protected values).
 * Returns CORE_OK (reserved), CORE_EBUDGET (a unit would exceed the cap; nothing reserved),
 * CORE_EEXIST (id already committed: look it up and republish), CORE_ESTATE (id already
 * pending), CORE_EINVAL, CORE_ETOOBIG; store back end also CORE_EEXPIRED (a unit's slot ended
 * at or before the compaction floor: the release, or its replay, is older than the replay
 * horizon; refused, never re-noised) and CORE_EIO (the store cannot be read). */
CORE_MUST_CHECK core_err core_dp_ledger_charge(struct core_dp_ledger *l, const char *release_id,
                                               const char *mech, const char *const *units,
                                               size_t n_units, const struct core_dp_cost *cost,
                                               const char *params_json);

/* Drop a pending reservation (the output was not and will not be published).
 * Returns CORE_OK, CORE_ENOTFOUND. */
CORE_MUST_CHECK core_err core_dp_ledger_cancel(struct core_dp_ledger *l, const char *release_id);

/* Append the row for a pending release with its output bytes, write(2) + fsync (file and
 * directory) before returning; store back end: write(2) + fsync of the audit log, then the
 * store's transaction commits, before returning. After CORE_OK the caller may publish
 * `bytes`; after an error it must not (the reservation stays pending: retry or cancel).
 *   bytes borrowed, len in [0, MAX_OUTPUT].
 * Returns CORE_OK, CORE_ENOTFOUND (not pending), CORE_EIO, CORE_ETOOBIG, CORE_EINVAL. */
CORE_MUST_CHECK core_err core_dp_ledger_commit_output(struct core_dp_ledger *l,
                                                      const char *release_id, const void *bytes,
                                                      size_t len);

/* Group commit: n pending releases in one write(2) + one fsync (file and directory).
 * All or nothing from the caller's point of view: publish none of them unless CORE_OK.
 *   ids, bytes, lens: borrowed arrays of n. Returns as core_dp_ledger_commit_output. */
CORE_MUST_CHECK core_err core_dp_ledger_commit_batch(struct core_dp_ledger *l, size_t n,
                                                     const char *const *ids,
                                                     const void *const *bytes, const size_t *lens);

/* Stored output of a committed release, for byte-identical republication.
 *   bytes  out: new buffer (caller frees with free()); len out.
 * Returns CORE_OK, CORE_ENOTFOUND, CORE_EIO, CORE_EPARSE. */
CORE_MUST_CHECK core_err core_dp_ledger_lookup(struct core_dp_ledger *l, const char *release_id,
                                               uint8_t **bytes, size_t *len);

/* Total charged to unit (committed + pending), upward-rounded; zeros for an unknown unit
 * (store back end: a unit not in memory is read from the store).
 * Returns CORE_OK, CORE_EINVAL, CORE_EIO (store back end). */
CORE_MUST_CHECK core_err core_dp_ledger_spent(const struct core_dp_ledger *l, const char *unit,
                                              struct core_dp_cost *out);

/* Read-only header check of an existing ledger file without opening it for writing (for
 * `gcdp ledger`): fills scheme and cap from the header. Returns CORE_OK, CORE_EIO,
 * CORE_ESTATE (empty / header-less / format 1). */
CORE_MUST_CHECK core_err core_dp_ledger_read_header(const char *path, struct core_dp_scheme *scheme,
                                                    struct core_dp_cost *cap, char *errbuf,
                                                    size_t errbuf_size);

/* Parse one ledger row as core_dp_ledger_open does (id, mech, units, costs, output): the one
 * validation `gcdp ledger` and the open scan share. On CORE_OK the borrowed pointers point
 * into row. Returns CORE_OK or CORE_EPARSE (errbuf: which field). */
struct core_dp_row {
    const char *id, *mech;
    const json_t *units; /* array of unit strings, non-empty */
    struct core_dp_cost cost;
};
CORE_MUST_CHECK core_err core_dp_ledger_parse_row(const json_t *row, struct core_dp_row *out,
                                                  char *errbuf, size_t errbuf_size);

/* Read-only scan of a ledger file (for `gcdp ledger`; never writes, never locks): checks the
 * header (core_dp_ledger_read_header), then calls fn for every committed row, validated by
 * core_dp_ledger_parse_row exactly as an open does. A bad or unterminated LAST line is a
 * torn append (never published): counted in *torn, not passed to fn; a bad line before the
 * last is corruption. fn returns 0 to go on, non-zero to stop (CORE_ESTATE).
 * Returns CORE_OK, CORE_EIO, CORE_ESTATE (header), CORE_EPARSE (corrupt line: errbuf names
 * the line and the field). */
typedef int core_dp_row_fn(void *arg, const struct core_dp_row *row);
CORE_MUST_CHECK core_err core_dp_ledger_scan(const char *path, struct core_dp_scheme *scheme,
                                             struct core_dp_cost *cap, core_dp_row_fn *fn,
                                             void *arg, uint64_t *torn, char *errbuf,
                                             size_t errbuf_size);

/* Why a charge of cost to units was (or would be) refused: names the first unit the cap
 * refuses (the same decision core_dp_ledger_charge makes), what it has spent, what `what`
 * needs ("release", "calibration") under the name eps_name ("eps", "eps_cal") and the cap.
 * Public accounting numbers only. Always writes errbuf. */
void core_dp_ledger_refusal(const struct core_dp_ledger *l, const char *const *units, size_t n,
                            const struct core_dp_cost *cost, const char *what, const char *eps_name,
                            char *errbuf, size_t errbuf_size);

/* Tell the ledger how far time has gone (store back end; a no-op returning CORE_OK for the
 * JSONL one). Units whose slot ended at or before watermark_ms - lateness_ms - time_radius *
 * period_ms and that have no pending charge leave the memory cache (their totals stay in the
 * store; units without pending charges also re-read their committed total, which a cancel's
 * upward rounding may have left above it). With replay_horizon_ms > 0, releases and units
 * whose time (slot end) is at or before watermark_ms - replay_horizon_ms are deleted in one
 * transaction, and later charges naming such units are refused (CORE_EEXPIRED). The floor
 * never moves back. Returns CORE_OK, CORE_EINVAL, CORE_EIO (nothing deleted). */
CORE_MUST_CHECK core_err core_dp_ledger_advance(struct core_dp_ledger *l, int64_t watermark_ms,
                                                int64_t lateness_ms);

/* One-off migration: build the store store_path from the existing JSONL ledger opts->path
 * (read with the JSONL back end: its header must match opts' scheme and caps; a torn last
 * line is cut off as an open does). The JSONL file becomes the store's audit log, kept in
 * place. The totals of every unit and every release's output are verified equal in the
 * new store before it is put in place. *rows: releases imported.
 * Returns CORE_OK, CORE_EEXIST (store_path exists: nothing done), the errors of
 * core_dp_ledger_open, CORE_EIO (no JSONL file), CORE_EINVARIANT (verification failed: the
 * store is not put in place). */
CORE_MUST_CHECK core_err core_dp_ledger_import(const struct core_dp_ledger_opts *opts,
                                               const char *store_path, uint64_t *rows, char *errbuf,
                                               size_t errbuf_size);

/* Counters (no protected values). Always succeeds. */
void core_dp_ledger_stats(const struct core_dp_ledger *l, struct core_dp_ledger_stats *out);

/* ---- ε spent per unit: max and quantiles (status and /metrics) ---- */

/* The distribution of ε totals (committed + pending, upward-rounded, as the cap compares)
 * over the units this object holds in memory: every unit of a JSONL ledger; store back end:
 * the cached units (those that can still be charged; evicted units are not read back).
 * Accounting numbers only (public), never protected values. */
struct core_dp_eps_summary {
    uint64_t units;       /* units summarized; 0: every field below is 0 */
    double max;           /* largest unit total */
    double p50, p90, p99; /* nearest-rank quantiles: the smallest total t such that at
                             least q of the units have a total <= t */
};

/* Fill out (one allocation of `units` doubles and three selections: expected O(n); meant
 * for a status answer or a periodic gauge, not per window). l or out NULL: out untouched.
 * Thread-safety: as every function of the ledger (the caller's thread). */
void core_dp_ledger_eps_summary(const struct core_dp_ledger *l, struct core_dp_eps_summary *out);

/* ---- Several instances: rows follow their partitions (issue 12; docs/release.md,
 * "Several instances") ----
 * An instance publishes each committed row on a changelog topic (core_dp_ledger_row gives
 * the row's text: the audit row format above, the one row format) and, when it is given
 * a partition, adopts every row of that partition's changelog into its own ledger
 * (core_dp_ledger_adopt_row) before it releases any window of it. Both back ends. */

/* The committed row of release_id as text: the ledger line (audit row) without its
 * newline, NUL-terminated. row: new buffer (caller frees with free()); len: bytes before
 * the NUL. Returns CORE_OK, CORE_EINVAL, CORE_ENOTFOUND (not committed here; store back
 * end: or compacted), CORE_EIO, CORE_EPARSE (the stored line is not that row). */
CORE_MUST_CHECK core_err core_dp_ledger_row(struct core_dp_ledger *l, const char *release_id,
                                            char **row, size_t *len);

/* What core_dp_ledger_adopt did (counters, never values). */
enum core_dp_adopted {
    CORE_DP_ADOPTED_NEW,      /* recorded: charged and committed (durable) */
    CORE_DP_ADOPTED_OVER_CAP, /* recorded, and a unit's total is now above the cap */
    CORE_DP_ADOPTED_SAME,     /* already committed here with the same bytes: nothing done */
    CORE_DP_ADOPTED_EXPIRED   /* store: a unit is at or before the compaction floor (the
                                 release is older than the replay horizon): not recorded */
};

/* Adopt a release another instance committed (and may have published): a fact, so it is
 * recorded WITHOUT the cap check (a unit's total may end above the cap: *what =
 * CORE_DP_ADOPTED_OVER_CAP and a warning names the release id and the unit). Arguments as
 * core_dp_ledger_charge plus the output (bytes, len as core_dp_ledger_commit_output);
 * durable (fsync / store COMMIT) before CORE_OK. The id already committed with the same
 * bytes: no-op. Never refused for the cap; never re-noised.
 * Returns CORE_OK (*what says which), CORE_EINVARIANT (the id is committed here with OTHER
 * bytes: two outputs for one release; errbuf names the id -- fail closed, publish
 * nothing), CORE_ESTATE (the id is pending here), the errors of core_dp_ledger_charge
 * other than CORE_EBUDGET / CORE_EEXPIRED, and of core_dp_ledger_commit_output. */
CORE_MUST_CHECK core_err core_dp_ledger_adopt(struct core_dp_ledger *l, const char *release_id,
                                              const char *mech, const char *const *units,
                                              size_t n_units, const struct core_dp_cost *cost,
                                              const char *params_json, const void *bytes,
                                              size_t len, enum core_dp_adopted *what, char *errbuf,
                                              size_t errbuf_size);

/* core_dp_ledger_adopt of one row text (as core_dp_ledger_row gives it; a trailing newline
 * is allowed), validated by core_dp_ledger_parse_row. id: optional, receives the release id
 * (truncated to id_size) when the row parsed. Returns as core_dp_ledger_adopt, plus
 * CORE_EPARSE (not a ledger row, or its output is not base64; errbuf says which field). */
CORE_MUST_CHECK core_err core_dp_ledger_adopt_row(struct core_dp_ledger *l, const char *row,
                                                  size_t len, enum core_dp_adopted *what, char *id,
                                                  size_t id_size, char *errbuf, size_t errbuf_size);

/* Group adoption (a restore): rows[0..n) (lens[i] bytes each; texts as for _adopt_row) as
 * core_dp_ledger_adopt_row would adopt them one by one, the new ones made durable by ONE
 * group commit (core_dp_ledger_commit_batch). All or nothing: on an error nothing of the
 * batch is recorded (the reservations are cancelled) and *bad (optional) is the index of the
 * row that failed (n: the commit failed). The same release twice in rows: the second is
 * CORE_DP_ADOPTED_SAME when its bytes are equal, else CORE_EINVARIANT. what: n results.
 * Returns as core_dp_ledger_adopt_row, plus CORE_EINVAL (n == 0, a NULL row). */
CORE_MUST_CHECK core_err core_dp_ledger_adopt_rows(struct core_dp_ledger *l, size_t n,
                                                   const char *const *rows, const size_t *lens,
                                                   enum core_dp_adopted *what, size_t *bad,
                                                   char *errbuf, size_t errbuf_size);

#endif /* CORE_DP_LEDGER_H */
