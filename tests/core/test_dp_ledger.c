/* test_dp_ledger.c - write-ahead ledger (NOISE.md §6 T6): replay returns the stored bytes,
 * crash injection (SIGKILL between the durable write and publication, and before it),
 * totals never undercount, lifetime cap per unit, torn last line, group commit.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <jansson.h>
#include <sodium.h>

#include "core/dp_ledger.h"
#include "core/dp_mech.h"
#include "core/dp_rng.h"
#include "test_support.h"

TestSuite(dp_ledger, .timeout = 60);

static char *tmp_path(char **dir)
{
    *dir = ts_tmpdir();
    size_t n = strlen(*dir) + 32;
    char *p = malloc(n);
    snprintf(p, n, "%s/ledger.jsonl", *dir);
    return p;
}

static struct core_dp_ledger *open_ok(const char *path, double cap_eps)
{
    struct core_dp_ledger_opts o = {
        .path = path, .cap = {cap_eps, 100.0, 1e-3}, .scheme = {60000, 0, 1000}};
    struct core_dp_ledger *l = NULL;
    char err[256] = "";
    core_err rc = core_dp_ledger_open(&o, &l, err, sizeof(err));
    cr_assert_eq(rc, CORE_OK, "open: %s (%s)", core_errname(rc), err);
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

Test(dp_ledger, commit_then_replay_returns_identical_bytes)
{
    char *dir, *path = tmp_path(&dir);
    struct core_dp_ledger *l = open_ok(path, 10.0);
    const uint8_t out[5] = {0, 1, 2, 0xff, '\n'};
    uint8_t *got = NULL;
    size_t len = 0;
    release(l, "w1/theta3", "dev1/2026-11-29", &C04, out, sizeof(out));
    const char *u[1] = {"dev1/2026-11-29"};
    cr_assert_eq(core_dp_ledger_charge(l, "w1/theta3", "lap", u, 1, &C04, NULL), CORE_EEXIST,
                 "a release id is published once");
    cr_assert_eq(core_dp_ledger_lookup(l, "w1/theta3", &got, &len), CORE_OK);
    cr_assert_eq(len, sizeof(out));
    cr_assert_eq(memcmp(got, out, len), 0);
    free(got);
    cr_assert_eq(core_dp_ledger_lookup(l, "nope", &got, &len), CORE_ENOTFOUND);
    core_dp_ledger_free(l);
    l = open_ok(path, 10.0); /* reopen rebuilds from the file */
    cr_assert_eq(core_dp_ledger_lookup(l, "w1/theta3", &got, &len), CORE_OK);
    cr_assert_eq(len, sizeof(out));
    cr_assert_eq(memcmp(got, out, len), 0);
    free(got);
    struct core_dp_cost s;
    cr_assert_eq(core_dp_ledger_spent(l, "dev1/2026-11-29", &s), CORE_OK);
    cr_assert(s.eps == 0.4 && s.rho == 0.08);
    core_dp_ledger_free(l);
    ts_rmtree(dir);
    free(dir);
    free(path);
}

