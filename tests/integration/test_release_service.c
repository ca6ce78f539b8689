/* test_release_service.c - the live privacy path over the embedded broker: replay UCI
 * Occupancy -> ingest -> calibrate --serve (public, datatest.txt) -> release --serve, and
 * the release service killed with SIGKILL at random points and restarted.
 *
 * What is checked, as a consumer of the public topics can tell:
 *   - every non-excluded window ingest produced is released or dead-lettered with a reason,
 *     none missing; copies of one release id (replays after a crash) are byte-identical;
 *   - each released record names the θ version in use and carries per coordinate its value
 *     and noise scale; the ledger holds at least every distinct release that was published.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "broker.h"
#include "test_support.h"

/* Each trial waits for the killed member's session to expire (3 s here: the mock has no
 * minimum) and a rejoin: ~6.5 s. 20 in the release build; 5 under the sanitizers (same code
 * path, the suite's time budget). */
#if defined(__SANITIZE_ADDRESS__)
#define CRASH_TRIALS 5
#else
#define CRASH_TRIALS 20
#endif

#define OCC_TRAIN GCDP_DATA_DIR "/occupancy/datatraining.txt"
#define OCC_TEST  GCDP_DATA_DIR "/occupancy/datatest.txt"

static int run_gcdp(const char *const *args, const char *out, const char *err, int timeout_ms)
{
    return ts_wait(ts_spawn(args, out, err), timeout_ms);
}

/* Replay Occupancy and ingest it: gcdp.windows holds the window records (15-minute
 * windows every hop_ms; one device, so one partition: at most ~5 MiB of records there). */
static void make_windows(struct ts_broker *b, const char *err, const char *hop_ms)
{
    char hop[64];
    snprintf(hop, sizeof(hop), "ingest.window.hop_ms=%s", hop_ms);
    const char *replay[] = {"replay",         "--file",      OCC_TRAIN, "--set",
                            b->set_bootstrap, "--log-level", "warn",    NULL};
    const char *ingest[] = {"ingest",      "--exit-idle",
                            "3",           "--flush-on-idle",
                            "--set",       b->set_bootstrap,
                            "--set",       "ingest.idle_timeout_ms=0",
                            "--set",       hop,
                            "--log-level", "warn",
                            NULL};
    cr_assert_eq(run_gcdp(replay, NULL, err, 60000), 0, "replay failed");
    cr_assert_eq(run_gcdp(ingest, NULL, err, 120000), 0, "ingest failed");
}

static const char *jstr(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* Window ids of gcdp.windows that are not excluded (a JSON object id -> true). */
static json_t *window_ids(const char *bootstrap, size_t *n_excluded)
{
    struct ts_record *rec;
    size_t n = ts_topic_read(bootstrap, "gcdp.windows", &rec);
    json_t *ids = json_object();

    *n_excluded = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *w = json_loads(rec[i].value, 0, NULL);
        cr_assert_not_null(w);
        if (json_is_true(json_object_get(w, "excluded")))
            (*n_excluded)++;
        else
            json_object_set_new(ids, jstr(w, "id"), json_true());
        json_decref(w);
    }
    ts_records_free(rec, n);
    return ids;
}

/* Validate one record against schemas/<schema> (python3-jsonschema, Draft 2020-12). */
static void schema_valid(const char *json, const char *schema)
{
    char path[512], cmd[2048];
    FILE *f;

    snprintf(path, sizeof(path), "/tmp/gcdp-schema-%d.json", (int)getpid());
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(json, f);
    fclose(f);
    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 -c 'import json,sys,jsonschema; "
             "jsonschema.Draft202012Validator(json.load(open(sys.argv[1]))).validate("
             "json.load(open(sys.argv[2])))' %s/schemas/%s %s",
             GCDP_SOURCE_DIR, schema, path);
    cr_assert_eq(system(cmd), 0, "%s does not validate against %s", json, schema);
    unlink(path);
}

struct outcome {
    json_t *released; /* window id -> bytes (first copy) */
    json_t *refused;  /* window id -> reason */
    size_t copies, differing, versions_bad;
};

