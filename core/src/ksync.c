/* ksync.c - client handles and the synchronous producer (see core/ksync.h). */
#include "core/ksync.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/kafka.h"
#include "core/mem.h"

struct core_ksync {
    rd_kafka_t *rk;
    char *topic;
    core_ksync_dr_fn *on_delivery;
    void *arg;
    const atomic_int *stop;
    atomic_uint_fast64_t *retries;
    uint64_t sent, acked, failed;
};

core_err core_kafka_client_new(const struct core_config *cfg, enum core_kafka_role role,
                               const char *group_id, const char *const *extra,
                               core_kafka_dr_fn *dr_cb, void *opaque, rd_kafka_t **out, char *eb,
                               size_t ebn)
{
    rd_kafka_conf_t *conf = NULL;
    char why[512];
    core_err rc = core_kafka_conf_new(cfg, role, group_id, &conf, eb, ebn);

    *out = NULL;
    for (size_t i = 0; rc == CORE_OK && extra && extra[i]; i += 2)
        rc = core_kafka_conf_set(conf, extra[i], extra[i + 1], eb, ebn);
    if (rc != CORE_OK) {
        if (conf)
            rd_kafka_conf_destroy(conf);
        return rc;
    }
    if (dr_cb)
        rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
    if (opaque)
        rd_kafka_conf_set_opaque(conf, opaque);
    *out = rd_kafka_new(role == CORE_KAFKA_PRODUCER ? RD_KAFKA_PRODUCER : RD_KAFKA_CONSUMER, conf,
                        why, sizeof(why));
    if (!*out) {
        rd_kafka_conf_destroy(conf); /* rd_kafka_new takes conf on success only */
        snprintf(eb, ebn, "cannot create the kafka %s: %s",
                 role == CORE_KAFKA_PRODUCER ? "producer" : "consumer", why);
        return CORE_EKAFKA;
    }
    rd_kafka_set_log_queue(*out, NULL); /* logs to the main queue that polling serves */
    return CORE_OK;
}

core_err core_kafka_partitions(rd_kafka_t *rk, const char *topic, int timeout_ms, int32_t *ids,
                               int max, int *n, char *eb, size_t ebn)
{
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topic, NULL);
    rd_kafka_resp_err_t err =
        t ? rd_kafka_metadata(rk, 0, t, &md, timeout_ms) : rd_kafka_last_error();
    core_err rc = CORE_OK;

    *n = 0;
    if (!err && md->topic_cnt != 1)
        err = RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
    if (!err && md->topics[0].err && md->topics[0].err != RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
        err = md->topics[0].err;
    if (err) {
        snprintf(eb, ebn, "%s: no metadata: %s", topic, rd_kafka_err2str(err));
        rc = CORE_EKAFKA;
    } else if (!md->topics[0].err) {
        *n = md->topics[0].partition_cnt;
        for (int i = 0; i < *n && i < max; i++)
            ids[i] = md->topics[0].partitions[i].id;
        if (*n > max) {
            snprintf(eb, ebn, "%s: %d partitions, more than %d", topic, *n, max);
            rc = CORE_ETOOBIG;
        }
    }
    if (md)
        rd_kafka_metadata_destroy(md);
    if (t)
        rd_kafka_topic_destroy(t);
    return rc;
}

struct core_kread {
    rd_kafka_t *rk;
};

