/* bench_primitives.c - throughput of the secure samplers and of the ledger's group commit,
 * printed by `gcdp bench release` after the release figures. Each figure comes with its
 * ratio to a baseline measured in the same run (raw OS CSPRNG words; one fsync per release),
 * because the machines are shared and noisy. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app.h"
#include "core/dp_exact.h"
#include "core/dp_ledger.h"
#include "core/dp_mech.h"
#include "core/dp_rng.h"

static double mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static core_err samplers(long n)
{
    const long draws = n / 2; /* the discrete Gaussian is slower: half as many draws */
    const struct core_rng *g = core_rng_os();
    double *x = calloc((size_t)n, sizeof(*x)), *y = calloc((size_t)n, sizeof(*y));
    struct core_dp_lap p;
    core_err rc = core_dp_lap_params(1.0, 1.0, 10.0, 1, &p);
    double t0, base, dl, dg, lr;
    uint64_t u;
    int64_t v;

    t0 = mono();
    for (long i = 0; rc == CORE_OK && i < n; i++)
        rc = core_rng_u64(g, &u);
    base = (double)n / (mono() - t0);
    t0 = mono();
    for (long i = 0; rc == CORE_OK && i < n; i++)
        rc = core_dp_dlap(g, ((uint64_t)1 << 40) + 12345, &v);
    dl = (double)n / (mono() - t0);
    t0 = mono();
    for (long i = 0; rc == CORE_OK && i < draws; i++)
        rc = core_dp_dgauss(g, (uint64_t)1 << 40, &v);
    dg = (double)draws / (mono() - t0);
    t0 = mono();
    if (rc == CORE_OK)
        rc = core_dp_lap_release(g, &p, (size_t)n, x, y);
    lr = (double)n / (mono() - t0);
    if (rc == CORE_OK)
        printf("primitives: OS CSPRNG u64 %.3g/s (baseline); discrete Laplace (t~2^40) %.3g/s = "
               "%.3f x; discrete Gaussian (S=2^40) %.3g/s = %.3f x; Laplace release %.3g "
               "coords/s = %.3f x\n",
               base, dl, dl / base, dg, dg / base, lr, lr / base);
    free(x);
    free(y);
    return rc;
}

enum { SINGLE = 200, BATCH = 1000, NBATCH = 5 };

static core_err ledger_commits(const char *dir)
{
    static char ids[BATCH][32];
    const char *idp[BATCH], *unit[1] = {"bench-unit"};
    const void *bp[BATCH];
    size_t lens[BATCH];
    double out[50] = {0}, t0, single, batched;
    char path[512], id[32];
    struct core_dp_ledger_opts o;
    struct core_dp_ledger *l = NULL;
    struct core_dp_cost c = {0.001, 0, 0};
    core_err rc;

    snprintf(path, sizeof(path), "%s/primitives-ledger.jsonl", dir);
    memset(&o, 0, sizeof(o));
    o.path = path;
    o.cap = (struct core_dp_cost){1e9, 1e9, 1};
    o.scheme = (struct core_dp_scheme){60000, 0, 1000};
    rc = core_dp_ledger_open(&o, &l, NULL, 0);
    t0 = mono();
    for (int i = 0; rc == CORE_OK && i < SINGLE; i++) {
        snprintf(id, sizeof(id), "s%d", i);
        rc = core_dp_ledger_charge(l, id, "lap", unit, 1, &c, NULL);
        if (rc == CORE_OK)
            rc = core_dp_ledger_commit_output(l, id, out, sizeof(out));
    }
    single = SINGLE / (mono() - t0);
    t0 = mono();
    for (int b = 0; rc == CORE_OK && b < NBATCH; b++) {
        for (int i = 0; rc == CORE_OK && i < BATCH; i++) {
            snprintf(ids[i], sizeof(ids[i]), "b%d-%d", b, i);
            idp[i] = ids[i];
            bp[i] = out;
            lens[i] = sizeof(out);
            rc = core_dp_ledger_charge(l, ids[i], "lap", unit, 1, &c, NULL);
        }
        if (rc == CORE_OK)
            rc = core_dp_ledger_commit_batch(l, BATCH, idp, bp, lens);
    }
    batched = (double)(BATCH * NBATCH) / (mono() - t0);
    if (rc == CORE_OK)
        printf("primitives: ledger commits/s: one fsync per release %.0f (baseline); batches of "
               "%d %.0f = %.1f x (%.3g coords/s at 50 coords/release)\n",
               single, BATCH, batched, batched / single, batched * 50);
    core_dp_ledger_free(l);
    remove(path);
    return rc;
}

int bench_release_primitives(const char *dir)
{
    core_err rc = samplers(500000);
    if (rc == CORE_OK)
        rc = ledger_commits(dir);
    if (rc != CORE_OK) {
        fprintf(stderr, "gcdp bench release: primitives failed: %s\n", core_strerror(rc));
        return APP_EXIT_FAILURE;
    }
    return APP_EXIT_OK;
}