Test(dp_ledger, lifetime_cap_refuses_beyond_and_survives_reopen)
{
    char *dir, *path = tmp_path(&dir);
    struct core_dp_ledger *l = open_ok(path, 1.0);
    const char *u[1] = {"occ-7"};
    release(l, "r1", "occ-7", &C04, "a", 1);
    release(l, "r2", "occ-7", &C04, "b", 1); /* sequential: 0.8 */
    cr_assert_eq(core_dp_ledger_charge(l, "r3", "lap", u, 1, &C04, NULL), CORE_EBUDGET);
    struct core_dp_cost s;
    cr_assert_eq(core_dp_ledger_spent(l, "occ-7", &s), CORE_OK);
    cr_assert(fabs(s.eps - 0.8) < 1e-15 && s.eps >= 0.8, "refused charge reserved nothing");
    release(l, "r3b", "occ-8", &C04, "c", 1); /* disjoint unit: parallel composition */
    const char *both[2] = {"occ-8", "occ-7"};
    cr_assert_eq(core_dp_ledger_charge(l, "r4", "lap", both, 2, &C04, NULL), CORE_EBUDGET,
                 "one unit over the cap refuses the whole charge");
    cr_assert_eq(core_dp_ledger_spent(l, "occ-8", &s), CORE_OK);
    cr_assert(s.eps == 0.4, "occ-8 untouched by the refused charge");
    struct core_dp_cost nan_cost = {NAN, 0, 0};
    cr_assert_eq(core_dp_ledger_charge(l, "r5", "lap", u, 1, &nan_cost, NULL), CORE_EINVAL);
    core_dp_ledger_free(l);
    l = open_ok(path, 1.0);
    cr_assert_eq(core_dp_ledger_charge(l, "r3", "lap", u, 1, &C04, NULL), CORE_EBUDGET,
                 "the cap holds after a restart");
    /* 0.8 + 0.2 is 1 + 2^-54 exactly in binary, rounded UP above the cap 1.0: refused */
    struct core_dp_cost small = {0.2, 0, 0};
    cr_assert_eq(core_dp_ledger_charge(l, "r3", "lap", u, 1, &small, NULL), CORE_EBUDGET);
    small.eps = 0.125;
    cr_assert_eq(core_dp_ledger_charge(l, "r3", "lap", u, 1, &small, NULL), CORE_OK);
    core_dp_ledger_free(l);
    ts_rmtree(dir);
    free(dir);
    free(path);
}

Test(dp_ledger, cancel_returns_the_reservation_and_duplicates_charge_once)
{
    char *dir, *path = tmp_path(&dir);
    struct core_dp_ledger *l = open_ok(path, 1.0);
    const char *u[3] = {"a", "b", "a"};
    struct core_dp_cost s;
    cr_assert_eq(core_dp_ledger_charge(l, "x", "gauss", u, 3, &C04, NULL), CORE_OK);
    cr_assert_eq(core_dp_ledger_spent(l, "a", &s), CORE_OK);
    cr_assert(s.eps == 0.4, "unit listed twice is charged once");
    cr_assert_eq(core_dp_ledger_charge(l, "x", "gauss", u, 3, &C04, NULL), CORE_ESTATE);
    cr_assert_eq(core_dp_ledger_cancel(l, "x"), CORE_OK);
    cr_assert_eq(core_dp_ledger_spent(l, "a", &s), CORE_OK);
    cr_assert(s.eps == 0.0);
    cr_assert_eq(core_dp_ledger_commit_output(l, "x", "z", 1), CORE_ENOTFOUND);
    cr_assert_eq(core_dp_ledger_charge(l, "x", "gauss", u, 3, &C04, NULL), CORE_OK);
    cr_assert_eq(core_dp_ledger_commit_output(l, "x", "z", 1), CORE_OK);
    core_dp_ledger_free(l);
    ts_rmtree(dir);
    free(dir);
    free(path);
}

Test(dp_ledger, second_opener_is_refused)
{
    char *dir, *path = tmp_path(&dir);
    struct core_dp_ledger *l = open_ok(path, 1.0), *l2 = NULL;
    struct core_dp_ledger_opts o = {.path = path, .cap = {1, 1, 1}, .scheme = {60000, 0, 1000}};
    cr_assert_eq(core_dp_ledger_open(&o, &l2, NULL, 0), CORE_EAGAIN);
    cr_assert_null(l2);
    core_dp_ledger_free(l);
    o.cap.eps = NAN;
    cr_assert_eq(core_dp_ledger_open(&o, &l2, NULL, 0), CORE_EINVAL, "NaN cap fails closed");
    ts_rmtree(dir);
    free(dir);
    free(path);
}

/* ---- crash injection ---- */

/* Kill points of the child (NOISE.md §6 T6). */
enum kill_at {
    KILL_BEFORE_CHARGE = 2,
    KILL_AFTER_CHARGE = 1,
    KILL_AFTER_PUBLISH = 0,
    KILL_AFTER_WAL = 3
};

