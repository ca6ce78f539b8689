/* test_live_path.c - the live privacy path's control loop over the embedded broker, with the
 * real processes: calibrate --serve and release --serve running side by side, signed
 * commands from `gcdp ctl`.
 *
 *   drift_report_recalibrates_and_swaps_theta: the release service's drift monitor (a
 *     threshold every valid horizon exceeds: this tests the wiring, the statistic's
 *     detection power is tests/release/test_drift.c's) publishes its score on gcdp.status
 *     and a signed drift report on gcdp.control; the calibrate service makes a version with
 *     reason "drift"; release swaps θ between two windows: per device (one partition, in
 *     offset order) the θ versions of released records never go down, the first is the
 *     initial θ and every window ingested after the new version carries a newer one.
 *   recalibrate_flood_is_rate_limited: 12 valid recalibrate commands within the rate limit
 *     make exactly one new version; the others are refused and answered "rate_limited";
 *     a status command is answered by both services.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "broker.h"
#include "test_support.h"

#define OCC_TRAIN GCDP_DATA_DIR "/occupancy/datatraining.txt"
#define OCC_TEST  GCDP_DATA_DIR "/occupancy/datatest.txt"

static int run_gcdp(const char *const *args, const char *out, const char *err, int timeout_ms)
{
    return ts_wait(ts_spawn(args, out, err), timeout_ms);
}

static void replay_ingest(struct ts_broker *b, const char *device, const char *err)
{
    const char *replay[] = {"replay", "--file",         OCC_TRAIN,     "--device", device,
                            "--set",  b->set_bootstrap, "--log-level", "warn",     NULL};
    const char *ingest[] = {"ingest",      "--exit-idle",    "3",     "--flush-on-idle",
                            "--set",       b->set_bootstrap, "--set", "ingest.idle_timeout_ms=0",
                            "--log-level", "warn",           NULL};
    cr_assert_eq(run_gcdp(replay, NULL, err, 60000), 0, "replay failed");
    cr_assert_eq(run_gcdp(ingest, NULL, err, 120000), 0, "ingest failed");
}

/* Wait until topic holds at least n records (or timeout_ms); returns the count. */
static size_t wait_records(const char *bootstrap, const char *topic, size_t n, int timeout_ms)
{
    int64_t t0 = ts_now_ms();
    size_t have = 0;
    struct ts_record *rec;

    for (;;) {
        have = ts_topic_read(bootstrap, topic, &rec);
        ts_records_free(rec, have);
        if (have >= n || ts_now_ms() - t0 > timeout_ms)
            return have;
        ts_sleep_ms(250);
    }
}

/* θ records of gcdp.calibration in version order (the topic is keyed by version, so they
 * spread over partitions). */
static json_t *thetas_sorted(const char *bootstrap)
{
    json_t *a = ts_topic_json(bootstrap, "gcdp.calibration");
    json_t *out = ts_json_sorted_by(a, "version");
    json_decref(a);
    return out;
}

static void keygen(const char *path)
{
    const char *args[] = {"ctl", "keygen", "--out", path, NULL};
    cr_assert_eq(run_gcdp(args, NULL, NULL, 20000), 0, "gcdp ctl keygen failed");
}

