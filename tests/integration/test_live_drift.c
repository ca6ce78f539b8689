/* test_live_drift.c - the drift monitor through the services at its DEFAULT settings (issue
 * 12, "Drift"), real processes on the embedded broker:
 *   gcdp simulate (64 motes, 5 simulated days, SEM regime change at day 1.5 or never)
 *   -> gcdp ingest (10-minute tumbling windows, complete windows only)
 *   -> gcdp calibrate --serve (public θ from a pilot run of the simulator's model:
 *      sim_calibration_csv, the same model seed, noise of its own, 64 motes x 1 day)
 *   -> gcdp release --serve (Laplace, eps_rel 20 per window, release.drift.* defaults).
 * The scenario is tests/release/test_drift.c's (same simulator defaults, window, mechanism,
 * budget, monitor defaults) with θ from public rows instead of protected day-0 windows.
 *
 *   regime_change_recalibrates_within_bound: a version with reason "drift" is made; at most
 *     FIRE_BOUND + SWAP_SLACK windows that start at or after the change are released under
 *     the initial θ (the library's bound for the monitor to fire, plus the report ->
 *     calibrate -> adopt round trip, see below); every window that starts before the
 *     change carries the initial version; per device (offset order) versions never go
 *     down; versions named are published ones.
 *   no_regime_change_no_drift_recalibration: the same seed without a change over the same
 *     span: no drift report, no version but the initial one, every record under it.
 * Also (issue 12 status): gcdp.status answers a status command with ε spent per unit
 * (max, p50, p90, p99, cap) equal to /metrics' gcdp_release_eps_* gauges.
 *
 * Seed 21: not a drift tuning seed (101-108) nor the library test's (11-13). The release
 * noise is the service's own (not seeded): scores vary from run to run (docs/release.md,
 * "Drift through the services", lists the measured ones). The horizons are one simulated
 * UTC day of every mote (release.drift.span_ms), also when release falls behind ingest and
 * reads partitions unevenly (docs/release.md, "Backlogs make false alarms").
 * Experiments only (not asserted): LIVEDRIFT_TUNE=1 with LIVEDRIFT_SEED, LIVEDRIFT_PILOT_DEV,
 * LIVEDRIFT_PILOT_WIN (the pilot's motes and windows per mote), LIVEDRIFT_HETERO (--hetero-sd
 * of pilot and stream); not GCDP_* names: those are configuration keys of the children.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "broker.h"
#include "ing/engine.h"
#include "sim/sim.h"
#include "test_support.h"

#define DEVICES     64
#define DAY_TICKS   1440
#define TICKS       (5 * DAY_TICKS)   /* 5 simulated days, one reading a minute */
#define CHANGE_TICK (DAY_TICKS + 720) /* as the library scenario: day 1.5 */
#define WIN_TICKS   10                /* 10-minute windows: 144 per device and day */
#define EPS_REL     20.0
#define START_MS    1793491200000LL /* the simulator's default start */
#define PERIOD_MS   60000LL
/* The library's bound (tests/release/test_drift.c FIRE_BOUND): the monitor fires by the end
 * of the second horizon that lies wholly after the change, 72 + 2 x 144 windows per device. */
#define FIRE_BOUND (DEVICES * (72 + 2 * 144))
/* The swap is not instantaneous: the report is signed and produced, the calibrate service
 * makes and publishes a version, release reads it and swaps at a window boundary; release
 * goes on releasing meanwhile. One more simulated day of windows (9216) bounds that round
 * trip at the release's rate here (docs/release.md, "Drift through the services"). */
#define SWAP_SLACK (DEVICES * 144)

static int run_gcdp(const char *const *args, const char *out, const char *err, int timeout_ms)
{
    return ts_wait(ts_spawn(args, out, err), timeout_ms);
}

