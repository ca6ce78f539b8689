/* dp_ledger_db.h - core-internal: the ledger's embedded store (SQLite, WAL,
 * synchronous=NORMAL; the audit log is the write-ahead log) behind core/dp_ledger.h
 * (docs/operations.md, "Ledger store").
 * SPDX-License-Identifier: Apache-2.0
 *
 * Tables:
 *   meta(k TEXT PRIMARY KEY, v)          header (the JSONL header text: scheme, caps,
 *                                        accounting), audit_size, floor_ms, releases, units,
 *                                        format (LDB_FORMAT)
 *   unit(slot_end, name, eps, rho, delta; PRIMARY KEY(slot_end, name))  committed totals
 *        per unit; slot_end LDB_NO_SLOT for a unit that is not "<device>|<slot>"
 *   rel(t, id, off, len, idt; PRIMARY KEY(t, id)) WITHOUT ROWID   the replay store: the
 *        release's row is the len bytes at offset off of the audit log, which holds its output
 *        bytes (one copy, written and fsync'd first); t its time (LDB_NO_SLOT: none). Keyed by
 *        time, so a group commit appends at the right edge and compaction deletes a range at
 *        the left. idt: the id's own time (core_dp_id_time; LDB_NO_SLOT: none), indexed by
 *        (idt, id): the ledger keeps the ids of recent idt in memory (dp_ledger_idx.h, loaded
 *        from here at open: ldb_rel_each_idt) and finds an older one here (ldb_rel_find)
 * The committed totals are the upward-rounded sums of the committed charges in commit order:
 * bit for bit what the JSONL ledger rebuilds by its scan on open.
 * Ownership: struct ldb owns the sqlite3 handle and its prepared statements.
 * Errors: core_err; ldb_errmsg() gives SQLite's message (never protected values).
 * Thread-safety: one thread at a time (the ledger's contract).
 */
#ifndef CORE_DP_LEDGER_DB_H
#define CORE_DP_LEDGER_DB_H

#include <stddef.h>
#include <stdint.h>

#include "core/dp_acct.h"
#include "core/err.h"

struct ldb;

/* Store format: 4 = rel keyed by (t, id) with the ids' own time indexed (format 3 had no idt:
 * upgraded in place at open; format 2 keyed rel by id; format 1 also kept the output bytes in
 * rel). */
#define LDB_FORMAT      4
#define LDB_FORMAT_TEXT "4"

/* Numeric meta keys (kept in the same transaction as the rows they describe). */
struct ldb_meta {
    int64_t audit_size; /* bytes of the audit log this store matches; 0: not yet created */
    int64_t floor_ms;   /* compaction floor: slots ending at or before it are gone */
    int64_t releases;   /* rows in rel */
    int64_t units;      /* rows in unit */
    int64_t hot_ms;     /* every id whose own time is after it (or that has none) is in the
                         * ledger's memory index; INT64_MIN: all are */
};

/* Create a new store at path (must not exist: written under a temporary name, then linked
 * in place) holding header and meta (audit_size 0). CORE_EEXIST if path appeared, CORE_EIO. */
CORE_MUST_CHECK core_err ldb_create(const char *path, const char *header, char *eb, size_t ebn);

/* Open an existing store; *header: new string (caller frees) of the stored header.
 * CORE_ESTATE: empty file, not SQLite, or no ledger meta (a foreign file); CORE_EIO. */
CORE_MUST_CHECK core_err ldb_open(const char *path, struct ldb **out, char **header,
                                  struct ldb_meta *meta, char *eb, size_t ebn);
void ldb_close(struct ldb *d);

/* The slot end stored for units without a slot: never reached by a compaction floor. */
#define LDB_NO_SLOT INT64_MAX

/* Committed totals of unit (slot_end: its slot end or LDB_NO_SLOT); *found 0 when the store
 * has no such unit. */
CORE_MUST_CHECK core_err ldb_unit_get(struct ldb *d, const char *name, int64_t slot_end,
                                      struct core_dp_cost *c, int *found);

/* Where id (of time t: its release time, or LDB_NO_SLOT) has its row in the audit log.
 * CORE_OK, CORE_ENOTFOUND, CORE_EIO. (The ledger finds ids through its in-memory index; this
 * is for checks such as the import's.) */
CORE_MUST_CHECK core_err ldb_rel_get(struct ldb *d, const char *id, int64_t t, int64_t *off,
                                     size_t *len);

/* Where id, whose own time is idt (core_dp_id_time, or LDB_NO_SLOT), has its row: the
 * (idt, id) index. CORE_OK, CORE_ENOTFOUND, CORE_EIO. */
CORE_MUST_CHECK core_err ldb_rel_find(struct ldb *d, const char *id, int64_t idt, int64_t *off,
                                      size_t *len);

/* Call fn(arg, id, off, len) for every release with t <= upto (LDB_NO_SLOT: all), in (t, id)
 * order; id is valid during the call only. A non-OK return from fn stops and is returned. */
typedef core_err ldb_rel_fn(void *arg, const char *id, int64_t off, size_t len);
CORE_MUST_CHECK core_err ldb_rel_each(struct ldb *d, int64_t upto, ldb_rel_fn *fn, void *arg);

/* The same for every release whose own time idt is in (after, upto], in (idt, id) order. */
CORE_MUST_CHECK core_err ldb_rel_each_idt(struct ldb *d, int64_t after, int64_t upto,
                                          ldb_rel_fn *fn, void *arg);

/* One transaction (group commit): begin, then rows and units, then meta, then commit. */
CORE_MUST_CHECK core_err ldb_begin(struct ldb *d);
struct ldb_rel {
    const char *id;
    int64_t off, t; /* off: the row's offset in the audit log */
    int has_t;
    int64_t idt; /* the id's own time (core_dp_id_time), LDB_NO_SLOT: none */
    size_t len;  /* the row's length in the audit log (with its newline) */
};
CORE_MUST_CHECK core_err ldb_put_rel(struct ldb *d, const struct ldb_rel *r);

CORE_MUST_CHECK core_err ldb_put_unit(struct ldb *d, const char *name, const struct core_dp_cost *c,
                                      int64_t slot_end);
CORE_MUST_CHECK core_err ldb_put_meta(struct ldb *d, const struct ldb_meta *m);
CORE_MUST_CHECK core_err ldb_commit(struct ldb *d);
void ldb_rollback(struct ldb *d);

/* Inside a transaction: delete releases with t <= floor and units with slot_end <= floor;
 * *rels / *units: rows deleted. */
CORE_MUST_CHECK core_err ldb_compact(struct ldb *d, int64_t floor, int64_t *rels, int64_t *units);

/* The largest slot end of the units with a slot (INT64_MIN: none). O(log n). */
CORE_MUST_CHECK core_err ldb_max_slot_end(struct ldb *d, int64_t *max);

const char *ldb_errmsg(const struct ldb *d);

#endif /* CORE_DP_LEDGER_DB_H */
