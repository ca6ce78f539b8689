/* lagguard.c - consumer-lag back-pressure (see lagguard.h). */
#include "lagguard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ksync.h"
#include "core/mem.h"

/* Kafka record-batch overhead per small record is ~20-70 bytes; count 70 (conservative). */
#define RECORD_OVERHEAD  70.0
#define QUERY_TIMEOUT_MS 2000

struct sim_lagguard {
    rd_kafka_t *producer; /* borrowed */
    rd_kafka_t *group;    /* consumer handle with group.id; never subscribes */
    char *topic;
    size_t max_bytes;
    rd_kafka_topic_partition_list_t *parts;
};

static core_err partitions(struct sim_lagguard *g, char *eb, size_t ebn)
{
    int32_t ids[4096];
    int n = 0;
    core_err rc = core_kafka_partitions(g->producer, g->topic, 5000, ids, 4096, &n, eb, ebn);

    if (rc == CORE_OK && n < 1) {
        snprintf(eb, ebn, "lag guard: no metadata for topic '%s': unknown topic", g->topic);
        rc = CORE_EKAFKA;
    }
    if (rc != CORE_OK)
        return rc == CORE_ETOOBIG ? rc : CORE_EKAFKA;
    g->parts = rd_kafka_topic_partition_list_new(n);
    for (int i = 0; i < n; i++)
        rd_kafka_topic_partition_list_add(g->parts, g->topic, ids[i]);
    return CORE_OK;
}

core_err sim_lagguard_new(const struct core_config *cfg, rd_kafka_t *producer, const char *topic,
                          const char *group, size_t max_bytes, struct sim_lagguard **out, char *eb,
                          size_t ebn)
{
    struct sim_lagguard *g = core_xcalloc(1, sizeof(*g));
    core_err rc;

    g->producer = producer;
    g->topic = core_xstrdup(topic);
    g->max_bytes = max_bytes;
    /* a consumer handle with group.id that never subscribes: it only reads the group's
     * committed offsets */
    rc = core_kafka_client_new(cfg, CORE_KAFKA_CONSUMER, group, NULL, NULL, NULL, &g->group, eb,
                               ebn);
    if (rc == CORE_OK)
        rc = partitions(g, eb, ebn);
    if (rc != CORE_OK) {
        sim_lagguard_free(g);
        return rc;
    }
    *out = g;
    return CORE_OK;
}

core_err sim_lagguard_max_lag(struct sim_lagguard *g, double mean_bytes, double *lag_bytes)
{
    double worst = 0.0;

    rd_kafka_poll(g->group, 0); /* serve its logs/errors */
    for (int i = 0; i < g->parts->cnt; i++)
        g->parts->elems[i].offset = RD_KAFKA_OFFSET_INVALID;
    if (rd_kafka_committed(g->group, g->parts, QUERY_TIMEOUT_MS) != RD_KAFKA_RESP_ERR_NO_ERROR)
        return CORE_EKAFKA;
    for (int i = 0; i < g->parts->cnt; i++) {
        rd_kafka_topic_partition_t *tp = &g->parts->elems[i];
        int64_t lo = 0, hi = 0, pos;
        if (rd_kafka_query_watermark_offsets(g->producer, g->topic, tp->partition, &lo, &hi,
                                             QUERY_TIMEOUT_MS) != RD_KAFKA_RESP_ERR_NO_ERROR)
            return CORE_EKAFKA;
        pos = tp->offset >= 0 && tp->offset > lo ? tp->offset : lo;
        if (hi > pos && (double)(hi - pos) * (mean_bytes + RECORD_OVERHEAD) > worst)
            worst = (double)(hi - pos) * (mean_bytes + RECORD_OVERHEAD);
    }
    *lag_bytes = worst;
    return CORE_OK;
}

size_t sim_lagguard_limit(const struct sim_lagguard *g)
{
    return g->max_bytes;
}

void sim_lagguard_free(struct sim_lagguard *g)
{
    if (!g)
        return;
    if (g->parts)
        rd_kafka_topic_partition_list_destroy(g->parts);
    if (g->group)
        rd_kafka_destroy(g->group);
    free(g->topic);
    free(g);
}
