/* test_kafka_refill.c - the consumer's refill nudge (core_kconsumer_set_refill) against a
 * real `gcdp broker`: with a small prefetch bound that the consumer fills by pausing now
 * and then, every record is delivered exactly once and in offset order per partition, the
 * nudge fires (and does not when it is off or when the queue never fills). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>
#include <uv.h>

#include "broker.h"
#include "core/config.h"
#include "core/kafka.h"
#include "core/kconf.h"
#include "core/log.h"

#define TOPIC "refill.t"
#define SMALL "refill.small" /* a few records: the queue never fills */
#define NPART 4

struct refill_ctx {
    const char *topic;
    uv_loop_t loop;
    uv_timer_t deadline;
    struct core_kconsumer *c;
    bool refill;
    int64_t want, consumed, pause_every;
    int64_t next[NPART]; /* next offset expected per partition */
    int64_t bad_order, bad_value;
    uint64_t nudges;
    double t_first, t_last;
    bool closed;
};

static double mono_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* n records per partition; the value of offset i of partition p is "p:i" padded to 120
 * bytes (zstd keeps the mock's 5 MiB-per-partition retention from evicting any). */
static void produce(const char *bootstrap, const char *topic, int n)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char eb[256], val[128];
    rd_kafka_t *rk;

    cr_assert(rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, eb, sizeof(eb)) == 0);
    cr_assert(rd_kafka_conf_set(conf, "compression.type", "zstd", eb, sizeof(eb)) == 0);
    cr_assert(rd_kafka_conf_set(conf, "linger.ms", "5", eb, sizeof(eb)) == 0);
    rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, eb, sizeof(eb));
    cr_assert_not_null(rk);
    for (int i = 0; i < n; i++)
        for (int p = 0; p < NPART; p++) {
            int l = snprintf(val, sizeof(val), "%d:%d:", p, i);
            memset(val + l, 'r', sizeof(val) - 1 - (size_t)l);
            val[sizeof(val) - 1] = 0;
            while (core_kafka_produce_copy(rk, topic, p, NULL, 0, val, strlen(val), NULL))
                rd_kafka_poll(rk, 10);
        }
    cr_assert_eq(rd_kafka_flush(rk, 30000), 0);
    rd_kafka_destroy(rk);
}

static void on_message(void *arg, const rd_kafka_message_t *m)
{
    struct refill_ctx *x = arg;
    char want[32];
    int l;

    if (m->partition < 0 || m->partition >= NPART || m->offset != x->next[m->partition])
        x->bad_order++;
    else
        x->next[m->partition]++;
    l = snprintf(want, sizeof(want), "%d:%" PRId64 ":", (int)m->partition, m->offset);
    if (m->len < (size_t)l || memcmp(m->payload, want, (size_t)l) != 0)
        x->bad_value++;
    if (x->consumed++ == 0)
        x->t_first = mono_s();
    x->t_last = mono_s();
    if (x->pause_every && x->consumed % x->pause_every == 0) {
        /* A slow consumer: the fetcher fills the queue to its bound meanwhile and stops. */
        struct timespec ts = {0, 100 * 1000000};
        nanosleep(&ts, NULL);
    }
    if (x->consumed == x->want)
        core_kconsumer_close(x->c);
}

static void on_closed(void *arg)
{
    struct refill_ctx *x = arg;
    x->closed = true;
    x->nudges = core_kconsumer_refill_nudges(x->c);
    core_kconsumer_detach(x->c);
    uv_close((uv_handle_t *)&x->deadline, NULL);
}

static void on_deadline(uv_timer_t *t)
{
    struct refill_ctx *x = t->data;
    core_kconsumer_close(x->c);
}