/* Child: charge, draw real noise, commit; then report the bytes on the observer pipe (stand-
 * in for publication) and SIGKILL itself before returning. Other kill points: before the
 * charge, between the charge and the durable write, between the write and publication. */
static void child_release(const char *path, const char *id, int fd, int kill_at)
{
    struct core_dp_ledger_opts o = {
        .path = path, .cap = {5.0, 100.0, 1e-3}, .scheme = {60000, 0, 1000}};
    struct core_dp_ledger *l = NULL;
    struct core_dp_lap p;
    const char *u[1] = {"occ"};
    double x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8];
    if (core_dp_ledger_open(&o, &l, NULL, 0) != CORE_OK)
        _exit(2);
    if (kill_at == KILL_BEFORE_CHARGE)
        raise(SIGKILL);
    if (core_dp_ledger_charge(l, id, "lap", u, 1, &C04, NULL) != CORE_OK ||
        core_dp_lap_params(1.0, 0.4, 10.0, 1, &p) != CORE_OK ||
        core_dp_lap_release(core_rng_os(), &p, 8, x, y) != CORE_OK)
        _exit(3);
    if (kill_at == KILL_AFTER_CHARGE)
        raise(SIGKILL);
    if (core_dp_ledger_commit_output(l, id, y, sizeof(y)) != CORE_OK)
        _exit(4);
    if (kill_at == KILL_AFTER_WAL)
        raise(SIGKILL);
    if (write(fd, y, sizeof(y)) != (ssize_t)sizeof(y))
        _exit(5);
    raise(SIGKILL); /* dies before "returning" to its caller */
    _exit(6);
}

static int run_child(const char *path, const char *id, int kill_before, double *bytes_out)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        close(fds[0]);
        child_release(path, id, fds[1], kill_before);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], bytes_out, 8 * sizeof(double));
    close(fds[0]);
    int st;
    waitpid(pid, &st, 0);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "child must die by SIGKILL");
    return (int)got;
}

Test(dp_ledger, crash_after_durable_write_replays_identical_bytes)
{
    char *dir, *path = tmp_path(&dir);
    double seen[8];
    struct core_dp_cost s;
    for (int i = 0; i < 10; i++) {
        char id[32];
        snprintf(id, sizeof(id), "win-%d", i);
        cr_assert_eq(run_child(path, id, 0, seen), (int)sizeof(seen));
        struct core_dp_ledger *l = open_ok(path, 5.0);
        uint8_t *b = NULL;
        size_t len = 0;
        cr_assert_eq(core_dp_ledger_lookup(l, id, &b, &len), CORE_OK);
        cr_assert_eq(len, sizeof(seen));
        cr_assert_eq(memcmp(b, seen, len), 0, "replay must be byte-identical to what was seen");
        free(b);
        const char *u[1] = {"occ"};
        cr_assert_eq(core_dp_ledger_charge(l, id, "lap", u, 1, &C04, NULL), CORE_EEXIST,
                     "never resampled");
        cr_assert_eq(core_dp_ledger_spent(l, "occ", &s), CORE_OK);
        cr_assert_geq(s.eps, 0.4 * (i + 1) - 1e-12, "total never undercounts");
        cr_assert_lt(s.eps, 0.4 * (i + 1) + 1e-12, "charged exactly once per release");
        core_dp_ledger_free(l);
    }
    ts_rmtree(dir);
    free(dir);
    free(path);
}