static const char *jstr(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static size_t topic_count(const char *bootstrap, const char *topic)
{
    struct ts_record *rec;
    size_t n = ts_topic_read(bootstrap, topic, &rec);
    ts_records_free(rec, n);
    return n;
}

/* The public calibration rows: the simulator's model (seed) with noise of its own, one day
 * of 64 motes, clipped and scaled as ingest does (the default channels). */
static void pilot_csv(uint64_t seed, const char *path)
{
    struct sim_options so;
    struct ing_params ip;
    double lo[SIM_NCH], hi[SIM_NCH];
    size_t windows = 144;
    char eb[256] = "";

    sim_options_default(&so);
    so.seed = seed;
    so.devices = DEVICES;
    if (getenv("LIVEDRIFT_TUNE") && getenv("LIVEDRIFT_PILOT_DEV")) /* experiments only */
        so.devices = strtoull(getenv("LIVEDRIFT_PILOT_DEV"), NULL, 10);
    if (getenv("LIVEDRIFT_TUNE") && getenv("LIVEDRIFT_HETERO"))
        so.hetero_sd = strtod(getenv("LIVEDRIFT_HETERO"), NULL);
    if (getenv("LIVEDRIFT_TUNE") && getenv("LIVEDRIFT_PILOT_WIN"))
        windows = strtoull(getenv("LIVEDRIFT_PILOT_WIN"), NULL, 10);
    ing_params_default(&ip);
    for (size_t c = 0; c < SIM_NCH; c++) {
        const char *nm = sim_gen_channel_info(c)->name;
        size_t i = 0;
        while (i < ip.n_channels && strcmp(ip.channels[i].name, nm) != 0)
            i++;
        cr_assert_lt(i, ip.n_channels, "no ingest channel %s", nm);
        lo[c] = ip.channels[i].clip_lo;
        hi[c] = ip.channels[i].clip_hi;
    }
    cr_assert_eq(sim_calibration_csv(&so, (seed * 7919u) | 1u, lo, hi, windows, WIN_TICKS, path, eb,
                                     sizeof(eb)),
                 CORE_OK, "%s", eb);
}

struct drift_run {
    uint64_t seed;
    bool change;
    /* results */
    json_t *thetas;        /* gcdp.calibration records, version order */
    json_t *released;      /* gcdp.released records */
    json_t *status;        /* the release's answer to a status command (its "status" body) */
    size_t windows;        /* records on gcdp.windows */
    size_t reports;        /* drift reports on gcdp.control */
    char scores[512];      /* the release's drift scores on gcdp.status, in order (logged) */
    int64_t eps_gauge[5];  /* max, p50, p90, p99, cap (ppm) */
    int64_t partial, late; /* gcdp_release_drift_{partial,late}_total */
    double secs;
};

static json_t *thetas_sorted(const char *bootstrap)
{
    json_t *a = ts_topic_json(bootstrap, "gcdp.calibration");
    json_t *out = ts_json_sorted_by(a, "version");
    json_decref(a);
    return out;
}

/* gcdp ctl status to the release service: its status body (new reference). */
static json_t *release_status(struct ts_broker *b, const char *key)
{
    char out[600], err[600];
    const char *st[] = {"ctl",   "status",         "--key",       key,        "--wait",
                        "15",    "--count",        "1",           "--target", "release",
                        "--set", b->set_bootstrap, "--log-level", "warn",     NULL};
    snprintf(out, sizeof(out), "%s/status.out", b->dir);
    snprintf(err, sizeof(err), "%s/status.err", b->dir);
    cr_assert_eq(run_gcdp(st, out, err, 60000), 0, "gcdp ctl status: %s", ts_read_file(err, NULL));
    char *text = ts_read_file(out, NULL), cmd[2048];
    json_t *r = json_loads(text, 0, NULL);
    cr_assert_not_null(r, "status reply: %s", text);
    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 -c 'import json,sys,jsonschema; "
             "jsonschema.Draft202012Validator(json.load(open(sys.argv[1]))).validate("
             "json.load(open(sys.argv[2])))' %s/status.schema.json %s",
             GCDP_SCHEMA_DIR, out);
    cr_assert_eq(system(cmd), 0, "the status reply does not validate: %s", text);
    json_t *s = json_incref(json_object_get(r, "status"));
    cr_assert_not_null(s, "status reply: %s", text);
    json_decref(r);
    free(text);
    return s;
}

/* Wait until release has read every window ingest wrote (ingest has exited). */
static void wait_caught_up(struct ts_broker *b, int port, int timeout_ms, size_t *windows)
{
    int64_t t0 = ts_now_ms();
    *windows = topic_count(b->bootstrap, "gcdp.windows");
    while (ts_metric(port, "gcdp_release_consumed_total") < (int64_t)*windows &&
           ts_now_ms() - t0 < timeout_ms)
        ts_sleep_ms(250);
    cr_assert_geq(ts_metric(port, "gcdp_release_consumed_total"), (int64_t)*windows,
                  "release did not read every window within %d ms", timeout_ms);
    ts_sleep_ms(6000); /* the ε gauges refresh every 5 s */
}

