/* broker.c - mock cluster lifecycle and explicit topic creation (KAFKA.md §8.1). */
#include "core/broker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "core/log.h"
#include "core/mem.h"

struct core_broker {
    rd_kafka_t *rk; /* the handle the mock cluster hangs off (never produces) */
    rd_kafka_mock_cluster_t *mc;
    int nbrokers;
};

core_err core_broker_topic_create(struct core_broker *b, const char *topic, int partitions)
{
    int rf = b->nbrokers < 3 ? b->nbrokers : 3;
    rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(b->mc, topic, partitions, rf);
    if (err) {
        CORE_ERROR("broker: create topic '%s': %s", topic, rd_kafka_err2str(err));
        return CORE_EKAFKA;
    }
    return CORE_OK;
}

core_err core_broker_new(int nbrokers, const char *const *topics, size_t ntopics, int partitions,
                         struct core_broker **out, char *eb, size_t ebn)
{
    struct core_broker *b;
    rd_kafka_conf_t *conf;
    char why[512];
    core_err rc = CORE_OK;

    if (nbrokers < 1 || nbrokers > CORE_BROKER_MAX_BROKERS || partitions < 1 ||
        partitions > 10000) {
        snprintf(eb, ebn, "brokers must be 1..%d and partitions 1..10000", CORE_BROKER_MAX_BROKERS);
        return CORE_EINVAL;
    }
    b = core_xcalloc(1, sizeof(*b));
    b->nbrokers = nbrokers;
    conf = rd_kafka_conf_new();
    /* The handle only owns the cluster; keep it quiet and thread-light. */
    if (rd_kafka_conf_set(conf, "log_level", "3", why, sizeof(why)) != RD_KAFKA_CONF_OK) {
        rd_kafka_conf_destroy(conf);
        snprintf(eb, ebn, "%s", why);
        free(b);
        return CORE_EKAFKA;
    }
    b->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof(why));
    if (!b->rk) {
        rd_kafka_conf_destroy(conf);
        snprintf(eb, ebn, "rd_kafka_new: %s", why);
        free(b);
        return CORE_EKAFKA;
    }
    b->mc = rd_kafka_mock_cluster_new(b->rk, nbrokers);
    if (!b->mc) {
        snprintf(eb, ebn, "rd_kafka_mock_cluster_new failed");
        rc = CORE_EKAFKA;
        goto out;
    }
    for (size_t i = 0; i < ntopics && rc == CORE_OK; i++) {
        rc = core_broker_topic_create(b, topics[i], partitions);
        if (rc != CORE_OK)
            snprintf(eb, ebn, "cannot create topic '%s'", topics[i]);
    }
out:
    if (rc != CORE_OK) {
        core_broker_free(b);
        return rc;
    }
    *out = b;
    return CORE_OK;
}

core_err core_broker_control(struct core_broker *b, const char *line)
{
    rd_kafka_resp_err_t err;
    char *end;
    long ms;

    if (strncmp(line, "down", 4) == 0 && (line[4] == '\0' || line[4] == '\n')) {
        err = rd_kafka_mock_broker_set_down(b->mc, -1);
    } else if (strncmp(line, "up", 2) == 0 && (line[2] == '\0' || line[2] == '\n')) {
        err = rd_kafka_mock_broker_set_up(b->mc, -1);
    } else if (strncmp(line, "rtt ", 4) == 0) {
        ms = strtol(line + 4, &end, 10);
        if (end == line + 4 || (*end && *end != '\n') || ms < 0 || ms > 600000)
            return CORE_EINVAL;
        err = rd_kafka_mock_broker_set_rtt(b->mc, -1, (int)ms);
    } else {
        return CORE_EINVAL;
    }
    if (err) {
        CORE_ERROR("broker control '%s': %s", line, rd_kafka_err2str(err));
        return CORE_EKAFKA;
    }
    CORE_INFO("broker control: %s", line);
    return CORE_OK;
}

const char *core_broker_bootstrap(const struct core_broker *b)
{
    return rd_kafka_mock_cluster_bootstraps(b->mc);
}

void core_broker_free(struct core_broker *b)
{
    if (!b)
        return;
    if (b->mc)
        rd_kafka_mock_cluster_destroy(b->mc);
    if (b->rk)
        rd_kafka_destroy(b->rk);
    free(b);
}