Test(dp_ledger, crash_at_each_step_never_undercounts)
{
    char *dir, *path = tmp_path(&dir);
    double seen[8];
    struct core_dp_cost s;
    uint8_t *b = NULL;
    size_t len;
    cr_assert_eq(run_child(path, "w", KILL_BEFORE_CHARGE, seen), 0);
    cr_assert_eq(run_child(path, "w", KILL_AFTER_CHARGE, seen), 0);
    cr_assert_eq(run_child(path, "w", KILL_AFTER_WAL, seen), 0, "written, not yet published");
    struct core_dp_ledger *l = open_ok(path, 5.0);
    cr_assert_eq(core_dp_ledger_spent(l, "occ", &s), CORE_OK);
    cr_assert(s.eps == 0.4, "charged exactly once: %g", s.eps);
    cr_assert_eq(core_dp_ledger_lookup(l, "w", &b, &len), CORE_OK, "restart republishes it");
    cr_assert_eq(len, sizeof(seen));
    free(b);
    core_dp_ledger_free(l);
    cr_assert_eq(run_child(path, "w2", KILL_AFTER_PUBLISH, seen), (int)sizeof(seen));
    l = open_ok(path, 5.0);
    cr_assert_eq(core_dp_ledger_lookup(l, "w2", &b, &len), CORE_OK);
    cr_assert_eq(memcmp(b, seen, sizeof(seen)), 0);
    free(b);
    cr_assert_eq(core_dp_ledger_spent(l, "occ", &s), CORE_OK);
    cr_assert(s.eps == 0.8, "two published releases, two charges: %g", s.eps);
    core_dp_ledger_free(l);
    ts_rmtree(dir);
    free(dir);
    free(path);
}

/* A write that fails half-way (RLIMIT_FSIZE) is rolled back: no torn line, no row, and the
 * ledger keeps working after a reopen. Runs in a child because of the rlimit. */
Test(dp_ledger, failed_write_is_rolled_back)
{
    char *dir, *path = tmp_path(&dir);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        struct core_dp_ledger_opts o = {
            .path = path, .cap = {5.0, 100.0, 1e-3}, .scheme = {60000, 0, 1000}};
        struct core_dp_ledger *l = NULL;
        const char *u[1] = {"occ"};
        char big[4096];
        memset(big, 'z', sizeof(big));
        if (core_dp_ledger_open(&o, &l, NULL, 0) != CORE_OK ||
            core_dp_ledger_charge(l, "ok", "lap", u, 1, &C04, NULL) != CORE_OK ||
            core_dp_ledger_commit_output(l, "ok", "A", 1) != CORE_OK)
            _exit(2);
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {.rlim_cur = 1000, .rlim_max = RLIM_INFINITY};
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
    struct core_dp_ledger *l = open_ok(path, 5.0);
    struct core_dp_ledger_stats stt;
    core_dp_ledger_stats(l, &stt);
    cr_assert_eq(stt.torn_dropped, 0, "the partial line was truncated by the writer");
    cr_assert_eq(stt.releases, 1);
    uint8_t *b;
    size_t len;
    cr_assert_eq(core_dp_ledger_lookup(l, "big", &b, &len), CORE_ENOTFOUND);
    release(l, "after", "occ", &C04, "C", 1);
    core_dp_ledger_free(l);
    ts_rmtree(dir);
    free(dir);
    free(path);
}

Test(dp_ledger, crash_before_durable_write_publishes_nothing)
{
    char *dir, *path = tmp_path(&dir);
    double seen[8];
    cr_assert_eq(run_child(path, "w", 1, seen), 0, "nothing was published");
    struct core_dp_ledger *l = open_ok(path, 5.0);
    uint8_t *b = NULL;
    size_t len;
    cr_assert_eq(core_dp_ledger_lookup(l, "w", &b, &len), CORE_ENOTFOUND);
    core_dp_ledger_free(l);
    cr_assert_eq(run_child(path, "w", 0, seen), (int)sizeof(seen), "a retry may release");
    l = open_ok(path, 5.0);
    struct core_dp_cost s;
    cr_assert_eq(core_dp_ledger_spent(l, "occ", &s), CORE_OK);
    cr_assert(s.eps == 0.4, "one published release, one charge");
    core_dp_ledger_free(l);
    ts_rmtree(dir);
    free(dir);
    free(path);
}

static void append_raw(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_APPEND);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

