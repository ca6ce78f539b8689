/* test_broker.c - simulator and replay against a real Kafka-protocol broker (the embedded
 * librdkafka mock cluster, started inside each test on loopback) and consumed back. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>

#include "core/broker.h"
#include "core/config.h"
#include "core/kconf.h"
#include "core/log.h"
#include "ing/engine.h"
#include "sim/config.h"
#include "sim/sim.h"
#include "test_support.h"

#define PARTS 4

struct msg {
    char *key;     /* NULL: no key */
    char *payload; /* NUL-terminated copy */
    size_t len;
    int32_t partition;
    int64_t offset;
    char fault[32]; /* gcdp-fault header or "" */
    char kind[64];  /* gcdp-corpus-kind header or "" */
};

struct fixture {
    struct core_broker *broker;
    struct core_config *cfg;
    struct msg *msgs;
    size_t n;
};

static const struct core_cfg_key *const tables[] = {core_config_keys, sim_config_keys};

static void setup(struct fixture *fx, const char *const *topics, size_t ntopics)
{
    char eb[512];
    memset(fx, 0, sizeof(*fx));
    core_log_level = CORE_LOG_ERROR;
    cr_assert_eq(core_broker_new(1, topics, ntopics, PARTS, &fx->broker, eb, sizeof(eb)), CORE_OK,
                 "%s", eb);
    fx->cfg = core_config_new(tables, 2);
    cr_assert_not_null(fx->cfg);
    cr_assert_eq(core_config_set(fx->cfg, "broker.bootstrap", core_broker_bootstrap(fx->broker),
                                 "flag", eb, sizeof(eb)),
                 CORE_OK, "%s", eb);
}

static void teardown(struct fixture *fx)
{
    for (size_t i = 0; i < fx->n; i++) {
        free(fx->msgs[i].key);
        free(fx->msgs[i].payload);
    }
    free(fx->msgs);
    core_config_free(fx->cfg);
    core_broker_free(fx->broker);
}

static void header(const rd_kafka_message_t *m, const char *name, char *out, size_t n)
{
    rd_kafka_headers_t *h = NULL;
    const void *v;
    size_t len;
    out[0] = '\0';
    if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR &&
        rd_kafka_header_get_last(h, name, &v, &len) == RD_KAFKA_RESP_ERR_NO_ERROR && len < n) {
        memcpy(out, v, len);
        out[len] = '\0';
    }
}

/* Read topic from the beginning of every partition until `expect` messages (or 30 s). */
static void consume(struct fixture *fx, const char *topic, size_t expect)
{
    rd_kafka_conf_t *conf = NULL;
    rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(PARTS);
    rd_kafka_t *rk;
    char eb[512];
    time_t deadline = time(NULL) + 30;

    cr_assert_eq(
        core_kafka_conf_new(fx->cfg, CORE_KAFKA_CONSUMER, "test-sim", &conf, eb, sizeof(eb)),
        CORE_OK, "%s", eb);
    rd_kafka_conf_set(conf, "fetch.message.max.bytes", "2000000", eb, sizeof(eb));
    rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, eb, sizeof(eb));
    cr_assert_not_null(rk, "%s", eb);
    for (int p = 0; p < PARTS; p++)
        rd_kafka_topic_partition_list_add(tp, topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    cr_assert_eq(rd_kafka_assign(rk, tp), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_topic_partition_list_destroy(tp);
    fx->msgs = realloc(fx->msgs, (fx->n + expect + 1) * sizeof(*fx->msgs));
    for (size_t got = 0; got < expect && time(NULL) < deadline;) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        struct msg *x;
        if (!m)
            continue;
        if (m->err) {
            rd_kafka_message_destroy(m);
            continue;
        }
        x = &fx->msgs[fx->n++];
        got++;
        x->key = m->key ? strndup(m->key, m->key_len) : NULL;
        x->payload = malloc(m->len + 1);
        memcpy(x->payload, m->payload, m->len);
        x->payload[m->len] = '\0';
        x->len = m->len;
        x->partition = m->partition;
        x->offset = m->offset;
        header(m, "gcdp-fault", x->fault, sizeof(x->fault));
        header(m, "gcdp-corpus-kind", x->kind, sizeof(x->kind));
        rd_kafka_message_destroy(m);
    }
    /* nothing beyond what was expected either */
    for (int i = 0; i < 3; i++) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (m) {
            cr_assert(m->err != RD_KAFKA_RESP_ERR_NO_ERROR, "unexpected extra message");
            rd_kafka_message_destroy(m);
        }
    }
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
}