/* Read gcdp.released and gcdp.windows.rejected; copies of one release id must be equal. */
static void read_outcome(const char *bootstrap, uint64_t want_version, struct outcome *o)
{
    struct ts_record *rec;
    size_t n = ts_topic_read(bootstrap, "gcdp.released", &rec);

    memset(o, 0, sizeof(*o));
    o->released = json_object();
    o->refused = json_object();
    for (size_t i = 0; i < n; i++) {
        json_t *r = json_loads(rec[i].value, 0, NULL), *have;
        const char *rid, *at;
        char wid[256];
        cr_assert_not_null(r, "released record is not JSON");
        cr_assert_str_eq(jstr(r, "schema"), "gcdp.released/1");
        if (i == 0)
            schema_valid(rec[i].value, "released.schema.json");
        rid = jstr(r, "release_id");
        cr_assert_not_null(rid);
        at = strrchr(rid, '@');
        cr_assert_not_null(at);
        snprintf(wid, sizeof(wid), "%.*s", (int)(at - rid), rid);
        if (want_version &&
            (uint64_t)json_integer_value(json_object_get(r, "theta_version")) != want_version)
            o->versions_bad++;
        cr_assert_gt(json_object_size(json_object_get(r, "values")), 0u);
        cr_assert_eq(json_object_size(json_object_get(r, "values")),
                     json_object_size(json_object_get(r, "scale")));
        have = json_object_get(o->released, wid);
        o->copies++;
        if (have && strcmp(json_string_value(have), rec[i].value) != 0)
            o->differing++;
        if (!have)
            json_object_set_new(o->released, wid, json_string(rec[i].value));
        json_decref(r);
    }
    ts_records_free(rec, n);
    n = ts_topic_read(bootstrap, "gcdp.windows.rejected", &rec);
    for (size_t i = 0; i < n; i++) {
        if (i == 0)
            schema_valid(rec[i].value, "release_rejected.schema.json");
        json_t *r = json_loads(rec[i].value, 0, NULL);
        cr_assert_not_null(r);
        cr_assert_str_eq(jstr(r, "schema"), "gcdp.release_rejected/1");
        cr_assert_not_null(jstr(r, "reason"));
        cr_assert_not_null(jstr(r, "window_id"));
        json_object_set_new(o->refused, jstr(r, "window_id"), json_string(jstr(r, "reason")));
        json_decref(r);
    }
    ts_records_free(rec, n);
}

/* Every window id is released or refused; nothing else appears. */
static void check_complete(json_t *ids, const struct outcome *o)
{
    const char *id;
    json_t *v;

    json_object_foreach(ids, id, v)
    {
        (void)v;
        cr_assert(json_object_get(o->released, id) || json_object_get(o->refused, id),
                  "window %s neither released nor dead-lettered", id);
    }
    json_object_foreach(o->released, id, v)
    {
        (void)v;
        cr_assert_not_null(json_object_get(ids, id), "released %s is not an input window", id);
    }
    cr_assert_eq(o->differing, 0u, "%zu copies of a release differ from the first", o->differing);
}

static void outcome_free(struct outcome *o)
{
    json_decref(o->released);
    json_decref(o->refused);
}

static uint64_t theta_version_on_topic(const char *bootstrap)
{
    struct ts_record *rec;
    size_t n = ts_topic_read(bootstrap, "gcdp.calibration", &rec);
    uint64_t v = 0;

    cr_assert_eq(n, 1u, "%zu theta records", n);
    json_t *t = json_loads(rec[0].value, 0, NULL);
    cr_assert_not_null(t);
    cr_assert_str_eq(jstr(t, "reason"), "initial");
    v = (uint64_t)json_integer_value(json_object_get(t, "version"));
    json_decref(t);
    ts_records_free(rec, n);
    return v;
}

/* Canaries: strings that only protected data holds. The raw HumidityRatio readings of the
 * replayed file (>= 12 characters each) and every protected window value with 10 decimals
 * truncated to 10 decimals (released values are noisy; a chance match is ~1e-10 per
 * pair). */
static json_t *canaries(const char *bootstrap)
{
    json_t *c = json_object();
    char *text = ts_read_file(OCC_TRAIN, NULL), *line, *save = NULL, buf[64];
    struct ts_record *rec;
    size_t n;

    cr_assert_not_null(text);
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *last = strrchr(line, ','), *prev;
        if (!last)
            continue;
        *last = '\0';
        prev = strrchr(line, ',');
        if (prev && strlen(prev + 1) >= 12)
            json_object_set_new(c, prev + 1, json_true());
    }
    free(text);
    n = ts_topic_read(bootstrap, "gcdp.windows", &rec);
    for (size_t i = 0; i < n; i++) {
        json_t *w = json_loads(rec[i].value, 0, NULL), *v;
        const char *k;
        json_object_foreach(json_object_get(w, "nodes"), k, v)
        {
            double x = json_number_value(v);
            if (x > 1e-3 && x < 1 - 1e-3) {
                snprintf(buf, sizeof(buf), "%.15f", x);
                buf[12] = '\0'; /* "0." and 10 decimals, truncated, not rounded */
                json_object_set_new(c, buf, json_true());
            }
        }
        json_decref(w);
    }
    ts_records_free(rec, n);
    cr_assert_gt(json_object_size(c), 2000u);
    return c;
}

