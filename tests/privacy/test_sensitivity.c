/* test_sensitivity.c - the certificate release uses for a window is never below the change one
 * reading can make to it (DESIGN §7.2, §7.7; issue: "certify every coordinate from the
 * window's own provenance").
 *
 * Brute force over small random windows built by the real ingest engine: every configured
 * feature (mean, count, min, max, std) and interpolation gap G in {0, 1, 2, 4, 10}; for every
 * real reading, replacements across the clip interval and beyond it (the domain), with the
 * window rebuilt from scratch (interpolation re-run). The observed change of each node
 * never exceeds rel_stat_sensitivity_obs of the record's provenance (the window's own
 * certificate, what release checks against s_k), which never exceeds the plan's bound
 * rel_stat_sensitivity for the same G. Teeth: with gaps, the mean moves by more than 1/n
 * (a bound that ignores G would fail) and max/min by more than a mean's bound. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "../ingest/ing_test.h"
#include "cal/theta.h"
#include "rel/bounds.h"
#include "rel/release.h"

#define MAX_RD 32
#define N_STAT 5

static const char *const stat_names[N_STAT] = {"mean", "count", "min", "max", "std"};

struct reading {
    long long ts;
    double v;
};

/* θ over the five temperature nodes, identity coordinates. */
static struct cal_theta *theta5(void)
{
    struct cal_theta *t = NULL;
    char name[32];
    cr_assert_eq(cal_theta_new(N_STAT, N_STAT, &t), CORE_OK);
    for (size_t m = 0; m < N_STAT; m++) {
        snprintf(name, sizeof(name), "temperature.%s", stat_names[m]);
        cr_assert_eq(cal_theta_set_node(t, m, name), CORE_OK);
    }
    cr_assert_eq(cal_theta_set_identity_coords(t), CORE_OK);
    return t;
}

static struct ing_params params(int slots, int gap)
{
    struct ing_params p;
    ing_params_default(&p);
    p.window_ms = slots * T_MIN;
    p.hop_ms = p.window_ms;
    p.period_ms = T_MIN;
    p.lateness_ms = 0;
    p.min_coverage = 0.0;
    p.max_interp_gap = gap;
    p.features = ING_F_MEAN | ING_F_COUNT | ING_F_MIN | ING_F_MAX | ING_F_STD;
    return p;
}

/* Build the one window of rd[0..n) (ts-sorted); its record as JSON text (new), or NULL when
 * ingest excluded it. */
static char *build(const struct ing_params *p, const struct reading *rd, size_t n)
{
    struct ing_engine *e = mk_engine(p);
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    char *out = NULL;

    for (size_t i = 0; i < n; i++)
        cr_assert_eq(push_t(e, &s, "dev", rd[i].ts, rd[i].v, (long long)i), ING_R_NONE);
    ing_engine_flush(e, &s);
    cr_assert_eq(json_array_size(c.windows), 1);
    if (!json_is_true(json_object_get(win_at(&c, 0), "excluded")))
        out = strdup(json_string_value(json_array_get(c.raw_windows, 0)));
    coll_free(&c);
    ing_engine_free(e);
    return out;
}

/* A random window: each slot holds 0, 1 or 2 readings (jittered within +-25 s of the slot
 * time, so they snap to it), values uniform over the domain-ish range [0, 50] (clip [10, 40]). */
static size_t random_window(unsigned *seed, int slots, struct reading *rd)
{
    size_t n = 0;
    for (int j = 0; j < slots; j++) {
        int k = rand_r(seed) % 10 < 3 ? 0 : (rand_r(seed) % 10 < 8 ? 1 : 2);
        for (int r = 0; r < k && n < MAX_RD; r++) {
            long long jit = (long long)(rand_r(seed) % 25000) * (r ? 1 : -1);
            rd[n].ts = T0 + j * T_MIN + jit;
            rd[n].v = 50.0 * rand_r(seed) / (double)RAND_MAX;
            n++;
        }
    }
    return n;
}

struct teeth {
    double mean_over_inv_n; /* max observed mean change x n_points */
    double max_change;      /* max observed change of min/max */
};

/* All single-reading replacements of one window; asserts observed <= certified. */
static void check_window(const struct ing_params *p, const struct cal_theta *t,
                         const struct reading *rd, size_t n, const char *base_js,
                         struct teeth *teeth)
{
    static const double repl[] = {10.0, 40.0, -40.0, 125.0, 25.0, 12.5};
    const struct rel_query_params qp = {2, 1u << 20, (uint32_t)p->max_interp_gap};
    struct rel_window w0, w1;
    struct reading mod[MAX_RD];
    char eb[512] = "";

