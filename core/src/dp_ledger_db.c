/* dp_ledger_db.c - the ledger's embedded store on SQLite (see dp_ledger_db.h).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Why SQLite: measured against LMDB (docs/operations.md, "Ledger store"): both durable and
 * crash-safe under SIGKILL; SQLite's memory is a bounded page cache while LMDB's resident
 * set grows with the mapped file.
 * Durability: the audit log is the write-ahead log (fsync'd before the store's transaction,
 * dp_ledger.c store_commit); the store runs WAL with synchronous=NORMAL: a COMMIT is atomic
 * and survives a process crash, and a power loss can only take its last transactions,
 * which the next open re-applies from the audit log (store_replay_tail).
 */
#include "dp_ledger_db.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/dp_ledger.h"
#include "core/mem.h"

enum {
    S_UNIT_GET,
    S_REL_EACH,
    S_REL_GET,
    S_PUT_REL,
    S_PUT_UNIT,
    S_PUT_META,
    S_DEL_REL,
    S_DEL_UNIT,
    S_REL_BY_ID,
    S_REL_IDT,
    S_N
};

static const char *const sql_text[S_N] = {
    "SELECT eps, rho, delta FROM unit WHERE slot_end = ?2 AND name = ?1",
    "SELECT id, off, len FROM rel WHERE t <= ?1",
    "SELECT off, len FROM rel WHERE t = ?2 AND id = ?1",
    "INSERT INTO rel(off, id, t, len, idt) VALUES(?1, ?2, ?3, ?4, ?5)",
    ("INSERT INTO unit(name, eps, rho, delta, slot_end) VALUES(?1, ?2, ?3, ?4, ?5) "
     "ON CONFLICT(slot_end, name) DO UPDATE SET eps = ?2, rho = ?3, delta = ?4"),
    "INSERT OR REPLACE INTO meta(k, v) VALUES(?1, ?2)",
    "DELETE FROM rel WHERE t <= ?1",
    "DELETE FROM unit WHERE slot_end <= ?1",
    "SELECT off, len FROM rel WHERE idt = ?2 AND id = ?1",
    "SELECT id, off, len FROM rel WHERE idt > ?1 AND idt <= ?2",
};

static const char schema[] =
    "CREATE TABLE meta(k TEXT PRIMARY KEY, v) WITHOUT ROWID;"
    /* keyed by (slot end, name): the units of one minute are neighbours in the tree, so a
     * group commit dirties few pages and compaction deletes a range at its start */
    "CREATE TABLE unit(slot_end INTEGER NOT NULL, name TEXT NOT NULL, eps REAL NOT NULL,"
    " rho REAL NOT NULL, delta REAL NOT NULL, PRIMARY KEY(slot_end, name)) WITHOUT ROWID;"
    /* the output bytes stay in the audit log (one copy): rel says where its row is. Keyed
     * by time: a group commit appends at the right edge of the tree and compaction deletes a
     * range at its left; ids are found through the ledger's in-memory index (a tree keyed by
     * id made every release probe, insert and later delete at a random place of it) */
    "CREATE TABLE rel(t INTEGER NOT NULL, id TEXT NOT NULL, off INTEGER NOT NULL,"
    " len INTEGER NOT NULL, idt INTEGER NOT NULL, PRIMARY KEY(t, id)) WITHOUT ROWID;"
    /* the ids by their own time: the ledger keeps only the recent ones in memory and finds an
     * older one here (core_dp_id_time). Release ids name their window's start, so inserts
     * land near the right edge of this index too */
    "CREATE INDEX rel_idt ON rel(idt, id);";

struct ldb {
    sqlite3 *db;
    sqlite3_stmt *st[S_N];
};

static void set_err(char *eb, size_t ebn, const char *what, const char *path, const char *msg)
{
    if (eb && ebn)
        snprintf(eb, ebn, "ledger store %s: %s: %s", path, what, msg);
}

core_err ldb_max_slot_end(struct ldb *d, int64_t *max)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(d->db, "SELECT max(slot_end) FROM unit WHERE slot_end < ?1", -1, &s,
                                NULL);
    *max = INT64_MIN;
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(s, 1, LDB_NO_SLOT);
    if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW &&
        sqlite3_column_type(s, 0) != SQLITE_NULL)
        *max = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? CORE_OK : CORE_EIO;
}

