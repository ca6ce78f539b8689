/* ctl_client.c - the operator's control-topic client (core/ctl_client.h). */
#include "core/ctl_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <librdkafka/rdkafka.h>

#include "core/ctl_listen.h"
#include "core/kafka.h"
#include "core/ksync.h"
#include "core/mem.h"

#define DELIVERY_TIMEOUT_MS "15000"

struct dr_state {
    int done;
    rd_kafka_resp_err_t err;
    int32_t partition;
    int64_t offset;
};

struct core_ctl_client {
    const struct core_config *cfg;
    rd_kafka_t *prod, *cons;
    struct dr_state dr;
};

static void on_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    struct dr_state *d = opaque;
    (void)rk;
    d->done = 1;
    d->err = m->err;
    d->partition = m->partition;
    d->offset = m->offset;
}

static core_err client(const struct core_config *cfg, enum core_kafka_role role,
                       struct dr_state *dr, rd_kafka_t **rk, char *eb, size_t ebn)
{
    static const char *const producer_extra[] = {"message.timeout.ms", DELIVERY_TIMEOUT_MS, NULL};
    char group[400], inst[300];
    core_err rc;

    /* consumer_poll needs a group id; the reader only assigns (never joins, never commits) */
    core_ctl_instance_id(inst, sizeof(inst));
    snprintf(group, sizeof(group), "gcdp.ctl.cli.%s", inst);
    rc = core_kafka_client_new(cfg, role, role == CORE_KAFKA_CONSUMER ? group : NULL,
                               role == CORE_KAFKA_PRODUCER ? producer_extra : NULL,
                               role == CORE_KAFKA_PRODUCER ? on_dr : NULL, dr, rk, eb, ebn);
    if (rc == CORE_OK && role == CORE_KAFKA_CONSUMER)
        rd_kafka_poll_set_consumer(*rk); /* client logs (log.queue) are served by the polls */
    return rc;
}

/* Assign every partition of topic at its current high watermark. */
static core_err assign_at_end(rd_kafka_t *rk, const char *topic, char *eb, size_t ebn)
{
    int32_t ids[1024];
    int n = 0;
    char why[512] = "";
    rd_kafka_topic_partition_list_t *l = NULL;
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;

    if (core_kafka_partitions(rk, topic, 10000, ids, 1024, &n, why, sizeof(why)) != CORE_OK ||
        n == 0) {
        snprintf(eb, ebn, "no metadata for %s (topics.status): %s", topic,
                 why[0] ? why : "unknown topic");
        return CORE_EKAFKA;
    }
    l = rd_kafka_topic_partition_list_new(n);
    for (int i = 0; i < n && !err; i++) {
        int64_t lo = 0, hi = 0;
        err = rd_kafka_query_watermark_offsets(rk, topic, ids[i], &lo, &hi, 10000);
        if (err)
            snprintf(eb, ebn, "%s[%d]: %s", topic, (int)ids[i], rd_kafka_err2str(err));
        else
            rd_kafka_topic_partition_list_add(l, topic, ids[i])->offset = hi;
    }
    if (!err && (err = rd_kafka_assign(rk, l)) != RD_KAFKA_RESP_ERR_NO_ERROR)
        snprintf(eb, ebn, "assign %s: %s", topic, rd_kafka_err2str(err));
    rd_kafka_topic_partition_list_destroy(l);
    return err ? CORE_EKAFKA : CORE_OK;
}

core_err core_ctl_client_new(const struct core_config *cfg, bool replies,
                             struct core_ctl_client **out, char *eb, size_t ebn)
{
    struct core_ctl_client *cl = core_xcalloc(1, sizeof(*cl));
    core_err rc = CORE_OK;

    cl->cfg = cfg;
    cl->dr = (struct dr_state){0, RD_KAFKA_RESP_ERR_NO_ERROR, -1, -1};
    if (replies) {
        rc = client(cfg, CORE_KAFKA_CONSUMER, NULL, &cl->cons, eb, ebn);
        if (rc == CORE_OK)
            rc = assign_at_end(cl->cons, core_config_str(cfg, "topics.status"), eb, ebn);
    }
    if (rc == CORE_OK)
        rc = client(cfg, CORE_KAFKA_PRODUCER, &cl->dr, &cl->prod, eb, ebn);
    if (rc != CORE_OK) {
        core_ctl_client_free(cl);
        return rc;
    }
    *out = cl;
    return CORE_OK;
}

void core_ctl_client_free(struct core_ctl_client *cl)
{
    if (!cl)
        return;
    if (cl->prod)
        rd_kafka_destroy(cl->prod);
    if (cl->cons) {
        rd_kafka_consumer_close(cl->cons);
        rd_kafka_destroy(cl->cons);
    }
    free(cl);
}

core_err core_ctl_client_publish(struct core_ctl_client *cl, const struct core_ctl_cmd *c,
                                 const char *text, int32_t *partition, int64_t *offset, char *eb,
                                 size_t ebn)
{
    const char *topic = core_config_str(cl->cfg, "topics.control");
    struct dr_state *dr = &cl->dr;
    rd_kafka_resp_err_t err =
        core_kafka_produce_copy(cl->prod, topic, RD_KAFKA_PARTITION_UA, c->nonce, strlen(c->nonce),
                                text, strlen(text), NULL);
    if (!err)
        rd_kafka_flush(cl->prod, 20000);
    if (err || !dr->done || dr->err) {
        snprintf(eb, ebn, "%s was NOT acknowledged by the broker (%s): %s",
                 core_ctl_cmd_name(c->cmd), topic,
                 rd_kafka_err2str(err        ? err
                                  : dr->done ? dr->err
                                             : RD_KAFKA_RESP_ERR__TIMED_OUT));
        return CORE_EKAFKA;
    }
    *partition = dr->partition;
    *offset = dr->offset;
    return CORE_OK;
}

/* A reply: a gcdp.status/1 object whose in_reply_to is nonce. */
static int is_reply(const rd_kafka_message_t *m, const char *nonce)
{
    json_t *j = json_loadb(m->payload, m->len, 0, NULL);
    const char *irt = json_string_value(json_object_get(j, "in_reply_to"));
    const char *schema = json_string_value(json_object_get(j, "schema"));
    int ok =
        irt && schema && strcmp(schema, CORE_CTL_STATUS_SCHEMA) == 0 && strcmp(irt, nonce) == 0;
    json_decref(j);
    return ok;
}

long core_ctl_client_replies(struct core_ctl_client *cl, const char *nonce, long wait_s, long count,
                             core_ctl_reply_fn *fn, void *arg)
{
    int64_t end = core_ctl_now_ms() + wait_s * 1000;
    long n = 0;

    while (core_ctl_now_ms() < end && (count == 0 || n < count)) {
        int64_t left = end - core_ctl_now_ms();
        rd_kafka_message_t *m = rd_kafka_consumer_poll(cl->cons, left > 200 ? 200 : (int)left + 1);
        if (!m)
            continue;
        if (!m->err && m->payload && is_reply(m, nonce)) {
            fn(arg, m->payload, m->len);
            n++;
        }
        rd_kafka_message_destroy(m);
    }
    return n;
}