/* Assign every partition of topic at its high watermark (at_end) or at the beginning. */
static core_err assign_all(rd_kafka_t *rk, const char *topic, bool at_end, char *eb, size_t ebn)
{
    int32_t ids[1024];
    int n = 0;
    char why[512] = "";
    rd_kafka_topic_partition_list_t *l = NULL;
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;

    if (core_kafka_partitions(rk, topic, 10000, ids, 1024, &n, why, sizeof(why)) != CORE_OK ||
        n == 0) {
        snprintf(eb, ebn, "no metadata for %s: %s", topic, why[0] ? why : "unknown topic");
        return CORE_EKAFKA;
    }
    l = rd_kafka_topic_partition_list_new(n);
    for (int i = 0; i < n && !err; i++) {
        int64_t lo = 0, hi = 0;
        if (at_end)
            err = rd_kafka_query_watermark_offsets(rk, topic, ids[i], &lo, &hi, 10000);
        if (err)
            snprintf(eb, ebn, "%s[%d]: %s", topic, (int)ids[i], rd_kafka_err2str(err));
        else
            rd_kafka_topic_partition_list_add(l, topic, ids[i])->offset =
                at_end ? hi : RD_KAFKA_OFFSET_BEGINNING;
    }
    if (!err && (err = rd_kafka_assign(rk, l)) != RD_KAFKA_RESP_ERR_NO_ERROR)
        snprintf(eb, ebn, "assign %s: %s", topic, rd_kafka_err2str(err));
    rd_kafka_topic_partition_list_destroy(l);
    return err ? CORE_EKAFKA : CORE_OK;
}

core_err core_kread_new(const struct core_config *cfg, const char *topic, const char *group,
                        bool at_end, struct core_kread **out, char *eb, size_t ebn)
{
    rd_kafka_t *rk = NULL; /* the consumer profile: enable.partition.eof=false */
    core_err rc =
        core_kafka_client_new(cfg, CORE_KAFKA_CONSUMER, group, NULL, NULL, NULL, &rk, eb, ebn);

    *out = NULL;
    if (rc != CORE_OK)
        return rc;
    rd_kafka_poll_set_consumer(rk); /* client logs (log.queue) are served by the polls */
    rc = assign_all(rk, topic, at_end, eb, ebn);
    if (rc != CORE_OK) {
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
        return rc;
    }
    *out = core_xcalloc(1, sizeof(**out));
    (*out)->rk = rk;
    return CORE_OK;
}

rd_kafka_message_t *core_kread_poll(struct core_kread *r, int timeout_ms)
{
    return rd_kafka_consumer_poll(r->rk, timeout_ms);
}

void core_kread_free(struct core_kread *r)
{
    if (!r)
        return;
    rd_kafka_consumer_close(r->rk);
    rd_kafka_destroy(r->rk);
    free(r);
}

static void on_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    struct core_ksync *p = opaque;

    (void)rk;
    if (m->err)
        p->failed++;
    else
        p->acked++;
    if (p->on_delivery)
        p->on_delivery(p->arg, m->err);
}

core_err core_ksync_new(const struct core_config *cfg, const struct core_ksync_opts *o,
                        struct core_ksync **out, char *eb, size_t ebn)
{
    struct core_ksync *p;
    const char **extra;
    char num[32];
    size_t n = 0;
    core_err rc;

    *out = NULL;
    if (!o->topic || !*o->topic) {
        snprintf(eb, ebn, "kafka producer: no topic");
        return CORE_EINVAL;
    }
    while (o->extra && o->extra[n])
        n += 2;
    extra = core_xcalloc(n + 3, sizeof(*extra));
    if (n)
        memcpy(extra, o->extra, n * sizeof(*extra));
    if (o->max_message_bytes + 1024 > 1000000) { /* librdkafka's default message.max.bytes */
        snprintf(num, sizeof(num), "%zu", o->max_message_bytes + 65536);
        extra[n] = "message.max.bytes";
        extra[n + 1] = num;
    }
    p = core_xcalloc(1, sizeof(*p));
    p->on_delivery = o->on_delivery;
    p->arg = o->arg;
    p->stop = o->stop;
    p->retries = o->retries;
    rc = core_kafka_client_new(cfg, CORE_KAFKA_PRODUCER, NULL, extra, on_dr, p, &p->rk, eb, ebn);
    free(extra);
    if (rc != CORE_OK) {
        free(p);
        return rc;
    }
    p->topic = core_xstrdup(o->topic);
    *out = p;
    return CORE_OK;
}