static void read_eps_gauges(int port, int64_t g[5])
{
    static const char *const series[5] = {
        "gcdp_release_eps_spent_ppm{q=\"max\"}", "gcdp_release_eps_spent_ppm{q=\"0.5\"}",
        "gcdp_release_eps_spent_ppm{q=\"0.9\"}", "gcdp_release_eps_spent_ppm{q=\"0.99\"}",
        "gcdp_release_eps_cap_ppm"};
    for (int i = 0; i < 5; i++)
        g[i] = ts_metric(port, series[i]);
}

static void collect(struct ts_broker *b, struct drift_run *r)
{
    json_t *ctl = ts_topic_json(b->bootstrap, "gcdp.control"), *v;
    size_t i;

    r->thetas = thetas_sorted(b->bootstrap);
    r->released = ts_topic_json(b->bootstrap, "gcdp.released");
    json_array_foreach(ctl, i, v) r->reports +=
        jstr(v, "reason") && strncmp(jstr(v, "reason"), "drift", 5) == 0 && jstr(v, "cmd") &&
        strcmp(jstr(v, "cmd"), "recalibrate") == 0;
    json_decref(ctl);
    json_t *st = ts_topic_json(b->bootstrap, "gcdp.status");
    size_t len = 0;
    json_array_foreach(st, i, v)
    { /* one partition (key = instance): in order */
        json_t *d = json_object_get(json_object_get(v, "status"), "drift");
        json_t *sc = json_object_get(d, "score");
        if (!json_is_number(sc) || json_object_get(json_object_get(v, "status"), "ledger"))
            continue;
        if (len + 16 < sizeof(r->scores))
            len += (size_t)snprintf(r->scores + len, sizeof(r->scores) - len, " %.4f",
                                    json_number_value(sc));
    }
    json_decref(st);
}

/* gcdp simulate: 64 motes, 5 days as fast as ingest keeps up (its group's lag guard). */
static void run_simulate(struct ts_broker *b, const struct drift_run *r)
{
    char seed[32], ticks[32], devices[32], change[32];
    const char *sim[32] = {
        "simulate",    "--devices", devices,          "--seed",      seed,
        "--ticks",     ticks,       "--rate",         "0",           "--lag-group",
        "gcdp-ingest", "--set",     b->set_bootstrap, "--log-level", "warn"};
    size_t na = 15;

    snprintf(seed, sizeof(seed), "%llu", (unsigned long long)r->seed);
    snprintf(ticks, sizeof(ticks), "%d", TICKS);
    snprintf(devices, sizeof(devices), "%d", DEVICES);
    snprintf(change, sizeof(change), "%lld", (long long)CHANGE_TICK * (PERIOD_MS / 1000));
    if (r->change) {
        sim[na++] = "--regime-change-at";
        sim[na++] = change;
    }
    if (getenv("LIVEDRIFT_TUNE") && getenv("LIVEDRIFT_HETERO")) { /* experiments only */
        sim[na++] = "--hetero-sd";
        sim[na++] = getenv("LIVEDRIFT_HETERO");
    }
    sim[na] = NULL;
    cr_assert_eq(run_gcdp(sim, NULL, NULL, 240000), 0, "simulate failed");
}