Test(dp_ledger, torn_last_line_is_cut_and_middle_corruption_refused)
{
    char *dir, *path = tmp_path(&dir);
    struct core_dp_ledger *l = open_ok(path, 5.0);
    release(l, "a", "u", &C04, "A", 1);
    core_dp_ledger_free(l);
    append_raw(path, "{\"v\":1,\"id\":\"b\",\"mech\":\"lap\",\"units\":[\"u\"],\"eps\":0.4");
    l = open_ok(path, 5.0);
    struct core_dp_ledger_stats st;
    core_dp_ledger_stats(l, &st);
    cr_assert_eq(st.torn_dropped, 1);
    cr_assert_eq(st.releases, 1);
    release(l, "b", "u", &C04, "B", 1); /* appends cleanly after the cut */
    core_dp_ledger_free(l);
    l = open_ok(path, 5.0);
    uint8_t *got;
    size_t len;
    cr_assert_eq(core_dp_ledger_lookup(l, "b", &got, &len), CORE_OK);
    cr_assert(len == 1 && got[0] == 'B');
    free(got);
    core_dp_ledger_free(l);
    /* garbage followed by a valid row: not a torn append, refuse to open */
    append_raw(path, "garbage\n{\"v\":1}\n");
    struct core_dp_ledger_opts o = {
        .path = path, .cap = {5.0, 100.0, 1e-3}, .scheme = {60000, 0, 1000}};
    char err[256] = "";
    cr_assert_eq(core_dp_ledger_open(&o, &l, err, sizeof(err)), CORE_EPARSE);
    cr_assert(strstr(err, "line") != NULL, "reason names the line: %s", err);
    ts_rmtree(dir);
    free(dir);
    free(path);
}

Test(dp_ledger, group_commit_uses_one_fsync_for_a_batch)
{
    char *dir, *path = tmp_path(&dir);
    struct core_dp_ledger *l = open_ok(path, 100.0);
    enum { B = 64 };
    char ids[B][16];
    const char *idp[B];
    const void *bp[B];
    size_t lens[B];
    struct core_dp_cost c = {0.01, 0, 0};
    struct core_dp_ledger_stats before, after;
    for (int i = 0; i < B; i++) {
        char unit[16];
        snprintf(ids[i], sizeof(ids[i]), "r%d", i);
        snprintf(unit, sizeof(unit), "u%d", i % 4);
        const char *u[1] = {unit};
        cr_assert_eq(core_dp_ledger_charge(l, ids[i], "lap", u, 1, &c, NULL), CORE_OK);
        idp[i] = ids[i];
        bp[i] = ids[i];
        lens[i] = strlen(ids[i]);
    }
    const char *dup[2] = {ids[0], ids[0]};
    const void *dupb[2] = {"x", "x"};
    const size_t dupl[2] = {1, 1};
    cr_assert_eq(core_dp_ledger_commit_batch(l, 2, dup, dupb, dupl), CORE_EINVAL,
                 "the same id twice in one batch");
    core_dp_ledger_stats(l, &before);
    cr_assert_eq(core_dp_ledger_commit_batch(l, B, idp, bp, lens), CORE_OK);
    core_dp_ledger_stats(l, &after);
    cr_assert_eq(after.fsyncs - before.fsyncs, 1);
    cr_assert_eq(after.pending, 0);
    core_dp_ledger_free(l);
    l = open_ok(path, 100.0);
    for (int i = 0; i < B; i++) {
        uint8_t *g;
        size_t n;
        cr_assert_eq(core_dp_ledger_lookup(l, ids[i], &g, &n), CORE_OK);
        cr_assert(n == lens[i] && memcmp(g, ids[i], n) == 0);
        free(g);
    }
    struct core_dp_cost s;
    cr_assert_eq(core_dp_ledger_spent(l, "u1", &s), CORE_OK);
    cr_assert(s.eps >= 0.16 && s.eps < 0.16 + 1e-14, "%.17g", s.eps);
    core_dp_ledger_free(l);
    ts_rmtree(dir);
    free(dir);
    free(path);
}