/* Fails the test when any canary occurs in text (what names where). */
static void no_leak(json_t *c, const char *text, const char *where)
{
    const char *k;
    json_t *v;

    cr_assert_not_null(text, "%s: nothing to read", where);
    json_object_foreach(c, k, v)
    {
        (void)v;
        cr_assert_null(strstr(text, k), "protected value %s appears in %s", k, where);
    }
}

static char *topic_text(const char *bootstrap, const char *topic)
{
    struct ts_record *rec;
    size_t n = ts_topic_read(bootstrap, topic, &rec), len = 1;
    char *t;

    for (size_t i = 0; i < n; i++)
        len += rec[i].value_len + 1;
    t = calloc(1, len);
    for (size_t i = 0; i < n; i++) {
        strcat(t, rec[i].value);
        strcat(t, "\n");
    }
    ts_records_free(rec, n);
    return t;
}

/* Read gcdp.released with kafka-python (Debian python3-kafka, not librdkafka) through
 * tools/consume_released.py; returns the number of records it read. */
static size_t python_consumer_count(const char *bootstrap, const char *dir)
{
    char cmd[2048], path[600];
    size_t n = 0;
    FILE *f;

    snprintf(path, sizeof(path), "%s/py.err", dir);
    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 %s/tools/consume_released.py %s --idle-s 5 "
             "--json > %s/py.out 2> %s",
             GCDP_SOURCE_DIR, bootstrap, dir, path);
    cr_assert_eq(system(cmd), 0, "the python3-kafka consumer failed: %s", ts_read_file(path, NULL));
    f = fopen(path, "r");
    cr_assert_not_null(f);
    cr_assert_eq(fscanf(f, "records %zu", &n), 1, "python consumer said: %s",
                 ts_read_file(path, NULL));
    fclose(f);
    return n;
}

/* The ledger's audit log is on gcdp.audit: its header and every row, in order, once (a clean
 * stop), keyed by release id; the summary counts them. */
static void check_audit_mirror(const char *bootstrap, const char *ledger, json_t *sum)
{
    struct ts_record *rec = NULL;
    size_t n = ts_topic_read(bootstrap, "gcdp.audit", &rec), i = 0;
    char *text = ts_read_file(ledger, NULL), *line, *save = NULL;
    cr_assert_not_null(text);
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save), i++) {
        cr_assert_lt(i, n, "gcdp.audit has %zu records, the audit log more lines", n);
        cr_assert_str_eq(rec[i].value, line,
                         "record %zu is not the audit log's line:\n%.300s\n%.300s", i, rec[i].value,
                         line);
        json_t *row = json_loads(line, 0, NULL);
        cr_assert_str_eq(rec[i].key, i == 0 ? "header" : jstr(row, "id"));
        json_decref(row);
    }
    cr_assert_eq(i, n, "gcdp.audit has %zu records for %zu audit lines", n, i);
    json_t *m = json_object_get(sum, "audit_mirror");
    cr_assert(json_is_true(json_object_get(m, "on")));
    cr_assert_eq(json_integer_value(json_object_get(m, "rows")), (json_int_t)n);
    cr_assert_eq(json_integer_value(json_object_get(m, "lag_bytes")), 0);
    ts_records_free(rec, n);
    free(text);
}

