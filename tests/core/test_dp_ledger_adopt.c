/* test_dp_ledger_adopt.c - rows that follow their partitions (issue 12): core_dp_ledger_row
 * and core_dp_ledger_adopt / _adopt_row on both back ends (JSONL and store): a new id is
 * recorded durably, the same id with the same bytes is a no-op, the same id with other bytes
 * is CORE_EINVARIANT, an adopted row over the cap is recorded and reported, a reopen keeps
 * the adopted rows, and a row text taken from one ledger adopts into another identically.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "core/dp_ledger.h"
#include "test_support.h"

TestSuite(dp_ledger_adopt, .timeout = 60);

static const struct core_dp_scheme SCHEME = {60000, 0, 1000};
static const struct core_dp_cost C04 = {0.4, 0.08, 0};

struct lpath {
    char *dir, audit[512], store[512];
};

static void lpath_new(struct lpath *p, const char *name)
{
    p->dir = ts_tmpdir();
    snprintf(p->audit, sizeof(p->audit), "%s/%s.jsonl", p->dir, name);
    snprintf(p->store, sizeof(p->store), "%s/%s.db", p->dir, name);
}

/* store != 0: the SQLite back end; else the JSONL one. */
static struct core_dp_ledger *lopen(const struct lpath *p, int store, double cap_eps)
{
    struct core_dp_ledger_opts o = {
        .path = p->audit, .cap = {cap_eps, 100.0, 1e-3}, .scheme = SCHEME};
    struct core_dp_store_opts so = {.path = p->store, .replay_horizon_ms = 0};
    struct core_dp_ledger *l = NULL;
    char err[512] = "";
    core_err rc = store ? core_dp_ledger_open_store(&o, &so, &l, err, sizeof(err))
                        : core_dp_ledger_open(&o, &l, err, sizeof(err));
    cr_assert_eq(rc, CORE_OK, "open (%s): %s (%s)", store ? "store" : "jsonl", core_errname(rc),
                 err);
    return l;
}

static void release(struct core_dp_ledger *l, const char *id, const char *unit, const void *bytes,
                    size_t len)
{
    const char *units[1] = {unit};
    cr_assert_eq(core_dp_ledger_charge(l, id, "lap", units, 1, &C04, "{\"k\":-40}"), CORE_OK);
    cr_assert_eq(core_dp_ledger_commit_output(l, id, bytes, len), CORE_OK);
}

static double spent_eps(struct core_dp_ledger *l, const char *unit)
{
    struct core_dp_cost s;
    cr_assert_eq(core_dp_ledger_spent(l, unit, &s), CORE_OK);
    return s.eps;
}

static void assert_bytes(struct core_dp_ledger *l, const char *id, const void *want, size_t n)
{
    uint8_t *got = NULL;
    size_t len = 0;
    cr_assert_eq(core_dp_ledger_lookup(l, id, &got, &len), CORE_OK, "%s is committed", id);
    cr_assert(len == n && memcmp(got, want, n) == 0, "%s: the adopted bytes", id);
    free(got);
}

static void adopt_semantics(int store)
{
    struct lpath p;
    lpath_new(&p, "a");
    struct core_dp_ledger *l = lopen(&p, store, 1.0);
    const char *u[2] = {"dev1|7", "dev1|8"};
    const uint8_t b1[4] = {1, 2, 3, 4}, b2[4] = {1, 2, 3, 5};
    enum core_dp_adopted what = CORE_DP_ADOPTED_SAME;
    char err[512] = "";

    /* new id: recorded and durable, both units charged */
    cr_assert_eq(
        core_dp_ledger_adopt(l, "w1@1", "lap", u, 2, &C04, NULL, b1, 4, &what, err, sizeof(err)),
        CORE_OK, "%s", err);
    cr_assert_eq(what, CORE_DP_ADOPTED_NEW);
    assert_bytes(l, "w1@1", b1, 4);
    cr_assert(spent_eps(l, "dev1|7") >= 0.4 && spent_eps(l, "dev1|8") >= 0.4);
    /* same id, same bytes: nothing changes */
    cr_assert_eq(
        core_dp_ledger_adopt(l, "w1@1", "lap", u, 2, &C04, NULL, b1, 4, &what, err, sizeof(err)),
        CORE_OK);
    cr_assert_eq(what, CORE_DP_ADOPTED_SAME);
    cr_assert(spent_eps(l, "dev1|7") < 0.4 + 1e-12, "no second charge");
    /* same id, other bytes: fail closed, named */
    err[0] = '\0';
    cr_assert_eq(
        core_dp_ledger_adopt(l, "w1@1", "lap", u, 2, &C04, NULL, b2, 4, &what, err, sizeof(err)),
        CORE_EINVARIANT);
    cr_assert(strstr(err, "w1@1") != NULL, "the refusal names the release: %s", err);
    assert_bytes(l, "w1@1", b1, 4);
    /* a charge of this instance refused by the cap is still adopted when it is a fact */
    release(l, "w2@1", "dev1|7", "x", 1); /* dev1|7: 0.8 */
    cr_assert_eq(core_dp_ledger_charge(l, "w3@1", "lap", u, 1, &C04, NULL), CORE_EBUDGET);
    cr_assert_eq(core_dp_ledger_adopt(l, "w3@1", "lap", u, 1, &C04, "{\"k\":1}", b2, 4, &what, err,
                                      sizeof(err)),
                 CORE_OK, "%s", err);
    cr_assert_eq(what, CORE_DP_ADOPTED_OVER_CAP);
    cr_assert(spent_eps(l, "dev1|7") > 1.0, "over the cap, counted, never undercounted");
    /* a pending id of this instance cannot be adopted over */
    cr_assert_eq(core_dp_ledger_charge(l, "w4@1", "lap", u + 1, 1, &C04, NULL), CORE_OK);
    cr_assert_eq(core_dp_ledger_adopt(l, "w4@1", "lap", u + 1, 1, &C04, NULL, b1, 4, &what, err,
                                      sizeof(err)),
                 CORE_ESTATE);
    cr_assert_eq(core_dp_ledger_cancel(l, "w4@1"), CORE_OK);
    core_dp_ledger_free(l);
    /* reopen: the adopted rows are there, with their charges */
    l = lopen(&p, store, 1.0);
    assert_bytes(l, "w1@1", b1, 4);
    assert_bytes(l, "w3@1", b2, 4);
    cr_assert(spent_eps(l, "dev1|7") >= 1.2 - 1e-12);
    cr_assert(spent_eps(l, "dev1|8") >= 0.4);
    cr_assert_eq(core_dp_ledger_adopt(l, "w3@1", "lap", u, 1, &C04, "{\"k\":1}", b2, 4, &what, err,
                                      sizeof(err)),
                 CORE_OK);
    cr_assert_eq(what, CORE_DP_ADOPTED_SAME);
    core_dp_ledger_free(l);
    ts_rmtree(p.dir);
    free(p.dir);
}

