/* publish.c - θ to topics.calibration with a synchronous idempotent producer. */
#include "cal/publish.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "core/kconf.h"

/* Delivery result of the one record (set by the delivery-report callback). */
struct dr_state {
    int done;
    rd_kafka_resp_err_t err;
};

static void on_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    struct dr_state *st = rd_kafka_opaque(rk);
    (void)opaque;
    st->done = 1;
    st->err = m->err;
}

core_err cal_theta_publish(const struct core_config *cfg, const struct cal_theta *t,
                           int timeout_ms, char *eb, size_t ebn)
{
    struct dr_state st = {0, RD_KAFKA_RESP_ERR_NO_ERROR};
    rd_kafka_conf_t *conf = NULL;
    rd_kafka_t *rk = NULL;
    rd_kafka_topic_t *rkt = NULL;
    json_t *j = NULL;
    char *val = NULL, key[32], why[512];
    const char *topic = core_config_str(cfg, "topics.calibration");
    core_err rc;

    if (!core_config_str(cfg, "broker.bootstrap")) {
        snprintf(eb, ebn, "broker.bootstrap: needed to publish theta (e.g. --set "
                          "broker.bootstrap=@FILE written by `gcdp broker`)");
        return CORE_ECONFIG;
    }
    if ((rc = cal_theta_to_json(t, &j, eb, ebn)) != CORE_OK)
        return rc;
    val = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(j);
    if (!val) {
        snprintf(eb, ebn, "theta: JSON encoding failed");
        return CORE_ENOMEM;
    }
    snprintf(key, sizeof(key), "%" PRIu64, t->version);
    if ((rc = core_kafka_conf_new(cfg, CORE_KAFKA_PRODUCER, NULL, &conf, eb, ebn)) != CORE_OK)
        goto out;
    rd_kafka_conf_set_dr_msg_cb(conf, on_dr);
    rd_kafka_conf_set_opaque(conf, &st);
    if (!(rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof(why)))) {
        snprintf(eb, ebn, "kafka producer: %s", why);
        rc = CORE_EKAFKA;
        goto out;
    }
    conf = NULL; /* rd_kafka_new took ownership on success */
    /* rd_kafka_produce, not producev: its varargs macros are GNU statement expressions */
    if (!(rkt = rd_kafka_topic_new(rk, topic, NULL)) ||
        rd_kafka_produce(rkt, RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_COPY, val, strlen(val), key,
                         strlen(key), NULL) != 0) {
        snprintf(eb, ebn, "%s: produce failed: %s", topic, rd_kafka_err2str(rd_kafka_last_error()));
        rc = CORE_EKAFKA;
        goto out;
    }
    rd_kafka_flush(rk, timeout_ms);
    rd_kafka_poll(rk, 0);
    if (!st.done || st.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        snprintf(eb, ebn, "%s: theta not acknowledged within %d ms (%s)", topic, timeout_ms,
                 st.done ? rd_kafka_err2str(st.err) : "timed out");
        rc = CORE_EKAFKA;
    }
out:
    if (rkt)
        rd_kafka_topic_destroy(rkt);
    if (rk)
        rd_kafka_destroy(rk);
    if (conf)
        rd_kafka_conf_destroy(conf);
    free(val);
    return rc;
}
