/* test_dp_ledger_eps.c - ε spent per unit as max and nearest-rank quantiles
 * (core_dp_ledger_eps_summary): over committed and pending charges, rebuilt by a reopen, on
 * both back ends (the store summarizes the units it holds in memory).
 * Every total is a multiple of 1/8 charged once or twice: exact in binary, so the expected
 * quantiles are exact and no assertion depends on rounding.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "core/dp_ledger.h"
#include "test_support.h"

#define N_UNITS 100

static struct core_dp_ledger *open_jsonl(const char *path)
{
    struct core_dp_ledger_opts o = {
        .path = path, .cap = {100.0, 0.0, 1e-3}, .scheme = {60000, 0, 60000}};
    struct core_dp_ledger *l = NULL;
    char eb[256] = "";
    cr_assert_eq(core_dp_ledger_open(&o, &l, eb, sizeof(eb)), CORE_OK, "%s", eb);
    return l;
}

/* Unit "dev|i" gets eps (i + 1) / 8 for i < N_UNITS: committed, except unit 0's charge,
 * which stays pending when pend_first. */
static void charge_units(struct core_dp_ledger *l, bool pend_first)
{
    char id[32], unit[32];
    const char *u[1] = {unit};
    for (int i = N_UNITS - 1; i >= 0; i--) { /* out of order: the summary sorts */
        struct core_dp_cost c = {(double)(i + 1) / 8.0, 0.0, 0.0};
        snprintf(id, sizeof(id), "w%d", i);
        snprintf(unit, sizeof(unit), "dev|%d", i);
        cr_assert_eq(core_dp_ledger_charge(l, id, "lap", u, 1, &c, NULL), CORE_OK);
        if (i == 0 && pend_first)
            continue;
        cr_assert_eq(core_dp_ledger_commit_output(l, id, "x", 1), CORE_OK);
    }
}

static void assert_quantiles(const struct core_dp_eps_summary *s)
{
    cr_assert_eq(s->units, N_UNITS);
    cr_assert_eq(s->max, 12.5, "max %g", s->max);
    cr_assert_eq(s->p50, 6.25, "p50 %g: the 50th of 100 totals", s->p50);
    cr_assert_eq(s->p90, 11.25, "p90 %g", s->p90);
    cr_assert_eq(s->p99, 12.375, "p99 %g", s->p99);
}

Test(dp_ledger_eps, quantiles_over_committed_and_pending_and_after_reopen)
{
    char *dir = ts_tmpdir(), path[512];
    struct core_dp_eps_summary s;
    struct core_dp_ledger *l;

    snprintf(path, sizeof(path), "%s/ledger.jsonl", dir);
    l = open_jsonl(path);
    memset(&s, 0xff, sizeof(s));
    core_dp_ledger_eps_summary(l, &s);
    cr_assert(s.units == 0 && s.max == 0.0 && s.p50 == 0.0 && s.p99 == 0.0, "empty ledger");
    charge_units(l, true); /* unit 0's 1/8 is pending: it counts (the cap compares it) */
    core_dp_ledger_eps_summary(l, &s);
    assert_quantiles(&s);
    /* a second charge on the top unit moves max and p99 only */
    const char *u[1] = {"dev|99"};
    struct core_dp_cost c = {2.0, 0.0, 0.0};
    cr_assert_eq(core_dp_ledger_charge(l, "again", "lap", u, 1, &c, NULL), CORE_OK);
    cr_assert_eq(core_dp_ledger_commit_output(l, "again", "y", 1), CORE_OK);
    core_dp_ledger_eps_summary(l, &s);
    cr_assert_eq(s.max, 14.5);
    cr_assert_eq(s.p99, 12.375, "the 99th of 100 is the old second largest");
    cr_assert_eq(s.p50, 6.25);
    core_dp_ledger_free(l); /* the pending charge is dropped (never published) */
    l = open_jsonl(path);
    core_dp_ledger_eps_summary(l, &s);
    cr_assert_eq(s.units, N_UNITS - 1, "unit 0 had only a pending charge");
    cr_assert_eq(s.max, 14.5);
    cr_assert_eq(s.p50, 6.375, "p50 of 2/8..100/8 with the top one raised: the 50th is 51/8");
    core_dp_ledger_free(l);
    ts_rmtree(dir);
    free(dir);
}

