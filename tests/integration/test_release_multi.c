/* test_release_multi.c - several `gcdp release --serve` processes in one consumer group, the
 * ledger rows following their partitions through topics.ledger_changelog (issue 12).
 *
 * two_instances_forced_rebalance: UCI Occupancy replayed as 8 devices (spread over the
 * embedded broker's 4 partitions) -> ingest -> gcdp.windows; θ from a file. Instance A
 * (JSONL ledger) starts; B (store back end, its own directory) joins once A has released
 * windows (rebalance: A revokes, B restores the partitions it gets); A is SIGKILLed
 * mid-stream; C (a fresh, empty ledger directory) joins; B and C run until idle. Then, as
 * a consumer and an auditor can tell:
 *   - every non-excluded window is released (or dead-lettered with a reason);
 *   - every copy of a window on gcdp.released is byte-identical (no window re-noised by
 *     another instance), and some windows were republished from adopted rows;
 *   - every published release has its ledger row on the changelog, at the partition number
 *     of its window, key = release id, and in the union of the three ledgers;
 *   - no charge lost: for every unit, the largest total over the instances' ledgers is at
 *     least the sum of the eps of the distinct published releases that charge it.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "broker.h"
#include "core/config.h"
#include "core/kafka.h"
#include "core/kconf.h"
#include "core/ksync.h"
#include "test_support.h"

#define OCC_TRAIN GCDP_DATA_DIR "/occupancy/datatraining.txt"
#define OCC_TEST  GCDP_DATA_DIR "/occupancy/datatest.txt"
#define N_DEVICES 6

static int run_gcdp(const char *const *args, const char *err, int timeout_ms)
{
    return ts_wait(ts_spawn(args, NULL, err), timeout_ms);
}

static const char *jstr(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* Wait until instance (metrics port) has consumed at least n windows; its value. */
static int64_t wait_consumed(int port, int64_t n, int timeout_ms)
{
    int64_t t0 = ts_now_ms(), v = -1;
    while ((v = ts_metric(port, "gcdp_release_consumed_total")) < n &&
           ts_now_ms() - t0 < timeout_ms)
        ts_sleep_ms(50);
    return v;
}

/* window id -> partition (non-excluded windows); *parts: partitions holding windows. */
static json_t *window_partitions(const char *bootstrap, size_t *parts)
{
    struct ts_record *rec;
    size_t n = ts_topic_read(bootstrap, "gcdp.windows", &rec);
    json_t *ids = json_object();
    unsigned seen = 0;

    for (size_t i = 0; i < n; i++) {
        json_t *w = json_loads(rec[i].value, 0, NULL);
        cr_assert_not_null(w);
        if (!json_is_true(json_object_get(w, "excluded")))
            json_object_set_new(ids, jstr(w, "id"), json_integer(rec[i].partition));
        seen |= 1u << (rec[i].partition & 31);
        json_decref(w);
    }
    ts_records_free(rec, n);
    *parts = (size_t)__builtin_popcount(seen);
    return ids;
}

static void window_of(const char *rid, char *wid, size_t n)
{
    const char *at = strrchr(rid, '@');
    cr_assert_not_null(at, "release id %s", rid);
    snprintf(wid, n, "%.*s", (int)(at - rid), rid);
}

/* gcdp.released: release id -> record text (first copy); *copies, *differing. */
static json_t *published(const char *bootstrap, size_t *copies, size_t *differing)
{
    struct ts_record *rec;
    size_t n = ts_topic_read(bootstrap, "gcdp.released", &rec);
    json_t *out = json_object();

    *copies = n;
    *differing = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *r = json_loads(rec[i].value, 0, NULL), *have;
        cr_assert_not_null(r);
        const char *rid = jstr(r, "release_id");
        cr_assert_not_null(rid);
        have = json_object_get(out, rid);
        if (have && strcmp(json_string_value(have), rec[i].value) != 0)
            (*differing)++;
        if (!have)
            json_object_set_new(out, rid, json_string(rec[i].value));
        json_decref(r);
    }
    ts_records_free(rec, n);
    return out;
}

