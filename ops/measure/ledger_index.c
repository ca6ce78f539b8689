/* ledger_index.c - one-off measurement: the ledger store's per-release index work at steady
 * state, on SQLite as the ledger store does it today (core/src/dp_ledger_db.c: same schema and
 * pragmas) against RocksDB (an LSM tree, Debian librocksdb-dev; measurement only, not a
 * dependency of gcdp). The audit log is the write-ahead log in both designs, so RocksDB runs
 * with its own WAL off and no sync, as SQLite runs with synchronous=NORMAL.
 *
 * Work (the store's part of `gcdp bench ledger`): N devices x M minutes, release id and unit
 * "<device>|<minute>", slot end t = (minute + 1) * 60 s. Per release: probe the id (absent),
 * write the unit's total and the id's (offset, length, t); a transaction / write batch per B
 * releases. After every minute, once the floor (watermark - H minutes) has moved by H/4:
 * delete the releases and units at or before it (SQLite: DELETE ... WHERE t <= floor through
 * the t index; RocksDB: iterate the time index and delete each id key, DeleteRange over the
 * time index and the units). Prints CPU seconds per release over the whole run and over the
 * last simulated hour, and the store's size.
 *
 * sqlite-time: the store since format 3: rel keyed by (t, id) (appends at the right edge,
 * compaction deletes a range at the left), the id probed in the ledger's in-memory index
 * (core/src/dp_ledger_idx.c, linked in), which compaction updates from the deleted range.
 *
 * Build: cc -O2 -Icore/include -Icore/src -o /tmp/li ops/measure/ledger_index.c
 *          core/src/dp_ledger_idx.c core/src/mem.c -lsqlite3 -lsodium
 *        (add -DLI_ROCKSDB ... -lrocksdb for the rocksdb variant)
 * Run:   /tmp/li sqlite|sqlite-time|rocksdb DIR [N M H B]   (defaults 10000 180 60 256)
 * SPDX-License-Identifier: Apache-2.0 */
#include <inttypes.h>
#ifdef LI_ROCKSDB
#include <rocksdb/c.h>
#endif
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dp_ledger_idx.h"

static double cpu(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "%s: %s\n", what, msg ? msg : "failed");
    exit(1);
}

/* ---- SQLite, as core/src/dp_ledger_db.c ---- */

struct sq {
    sqlite3 *db;
    sqlite3_stmt *exists, *put_rel, *put_unit, *del_rel, *del_unit, *sel_rel;
    int by_time; /* sqlite-time: rel keyed by (t, id), ids in the in-memory index */
    struct lidx ids;
    long tag_hits; /* index candidates that a ledger would confirm by reading the row */
};

static sqlite3_stmt *prep(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        die(sql, sqlite3_errmsg(db));
    return s;
}

static void sq_exec(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
        die(sql, err);
}

static void sq_open(struct sq *q, const char *path)
{
    const char *rel = q->by_time ? "CREATE TABLE rel(t INTEGER NOT NULL, id TEXT NOT NULL, off "
                                   "INTEGER NOT NULL, len INTEGER NOT NULL, PRIMARY KEY(t, id)) "
                                   "WITHOUT ROWID;"
                                 : "CREATE TABLE rel(id TEXT PRIMARY KEY, off INTEGER NOT NULL, "
                                   "len INTEGER NOT NULL, t INTEGER) WITHOUT ROWID; CREATE INDEX "
                                   "rel_t ON rel(t);";
    if (sqlite3_open(path, &q->db) != SQLITE_OK)
        die("open", sqlite3_errmsg(q->db));
    sq_exec(q->db, "PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=WAL;"
                   "PRAGMA synchronous=NORMAL; PRAGMA cache_size=-16384;"
                   "PRAGMA wal_autocheckpoint=8192; PRAGMA secure_delete=OFF;");
    if (getenv("LI_SQLITE_PRAGMA")) /* a variant, e.g. "PRAGMA mmap_size=1073741824" */
        sq_exec(q->db, getenv("LI_SQLITE_PRAGMA"));
    sq_exec(q->db, "CREATE TABLE unit(slot_end INTEGER NOT NULL, name TEXT NOT NULL, eps REAL "
                   "NOT NULL, rho REAL NOT NULL, delta REAL NOT NULL, PRIMARY KEY(slot_end, "
                   "name)) WITHOUT ROWID;");
    sq_exec(q->db, rel);
    if (q->by_time) {
        lidx_init(&q->ids, 0);
        q->sel_rel = prep(q->db, "SELECT id, off FROM rel WHERE t <= ?1");
    } else {
        q->exists = prep(q->db, "SELECT 1 FROM rel WHERE id = ?1");
    }
    q->put_rel = prep(q->db, "INSERT INTO rel(off, id, t, len) VALUES(?1, ?2, ?3, ?4)");
    q->put_unit = prep(q->db, "INSERT INTO unit(name, eps, rho, delta, slot_end) VALUES(?1, ?2, "
                              "0, 0, ?3) ON CONFLICT(slot_end, name) DO UPDATE SET eps = ?2");
    q->del_rel = prep(q->db, "DELETE FROM rel WHERE t <= ?1");
    q->del_unit = prep(q->db, "DELETE FROM unit WHERE slot_end <= ?1");
}