static void run_pipeline(struct drift_run *r)
{
    const char *const bargs[] = {"--partitions", "16", NULL};
    struct ts_broker b;
    char key[600], setkey[700], led[600], mport[64], csv[600], err_rel[600], err_ing[600];
    int port = ts_free_port();
    int64_t t0 = ts_now_ms();

    ts_broker_start(&b, bargs);
    snprintf(key, sizeof(key), "%s/control.key", b.dir);
    snprintf(setkey, sizeof(setkey), "control.key_file=%s", key);
    snprintf(led, sizeof(led), "%s/ledger.jsonl", b.dir);
    snprintf(csv, sizeof(csv), "%s/pilot.csv", b.dir);
    snprintf(err_rel, sizeof(err_rel), "%s/release.err", b.dir);
    snprintf(err_ing, sizeof(err_ing), "%s/ingest.err", b.dir);
    snprintf(mport, sizeof(mport), "metrics.port=%d", port);
    const char *kg[] = {"ctl", "keygen", "--out", key, NULL};
    cr_assert_eq(run_gcdp(kg, NULL, NULL, 20000), 0, "gcdp ctl keygen failed");
    pilot_csv(r->seed, csv);

    const char *cal[] = {"calibrate",    "--serve", "-i",    csv,
                         "--exit-after", "600",     "--set", b.set_bootstrap,
                         "--set",        setkey,    "--set", "calibrate.service.min_interval_s=0",
                         "--log-level",  "warn",    NULL};
    pid_t cal_pid = ts_spawn(cal, NULL, NULL);
    const char *rel[] = {"release",     "--serve",
                         "--ledger",    led,
                         "--set",       b.set_bootstrap,
                         "--set",       setkey,
                         "--set",       mport,
                         "--set",       "release.mechanism=lap",
                         "--set",       "release.eps_rel=20",
                         "--set",       "release.ledger.cap_eps=1e6",
                         "--set",       "ingest.window.size_ms=600000",
                         "--log-level", "warn",
                         NULL};
    pid_t rel_pid = ts_spawn(rel, NULL, err_rel);
    const char *ing[] = {"ingest",      "--exit-idle",
                         "4",           "--flush-on-idle",
                         "--set",       b.set_bootstrap,
                         "--set",       "ingest.window.size_ms=600000",
                         "--set",       "ingest.max_interp_gap=0",
                         "--set",       "ingest.idle_timeout_ms=0",
                         "--log-level", "warn",
                         NULL};
    pid_t ing_pid = ts_spawn(ing, NULL, err_ing);
    run_simulate(&b, r);
    cr_assert_eq(ts_wait(ing_pid, 240000), 0, "ingest: %s", ts_read_file(err_ing, NULL));
    wait_caught_up(&b, port, 120000, &r->windows);
    r->status = release_status(&b, key);
    read_eps_gauges(port, r->eps_gauge);
    r->partial = ts_metric(port, "gcdp_release_drift_partial_total");
    r->late = ts_metric(port, "gcdp_release_drift_late_total");
    kill(rel_pid, SIGTERM);
    cr_assert_eq(ts_wait(rel_pid, 60000), 0, "release --serve: %s", ts_read_file(err_rel, NULL));
    kill(cal_pid, SIGTERM);
    cr_assert_eq(ts_wait(cal_pid, 60000), 0);
    collect(&b, r);
    r->secs = (double)(ts_now_ms() - t0) / 1000.0;
    ts_broker_stop(&b);
}

static void run_free(struct drift_run *r)
{
    json_decref(r->thetas);
    json_decref(r->released);
    json_decref(r->status);
}

/* ε spent per unit on gcdp.status and /metrics: ordered quantiles, within the cap, and the
 * same numbers in both places (one ledger, nothing released in between). */
static void check_eps(const struct drift_run *r)
{
    json_t *e = json_object_get(json_object_get(r->status, "ledger"), "eps_spent");
    const char *k[5] = {"max", "p50", "p90", "p99", "cap"};
    double v[5];

    cr_assert_not_null(e, "no ledger.eps_spent in the status");
    for (int i = 0; i < 5; i++) {
        v[i] = json_number_value(json_object_get(e, k[i]));
        cr_assert_eq(r->eps_gauge[i], (int64_t)(v[i] * 1e6 + 0.5), "%s: gauge %lld vs %.17g", k[i],
                     (long long)r->eps_gauge[i], v[i]);
    }
    cr_assert_gt(json_integer_value(json_object_get(e, "units")), 0);
    /* every unit (device, minute) of a released window is charged eps_rel at least once */
    cr_assert_geq(v[1], EPS_REL * (1 - 1e-9), "p50 %g", v[1]);
    cr_assert(v[1] <= v[2] && v[2] <= v[3] && v[3] <= v[0] && v[0] <= v[4], "%g %g %g %g %g", v[0],
              v[1], v[2], v[3], v[4]);
    cr_assert_eq(v[4], 1e6);
    cr_assert_float_eq(json_number_value(json_object_get(e, "remaining_min")), v[4] - v[0],
                       1e-6 * v[4]);
    cr_log_info("eps per unit: max %g p50 %g p90 %g p99 %g (cap %g) over %lld units", v[0], v[1],
                v[2], v[3], v[4], json_integer_value(json_object_get(e, "units")));
}