const char *ldb_errmsg(const struct ldb *d)
{
    return d && d->db ? sqlite3_errmsg(d->db) : "no store";
}

/* WAL + synchronous=NORMAL (durability comes from the audit log's fsync). Bounded page
 * cache. */
static int pragmas(sqlite3 *db)
{
    /* EXCLUSIVE: the ledger is single-process (flock on the audit log) and `gcdp ledger`
     * reads the audit log; one lock for the connection's life instead of per statement.
     * secure_delete OFF (Debian builds it on): the store holds public outputs and public
     * accounting only, so compaction need not overwrite what it frees. */
    return sqlite3_exec(db,
                        "PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=WAL;"
                        "PRAGMA synchronous=NORMAL; PRAGMA cache_size=-16384;"
                        "PRAGMA wal_autocheckpoint=8192; PRAGMA secure_delete=OFF;",
                        NULL, NULL, NULL);
}

static int meta_text(sqlite3 *db, const char *header)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(db,
                                "INSERT INTO meta(k, v) VALUES('header', ?1),"
                                "('audit_size', 0), ('floor_ms', NULL),"
                                "('releases', 0), ('units', 0), ('hot_ms', NULL),"
                                "('format', " LDB_FORMAT_TEXT ")",
                                -1, &s, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_text(s, 1, header, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    sqlite3_finalize(s);
    return rc;
}

core_err ldb_create(const char *path, const char *header, char *eb, size_t ebn)
{
    size_t tn = strlen(path) + 16;
    char *tmp = core_xmalloc(tn);
    sqlite3 *db = NULL;
    int rc, fd;
    core_err ret = CORE_OK;

    snprintf(tmp, tn, "%s.new.XXXXXX", path);
    fd = mkstemp(tmp); /* a unique name; SQLite writes the file itself */
    if (fd < 0) {
        set_err(eb, ebn, "cannot create", path, strerror(errno));
        free(tmp);
        return CORE_EIO;
    }
    close(fd);
    rc = sqlite3_open_v2(tmp, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    /* the new file is built in rollback-journal mode (no -wal beside a temporary name) */
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, "PRAGMA synchronous=FULL; BEGIN", NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, schema, NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = meta_text(db, header);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        set_err(eb, ebn, "cannot create", path, db ? sqlite3_errmsg(db) : "out of memory");
    if (sqlite3_close(db) != SQLITE_OK && rc == SQLITE_OK)
        rc = SQLITE_ERROR;
    if (rc != SQLITE_OK)
        ret = CORE_EIO;
    if (ret == CORE_OK && chmod(tmp, 0600) != 0)
        ret = CORE_EIO;
    if (ret == CORE_OK && link(tmp, path) != 0) { /* never overwrites */
        ret = errno == EEXIST ? CORE_EEXIST : CORE_EIO;
        set_err(eb, ebn, "cannot create", path, strerror(errno));
    }
    unlink(tmp);
    free(tmp);
    return ret;
}

static int64_t meta_int(sqlite3 *db, const char *key, int *ok)
{
    sqlite3_stmt *s = NULL;
    int64_t v = 0;
    if (sqlite3_prepare_v2(db, "SELECT v FROM meta WHERE k = ?1", -1, &s, NULL) != SQLITE_OK ||
        sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC) != SQLITE_OK ||
        sqlite3_step(s) != SQLITE_ROW)
        *ok = 0;
    else if (sqlite3_column_type(s, 0) == SQLITE_NULL)
        v = INT64_MIN; /* floor_ms not yet set: nothing compacted */
    else
        v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

/* The stored header text (new string) or NULL when there is none (a foreign database). */
static char *meta_header(sqlite3 *db)
{
    sqlite3_stmt *s = NULL;
    char *h = NULL;
    if (sqlite3_prepare_v2(db, "SELECT v FROM meta WHERE k = 'header'", -1, &s, NULL) ==
            SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) == SQLITE_TEXT)
        h = core_xstrdup((const char *)sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    return h;
}

/* SQL gcdp_idt(id): core_dp_id_time's answer, LDB_NO_SLOT for an id without a time. */
static void sql_idt(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    const unsigned char *id = sqlite3_value_text(argv[0]);
    int64_t t = 0;
    (void)argc;
    sqlite3_result_int64(ctx, id && core_dp_id_time((const char *)id, &t) ? t : LDB_NO_SLOT);
}

/* Format 3 -> 4 in one transaction: the replay table gains each id's own time and its index
 * (what lets the ledger keep only recent ids in memory). The rows keep their places. */
static int upgrade_3(sqlite3 *db)
{
    int rc = sqlite3_create_function(db, "gcdp_idt", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                                     sql_idt, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db,
                          "BEGIN IMMEDIATE;"
                          "ALTER TABLE rel ADD COLUMN idt INTEGER NOT NULL DEFAULT 0;"
                          "UPDATE rel SET idt = gcdp_idt(id);"
                          "CREATE INDEX rel_idt ON rel(idt, id);"
                          "INSERT OR REPLACE INTO meta(k, v) VALUES('hot_ms', NULL);"
                          "UPDATE meta SET v = " LDB_FORMAT_TEXT " WHERE k = 'format';"
                          "COMMIT",
                          NULL, NULL, NULL);
    if (rc != SQLITE_OK && !sqlite3_get_autocommit(db))
        (void)sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

static core_err load_meta(struct ldb *d, char **header, struct ldb_meta *m, const char *path,
                          char *eb, size_t ebn)
{
    int ok = 1;
    *header = meta_header(d->db);
    if (!*header) {
        set_err(eb, ebn, "refusing to take this file for a ledger store", path,
                "no ledger header in it (not a gcdp ledger store)");
        return CORE_ESTATE;
    }
    int64_t format = meta_int(d->db, "format", &ok);
    if (ok && format == 3 && upgrade_3(d->db) != SQLITE_OK) {
        set_err(eb, ebn, "cannot upgrade this ledger store from format 3", path,
                sqlite3_errmsg(d->db));
        return CORE_EIO;
    }
    if (ok && format == 3)
        format = LDB_FORMAT;
    if (format != LDB_FORMAT || !ok) {
        set_err(eb, ebn, "refusing to open this ledger store", path,
                "it is not in store format " LDB_FORMAT_TEXT " or 3 (a store made by an "
                "earlier gcdp: format 2 keyed its replay table by release id, format 1 also "
                "kept the output bytes in it); build a new store from its audit log: "
                "gcdp ledger --import AUDIT_LOG --to NEW_STORE");
        return CORE_ESTATE;
    }
    m->audit_size = meta_int(d->db, "audit_size", &ok);
    m->floor_ms = meta_int(d->db, "floor_ms", &ok);
    m->releases = meta_int(d->db, "releases", &ok);
    m->units = meta_int(d->db, "units", &ok);
    m->hot_ms = meta_int(d->db, "hot_ms", &ok);
    for (int i = 0; ok && i < S_N; i++)
        ok = sqlite3_prepare_v3(d->db, sql_text[i], -1, SQLITE_PREPARE_PERSISTENT, &d->st[i],
                                NULL) == SQLITE_OK;
    if (!ok) {
        set_err(eb, ebn, "refusing to take this file for a ledger store", path,
                "meta or tables missing (not a gcdp ledger store)");
        return CORE_ESTATE;
    }
    return CORE_OK;
}

core_err ldb_open(const char *path, struct ldb **out, char **header, struct ldb_meta *m, char *eb,
                  size_t ebn)
{
    struct stat st;
    struct ldb *d;
    core_err rc;

    *out = NULL;
    *header = NULL;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        set_err(eb, ebn, "cannot open", path, errno ? strerror(errno) : "not a regular file");
        return CORE_EIO;
    }
    if (st.st_size == 0) {
        set_err(eb, ebn, "the file exists but is empty", path,
                "a ledger is never silently new: remove it explicitly if it holds no history");
        return CORE_ESTATE;
    }
    d = core_xcalloc(1, sizeof(*d));
    /* NOMUTEX: the ledger is used by one thread at a time (its contract) */
    if (sqlite3_open_v2(path, &d->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
            SQLITE_OK ||
        sqlite3_exec(d->db, "SELECT count(*) FROM sqlite_schema", NULL, NULL, NULL) != SQLITE_OK) {
        set_err(eb, ebn, "refusing to take this file for a ledger store", path,
                d->db ? sqlite3_errmsg(d->db) : "out of memory");
        ldb_close(d);
        return CORE_ESTATE;
    }
    if (pragmas(d->db) != SQLITE_OK) {
        set_err(eb, ebn, "cannot set WAL / synchronous=NORMAL", path, sqlite3_errmsg(d->db));
        ldb_close(d);
        return CORE_EIO;
    }
    rc = load_meta(d, header, m, path, eb, ebn);
    if (rc != CORE_OK) {
        free(*header);
        *header = NULL;
        ldb_close(d);
        return rc;
    }
    *out = d;
    return CORE_OK;
}

void ldb_close(struct ldb *d)
{
    if (!d)
        return;
    for (int i = 0; i < S_N; i++)
        sqlite3_finalize(d->st[i]);
    sqlite3_close(d->db);
    free(d);
}

/* Reset and return statement i ready for binding. */
static sqlite3_stmt *stmt(struct ldb *d, int i)
{
    sqlite3_reset(d->st[i]);
    sqlite3_clear_bindings(d->st[i]);
    return d->st[i];
}

core_err ldb_unit_get(struct ldb *d, const char *name, int64_t slot_end, struct core_dp_cost *c,
                      int *found)
{
    sqlite3_stmt *s = stmt(d, S_UNIT_GET);
    int rc;

    *found = 0;
    if (sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC) != SQLITE_OK ||
        sqlite3_bind_int64(s, 2, slot_end) != SQLITE_OK)
        return CORE_EIO;
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        c->eps = sqlite3_column_double(s, 0);
        c->rho = sqlite3_column_double(s, 1);
        c->delta = sqlite3_column_double(s, 2);
        *found = 1;
    }
    sqlite3_reset(s);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? CORE_OK : CORE_EIO;
}

/* One row of statement which (S_REL_GET: by (t, id); S_REL_BY_ID: by (idt, id)). */
static core_err rel_lookup(struct ldb *d, int which, const char *id, int64_t t, int64_t *off,
                           size_t *len)
{
    sqlite3_stmt *s = stmt(d, which);
    core_err ret = CORE_EIO;
    int rc;

    if (sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC) != SQLITE_OK ||
        sqlite3_bind_int64(s, 2, t) != SQLITE_OK)
        return CORE_EIO;
    rc = sqlite3_step(s);
    if (rc == SQLITE_DONE) {
        ret = CORE_ENOTFOUND;
    } else if (rc == SQLITE_ROW) {
        *off = sqlite3_column_int64(s, 0);
        *len = (size_t)sqlite3_column_int64(s, 1);
        ret = CORE_OK;
    }
    sqlite3_reset(s);
    return ret;
}