/* Window ids dead-lettered on gcdp.windows.rejected (with a reason). */
static json_t *refused_windows(const char *bootstrap)
{
    struct ts_record *rec;
    size_t n = ts_topic_read(bootstrap, "gcdp.windows.rejected", &rec);
    json_t *ids = json_object();

    for (size_t i = 0; i < n; i++) {
        json_t *r = json_loads(rec[i].value, 0, NULL);
        cr_assert_not_null(r);
        cr_assert_not_null(jstr(r, "reason"));
        if (jstr(r, "window_id"))
            json_object_set_new(ids, jstr(r, "window_id"), json_true());
        json_decref(r);
    }
    ts_records_free(rec, n);
    return ids;
}

/* Every published release has its row on the changelog, at its window's partition, with
 * the published bytes. */
static void check_changelog(const char *bootstrap, json_t *pub, json_t *parts)
{
    struct ts_record *rec;
    size_t n = ts_topic_read(bootstrap, "gcdp.ledger.changelog", &rec);
    json_t *rows = json_object();
    const char *rid;
    json_t *v;

    for (size_t i = 0; i < n; i++) {
        json_t *row = json_loads(rec[i].value, 0, NULL);
        char wid[256];
        cr_assert_not_null(row, "a changelog record is not a ledger row");
        cr_assert_str_eq(rec[i].key, jstr(row, "id"), "key = release id");
        window_of(jstr(row, "id"), wid, sizeof(wid));
        cr_assert_eq(json_integer_value(json_object_get(parts, wid)), rec[i].partition,
                     "row of %s not on its window's partition", jstr(row, "id"));
        json_object_set(rows, jstr(row, "id"), json_object_get(row, "out"));
        json_decref(row);
    }
    ts_records_free(rec, n);
    json_object_foreach(pub, rid, v)
    {
        cr_assert_not_null(json_object_get(rows, rid), "published %s has no changelog row", rid);
    }
    json_decref(rows);
}

/* Rows of a ledger file (JSONL or a store's audit log): release id -> row. */
static json_t *ledger_rows(const char *path)
{
    char *text = ts_read_file(path, NULL), *line, *save = NULL;
    json_t *rows = json_object();

    if (!text)
        return rows; /* an instance that never got a window has no rows */
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_t *row = json_loads(line, 0, NULL);
        if (row && jstr(row, "id"))
            json_object_set(rows, jstr(row, "id"), row);
        json_decref(row);
    }
    free(text);
    return rows;
}

/* unit -> summed eps of rows (all rows, or only those whose id is in only). */
static json_t *unit_totals(json_t *rows, json_t *only)
{
    json_t *tot = json_object(), *row, *u;
    const char *rid;
    size_t i;

    json_object_foreach(rows, rid, row)
    {
        if (only && !json_object_get(only, rid))
            continue;
        double eps = json_number_value(json_object_get(row, "eps"));
        json_array_foreach(json_object_get(row, "units"), i, u)
        {
            const char *name = json_string_value(u);
            double have = json_number_value(json_object_get(tot, name));
            json_object_set_new(tot, name, json_real(have + eps));
        }
    }
    return tot;
}

/* No charge lost: the union covers every published release; for every unit the largest
 * instance total >= the eps of the distinct published releases charging it. */