Test(release_service, occupancy_end_to_end_theta_from_the_calibrate_service, .timeout = 300)
{
    struct ts_broker b;
    struct outcome o;
    char err[600], cal_err[600], led[600], out[600], mport[64];
    size_t n_excl;
    uint64_t version;
    int port = ts_free_port();

    ts_broker_start(&b, NULL);
    snprintf(err, sizeof(err), "%s/err.txt", b.dir);
    snprintf(cal_err, sizeof(cal_err), "%s/cal.txt", b.dir);
    snprintf(led, sizeof(led), "%s/ledger.jsonl", b.dir);
    snprintf(out, sizeof(out), "%s/summary.json", b.dir);
    snprintf(mport, sizeof(mport), "metrics.port=%d", port);
    make_windows(&b, err, "0");
    const char *cal[] = {"calibrate",   "--serve",      "-i", OCC_TEST, "-f",
                         "occupancy",   "--exit-after", "5",  "--set",  b.set_bootstrap,
                         "--log-level", "debug",        NULL};
    cr_assert_eq(run_gcdp(cal, NULL, cal_err, 60000), 0, "calibrate --serve failed: %s",
                 ts_read_file(cal_err, NULL));
    version = theta_version_on_topic(b.bootstrap);
    const char *rel[] = {"release", "--serve", "--ledger",    led,     "--set", b.set_bootstrap,
                         "--set",   mport,     "--log-level", "debug", NULL};
    pid_t pid = ts_spawn(rel, out, err);
    json_t *ids = window_ids(b.bootstrap, &n_excl);
    int64_t t0 = ts_now_ms(), want = (int64_t)(json_object_size(ids) + n_excl), got = -1;
    char *metrics = NULL;
    int status = 0;
    while (got < want && ts_now_ms() - t0 < 90000) {
        ts_sleep_ms(200);
        free(metrics);
        metrics = ts_http_get(port, "/metrics", &status);
        got = metrics ? ts_prom_value(metrics, "gcdp_release_consumed_total") : -1;
    }
    ts_sleep_ms(1500); /* the last records' acknowledgements reach the counters */
    free(metrics);
    metrics = ts_http_get(port, "/metrics", &status);
    kill(pid, SIGTERM);
    cr_assert_eq(ts_wait(pid, 60000), 0, "release --serve failed: %s", ts_read_file(err, NULL));

    json_t *sum = json_load_file(out, 0, NULL);
    read_outcome(b.bootstrap, version, &o);
    check_complete(ids, &o);
    cr_assert_gt(json_object_size(o.released), 500u);
    cr_assert_eq(o.copies, json_object_size(o.released), "a window was released twice");
    cr_assert_eq(o.versions_bad, 0u);
    cr_assert_not_null(sum);
    cr_assert_eq(json_integer_value(json_object_get(sum, "released")),
                 (json_int_t)json_object_size(o.released));
    cr_assert_eq(json_integer_value(json_object_get(sum, "excluded")), (json_int_t)n_excl);
    cr_assert_eq(json_integer_value(json_object_get(sum, "dead_letters")),
                 (json_int_t)json_object_size(o.refused));
    cr_assert_eq(ts_prom_value(metrics, "gcdp_release_released_total"),
                 (int64_t)json_object_size(o.released));
    cr_assert_eq(python_consumer_count(b.bootstrap, b.dir), o.copies);
    check_audit_mirror(b.bootstrap, led, sum);

    /* leakage canary: nothing protected on a public topic, in a log line or in /metrics */
    json_t *c = canaries(b.bootstrap);
    char *t;
    no_leak(c, t = topic_text(b.bootstrap, "gcdp.released"), "gcdp.released");
    free(t);
    no_leak(c, t = topic_text(b.bootstrap, "gcdp.calibration"), "gcdp.calibration");
    free(t);
    no_leak(c, t = topic_text(b.bootstrap, "gcdp.status"), "gcdp.status");
    free(t);
    no_leak(c, t = topic_text(b.bootstrap, "gcdp.audit"), "gcdp.audit");
    free(t);
    no_leak(c, t = ts_read_file(err, NULL), "the release log (debug level)");
    free(t);
    no_leak(c, t = ts_read_file(cal_err, NULL), "the calibrate log (debug level)");
    free(t);
    no_leak(c, metrics, "/metrics");
    /* the canaries have teeth: the protected topic holds them */
    t = topic_text(b.bootstrap, "gcdp.windows");
    size_t found = 0;
    const char *k;
    json_t *v;
    json_object_foreach(c, k, v)
    {
        (void)v;
        found += strstr(t, k) != NULL;
    }
    free(t);
    cr_assert_gt(found, 1000u, "the canary search finds nothing even where it must");
    free(metrics);
    json_decref(c);
    json_decref(sum);
    json_decref(ids);
    outcome_free(&o);
    ts_broker_stop(&b);
}

