/* test_dp_ledger_store.c - the ledger on its SQLite store (core_dp_ledger_open_store): same
 * answers as the JSONL reference (randomized differential test, with reopens and SIGKILLs),
 * crash injection (SIGKILL between the durable write and publication; torn audit tail;
 * during compaction), header binding, bounded cache, replay horizon, import.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "core/dp_ledger.h"
#include "core/prng.h"
#include "dp_ledger_idx.h"
#include "test_support.h"

TestSuite(dp_ledger_store, .timeout = 120);

struct paths {
    char *dir, audit[512], store[512], ref[512];
};

static void paths_new(struct paths *p)
{
    p->dir = ts_tmpdir();
    snprintf(p->audit, sizeof(p->audit), "%s/ledger.jsonl", p->dir);
    snprintf(p->store, sizeof(p->store), "%s/ledger.db", p->dir);
    snprintf(p->ref, sizeof(p->ref), "%s/ref.jsonl", p->dir);
}

static void paths_free(struct paths *p)
{
    ts_rmtree(p->dir);
    free(p->dir);
}

static const struct core_dp_scheme SCHEME = {60000, 0, 1000};

static int64_t compact_step; /* core_dp_store_opts.compact_step_ms of sopen */
static int64_t index_keep;   /* core_dp_store_opts.index_keep_ms of sopen */

static core_err sopen(const struct paths *p, double cap_eps, int64_t horizon,
                      struct core_dp_ledger **l, char *err, size_t errn)
{
    struct core_dp_ledger_opts o = {
        .path = p->audit, .cap = {cap_eps, 100.0, 1e-3}, .scheme = SCHEME};
    struct core_dp_store_opts so = {.path = p->store,
                                    .replay_horizon_ms = horizon,
                                    .compact_step_ms = compact_step,
                                    .index_keep_ms = index_keep};
    *l = NULL;
    return core_dp_ledger_open_store(&o, &so, l, err, errn);
}

static struct core_dp_ledger *sopen_ok(const struct paths *p, double cap_eps, int64_t horizon)
{
    struct core_dp_ledger *l = NULL;
    char err[512] = "";
    core_err rc = sopen(p, cap_eps, horizon, &l, err, sizeof(err));
    cr_assert_eq(rc, CORE_OK, "open store: %s (%s)", core_errname(rc), err);
    return l;
}

static struct core_dp_ledger *ropen_ok(const char *path, double cap_eps)
{
    struct core_dp_ledger_opts o = {.path = path, .cap = {cap_eps, 100.0, 1e-3}, .scheme = SCHEME};
    struct core_dp_ledger *l = NULL;
    char err[512] = "";
    core_err rc = core_dp_ledger_open(&o, &l, err, sizeof(err));
    cr_assert_eq(rc, CORE_OK, "open reference: %s (%s)", core_errname(rc), err);
    return l;
}

static const struct core_dp_cost C04 = {0.4, 0.08, 0};

static void release(struct core_dp_ledger *l, const char *id, const char *unit,
                    const struct core_dp_cost *c, const void *bytes, size_t len)
{
    const char *units[1] = {unit};
    cr_assert_eq(core_dp_ledger_charge(l, id, "lap", units, 1, c, "{\"k\":-40}"), CORE_OK);
    cr_assert_eq(core_dp_ledger_commit_output(l, id, bytes, len), CORE_OK);
}

Test(dp_ledger_store, commit_replay_cap_and_reopen)
{
    struct paths p;
    paths_new(&p);
    struct core_dp_ledger *l = sopen_ok(&p, 1.0, 0), *l2 = NULL;
    const uint8_t out[5] = {0, 1, 2, 0xff, '\n'};
    const char *u[1] = {"dev1|7"};
    uint8_t *got = NULL;
    size_t len = 0;
    struct core_dp_cost s;
    release(l, "w1", "dev1|7", &C04, out, sizeof(out));
    release(l, "w2", "dev1|7", &C04, "", 0);
    cr_assert_eq(core_dp_ledger_charge(l, "w1", "lap", u, 1, &C04, NULL), CORE_EEXIST);
    cr_assert_eq(core_dp_ledger_charge(l, "w3", "lap", u, 1, &C04, NULL), CORE_EBUDGET);
    cr_assert_eq(sopen(&p, 1.0, 0, &l2, NULL, 0), CORE_EAGAIN, "a second opener is refused");
    core_dp_ledger_free(l);
    l = sopen_ok(&p, 1.0, 0);
    cr_assert_eq(core_dp_ledger_lookup(l, "w1", &got, &len), CORE_OK);
    cr_assert(len == sizeof(out) && memcmp(got, out, len) == 0);
    free(got);
    cr_assert_eq(core_dp_ledger_lookup(l, "w2", &got, &len), CORE_OK);
    cr_assert_eq(len, 0);
    free(got);
    cr_assert_eq(core_dp_ledger_lookup(l, "nope", &got, &len), CORE_ENOTFOUND);
    cr_assert_eq(core_dp_ledger_spent(l, "dev1|7", &s), CORE_OK);
    cr_assert(s.eps >= 0.8 && s.eps < 0.8 + 1e-15);
    cr_assert_eq(core_dp_ledger_charge(l, "w3", "lap", u, 1, &C04, NULL), CORE_EBUDGET,
                 "the cap holds after a restart");
    struct core_dp_ledger_stats st;
    core_dp_ledger_stats(l, &st);
    cr_assert_eq(st.releases, 2);
    cr_assert_eq(st.units, 1);
    core_dp_ledger_free(l);
    /* the audit log holds the same rows as a JSONL ledger: the reference reads it */
    l = ropen_ok(p.audit, 1.0);
    cr_assert_eq(core_dp_ledger_lookup(l, "w1", &got, &len), CORE_OK);
    cr_assert(len == sizeof(out) && memcmp(got, out, len) == 0);
    free(got);
    core_dp_ledger_free(l);
    paths_free(&p);
}

Test(dp_ledger_store, header_and_foreign_files_are_refused_by_name)
{
    struct paths p;
    paths_new(&p);
    struct core_dp_ledger *l = sopen_ok(&p, 1.0, 0);
    char err[512] = "";
    release(l, "a", "d|1", &C04, "A", 1);
    core_dp_ledger_free(l);
    cr_assert_eq(sopen(&p, 2.0, 0, &l, err, sizeof(err)), CORE_ESTATE);
    cr_assert(strstr(err, "cap eps 1;") && strstr(err, "this run has 2"),
              "names the field and both values: %s", err);
    /* an audit log without its store: an existing JSONL ledger, never taken for new */
    cr_assert_eq(rename(p.store, p.ref), 0);
    cr_assert_eq(sopen(&p, 1.0, 0, &l, err, sizeof(err)), CORE_ESTATE);
    cr_assert(strstr(err, "--import"), "%s", err);
    /* an empty store file, and a file that is not a store */
    int fd = open(p.store, O_CREAT | O_WRONLY, 0600);
    close(fd);
    cr_assert_eq(sopen(&p, 1.0, 0, &l, err, sizeof(err)), CORE_ESTATE);
    cr_assert(strstr(err, "empty"), "%s", err);
    fd = open(p.store, O_WRONLY | O_TRUNC);
    cr_assert_eq(write(fd, "not a database, just text\n", 26), 26);
    close(fd);
    cr_assert_eq(sopen(&p, 1.0, 0, &l, err, sizeof(err)), CORE_ESTATE, "%s", err);
    cr_assert_null(l);
    paths_free(&p);
}

