/* test_span.c - the declared span of a private recalibration (cal/span.h): bounds, which
 * windows are used (span, excluded, per-device lag), node naming, skipped rows, the
 * partitions' offsets release must have committed, and the units a span charges. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "cal/ledger.h"
#include "cal/span.h"
#include "test_support.h"

#define MIN 60000LL
#define WIN (15 * MIN)

static bool as_binary; /* add() sends its records as gcdp.window/3 */

/* A window of dev [s, s + WIN) with nodes a.mean = va, b.mean = vb (vb < 0: b missing). */
static void add(struct cal_span_set *set, const char *dev, long long s, double va, double vb,
                bool excluded, int32_t p, int64_t off)
{
    char buf[512];
    if (vb < 0)
        snprintf(buf, sizeof(buf),
                 "{\"schema\":\"gcdp.window/2\",\"device\":\"%s\","
                 "\"window_start\":%lld,\"window_end\":%lld,\"excluded\":%s,"
                 "\"nodes\":{\"a.mean\":%.3f}}",
                 dev, s, s + WIN, excluded ? "true" : "false", va);
    else
        snprintf(buf, sizeof(buf),
                 "{\"schema\":\"gcdp.window/2\",\"device\":\"%s\","
                 "\"window_start\":%lld,\"window_end\":%lld,\"excluded\":%s,"
                 "\"nodes\":{\"b.mean\":%.3f,\"a.mean\":%.3f}}",
                 dev, s, s + WIN, excluded ? "true" : "false", vb, va);
    if (as_binary) {
        size_t len;
        unsigned char *bin = ts_window2_to_bin(buf, &len);
        cr_assert_eq(cal_span_add(set, bin, len, p, off), CORE_OK);
        free(bin);
        return;
    }
    cr_assert_eq(cal_span_add(set, buf, strlen(buf), p, off), CORE_OK);
}

/* dev1: 40 windows from 0 (newest end 600 min) on partition 1, i = 20 excluded; dev0 lags:
 * 20 windows (newest end 300 min) on partition 0, i = 12 lacks node b; one malformed. */
static void fill(struct cal_span_set *set, int64_t gap, int64_t span)
{
    cal_span_set_init(set, gap, span);
    for (int i = 0; i < 40; i++)
        add(set, "dev1", i * WIN, 0.1 + 0.01 * i, 0.2 + 0.02 * (i % 5), i == 20, 1, 100 + i);
    for (int i = 0; i < 20; i++)
        add(set, "dev0", i * WIN, 0.5, i == 12 ? -1 : 0.3 + 0.01 * i, false, 0, i);
    cr_assert_eq(cal_span_add(set, "not json", 8, 0, 99), CORE_OK);
    set->high[0] = 50;
    set->high[1] = 200;
}

Test(span, bounds_follow_the_rule)
{
    int64_t t0, t1;
    cr_assert(cal_span_bounds(100 * MIN, 10 * MIN, 30000, MIN, 20 * MIN, &t0, &t1));
    cr_assert_eq(t1, 100 * MIN - 10 * MIN - 30000 - MIN);
    cr_assert_eq(t0, t1 - 20 * MIN);
    cr_assert(!cal_span_bounds(0, 10 * MIN, 0, MIN, MIN, &t0, &t1), "no window: no span");
    cr_assert(!cal_span_bounds(100 * MIN, 10 * MIN, 0, 0, MIN, &t0, &t1), "slot 0");
}