Test(dp_ledger, invalid_arguments_are_rejected)
{
    char *dir, *path = tmp_path(&dir);
    struct core_dp_ledger *l = open_ok(path, 1.0);
    const char *u[1] = {"u"};
    const char *bad_utf8[1] = {"\xff\xfe"};
    struct core_dp_cost c = {0.1, 0, 0};
    cr_assert_eq(core_dp_ledger_charge(l, "", "lap", u, 1, &c, NULL), CORE_EINVAL);
    cr_assert_eq(core_dp_ledger_charge(l, "i", "lap", u, 0, &c, NULL), CORE_EINVAL);
    cr_assert_eq(core_dp_ledger_charge(l, "i", "lap", bad_utf8, 1, &c, NULL), CORE_EINVAL);
    cr_assert_eq(core_dp_ledger_charge(l, "i", "lap", u, 1, &c, "[1]"), CORE_EINVAL);
    cr_assert_eq(core_dp_ledger_charge(l, "i", "lap", u, 1, &c, "{bad"), CORE_EINVAL);
    c.rho = -1;
    cr_assert_eq(core_dp_ledger_charge(l, "i", "lap", u, 1, &c, NULL), CORE_EINVAL);
    c.rho = INFINITY;
    cr_assert_eq(core_dp_ledger_charge(l, "i", "lap", u, 1, &c, NULL), CORE_EINVAL);
    core_dp_ledger_free(l);
    core_dp_ledger_free(NULL);
    ts_rmtree(dir);
    free(dir);
    free(path);
}

/* The table-driven base64 of the commit path must write exactly libsodium's ORIGINAL
 * variant (what lookup decodes and what older ledgers hold): every output length 0..200
 * (all three padding cases), random bytes, one group commit, then the file's "out"
 * strings are compared with sodium_bin2base64 and every release is replayed. */
Test(dp_ledger, base64_rows_match_libsodium_for_every_length)
{
    enum { N = 201 };
    char *dir, *path = tmp_path(&dir);
    struct core_dp_ledger *l = open_ok(path, 1e6);
    static uint8_t data[N][N];
    static char idbuf[N][16];
    const char *ids[N], *u[1] = {"unit"};
    const void *bp[N];
    size_t lens[N];

    cr_assert_eq(core_rng_bytes(core_rng_os(), data, sizeof(data)), CORE_OK);
    for (size_t i = 0; i < N; i++) {
        snprintf(idbuf[i], sizeof(idbuf[i]), "b64-%zu", i);
        ids[i] = idbuf[i];
        bp[i] = data[i];
        lens[i] = i;
        cr_assert_eq(core_dp_ledger_charge(l, ids[i], "lap", u, 1, &C04, NULL), CORE_OK);
    }
    cr_assert_eq(core_dp_ledger_commit_batch(l, N, ids, bp, lens), CORE_OK);
    for (size_t i = 0; i < N; i++) {
        uint8_t *got = NULL;
        size_t len = 0;
        cr_assert_eq(core_dp_ledger_lookup(l, ids[i], &got, &len), CORE_OK);
        cr_assert_eq(len, i);
        cr_assert(i == 0 || memcmp(got, data[i], i) == 0, "replay of length %zu", i);
        free(got);
    }
    core_dp_ledger_free(l);
    size_t flen = 0, seen = 0;
    char *text = ts_read_file(path, &flen);
    cr_assert_not_null(text);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char want[sodium_base64_ENCODED_LEN(N, sodium_base64_VARIANT_ORIGINAL) + 8], *p;
        unsigned long i;
        if (strncmp(line, "{\"v\":1,\"id\":\"b64-", 17) != 0)
            continue;
        i = strtoul(line + 17, NULL, 10);
        cr_assert_lt(i, (unsigned long)N);
        sodium_bin2base64(want, sizeof(want), data[i], i, sodium_base64_VARIANT_ORIGINAL);
        p = strstr(line, "\"out\":\"");
        cr_assert_not_null(p);
        p += 7;
        cr_assert_eq(strncmp(p, want, strlen(want)), 0, "length %lu", i);
        cr_assert_eq(strcmp(p + strlen(want), "\"}"), 0, "length %lu", i);
        seen++;
    }
    cr_assert_eq(seen, (size_t)N);
    free(text);
    free(path);
    ts_rmtree(dir);
    free(dir);
}

