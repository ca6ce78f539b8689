/* test_ksync.c - core's synchronous producer and client constructor (core/ksync.h) against
 * an embedded broker: every message acknowledged and read back with its key, value and
 * header; delivery reports counted; an unreachable broker is a failed flush, never a
 * silent success; a bad property is refused naming it (and the conf is not leaked: the
 * debug build runs this under ASan). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>

#include "broker.h"
#include "core/config.h"
#include "core/kconf.h"
#include "core/ksync.h"
#include "core/log.h"

#define TOPIC "ksync.test"

static struct core_config *cfg_with(const char *set1, const char *set2)
{
    static const struct core_cfg_key *const tables[] = {core_config_keys};
    struct core_config *cfg = core_config_new(tables, 1);
    char eb[512];

    cr_assert_not_null(cfg);
    cr_assert_eq(core_config_set_arg(cfg, set1, eb, sizeof(eb)), CORE_OK, "%s", eb);
    if (set2)
        cr_assert_eq(core_config_set_arg(cfg, set2, eb, sizeof(eb)), CORE_OK, "%s", eb);
    return cfg;
}

static void count_dr(void *arg, rd_kafka_resp_err_t err)
{
    int *n = arg;
    n[err ? 1 : 0]++;
}

Test(ksync, every_message_is_acknowledged_and_reads_back, .timeout = 120)
{
    const char *extra[] = {"--topic", TOPIC ":2", NULL};
    static const char *const hname[] = {"gcdp-expected-reason"};
    struct ts_broker b;
    struct core_config *cfg;
    struct core_ksync *p = NULL;
    struct ts_record *rec = NULL;
    int dr[2] = {0, 0};
    struct core_ksync_opts o = {.topic = TOPIC, .on_delivery = count_dr, .arg = dr};
    uint64_t sent = 0, acked = 0, failed = 9, left = 9;
    char eb[512], key[16], val[64];
    size_t n, seen_hdr = 0;

    core_log_level = CORE_LOG_OFF;
    ts_broker_start(&b, extra);
    cfg = cfg_with(b.set_bootstrap, NULL);
    cr_assert_eq(core_ksync_new(cfg, &o, &p, eb, sizeof(eb)), CORE_OK, "%s", eb);
    for (int i = 0; i < 200; i++) {
        const char *hval[] = {i % 2 ? "odd" : NULL}; /* a NULL value: no header */
        snprintf(key, sizeof(key), "k%d", i % 7);
        snprintf(val, sizeof(val), "{\"i\":%d}", i);
        cr_assert_eq(
            core_ksync_send(p, key, strlen(key), val, strlen(val), hname, hval, 1, eb, sizeof(eb)),
            CORE_OK, "%s", eb);
    }
    cr_assert_eq(core_ksync_flush(p, 30000, &left, eb, sizeof(eb)), CORE_OK, "%s", eb);
    core_ksync_counts(p, &sent, &acked, &failed);
    cr_assert_eq(sent, 200);
    cr_assert_eq(acked, 200);
    cr_assert_eq(failed, 0);
    cr_assert_eq(left, 0);
    cr_assert_eq(core_ksync_inflight(p), 0);
    cr_assert_eq(dr[0], 200, "the delivery hook saw every report");
    cr_assert_eq(dr[1], 0);
    n = ts_topic_read(b.bootstrap, TOPIC, &rec);
    cr_assert_eq(n, 200);
    for (size_t i = 0; i < n; i++) {
        int v = -1;
        cr_assert_eq(sscanf(rec[i].value, "{\"i\":%d}", &v), 1, "%s", rec[i].value);
        snprintf(key, sizeof(key), "k%d", v % 7);
        cr_assert_str_eq(rec[i].key, key);
        if (rec[i].expected_reason) {
            cr_assert_str_eq(rec[i].expected_reason, "odd");
            cr_assert_eq(v % 2, 1);
            seen_hdr++;
        }
    }
    cr_assert_eq(seen_hdr, 100, "headers travel; a NULL header value is skipped");
    ts_records_free(rec, n);
    core_ksync_free(p);
    core_config_free(cfg);
    ts_broker_stop(&b);
}

Test(ksync, an_unreachable_broker_fails_the_flush, .timeout = 60)
{
    struct core_config *cfg = cfg_with("broker.bootstrap=127.0.0.1:1", NULL);
    struct core_ksync_opts o = {.topic = TOPIC};
    struct core_ksync *p = NULL;
    uint64_t left = 0;
    char eb[512];

    core_log_level = CORE_LOG_OFF;
    cr_assert_eq(core_ksync_new(cfg, &o, &p, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(core_ksync_send(p, NULL, 0, "x", 1, NULL, NULL, 0, eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(core_ksync_flush(p, 500, &left, eb, sizeof(eb)), CORE_EKAFKA);
    cr_assert_eq(left, 1);
    cr_assert(strstr(eb, TOPIC) && strstr(eb, "not acknowledged"), "%s", eb);
    core_ksync_free(p);
    core_config_free(cfg);
}

Test(ksync, bad_properties_and_a_missing_topic_are_refused)
{
    struct core_config *cfg = cfg_with("broker.bootstrap=127.0.0.1:1", "kafka.no.such.prop=1");
    static const char *const bad_extra[] = {"linger.ms", "-5", NULL};
    struct core_config *ok = cfg_with("broker.bootstrap=127.0.0.1:1", NULL);
    struct core_ksync_opts o = {.topic = TOPIC}, none = {.topic = NULL};
    struct core_ksync_opts bad = {.topic = TOPIC, .extra = bad_extra};
    struct core_ksync *p = (struct core_ksync *)1;
    rd_kafka_t *rk = (rd_kafka_t *)1;
    char eb[512] = "";

    cr_assert_eq(core_ksync_new(cfg, &o, &p, eb, sizeof(eb)), CORE_ECONFIG);
    cr_assert_null(p);
    cr_assert(strstr(eb, "no.such.prop"), "%s", eb);
    cr_assert_eq(core_ksync_new(ok, &bad, &p, eb, sizeof(eb)), CORE_ECONFIG);
    cr_assert(strstr(eb, "linger.ms"), "%s", eb);
    cr_assert_eq(core_ksync_new(ok, &none, &p, eb, sizeof(eb)), CORE_EINVAL);
    cr_assert_eq(
        core_kafka_client_new(cfg, CORE_KAFKA_CONSUMER, "g", NULL, NULL, NULL, &rk, eb, sizeof(eb)),
        CORE_ECONFIG);
    cr_assert_null(rk);
    cr_assert_eq(
        core_kafka_client_new(ok, CORE_KAFKA_CONSUMER, "g", NULL, NULL, NULL, &rk, eb, sizeof(eb)),
        CORE_OK, "%s", eb);
    rd_kafka_destroy(rk);
    core_config_free(cfg);
    core_config_free(ok);
}