Test(span, selects_windows_per_device_and_builds_the_matrix)
{
    struct cal_span_set set;
    struct cal_span_result r;
    int64_t gap = 60 * MIN + 30000 + MIN, t0, t1;
    char eb[256];

    fill(&set, gap, 4 * 60 * MIN);
    cr_assert_eq(set.malformed, 1u);
    cr_assert_eq(set.newest_end, 40 * WIN);
    cr_assert(cal_span_bounds(set.newest_end, 60 * MIN, 30000, MIN, 4 * 60 * MIN, &t0, &t1));
    cr_assert_eq(cal_span_select(&set, t0, t1, &r, eb, sizeof(eb)), CORE_OK, "%s", eb);
    /* t1 = 600 - 61.5 min = 538.5 min -> dev1 windows ending <= 538.5 min and starting >=
     * 298.5 min: starts 300..510 (15 windows), minus the excluded one (start 300 min = i 20):
     * 14 rows. dev0: ends <= 300 - 61.5 = 238.5 min and starts >= 298.5: none. */
    cr_assert_eq(r.mx->n, 14u);
    cr_assert_eq(r.mx->m, 2u);
    cr_assert_str_eq(r.mx->names[0], "a", "one statistic per channel: named by the channel");
    cr_assert_str_eq(r.mx->names[1], "b");
    cr_assert_eq(r.n_devices, 1u);
    cr_assert_str_eq(r.devices[0], "dev1");
    cr_assert_eq(r.mx->ts[0], 21 * WIN);
    cr_assert_float_eq(r.mx->x[0], 0.1 + 0.01 * 21, 1e-12);
    cr_assert_eq(r.row_len_ms, WIN);
    cr_assert_eq(r.need[1], 200, "release must have committed to the high watermark read");
    cr_assert_eq(r.need[0], -1);
    cr_assert_eq(r.n_parts, 2u);

    /* the units: every slot of [start - widen, start + WIN - 1 + widen] of every row */
    struct cal_ledger_opts lo = {
        (const char *const *)r.devices, 1, MIN, 30000, {10, 0, 1e-5}, r.row_len_ms};
    struct cal_units *u = NULL;
    cr_assert_eq(cal_ledger_units(r.mx, &lo, &u, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(u->n, 14u * 15u + 2u);
    cr_assert_str_eq(u->names[0], "dev1|314");        /* 315 min - 30 s */
    cr_assert_str_eq(u->names[u->n - 1], "dev1|525"); /* 510 + 15 min - 1 ms + 30 s */
    cal_units_free(u);
    cal_span_result_cleanup(&r);
    cal_span_set_cleanup(&set);

    /* a wider span reaches dev0's windows before its own lag bound; the one missing b is
     * skipped and counted (dev0: ends <= 300 - 61.5 min: 15 windows, one skipped) */
    fill(&set, gap, 9 * 60 * MIN);
    cr_assert(cal_span_bounds(set.newest_end, 60 * MIN, 30000, MIN, 9 * 60 * MIN, &t0, &t1));
    cr_assert_eq(cal_span_select(&set, t0, t1, &r, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(r.n_devices, 2u);
    cr_assert_eq(r.skipped, 1u);
    cr_assert_eq(r.mx->n, 14u + 34u); /* dev0: 15 - 1 skipped; dev1: 35 - 1 excluded */
    cr_assert_eq(r.need[0], 50);
    cal_span_result_cleanup(&r);
    cal_span_set_cleanup(&set);
}

Test(span, too_few_windows_is_not_found)
{
    struct cal_span_set set;
    struct cal_span_result r;
    char eb[256];

    cal_span_set_init(&set, MIN, 10 * MIN);
    add(&set, "dev1", 0, 0.1, 0.2, false, 0, 0);
    add(&set, "dev1", WIN, 0.1, 0.2, false, 0, 1);
    cr_assert_eq(cal_span_select(&set, 0, 2 * WIN, &r, eb, sizeof(eb)), CORE_ENOTFOUND);
    cr_assert(strstr(eb, "1 usable windows"), "%s", eb); /* the second ends past the bound */
    cal_span_set_cleanup(&set);
}

Test(span, binary_records_give_the_same_matrix)
{
    struct cal_span_set sj, sb;
    struct cal_span_result rj, rb;
    int64_t gap = 60 * MIN + 30000 + MIN, t0, t1;
    char eb[256];

    as_binary = false;
    fill(&sj, gap, 4 * 60 * MIN);
    as_binary = true;
    fill(&sb, gap, 4 * 60 * MIN);
    as_binary = false;
    cr_assert_eq(sb.malformed, sj.malformed);
    cr_assert_eq(sb.n, sj.n);
    cr_assert(cal_span_bounds(sj.newest_end, 60 * MIN, 30000, MIN, 4 * 60 * MIN, &t0, &t1));
    cr_assert_eq(cal_span_select(&sj, t0, t1, &rj, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(cal_span_select(&sb, t0, t1, &rb, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(rb.mx->n, rj.mx->n);
    cr_assert_eq(rb.mx->m, rj.mx->m);
    cr_assert_gt(rj.mx->n, 0);
    for (size_t j = 0; j < rj.mx->m; j++)
        cr_assert_str_eq(rb.mx->names[j], rj.mx->names[j]);
    cr_assert_eq(memcmp(rb.mx->x, rj.mx->x, rj.mx->n * rj.mx->m * sizeof(double)), 0);
    cal_span_result_cleanup(&rj);
    cal_span_result_cleanup(&rb);
    cal_span_set_cleanup(&sj);
    cal_span_set_cleanup(&sb);
}