static void append_raw(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_APPEND);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static void copy_file(const char *from, const char *to)
{
    size_t n = 0;
    char *text = ts_read_file(from, &n);
    FILE *f = fopen(to, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(text, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
    free(text);
}

/* The audit log is the write-ahead log: rows it holds beyond the store's last transaction
 * (a crash after its fsync, or a power loss that took the store's last synchronous=NORMAL
 * transactions) are applied at open, bit for bit as their commits did; a torn last line is
 * cut; an audit log that lost rows the store committed is refused. */
Test(dp_ledger_store, audit_rows_beyond_the_store_are_applied_and_a_short_audit_refused)
{
    struct paths p;
    paths_new(&p);
    struct core_dp_ledger *l = sopen_ok(&p, 5.0, 0);
    struct core_dp_ledger_stats st;
    struct core_dp_cost s0, s1;
    char err[512] = "", saved[600];
    uint8_t *g;
    size_t n;
    release(l, "a", "u|1", &C04, "A", 1);
    core_dp_ledger_free(l);
    /* a whole row whose store transaction never ran, and a torn one (crash in its write) */
    append_raw(p.audit, "{\"v\":1,\"id\":\"b\",\"mech\":\"lap\",\"units\":[\"u|1\"],\"eps\":0.4,"
                        "\"rho\":0,\"delta\":0,\"out\":\"Qg==\"}\n{\"v\":1,\"id\":\"c\"");
    l = sopen_ok(&p, 5.0, 0);
    core_dp_ledger_stats(l, &st);
    cr_assert_eq(st.torn_dropped, 1);
    cr_assert_eq(st.releases, 2, "the whole row is applied");
    cr_assert_eq(core_dp_ledger_lookup(l, "b", &g, &n), CORE_OK);
    cr_assert(n == 1 && g[0] == 'B');
    free(g);
    cr_assert_eq(core_dp_ledger_lookup(l, "c", &g, &n), CORE_ENOTFOUND);
    cr_assert_eq(core_dp_ledger_spent(l, "u|1", &s0), CORE_OK);
    cr_assert(s0.eps >= 0.8 && s0.eps < 0.8 + 1e-12, "%.17g", s0.eps);
    core_dp_ledger_free(l);
    /* a power loss takes the store's last transactions: the audit log gives them back */
    snprintf(saved, sizeof(saved), "%s.saved", p.store);
    copy_file(p.store, saved);
    l = sopen_ok(&p, 5.0, 0);
    const char *u2[2] = {"u|1", "w\"x|2"};
    for (int i = 0; i < 20; i++) {
        char id[16];
        snprintf(id, sizeof(id), "b%d", i);
        cr_assert_eq(core_dp_ledger_charge(l, id, "lap", u2, 2, &(struct core_dp_cost){0.1, 0, 0},
                                           i % 2 ? NULL : "{\"q\":[1,2]}"),
                     CORE_OK);
        cr_assert_eq(core_dp_ledger_commit_output(l, id, id, strlen(id)), CORE_OK);
    }
    cr_assert_eq(core_dp_ledger_spent(l, "u|1", &s0), CORE_OK);
    core_dp_ledger_free(l);
    copy_file(saved, p.store);
    l = sopen_ok(&p, 5.0, 0);
    core_dp_ledger_stats(l, &st);
    cr_assert_eq(st.releases, 22);
    cr_assert_eq(core_dp_ledger_spent(l, "u|1", &s1), CORE_OK);
    cr_assert(memcmp(&s0, &s1, sizeof(s0)) == 0, "totals bit for bit: %.17g vs %.17g", s0.eps,
              s1.eps);
    cr_assert_eq(core_dp_ledger_lookup(l, "b7", &g, &n), CORE_OK);
    cr_assert(n == 2 && memcmp(g, "b7", 2) == 0);
    free(g);
    cr_assert_eq(core_dp_ledger_charge(l, "b7", "lap", u2, 2, &C04, NULL), CORE_EEXIST,
                 "never re-noised");
    core_dp_ledger_free(l);
    l = ropen_ok(p.audit, 5.0); /* the audit log is a clean JSONL ledger */
    core_dp_ledger_stats(l, &st);
    cr_assert_eq(st.releases, 22);
    cr_assert_eq(core_dp_ledger_spent(l, "u|1", &s1), CORE_OK);
    cr_assert(memcmp(&s0, &s1, sizeof(s0)) == 0);
    core_dp_ledger_free(l);
    /* an audit log that lost rows the store committed: nothing can give them back */
    size_t len1 = 0;
    free(ts_read_file(p.audit, &len1));
    cr_assert_eq(truncate(p.audit, (off_t)len1 - 5), 0);
    cr_assert_eq(sopen(&p, 5.0, 0, &l, err, sizeof(err)), CORE_ESTATE);
    cr_assert_null(l);
    cr_assert(strstr(err, "missing from the audit log"), "%s", err);
    cr_assert_eq(truncate(p.audit, 10), 0, "into the header");
    cr_assert_eq(sopen(&p, 5.0, 0, &l, err, sizeof(err)), CORE_ESTATE);
    paths_free(&p);
}

/* ---- crash injection ---- */

enum kill_at {
    KILL_AFTER_PUBLISH = 0,
    KILL_AFTER_CHARGE = 1,
    KILL_BEFORE_CHARGE = 2,
    KILL_AFTER_WAL = 3
};

static void child_release(const struct paths *p, const char *id, int fd, int kill_at)
{
    struct core_dp_ledger *l = NULL;
    const char *u[1] = {"occ|3"};
    uint8_t y[64];
    if (sopen(p, 5.0, 0, &l, NULL, 0) != CORE_OK)
        _exit(2);
    if (kill_at == KILL_BEFORE_CHARGE)
        raise(SIGKILL);
    if (core_dp_ledger_charge(l, id, "lap", u, 1, &C04, NULL) != CORE_OK)
        _exit(3);
    for (size_t i = 0; i < sizeof(y); i++)
        y[i] = (uint8_t)rand();
    if (kill_at == KILL_AFTER_CHARGE)
        raise(SIGKILL);
    if (core_dp_ledger_commit_output(l, id, y, sizeof(y)) != CORE_OK)
        _exit(4);
    if (kill_at == KILL_AFTER_WAL)
        raise(SIGKILL);
    if (write(fd, y, sizeof(y)) != (ssize_t)sizeof(y))
        _exit(5);
    raise(SIGKILL);
    _exit(6);
}

static int run_child(const struct paths *p, const char *id, int kill_at, uint8_t *seen)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        close(fds[0]);
        srand((unsigned)getpid());
        child_release(p, id, fds[1], kill_at);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], seen, 64);
    close(fds[0]);
    int st;
    waitpid(pid, &st, 0);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "child must die by SIGKILL");
    return (int)got;
}

