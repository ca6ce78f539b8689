/* test_calibrate_private.c - the private calibrate service (issue 12; docs/calibrate.md, "The
 * private calibrate service") over the embedded broker with the real processes.
 *
 * Windows (gcdp.window/2, device room1, 15-minute tumbling windows, channels a-d, a canary
 * value planted in channel d) are produced to gcdp.windows; a public θ is published with the
 * offline command; `gcdp release --serve` (changelog on) releases every window and exits.
 *
 *   command_charges_the_span_and_release_restores_it: a signed recalibrate command makes a
 *     private θ (reason command, mode private) whose ledger row charges ε_cal to exactly the
 *     units of the declared span's windows (computed here from the windows produced and the
 *     span rule); the row is on the changelog at room1's partition, key = its release id;
 *     the running release instance restores it before taking the private θ in use; a
 *     restarted release instance restores it too, so its ledger totals on the span's units are
 *     ε_rel + ε_cal; the canary never appears on gcdp.calibration, gcdp.status, the logs or
 *     /metrics.
 *   cap_refusal_is_reported_and_charges_nothing: with cap 2 (ε_rel 1 + ε_cal 1.5 > 2) the
 *     command is refused: answered "refused", an unsolicited status record with refusal
 *     "budget", gcdp_calibrate_refusals_total{reason="budget"} = 1, no θ published, and the
 *     calibrate ledger holds no calibrate row.
 *   release_without_changelog_is_refused: release ran with release.service.changelog=false:
 *     the changelog holds no row for the partition of released span windows -> refused
 *     (changelog), counted, no θ, no calibrate row.
 *   committed_theta_is_republished_not_renoised: the state a crash between the ledger commit
 *     and θ's acknowledgement leaves (a private version committed with cal_calibrate_charged,
 *     as the service does, and not published) -> the service republishes the stored bytes
 *     byte for byte with the row on the changelog, and appends nothing to the ledger; a
 *     recalibration then is refused (release_behind: no release instance has committed past
 *     the windows), counted, and charges nothing.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "broker.h"
#include "cal/calibrate.h"
#include "cal/ledger.h"
#include "core/config.h"
#include "core/dp_ledger.h"
#include "core/dp_rng.h"
#include "core/kafka.h"
#include "core/kconf.h"
#include "core/ksync.h"
#include "test_support.h"

#define N_WIN    48
#define WIN_MS   900000LL
#define T0       (1000LL * WIN_MS)
#define SPAN_S   "14400"
#define CANARY   "0.31415926535897931" /* d's value in every 7th window, 17 digits */
#define CANARY_D 0.31415926535897931

static const char *const CHANS[4] = {"a", "b", "c", "d"};

struct fx {
    struct ts_broker b;
    char key[600], setkey[700], cal_led[600], set_cal_led[700], rel_led[600];
    char err[600], cal_err[600], out[600], mport[64];
    int port;
};

static int run_gcdp(const char *const *args, const char *out, const char *err, int timeout_ms)
{
    return ts_wait(ts_spawn(args, out, err), timeout_ms);
}