/* Committed ledger rows whose release id is in released (the ledger must cover them all). */
static size_t ledger_covers(const char *ledger, json_t *released)
{
    char *text = ts_read_file(ledger, NULL), *line, *save = NULL;
    json_t *seen = json_object();
    size_t n;

    cr_assert_not_null(text);
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_t *row = json_loads(line, 0, NULL);
        const char *rid = row ? jstr(row, "id") : NULL;
        if (rid && strchr(rid, '@')) {
            char wid[256];
            snprintf(wid, sizeof(wid), "%.*s", (int)(strrchr(rid, '@') - rid), rid);
            if (json_object_get(released, wid))
                json_object_set_new(seen, wid, json_true());
        }
        json_decref(row);
    }
    n = json_object_size(seen);
    json_decref(seen);
    free(text);
    return n;
}

Test(release_service, sigkill_at_random_points_releases_each_window_once, .timeout = 600)
{
    struct ts_broker b;
    struct outcome o;
    char err[600], led[600], theta[600];
    size_t n_excl;
    unsigned seed = 20261201u;

    ts_broker_start(&b, NULL);
    snprintf(err, sizeof(err), "%s/err.txt", b.dir);
    snprintf(led, sizeof(led), "%s/ledger.jsonl", b.dir);
    snprintf(theta, sizeof(theta), "%s/theta.json", b.dir);
    make_windows(&b, err, "180000"); /* ~2700 overlapping windows: the kills land mid-run */
    const char *cal[] = {"calibrate", "-i",  OCC_TEST,      "-f",   "occupancy",
                         "-o",        theta, "--log-level", "warn", NULL};
    cr_assert_eq(run_gcdp(cal, NULL, err, 60000), 0);
    /* small group commits and a slow commit interval widen the window between the ledger
     * fsync, the produce and the offset commit, where a kill matters; the embedded broker
     * rebalances after a crash once the dead member's session expires (KAFKA.md §3.2), so a
     * 3 s session (the mock has no minimum) halves each trial */
    const char *rel[] = {"release",     "--serve",
                         "--theta",     theta,
                         "--ledger",    led,
                         "--set",       b.set_bootstrap,
                         "--set",       "release.ledger.batch=1",
                         "--set",       "kafka.session.timeout.ms=3000",
                         "--set",       "metrics.port=0",
                         "--log-level", "warn",
                         NULL};
    size_t n_rel = sizeof(rel) / sizeof(rel[0]);
    int kills_mid_run = 0;
    for (int trial = 0; trial < CRASH_TRIALS; trial++) {
        /* kill at a random point of real work: once this run has read a window (the group
         * join comes first), after a random 0-400 ms more; a run with nothing left to read
         * is killed after 12 s */
        int ms = (int)(rand_r(&seed) % 400u), port = ts_free_port();
        char mport[64], *body;
        snprintf(mport, sizeof(mport), "metrics.port=%d", port);
        rel[n_rel - 4] = mport; /* replaces metrics.port=0 */
        pid_t pid = ts_spawn(rel, NULL, err);
        int64_t t0 = ts_now_ms(), consumed = 0;
        while (consumed <= 0 && ts_now_ms() - t0 < 12000) {
            int status = 0;
            ts_sleep_ms(10);
            body = ts_http_get(port, "/metrics", &status);
            consumed = body ? ts_prom_value(body, "gcdp_release_consumed_total") : 0;
            free(body);
        }
        ts_sleep_ms(ms);
        kill(pid, SIGKILL);
        cr_assert_eq(ts_wait(pid, 30000), 128 + SIGKILL, "trial %d: not killed", trial);
        kills_mid_run += consumed > 0;
    }
    const char *fin[] = {"release",     "--serve",     "--theta", theta,   "--ledger",
                         led,           "--exit-idle", "3",       "--set", b.set_bootstrap,
                         "--log-level", "warn",        NULL};
    cr_assert_eq(run_gcdp(fin, NULL, err, 120000), 0, "final run failed: %s",
                 ts_read_file(err, NULL));

    json_t *ids = window_ids(b.bootstrap, &n_excl);
    read_outcome(b.bootstrap, 0, &o);
    check_complete(ids, &o);
    cr_assert_gt(json_object_size(o.released), 2500u);
    cr_assert_eq(ledger_covers(led, o.released), json_object_size(o.released),
                 "a published release has no ledger row");
    cr_log_info("%d SIGKILL trials (%d after the run had read windows): %zu windows "
                "released, %zu copies on the topic (byte-identical), %zu dead-lettered",
                CRASH_TRIALS, kills_mid_run, json_object_size(o.released), o.copies,
                json_object_size(o.refused));
    cr_assert_gt(o.copies, json_object_size(o.released),
                 "no kill landed between a release and its offset commit: the test proved "
                 "nothing");
    json_decref(ids);
    outcome_free(&o);
    ts_broker_stop(&b);
}