Test(live_drift, regime_change_recalibrates_within_bound, .timeout = 400)
{
    struct drift_run r = {.seed = 21, .change = true};
    if (getenv("LIVEDRIFT_TUNE") && getenv("LIVEDRIFT_SEED")) /* experiments only */
        r.seed = strtoull(getenv("LIVEDRIFT_SEED"), NULL, 10);
    int64_t change_ms = START_MS + (int64_t)CHANGE_TICK * PERIOD_MS;
    json_t *v, *known = json_object(), *last = json_object();
    size_t i, n_old_post = 0, n_new = 0;
    char vk[32];

    run_pipeline(&r);
    cr_assert_geq(json_array_size(r.thetas), 2u, "no recalibration (%zu drift reports)", r.reports);
    json_t *t1 = json_array_get(r.thetas, 0), *t2 = json_array_get(r.thetas, 1);
    int64_t v1 = json_integer_value(json_object_get(t1, "version"));
    int64_t v2 = json_integer_value(json_object_get(t2, "version"));
    cr_assert_str_eq(jstr(t1, "reason"), "initial");
    cr_assert_str_eq(jstr(t2, "reason"), "drift");
    cr_assert_gt(v2, v1);
    json_array_foreach(r.thetas, i, v)
    {
        snprintf(vk, sizeof(vk), "%lld",
                 (long long)json_integer_value(json_object_get(v, "version")));
        json_object_set_new(known, vk, json_true());
    }
    cr_assert_eq(json_array_size(r.released), r.windows, "every window released once");
    json_array_foreach(r.released, i, v)
    { /* partition order = offset order per device */
        int64_t tv = json_integer_value(json_object_get(v, "theta_version"));
        int64_t ws = json_integer_value(json_object_get(v, "window_start"));
        json_t *prev = json_object_get(last, jstr(v, "device"));
        snprintf(vk, sizeof(vk), "%lld", (long long)tv);
        cr_assert_not_null(json_object_get(known, vk), "theta version %s is not published", vk);
        cr_assert(!prev || tv >= json_integer_value(prev), "%s: theta version went down",
                  jstr(v, "device"));
        json_object_set_new(last, jstr(v, "device"), json_integer(tv));
        if (ws < change_ms)
            cr_assert_eq(tv, v1, "a window before the change released under v%lld", (long long)tv);
        else if (tv == v1)
            n_old_post++;
        n_new += tv >= v2;
    }
    cr_log_info("drift (seed %llu): %zu windows, %zu after the change released under the "
                "initial theta (%.1f per device; bound %d + %d), %zu under newer versions, "
                "%zu versions, %zu drift reports, %.1f s; scores%s",
                (unsigned long long)r.seed, r.windows, n_old_post, (double)n_old_post / DEVICES,
                FIRE_BOUND, SWAP_SLACK, n_new, json_array_size(r.thetas), r.reports, r.secs,
                r.scores);
    cr_assert_geq(n_old_post, 1u);
    cr_assert_leq(n_old_post, (size_t)(FIRE_BOUND + SWAP_SLACK), "swap too late: %zu windows",
                  n_old_post);
    cr_assert_gt(n_new, 0u);
    check_eps(&r);
    json_decref(known);
    json_decref(last);
    run_free(&r);
}

Test(live_drift, no_regime_change_no_drift_recalibration, .timeout = 400)
{
    struct drift_run r = {.seed = 21, .change = false};
    if (getenv("LIVEDRIFT_TUNE") && getenv("LIVEDRIFT_SEED")) /* experiments only */
        r.seed = strtoull(getenv("LIVEDRIFT_SEED"), NULL, 10);
    json_t *v;
    size_t i;

    run_pipeline(&r);
    cr_log_info("no change (seed %llu): %zu windows, %zu versions, %zu drift reports, %.1f s; "
                "scores%s",
                (unsigned long long)r.seed, r.windows, json_array_size(r.thetas), r.reports, r.secs,
                r.scores);
    cr_assert_eq(r.reports, 0u, "false alarm: %zu drift reports", r.reports);
    /* horizons on window time: one UTC day each, what was skipped is counted */
    json_t *drift = json_object_get(r.status, "drift");
    cr_assert_eq(json_integer_value(json_object_get(drift, "span_ms")), 86400000);
    cr_assert(json_is_integer(json_object_get(drift, "partial")) &&
              json_is_integer(json_object_get(drift, "late")));
    cr_assert_geq(r.partial, 0, "gcdp_release_drift_partial_total on /metrics");
    cr_assert_geq(r.late, 0, "gcdp_release_drift_late_total on /metrics");
    cr_log_info("no change: %lld partial horizons, %lld late windows", (long long)r.partial,
                (long long)r.late);
    cr_assert_eq(json_array_size(r.thetas), 1u, "a version besides the initial one");
    int64_t v1 = json_integer_value(json_object_get(json_array_get(r.thetas, 0), "version"));
    cr_assert_eq(json_array_size(r.released), r.windows, "every window released once");
    json_array_foreach(r.released, i, v)
        cr_assert_eq(json_integer_value(json_object_get(v, "theta_version")), v1);
    check_eps(&r);
    run_free(&r);
}