static size_t check_ledgers(json_t *pub, json_t *const *rows, size_t n_inst)
{
    json_t *uni = json_object(), *need, *tot[3], *v;
    const char *k;
    size_t units = 0;

    for (size_t i = 0; i < n_inst; i++) {
        json_object_update_missing(uni, rows[i]);
        tot[i] = unit_totals(rows[i], NULL);
    }
    json_object_foreach(pub, k, v)
    {
        cr_assert_not_null(json_object_get(uni, k), "published %s is in no ledger", k);
    }
    need = unit_totals(uni, pub);
    json_object_foreach(need, k, v)
    {
        double best = 0;
        for (size_t i = 0; i < n_inst; i++) {
            double t = json_number_value(json_object_get(tot[i], k));
            best = t > best ? t : best;
        }
        cr_assert(best >= json_number_value(v) * (1 - 1e-9),
                  "unit %s: published releases charge eps %.6f, the best ledger has %.6f", k,
                  json_number_value(v), best);
        units++;
    }
    for (size_t i = 0; i < n_inst; i++)
        json_decref(tot[i]);
    json_decref(need);
    json_decref(uni);
    return units;
}

static json_t *summary(const char *path)
{
    json_t *s = json_load_file(path, 0, NULL);
    cr_assert_not_null(s, "no summary in %s", path);
    return s;
}

static json_int_t sget(const json_t *s, const char *k)
{
    return json_integer_value(json_object_get(s, k));
}

struct inst {
    char dir[600], ledger[700], out[700], err[700], mport[64], store[720];
    int port;
    pid_t pid;
};

static void inst_init(struct inst *in, const struct ts_broker *b, const char *name)
{
    snprintf(in->dir, sizeof(in->dir), "%s/%s", b->dir, name);
    cr_assert_eq(mkdir(in->dir, 0700), 0);
    snprintf(in->ledger, sizeof(in->ledger), "%s/ledger.jsonl", in->dir);
    snprintf(in->out, sizeof(in->out), "%s/summary.json", in->dir);
    snprintf(in->err, sizeof(in->err), "%s/err.txt", in->dir);
    snprintf(in->store, sizeof(in->store), "release.ledger.store=%s/ledger.db", in->dir);
    in->port = ts_free_port();
    snprintf(in->mport, sizeof(in->mport), "metrics.port=%d", in->port);
}

static void inst_start(struct inst *in, const struct ts_broker *b, const char *theta, bool store)
{
    const char *args[] = {"release",     "--serve",
                          "--theta",     theta,
                          "--ledger",    in->ledger,
                          "--exit-idle", "5",
                          "--set",       b->set_bootstrap,
                          "--set",       "release.ledger.batch=1",
                          "--set",       "kafka.session.timeout.ms=3000",
                          "--set",       in->mport,
                          "--log-level", "info",
                          "--set",       "release.service.changelog=true",
                          "--set",       store ? in->store : "release.ledger.batch=1",
                          NULL};
    in->pid = ts_spawn(args, in->out, in->err);
}

static void make_windows_from(struct ts_broker *b, const char *err, const char *file, int n_devices)
{
    for (int d = 0; d < n_devices; d++) {
        char dev[32];
        snprintf(dev, sizeof(dev), "room-%d", d);
        const char *replay[] = {"replay", "--file",         file,          "--device", dev,
                                "--set",  b->set_bootstrap, "--log-level", "warn",     NULL};
        cr_assert_eq(run_gcdp(replay, err, 60000), 0, "replay failed");
    }
    const char *ingest[] = {"ingest",      "--exit-idle",    "3",     "--flush-on-idle",
                            "--set",       b->set_bootstrap, "--set", "ingest.idle_timeout_ms=0",
                            "--log-level", "warn",           NULL};
    cr_assert_eq(run_gcdp(ingest, err, 120000), 0, "ingest failed");
}