/* A row's text up to "out" is what json_dumps(JSON_COMPACT | JSON_REAL_PRECISION(17)) writes
 * for {"v","id","mech","units","eps","rho","delta"[,"params"]} (the ledger assembles it from
 * cached pieces): checked for ids/units needing escapes, with and without params, and for
 * a cost/params change between charges (the cache must not serve a stale tail). */
Test(dp_ledger, row_text_matches_jansson_serialisation)
{
    char *dir, *path = tmp_path(&dir);
    struct core_dp_ledger *l = open_ok(path, 1e6);
    const char *ids[4] = {"plain", "q\"uo\\te", "tab\there/\xc3\xa9", "ctl\x01x"};
    const char *units[4][2] = {
        {"u1", "u0"}, {"d\"1|0", "d\"1|1"}, {"\xe2\x82\xac", "a"}, {"x\ny", "z"}};
    const char *params[4] = {"{\"k\":-40,\"x\":[1.5,0.1]}", "{\"k\":-40,\"x\":[1.5,0.1]}", NULL,
                             "{\"a\":{\"b\":\"c\\u00e9\"},\"e\":1e-300}"};
    const struct core_dp_cost costs[4] = {
        {0.1, 0, 0}, {0.30000000000000004, 0.5, 1e-7}, {0.1, 0, 0}, {1.0 / 3.0, 0, 0}};
    const uint8_t out[3] = {1, 2, 3};

    for (int i = 0; i < 4; i++) {
        cr_assert_eq(core_dp_ledger_charge(l, ids[i], "lap", units[i], 2, &costs[i], params[i]),
                     CORE_OK, "charge %d", i);
        cr_assert_eq(core_dp_ledger_commit_output(l, ids[i], out, sizeof(out)), CORE_OK);
    }
    /* the cache never lets an invalid params text through: "" after NULL params (whose
     * cache key is ""), and duplicate keys after a valid text */
    const char *u9[1] = {"u9"};
    cr_assert_eq(core_dp_ledger_charge(l, "nullp", "lap", u9, 1, &costs[0], NULL), CORE_OK);
    cr_assert_eq(core_dp_ledger_cancel(l, "nullp"), CORE_OK);
    cr_assert_eq(core_dp_ledger_charge(l, "bad1", "lap", u9, 1, &costs[0], ""), CORE_EINVAL);
    cr_assert_eq(core_dp_ledger_charge(l, "bad2", "lap", u9, 1, &costs[0], "{\"a\":1,\"a\":2}"),
                 CORE_EINVAL);
    core_dp_ledger_free(l);
    size_t flen = 0;
    char *text = ts_read_file(path, &flen), *save = NULL;
    cr_assert_not_null(text);
    char *line = strtok_r(text, "\n", &save); /* header */
    for (int i = 0; i < 4; i++) {
        line = strtok_r(NULL, "\n", &save);
        cr_assert_not_null(line);
        const char *su[2] = {units[i][0], units[i][1]};
        if (strcmp(su[0], su[1]) > 0) { /* the ledger stores units sorted */
            su[0] = units[i][1];
            su[1] = units[i][0];
        }
        json_t *ju = json_pack("[s,s]", su[0], su[1]);
        json_t *row = json_pack("{s:i, s:s, s:s, s:o, s:f, s:f, s:f}", "v", 1, "id", ids[i], "mech",
                                "lap", "units", ju, "eps", costs[i].eps, "rho", costs[i].rho,
                                "delta", costs[i].delta);
        if (params[i])
            json_object_set_new(row, "params", json_loads(params[i], 0, NULL));
        char *want = json_dumps(row, JSON_COMPACT | JSON_REAL_PRECISION(17));
        size_t wl = strlen(want) - 1; /* without the closing brace */
        cr_assert_eq(strncmp(line, want, wl), 0, "row %d:\n got  %s\n want %s", i, line, want);
        cr_assert_eq(strncmp(line + wl, ",\"out\":\"", 8), 0, "row %d", i);
        free(want);
        json_decref(row);
    }
    free(text);
    free(path);
    ts_rmtree(dir);
    free(dir);
}