static void run_consumer(const struct ts_broker *b, const char *group, struct refill_ctx *x)
{
    static const struct core_cfg_key *const tables[] = {core_config_keys};
    static const char *const sets[] = {
        "kafka.queued.max.messages.kbytes=256", "kafka.queued.min.messages=100000",
        "kafka.fetch.max.bytes=1000000", "kafka.max.partition.fetch.bytes=16384"};
    struct core_config *cfg = core_config_new(tables, 1);
    rd_kafka_conf_t *conf = NULL;
    const char *topics[] = {x->topic};
    struct core_kconsumer_ops ops = {.on_message = on_message, .on_closed = on_closed, .arg = x};
    char eb[512];

    cr_assert_not_null(cfg);
    cr_assert_eq(core_config_set_arg(cfg, b->set_bootstrap, eb, sizeof(eb)), CORE_OK, "%s", eb);
    for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++)
        cr_assert_eq(core_config_set_arg(cfg, sets[i], eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(core_kafka_conf_new(cfg, CORE_KAFKA_CONSUMER, group, &conf, eb, sizeof(eb)),
                 CORE_OK, "%s", eb);
    uv_loop_init(&x->loop);
    cr_assert_eq(core_kconsumer_new(&x->loop, conf, topics, 1, &ops, &x->c, eb, sizeof(eb)),
                 CORE_OK, "%s", eb);
    core_kconsumer_set_refill(x->c, x->refill);
    uv_timer_init(&x->loop, &x->deadline);
    x->deadline.data = x;
    uv_timer_start(&x->deadline, on_deadline, 60000, 0);
    uv_run(&x->loop, UV_RUN_DEFAULT);
    core_kconsumer_free(x->c);
    uv_run(&x->loop, UV_RUN_DEFAULT);
    cr_assert_eq(uv_loop_close(&x->loop), 0, "handles left open on the loop");
    core_config_free(cfg);
}

Test(kafka_refill, nudges_a_full_queue_and_delivers_every_record_once_in_order)
{
    enum { PER_PART = 10000 };
    struct ts_broker b;
    const char *extra[] = {"--topic", TOPIC ":4", "--topic", SMALL ":4", NULL};
    struct refill_ctx on = {TOPIC, .refill = true, .want = PER_PART * NPART, .pause_every = 4000};
    struct refill_ctx off = {TOPIC, .refill = false, .want = PER_PART * NPART, .pause_every = 4000};
    struct refill_ctx few = {SMALL, .refill = true, .want = NPART * 5};

    core_log_level = CORE_LOG_OFF;
    ts_broker_start(&b, extra);
    produce(b.bootstrap, TOPIC, PER_PART);
    produce(b.bootstrap, SMALL, 5);

    run_consumer(&b, "refill-on", &on);
    cr_assert(on.closed, "consumer did not leave its group");
    cr_assert_eq(on.consumed, on.want);
    cr_assert_eq(on.bad_order, 0, "a record was lost, repeated or out of order");
    cr_assert_eq(on.bad_value, 0, "a record's value does not match its offset");
    for (int p = 0; p < NPART; p++)
        cr_assert_eq(on.next[p], PER_PART, "partition %d ended at %" PRId64, p, on.next[p]);
    cr_assert_gt(on.nudges, 0, "the queue filled and drained but no nudge was sent");

    run_consumer(&b, "refill-off", &off);
    cr_assert_eq(off.consumed, off.want);
    cr_assert_eq(off.bad_order + off.bad_value, 0);
    cr_assert_eq(off.nudges, 0, "refill off, yet nudges were sent");
    /* For the log only (timing depends on the machine): off waits for librdkafka's 1 s
     * wake-up after each drain. */
    cr_log_info("refill on: %.2f s, %" PRIu64 " nudges; off: %.2f s", on.t_last - on.t_first,
                on.nudges, off.t_last - off.t_first);

    /* A queue that never fills (20 records in all): no nudge. */
    run_consumer(&b, "refill-few", &few);
    cr_assert_eq(few.consumed, few.want);
    cr_assert_eq(few.bad_order + few.bad_value, 0);
    cr_assert_eq(few.nudges, 0, "a queue that never filled was nudged");
    ts_broker_stop(&b);
}