Test(dp_ledger_store, crash_at_each_step_never_undercounts_and_replays_identical_bytes)
{
    struct paths p;
    paths_new(&p);
    uint8_t seen[64], *b = NULL;
    size_t len;
    struct core_dp_cost s;
    cr_assert_eq(run_child(&p, "w", KILL_BEFORE_CHARGE, seen), 0);
    cr_assert_eq(run_child(&p, "w", KILL_AFTER_CHARGE, seen), 0);
    cr_assert_eq(run_child(&p, "w", KILL_AFTER_WAL, seen), 0, "durable, not yet published");
    struct core_dp_ledger *l = sopen_ok(&p, 5.0, 0);
    cr_assert_eq(core_dp_ledger_spent(l, "occ|3", &s), CORE_OK);
    cr_assert(s.eps == 0.4, "charged exactly once: %g", s.eps);
    cr_assert_eq(core_dp_ledger_lookup(l, "w", &b, &len), CORE_OK, "restart republishes it");
    cr_assert_eq(len, sizeof(seen));
    free(b);
    core_dp_ledger_free(l);
    for (int i = 0; i < 5; i++) {
        char id[32];
        snprintf(id, sizeof(id), "p%d", i);
        cr_assert_eq(run_child(&p, id, KILL_AFTER_PUBLISH, seen), (int)sizeof(seen));
        l = sopen_ok(&p, 5.0, 0);
        cr_assert_eq(core_dp_ledger_lookup(l, id, &b, &len), CORE_OK);
        cr_assert(len == sizeof(seen) && memcmp(b, seen, len) == 0, "byte-identical replay");
        free(b);
        const char *u[1] = {"occ|3"};
        cr_assert_eq(core_dp_ledger_charge(l, id, "lap", u, 1, &C04, NULL), CORE_EEXIST,
                     "never resampled");
        cr_assert_eq(core_dp_ledger_spent(l, "occ|3", &s), CORE_OK);
        cr_assert(s.eps >= 0.4 * (i + 2) - 1e-12 && s.eps < 0.4 * (i + 2) + 1e-12, "%g", s.eps);
        core_dp_ledger_free(l);
    }
    paths_free(&p);
}

/* SIGKILL at a random moment of a stream of group commits (so also between the audit log's
 * fsync and the store's transaction): after reopen every published release replays its
 * bytes, is refused a second charge, and the store's totals are bit for bit those a JSONL
 * reopen of the audit log rebuilds (the audit log is the write-ahead log). */
Test(dp_ledger_store, sigkill_mid_stream_matches_the_audit_log)
{
    struct paths p;
    const struct core_dp_cost c = {0.01, 0, 0};
    paths_new(&p);
    core_dp_ledger_free(sopen_ok(&p, 1e6, 0));
    for (int round = 0; round < 8; round++) {
        int fds[2];
        cr_assert_eq(pipe(fds), 0);
        pid_t pid = fork();
        cr_assert_neq(pid, -1);
        if (pid == 0) {
            struct core_dp_ledger *l = NULL;
            close(fds[0]);
            if (sopen(&p, 1e6, 0, &l, NULL, 0) != CORE_OK)
                _exit(2);
            for (int m = 0;; m++) {
                char ids[16][32];
                const char *idp[16];
                const void *bp[16];
                size_t lens[16];
                for (int d = 0; d < 16; d++) {
                    snprintf(ids[d], sizeof(ids[d]), "r%d.%d|%d", round, d, m);
                    const char *u[2] = {ids[d], "shared|1"};
                    if (core_dp_ledger_charge(l, ids[d], "lap", u, 2, &c, NULL) != CORE_OK)
                        _exit(3);
                    idp[d] = ids[d];
                    bp[d] = ids[d];
                    lens[d] = strlen(ids[d]);
                }
                if (core_dp_ledger_commit_batch(l, 16, idp, bp, lens) != CORE_OK)
                    _exit(4);
                for (int d = 0; d < 16; d++) /* "published": only after the commit */
                    if (write(fds[1], ids[d], 32) != 32)
                        _exit(5);
            }
        }
        close(fds[1]);
        usleep((useconds_t)(2000 + 7000 * round));
        kill(pid, SIGKILL);
        int st;
        waitpid(pid, &st, 0);
        cr_assert(WIFSIGNALED(st), "child status %d", st);
        struct core_dp_ledger *l = sopen_ok(&p, 1e6, 0);
        char id[32];
        int published = 0;
        while (read(fds[0], id, sizeof(id)) == (ssize_t)sizeof(id)) {
            uint8_t *b;
            size_t n;
            cr_assert_eq(core_dp_ledger_lookup(l, id, &b, &n), CORE_OK, "%s", id);
            cr_assert(n == strlen(id) && memcmp(b, id, n) == 0);
            free(b);
            const char *u[1] = {id};
            cr_assert_eq(core_dp_ledger_charge(l, id, "lap", u, 1, &c, NULL), CORE_EEXIST);
            published++;
        }
        close(fds[0]);
        struct core_dp_cost s_store, s_ref;
        cr_assert_eq(core_dp_ledger_spent(l, "shared|1", &s_store), CORE_OK);
        core_dp_ledger_free(l);
        char copy[600];
        snprintf(copy, sizeof(copy), "%s.copy", p.audit);
        copy_file(p.audit, copy);
        l = ropen_ok(copy, 1e6);
        cr_assert_eq(core_dp_ledger_spent(l, "shared|1", &s_ref), CORE_OK);
        core_dp_ledger_free(l);
        unlink(copy);
        cr_assert(memcmp(&s_store, &s_ref, sizeof(s_ref)) == 0, "round %d: %.17g vs %.17g", round,
                  s_store.eps, s_ref.eps);
        cr_assert_geq(s_store.eps, 0.01 * published * 0.999999, "never undercounts");
        cr_log_info("round %d: %d published before the kill\n", round, published);
    }
    paths_free(&p);
}

/* A write that fails half-way (RLIMIT_FSIZE on the audit log) is rolled back: no torn line,
 * no row in the store, the reservation stays pending, the ledger works after a reopen. */
Test(dp_ledger_store, failed_audit_write_is_rolled_back)
{
    struct paths p;
    paths_new(&p);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        struct core_dp_ledger *l = NULL;
        const char *u[1] = {"occ|1"};
        static char big[65536];
        memset(big, 'z', sizeof(big));
        if (sopen(&p, 5.0, 0, &l, NULL, 0) != CORE_OK ||
            core_dp_ledger_charge(l, "ok", "lap", u, 1, &C04, NULL) != CORE_OK ||
            core_dp_ledger_commit_output(l, "ok", "A", 1) != CORE_OK)
            _exit(2);
        signal(SIGXFSZ, SIG_IGN);
        struct stat sb;
        if (stat(p.audit, &sb) != 0)
            _exit(5);
        struct rlimit rl = {.rlim_cur = (rlim_t)sb.st_size + 1000, .rlim_max = RLIM_INFINITY};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
            _exit(3);
        if (core_dp_ledger_charge(l, "big", "lap", u, 1, &C04, NULL) != CORE_OK ||
            core_dp_ledger_commit_output(l, "big", big, sizeof(big)) != CORE_EIO)
            _exit(4);
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
    struct core_dp_ledger *l = sopen_ok(&p, 5.0, 0);
    struct core_dp_ledger_stats stt;
    core_dp_ledger_stats(l, &stt);
    cr_assert_eq(stt.torn_dropped, 0, "the partial line was truncated by the writer");
    cr_assert_eq(stt.releases, 1);
    uint8_t *b;
    size_t len;
    cr_assert_eq(core_dp_ledger_lookup(l, "big", &b, &len), CORE_ENOTFOUND);
    release(l, "after", "occ|1", &C04, "C", 1);
    core_dp_ledger_free(l);
    paths_free(&p);
}