/* One produce attempt; the headers (built here) are freed unless librdkafka took them. */
static rd_kafka_resp_err_t produce_once(struct core_ksync *p, int32_t partition, const void *key,
                                        size_t key_len, const void *value, size_t len,
                                        const char *const *names, const char *const *values,
                                        size_t nhdr)
{
    rd_kafka_headers_t *h = NULL;
    rd_kafka_resp_err_t err;

    if (nhdr > 0) {
        h = rd_kafka_headers_new(nhdr);
        for (size_t i = 0; i < nhdr; i++)
            if (values[i])
                rd_kafka_header_add(h, names[i], -1, values[i], -1);
    }
    err =
        core_kafka_produce_copy_hdrs(p->rk, p->topic, partition, key, key_len, value, len, h, NULL);
    if (err && h)
        rd_kafka_headers_destroy(h);
    return err;
}

core_err core_ksync_send(struct core_ksync *p, const void *key, size_t key_len, const void *value,
                         size_t len, const char *const *names, const char *const *values,
                         size_t nhdr, char *eb, size_t ebn)
{
    return core_ksync_send_to(p, RD_KAFKA_PARTITION_UA, key, key_len, value, len, names, values,
                              nhdr, eb, ebn);
}

core_err core_ksync_send_to(struct core_ksync *p, int32_t partition, const void *key,
                            size_t key_len, const void *value, size_t len, const char *const *names,
                            const char *const *values, size_t nhdr, char *eb, size_t ebn)
{
    rd_kafka_resp_err_t err;

    while ((err = produce_once(p, partition, key, key_len, value, len, names, values, nhdr)) ==
           RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        if (p->stop && atomic_load(p->stop))
            return CORE_ESTATE; /* not produced: nothing is lost, the caller ends here */
        if (p->retries)
            atomic_fetch_add(p->retries, 1);
        rd_kafka_poll(p->rk, 50); /* never drop: serve reports until there is room */
    }
    if (err) {
        snprintf(eb, ebn, "%s: produce failed: %s", p->topic, rd_kafka_err2str(err));
        return CORE_EKAFKA;
    }
    p->sent++;
    rd_kafka_poll(p->rk, 0);
    return CORE_OK;
}

void core_ksync_poll(struct core_ksync *p, int timeout_ms)
{
    rd_kafka_poll(p->rk, timeout_ms);
}

uint64_t core_ksync_inflight(const struct core_ksync *p)
{
    return p->sent - p->acked - p->failed;
}

void core_ksync_counts(const struct core_ksync *p, uint64_t *sent, uint64_t *acked,
                       uint64_t *failed)
{
    if (sent)
        *sent = p->sent;
    if (acked)
        *acked = p->acked;
    if (failed)
        *failed = p->failed;
}

core_err core_ksync_flush(struct core_ksync *p, int timeout_ms, uint64_t *unreported, char *eb,
                          size_t ebn)
{
    int64_t deadline = core_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    uint64_t left;

    /* rd_kafka_flush also waits for internal requests; count only our messages */
    while (core_ksync_inflight(p) > 0 && core_mono_ms() < deadline) {
        int64_t ms = deadline - core_mono_ms();
        rd_kafka_flush(p->rk, (int)(ms > 100 ? 100 : ms > 0 ? ms : 0));
        rd_kafka_poll(p->rk, 0);
    }
    rd_kafka_poll(p->rk, 0);
    left = core_ksync_inflight(p);
    if (unreported)
        *unreported = left;
    if (left > 0 || p->failed > 0) {
        snprintf(eb, ebn, "%s: %llu message(s) failed, %llu not acknowledged within %d ms",
                 p->topic, (unsigned long long)p->failed, (unsigned long long)left, timeout_ms);
        return CORE_EKAFKA;
    }
    return CORE_OK;
}

rd_kafka_t *core_ksync_handle(struct core_ksync *p)
{
    return p->rk;
}

void core_ksync_free(struct core_ksync *p)
{
    if (!p)
        return;
    rd_kafka_destroy(p->rk);
    free(p->topic);
    free(p);
}
