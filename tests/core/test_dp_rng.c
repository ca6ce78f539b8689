/* test_dp_rng.c - the OS CSPRNG source (NOISE.md §6 T5): fault injection in the getrandom
 * loop, fork safety of the buffer, threads, fail-closed behaviour.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "core/dp_mech.h"
#include "core/dp_rng.h"
#include "dp_getrandom.h"
#include "test_support.h"

TestSuite(dp_rng, .timeout = 60);

/* ---- scripted syscalls ---- */

static int sys_calls;
static int sys_mode; /* 0 ENOSYS, 1 EINTR then ok, 2 short reads, 3 zero-length read */

static ssize_t fake_getrandom(void *buf, size_t len, unsigned int flags)
{
    (void)flags;
    sys_calls++;
    switch (sys_mode) {
    case 0:
        errno = ENOSYS;
        return -1;
    case 1:
        if (sys_calls <= 3) {
            errno = EINTR;
            return -1;
        }
        memset(buf, 0xA5, len);
        return (ssize_t)len;
    case 2:
        memset(buf, 0x5A, 1);
        return 1; /* one byte at a time */
    default:
        return 0;
    }
}

Test(dp_rng, enosys_fails_closed)
{
    uint8_t buf[32];
    sys_mode = 0;
    sys_calls = 0;
    cr_assert_eq(core__getrandom_fill(fake_getrandom, buf, sizeof(buf)), CORE_ERNG);
    cr_assert_eq(sys_calls, 1, "no retry on ENOSYS, no fallback");
}

Test(dp_rng, eintr_is_retried_until_full)
{
    uint8_t buf[300];
    memset(buf, 0, sizeof(buf));
    sys_mode = 1;
    sys_calls = 0;
    cr_assert_eq(core__getrandom_fill(fake_getrandom, buf, sizeof(buf)), CORE_OK);
    for (size_t i = 0; i < sizeof(buf); i++)
        cr_assert_eq(buf[i], 0xA5, "byte %zu filled", i);
    cr_assert_eq(sys_calls, 3 + 2, "3 EINTR, then 256 + 44 bytes");
}

Test(dp_rng, short_reads_are_looped)
{
    uint8_t buf[40];
    memset(buf, 0, sizeof(buf));
    sys_mode = 2;
    sys_calls = 0;
    cr_assert_eq(core__getrandom_fill(fake_getrandom, buf, sizeof(buf)), CORE_OK);
    cr_assert_eq(sys_calls, 40);
    for (size_t i = 0; i < sizeof(buf); i++)
        cr_assert_eq(buf[i], 0x5A);
}

Test(dp_rng, zero_length_read_fails_closed)
{
    uint8_t buf[8];
    sys_mode = 3;
    cr_assert_eq(core__getrandom_fill(fake_getrandom, buf, sizeof(buf)), CORE_ERNG);
}

/* ---- the production source ---- */

Test(dp_rng, os_source_draws_distinct_words)
{
    const struct core_rng *g = core_rng_os();
    uint64_t a[64];
    for (size_t i = 0; i < 64; i++)
        cr_assert_eq(core_rng_u64(g, &a[i]), CORE_OK);
    for (size_t i = 0; i < 64; i++)
        for (size_t j = i + 1; j < 64; j++)
            cr_assert_neq(a[i], a[j]);
    uint8_t big[10000]; /* larger than the 4 KiB buffer */
    cr_assert_eq(core_rng_bytes(g, big, sizeof(big)), CORE_OK);
    core_rng_os_wipe();
    cr_assert_eq(core_rng_bytes(g, big, sizeof(big)), CORE_OK);
}

Test(dp_rng, fork_child_and_parent_draw_differently)
{
    const struct core_rng *g = core_rng_os();
    for (int rep = 0; rep < 100; rep++) {
        uint8_t warm[8], mine[32], theirs[32];
        int fds[2];
        cr_assert_eq(core_rng_bytes(g, warm, sizeof(warm)), CORE_OK); /* buffer now full */
        cr_assert_eq(pipe(fds), 0);
        pid_t pid = fork();
        cr_assert_neq(pid, -1);
        if (pid == 0) {
            uint8_t c[32];
            if (core_rng_bytes(g, c, sizeof(c)) != CORE_OK || write(fds[1], c, 32) != 32)
                _exit(1);
            _exit(0);
        }
        cr_assert_eq(core_rng_bytes(g, mine, sizeof(mine)), CORE_OK);
        cr_assert_eq(read(fds[0], theirs, 32), 32);
        int st;
        waitpid(pid, &st, 0);
        close(fds[0]);
        close(fds[1]);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        cr_assert_neq(memcmp(mine, theirs, 32), 0, "rep %d: child repeated parent's bytes", rep);
    }
}