static void step(sqlite3_stmt *s)
{
    int rc = sqlite3_step(s);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        die("step", sqlite3_errstr(rc));
    sqlite3_reset(s);
}

static void sq_release(struct sq *q, const char *id, int64_t t, int64_t off)
{
    if (q->by_time) { /* the probe; the entry goes in (the ledger: once the batch commits) */
        uint64_t h = lidx_hash(&q->ids, id);
        size_t pos = SIZE_MAX;
        while (lidx_next(&q->ids, h, &pos))
            q->tag_hits++;
        lidx_put(&q->ids, h, (uint64_t)off, 1115);
    } else {
        sqlite3_bind_text(q->exists, 1, id, -1, SQLITE_STATIC);
        if (sqlite3_step(q->exists) == SQLITE_ROW)
            die("probe", id);
        sqlite3_reset(q->exists);
    }
    sqlite3_bind_text(q->put_unit, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_double(q->put_unit, 2, 0.01);
    sqlite3_bind_int64(q->put_unit, 3, t);
    step(q->put_unit);
    sqlite3_bind_int64(q->put_rel, 1, off);
    sqlite3_bind_text(q->put_rel, 2, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q->put_rel, 3, t);
    sqlite3_bind_int64(q->put_rel, 4, 1115);
    step(q->put_rel);
}

static void sq_compact(struct sq *q, int64_t floor)
{
    sq_exec(q->db, "BEGIN IMMEDIATE");
    if (q->by_time) { /* the deleted ids leave the index (the ledger: after the COMMIT) */
        sqlite3_bind_int64(q->sel_rel, 1, floor);
        while (sqlite3_step(q->sel_rel) == SQLITE_ROW) {
            const char *id = (const char *)sqlite3_column_text(q->sel_rel, 0);
            if (!lidx_del(&q->ids, lidx_hash(&q->ids, id),
                          (uint64_t)sqlite3_column_int64(q->sel_rel, 1)))
                die("index", id);
        }
        sqlite3_reset(q->sel_rel);
    }
    sqlite3_bind_int64(q->del_rel, 1, floor);
    step(q->del_rel);
    sqlite3_bind_int64(q->del_unit, 1, floor);
    step(q->del_unit);
    sq_exec(q->db, "COMMIT");
}

#ifdef LI_ROCKSDB
/* ---- RocksDB: keys "r<id>" -> off,len,t; "t<t:016x><id>" -> ""; "u<t:016x><name>" -> eps ---- */

struct rk {
    rocksdb_t *db;
    rocksdb_options_t *o;
    rocksdb_writeoptions_t *wo;
    rocksdb_readoptions_t *ro;
    rocksdb_writebatch_t *wb;
};

static void rk_open(struct rk *r, const char *path)
{
    char *err = NULL;
    r->o = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(r->o, 1);
    rocksdb_options_increase_parallelism(r->o, 1);
    rocksdb_options_set_write_buffer_size(r->o, 16 << 20); /* the SQLite cache's 16 MiB */
    rocksdb_block_based_table_options_t *bb = rocksdb_block_based_options_create();
    rocksdb_block_based_options_set_filter_policy(bb, rocksdb_filterpolicy_create_bloom(10));
    rocksdb_options_set_block_based_table_factory(r->o, bb); /* absent ids: one filter probe */
    r->db = rocksdb_open(r->o, path, &err);
    if (err)
        die("rocksdb_open", err);
    r->wo = rocksdb_writeoptions_create();
    rocksdb_writeoptions_disable_WAL(r->wo, 1); /* the audit log is the write-ahead log */
    rocksdb_writeoptions_set_sync(r->wo, 0);
    r->ro = rocksdb_readoptions_create();
    r->wb = rocksdb_writebatch_create();
}

static void rk_release(struct rk *r, const char *id, int64_t t, int64_t off)
{
    char key[96], val[24], *err = NULL;
    size_t n = strlen(id), vl = 0;
    key[0] = 'r';
    memcpy(key + 1, id, n);
    char *got = rocksdb_get(r->db, r->ro, key, n + 1, &vl, &err);
    if (err || got)
        die("probe", err ? err : id);
    snprintf(val, sizeof(val), "%016" PRIx64, (uint64_t)off);
    rocksdb_writebatch_put(r->wb, key, n + 1, val, 16);
    int kl = snprintf(key, sizeof(key), "t%016" PRIx64 "%s", (uint64_t)t, id);
    rocksdb_writebatch_put(r->wb, key, (size_t)kl, "", 0);
    kl = snprintf(key, sizeof(key), "u%016" PRIx64 "%s", (uint64_t)t, id);
    rocksdb_writebatch_put(r->wb, key, (size_t)kl, "0.01", 4);
}

static void rk_commit(struct rk *r)
{
    char *err = NULL;
    rocksdb_write(r->db, r->wo, r->wb, &err);
    if (err)
        die("rocksdb_write", err);
    rocksdb_writebatch_clear(r->wb);
}

static void rk_compact(struct rk *r, int64_t floor)
{
    char lo[24], hi[24], key[96];
    snprintf(lo, sizeof(lo), "t%016" PRIx64, (uint64_t)0);
    snprintf(hi, sizeof(hi), "t%016" PRIx64, (uint64_t)floor + 1);
    rocksdb_iterator_t *it = rocksdb_create_iterator(r->db, r->ro);
    for (rocksdb_iter_seek(it, lo, 17); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kl;
        const char *k = rocksdb_iter_key(it, &kl);
        if (kl < 17 || memcmp(k, hi, 17) >= 0)
            break;
        key[0] = 'r';
        memcpy(key + 1, k + 17, kl - 17);
        rocksdb_writebatch_delete(r->wb, key, kl - 16);
    }
    rocksdb_iter_destroy(it);
    rocksdb_writebatch_delete_range(r->wb, lo, 17, hi, 17);
    lo[0] = hi[0] = 'u';
    rocksdb_writebatch_delete_range(r->wb, lo, 17, hi, 17);
    rk_commit(r);
}
#else
struct rk {
    void *db;
};
static void rk_open(struct rk *r, const char *path)
{
    (void)r;
    die(path, "built without -DLI_ROCKSDB");
}
static void rk_release(struct rk *r, const char *id, int64_t t, int64_t off)
{
    (void)r, (void)id, (void)t, (void)off;
}
static void rk_commit(struct rk *r)
{
    (void)r;
}
static void rk_compact(struct rk *r, int64_t floor)
{
    (void)r, (void)floor;
}
static void rocksdb_close(void *db)
{
    (void)db;
}
#endif

int main(int argc, char **argv)
{
    if (argc < 3)
        die("usage", "li sqlite|sqlite-time|rocksdb DIR [N M H B]");
    int sqlite = strncmp(argv[1], "sqlite", 6) == 0;
    long N = argc > 3 ? atol(argv[3]) : 10000, M = argc > 4 ? atol(argv[4]) : 180;
    long H = argc > 5 ? atol(argv[5]) : 60, B = argc > 6 ? atol(argv[6]) : 256;
    char path[4096], id[48];
    struct sq q = {.by_time = strcmp(argv[1], "sqlite-time") == 0};
    struct rk r = {0};
    int64_t off = 0, floor = INT64_MIN, step_ms = H * 60000 / 4;
    long k = 0, last = M > 60 ? M - 60 : 0;
    double c0 = cpu(), cl = c0;

    if (sodium_init() < 0)
        die("sodium_init", NULL);
    snprintf(path, sizeof(path), "%s/%s", argv[2], sqlite ? "index.db" : "index.rocks");
    if (sqlite)
        sq_open(&q, path);
    else
        rk_open(&r, path);
    for (long m = 0; m < M; m++) {
        if (m == last)
            cl = cpu();
        int64_t t = (int64_t)(m + 1) * 60000;
        for (long d = 0; d < N; d++, k++) {
            snprintf(id, sizeof(id), "dev%06ld|%ld", d, m);
            if (sqlite && k % B == 0)
                sq_exec(q.db, "BEGIN IMMEDIATE");
            if (sqlite)
                sq_release(&q, id, t, off);
            else
                rk_release(&r, id, t, off);
            off += 1115;
            if ((k + 1) % B == 0 || d + 1 == N) {
                if (sqlite)
                    sq_exec(q.db, "COMMIT");
                else
                    rk_commit(&r);
                k = (k + 1) % B == 0 ? k : k + (B - 1 - k % B); /* a minute ends a batch */
            }
        }
        int64_t f = t - H * 60000;
        if (f > 0 && (floor == INT64_MIN || f - floor >= step_ms)) {
            floor = f;
            if (sqlite)
                sq_compact(&q, floor);
            else
                rk_compact(&r, floor);
        }
    }
    double all = cpu() - c0, hour = cpu() - cl;
    printf("%s: %ld devices x %ld min, horizon %ld min, batch %ld: %.2f us CPU per release "
           "over the run, %.2f us over the last simulated hour (%.0f releases per CPU-s)\n",
           argv[1], N, M, H, B, all * 1e6 / (double)(N * M), hour * 1e6 / (double)(N * (M - last)),
           (double)(N * (M - last)) / hour);
    if (q.by_time)
        printf("  in-memory id index: %zu ids, %zu slots, %.1f MB; %ld tag candidates read\n",
               q.ids.n, q.ids.cap, (double)(q.ids.cap * sizeof(struct lidx_ent)) / 1e6, q.tag_hits);
    if (sqlite)
        sqlite3_close(q.db);
    else
        rocksdb_close(r.db);
    return 0;
}