static json_t *parse(const struct msg *m)
{
    json_error_t e;
    json_t *doc = json_loadb(m->payload, m->len, 0, &e);
    cr_assert_not_null(doc, "payload does not parse: %s", e.text);
    return doc;
}

Test(sim_broker, simulate_delivers_every_reading_keyed_and_in_order_per_device)
{
    static const char *const topics[] = {"sensors.raw"};
    struct fixture fx;
    struct sim_options o;
    struct sim_progress pr;
    char eb[512];
    long next_seq[6];
    int32_t part[6];

    setup(&fx, topics, 1);
    sim_options_default(&o);
    o.devices = 6;
    o.ticks = 300;
    o.rate = 0; /* as fast as the in-flight cap allows */
    o.prod.max_inflight = 500;
    sim_progress_init(&pr);
    cr_assert_eq(sim_run(fx.cfg, &o, &pr, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(atomic_load(&pr.sent), 1800);
    cr_assert_eq(atomic_load(&pr.acked), 1800);
    cr_assert_eq(atomic_load(&pr.failed), 0);
    consume(&fx, "sensors.raw", 1800);
    cr_assert_eq(fx.n, 1800, "consumed %zu of 1800", fx.n);
    for (int d = 0; d < 6; d++) {
        next_seq[d] = 0;
        part[d] = -1;
    }
    for (size_t i = 0; i < fx.n; i++) {
        json_t *doc = parse(&fx.msgs[i]);
        const char *dev = json_string_value(json_object_get(doc, "device"));
        int d;
        cr_assert_not_null(fx.msgs[i].key);
        cr_assert_str_eq(fx.msgs[i].key, dev, "key equals device");
        cr_assert_eq(sscanf(dev, "mote-%d", &d), 1);
        cr_assert_eq(json_integer_value(json_object_get(doc, "seq")), next_seq[d],
                     "device %d out of order", d);
        next_seq[d]++;
        if (part[d] < 0)
            part[d] = fx.msgs[i].partition;
        cr_assert_eq(fx.msgs[i].partition, part[d], "one device, one partition");
        json_decref(doc);
    }
    for (int d = 0; d < 6; d++)
        cr_assert_eq(next_seq[d], 300);
    teardown(&fx);
}

Test(sim_broker, every_injected_fault_arrives_with_its_header)
{
    static const char *const topics[] = {"sensors.raw"};
    struct fixture fx;
    struct sim_options o;
    struct sim_progress pr;
    char eb[512];
    unsigned long seen[SIM_FAULT_COUNT] = {0};

    setup(&fx, topics, 1);
    sim_options_default(&o);
    o.devices = 4;
    o.ticks = 500;
    o.rate = 0;
    cr_assert_eq(sim_faults_parse("all=0.02,oversize=0.005", o.fault_rate, eb, sizeof(eb)),
                 CORE_OK);
    sim_progress_init(&pr);
    cr_assert_eq(sim_run(fx.cfg, &o, &pr, eb, sizeof(eb)), CORE_OK, "%s", eb);
    consume(&fx, "sensors.raw", atomic_load(&pr.sent));
    cr_assert_eq(fx.n, atomic_load(&pr.sent));
    cr_assert_eq(atomic_load(&pr.acked), atomic_load(&pr.sent));
    for (size_t i = 0; i < fx.n; i++)
        for (int k = 0; k < SIM_FAULT_COUNT; k++)
            if (!strcmp(fx.msgs[i].fault, sim_fault_name(k)))
                seen[k]++;
    for (int k = SIM_FAULT_DUPLICATE; k < SIM_FAULT_COUNT; k++) {
        cr_assert_eq(seen[k], atomic_load(&pr.faults[k]), "%s: %lu headers, %lu counted",
                     sim_fault_name(k), seen[k], (unsigned long)atomic_load(&pr.faults[k]));
        cr_assert_gt(seen[k], 0, "%s never injected", sim_fault_name(k));
    }
    /* Contract with ingest: each fault kind gets its reason from the real engine (default
     * parameters), in per-partition order as a consumer would see it. */
    {
        static const struct {
            const char *fault, *reason;
        } map[] = {{"", "accepted"},
                   {"out_of_order", "accepted"},
                   {"duplicate", "duplicate"},
                   {"late", "late"},
                   {"out_of_domain", "out_of_domain"},
                   {"nonfinite", "non_finite"},
                   {"wrong_type", "wrong_type"},
                   {"unknown_channel", "unknown_channel"},
                   {"malformed_json", "malformed_json"},
                   {"truncated", "truncated"},
                   {"oversize", "oversize"}};
        struct ing_params ip;
        struct ing_sink sink = {NULL, NULL, NULL};
        struct ing_engine *eng;
        ing_params_default(&ip);
        eng = ing_engine_new(&ip, eb, sizeof(eb));
        cr_assert_not_null(eng, "%s", eb);
        for (size_t i = 0; i < fx.n; i++) {
            const struct msg *m = &fx.msgs[i];
            struct ing_source src = {"sensors.raw", m->partition, m->offset};
            enum ing_reason r;
            size_t k;
            cr_assert_eq(ing_engine_push(eng, m->payload, m->len, m->key, strlen(m->key), &src,
                                         1000, &sink, &r),
                         CORE_OK);
            for (k = 0; k < sizeof(map) / sizeof(map[0]) && strcmp(map[k].fault, m->fault); k++)
                ;
            cr_assert_lt(k, sizeof(map) / sizeof(map[0]), "unknown fault header %s", m->fault);
            cr_expect_str_eq(ing_reason_code(r), map[k].reason, "fault '%s': %.80s", m->fault,
                             m->payload);
        }
        ing_engine_free(eng);
    }
    /* skipped readings are counted, and they are missing from the stream */
    cr_assert_gt(atomic_load(&pr.faults[SIM_FAULT_MISSING]), 0);
    cr_assert_gt(atomic_load(&pr.faults[SIM_FAULT_GAP]), 0);
    cr_assert_lt(atomic_load(&pr.sent), 2000 + seen[SIM_FAULT_DUPLICATE]);
    teardown(&fx);
}

Test(sim_broker, same_seed_same_messages_across_runs)
{
    static const char *const topics[] = {"run.a", "run.b"};
    struct fixture fx;
    struct sim_options o;
    struct sim_progress pr;
    char eb[512];
    size_t na;

    setup(&fx, topics, 2);
    sim_options_default(&o);
    o.devices = 3;
    o.ticks = 100;
    o.rate = 0;
    o.seed = 4242;
    cr_assert_eq(sim_faults_parse("all=0.03,oversize=0", o.fault_rate, eb, sizeof(eb)), CORE_OK);
    o.prod.topic = "run.a";
    sim_progress_init(&pr);
    cr_assert_eq(sim_run(fx.cfg, &o, &pr, eb, sizeof(eb)), CORE_OK, "%s", eb);
    consume(&fx, "run.a", atomic_load(&pr.sent));
    na = fx.n;
    o.prod.topic = "run.b";
    sim_progress_init(&pr);
    cr_assert_eq(sim_run(fx.cfg, &o, &pr, eb, sizeof(eb)), CORE_OK, "%s", eb);
    consume(&fx, "run.b", atomic_load(&pr.sent));
    cr_assert_eq(fx.n, 2 * na);
    /* per device (= per partition) the two runs are byte-identical */
    for (int d = 0; d < 3; d++) {
        char id[16];
        size_t i = 0, j = na;
        snprintf(id, sizeof(id), "mote-%d", d);
        for (;;) {
            while (i < na && strcmp(fx.msgs[i].key, id))
                i++;
            while (j < fx.n && strcmp(fx.msgs[j].key, id))
                j++;
            if (i == na || j == fx.n)
                break;
            cr_assert_eq(fx.msgs[i].len, fx.msgs[j].len);
            cr_assert_eq(memcmp(fx.msgs[i].payload, fx.msgs[j].payload, fx.msgs[i].len), 0);
            i++;
            j++;
        }
        cr_assert(i == na && j == fx.n, "device %d: runs differ in length", d);
    }
    teardown(&fx);
}

/* Replay takes its topic and in-flight cap from its producer settings (o.prod), and the
 * settings are checked before a producer is made. */
Test(sim_broker, replay_honours_its_producer_settings)
{
    static const char *const topics[] = {"sensors.raw", "replay.other"};
    struct fixture fx;
    struct sim_replay_options o;
    struct sim_progress pr;
    char eb[512];

    setup(&fx, topics, 2);
    sim_replay_options_default(&o);
    o.path = GCDP_DATA_DIR "/occupancy/datatest.txt";
    o.rate = 0;
    o.prod.topic = "replay.other";
    o.prod.max_inflight = 64;
    sim_progress_init(&pr);
    cr_assert_eq(sim_replay_run(fx.cfg, &o, &pr, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(atomic_load(&pr.acked), 2665);
    consume(&fx, "replay.other", 2665);
    cr_assert_eq(fx.n, 2665);
    o.prod.max_inflight = 0;
    sim_progress_init(&pr);
    cr_assert_eq(sim_replay_run(fx.cfg, &o, &pr, eb, sizeof(eb)), CORE_EINVAL);
    cr_assert_not_null(strstr(eb, "max-inflight"), "%s", eb);
    cr_assert_eq(atomic_load(&pr.sent), 0);
    teardown(&fx);
}

Test(sim_broker, replay_occupancy_sends_every_row_in_order)
{
    static const char *const topics[] = {"sensors.raw"};
    struct fixture fx;
    struct sim_replay_options o;
    struct sim_progress pr;
    char eb[512];
    long prev = 0;

    setup(&fx, topics, 1);
    sim_replay_options_default(&o);
    o.path = GCDP_DATA_DIR "/occupancy/datatest.txt";
    o.rate = 0;
    sim_progress_init(&pr);
    cr_assert_eq(sim_replay_run(fx.cfg, &o, &pr, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(atomic_load(&pr.acked), 2665);
    consume(&fx, "sensors.raw", 2665);
    cr_assert_eq(fx.n, 2665);
    cr_assert_str_eq(fx.msgs[0].payload,
                     "{\"schema\":\"gcdp.reading/1\",\"device\":\"occupancy\","
                     "\"ts\":\"2015-02-02T14:19:00Z\",\"readings\":{\"temperature\":23.7,"
                     "\"humidity\":26.272,\"light\":585.2,\"co2\":749.2,"
                     "\"humidity_ratio\":0.00476416302416414},\"seq\":140}");
    for (size_t i = 0; i < fx.n; i++) {
        json_t *doc = parse(&fx.msgs[i]);
        long seq = (long)json_integer_value(json_object_get(doc, "seq"));
        cr_assert_str_eq(fx.msgs[i].key, "occupancy");
        cr_assert_gt(seq, prev);
        cr_assert_null(json_object_get(json_object_get(doc, "readings"), "occupancy"));
        prev = seq;
        json_decref(doc);
    }
    cr_assert_eq(prev, 2804);
    teardown(&fx);
}

Test(sim_broker, replay_speed_follows_recorded_time)
{
    /* 4 rows 60 s apart at speed 600: 3 intervals of 0.1 s = 0.3 s; allow [0.28, 1.5] s */
    static const char *const topics[] = {"sensors.raw"};
    struct fixture fx;
    struct sim_replay_options o;
    struct sim_progress pr;
    char eb[512], *dir = ts_tmpdir(), path[512];
    struct timespec a, b;
    double secs;

    setup(&fx, topics, 1);
    snprintf(path, sizeof(path), "%s/r.jsonl", dir);
    ts_write_file(path, "{\"device\":\"d1\",\"ts\":\"2026-11-01T00:00:00Z\",\"readings\":{}}\n"
                        "{\"device\":\"d1\",\"ts\":\"2026-11-01T00:01:00Z\",\"readings\":{}}\n"
                        "{\"device\":\"d2\",\"ts\":\"2026-11-01T00:02:00Z\",\"readings\":{}}\n"
                        "{\"device\":\"d1\",\"ts\":1793491380000,\"readings\":{}}\n");
    sim_replay_options_default(&o);
    o.path = path;
    o.format = SIM_REPLAY_JSONL;
    o.speed = 600;
    sim_progress_init(&pr);
    clock_gettime(CLOCK_MONOTONIC, &a);
    cr_assert_eq(sim_replay_run(fx.cfg, &o, &pr, eb, sizeof(eb)), CORE_OK, "%s", eb);
    clock_gettime(CLOCK_MONOTONIC, &b);
    secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
    cr_assert(secs >= 0.28 && secs <= 1.5, "took %.3f s", secs);
    cr_assert_eq(atomic_load(&pr.acked), 4);
    consume(&fx, "sensors.raw", 4);
    cr_assert_eq(fx.n, 4);
    teardown(&fx);
    ts_rmtree(dir);
    free(dir);
}

Test(sim_broker, replay_jsonl_stops_at_a_bad_line_naming_it_after_sending_the_good_ones)
{
    static const char *const topics[] = {"sensors.raw"};
    struct fixture fx;
    struct sim_replay_options o;
    struct sim_progress pr;
    char eb[512], *dir = ts_tmpdir(), path[512];

    setup(&fx, topics, 1);
    snprintf(path, sizeof(path), "%s/bad.jsonl", dir);
    ts_write_file(path, "{\"device\":\"d1\",\"ts\":1}\n\n{\"device\":\"d2\",\"ts\":2}\n"
                        "{\"ts\":3}\n{\"device\":\"d3\"}\n");
    sim_replay_options_default(&o);
    o.path = path;
    o.format = SIM_REPLAY_JSONL;
    sim_progress_init(&pr);
    cr_assert_eq(sim_replay_run(fx.cfg, &o, &pr, eb, sizeof(eb)), CORE_EPARSE);
    cr_assert_not_null(strstr(eb, path), "%s", eb);
    cr_assert_not_null(strstr(eb, ":4:"), "%s", eb);
    cr_assert_eq(atomic_load(&pr.acked), 2);
    consume(&fx, "sensors.raw", 2);
    cr_assert_eq(fx.n, 2);
    /* d1 and d2 may sit on different partitions: no order between them */
    cr_assert(!strcmp(fx.msgs[0].payload, "{\"device\":\"d1\",\"ts\":1}") ||
                  !strcmp(fx.msgs[1].payload, "{\"device\":\"d1\",\"ts\":1}"),
              "d1's line arrives verbatim");
    teardown(&fx);
    ts_rmtree(dir);
    free(dir);
}

Test(sim_broker, corpus_payloads_arrive_byte_for_byte)
{
    static const char *const topics[] = {"sensors.raw"};
    struct fixture fx;
    struct sim_replay_options o;
    struct sim_progress pr;
    char eb[512];
    int kinds = 0, checked = 0;

    setup(&fx, topics, 1);
    sim_replay_options_default(&o);
    o.path = GCDP_SOURCE_DIR "/tests/fixtures/bad_inputs/corpus.jsonl";
    o.format = SIM_REPLAY_CORPUS;
    sim_progress_init(&pr);
    cr_assert_eq(sim_replay_run(fx.cfg, &o, &pr, eb, sizeof(eb)), CORE_OK, "%s", eb);
    consume(&fx, "sensors.raw", atomic_load(&pr.sent));
    cr_assert_eq(fx.n, atomic_load(&pr.sent));
    cr_assert_geq(fx.n, 50);
    for (size_t i = 0; i < fx.n; i++) {
        const struct msg *m = &fx.msgs[i];
        kinds += m->kind[0] != '\0';
        if (!strcmp(m->kind, "invalid_utf8")) {
            cr_assert_not_null(memchr(m->payload, 0xff, m->len));
            checked++;
        } else if (!strcmp(m->kind, "missing_key")) {
            cr_assert_null(m->key);
            checked++;
        } else if (!strcmp(m->kind, "oversize")) {
            cr_assert_gt(m->len, 65536);
            checked++;
        } else if (!strcmp(m->kind, "empty_payload")) {
            cr_assert_eq(m->len, 0);
            checked++;
        } else if (!strcmp(m->kind, "nul_character")) {
            cr_assert_not_null(strstr(m->payload, "\\u0000"));
            checked++;
        }
    }
    cr_assert_eq((size_t)kinds, fx.n);
    cr_assert_eq(checked, 5);
    teardown(&fx);
}

static void *stop_later(void *arg)
{
    struct timespec ts = {0, 300000000};
    nanosleep(&ts, NULL);
    atomic_store(&((struct sim_progress *)arg)->stop, 1);
    return NULL;
}

Test(sim_broker, stop_flag_ends_an_unbounded_run_cleanly)
{
    static const char *const topics[] = {"sensors.raw"};
    struct fixture fx;
    struct sim_options o;
    struct sim_progress pr;
    pthread_t t;
    char eb[512];

    setup(&fx, topics, 1);
    sim_options_default(&o);
    o.devices = 5;
    o.rate = 2000;
    cr_assert_eq(sim_faults_parse("out_of_order=0.2", o.fault_rate, eb, sizeof(eb)), CORE_OK);
    sim_progress_init(&pr);
    pthread_create(&t, NULL, stop_later, &pr);
    cr_assert_eq(sim_run(fx.cfg, &o, &pr, eb, sizeof(eb)), CORE_OK, "%s", eb);
    pthread_join(t, NULL);
    cr_assert_gt(atomic_load(&pr.sent), 100);
    /* about 2000/s for 0.3 s: the token bucket held the pace (burst 21) */
    cr_assert_lt(atomic_load(&pr.sent), 1500);
    cr_assert_eq(atomic_load(&pr.acked), atomic_load(&pr.sent));
    consume(&fx, "sensors.raw", atomic_load(&pr.sent));
    cr_assert_eq(fx.n, atomic_load(&pr.sent));
    teardown(&fx);
}

struct run_arg {
    struct fixture *fx;
    struct sim_options *o;
    struct sim_progress *pr;
    core_err rc;
    char eb[512];
};

static void *run_sim(void *arg)
{
    struct run_arg *a = arg;
    a->rc = sim_run(a->fx->cfg, a->o, a->pr, a->eb, sizeof(a->eb));
    return NULL;
}

/* Commit group's offsets at the current end of every partition (the consumer caught up). */
static void commit_at_end(struct fixture *fx, const char *group, const char *topic)
{
    rd_kafka_conf_t *conf = NULL;
    rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(PARTS);
    rd_kafka_t *rk;
    char eb[512];

    cr_assert_eq(core_kafka_conf_new(fx->cfg, CORE_KAFKA_CONSUMER, group, &conf, eb, sizeof(eb)),
                 CORE_OK);
    rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, eb, sizeof(eb));
    cr_assert_not_null(rk, "%s", eb);
    for (int p = 0; p < PARTS; p++) {
        int64_t lo, hi;
        cr_assert_eq(rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &hi, 5000),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_topic_partition_list_add(tp, topic, p)->offset = hi;
    }
    cr_assert_eq(rd_kafka_commit(rk, tp, 0), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_topic_partition_list_destroy(tp);
    rd_kafka_destroy(rk);
}

Test(sim_broker, lag_group_holds_the_producer_until_the_consumer_commits)
{
    /* max lag 64 KiB per partition at ~235 estimated bytes per reading (165 B + 70 B record
     * overhead): at most ~280 uncommitted readings per partition, 4 partitions -> ~1 100;
     * the check runs every 100 ms or every 8 KiB produced, so allow 2 000 before the commit. */
    static const char *const topics[] = {"sensors.raw"};
    struct fixture fx;
    struct sim_options o;
    struct sim_progress pr;
    struct run_arg a;
    struct timespec pause = {1, 500000000};
    uint_fast64_t held, later;
    pthread_t t;

    setup(&fx, topics, 1);
    sim_options_default(&o);
    o.devices = 8;
    o.rate = 0;
    o.prod.lag_group = "slow-consumer";
    o.prod.max_lag_bytes = 65536;
    sim_progress_init(&pr);
    a = (struct run_arg){&fx, &o, &pr, CORE_OK, ""};
    pthread_create(&t, NULL, run_sim, &a);
    nanosleep(&pause, NULL);
    held = atomic_load(&pr.sent);
    cr_expect_gt(held, 100);
    cr_expect_lt(held, 2000, "producer ran ahead of the group: %lu", (unsigned long)held);
    cr_expect_gt(atomic_load(&pr.lag_waits), 0);
    commit_at_end(&fx, "slow-consumer", "sensors.raw");
    nanosleep(&pause, NULL);
    later = atomic_load(&pr.sent);
    cr_expect_gt(later, held + 500, "no progress after the commit: %lu -> %lu", (unsigned long)held,
                 (unsigned long)later);
    cr_expect_lt(later, held + 2000);
    atomic_store(&pr.stop, 1);
    pthread_join(t, NULL);
    cr_assert_eq(a.rc, CORE_OK, "%s", a.eb);
    cr_assert_eq(atomic_load(&pr.acked), atomic_load(&pr.sent));
    teardown(&fx);
}