static const char *jstr(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

Test(live_path, drift_report_recalibrates_and_swaps_theta, .timeout = 400)
{
    struct ts_broker b;
    char dir_err[600], key[600], setkey[700], led[600], mport[64];
    int port = ts_free_port();

    ts_broker_start(&b, NULL);
    snprintf(dir_err, sizeof(dir_err), "%s/err.txt", b.dir);
    snprintf(key, sizeof(key), "%s/control.key", b.dir);
    snprintf(setkey, sizeof(setkey), "control.key_file=%s", key);
    snprintf(led, sizeof(led), "%s/ledger.jsonl", b.dir);
    snprintf(mport, sizeof(mport), "metrics.port=%d", port);
    keygen(key);
    replay_ingest(&b, "occupancy", dir_err);

    const char *cal[] = {"calibrate",
                         "--serve",
                         "-i",
                         OCC_TEST,
                         "-f",
                         "occupancy",
                         "--exit-after",
                         "300",
                         "--set",
                         b.set_bootstrap,
                         "--set",
                         setkey,
                         "--set",
                         "calibrate.service.min_interval_s=0",
                         "--log-level",
                         "warn",
                         NULL};
    pid_t cal_pid = ts_spawn(cal, NULL, NULL);
    cr_assert_eq(wait_records(b.bootstrap, "gcdp.calibration", 1, 60000), 1u);
    const char *rel[] = {"release", "--serve", "--ledger", led, "--set", b.set_bootstrap, "--set",
                         setkey, "--set", mport,
                         /* horizons of 64 consecutive releases: the report plumbing is
                            tested here, not the day-aligned horizons (live_drift) */
                         "--set", "release.drift.span_ms=0", "--set", "release.drift.horizon=64",
                         "--set", "release.drift.threshold=9.5367431640625e-07", "--set",
                         "release.drift.min_samples=8", "--set", "release.drift.report_retry_s=2",
                         "--log-level", "warn", NULL};
    pid_t rel_pid = ts_spawn(rel, NULL, dir_err);

    /* the drift report makes a second version, with reason drift */
    cr_assert_geq(wait_records(b.bootstrap, "gcdp.calibration", 2, 90000), 2u,
                  "no recalibration after the drift report");
    json_t *thetas = thetas_sorted(b.bootstrap);
    json_t *t1 = json_array_get(thetas, 0), *t2 = json_array_get(thetas, 1);
    cr_assert_str_eq(jstr(t1, "reason"), "initial");
    cr_assert_str_eq(jstr(t2, "reason"), "drift");
    int64_t v1 = json_integer_value(json_object_get(t1, "version"));
    int64_t v2 = json_integer_value(json_object_get(t2, "version"));
    cr_assert_gt(v2, v1);
    /* release adopts it, then windows of a second site arrive */
    int64_t t0 = ts_now_ms();
    while (ts_metric(port, "gcdp_release_theta_version") < v2 && ts_now_ms() - t0 < 30000)
        ts_sleep_ms(100);
    cr_assert_geq(ts_metric(port, "gcdp_release_theta_version"), v2);
    replay_ingest(&b, "site-b", dir_err);
    t0 = ts_now_ms();
    int64_t consumed = -1;
    while (ts_now_ms() - t0 < 60000) { /* until release has read every window */
        struct ts_record *rec;
        size_t n = ts_topic_read(b.bootstrap, "gcdp.windows", &rec);
        ts_records_free(rec, n);
        consumed = ts_metric(port, "gcdp_release_consumed_total");
        if (consumed >= (int64_t)n)
            break;
        ts_sleep_ms(250);
    }
    kill(rel_pid, SIGTERM);
    cr_assert_eq(ts_wait(rel_pid, 60000), 0, "release --serve: %s", ts_read_file(dir_err, NULL));
    kill(cal_pid, SIGTERM);
    cr_assert_eq(ts_wait(cal_pid, 60000), 0);

    /* every version a record names is on the calibration topic; per device in offset order
     * the versions never go down; site-b (ingested after v2 was adopted) carries >= v2 */
    json_decref(thetas);
    thetas = thetas_sorted(b.bootstrap);
    json_t *known = json_object(), *v, *released = ts_topic_json(b.bootstrap, "gcdp.released");
    size_t i, n_b = 0, n_a = 0;
    char vk[32];
    json_array_foreach(thetas, i, v)
    {
        snprintf(vk, sizeof(vk), "%lld",
                 (long long)json_integer_value(json_object_get(v, "version")));
        json_object_set(known, vk, v);
    }
    int64_t last_a = 0, last_b = 0, first_a = 0;
    json_array_foreach(released, i, v)
    {
        int64_t tv = json_integer_value(json_object_get(v, "theta_version"));
        int b_site = strcmp(jstr(v, "device"), "site-b") == 0;
        snprintf(vk, sizeof(vk), "%lld", (long long)tv);
        cr_assert_not_null(json_object_get(known, vk), "theta version %s is not published", vk);
        if (b_site) {
            cr_assert_geq(tv, v2, "a site-b window released under the initial theta");
            cr_assert_geq(tv, last_b, "theta version went down");
            last_b = tv;
            n_b++;
        } else {
            if (!first_a)
                first_a = tv;
            cr_assert_geq(tv, last_a, "theta version went down");
            last_a = tv;
            n_a++;
        }
    }
    cr_assert_eq(first_a, v1, "the first release did not use the initial theta");
    cr_assert_gt(n_a, 500u);
    cr_assert_gt(n_b, 500u);
    /* the drift score went to the status topic, the report to the control topic */
    json_t *st = ts_topic_json(b.bootstrap, "gcdp.status"),
           *ctl = ts_topic_json(b.bootstrap, "gcdp.control");
    size_t n_drift_status = 0, n_reports = 0;
    json_array_foreach(st, i, v)
    {
        json_t *d = json_object_get(json_object_get(v, "status"), "drift");
        if (d && json_is_number(json_object_get(d, "score")))
            n_drift_status++;
    }
    json_array_foreach(ctl, i, v) n_reports +=
        strncmp(jstr(v, "reason"), "drift", 5) == 0 && strcmp(jstr(v, "cmd"), "recalibrate") == 0;
    cr_assert_gt(n_drift_status, 0u, "no drift score on gcdp.status");
    cr_assert_gt(n_reports, 0u, "no signed drift report on gcdp.control");
    cr_log_info("drift: %zu theta versions, %zu drift reports, %zu status records with a "
                "score; %zu + %zu windows released",
                json_array_size(thetas), n_reports, n_drift_status, n_a, n_b);
    json_decref(st);
    json_decref(ctl);
    json_decref(known);
    json_decref(released);
    json_decref(thetas);
    ts_broker_stop(&b);
}

Test(live_path, recalibrate_flood_is_rate_limited, .timeout = 300)
{
    struct ts_broker b;
    char key[600], setkey[700], out[600], err[600];

    ts_broker_start(&b, NULL);
    snprintf(key, sizeof(key), "%s/control.key", b.dir);
    snprintf(setkey, sizeof(setkey), "control.key_file=%s", key);
    snprintf(out, sizeof(out), "%s/ctl.out", b.dir);
    snprintf(err, sizeof(err), "%s/ctl.err", b.dir);
    keygen(key);
    const char *cal[] = {"calibrate",
                         "--serve",
                         "-i",
                         OCC_TEST,
                         "-f",
                         "occupancy",
                         "--exit-after",
                         "200",
                         "--set",
                         b.set_bootstrap,
                         "--set",
                         setkey,
                         "--set",
                         "calibrate.service.min_interval_s=3600",
                         "--log-level",
                         "warn",
                         NULL};
    pid_t cal_pid = ts_spawn(cal, NULL, NULL);
    cr_assert_eq(wait_records(b.bootstrap, "gcdp.calibration", 1, 60000), 1u);
    ts_sleep_ms(3000); /* the control listener's own group joins after the first θ */
    int made = 0, limited = 0;
    for (int i = 0; i < 12; i++) {
        const char *rc[] = {"ctl",         "recalibrate",
                            "--target",    "calibrate",
                            "--reason",    "operator flood test",
                            "--key",       key,
                            "--wait",      "15",
                            "--count",     "1",
                            "--set",       b.set_bootstrap,
                            "--log-level", "warn",
                            NULL};
        cr_assert_eq(run_gcdp(rc, out, err, 60000), 0, "gcdp ctl recalibrate: %s",
                     ts_read_file(err, NULL));
        char *text = ts_read_file(out, NULL);
        json_t *r = json_loads(text, 0, NULL);
        const char *what = jstr(json_object_get(r, "status"), "recalibrate");
        cr_assert_not_null(what, "reply: %s", text);
        made += strcmp(what, "made") == 0;
        limited += strcmp(what, "rate_limited") == 0;
        json_decref(r);
        free(text);
    }
    /* the initial version was made at start: every command falls within the limit */
    cr_assert_eq(made, 0, "a recalibration was made within min_interval_s of the initial one");
    cr_assert_eq(limited, 12);
    const char *status[] = {"ctl",   "status",        "--key",       key,        "--wait",
                            "10",    "--count",       "1",           "--target", "calibrate",
                            "--set", b.set_bootstrap, "--log-level", "warn",     NULL};
    cr_assert_eq(run_gcdp(status, out, err, 60000), 0);
    char *text = ts_read_file(out, NULL);
    json_t *r = json_loads(text, 0, NULL), *s = json_object_get(r, "status");
    cr_assert_eq(json_integer_value(json_object_get(s, "rate_limited")), 12, "%s", text);
    cr_assert_eq(json_integer_value(json_object_get(s, "made")), 1);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(s, "control"), "accepted")),
                 13);
    json_decref(r);
    free(text);
    cr_assert_eq(wait_records(b.bootstrap, "gcdp.calibration", 2, 1000), 1u,
                 "a rate-limited command made a version");
    kill(cal_pid, SIGTERM);
    cr_assert_eq(ts_wait(cal_pid, 60000), 0);
    ts_broker_stop(&b);
}
