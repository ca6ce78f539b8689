/* ledger_store.c - one-off measurement behind the choice of the ledger's embedded store
 * (docs/operations.md, "Ledger store"): SQLite (WAL, synchronous=FULL) against LMDB (default
 * durable commits), doing the ledger's work: per release one upsert of a unit total and one
 * insert of (release id -> output bytes, window time), B releases per transaction (group
 * commit). Prints commits/s, peak RSS, reopen time, and the state after a SIGKILL in the
 * middle of the writes (every acknowledged batch must be there, totals must match rows).
 * Build: cc -O2 -o /tmp/ls ops/measure/ledger_store.c -lsqlite3 -llmdb
 * Run:   /tmp/ls DIR N B   (N releases, B per transaction)
 * SPDX-License-Identifier: Apache-2.0 */
#include <lmdb.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OUT_LEN 400
#define DEVICES 10000

static double mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static long rss_kb(const char *key)
{
    char line[256];
    long v = -1;
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, key, strlen(key)) == 0)
            v = atol(line + strlen(key) + 1);
    if (f)
        fclose(f);
    return v;
}

/* ---- SQLite ---- */
static sqlite3 *sq_open(const char *path)
{
    sqlite3 *db;
    if (sqlite3_open(path, &db) != SQLITE_OK)
        exit(2);
    sqlite3_exec(db,
                 "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                 "CREATE TABLE IF NOT EXISTS unit(name TEXT PRIMARY KEY, eps REAL) WITHOUT ROWID;"
                 "CREATE TABLE IF NOT EXISTS rel(seq INTEGER PRIMARY KEY, id TEXT UNIQUE, "
                 "t INTEGER, out BLOB);",
                 NULL, NULL, NULL);
    return db;
}

static void sq_run(const char *path, long n, long b, int ack_fd)
{
    sqlite3 *db = sq_open(path);
    sqlite3_stmt *u, *r;
    char id[64], un[64], out[OUT_LEN];
    memset(out, 'x', sizeof(out));
    sqlite3_prepare_v2(db,
                       "INSERT INTO unit VALUES(?1, 0.01) ON CONFLICT(name) DO UPDATE SET "
                       "eps = eps + 0.01",
                       -1, &u, NULL);
    sqlite3_prepare_v2(db, "INSERT INTO rel(id, t, out) VALUES(?1, ?2, ?3)", -1, &r, NULL);
    for (long i = 0; i < n; i += b) {
        sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        for (long k = i; k < i + b && k < n; k++) {
            snprintf(id, sizeof(id), "dev%05ld|%ld", k % DEVICES, k / DEVICES);
            snprintf(un, sizeof(un), "dev%05ld|%ld", k % DEVICES, k / DEVICES);
            sqlite3_bind_text(u, 1, un, -1, SQLITE_TRANSIENT);
            sqlite3_step(u);
            sqlite3_reset(u);
            sqlite3_bind_text(r, 1, id, -1, SQLITE_TRANSIENT);
            sqlite3_bind_int64(r, 2, k / DEVICES * 60000);
            sqlite3_bind_blob(r, 3, out, sizeof(out), SQLITE_TRANSIENT);
            sqlite3_step(r);
            sqlite3_reset(r);
        }
        if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
            exit(3);
        if (ack_fd >= 0) {
            long done = i + b < n ? i + b : n;
            if (write(ack_fd, &done, sizeof(done)) != sizeof(done))
                exit(4);
        }
    }
    sqlite3_finalize(u);
    sqlite3_finalize(r);
    sqlite3_close(db);
}