    rel_window_init(&w0, t);
    rel_window_init(&w1, t);
    cr_assert_eq(rel_window_from_json(base_js, strlen(base_js), &w0, eb, sizeof(eb)), CORE_OK, "%s",
                 eb);
    for (size_t m = 0; m < N_STAT; m++) { /* the window's own <= the plan's, for its G */
        enum rel_stat st;
        cr_assert_eq(rel_stat_parse(stat_names[m], &st), CORE_OK);
        if (w0.obs[m].n_real >= qp.min_samples)
            cr_assert_leq(rel_stat_sensitivity_obs(st, 1, &w0.obs[m], &qp),
                          rel_stat_sensitivity(st, 1, &qp) * (1 + 1e-15), "%s", stat_names[m]);
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t r = 0; r < sizeof(repl) / sizeof(*repl); r++) {
            char *js;
            memcpy(mod, rd, n * sizeof(*rd));
            mod[i].v = repl[r];
            js = build(p, mod, n);
            cr_assert_not_null(js, "a value replacement changed which windows exist");
            cr_assert_eq(rel_window_from_json(js, strlen(js), &w1, eb, sizeof(eb)), CORE_OK, "%s",
                         eb);
            for (size_t m = 0; m < N_STAT; m++) {
                enum rel_stat st;
                double diff = fabs(w1.x[m] - w0.x[m]), cert;
                cr_assert_eq(rel_stat_parse(stat_names[m], &st), CORE_OK);
                cr_assert_eq(w1.obs[m].n_points, w0.obs[m].n_points, "provenance is public");
                cert = rel_stat_sensitivity_obs(st, 1, &w0.obs[m], &qp);
                cr_assert_leq(diff, cert + 1e-12,
                              "G=%d %s: reading %zu -> %g moved the node by %.17g > certified "
                              "%.17g (n_real %u, points %u, run %u)",
                              p->max_interp_gap, stat_names[m], i, repl[r], diff, cert,
                              w0.obs[m].n_real, w0.obs[m].n_points, w0.obs[m].max_run);
                if (st == REL_STAT_MEAN)
                    teeth->mean_over_inv_n =
                        fmax(teeth->mean_over_inv_n, diff * (double)w0.obs[m].n_points);
                if (st == REL_STAT_MAX || st == REL_STAT_MIN)
                    teeth->max_change = fmax(teeth->max_change, diff);
            }
            free(js);
        }
    }
    rel_window_cleanup(&w0);
    rel_window_cleanup(&w1);
}

static void sweep(int gap, int slots, int windows, unsigned seed, struct teeth *teeth)
{
    struct ing_params p = params(slots, gap);
    struct cal_theta *t = theta5();
    struct reading rd[MAX_RD];
    int done = 0;

    for (int tries = 0; done < windows && tries < 50 * windows; tries++) {
        size_t n = random_window(&seed, slots, rd);
        char *js = n ? build(&p, rd, n) : NULL;
        if (!js)
            continue; /* excluded (gap over G, no data): nothing is released */
        check_window(&p, t, rd, n, js, teeth);
        free(js);
        done++;
    }
    cr_assert_eq(done, windows, "G=%d: only %d windows were not excluded", gap, done);
    cal_theta_free(t);
}

Test(sensitivity, no_gap_interpolation)
{
    struct teeth th = {0, 0};
    sweep(0, 8, 40, 101, &th);
    cr_assert_gt(th.max_change, 0.5, "max/min move by more than a mean's bound");
}

Test(sensitivity, gaps_one_two_four)
{
    static const int gaps[] = {1, 2, 4};
    for (size_t g = 0; g < 3; g++) {
        struct teeth th = {0, 0};
        sweep(gaps[g], 10, 30, 200 + (unsigned)g, &th);
        cr_assert_gt(th.mean_over_inv_n, 1.0 + 1e-9,
                     "G=%d: interpolation amplifies one reading beyond 1/n (a bound that "
                     "ignores G would be wrong; this test would see it)",
                     gaps[g]);
    }
}

/* Defect 3 of the audit: a window built with G = 10 must be certified for its own imputed
 * runs, not for G = 2 taken from release's configuration. */
Test(sensitivity, long_gap_window_certified_for_its_own_runs)
{
    struct ing_params p = params(15, 10);
    struct cal_theta *t = theta5();
    /* two readings in each of slots 0, 1, 2, 13, 14: ten real samples, a run of ten */
    struct reading rd[10];
    struct teeth th = {0, 0};
    struct rel_window w;
    const struct rel_query_params g2 = {10, 1u << 20, 2}; /* release's defaults, G = 2 */
    static const int slot[5] = {0, 1, 2, 13, 14};
    char *js, eb[256] = "";

    for (int i = 0; i < 10; i++)
        rd[i] = (struct reading){T0 + slot[i / 2] * T_MIN + (i % 2 ? 10000 : -10000), 20.0 + i};
    js = build(&p, rd, 10);
    cr_assert_not_null(js);
    rel_window_init(&w, t);
    cr_assert_eq(rel_window_from_json(js, strlen(js), &w, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(w.obs[0].max_run, 10u);
    cr_assert_eq(w.obs[0].n_points, 20u); /* 10 real + 10 imputed (slots 3..12) */
    cr_assert_gt(rel_stat_sensitivity_obs(REL_STAT_MEAN, 1, &w.obs[0], &g2),
                 rel_stat_sensitivity(REL_STAT_MEAN, 1, &g2) + 0.4,
                 "the G=2 bound (0.5) would understate this window");
    check_window(&p, t, rd, 10, js, &th);
    cr_assert_gt(th.mean_over_inv_n, 5.0, "one reading moves this mean by > 5/n");
    rel_window_cleanup(&w);
    free(js);
    cal_theta_free(t);
}