core_err ldb_rel_get(struct ldb *d, const char *id, int64_t t, int64_t *off, size_t *len)
{
    return rel_lookup(d, S_REL_GET, id, t, off, len);
}

core_err ldb_rel_find(struct ldb *d, const char *id, int64_t idt, int64_t *off, size_t *len)
{
    return rel_lookup(d, S_REL_BY_ID, id, idt, off, len);
}

/* The rows of statement s (bound): fn for each. */
static core_err rel_rows(sqlite3_stmt *s, ldb_rel_fn *fn, void *arg)
{
    core_err ret = CORE_OK;
    int rc = SQLITE_OK;
    while (ret == CORE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(s, 0);
        int64_t len = sqlite3_column_int64(s, 2);
        ret = id && len > 0 ? fn(arg, id, sqlite3_column_int64(s, 1), (size_t)len) : CORE_EIO;
    }
    if (ret == CORE_OK && rc != SQLITE_DONE)
        ret = CORE_EIO;
    sqlite3_reset(s);
    return ret;
}

core_err ldb_rel_each(struct ldb *d, int64_t upto, ldb_rel_fn *fn, void *arg)
{
    sqlite3_stmt *s = stmt(d, S_REL_EACH);
    return sqlite3_bind_int64(s, 1, upto) == SQLITE_OK ? rel_rows(s, fn, arg) : CORE_EIO;
}

