/* dp_ledger_db.h - core-internal: the ledger's embedded store (SQLite, WAL,
 * synchronous=FULL) behind core/dp_ledger.h (docs/operations.md, "Ledger store").
 * SPDX-License-Identifier: Apache-2.0
 *
 * Tables:
 *   meta(k TEXT PRIMARY KEY, v)          header (the JSONL header text: scheme, caps,
 *                                        accounting), audit_size, floor_ms, releases, units
 *   unit(slot_end, name, eps, rho, delta; PRIMARY KEY(slot_end, name))  committed totals
 *        per unit; slot_end LDB_NO_SLOT for a unit that is not "<device>|<slot>"
 *   rel(off INTEGER PRIMARY KEY, id TEXT UNIQUE, t INTEGER, head TEXT, out BLOB)
 *        the replay store; off: the row's offset in the audit log; head: the row's text up
 *        to the output (audit row = head + base64(out) + "\"}\n"), so the audit log can be
 *        rewritten from the store (NULL for imported rows, which the audit log holds) 
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

/* Numeric meta keys (kept in the same transaction as the rows they describe). */
struct ldb_meta {
    int64_t audit_size; /* bytes of the audit log this store matches; 0: not yet created */
    int64_t floor_ms;   /* compaction floor: slots ending at or before it are gone */
    int64_t releases;   /* rows in rel */
    int64_t units;      /* rows in unit */
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

/* 1 when id is in the replay store, 0 when not, -1 on error. */
int ldb_rel_exists(struct ldb *d, const char *id);

/* Stored output of id (new buffer, caller frees). CORE_OK, CORE_ENOTFOUND, CORE_EIO. */
CORE_MUST_CHECK core_err ldb_rel_get(struct ldb *d, const char *id, uint8_t **bytes,
                                     size_t *len);

/* One transaction (group commit): begin, then rows and units, then meta, then commit. */
CORE_MUST_CHECK core_err ldb_begin(struct ldb *d);
struct ldb_rel {
    const char *id;
    int64_t off, t;
    int has_t;
    const char *head; /* may be NULL */
    size_t head_len;
    const void *bytes;
    size_t len;
};
CORE_MUST_CHECK core_err ldb_put_rel(struct ldb *d, const struct ldb_rel *r);

/* The offset of the last row starting before size (*found 0: none). */
CORE_MUST_CHECK core_err ldb_last_row_before(struct ldb *d, int64_t size, int64_t *off,
                                             int *found);

/* fn for every row at or after off, in audit order (id not filled). Stops at fn's error. */
typedef core_err ldb_row_fn(void *arg, const struct ldb_rel *r);
CORE_MUST_CHECK core_err ldb_rows_from(struct ldb *d, int64_t off, ldb_row_fn *fn, void *arg);
CORE_MUST_CHECK core_err ldb_put_unit(struct ldb *d, const char *name,
                                      const struct core_dp_cost *c, int64_t slot_end);
CORE_MUST_CHECK core_err ldb_put_meta(struct ldb *d, const struct ldb_meta *m);
CORE_MUST_CHECK core_err ldb_commit(struct ldb *d);
void ldb_rollback(struct ldb *d);

/* Inside a transaction: delete releases with t <= floor and units with slot_end <= floor;
 * *rels / *units: rows deleted. */
CORE_MUST_CHECK core_err ldb_compact(struct ldb *d, int64_t floor, int64_t *rels,
                                     int64_t *units);

/* The largest slot end of the units with a slot (INT64_MIN: none). O(log n). */
CORE_MUST_CHECK core_err ldb_max_slot_end(struct ldb *d, int64_t *max);

const char *ldb_errmsg(const struct ldb *d);

/* Where the committed row of id is: its offset in the audit log and its head (new string,
 * caller frees; NULL for an imported row, whose text only the audit log holds).
 * CORE_OK, CORE_ENOTFOUND, CORE_EIO. */
CORE_MUST_CHECK core_err ldb_rel_row(struct ldb *d, const char *id, int64_t *off, char **head);

#endif /* CORE_DP_LEDGER_DB_H */
