/* test_kafka_gap.c - the consumer bridge (core/kafka.h) against a real `gcdp broker`:
 * commit-and-restart continuity, and loud detection of data the mock's 5 MiB retention
 * evicted before it was consumed (KAFKA.md §3.1): the lost range is reported exactly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>
#include <uv.h>

#include "broker.h"
#include "core/config.h"
#include "core/kafka.h"
#include "core/kconf.h"
#include "core/log.h"

#define TOPIC "gap.t"

struct cons_ctx {
    uv_loop_t loop;
    uv_timer_t deadline;
    struct core_kconsumer *c;
    int64_t consumed, first_offset, last_offset, want;
    int64_t gaps, gap_from, gap_to;
    bool commit_done, commit_ok, closed, stop_on_gap;
};

static void produce(const char *bootstrap, int n, size_t size)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char eb[256], *buf = malloc(size);
    rd_kafka_t *rk;

    memset(buf, 'x', size);
    cr_assert(rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, eb, sizeof(eb)) == 0);
    cr_assert(rd_kafka_conf_set(conf, "linger.ms", "0", eb, sizeof(eb)) == 0);
    rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, eb, sizeof(eb));
    cr_assert_not_null(rk);
    for (int i = 0; i < n; i++)
        while (core_kafka_produce_copy(rk, TOPIC, 0, NULL, 0, buf, size, NULL))
            rd_kafka_poll(rk, 10);
    cr_assert_eq(rd_kafka_flush(rk, 30000), 0);
    rd_kafka_destroy(rk);
    free(buf);
}

static void on_message(void *arg, const rd_kafka_message_t *m)
{
    struct cons_ctx *x = arg;
    if (x->consumed++ == 0)
        x->first_offset = m->offset;
    x->last_offset = m->offset;
    if (x->consumed == x->want && !x->stop_on_gap) {
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, TOPIC, 0)->offset = m->offset + 1;
        cr_assert_eq(core_kconsumer_commit(x->c, l), CORE_OK);
        rd_kafka_topic_partition_list_destroy(l);
    }
}

static void on_commit(void *arg, rd_kafka_resp_err_t err,
                      const rd_kafka_topic_partition_list_t *offsets)
{
    struct cons_ctx *x = arg;
    (void)offsets;
    x->commit_done = true;
    x->commit_ok = err == 0;
    core_kconsumer_close(x->c);
}

static void on_gap(void *arg, const char *topic, int32_t p, int64_t from, int64_t to)
{
    struct cons_ctx *x = arg;
    (void)topic;
    (void)p;
    x->gaps++;
    x->gap_from = from;
    x->gap_to = to;
    if (x->stop_on_gap)
        core_kconsumer_close(x->c);
}

static void on_closed(void *arg)
{
    struct cons_ctx *x = arg;
    x->closed = true;
    core_kconsumer_detach(x->c);
    uv_close((uv_handle_t *)&x->deadline, NULL);
}

static void on_deadline(uv_timer_t *t)
{
    struct cons_ctx *x = t->data;
    core_kconsumer_close(x->c);
}

/* Run a group member until it has consumed `want` records (then commit + close) or, with
 * stop_on_gap, until a gap is reported; 30 s deadline. */
static void run_member(const char *set_bootstrap, struct cons_ctx *x)
{
    static const struct core_cfg_key *const tables[] = {core_config_keys};
    struct core_config *cfg = core_config_new(tables, 1);
    rd_kafka_conf_t *conf = NULL;
    const char *topics[] = {TOPIC};
    struct core_kconsumer_ops ops = {.on_message = on_message,
                                     .on_commit = on_commit,
                                     .on_gap = on_gap,
                                     .on_closed = on_closed,
                                     .arg = x};
    char eb[512];

    cr_assert_not_null(cfg);
    cr_assert_eq(core_config_set_arg(cfg, set_bootstrap, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(core_kafka_conf_new(cfg, CORE_KAFKA_CONSUMER, "gap-g", &conf, eb, sizeof(eb)),
                 CORE_OK, "%s", eb);
    uv_loop_init(&x->loop);
    cr_assert_eq(core_kconsumer_new(&x->loop, conf, topics, 1, &ops, &x->c, eb, sizeof(eb)),
                 CORE_OK, "%s", eb);
    uv_timer_init(&x->loop, &x->deadline);
    x->deadline.data = x;
    uv_timer_start(&x->deadline, on_deadline, 30000, 0);
    uv_run(&x->loop, UV_RUN_DEFAULT);
    core_kconsumer_free(x->c);
    uv_run(&x->loop, UV_RUN_DEFAULT);
    cr_assert_eq(uv_loop_close(&x->loop), 0, "handles left open on the loop");
    core_config_free(cfg);
}

Test(kafka_gap, commit_restart_continues_and_retention_loss_is_reported)
{
    struct ts_broker b;
    const char *extra[] = {"--topic", TOPIC ":1", NULL};
    struct cons_ctx a = {.want = 10}, c = {.stop_on_gap = true};

    core_log_level = CORE_LOG_OFF;
    ts_broker_start(&b, extra);
    produce(b.bootstrap, 10, 100);
    run_member(b.set_bootstrap, &a);
    cr_assert_eq(a.consumed, 10);
    cr_assert(a.commit_done && a.commit_ok, "commit of offset 10 failed");
    cr_assert(a.closed, "consumer did not leave its group");
    cr_assert_eq(a.gaps, 0, "a clean run reported a gap");

    /* 8 MiB into the one partition: the mock keeps 5 MiB, so offsets 10.. are evicted. */
    produce(b.bootstrap, 800, 10240);
    run_member(b.set_bootstrap, &c);
    cr_log_info("c: consumed %lld first %lld last %lld", (long long)c.consumed,
                (long long)c.first_offset, (long long)c.last_offset);
    cr_assert_eq(c.gaps, 1, "eviction past the committed offset was not reported");
    cr_assert_eq(c.gap_from, 10, "lost range starts at the committed offset");
    cr_assert_eq(c.gap_to, c.first_offset, "lost range ends where consumption resumed");
    cr_assert_gt(c.gap_to - c.gap_from, 100);
    ts_broker_stop(&b);
}