static const char *jstr(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static void window_values(int i, double *v)
{
    v[0] = 0.5 + 0.3 * ((i % 8) / 8.0);
    v[1] = 0.45 + 0.28 * ((i % 8) / 8.0) + 0.01 * (i % 3);
    v[2] = 0.2 + 0.5 * ((i * 5 % 11) / 11.0);
    v[3] = i % 7 == 3 ? CANARY_D : 0.6 - 0.2 * ((i % 4) / 4.0);
}

static void produce_windows(const struct ts_broker *b)
{
    static const struct core_cfg_key *const tables[] = {core_config_keys};
    struct core_config *cfg = core_config_new(tables, 1);
    rd_kafka_t *rk = NULL;
    char eb[512], buf[4096], id[64];
    double v[4];

    cr_assert_eq(core_config_set_arg(cfg, b->set_bootstrap, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(core_kafka_client_new(cfg, CORE_KAFKA_PRODUCER, NULL, NULL, NULL, NULL, &rk, eb,
                                       sizeof(eb)),
                 CORE_OK, "%s", eb);
    for (int i = 0; i < N_WIN; i++) {
        long long s = T0 + i * WIN_MS;
        window_values(i, v);
        snprintf(id, sizeof(id), "room1|%lld|p", s);
        ts_window2(buf, sizeof(buf), "room1", id, s, s + WIN_MS, 4, CHANS, v, 15, 15, 60000);
        cr_assert_eq(core_kafka_produce_copy(rk, "gcdp.windows", RD_KAFKA_PARTITION_UA, "room1", 5,
                                             buf, strlen(buf), NULL),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
    }
    cr_assert_eq(rd_kafka_flush(rk, 30000), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_destroy(rk);
    core_config_free(cfg);
}

/* Broker, key, windows, a public θ (v1) on gcdp.calibration. */
static void fx_start(struct fx *f)
{
    char csv[600], text[8192];
    size_t off;

    ts_broker_start(&f->b, NULL);
    snprintf(f->key, sizeof(f->key), "%s/control.key", f->b.dir);
    snprintf(f->setkey, sizeof(f->setkey), "control.key_file=%s", f->key);
    snprintf(f->cal_led, sizeof(f->cal_led), "%s/cal-ledger.jsonl", f->b.dir);
    snprintf(f->set_cal_led, sizeof(f->set_cal_led), "calibrate.ledger.path=%s", f->cal_led);
    snprintf(f->rel_led, sizeof(f->rel_led), "%s/rel-ledger.jsonl", f->b.dir);
    snprintf(f->err, sizeof(f->err), "%s/err.txt", f->b.dir);
    snprintf(f->cal_err, sizeof(f->cal_err), "%s/calibrate.log", f->b.dir);
    snprintf(f->out, sizeof(f->out), "%s/out.txt", f->b.dir);
    f->port = ts_free_port();
    snprintf(f->mport, sizeof(f->mport), "metrics.port=%d", f->port);
    const char *kg[] = {"ctl", "keygen", "--out", f->key, NULL};
    cr_assert_eq(run_gcdp(kg, NULL, NULL, 20000), 0);
    produce_windows(&f->b);
    off = (size_t)snprintf(text, sizeof(text), "a,b,c,d\n");
    for (int i = 0; i < 64; i++) {
        double v[4];
        window_values(i + 1, v);
        off += (size_t)snprintf(text + off, sizeof(text) - off, "%.3f,%.3f,%.3f,%.3f\n", v[0], v[1],
                                v[2], i % 7 == 3 ? 0.5 : v[3]);
    }
    snprintf(csv, sizeof(csv), "%s/public.csv", f->b.dir);
    ts_write_file(csv, text);
    const char *pub[] = {"calibrate",   "-i",        csv,     "--publish",
                         "-o",          "/dev/null", "--set", f->b.set_bootstrap,
                         "--log-level", "warn",      NULL};
    cr_assert_eq(run_gcdp(pub, NULL, f->err, 60000), 0, "%s", ts_read_file(f->err, NULL));
}

/* One release instance until idle (changelog on); cap: release.ledger.cap_eps=... */
static void release_run_cl(struct fx *f, const char *cap, const char *changelog)
{
    const char *rel[] = {"release",     "--serve", "--ledger",    f->rel_led,
                         "--exit-idle", "2",       "--set",       f->b.set_bootstrap,
                         "--set",       changelog, "--set",       "kafka.session.timeout.ms=3000",
                         "--set",       cap,       "--log-level", "warn",
                         NULL};
    cr_assert_eq(run_gcdp(rel, NULL, f->err, 90000), 0, "release: %s", ts_read_file(f->err, NULL));
}

static void release_run(struct fx *f, const char *cap)
{
    release_run_cl(f, cap, "release.service.changelog=true");
}

/* A release instance in the background (changelog on, metrics on port). */
static pid_t release_start(struct fx *f, const char *cap, const char *mport)
{
    const char *rel[] = {"release",     "--serve",
                         "--ledger",    f->rel_led,
                         "--exit-idle", "60",
                         "--set",       f->b.set_bootstrap,
                         "--set",       "release.service.changelog=true",
                         "--set",       "kafka.session.timeout.ms=3000",
                         "--set",       cap,
                         "--set",       mport,
                         "--log-level", "warn",
                         NULL};
    return ts_spawn(rel, NULL, f->err);
}

static pid_t calibrate_start(struct fx *f, const char *cap)
{
    const char *cal[] = {"calibrate",
                         "--serve",
                         "--exit-after",
                         "40",
                         "--set",
                         f->b.set_bootstrap,
                         "--set",
                         f->setkey,
                         "--set",
                         f->mport,
                         "--set",
                         "calibrate.mode=private",
                         "--set",
                         "calibrate.eps_G=1",
                         "--set",
                         "calibrate.eps_xi=0.5",
                         "--set",
                         f->set_cal_led,
                         "--set",
                         "calibrate.service.private_span_s=" SPAN_S,
                         "--set",
                         "calibrate.service.min_interval_s=0",
                         "--set",
                         cap,
                         "--set",
                         "kafka.session.timeout.ms=3000",
                         "--log-level",
                         "info",
                         NULL};
    return ts_spawn(cal, NULL, f->cal_err);
}

/* Until the service has read gcdp.calibration (version gauge >= v) and its control
 * listener could join. */
static void wait_ready(struct fx *f, int64_t v)
{
    int64_t t0 = ts_now_ms();
    while (ts_metric(f->port, "gcdp_calibrate_theta_version") < v && ts_now_ms() - t0 < 20000)
        ts_sleep_ms(100);
    cr_assert_geq(ts_metric(f->port, "gcdp_calibrate_theta_version"), v, "%s",
                  ts_read_file(f->cal_err, NULL));
    ts_sleep_ms(3000);
}

/* gcdp ctl recalibrate; returns the reply's status object (new reference). */
static json_t *recalibrate(struct fx *f)
{
    const char *rc[] = {"ctl",       "recalibrate", "--target", "calibrate",        "--reason",
                        "test span", "--key",       f->key,     "--wait",           "25",
                        "--count",   "1",           "--set",    f->b.set_bootstrap, "--log-level",
                        "warn",      NULL};
    cr_assert_eq(run_gcdp(rc, f->out, f->err, 60000), 0, "ctl: %s\ncalibrate: %s",
                 ts_read_file(f->err, NULL), ts_read_file(f->cal_err, NULL));
    char *text = ts_read_file(f->out, NULL);
    json_t *r = json_loads(text ? text : "", 0, NULL);
    cr_assert_not_null(r, "no reply: %s / %s", text, ts_read_file(f->cal_err, NULL));
    json_t *st = json_incref(json_object_get(r, "status"));
    json_decref(r);
    free(text);
    return st;
}

static json_t *thetas(struct fx *f)
{
    json_t *a = ts_topic_json(f->b.bootstrap, "gcdp.calibration");
    json_t *o = ts_json_sorted_by(a, "version");
    json_decref(a);
    return o;
}

/* Expected units of the span (rule of cal/span.h with the defaults: lateness 1 h, slot and
 * period 60 s, time radius 0 -> widen 30 s; every window 15 min). */
static json_t *expected_units(void)
{
    int64_t newest = T0 + N_WIN * WIN_MS, widen = 30000, slot = 60000;
    int64_t t1 = newest - 3600000 - widen - slot, t0 = t1 - 14400000LL;
    json_t *u = json_object();
    char name[64];

    for (int i = 0; i < N_WIN; i++) {
        int64_t s = T0 + i * WIN_MS;
        if (s < t0 || s + WIN_MS > t1)
            continue;
        for (int64_t k = (s - widen) / slot; k <= (s + WIN_MS - 1 + widen) / slot; k++) {
            snprintf(name, sizeof(name), "room1|%" PRId64, k);
            json_object_set_new(u, name, json_true());
        }
    }
    return u;
}

/* Rows of a JSONL ledger (header skipped) whose id starts with prefix. */
static json_t *ledger_rows(const char *path, const char *prefix)
{
    char *text = ts_read_file(path, NULL), *save = NULL;
    json_t *rows = json_array();
    cr_assert_not_null(text, "%s", path);
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_t *r = json_loads(line, 0, NULL);
        const char *id = jstr(r, "id");
        if (id && strncmp(id, prefix, strlen(prefix)) == 0)
            json_array_append(rows, r);
        json_decref(r);
    }
    free(text);
    return rows;
}

static void assert_no_canary(const char *what, const char *text)
{
    cr_assert(!text || !strstr(text, "3141592653"), "the canary leaked into %s", what);
}

/* Per unit totals of `gcdp ledger --json` (unit -> eps). */
static json_t *ledger_totals(struct fx *f, const char *path)
{
    const char *args[] = {"ledger", "--ledger", path, "--json", NULL};
    cr_assert_eq(run_gcdp(args, f->out, f->err, 30000), 0, "%s", ts_read_file(f->err, NULL));
    char *text = ts_read_file(f->out, NULL), *save = NULL;
    json_t *tot = json_object();
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_t *r = json_loads(line, 0, NULL);
        if (jstr(r, "unit"))
            json_object_set_new(tot, jstr(r, "unit"),
                                json_real(json_number_value(json_object_get(r, "eps"))));
        json_decref(r);
    }
    free(text);
    return tot;
}

Test(calibrate_private, command_charges_the_span_and_release_restores_it, .timeout = 150)
{
    struct fx f;
    char rmport[64];
    int rport = ts_free_port();
    fx_start(&f);
    snprintf(rmport, sizeof(rmport), "metrics.port=%d", rport);
    pid_t rel = release_start(&f, "release.ledger.cap_eps=10", rmport);
    int64_t t0 = ts_now_ms();
    while (ts_metric(rport, "gcdp_release_consumed_total") < N_WIN && ts_now_ms() - t0 < 30000)
        ts_sleep_ms(100);
    cr_assert_eq(ts_metric(rport, "gcdp_release_consumed_total"), N_WIN);
    ts_sleep_ms(1500); /* offsets committed (every 500 ms once the outputs are acknowledged) */
    json_t *ths = thetas(&f);
    cr_assert_eq(json_array_size(ths), 1u);
    int64_t v1 = json_integer_value(json_object_get(json_array_get(ths, 0), "version"));
    json_decref(ths);
    json_t *rel_before = ledger_rows(f.rel_led, "calibrate|");
    cr_assert_eq(json_array_size(rel_before), 0u);
    json_decref(rel_before);

    pid_t cal = calibrate_start(&f, "release.ledger.cap_eps=10");
    wait_ready(&f, v1);
    json_t *st = recalibrate(&f);
    cr_assert_str_eq(jstr(st, "recalibrate"), "made", "%s", ts_read_file(f.cal_err, NULL));
    char *metrics = ts_http_get(f.port, "/metrics", &(int){0});
    json_decref(st);
    kill(cal, SIGTERM);
    cr_assert_eq(ts_wait(cal, 30000), 0);

    /* the running release instance takes the private θ in use after restoring its
     * partitions again: the calibrate row is in its ledger before it could charge under it */
    ths = thetas(&f);
    int64_t vp = json_integer_value(json_object_get(json_array_get(ths, 1), "version"));
    json_decref(ths);
    t0 = ts_now_ms();
    while (ts_metric(rport, "gcdp_release_theta_version") < vp && ts_now_ms() - t0 < 15000)
        ts_sleep_ms(100);
    cr_assert_eq(ts_metric(rport, "gcdp_release_theta_version"), vp);
    json_t *rel_swap = ledger_rows(f.rel_led, "calibrate|");
    cr_assert_eq(json_array_size(rel_swap), 1u, "the running release did not restore the row");
    json_decref(rel_swap);
    kill(rel, SIGTERM);
    cr_assert_eq(ts_wait(rel, 30000), 0, "%s", ts_read_file(f.err, NULL));

    /* θ: private, reason command, version above v1 */
    ths = thetas(&f);
    cr_assert_eq(json_array_size(ths), 2u);
    json_t *t2 = json_array_get(ths, 1);
    int64_t v2 = json_integer_value(json_object_get(t2, "version"));
    cr_assert_gt(v2, v1);
    cr_assert_str_eq(jstr(t2, "reason"), "command");
    cr_assert_str_eq(jstr(t2, "mode"), "private");
    cr_assert_eq(json_integer_value(json_object_get(t2, "n_cal")), 15); /* windows of the span */

    /* the calibrate ledger: one head row, eps 1.5, exactly the span's units */
    char hid[64];
    snprintf(hid, sizeof(hid), "calibrate|%" PRId64, v2);
    json_t *rows = ledger_rows(f.cal_led, "calibrate|");
    cr_assert_eq(json_array_size(rows), 1u);
    json_t *row = json_array_get(rows, 0), *want = expected_units(), *u;
    size_t i;
    cr_assert_str_eq(jstr(row, "id"), hid);
    cr_assert_float_eq(json_number_value(json_object_get(row, "eps")), 1.5, 1e-12);
    cr_assert_eq(json_array_size(json_object_get(row, "units")), json_object_size(want),
                 "%zu units charged, the span has %zu",
                 json_array_size(json_object_get(row, "units")), json_object_size(want));
    json_array_foreach(json_object_get(row, "units"), i, u)
        cr_assert_not_null(json_object_get(want, json_string_value(u)),
                           "unit %s is not in the span", json_string_value(u));

    /* the row is on the changelog, key = its id, at room1's partition */
    struct ts_record *rec, *wrec;
    size_t n = ts_topic_read(f.b.bootstrap, "gcdp.ledger.changelog", &rec), hits = 0;
    size_t nw = ts_topic_read(f.b.bootstrap, "gcdp.windows", &wrec);
    for (size_t k = 0; k < n; k++)
        if (rec[k].key && strcmp(rec[k].key, hid) == 0) {
            hits++;
            cr_assert_eq(rec[k].partition, wrec[0].partition);
        }
    cr_assert_eq(hits, 1u);
    ts_records_free(rec, n);
    ts_records_free(wrec, nw);

    /* a restarted release restores it: its totals on the span's units = eps_rel + eps_cal */
    release_run(&f, "release.ledger.cap_eps=10");
    json_t *tot = ledger_totals(&f, f.rel_led), *relrows = ledger_rows(f.rel_led, "room1|");
    const char *name;
    json_t *tv;
    size_t checked = 0;
    json_object_foreach(want, name, tv)
    {
        double eps_rel = 0;
        json_t *r;
        size_t j;
        json_array_foreach(relrows, j, r)
        {
            json_t *uu;
            size_t q;
            json_array_foreach(json_object_get(r, "units"), q, uu) eps_rel +=
                strcmp(json_string_value(uu), name) == 0
                    ? json_number_value(json_object_get(r, "eps"))
                    : 0.0;
        }
        cr_assert_float_eq(json_number_value(json_object_get(tot, name)), eps_rel + 1.5, 1e-9,
                           "unit %s: release ledger total", name);
        checked += eps_rel > 0;
    }
    cr_assert_gt(checked, 0u, "no span unit was charged by release");

    /* canary: never on public topics, in the logs or on /metrics */
    for (const char *const *t =
             (const char *const[]){"gcdp.calibration", "gcdp.status", "gcdp.released", NULL};
         *t; t++) {
        n = ts_topic_read(f.b.bootstrap, *t, &rec);
        for (size_t k = 0; k < n; k++)
            assert_no_canary(*t, rec[k].value);
        ts_records_free(rec, n);
    }
    char *log_cal = ts_read_file(f.cal_err, NULL), *log_rel = ts_read_file(f.err, NULL);
    assert_no_canary("the calibrate log", log_cal);
    assert_no_canary("the release log", log_rel);
    cr_assert_not_null(log_cal);
    cr_assert(strstr(log_cal, "private theta version"), "the calibrate log is not the one "
                                                        "searched");
    free(log_cal);
    free(log_rel);
    assert_no_canary("/metrics", metrics);
    cr_log_info("private version %" PRId64 ": %zu units, %zu with a release charge", v2,
                json_object_size(want), checked);
    free(metrics);
    json_decref(tot);
    json_decref(relrows);
    json_decref(want);
    json_decref(rows);
    json_decref(ths);
    ts_broker_stop(&f.b);
}

Test(calibrate_private, cap_refusal_is_reported_and_charges_nothing, .timeout = 120)
{
    struct fx f;
    fx_start(&f);
    release_run(&f, "release.ledger.cap_eps=2");
    json_t *ths = thetas(&f);
    int64_t v1 = json_integer_value(json_object_get(json_array_get(ths, 0), "version"));
    json_decref(ths);

    pid_t cal = calibrate_start(&f, "release.ledger.cap_eps=2");
    wait_ready(&f, v1);
    json_t *st = recalibrate(&f);
    cr_assert_str_eq(jstr(st, "recalibrate"), "refused", "%s", ts_read_file(f.cal_err, NULL));
    int64_t t0 = ts_now_ms();
    while (ts_metric(f.port, "gcdp_calibrate_refusals_total{reason=\"budget\"}") < 1 &&
           ts_now_ms() - t0 < 5000)
        ts_sleep_ms(100);
    cr_assert_eq(ts_metric(f.port, "gcdp_calibrate_refusals_total{reason=\"budget\"}"), 1);
    cr_assert_eq(ts_metric(f.port, "gcdp_calibrate_versions_total{reason=\"command\"}"), 0);
    json_decref(st);
    kill(cal, SIGTERM);
    cr_assert_eq(ts_wait(cal, 30000), 0);

    ths = thetas(&f);
    cr_assert_eq(json_array_size(ths), 1u, "a refused recalibration published a theta");
    json_t *rows = ledger_rows(f.cal_led, "calibrate|");
    cr_assert_eq(json_array_size(rows), 0u, "a refused recalibration left a ledger row");
    json_t *adopted = ledger_rows(f.cal_led, "room1|");
    cr_assert_gt(json_array_size(adopted), 0u, "release's rows were not adopted");
    /* the unsolicited status record names the refusal, without units or values */
    json_t *sts = ts_topic_json(f.b.bootstrap, "gcdp.status"), *s;
    size_t i, budget = 0;
    json_array_foreach(sts, i, s)
    {
        json_t *body = json_object_get(s, "status");
        const char *rf = jstr(body, "refusal");
        if (rf && strcmp(rf, "budget") == 0 && json_is_null(json_object_get(s, "in_reply_to")))
            budget++;
        char *txt = json_dumps(s, JSON_COMPACT);
        cr_assert(!strstr(txt, "room1|"), "a unit on gcdp.status: %s", txt);
        free(txt);
    }
    cr_assert_eq(budget, 1u);
    json_decref(sts);
    json_decref(adopted);
    json_decref(rows);
    json_decref(ths);
    ts_broker_stop(&f.b);
}

/* Release ran without the changelog (a misconfiguration): its charges cannot be adopted, so
 * the recalibration is refused (changelog), counted, and nothing is charged. */
Test(calibrate_private, release_without_changelog_is_refused, .timeout = 90)
{
    struct fx f;
    fx_start(&f);
    release_run_cl(&f, "release.ledger.cap_eps=10", "release.service.changelog=false");
    json_t *ths = thetas(&f);
    int64_t v1 = json_integer_value(json_object_get(json_array_get(ths, 0), "version"));
    json_decref(ths);
    pid_t cal = calibrate_start(&f, "release.ledger.cap_eps=10");
    wait_ready(&f, v1);
    json_t *st = recalibrate(&f);
    cr_assert_str_eq(jstr(st, "recalibrate"), "refused", "%s", ts_read_file(f.cal_err, NULL));
    cr_assert_eq(ts_metric(f.port, "gcdp_calibrate_refusals_total{reason=\"changelog\"}"), 1);
    json_decref(st);
    kill(cal, SIGTERM);
    cr_assert_eq(ts_wait(cal, 30000), 0);
    ths = thetas(&f);
    cr_assert_eq(json_array_size(ths), 1u, "a refused recalibration published a theta");
    json_t *rows = ledger_rows(f.cal_led, "calibrate|");
    cr_assert_eq(json_array_size(rows), 0u);
    json_decref(rows);
    json_decref(ths);
    ts_broker_stop(&f.b);
}

/* Commit a private version into the ledger as the service does, without publishing it. */
static char *commit_unpublished(const char *path, uint64_t version, size_t *len)
{
    struct core_dp_ledger_opts lop = {path, {10, 0, 1e-5}, 0, {60000, 0, 60000}};
    struct core_dp_ledger *l = NULL;
    struct cal_matrix *mx = NULL;
    struct cal_opts o;
    struct cal_charged ch;
    static const char *const dev[] = {"room1"};
    struct cal_ledger_opts lo = {dev, 1, 60000, 30000, {10, 0, 1e-5}, WIN_MS};
    const char *names[4] = {"a", "b", "c", "d"};
    double x[16 * 4];
    int64_t ts[16];
    char eb[1024] = "";

    for (int i = 0; i < 16; i++) {
        window_values(i, x + 4 * i);
        ts[i] = T0 + i * WIN_MS;
    }
    cr_assert_eq(core_dp_ledger_open(&lop, &l, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(cal_matrix_from_arrays(16, 4, x, names, NULL, 0, &mx), CORE_OK);
    cal_matrix_set_ts(mx, ts);
    cal_opts_default(&o);
    o.mode = CAL_MODE_PRIVATE;
    o.eps.G = 1;
    o.eps.xi = 0.5;
    o.version = version;
    snprintf(o.reason, sizeof(o.reason), "command");
    cr_assert_eq(
        cal_calibrate_charged(l, mx, &o, &lo, "windows:span", core_rng_os(), &ch, eb, sizeof(eb)),
        CORE_OK, "%s", eb);
    char *bytes = strdup(ch.bytes);
    *len = ch.len;
    cal_charged_cleanup(&ch);
    cal_matrix_free(mx);
    core_dp_ledger_free(l);
    return bytes;
}

Test(calibrate_private, committed_theta_is_republished_not_renoised, .timeout = 90)
{
    struct fx f;
    size_t len = 0;
    fx_start(&f); /* public v1 on the topic */
    json_t *ths = thetas(&f);
    int64_t v1 = json_integer_value(json_object_get(json_array_get(ths, 0), "version"));
    json_decref(ths);
    uint64_t v2 = (uint64_t)v1 + 1000;
    char *stored = commit_unpublished(f.cal_led, v2, &len);
    size_t led_len = 0;
    char *led_before = ts_read_file(f.cal_led, &led_len);

    pid_t cal = calibrate_start(&f, "release.ledger.cap_eps=10");
    wait_ready(&f, (int64_t)v2);
    /* no release instance ever committed an offset: a recalibration is refused before
     * anything is charged (release_behind) */
    json_t *st = recalibrate(&f);
    cr_assert_str_eq(jstr(st, "recalibrate"), "refused", "%s", ts_read_file(f.cal_err, NULL));
    cr_assert_eq(ts_metric(f.port, "gcdp_calibrate_refusals_total{reason=\"release_behind\"}"), 1);
    json_decref(st);
    kill(cal, SIGTERM);
    cr_assert_eq(ts_wait(cal, 30000), 0);

    struct ts_record *rec;
    char key[32], hid[64];
    size_t n = ts_topic_read(f.b.bootstrap, "gcdp.calibration", &rec), same = 0;
    snprintf(key, sizeof(key), "%" PRIu64, v2);
    for (size_t k = 0; k < n; k++)
        if (rec[k].key && strcmp(rec[k].key, key) == 0) {
            cr_assert_eq(rec[k].value_len, len);
            cr_assert_eq(memcmp(rec[k].value, stored, len), 0, "republished other bytes");
            same++;
        }
    cr_assert_eq(same, 1u, "the committed theta was not republished once: %s",
                 ts_read_file(f.cal_err, NULL));
    ts_records_free(rec, n);
    snprintf(hid, sizeof(hid), "calibrate|%" PRIu64, v2);
    n = ts_topic_read(f.b.bootstrap, "gcdp.ledger.changelog", &rec);
    same = 0;
    for (size_t k = 0; k < n; k++)
        same += rec[k].key && strcmp(rec[k].key, hid) == 0;
    cr_assert_geq(same, 1u, "the row is not on the changelog");
    ts_records_free(rec, n);
    size_t led_after_len = 0;
    char *led_after = ts_read_file(f.cal_led, &led_after_len);
    cr_assert_eq(led_after_len, led_len, "the ledger changed: re-noised or charged again");
    cr_assert_eq(memcmp(led_after, led_before, led_len), 0);
    free(led_after);
    free(led_before);
    free(stored);
    ts_broker_stop(&f.b);
}
