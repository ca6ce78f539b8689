/* test_dp_perf.c - throughput of the secure samplers and of the ledger, with the OS CSPRNG.
 * Prints figures and ratios against a baseline measured in the same run (the machine is
 * shared and noisy); the floors are deliberately 10-20x below the figures measured on the
 * 2-core build box so only a real regression (e.g. a sampler falling back to 128-bit
 * uniforms per Bernoulli, or an fsync per row in batch mode) fails them.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/dp_exact.h"
#include "core/dp_ledger.h"
#include "core/dp_mech.h"
#include "core/dp_rng.h"
#include "test_support.h"

TestSuite(dp_perf, .timeout = 60);

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

Test(dp_perf, sampler_throughput_with_os_rng)
{
    const struct core_rng *g = core_rng_os();
    const long N = 500000;
    uint64_t u;
    int64_t v;
    double t0 = now();
    for (long i = 0; i < N; i++)
        cr_assert_eq(core_rng_u64(g, &u), CORE_OK);
    double base = (double)N / (now() - t0);
    t0 = now();
    for (long i = 0; i < N; i++)
        cr_assert_eq(core_dp_dlap(g, ((uint64_t)1 << 40) + 12345, &v), CORE_OK);
    double dl = (double)N / (now() - t0);
    t0 = now();
    for (long i = 0; i < N / 2; i++)
        cr_assert_eq(core_dp_dgauss(g, (uint64_t)1 << 40, &v), CORE_OK);
    double dg = (double)(N / 2) / (now() - t0);
    struct core_dp_lap p;
    double *x = calloc((size_t)N, sizeof(*x)), *y = calloc((size_t)N, sizeof(*y));
    cr_assert_eq(core_dp_lap_params(1.0, 1.0, 10.0, 1, &p), CORE_OK);
    t0 = now();
    cr_assert_eq(core_dp_lap_release(g, &p, (size_t)N, x, y), CORE_OK);
    double lr = (double)N / (now() - t0);
    printf("dp_perf: os u64 %.3g/s (baseline); dlap(t~2^40) %.3g/s = %.3f x baseline; "
           "dgauss(S=2^40) %.3g/s = %.3f x; lap_release %.3g coords/s = %.3f x\n",
           base, dl, dl / base, dg, dg / base, lr, lr / base);
    cr_assert_gt(dl, 1e5, "dlap %.3g/s", dl);
    cr_assert_gt(dg, 5e4, "dgauss %.3g/s", dg);
    cr_assert_gt(lr, 1e5, "lap_release %.3g coords/s", lr);
    free(x);
    free(y);
}

Test(dp_perf, group_commit_beats_one_fsync_per_release)
{
    char *dir = ts_tmpdir(), path[512];
    snprintf(path, sizeof(path), "%s/l.jsonl", dir);
    struct core_dp_ledger_opts o = {.path = path, .cap = {1e9, 1e9, 1}};
    struct core_dp_ledger *l = NULL;
    cr_assert_eq(core_dp_ledger_open(&o, &l, NULL, 0), CORE_OK);
    const char *u[1] = {"unit"};
    struct core_dp_cost c = {0.001, 0, 0};
    double out[50] = {0}; /* one release of 50 coordinates */
    char id[32];
    enum { SINGLE = 200, B = 1000, NB = 5 };
    double t0 = now();
    for (int i = 0; i < SINGLE; i++) {
        snprintf(id, sizeof(id), "s%d", i);
        cr_assert_eq(core_dp_ledger_charge(l, id, "lap", u, 1, &c, NULL), CORE_OK);
        cr_assert_eq(core_dp_ledger_commit_output(l, id, out, sizeof(out)), CORE_OK);
    }
    double single = SINGLE / (now() - t0);
    static char ids[B][32];
    const char *idp[B];
    const void *bp[B];
    size_t lens[B];
    t0 = now();
    for (int b = 0; b < NB; b++) {
        for (int i = 0; i < B; i++) {
            snprintf(ids[i], sizeof(ids[i]), "b%d-%d", b, i);
            idp[i] = ids[i];
            bp[i] = out;
            lens[i] = sizeof(out);
            cr_assert_eq(core_dp_ledger_charge(l, ids[i], "lap", u, 1, &c, NULL), CORE_OK);
        }
        cr_assert_eq(core_dp_ledger_commit_batch(l, B, idp, bp, lens), CORE_OK);
    }
    double batched = (double)(B * NB) / (now() - t0);
    printf("dp_perf: ledger commits/s: one fsync each %.0f (baseline); batches of %d %.0f = "
           "%.1f x; = %.3g coords/s at 50 coords/release\n",
           single, B, batched, batched / single, batched * 50);
    cr_assert_gt(batched / single, 5.0, "group commit must amortise the fsync");
    core_dp_ledger_free(l);
    ts_rmtree(dir);
    free(dir);
}