Test(dp_ledger_adopt, jsonl_new_same_conflict_over_cap_reopen)
{
    adopt_semantics(0);
}
Test(dp_ledger_adopt, store_new_same_conflict_over_cap_reopen)
{
    adopt_semantics(1);
}

/* Rows carried as text from one ledger (either back end) into another (either back end):
 * same bytes, same totals, and the text of the adopted row is the same row. */
static void row_transfer(int from_store, int to_store)
{
    struct lpath a, b;
    lpath_new(&a, "src");
    lpath_new(&b, "dst");
    struct core_dp_ledger *src = lopen(&a, from_store, 10.0), *dst = lopen(&b, to_store, 10.0);
    const uint8_t out[6] = {0, '"', '\\', 0xff, '\n', 7};
    enum core_dp_adopted what;
    char *row = NULL, *row2 = NULL, id[64] = "", err[512] = "";
    size_t len = 0, len2 = 0;

    release(src, "w1@2", "dev\"1|7", out, sizeof(out));
    release(src, "w2@2", "dev\"1|8", "", 0);
    cr_assert_eq(core_dp_ledger_row(src, "nope", &row, &len), CORE_ENOTFOUND);
    for (int i = 0; i < 2; i++) {
        const char *rid = i ? "w2@2" : "w1@2";
        cr_assert_eq(core_dp_ledger_row(src, rid, &row, &len), CORE_OK);
        cr_assert_eq(strlen(row), len);
        cr_assert(strchr(row, '\n') == NULL, "one line, no newline");
        cr_assert_eq(
            core_dp_ledger_adopt_row(dst, row, len, &what, id, sizeof(id), err, sizeof(err)),
            CORE_OK, "%s", err);
        cr_assert_eq(what, CORE_DP_ADOPTED_NEW);
        cr_assert_str_eq(id, rid);
        cr_assert_eq(core_dp_ledger_row(dst, rid, &row2, &len2), CORE_OK);
        cr_assert(len == len2 && memcmp(row, row2, len) == 0, "the same row text");
        cr_assert_eq(core_dp_ledger_adopt_row(dst, row, len, &what, NULL, 0, err, sizeof(err)),
                     CORE_OK);
        cr_assert_eq(what, CORE_DP_ADOPTED_SAME);
        free(row);
        free(row2);
    }
    assert_bytes(dst, "w1@2", out, sizeof(out));
    assert_bytes(dst, "w2@2", "", 0);
    cr_assert(spent_eps(dst, "dev\"1|7") >= 0.4 && spent_eps(dst, "dev\"1|7") < 0.4 + 1e-12);
    cr_assert_eq(core_dp_ledger_adopt_row(dst, "{\"v\":1}", 7, &what, NULL, 0, err, sizeof(err)),
                 CORE_EPARSE);
    cr_assert_eq(core_dp_ledger_adopt_row(dst, "not json", 8, &what, NULL, 0, err, sizeof(err)),
                 CORE_EPARSE);
    core_dp_ledger_free(src);
    core_dp_ledger_free(dst);
    ts_rmtree(a.dir);
    ts_rmtree(b.dir);
    free(a.dir);
    free(b.dir);
}