/* ---- randomized differential test: the store against the JSONL reference ---- */

enum { DEVS = 3, SLOTS = 8, IDS = 100 };

struct pair {
    const struct paths *p;
    struct core_dp_ledger *r, *s;
    struct core_prng g;
    int pending[IDS];
    unsigned long ops, refusals, commits, replays, collisions, store_reads;
};

static void pair_open(struct pair *x)
{
    x->r = ropen_ok(x->p->ref, 1.5);
    x->s = sopen_ok(x->p, 1.5, 0);
    memset(x->pending, 0, sizeof(x->pending));
}

static void pair_close(struct pair *x)
{
    struct core_dp_ledger_stats st;
    core_dp_ledger_stats(x->s, &st);
    x->collisions += st.id_collisions;
    x->store_reads += st.id_store_reads;
    core_dp_ledger_free(x->r);
    core_dp_ledger_free(x->s);
    x->r = x->s = NULL;
}

/* Release id i: odd ones name a time (core_dp_id_time), which the store's memory index drops
 * once the differential's advance passes it (index_keep -1): those are then found in the store;
 * even ones name none and stay in memory. */
static void rid(char *b, size_t n, int i)
{
    if (i % 2)
        snprintf(b, n, "r%d|%d|c@1", i, (i % SLOTS) * 60000);
    else
        snprintf(b, n, "r%d", i);
}

/* Every unit's total bit for bit, every id's replay, the release count. */
static void pair_compare(struct pair *x, const char *when)
{
    char u[32], id[32];
    for (int d = 0; d < DEVS; d++)
        for (int t = 0; t < SLOTS; t++) {
            struct core_dp_cost a, b;
            snprintf(u, sizeof(u), "d%d|%d", d, t);
            cr_assert_eq(core_dp_ledger_spent(x->r, u, &a), CORE_OK);
            cr_assert_eq(core_dp_ledger_spent(x->s, u, &b), CORE_OK);
            cr_assert(memcmp(&a, &b, sizeof(a)) == 0, "%s: unit %s: %.17g/%.17g vs %.17g/%.17g",
                      when, u, a.eps, a.rho, b.eps, b.rho);
        }
    for (int i = 0; i < IDS; i++) {
        uint8_t *a = NULL, *b = NULL;
        size_t la = 0, lb = 0;
        rid(id, sizeof(id), i);
        core_err ra = core_dp_ledger_lookup(x->r, id, &a, &la);
        core_err rb = core_dp_ledger_lookup(x->s, id, &b, &lb);
        cr_assert_eq(ra, rb, "%s: lookup %s: %s vs %s", when, id, core_errname(ra),
                     core_errname(rb));
        cr_assert(ra != CORE_OK || (la == lb && memcmp(a, b, la) == 0), "%s: bytes of %s", when,
                  id);
        free(a);
        free(b);
    }
    struct core_dp_ledger_stats sa, sb;
    core_dp_ledger_stats(x->r, &sa);
    core_dp_ledger_stats(x->s, &sb);
    cr_assert_eq(sa.releases, sb.releases, "%s", when);
    cr_assert_eq(sa.pending, sb.pending, "%s", when);
}

static void op_charge(struct pair *x)
{
    static const struct core_dp_cost costs[5] = {{0.1, 0.01, 0},
                                                 {0.25, 0.3, 1e-7},
                                                 {1.0 / 3.0, 0.2, 0},
                                                 {0.7, 0, 1e-5},
                                                 {0.30000000000000004, 0.5, 0}};
    char ubuf[4][32], id[32];
    const char *u[4];
    size_t n = 1 + core_prng_below(&x->g, 4);
    int i = (int)core_prng_below(&x->g, IDS), d = (int)core_prng_below(&x->g, DEVS);
    int t = (int)core_prng_below(&x->g, SLOTS);
    for (size_t k = 0; k < n; k++) { /* neighbouring slots, sometimes a repeated one */
        snprintf(ubuf[k], sizeof(ubuf[k]), "d%d|%d", d,
                 (t + (int)core_prng_below(&x->g, 3)) % SLOTS);
        u[k] = ubuf[k];
    }
    const struct core_dp_cost *c = &costs[core_prng_below(&x->g, 5)];
    rid(id, sizeof(id), i);
    core_err a = core_dp_ledger_charge(x->r, id, "lap", u, n, c, "{\"k\":1}");
    core_err b = core_dp_ledger_charge(x->s, id, "lap", u, n, c, "{\"k\":1}");
    cr_assert_eq(a, b, "op %lu charge %s: %s vs %s", x->ops, id, core_errname(a), core_errname(b));
    x->pending[i] |= a == CORE_OK;
    x->refusals += a == CORE_EBUDGET;
}

static void op_cancel(struct pair *x)
{
    char id[32];
    int i = (int)core_prng_below(&x->g, IDS);
    rid(id, sizeof(id), i);
    core_err a = core_dp_ledger_cancel(x->r, id), b = core_dp_ledger_cancel(x->s, id);
    cr_assert_eq(a, b, "op %lu cancel %s", x->ops, id);
    if (a == CORE_OK)
        x->pending[i] = 0;
}

static void op_commit(struct pair *x)
{
    char idb[6][32];
    const char *ids[6];
    const void *bp[6];
    size_t lens[6], n = 1 + core_prng_below(&x->g, core_prng_below(&x->g, 4) ? 2 : 6);
    uint8_t out[6][24];
    int which[6];
    int pend[IDS], np = 0;
    for (int i = 0; i < IDS; i++)
        if (x->pending[i])
            pend[np++] = i;
    for (size_t k = 0; k < n; k++) { /* mostly pending ids; sometimes any (ENOTFOUND) */
        which[k] = np > 0 && core_prng_below(&x->g, 20) > 0
                       ? pend[core_prng_below(&x->g, (uint64_t)np)]
                       : (int)core_prng_below(&x->g, IDS);
        rid(idb[k], sizeof(idb[k]), which[k]);
        ids[k] = idb[k];
        lens[k] = core_prng_below(&x->g, sizeof(out[k]) + 1);
        for (size_t j = 0; j < sizeof(out[k]); j++)
            out[k][j] = (uint8_t)core_prng_next(&x->g);
        bp[k] = out[k];
    }
    core_err a = core_dp_ledger_commit_batch(x->r, n, ids, bp, lens);
    core_err b = core_dp_ledger_commit_batch(x->s, n, ids, bp, lens);
    cr_assert_eq(a, b, "op %lu commit of %zu: %s vs %s", x->ops, n, core_errname(a),
                 core_errname(b));
    for (size_t k = 0; a == CORE_OK && k < n; k++)
        x->pending[which[k]] = 0;
    x->commits += a == CORE_OK;
}

static int any_pending(const struct pair *x)
{
    for (int i = 0; i < IDS; i++)
        if (x->pending[i])
            return 1;
    return 0;
}