Test(release_multi, two_instances_forced_rebalance, .timeout = 300)
{
    struct ts_broker b;
    struct inst a, bb, c;
    char err[600], theta[600];
    size_t n_parts = 0, copies = 0, differing = 0;

    ts_broker_start(&b, NULL);
    snprintf(err, sizeof(err), "%s/err.txt", b.dir);
    snprintf(theta, sizeof(theta), "%s/theta.json", b.dir);
    int64_t t0 = ts_now_ms();
    make_windows_from(&b, err, OCC_TRAIN, N_DEVICES);
    const char *cal[] = {"calibrate", "-i",  OCC_TEST,      "-f",   "occupancy",
                         "-o",        theta, "--log-level", "warn", NULL};
    cr_assert_eq(run_gcdp(cal, err, 60000), 0);
    json_t *parts = window_partitions(b.bootstrap, &n_parts);
    cr_assert_geq(n_parts, 3u, "the devices landed on %zu partitions only", n_parts);
    int64_t t1 = ts_now_ms(), n_win = (int64_t)json_object_size(parts);

    inst_init(&a, &b, "a");
    inst_init(&bb, &b, "b");
    inst_init(&c, &b, "c");
    inst_start(&a, &b, theta, false);
    int64_t a_at_b = wait_consumed(a.port, 200, 30000);
    cr_assert_geq(a_at_b, 200, "instance A released nothing: %s", ts_read_file(a.err, NULL));
    inst_start(&bb, &b, theta, true); /* rebalance: A revokes, B restores */
    int64_t b_seen = wait_consumed(bb.port, 100, 30000);
    int64_t a_at_kill = ts_metric(a.port, "gcdp_release_consumed_total");
    cr_assert_geq(b_seen, 100, "B never got a partition: %s", ts_read_file(bb.err, NULL));
    cr_assert_lt(a_at_kill, n_win, "A read everything before the kill: no mid-stream kill");
    kill(a.pid, SIGKILL); /* mid-stream: its session expires, its partitions move */
    cr_assert_eq(ts_wait(a.pid, 30000), 128 + SIGKILL);
    inst_start(&c, &b, theta, false); /* a fresh, empty ledger */
    cr_assert_eq(ts_wait(bb.pid, 150000), 0, "B failed: %s", ts_read_file(bb.err, NULL));
    cr_assert_eq(ts_wait(c.pid, 150000), 0, "C failed: %s", ts_read_file(c.err, NULL));
    int64_t t2 = ts_now_ms();

    json_t *sb = summary(bb.out), *sc = summary(c.out);
    json_t *pub = published(b.bootstrap, &copies, &differing);
    size_t windows_done = 0;
    const char *rid, *wid;
    json_t *v, *done = json_object();
    json_object_foreach(pub, rid, v)
    {
        char w[256];
        window_of(rid, w, sizeof(w));
        cr_assert_not_null(json_object_get(parts, w), "released %s is not a window", rid);
        json_object_set_new(done, w, json_true());
    }
    json_object_foreach(parts, wid, v) windows_done += json_object_get(done, wid) != NULL;
    json_t *refused = refused_windows(b.bootstrap);
    json_object_foreach(parts, wid, v)
    {
        cr_assert(json_object_get(done, wid) || json_object_get(refused, wid),
                  "window %s neither released nor dead-lettered", wid);
    }
    cr_assert_gt(windows_done, json_object_size(parts) * 9 / 10, "%zu of %zu windows released",
                 windows_done, json_object_size(parts));
    cr_assert_eq(differing, 0u, "%zu copies of a window differ from its first copy", differing);
    cr_assert_gt(sget(sb, "adopted") + sget(sc, "adopted"), 0, "nothing was adopted");
    cr_assert_gt(sget(sb, "replayed") + sget(sc, "replayed"), 0,
                 "no window was republished after a rebalance: the test proved nothing");
    cr_assert_gt(copies, json_object_size(pub));
    check_changelog(b.bootstrap, pub, parts);
    json_t *rows[3] = {ledger_rows(a.ledger), ledger_rows(bb.ledger), ledger_rows(c.ledger)};
    size_t units = check_ledgers(pub, rows, 3);
    cr_log_info("%" PRId64 " windows on %zu partitions (setup %.1f s); A read %" PRId64
                " before B joined, %" PRId64 " before its SIGKILL; B: released %lld, replayed "
                "%lld, adopted %lld; C: released %lld, replayed %lld, adopted %lld; %zu copies "
                "of %zu releases, all byte-identical; %zu units covered (rebalance phase "
                "%.1f s)",
                n_win, n_parts, (double)(t1 - t0) / 1e3, a_at_b, a_at_kill,
                (long long)sget(sb, "released"), (long long)sget(sb, "replayed"),
                (long long)sget(sb, "adopted"), (long long)sget(sc, "released"),
                (long long)sget(sc, "replayed"), (long long)sget(sc, "adopted"), copies,
                json_object_size(pub), units, (double)(t2 - t1) / 1e3);
    for (int i = 0; i < 3; i++)
        json_decref(rows[i]);
    json_decref(pub);
    json_decref(refused);
    json_decref(done);
    json_decref(sb);
    json_decref(sc);
    json_decref(parts);
    ts_broker_stop(&b);
}