static long sq_count(const char *path, double *reopen_s, double *sum)
{
    double t0 = mono();
    sqlite3 *db = sq_open(path);
    sqlite3_stmt *s;
    long c = 0;
    *reopen_s = mono() - t0;
    sqlite3_prepare_v2(db, "SELECT (SELECT count(*) FROM rel), (SELECT total(eps) FROM unit)", -1,
                       &s, NULL);
    if (sqlite3_step(s) == SQLITE_ROW) {
        c = sqlite3_column_int64(s, 0);
        *sum = sqlite3_column_double(s, 1);
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    return c;
}

/* ---- LMDB ---- */
static MDB_env *lm_open(const char *dir, MDB_dbi *du, MDB_dbi *dr)
{
    MDB_env *e;
    MDB_txn *t;
    mdb_env_create(&e);
    mdb_env_set_maxdbs(e, 4);
    mdb_env_set_mapsize(e, (size_t)64 << 30);
    if (mdb_env_open(e, dir, 0, 0600) != 0)
        exit(2);
    mdb_txn_begin(e, NULL, 0, &t);
    mdb_dbi_open(t, "unit", MDB_CREATE, du);
    mdb_dbi_open(t, "rel", MDB_CREATE, dr);
    mdb_txn_commit(t);
    return e;
}

static void lm_run(const char *dir, long n, long b, int ack_fd)
{
    MDB_dbi du, dr;
    MDB_env *e = lm_open(dir, &du, &dr);
    char id[64], out[OUT_LEN + 8];
    memset(out, 'x', sizeof(out));
    for (long i = 0; i < n; i += b) {
        MDB_txn *t;
        mdb_txn_begin(e, NULL, 0, &t);
        for (long k = i; k < i + b && k < n; k++) {
            MDB_val key, val;
            double eps = 0.0;
            int64_t tm = k / DEVICES * 60000;
            snprintf(id, sizeof(id), "dev%05ld|%ld", k % DEVICES, k / DEVICES);
            key = (MDB_val){strlen(id), id};
            if (mdb_get(t, du, &key, &val) == 0)
                memcpy(&eps, val.mv_data, sizeof(eps));
            eps += 0.01;
            val = (MDB_val){sizeof(eps), &eps};
            mdb_put(t, du, &key, &val, 0);
            memcpy(out, &tm, 8);
            val = (MDB_val){sizeof(out), out};
            if (mdb_put(t, dr, &key, &val, MDB_NOOVERWRITE) != 0)
                exit(5);
        }
        if (mdb_txn_commit(t) != 0)
            exit(3);
        if (ack_fd >= 0) {
            long done = i + b < n ? i + b : n;
            if (write(ack_fd, &done, sizeof(done)) != sizeof(done))
                exit(4);
        }
    }
    mdb_env_close(e);
}

static long lm_count(const char *dir, double *reopen_s, double *sum)
{
    double t0 = mono();
    MDB_dbi du, dr;
    MDB_env *e = lm_open(dir, &du, &dr);
    MDB_txn *t;
    MDB_stat st;
    MDB_cursor *c;
    MDB_val k, v;
    *reopen_s = mono() - t0;
    mdb_txn_begin(e, NULL, MDB_RDONLY, &t);
    mdb_stat(t, dr, &st);
    *sum = 0;
    mdb_cursor_open(t, du, &c);
    while (mdb_cursor_get(c, &k, &v, MDB_NEXT) == 0) {
        double x;
        memcpy(&x, v.mv_data, sizeof(x));
        *sum += x;
    }
    mdb_cursor_close(c);
    mdb_txn_abort(t);
    mdb_env_close(e);
    return (long)st.ms_entries;
}

/* Child writes and acknowledges batches on a pipe; killed after kill_after_s. Returns the
 * last acknowledged count. */
static long crash_run(int lmdb, const char *p, long n, long b, double kill_after_s)
{
    int fds[2];
    long done = 0, x;
    if (pipe(fds) != 0)
        exit(6);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        lmdb ? lm_run(p, n, b, fds[1]) : sq_run(p, n, b, fds[1]);
        _exit(0);
    }
    close(fds[1]);
    usleep((useconds_t)(kill_after_s * 1e6));
    kill(pid, SIGKILL);
    while (read(fds[0], &x, sizeof(x)) == sizeof(x))
        done = x;
    close(fds[0]);
    waitpid(pid, NULL, 0);
    return done;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 1;
    const char *dir = argv[1];
    long n = atol(argv[2]), b = atol(argv[3]);
    char p[1024];
    for (int lmdb = 0; lmdb < 2; lmdb++) {
        double t0, dt, reopen, sum;
        long c;
        pid_t pid;
        int fds[2];
        snprintf(p, sizeof(p), "%s/%s", dir, lmdb ? "lmdb" : "sqlite.db");
        if (lmdb)
            mkdir(p, 0700);
        /* writes in a child so that its peak RSS is its own */
        if (pipe(fds) != 0)
            return 6;
        t0 = mono();
        pid = fork();
        if (pid == 0) {
            long hwm;
            lmdb ? lm_run(p, n, b, -1) : sq_run(p, n, b, -1);
            hwm = rss_kb("VmHWM:");
            if (write(fds[1], &hwm, sizeof(hwm)) != sizeof(hwm))
                _exit(1);
            _exit(0);
        }
        long hwm = 0;
        if (read(fds[0], &hwm, sizeof(hwm)) != sizeof(hwm))
            return 7;
        waitpid(pid, NULL, 0);
        dt = mono() - t0;
        c = lmdb ? lm_count(p, &reopen, &sum) : sq_count(p, &reopen, &sum);
        printf("%-6s n=%ld batch=%ld: %.0f releases/s (%.0f commits/s), peak RSS %ld kB, "
               "reopen %.4f s, rows %ld, sum %.2f\n",
               lmdb ? "lmdb" : "sqlite", n, b, (double)n / dt, (double)n / b / dt, hwm, reopen, c,
               sum);
        /* SIGKILL in the middle of a second run of writes into a fresh store */
        char q[1100];
        snprintf(q, sizeof(q), "%s.crash", p);
        if (lmdb)
            mkdir(q, 0700);
        long acked = crash_run(lmdb, q, n, b, dt / 2 > 0.05 ? dt / 2 : 0.05);
        c = lmdb ? lm_count(q, &reopen, &sum) : sq_count(q, &reopen, &sum);
        printf("%-6s SIGKILL mid-run: acknowledged %ld, found %ld rows, unit sum %.2f (= rows x "
               "0.01: %s), reopen %.4f s: %s\n",
               lmdb ? "lmdb" : "sqlite", acked, c, sum,
               (long)(sum / 0.01 + 0.5) == c ? "yes" : "NO", reopen,
               c >= acked && (c - acked) <= b ? "OK" : "LOST ACKNOWLEDGED WRITES");
    }
    return 0;
}