Test(dp_ledger_eps, store_back_end_summarizes_its_cached_units)
{
    char *dir = ts_tmpdir(), path[512], store[512], eb[256] = "";
    struct core_dp_ledger_opts o = {
        .path = path, .cap = {100.0, 0.0, 1e-3}, .scheme = {60000, 0, 60000}};
    struct core_dp_store_opts so = {.path = store, .replay_horizon_ms = 0};
    struct core_dp_eps_summary s;
    struct core_dp_ledger_stats st;
    struct core_dp_ledger *l = NULL;

    snprintf(path, sizeof(path), "%s/ledger.jsonl", dir);
    snprintf(store, sizeof(store), "%s/ledger.db", dir);
    cr_assert_eq(core_dp_ledger_open_store(&o, &so, &l, eb, sizeof(eb)), CORE_OK, "%s", eb);
    charge_units(l, false);
    core_dp_ledger_eps_summary(l, &s);
    assert_quantiles(&s);
    /* slots 0..99 end by 100 min; lateness 0 at a watermark one day later evicts them all */
    cr_assert_eq(core_dp_ledger_advance(l, 86400000LL, 0), CORE_OK);
    core_dp_ledger_stats(l, &st);
    core_dp_ledger_eps_summary(l, &s);
    cr_assert_eq(s.units, st.cached_units, "the summary covers the cache");
    cr_assert_eq(s.units, 0, "every unit was evicted");
    core_dp_ledger_free(l);
    ts_rmtree(dir);
    free(dir);
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The selection against a full sort in the test, on 5000 units whose totals come from a
 * fixed LCG: few distinct values (many ties) and many; multiples of 1/64 (below the cap
 * 100), so exact. */
Test(dp_ledger_eps, selection_matches_a_sort_with_ties_and_without)
{
    enum { N = 5000, BATCH = 500 };
    static double want[N];
    static char ids[BATCH][32], units[N][32];
    const char *idp[BATCH], *u[1];
    const void *bytes[BATCH];
    size_t lens[BATCH];

    for (int distinct = 3; distinct <= 5000; distinct *= 40) /* 3, 120, 4800 */ {
        char *dir = ts_tmpdir(), path[512];
        struct core_dp_ledger *l;
        struct core_dp_eps_summary s;
        uint64_t x = 12345u + (uint64_t)distinct;
        size_t k = 0;

        snprintf(path, sizeof(path), "%s/ledger.jsonl", dir);
        l = open_jsonl(path);
        for (int i = 0; i < N; i++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            struct core_dp_cost c = {(double)((x >> 33) % (uint64_t)distinct + 1) / 64.0, 0, 0};
            snprintf(units[i], sizeof(units[i]), "dev|%d", i);
            snprintf(ids[k], sizeof(ids[k]), "w%d", i);
            u[0] = units[i];
            cr_assert_eq(core_dp_ledger_charge(l, ids[k], "lap", u, 1, &c, NULL), CORE_OK);
            want[i] = c.eps;
            idp[k] = ids[k], bytes[k] = "x", lens[k] = 1;
            if (++k == BATCH) {
                cr_assert_eq(core_dp_ledger_commit_batch(l, k, idp, bytes, lens), CORE_OK);
                k = 0;
            }
        }
        core_dp_ledger_eps_summary(l, &s);
        qsort(want, N, sizeof(want[0]), cmp_dbl);
        cr_assert_eq(s.units, N);
        cr_assert_eq(s.p50, want[2499], "distinct %d: p50 %g vs %g", distinct, s.p50, want[2499]);
        cr_assert_eq(s.p90, want[4499], "distinct %d: p90", distinct);
        cr_assert_eq(s.p99, want[4949], "distinct %d: p99", distinct);
        cr_assert_eq(s.max, want[N - 1], "distinct %d: max", distinct);
        core_dp_ledger_free(l);
        ts_rmtree(dir);
        free(dir);
    }
}