/* Fill partition p of topic past the embedded broker's 5 MiB per partition (96 records of
 * 64 KiB, not ledger rows: a restore that did not refuse the partition would fail on them),
 * so its log start offset moves past 0. Returns the low watermark. */
static int64_t overfill(const struct ts_broker *b, const char *topic, int32_t p)
{
    static const struct core_cfg_key *const tables[] = {core_config_keys};
    struct core_config *cfg = core_config_new(tables, 1);
    rd_kafka_t *rk = NULL;
    char eb[512];
    int64_t low = -1, high = -1;
    size_t len = 64 * 1024;
    char *v = malloc(len);

    cr_assert_not_null(cfg);
    cr_assert_eq(core_config_set_arg(cfg, b->set_bootstrap, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(core_kafka_client_new(cfg, CORE_KAFKA_PRODUCER, NULL, NULL, NULL, NULL, &rk, eb,
                                       sizeof(eb)),
                 CORE_OK, "%s", eb);
    memset(v, 'x', len);
    for (int i = 0; i < 96; i++) {
        rd_kafka_resp_err_t e;
        while ((e = core_kafka_produce_copy(rk, topic, p, "junk", 4, v, len, NULL)) ==
               RD_KAFKA_RESP_ERR__QUEUE_FULL)
            rd_kafka_poll(rk, 50);
        cr_assert_eq(e, RD_KAFKA_RESP_ERR_NO_ERROR, "%s", rd_kafka_err2str(e));
    }
    cr_assert_eq(rd_kafka_flush(rk, 30000), RD_KAFKA_RESP_ERR_NO_ERROR);
    cr_assert_eq(rd_kafka_query_watermark_offsets(rk, topic, p, &low, &high, 10000),
                 RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_destroy(rk);
    core_config_free(cfg);
    free(v);
    return low;
}

/* A changelog partition whose start was deleted (5 MiB retention of the embedded broker) is
 * refused: its windows are never released or committed, the other partitions are, the log
 * names topic and partition, the gauge and the summary count it. */
Test(release_multi, truncated_changelog_partition_is_refused, .timeout = 200)
{
    struct ts_broker b;
    struct inst a;
    char err[600], theta[600], line[160];
    size_t n_parts = 0, copies = 0, differing = 0;

    ts_broker_start(&b, NULL);
    snprintf(err, sizeof(err), "%s/err.txt", b.dir);
    snprintf(theta, sizeof(theta), "%s/theta.json", b.dir);
    make_windows_from(&b, err, OCC_TEST, 4);
    const char *cal[] = {"calibrate", "-i",  OCC_TEST,      "-f",   "occupancy",
                         "-o",        theta, "--log-level", "warn", NULL};
    cr_assert_eq(run_gcdp(cal, err, 60000), 0);
    json_t *parts = window_partitions(b.bootstrap, &n_parts), *v;
    cr_assert_geq(n_parts, 2u);
    const char *wid;
    int32_t bad = -1;
    json_object_foreach(parts, wid, v)
    {
        bad = (int32_t)json_integer_value(v);
        break;
    }
    int64_t low = overfill(&b, "gcdp.ledger.changelog", bad);
    cr_assert_gt(low, 0, "the embedded broker kept the whole partition: nothing to test");
    inst_init(&a, &b, "a");
    inst_start(&a, &b, theta, false);
    int64_t t0 = ts_now_ms(), gauge = -1;
    while ((gauge = ts_metric(a.port, "gcdp_release_changelog_refused_partitions")) < 1 &&
           ts_now_ms() - t0 < 30000)
        ts_sleep_ms(100);
    int status = 0;
    char *health = ts_http_get(a.port, "/healthz", &status);
    cr_assert_eq(gauge, 1, "the truncated partition is not counted");
    cr_assert_neq(status, 200, "/healthz ready with a refused partition: %s", health);
    free(health);
    cr_assert_eq(ts_wait(a.pid, 120000), 0, "release failed: %s", ts_read_file(a.err, NULL));
    json_t *sum = summary(a.out), *pub = published(b.bootstrap, &copies, &differing);
    cr_assert_eq(sget(sum, "changelog_refusals"), 1, "the summary counts the refusal");
    snprintf(line, sizeof(line), "gcdp.ledger.changelog partition %d is truncated", (int)bad);
    char *log = ts_read_file(a.err, NULL);
    cr_assert(log && strstr(log, line), "the log does not name the partition");
    free(log);
    size_t on_bad = 0, released_bad = 0, released_other = 0;
    const char *rid;
    json_object_foreach(pub, rid, v)
    {
        char w[256];
        window_of(rid, w, sizeof(w));
        if (json_integer_value(json_object_get(parts, w)) == bad)
            released_bad++;
        else
            released_other++;
    }
    json_object_foreach(parts, wid, v) on_bad += json_integer_value(v) == bad;
    cr_assert_gt(on_bad, 0u);
    cr_assert_eq(released_bad, 0u, "%zu windows of the refused partition released", released_bad);
    cr_assert_gt(released_other, 0u, "the other partitions were not processed");
    cr_log_info("changelog partition %d truncated (log start %" PRId64 "): %zu of its windows "
                "held back, %zu windows of the other partitions released",
                (int)bad, low, on_bad, released_other);
    json_decref(sum);
    json_decref(pub);
    json_decref(parts);
    ts_broker_stop(&b);
}

/* --check (and the service's start) refuse a changelog topic that is another topic. */
Test(release_multi, check_refuses_a_changelog_topic_shared_with_another, .timeout = 60)
{
    char *dir = ts_tmpdir(), led[600], err[600];
    snprintf(led, sizeof(led), "%s/ledger.jsonl", dir);
    snprintf(err, sizeof(err), "%s/err.txt", dir);
    const char *bad[] = {"release",
                         "--serve",
                         "--check",
                         "--ledger",
                         led,
                         "--set",
                         "broker.bootstrap=127.0.0.1:9",
                         "--set",
                         "release.service.changelog=true",
                         "--set",
                         "topics.ledger_changelog=gcdp.windows",
                         NULL};
    const char *ok[] = {"release",
                        "--serve",
                        "--check",
                        "--ledger",
                        led,
                        "--set",
                        "broker.bootstrap=127.0.0.1:9",
                        "--set",
                        "release.service.changelog=true",
                        "--set",
                        "topics.ledger_changelog=site1.ledger.changelog",
                        NULL};
    cr_assert_eq(ts_wait(ts_spawn(bad, NULL, err), 20000), 2);
    char *text = ts_read_file(err, NULL);
    cr_assert(text && strstr(text, "topics.ledger_changelog") && strstr(text, "topics.windows"),
              "the refusal names both keys: %s", text ? text : "");
    free(text);
    cr_assert_eq(ts_wait(ts_spawn(ok, NULL, err), 20000), 0, "%s", ts_read_file(err, NULL));
    ts_rmtree(dir);
    free(dir);
}