core_err ldb_rel_each_idt(struct ldb *d, int64_t after, int64_t upto, ldb_rel_fn *fn, void *arg)
{
    sqlite3_stmt *s = stmt(d, S_REL_IDT);
    if (sqlite3_bind_int64(s, 1, after) != SQLITE_OK || sqlite3_bind_int64(s, 2, upto) != SQLITE_OK)
        return CORE_EIO;
    return rel_rows(s, fn, arg);
}

static core_err exec(struct ldb *d, const char *sql)
{
    return sqlite3_exec(d->db, sql, NULL, NULL, NULL) == SQLITE_OK ? CORE_OK : CORE_EIO;
}

core_err ldb_begin(struct ldb *d)
{
    return exec(d, "BEGIN IMMEDIATE");
}

core_err ldb_commit(struct ldb *d)
{
    return exec(d, "COMMIT");
}

void ldb_rollback(struct ldb *d)
{
    if (!sqlite3_get_autocommit(d->db))
        (void)exec(d, "ROLLBACK");
}

static core_err step_done(sqlite3_stmt *s)
{
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? CORE_OK : CORE_EIO;
}

core_err ldb_put_rel(struct ldb *d, const struct ldb_rel *r)
{
    sqlite3_stmt *s = stmt(d, S_PUT_REL);
    int rc = sqlite3_bind_int64(s, 1, r->off);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_text(s, 2, r->id, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(s, 3, r->has_t ? r->t : LDB_NO_SLOT);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(s, 4, (int64_t)r->len);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(s, 5, r->idt);
    return rc == SQLITE_OK ? step_done(s) : CORE_EIO;
}

core_err ldb_put_unit(struct ldb *d, const char *name, const struct core_dp_cost *c,
                      int64_t slot_end)
{
    sqlite3_stmt *s = stmt(d, S_PUT_UNIT);
    int rc = sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_double(s, 2, c->eps);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_double(s, 3, c->rho);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_double(s, 4, c->delta);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(s, 5, slot_end);
    return rc == SQLITE_OK ? step_done(s) : CORE_EIO;
}

static core_err put_meta1(struct ldb *d, const char *k, int64_t v, int is_null)
{
    sqlite3_stmt *s = stmt(d, S_PUT_META);
    int rc = sqlite3_bind_text(s, 1, k, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = is_null ? sqlite3_bind_null(s, 2) : sqlite3_bind_int64(s, 2, v);
    return rc == SQLITE_OK ? step_done(s) : CORE_EIO;
}

core_err ldb_put_meta(struct ldb *d, const struct ldb_meta *m)
{
    core_err rc = put_meta1(d, "audit_size", m->audit_size, 0);
    if (rc == CORE_OK)
        rc = put_meta1(d, "floor_ms", m->floor_ms, m->floor_ms == INT64_MIN);
    if (rc == CORE_OK)
        rc = put_meta1(d, "releases", m->releases, 0);
    if (rc == CORE_OK)
        rc = put_meta1(d, "units", m->units, 0);
    if (rc == CORE_OK)
        rc = put_meta1(d, "hot_ms", m->hot_ms, m->hot_ms == INT64_MIN);
    return rc;
}

core_err ldb_compact(struct ldb *d, int64_t floor, int64_t *rels, int64_t *units)
{
    sqlite3_stmt *s = stmt(d, S_DEL_REL);
    core_err rc = sqlite3_bind_int64(s, 1, floor) == SQLITE_OK ? step_done(s) : CORE_EIO;
    *rels = rc == CORE_OK ? sqlite3_changes64(d->db) : 0;
    if (rc != CORE_OK)
        return rc;
    s = stmt(d, S_DEL_UNIT);
    rc = sqlite3_bind_int64(s, 1, floor) == SQLITE_OK ? step_done(s) : CORE_EIO;
    *units = rc == CORE_OK ? sqlite3_changes64(d->db) : 0;
    return rc;
}