#define NTHREADS   8
#define PER_THREAD 100000

static void *thread_draw(void *arg)
{
    uint64_t *out = arg;
    for (size_t i = 0; i < PER_THREAD * 2; i++)
        if (core_rng_u64(core_rng_os(), &out[i]) != CORE_OK)
            return (void *)1;
    return NULL;
}

static int cmp_u128(const void *a, const void *b)
{
    return memcmp(a, b, 16);
}

Test(dp_rng, threads_never_repeat_128bit_blocks)
{
    uint64_t *all = calloc(NTHREADS * PER_THREAD * 2, sizeof(*all));
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, thread_draw, all + (size_t)i * PER_THREAD * 2),
                     0);
    for (int i = 0; i < NTHREADS; i++) {
        void *rv;
        pthread_join(th[i], &rv);
        cr_assert_null(rv);
    }
    qsort(all, NTHREADS * PER_THREAD, 16, cmp_u128);
    for (size_t i = 1; i < NTHREADS * PER_THREAD; i++)
        cr_assert_neq(memcmp(all + 2 * (i - 1), all + 2 * i, 16), 0, "repeated block");
    free(all);
}

/* A source that always fails: every mechanism must return CORE_ERNG and publish nothing. */
static core_err fail_fill(void *self, uint8_t *buf, size_t len)
{
    (void)self;
    (void)buf;
    (void)len;
    return CORE_ERNG;
}

Test(dp_rng, failing_source_yields_no_release)
{
    const struct core_rng bad = {.fill = fail_fill, .self = NULL};
    struct core_dp_lap p;
    double x[4] = {0.1, 0.2, 0.3, 0.4}, y[4] = {9, 9, 9, 9};
    cr_assert_eq(core_dp_lap_params(1.0, 1.0, 10.0, 1, &p), CORE_OK);
    cr_assert_eq(core_dp_lap_release(&bad, &p, 4, x, y), CORE_ERNG);
    for (int i = 0; i < 4; i++)
        cr_assert(y[i] == 0.0, "output wiped on failure");
    size_t idx = 77;
    double sc[3] = {1, 2, 3};
    cr_assert_eq(core_dp_em_select(&bad, 3, sc, 1.0, 0, &idx), CORE_ERNG);
    cr_assert_eq(idx, 77);
}

/* DESIGN §7.6: the seeded source cannot be selected in production. No product source file
 * includes it, and the built gcdp binary (when present) contains none of its symbols. */
Test(dp_rng, seeded_source_is_not_in_product_code)
{
    FILE *p = popen("grep -rlE --include='*.[ch]' '#include.*seeded_rng|ts_rng_' " GCDP_SOURCE_DIR
                    "/core " GCDP_SOURCE_DIR "/ingest " GCDP_SOURCE_DIR "/sim " GCDP_SOURCE_DIR
                    "/calibrate " GCDP_SOURCE_DIR "/release " GCDP_SOURCE_DIR
                    "/learner " GCDP_SOURCE_DIR "/app 2>/dev/null",
                    "r");
    char line[1024];
    cr_assert_not_null(p);
    int hits = 0;
    while (fgets(line, sizeof(line), p)) {
        cr_log_error("product file mentions the seeded rng: %s", line);
        hits++;
    }
    pclose(p);
    cr_assert_eq(hits, 0);
    if (access(GCDP_BIN, X_OK) != 0)
        cr_skip_test("gcdp not built: symbol check skipped");
    p = popen("nm " GCDP_BIN " 2>/dev/null", "r");
    cr_assert_not_null(p);
    int ts = 0, os = 0;
    while (fgets(line, sizeof(line), p)) {
        ts += strstr(line, " ts_rng_") != NULL;
        os += strstr(line, " core_rng_os") != NULL;
    }
    pclose(p);
    cr_assert_eq(ts, 0, "gcdp links the test rng");
    cr_assert_gt(os, 0, "nm output was read");
}