/* One random operation on both ledgers (reopen/advance: the reference reopens). */
static void op_random(struct pair *x)
{
    uint64_t k = core_prng_below(&x->g, 100);
    x->ops++;
    if (k < 45)
        op_charge(x);
    else if (k < 55)
        op_cancel(x);
    else if (k < 85)
        op_commit(x);
    else if (k < 95)
        pair_compare(x, "random compare");
    else if (k < 97 || any_pending(x)) {
        pair_close(x);
        pair_open(x);
        pair_compare(x, "after reopen");
    } else { /* eviction: units leave the store's cache; the reference reopens */
        int64_t wm = (int64_t)core_prng_below(&x->g, SLOTS + 2) * SCHEME.slot_ms;
        cr_assert_eq(core_dp_ledger_advance(x->s, wm, 0), CORE_OK);
        core_dp_ledger_free(x->r);
        x->r = ropen_ok(x->p->ref, 1.5);
        x->replays++;
        pair_compare(x, "after advance");
    }
}

/* The child runs n more operations on both ledgers and is SIGKILLed between two of them. */
static void crash_child(struct pair *x, unsigned long n)
{
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        pair_open(x);
        for (unsigned long i = 0; i < n; i++)
            op_random(x);
        raise(SIGKILL);
        _exit(1);
    }
    int st;
    waitpid(pid, &st, 0);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "child status %d", st);
}

/* seeds [first, last] x 1,000 operations with four SIGKILLed children each; returns the
 * store's id-index collisions (rows read that held another id). */
static unsigned long run_differential(uint64_t first, uint64_t last)
{
    struct paths p;
    unsigned long total = 0, refusals = 0, commits = 0, collisions = 0, store_reads = 0;
    index_keep = -1; /* timed ids leave memory as soon as the advance passes them */
    paths_new(&p);
    for (uint64_t seed = first; seed <= last; seed++) {
        struct pair x = {.p = &p};
        char side[600];
        unlink(p.ref);
        unlink(p.audit);
        unlink(p.store);
        snprintf(side, sizeof(side), "%s-wal", p.store);
        unlink(side);
        snprintf(side, sizeof(side), "%s-shm", p.store);
        unlink(side);
        core_prng_seed(&x.g, seed);
        pair_open(&x);
        for (int round = 0; round < 4; round++) {
            for (int i = 0; i < 250; i++)
                op_random(&x);
            pair_close(&x);
            crash_child(&x, 50 + core_prng_below(&x.g, 100));
            core_prng_next(&x.g); /* the child's draws are not the parent's */
            pair_open(&x);
            pair_compare(&x, "after SIGKILL");
        }
        total += x.ops;
        pair_close(&x);
        refusals += x.refusals;
        commits += x.commits;
        collisions += x.collisions;
        store_reads += x.store_reads;
    }
    /* the sequences must exercise both answers of the cap */
    cr_assert_gt(refusals, 7 * (last - first + 1), "refusals %lu", refusals);
    cr_assert_gt(commits, 20 * (last - first + 1), "commits %lu", commits);
    cr_assert_gt(store_reads, 100 * (last - first + 1), "ids found in the store: %lu", store_reads);
    cr_log_info("differential: %lu ops, %lu commits, %lu refusals, %lu id collisions, %lu ids "
                "found in the store\n",
                total, commits, refusals, collisions, store_reads);
    index_keep = 0;
    paths_free(&p);
    return collisions;
}

Test(dp_ledger_store, randomized_differential_against_the_jsonl_reference)
{
    (void)run_differential(1, 3);
}

/* The id index keeps a tag of a keyed hash, never the id: with the hash cut to 6 bits every
 * id shares its tag with 1/64 of the others, and every decision (EEXIST, replay bytes,
 * totals) must still be the reference's, because a tag match is confirmed by the row's id.
 * (6, not fewer: the table's home slot is the tag too, so at 2 bits every probe walks a
 * quarter of the table and the test takes minutes under ASan on a loaded machine.) */
Test(dp_ledger_store, colliding_id_hashes_never_change_a_decision)
{
    lidx__test_hash_bits(6);
    unsigned long collisions = run_differential(4, 5);
    cr_assert_gt(collisions, 100, "the test must make the index see collisions: %lu", collisions);
}

/* Colliding hashes across compaction and restart: ids leave the index by (hash, place), so a
 * compacted id that shares its tag with live ones takes none of them along. */
Test(dp_ledger_store, colliding_id_hashes_survive_compaction_and_restart)
{
    struct paths p;
    char id[32], unit[32];
    const struct core_dp_cost c = {0.01, 0, 0};
    lidx__test_hash_bits(1);
    paths_new(&p);
    struct core_dp_ledger *l = sopen_ok(&p, 1.0, 5 * SCHEME.slot_ms);
    for (int m = 0; m < 20; m++)
        for (int d = 0; d < 10; d++) {
            snprintf(id, sizeof(id), "w%d@%d", d, m);
            snprintf(unit, sizeof(unit), "d%d|%d", d, m);
            release(l, id, unit, &c, id, strlen(id));
        }
    cr_assert_eq(core_dp_ledger_advance(l, 10 * SCHEME.slot_ms, 0), CORE_OK); /* floor: 5 min */
    for (int reopen = 0; reopen < 2; reopen++) {
        for (int m = 0; m < 20; m++)
            for (int d = 0; d < 10; d++) {
                uint8_t *b = NULL;
                size_t len = 0;
                const char *u[1] = {unit};
                snprintf(id, sizeof(id), "w%d@%d", d, m);
                snprintf(unit, sizeof(unit), "d%d|%d", d, m);
                core_err rc = core_dp_ledger_lookup(l, id, &b, &len);
                if (m < 5) { /* slot end (m + 1) min <= floor (5 min): compacted */
                    cr_assert_eq(rc, CORE_ENOTFOUND, "%s", id);
                    cr_assert_eq(core_dp_ledger_charge(l, id, "lap", u, 1, &c, NULL), CORE_EEXPIRED,
                                 "%s", id);
                    continue;
                }
                cr_assert_eq(rc, CORE_OK, "%s after %d reopens", id, reopen);
                cr_assert(len == strlen(id) && memcmp(b, id, len) == 0, "%s", id);
                free(b);
                cr_assert_eq(core_dp_ledger_charge(l, id, "lap", u, 1, &c, NULL), CORE_EEXIST);
            }
        cr_assert_eq(core_dp_ledger_lookup(l, "w0@99", &(uint8_t *){NULL}, &(size_t){0}),
                     CORE_ENOTFOUND);
        struct core_dp_ledger_stats st;
        core_dp_ledger_stats(l, &st);
        cr_assert_eq(st.releases, 150);
        cr_assert_gt(st.id_collisions, 1000, "collisions %llu",
                     (unsigned long long)st.id_collisions);
        core_dp_ledger_free(l);
        l = sopen_ok(&p, 1.0, 5 * SCHEME.slot_ms);
    }
    core_dp_ledger_free(l);
    paths_free(&p);
}

/* A store of an earlier format (2: replay table keyed by id) is refused by name, with the
 * import as the way forward; it is never read as if it were format 3. */
