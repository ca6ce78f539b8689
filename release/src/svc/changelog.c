/* changelog.c - restore a changelog partition into the local ledger, and the topic check.
 * Contract: rel/changelog.h. */
#include "rel/changelog.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/log.h"

static int64_t clock_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

core_err rel_changelog_topic_check(const struct core_config *cfg, char *eb, size_t ebn)
{
    static const char *const others[] = {
        "topics.raw",           "topics.rejected",       "topics.windows",
        "topics.calibration",   "topics.released",       "topics.release_rejected",
        "topics.control",       "topics.status",         "topics.audit",
        "topics.learner_updates", "topics.learner_global", "topics.learner_dag"};
    static const char *const defaults[] = {"sensors.raw", "sensors.rejected", "gcdp.windows",
                                           "gcdp.calibration", "gcdp.released",
                                           "gcdp.windows.rejected", "gcdp.control",
                                           "gcdp.status", "gcdp.audit"};
    const char *cl = core_config_str(cfg, "topics.ledger_changelog");

    if (!cl || !cl[0]) {
        snprintf(eb, ebn, "topics.ledger_changelog: unset");
        return CORE_ECONFIG;
    }
    for (size_t i = 0; i < sizeof(others) / sizeof(*others); i++) {
        const char *t = core_config_str(cfg, others[i]);
        if (t && strcmp(t, cl) == 0) {
            snprintf(eb, ebn, "topics.ledger_changelog = %s is also %s: the changelog is a "
                     "topic of its own", cl, others[i]);
            return CORE_ECONFIG;
        }
    }
    for (size_t i = 0; i < sizeof(defaults) / sizeof(*defaults); i++)
        if (strcmp(defaults[i], cl) == 0) {
            snprintf(eb, ebn, "topics.ledger_changelog = %s is the default name of another "
                     "topic: the changelog is a topic of its own", cl);
            return CORE_ECONFIG;
        }
    return CORE_OK;
}

/* One record of partition p: the truncation decision on the first, then adopt. */
static core_err restore_one(const rd_kafka_message_t *m, const char *topic, bool first,
                            int64_t low, struct core_dp_ledger *l, int64_t horizon_ms,
                            struct rel_changelog_restore_stats *st, char *eb, size_t ebn)
{
    enum core_dp_adopted what = CORE_DP_ADOPTED_SAME;
    char id[CORE_DP_LEDGER_MAX_ID + 1] = "", why[768] = "";
    core_err rc;

    if (first) {
        int64_t ts = rd_kafka_message_timestamp(m, NULL), now = clock_ms();
        st->truncated = rel_changelog_truncated(low, ts >= 0 ? ts : now, now, horizon_ms);
        if (st->truncated)
            return CORE_OK;
    }
    st->rows++;
    if (!m->payload || m->len == 0)
        return CORE_OK; /* a compaction tombstone: never written by gcdp */
    rc = core_dp_ledger_adopt_row(l, m->payload, m->len, &what, id, sizeof(id), why,
                                  sizeof(why));
    if (rc != CORE_OK) {
        snprintf(eb, ebn, "%s partition %" PRId32 " offset %" PRId64 ": %s", topic,
                 m->partition, m->offset, why[0] ? why : core_strerror(rc));
        return rc;
    }
    st->adopted += what == CORE_DP_ADOPTED_NEW || what == CORE_DP_ADOPTED_OVER_CAP;
    st->over_cap += what == CORE_DP_ADOPTED_OVER_CAP;
    st->same += what == CORE_DP_ADOPTED_SAME;
    st->expired += what == CORE_DP_ADOPTED_EXPIRED;
    return CORE_OK;
}

/* Read [low, high) of topic/p (assigned at low) and adopt every row. */
static core_err restore_range(rd_kafka_t *rk, const char *topic, int32_t p, int64_t low,
                              int64_t high, struct core_dp_ledger *l, int64_t horizon_ms,
                              int timeout_ms, struct rel_changelog_restore_stats *st, char *eb,
                              size_t ebn)
{
    int64_t deadline = clock_ms() + timeout_ms, next = low;
    bool first = true;
    core_err rc = CORE_OK;

    while (rc == CORE_OK && next < high && !st->truncated) {
        rd_kafka_message_t *m;
        if (clock_ms() > deadline) {
            snprintf(eb, ebn, "%s partition %" PRId32 ": restore not done within %d ms (at "
                     "offset %" PRId64 " of %" PRId64 ")", topic, p, timeout_ms, next, high);
            return CORE_EKAFKA;
        }
        if (!(m = rd_kafka_consumer_poll(rk, 200)))
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            next = high; /* read to the end (compaction may leave offsets out) */
        } else if (m->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET) {
            st->truncated = true; /* rows deleted while we read: fail closed */
        } else if (m->err) {
            CORE_WARN("%s partition %" PRId32 ": restore: %s (retrying)", topic, p,
                      rd_kafka_message_errstr(m));
        } else if (m->partition == p && m->offset >= next) {
            rc = restore_one(m, topic, first, low, l, horizon_ms, st, eb, ebn);
            first = false;
            next = m->offset + 1;
        }
        rd_kafka_message_destroy(m);
    }
    return rc;
}

core_err rel_changelog_restore(rd_kafka_t *rk, const char *topic, int32_t p,
                               struct core_dp_ledger *l, int64_t horizon_ms, int timeout_ms,
                               struct rel_changelog_restore_stats *st, char *eb, size_t ebn)
{
    int64_t low = 0, high = 0;
    rd_kafka_topic_partition_list_t *a;
    rd_kafka_resp_err_t e;
    core_err rc;

    memset(st, 0, sizeof(*st));
    e = rd_kafka_query_watermark_offsets(rk, topic, p, &low, &high, timeout_ms);
    if (e == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART || e == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
        e == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION)
        return CORE_OK; /* nothing was ever written to it */
    if (e) {
        snprintf(eb, ebn, "%s partition %" PRId32 ": watermarks: %s", topic, p,
                 rd_kafka_err2str(e));
        return CORE_EKAFKA;
    }
    if (high <= low) {
        st->truncated = rel_changelog_truncated(low, -1, clock_ms(), horizon_ms);
        return CORE_OK;
    }
    a = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(a, topic, p)->offset = low;
    e = rd_kafka_assign(rk, a);
    rd_kafka_topic_partition_list_destroy(a);
    if (e) {
        snprintf(eb, ebn, "%s partition %" PRId32 ": assign: %s", topic, p,
                 rd_kafka_err2str(e));
        return CORE_EKAFKA;
    }
    rc = restore_range(rk, topic, p, low, high, l, horizon_ms, timeout_ms, st, eb, ebn);
    (void)rd_kafka_assign(rk, NULL);
    return rc;
}