Test(dp_ledger_adopt, row_text_jsonl_to_store)
{
    row_transfer(0, 1);
}
Test(dp_ledger_adopt, row_text_store_to_jsonl)
{
    row_transfer(1, 0);
}
Test(dp_ledger_adopt, row_text_store_to_store)
{
    row_transfer(1, 1);
}
Test(dp_ledger_adopt, row_text_jsonl_to_jsonl)
{
    row_transfer(0, 0);
}

/* An imported store has no row head for its rows: the row text comes from the audit log. */
Test(dp_ledger_adopt, row_text_of_an_imported_row)
{
    struct lpath p;
    lpath_new(&p, "imp");
    struct core_dp_ledger *l = lopen(&p, 0, 10.0);
    struct core_dp_ledger_opts o = {.path = p.audit, .cap = {10.0, 100.0, 1e-3}, .scheme = SCHEME};
    char *r1 = NULL, *r2 = NULL, err[512] = "";
    size_t n1 = 0, n2 = 0;
    uint64_t rows = 0;

    release(l, "w1@1", "dev1|7", "abc", 3);
    cr_assert_eq(core_dp_ledger_row(l, "w1@1", &r1, &n1), CORE_OK);
    core_dp_ledger_free(l);
    cr_assert_eq(core_dp_ledger_import(&o, p.store, &rows, err, sizeof(err)), CORE_OK, "%s", err);
    l = lopen(&p, 1, 10.0);
    cr_assert_eq(core_dp_ledger_row(l, "w1@1", &r2, &n2), CORE_OK);
    cr_assert(n1 == n2 && memcmp(r1, r2, n1) == 0);
    free(r1);
    free(r2);
    core_dp_ledger_free(l);
    ts_rmtree(p.dir);
    free(p.dir);
}

/* A group of rows in one commit: new ones, a known one, the same release twice in the batch;
 * a conflict anywhere records nothing of the batch. */
static void batch_semantics(int store)
{
    struct lpath a, b;
    lpath_new(&a, "src");
    lpath_new(&b, "dst");
    struct core_dp_ledger *src = lopen(&a, 0, 10.0), *dst = lopen(&b, store, 10.0);
    char *rows[4];
    size_t lens[4], bad = 99;
    enum core_dp_adopted what[4];
    char err[512] = "", id[16];

    for (int i = 0; i < 3; i++) {
        snprintf(id, sizeof(id), "w%d@1", i);
        release(src, id, i == 2 ? "dev2|7" : "dev1|7", id, strlen(id));
        cr_assert_eq(core_dp_ledger_row(src, id, &rows[i], &lens[i]), CORE_OK);
    }
    rows[3] = rows[1]; /* the same release twice (a replayed row) */
    lens[3] = lens[1];
    /* a known row with other bytes in the batch: nothing of the batch is recorded */
    release(dst, "w2@1", "dev2|7", "other", 5);
    cr_assert_eq(core_dp_ledger_adopt_rows(dst, 4, (const char *const *)rows, lens, what, &bad, err,
                                           sizeof(err)),
                 CORE_EINVARIANT);
    cr_assert_eq(bad, 2u);
    cr_assert(strstr(err, "w2@1") != NULL, "%s", err);
    uint8_t *got = NULL;
    size_t n = 0;
    cr_assert_eq(core_dp_ledger_lookup(dst, "w0@1", &got, &n), CORE_ENOTFOUND, "all or nothing");
    cr_assert(spent_eps(dst, "dev1|7") < 1e-12, "the batch's reservations were given back");
    /* without the conflicting row: new, new, same (in the batch) */
    char *conflicting = rows[2];
    rows[2] = rows[3];
    lens[2] = lens[3];
    cr_assert_eq(core_dp_ledger_adopt_rows(dst, 3, (const char *const *)rows, lens, what, &bad, err,
                                           sizeof(err)),
                 CORE_OK, "%s", err);
    cr_assert_eq(what[0], CORE_DP_ADOPTED_NEW);
    cr_assert_eq(what[1], CORE_DP_ADOPTED_NEW);
    cr_assert_eq(what[2], CORE_DP_ADOPTED_SAME);
    core_dp_ledger_free(dst);
    dst = lopen(&b, store, 10.0);
    assert_bytes(dst, "w0@1", "w0@1", 4);
    assert_bytes(dst, "w1@1", "w1@1", 4);
    cr_assert(spent_eps(dst, "dev1|7") >= 0.8 && spent_eps(dst, "dev1|7") < 0.8 + 1e-12);
    cr_assert_eq(core_dp_ledger_adopt_rows(dst, 2, (const char *const *)rows, lens, what, &bad, err,
                                           sizeof(err)),
                 CORE_OK);
    cr_assert_eq(what[0], CORE_DP_ADOPTED_SAME);
    free(rows[0]);
    free(rows[1]);
    free(conflicting);
    core_dp_ledger_free(src);
    core_dp_ledger_free(dst);
    ts_rmtree(a.dir);
    ts_rmtree(b.dir);
    free(a.dir);
    free(b.dir);
}

Test(dp_ledger_adopt, jsonl_group_of_rows_all_or_nothing)
{
    batch_semantics(0);
}
Test(dp_ledger_adopt, store_group_of_rows_all_or_nothing)
{
    batch_semantics(1);
}