Test(dp_ledger_store, an_older_store_format_is_refused_with_the_import_command)
{
    struct paths p;
    sqlite3 *db = NULL;
    char err[512] = "";
    paths_new(&p);
    struct core_dp_ledger *l = sopen_ok(&p, 1.0, 0);
    release(l, "a", "d|1", &C04, "A", 1);
    core_dp_ledger_free(l);
    cr_assert_eq(sqlite3_open(p.store, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "UPDATE meta SET v = 2 WHERE k = 'format'", NULL, NULL, NULL),
                 SQLITE_OK);
    sqlite3_close(db);
    cr_assert_eq(sopen(&p, 1.0, 0, &l, err, sizeof(err)), CORE_ESTATE);
    cr_assert_null(l);
    cr_assert(strstr(err, "store format 4") && strstr(err, "gcdp ledger --import"), "%s", err);
    paths_free(&p);
}

/* A format 3 store (no idt column) is upgraded in place at open: every id is found again,
 * the cap still holds, and the file says format 4. */
Test(dp_ledger_store, a_format_3_store_is_upgraded_in_place)
{
    struct paths p;
    sqlite3 *db = NULL;
    char id[32];
    uint8_t *got = NULL;
    size_t len = 0;
    paths_new(&p);
    struct core_dp_ledger *l = sopen_ok(&p, 1.0, 0);
    for (int i = 0; i < 40; i++) {
        snprintf(id, sizeof(id), "d|%d|c@1", i * 60000);
        release(l, id, "d|1", &(struct core_dp_cost){0.02, 0, 0}, id, strlen(id));
    }
    core_dp_ledger_free(l);
    cr_assert_eq(sqlite3_open(p.store, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db,
                              "DROP INDEX rel_idt; ALTER TABLE rel DROP COLUMN idt;"
                              "DELETE FROM meta WHERE k = 'hot_ms';"
                              "UPDATE meta SET v = 3 WHERE k = 'format'",
                              NULL, NULL, NULL),
                 SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_close(db);
    index_keep = -1;
    l = sopen_ok(&p, 1.0, 0);
    cr_assert_eq(core_dp_ledger_advance(l, 20 * 60000, 0), CORE_OK); /* half of them cold */
    for (int i = 0; i < 40; i++) {
        snprintf(id, sizeof(id), "d|%d|c@1", i * 60000);
        cr_assert_eq(core_dp_ledger_lookup(l, id, &got, &len), CORE_OK, "%s", id);
        cr_assert(len == strlen(id) && memcmp(got, id, len) == 0);
        free(got);
    }
    const char *u[1] = {"d|1"};
    cr_assert_eq(core_dp_ledger_charge(l, "d|0|c@1", "lap", u, 1, &C04, NULL), CORE_EEXIST);
    cr_assert_eq(core_dp_ledger_charge(l, "d|1|c@2", "lap", u, 1, &C04, NULL), CORE_EBUDGET);
    struct core_dp_ledger_stats st;
    core_dp_ledger_stats(l, &st);
    cr_assert_gt(st.id_store_reads, 0);
    core_dp_ledger_free(l);
    index_keep = 0;
    cr_assert_eq(sqlite3_open(p.store, &db), SQLITE_OK);
    sqlite3_stmt *s = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT v FROM meta WHERE k = 'format'", -1, &s, NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_step(s), SQLITE_ROW);
    cr_assert_eq(sqlite3_column_int(s, 0), 4);
    sqlite3_finalize(s);
    sqlite3_close(db);
    paths_free(&p);
}

/* Ids leave the memory index once their own time is index_keep_ms behind the cut; they are
 * found in the store (same bytes, still EEXIST), and a reopen loads only the recent ones. */
Test(dp_ledger_store, memory_holds_only_recent_ids_older_ones_are_read_from_the_store)
{
    enum { NDEV = 20, NMIN = 120 };
    const int64_t min = 60000;
    struct paths p;
    char id[48], unit[32];
    uint8_t *got = NULL;
    size_t len = 0;
    struct core_dp_ledger_stats st;
    paths_new(&p);
    index_keep = 10 * min;
    struct core_dp_ledger *l = sopen_ok(&p, 100.0, 0);
    for (int m = 0; m < NMIN; m++) {
        for (int d = 0; d < NDEV; d++) {
            snprintf(id, sizeof(id), "dev%d|%lld|cfg@1", d, (long long)(m * min));
            snprintf(unit, sizeof(unit), "dev%d|%d", d, m);
            release(l, id, unit, &C04, id, strlen(id));
        }
        cr_assert_eq(core_dp_ledger_advance(l, (m + 1) * min, 0), CORE_OK);
    }
    core_dp_ledger_stats(l, &st);
    /* the cut is the watermark (lateness 0, radius 0): after the last advance (watermark 120
     * min) the ids after minute 110 stay, those of minutes 111..119 */
    cr_assert_eq(st.index_ids, 9 * NDEV, "in memory: %llu", (unsigned long long)st.index_ids);
    cr_assert_eq(st.releases, (uint64_t)NDEV * NMIN);
    for (int pass = 0; pass < 2; pass++) {
        for (int m = 0; m < NMIN; m += 7)
            for (int d = 0; d < NDEV; d += 3) {
                snprintf(id, sizeof(id), "dev%d|%lld|cfg@1", d, (long long)(m * min));
                snprintf(unit, sizeof(unit), "dev%d|%d", d, m);
                const char *u[1] = {unit};
                cr_assert_eq(core_dp_ledger_lookup(l, id, &got, &len), CORE_OK, "%s", id);
                cr_assert(len == strlen(id) && memcmp(got, id, len) == 0, "%s", id);
                free(got);
                cr_assert_eq(core_dp_ledger_charge(l, id, "lap", u, 1, &C04, NULL), CORE_EEXIST,
                             "%s", id);
            }
        snprintf(id, sizeof(id), "dev1|%lld|cfg@2", (long long)(3 * min)); /* never released */
        cr_assert_eq(core_dp_ledger_lookup(l, id, &got, &len), CORE_ENOTFOUND);
        core_dp_ledger_stats(l, &st);
        cr_assert_gt(st.id_store_reads, 0, "pass %d", pass);
        core_dp_ledger_free(l); /* the second pass runs on the reopened ledger */
        l = sopen_ok(&p, 100.0, 0);
        core_dp_ledger_stats(l, &st);
        cr_assert(st.index_ids <= 12 * NDEV, "after reopen, in memory: %llu",
                  (unsigned long long)st.index_ids);
    }
    core_dp_ledger_free(l);
    index_keep = 0;
    paths_free(&p);
}

/* ---- compaction, replay horizon, bounded cache ---- */

static void minute_releases(struct core_dp_ledger *l, int devs, int m, const struct core_dp_cost *c)
{
    char ids[64][32];
    const char *idp[64];
    const void *bp[64];
    size_t lens[64];
    cr_assert_leq(devs, 64);
    for (int d = 0; d < devs; d++) {
        snprintf(ids[d], sizeof(ids[d]), "d%d|%d", d, m); /* one window = one slot */
        const char *u[1] = {ids[d]};
        cr_assert_eq(core_dp_ledger_charge(l, ids[d], "lap", u, 1, c, NULL), CORE_OK);
        idp[d] = ids[d];
        bp[d] = ids[d];
        lens[d] = strlen(ids[d]);
    }
    cr_assert_eq(core_dp_ledger_commit_batch(l, (size_t)devs, idp, bp, lens), CORE_OK);
}

Test(dp_ledger_store, horizon_compacts_and_refuses_old_replays_by_name)
{
    struct paths p;
    paths_new(&p);
    const int64_t min = 60000, horizon = 10 * min;
    struct core_dp_ledger *l = sopen_ok(&p, 5.0, horizon);
    struct core_dp_ledger_stats st;
    const struct core_dp_cost c = {0.5, 0, 0};
    uint8_t *b;
    size_t n;
    for (int m = 0; m < 60; m++) {
        minute_releases(l, 5, m, &c);
        cr_assert_eq(core_dp_ledger_advance(l, (m + 1) * min, 0), CORE_OK);
        core_dp_ledger_stats(l, &st);
        cr_assert_eq(st.cached_units, 0, "closed slots leave the cache (minute %d)", m);
        cr_assert_leq(st.releases, 5 * 10, "the replay store keeps the horizon only");
    }
    /* floor = 60 min - 10 min: slots ending at or before minute 50 are gone */
    core_dp_ledger_stats(l, &st);
    cr_assert_eq(st.releases, 50);
    cr_assert_eq(st.compacted, 250);
    cr_assert_eq(core_dp_ledger_lookup(l, "d0|49", &b, &n), CORE_ENOTFOUND);
    const char *old[1] = {"d0|49"}, *live[1] = {"d0|55"}, *both[2] = {"d1|56", "d1|48"};
    cr_assert_eq(core_dp_ledger_charge(l, "d0|49", "lap", old, 1, &c, NULL), CORE_EEXPIRED,
                 "a replay older than the horizon is refused by name, never re-noised");
    cr_assert_eq(core_dp_ledger_charge(l, "new", "lap", both, 2, &c, NULL), CORE_EEXPIRED);
    cr_assert_eq(core_dp_ledger_charge(l, "d0|55", "lap", live, 1, &c, NULL), CORE_EEXIST);
    cr_assert_eq(core_dp_ledger_lookup(l, "d0|55", &b, &n), CORE_OK);
    cr_assert(n == 5 && memcmp(b, "d0|55", 5) == 0);
    free(b);
    struct core_dp_cost s;
    cr_assert_eq(core_dp_ledger_spent(l, "d3|57", &s), CORE_OK);
    cr_assert(s.eps == 0.5, "a cold unit's total comes back from the store");
    cr_assert_eq(core_dp_ledger_charge(l, "more", "lap", (const char *[]){"d3|57"}, 1,
                                       &(struct core_dp_cost){4.6, 0, 0}, NULL),
                 CORE_EBUDGET, "the cap of a cold unit holds");
    core_dp_ledger_free(l);
    l = sopen_ok(&p, 5.0, 0); /* the floor survives a restart (and without a horizon) */
    cr_assert_eq(core_dp_ledger_charge(l, "d0|49", "lap", old, 1, &c, NULL), CORE_EEXPIRED);
    core_dp_ledger_stats(l, &st);
    cr_assert_eq(st.releases, 50);
    cr_assert_eq(st.cached_units, 0, "open reads no history");
    core_dp_ledger_free(l);
    paths_free(&p);
}

/* SIGKILL at a random moment of a large compaction: after reopen either nothing or all of it
 * is gone, the live units' totals and replays are intact. */
/* With a compaction step the floor moves in steps (each page of the replay index rewritten
 * once per step): the store holds at most horizon + step, never less than the horizon, and
 * refuses exactly what is below the floor it reached. */
Test(dp_ledger_store, compaction_in_steps_keeps_at_least_the_horizon)
{
    struct paths p;
    paths_new(&p);
    const int64_t min = 60000, horizon = 10 * min;
    compact_step = 4 * min;
    struct core_dp_ledger *l = sopen_ok(&p, 5.0, horizon);
    struct core_dp_ledger_stats st;
    const struct core_dp_cost c = {0.5, 0, 0};
    int compactions = 0;
    uint64_t before = 0;
    for (int m = 0; m < 60; m++) {
        minute_releases(l, 5, m, &c);
        cr_assert_eq(core_dp_ledger_advance(l, (m + 1) * min, 0), CORE_OK);
        core_dp_ledger_stats(l, &st);
        compactions += st.compacted > before;
        before = st.compacted;
        cr_assert_leq(st.releases, 5u * (10 + 4), "at most horizon + step (minute %d)", m);
        cr_assert_geq(st.releases, m >= 10 ? 5u * 10 : 5u * (unsigned)(m + 1),
                      "at least the horizon (minute %d)", m);
    }
    /* the first live minute F: every later one replays, the one before is refused by name */
    int first = -1;
    for (int m = 0; m < 60 && first < 0; m++) {
        char id[16];
        uint8_t *b;
        size_t n;
        snprintf(id, sizeof(id), "d0|%d", m);
        if (core_dp_ledger_lookup(l, id, &b, &n) == CORE_OK) {
            first = m;
            free(b);
        }
    }
    cr_assert(first >= 60 - 14 && first <= 60 - 10, "live minutes %d..59", first);
    cr_assert_eq(st.releases, 5u * (unsigned)(60 - first));
    cr_assert(compactions >= 10 && compactions <= 16, "%d compactions (50 without a step)",
              compactions);
    char gone_id[16], kept_id[16];
    snprintf(gone_id, sizeof(gone_id), "d0|%d", first - 1);
    snprintf(kept_id, sizeof(kept_id), "d0|%d", first);
    const char *gone[1] = {gone_id}, *kept[1] = {kept_id};
    cr_assert_eq(core_dp_ledger_charge(l, gone_id, "lap", gone, 1, &c, NULL), CORE_EEXPIRED);
    cr_assert_eq(core_dp_ledger_charge(l, kept_id, "lap", kept, 1, &c, NULL), CORE_EEXIST);
    core_dp_ledger_free(l);
    compact_step = 0;
    paths_free(&p);
}

Test(dp_ledger_store, crash_during_compaction_is_all_or_nothing)
{
    struct paths p;
    const int64_t min = 60000;
    const struct core_dp_cost c = {0.25, 0, 0};
    int seen_before = 0, seen_after = 0;
    uint64_t before = 200 * 50; /* rows before the round's compaction */
    paths_new(&p);
    struct core_dp_ledger *l = sopen_ok(&p, 5.0, 0);
    for (int m = 0; m < 200; m++)
        minute_releases(l, 50, m, &c);
    core_dp_ledger_free(l);
    for (int round = 0; round < 6; round++) {
        int fds[2];
        char go;
        cr_assert_eq(pipe(fds), 0);
        pid_t pid = fork();
        cr_assert_neq(pid, -1);
        if (pid == 0) {
            close(fds[0]);
            if (sopen(&p, 5.0, (int64_t)(180 - 20 * round) * min, &l, NULL, 0) != CORE_OK)
                _exit(2);
            if (write(fds[1], "g", 1) != 1)
                _exit(3);
            if (core_dp_ledger_advance(l, 200 * min, 0) != CORE_OK)
                _exit(4);
            pause();
            _exit(5);
        }
        close(fds[1]);
        cr_assert_eq(read(fds[0], &go, 1), 1);
        usleep((useconds_t)(round * 4000));
        kill(pid, SIGKILL);
        int st;
        waitpid(pid, &st, 0);
        close(fds[0]);
        cr_assert(WIFSIGNALED(st), "child status %d", st);
        l = sopen_ok(&p, 5.0, 0);
        struct core_dp_ledger_stats s;
        core_dp_ledger_stats(l, &s);
        int64_t floor_min = 20 + 20 * round; /* slots ending at or before it go */
        uint8_t *b;
        size_t n;
        core_err old = core_dp_ledger_lookup(l, "d7|0", &b, &n);
        if (old == CORE_OK)
            free(b);
        /* this round's compaction: all of it or none of it (the rows an earlier round left),
         * never a part */
        uint64_t want_cut = (uint64_t)(200 - floor_min) * 50;
        cr_assert(s.releases == before || s.releases == want_cut,
                  "round %d: %llu rows (before it %llu, after it %llu)", round,
                  (unsigned long long)s.releases, (unsigned long long)before,
                  (unsigned long long)want_cut);
        if (s.releases == before)
            seen_before++;
        else
            seen_after++;
        before = s.releases;
        cr_assert_eq(core_dp_ledger_lookup(l, "d7|199", &b, &n), CORE_OK);
        cr_assert(n == 6 && memcmp(b, "d7|199", 6) == 0);
        free(b);
        struct core_dp_cost sp;
        cr_assert_eq(core_dp_ledger_spent(l, "d7|199", &sp), CORE_OK);
        cr_assert(sp.eps == 0.25, "a live unit's total is intact");
        core_dp_ledger_free(l);
    }
    cr_log_info("compaction crash: %d rounds killed before it committed, %d after\n", seen_before,
                seen_after);
    paths_free(&p);
}

Test(dp_ledger_store, import_of_a_jsonl_ledger_verifies_and_refuses_an_existing_store)
{
    struct paths p;
    paths_new(&p);
    struct core_dp_ledger *r = ropen_ok(p.audit, 5.0), *l;
    struct core_dp_ledger_opts o = {.path = p.audit, .cap = {5.0, 100.0, 1e-3}, .scheme = SCHEME};
    const struct core_dp_cost costs[3] = {{0.1, 0, 0}, {1.0 / 3.0, 0.5, 1e-7}, {0.7, 0, 0}};
    char err[512] = "", id[32], u0[32], u1[32];
    uint64_t rows = 0;
    for (int i = 0; i < 300; i++) {
        snprintf(id, sizeof(id), "w%d", i);
        snprintf(u0, sizeof(u0), "d%d|%d", i % 7, i % 11);
        snprintf(u1, sizeof(u1), "odd-unit-%d", i % 3); /* no slot: never compacted */
        const char *u[2] = {u0, u1};
        core_err rc = core_dp_ledger_charge(r, id, "lap", u, 2, &costs[i % 3], NULL);
        if (rc == CORE_OK)
            cr_assert_eq(core_dp_ledger_commit_output(r, id, id, strlen(id)), CORE_OK);
    }
    struct core_dp_ledger_stats rs;
    core_dp_ledger_stats(r, &rs);
    core_dp_ledger_free(r);
    append_raw(p.audit, "{\"v\":1,\"id\":\"torn"); /* a torn last line is cut as an open does */
    o.cap.eps = 4.0;
    cr_assert_eq(core_dp_ledger_import(&o, p.store, &rows, err, sizeof(err)), CORE_ESTATE,
                 "another cap is refused: %s", err);
    o.cap.eps = 5.0;
    cr_assert_eq(core_dp_ledger_import(&o, p.store, &rows, err, sizeof(err)), CORE_OK, "%s", err);
    cr_assert_eq(rows, rs.releases);
    cr_assert_eq(core_dp_ledger_import(&o, p.store, &rows, err, sizeof(err)), CORE_EEXIST);
    l = sopen_ok(&p, 5.0, 0);
    struct core_dp_ledger_stats ss;
    core_dp_ledger_stats(l, &ss);
    cr_assert_eq(ss.releases, rs.releases);
    cr_assert_eq(ss.units, rs.units);
    /* totals and replays equal the JSONL ledger's (reopened read-only afterwards) */
    struct core_dp_cost st[7][11], so[3];
    for (int d = 0; d < 7; d++)
        for (int t = 0; t < 11; t++) {
            snprintf(u0, sizeof(u0), "d%d|%d", d, t);
            cr_assert_eq(core_dp_ledger_spent(l, u0, &st[d][t]), CORE_OK);
        }
    for (int k = 0; k < 3; k++) {
        snprintf(u1, sizeof(u1), "odd-unit-%d", k);
        cr_assert_eq(core_dp_ledger_spent(l, u1, &so[k]), CORE_OK);
    }
    release(l, "after-import", "d0|0", &costs[0], "x", 1);
    core_dp_ledger_free(l);
    r = ropen_ok(p.audit, 5.0); /* the audit log, with the new row, is still a JSONL ledger */
    uint8_t *got = NULL;
    size_t got_len = 0;
    cr_assert_eq(core_dp_ledger_lookup(r, "after-import", &got, &got_len), CORE_OK);
    cr_assert(got_len == 1 && got[0] == 'x');
    free(got);
    struct core_dp_cost c;
    for (int d = 0; d < 7; d++)
        for (int t = 0; t < 11; t++) {
            snprintf(u0, sizeof(u0), "d%d|%d", d, t);
            cr_assert_eq(core_dp_ledger_spent(r, u0, &c), CORE_OK);
            if (d == 0 && t == 0)
                continue; /* charged once more after the import */
            cr_assert(memcmp(&c, &st[d][t], sizeof(c)) == 0, "unit %s", u0);
        }
    for (int k = 0; k < 3; k++) {
        snprintf(u1, sizeof(u1), "odd-unit-%d", k);
        cr_assert_eq(core_dp_ledger_spent(r, u1, &c), CORE_OK);
        cr_assert(memcmp(&c, &so[k], sizeof(c)) == 0, "unit %s", u1);
    }
    core_dp_ledger_free(r);
    paths_free(&p);
}

/* A full cache drops units without pending charges (their totals are in the store): the
 * cache stays within max_tracked without any advance, and every cap still holds. */
Test(dp_ledger_store, a_full_cache_evicts_and_the_cap_still_holds)
{
    struct paths p;
    paths_new(&p);
    struct core_dp_ledger_opts o = {
        .path = p.audit, .cap = {1.0, 100.0, 1e-3}, .scheme = SCHEME, .max_tracked = 8};
    struct core_dp_store_opts so = {.path = p.store, .replay_horizon_ms = 0};
    struct core_dp_ledger *l = NULL;
    struct core_dp_ledger_stats st;
    char id[32], u[32];
    cr_assert_eq(core_dp_ledger_open_store(&o, &so, &l, NULL, 0), CORE_OK);
    for (int i = 0; i < 200; i++) {
        snprintf(id, sizeof(id), "r%d", i);
        snprintf(u, sizeof(u), "d%d|%d", i % 17, i % 5); /* 85 units, each charged 2-3 times */
        core_err rc = core_dp_ledger_charge(l, id, "lap", (const char *[]){u}, 1, &C04, NULL);
        int nth = i / 85; /* this unit's earlier charges: 0.4 each, cap 1.0 */
        cr_assert_eq(rc, nth < 2 ? CORE_OK : CORE_EBUDGET, "release %d: %s", i, core_errname(rc));
        if (rc == CORE_OK)
            cr_assert_eq(core_dp_ledger_commit_output(l, id, "o", 1), CORE_OK);
        core_dp_ledger_stats(l, &st);
        cr_assert_leq(st.cached_units + st.pending, 8);
    }
    core_dp_ledger_free(l);
    paths_free(&p);
}
