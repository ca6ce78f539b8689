/* test_kafka.c - core/kafka.h (producer and consumer bridged onto a libuv loop) against an
 * in-process embedded broker (core/broker.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>
#include <uv.h>

#include "broker.h"
#include "core/broker.h"
#include "core/config.h"
#include "core/kafka.h"
#include "core/kconf.h"
#include "core/log.h"
#include "core/metrics.h"

static void quiet(void)
{
    core_log_level = CORE_LOG_OFF;
}

TestSuite(kafka, .init = quiet, .timeout = 60);

/* Producer -> broker -> consumer, all on one loop. */

#define N_MSGS 3000

struct rt {
    uv_loop_t loop;
    uv_timer_t deadline;
    struct core_kproducer *p;
    struct core_kconsumer *c;
    int acked, failed, consumed, gaps, in_order_violations;
    int64_t last[4];
    bool closed;
};

static void rt_delivery(void *arg, void *opaque, rd_kafka_resp_err_t err)
{
    struct rt *r = arg;
    (void)opaque;
    if (err)
        r->failed++;
    else
        r->acked++;
}

static void rt_message(void *arg, const rd_kafka_message_t *m)
{
    struct rt *r = arg;
    int seq = atoi(m->payload ? (const char *)m->payload : "0");
    cr_assert(m->partition >= 0 && m->partition < 4);
    if (seq <= r->last[m->partition])
        r->in_order_violations++;
    r->last[m->partition] = seq;
    if (++r->consumed == N_MSGS)
        core_kconsumer_close(r->c);
}

static void rt_gap(void *arg, const char *t, int32_t p, int64_t from, int64_t to)
{
    struct rt *r = arg;
    (void)t;
    (void)p;
    (void)from;
    (void)to;
    r->gaps++;
}

static void rt_closed(void *arg)
{
    struct rt *r = arg;
    r->closed = true;
    core_kconsumer_detach(r->c);
    core_kproducer_detach(r->p);
    uv_close((uv_handle_t *)&r->deadline, NULL);
}

static void rt_deadline(uv_timer_t *t)
{
    struct rt *r = t->data;
    core_kconsumer_close(r->c);
}

Test(kafka, producer_and_consumer_on_one_loop_deliver_everything_in_order)
{
    static const struct core_cfg_key *const tables[] = {core_config_keys};
    const char *topics[] = {"rt.topic"};
    struct core_broker *b = NULL;
    struct core_config *cfg = core_config_new(tables, 1);
    rd_kafka_conf_t *pc = NULL, *cc = NULL;
    struct rt r;
    struct core_kconsumer_ops ops = {
        .on_message = rt_message, .on_gap = rt_gap, .on_closed = rt_closed, .arg = &r};
    char eb[512], boot[300], key[16], val[16];

    memset(&r, 0, sizeof(r));
    for (int i = 0; i < 4; i++)
        r.last[i] = -1;
    cr_assert_eq(core_broker_new(1, topics, 1, 4, &b, eb, sizeof(eb)), CORE_OK, "%s", eb);
    snprintf(boot, sizeof(boot), "broker.bootstrap=%s", core_broker_bootstrap(b));
    cr_assert_eq(core_config_set_arg(cfg, boot, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(core_kafka_conf_new(cfg, CORE_KAFKA_PRODUCER, NULL, &pc, eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(core_kafka_conf_new(cfg, CORE_KAFKA_CONSUMER, "rt", &cc, eb, sizeof(eb)), CORE_OK);
    uv_loop_init(&r.loop);
    cr_assert_eq(core_kproducer_new(&r.loop, pc, rt_delivery, &r, &r.p, eb, sizeof(eb)), CORE_OK,
                 "%s", eb);
    cr_assert_eq(core_kconsumer_new(&r.loop, cc, topics, 1, &ops, &r.c, eb, sizeof(eb)), CORE_OK,
                 "%s", eb);
    for (int i = 1; i <= N_MSGS; i++) {
        int kl = snprintf(key, sizeof(key), "k%d", i % 37);
        int vl = snprintf(val, sizeof(val), "%d", i);
        cr_assert_eq(core_kproducer_send(r.p, "rt.topic", RD_KAFKA_PARTITION_UA, key, (size_t)kl,
                                         val, (size_t)vl, NULL),
                     CORE_OK);
    }
    uv_timer_init(&r.loop, &r.deadline);
    r.deadline.data = &r;
    uv_timer_start(&r.deadline, rt_deadline, 30000, 0);
    uv_run(&r.loop, UV_RUN_DEFAULT);
    cr_assert(r.closed, "consumer did not close");
    cr_assert_eq(r.acked, N_MSGS);
    cr_assert_eq(r.failed, 0);
    cr_assert_eq(r.consumed, N_MSGS);
    cr_assert_eq(r.in_order_violations, 0, "per-partition order broken");
    cr_assert_eq(r.gaps, 0);
    cr_assert_eq(core_kproducer_outq(r.p), 0);
    core_kconsumer_free(r.c);
    core_kproducer_free(r.p);
    uv_run(&r.loop, UV_RUN_DEFAULT);
    cr_assert_eq(uv_loop_close(&r.loop), 0, "handles left open on the loop");
    core_config_free(cfg);
    core_broker_free(b);
}

Test(kafka, producer_reports_oversized_record)
{
    static const struct core_cfg_key *const tables[] = {core_config_keys};
    struct core_config *cfg = core_config_new(tables, 1);
    rd_kafka_conf_t *pc = NULL;
    struct core_kproducer *p = NULL;
    uv_loop_t loop;
    char eb[512], *big = calloc(1, 2000000);

    cr_assert_eq(core_config_set_arg(cfg, "broker.bootstrap=127.0.0.1:1", eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(core_kafka_conf_new(cfg, CORE_KAFKA_PRODUCER, NULL, &pc, eb, sizeof(eb)), CORE_OK);
    uv_loop_init(&loop);
    cr_assert_eq(core_kproducer_new(&loop, pc, NULL, NULL, &p, eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(core_kproducer_send(p, "t", 0, NULL, 0, big, 2000000, NULL), CORE_ETOOBIG);
    core_kproducer_free(p);
    uv_run(&loop, UV_RUN_DEFAULT);
    cr_assert_eq(uv_loop_close(&loop), 0);
    core_config_free(cfg);
    free(big);
}
