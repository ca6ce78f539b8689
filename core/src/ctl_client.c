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
    rd_kafka_t *prod;
    struct core_kread *cons; /* topics.status from its end, with replies */
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

static core_err client(const struct core_config *cfg, struct dr_state *dr, rd_kafka_t **rk,
                       char *eb, size_t ebn)
{
    static const char *const producer_extra[] = {"message.timeout.ms", DELIVERY_TIMEOUT_MS, NULL};
    return core_kafka_client_new(cfg, CORE_KAFKA_PRODUCER, NULL, producer_extra, on_dr, dr, rk, eb,
                                 ebn);
}

core_err core_ctl_client_new(const struct core_config *cfg, bool replies,
                             struct core_ctl_client **out, char *eb, size_t ebn)
{
    struct core_ctl_client *cl = core_xcalloc(1, sizeof(*cl));
    core_err rc = CORE_OK;

    cl->cfg = cfg;
    cl->dr = (struct dr_state){0, RD_KAFKA_RESP_ERR_NO_ERROR, -1, -1};
    if (replies) {
        char group[400], inst[300];
        core_ctl_instance_id(inst, sizeof(inst));
        snprintf(group, sizeof(group), "gcdp.ctl.cli.%s", inst);
        rc = core_kread_new(cfg, core_config_str(cfg, "topics.status"), group, true, &cl->cons, eb,
                            ebn);
    }
    if (rc == CORE_OK)
        rc = client(cfg, &cl->dr, &cl->prod, eb, ebn);
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
    core_kread_free(cl->cons);
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
        rd_kafka_message_t *m = core_kread_poll(cl->cons, left > 200 ? 200 : (int)left + 1);
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
