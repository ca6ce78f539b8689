/* test_units.c - one reading, one privacy unit, in calibrate and in release (audit defect
 * 6): calibrate charges a raw reading time, ingest snaps it to the period grid and release
 * charges the snapped time's window. For random raw times, periods, grid origins, slot
 * lengths and time radii, the unit of the snapped time (the protected occurrence's unit) is
 * charged by both stages, through the one unit scheme in core. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../ingest/ing_test.h"
#include "alg/window.h"
#include "cal/ledger.h"
#include "cal/matrix.h"
#include "core/dp_ledger.h"

static bool has(const char *const *units, size_t n, const char *u)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(units[i], u) == 0)
            return true;
    return false;
}

Test(units, calibrate_and_release_charge_the_same_unit_for_a_reading)
{
    static const int64_t periods[] = {1000, 7001, 60000, 300000};
    static const int64_t slots[] = {1000, 30000, 60000, 120000, 3600000};
    static const char *const names[] = {"temperature"};
    unsigned seed = 7;
    char buf[1 << 16], want[64];
    const char *units[CORE_DP_MAX_SPAN_UNITS];
    size_t checked = 0;

    for (int trial = 0; trial < 2000; trial++) {
        struct ing_params p;
        struct core_dp_scheme sc;
        struct cal_ledger_opts lo;
        struct cal_units *cu = NULL;
        struct cal_matrix *mx = NULL;
        const char *dev = "room7";
        double x = 0.5;
        int64_t ts, tau, start, n_win;
        size_t n = 0;
        char eb[256] = "";

        ing_params_default(&p);
        p.period_ms = periods[rand_r(&seed) % 4];
        p.origin_ms = (int64_t)(rand_r(&seed) % 5) * p.period_ms;
        n_win = 1 + rand_r(&seed) % 20;
        p.window_ms = n_win * p.period_ms;
        p.hop_ms = p.window_ms;
        struct ing_engine *e = mk_engine(&p);
        ts = T0 + (int64_t)(rand_r(&seed) % 100000000) - 50000000;
        tau = ing__slot_time(e, ts);
        ing_engine_free(e);
        /* the window holding tau on ingest's grid */
        start = p.origin_ms + ((tau - p.origin_ms) / p.window_ms) * p.window_ms;
        if (start > tau)
            start -= p.window_ms;
        sc = (struct core_dp_scheme){slots[rand_r(&seed) % 5], rand_r(&seed) % 3, p.period_ms};
        if ((p.window_ms + 2 * sc.time_radius * p.period_ms) / sc.slot_ms > 1000)
            continue; /* more units than one window may charge: release refuses those */
        snprintf(want, sizeof(want), "%s|%lld", dev, (long long)core_dp_unit_slot(&sc, tau));
        /* release */
        cr_assert_eq(core_dp_units(&sc, dev, start, start + p.window_ms, 0, buf, sizeof(buf), units,
                                   CORE_DP_MAX_SPAN_UNITS, &n),
                     CORE_OK);
        cr_assert(has(units, n, want), "release misses %s", want);
        /* calibrate, on the raw time */
        cr_assert_eq(cal_matrix_from_arrays(1, 1, &x, names, NULL, 0, &mx), CORE_OK);
        cal_matrix_set_ts(mx, &ts);
        memset(&lo, 0, sizeof(lo));
        lo.devices = &dev;
        lo.n_devices = 1;
        lo.slot_ms = sc.slot_ms;
        lo.widen_ms = cal_ledger_widen_ms(&sc);
        cr_assert_eq(cal_ledger_units(mx, &lo, &cu, eb, sizeof(eb)), CORE_OK, "%s", eb);
        cr_assert(has((const char *const *)cu->names, cu->n, want),
                  "calibrate misses %s (ts %lld, tau %lld, period %lld, slot %lld)", want,
                  (long long)ts, (long long)tau, (long long)p.period_ms, (long long)sc.slot_ms);
        cal_units_free(cu);
        cal_matrix_free(mx);
        checked++;
    }
    cr_assert_gt(checked, 1000u, "only %zu cases checked", checked);
}
