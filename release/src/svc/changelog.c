/* changelog.c - restore a changelog partition into the local ledger, and the topic check.
 * Contract: rel/changelog.h. */
#include "rel/changelog.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/mem.h"

core_err rel_changelog_topic_check(const struct core_config *cfg, char *eb, size_t ebn)
{
    static const char *const others[] = {"topics.raw",
                                         "topics.rejected",
                                         "topics.windows",
                                         "topics.calibration",
                                         "topics.released",
                                         "topics.release_rejected",
                                         "topics.control",
                                         "topics.status",
                                         "topics.audit",
                                         "topics.learner_updates",
                                         "topics.learner_global",
                                         "topics.learner_dag"};
    static const char *const defaults[] = {
        "sensors.raw",      "sensors.rejected", "gcdp.windows",
        "gcdp.calibration", "gcdp.released",    "gcdp.windows.rejected",
        "gcdp.control",     "gcdp.status",      "gcdp.audit"};
    const char *cl = core_config_str(cfg, "topics.ledger_changelog");

    if (!cl || !cl[0]) {
        snprintf(eb, ebn, "topics.ledger_changelog: unset");
        return CORE_ECONFIG;
    }
    for (size_t i = 0; i < sizeof(others) / sizeof(*others); i++) {
        const char *t = core_config_str(cfg, others[i]);
        if (t && strcmp(t, cl) == 0) {
            snprintf(eb, ebn,
                     "topics.ledger_changelog = %s is also %s: the changelog is a "
                     "topic of its own",
                     cl, others[i]);
            return CORE_ECONFIG;
        }
    }
    for (size_t i = 0; i < sizeof(defaults) / sizeof(*defaults); i++)
        if (strcmp(defaults[i], cl) == 0) {
            snprintf(eb, ebn,
                     "topics.ledger_changelog = %s is the default name of another "
                     "topic: the changelog is a topic of its own",
                     cl);
            return CORE_ECONFIG;
        }
    return CORE_OK;
}

#define RESTORE_BATCH 256 /* rows adopted per group commit */

/* Rows read and not yet adopted (copies), with their offsets for the error message. */
struct pend {
    char *rows[RESTORE_BATCH];
    size_t lens[RESTORE_BATCH];
    int64_t offs[RESTORE_BATCH];
    size_t n;
};

static void pend_clear(struct pend *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->rows[i]);
    b->n = 0;
}

/* Adopt the pending rows in one group commit; count the results. */
static core_err pend_adopt(struct pend *b, const char *topic, int32_t p, struct core_dp_ledger *l,
                           struct rel_changelog_restore_stats *st, char *eb, size_t ebn)
{
    enum core_dp_adopted what[RESTORE_BATCH];
    char why[768] = "";
    size_t bad = 0;
    core_err rc;

    if (b->n == 0)
        return CORE_OK;
    rc = core_dp_ledger_adopt_rows(l, b->n, (const char *const *)b->rows, b->lens, what, &bad, why,
                                   sizeof(why));
    if (rc != CORE_OK) {
        if (bad < b->n)
            snprintf(eb, ebn, "%s partition %" PRId32 " offset %" PRId64 ": %s", topic, p,
                     b->offs[bad], why[0] ? why : core_strerror(rc));
        else
            snprintf(eb, ebn, "%s partition %" PRId32 ": adopting %zu rows: %s", topic, p, b->n,
                     why[0] ? why : core_strerror(rc));
        pend_clear(b);
        return rc;
    }
    for (size_t i = 0; i < b->n; i++) {
        st->adopted += what[i] == CORE_DP_ADOPTED_NEW || what[i] == CORE_DP_ADOPTED_OVER_CAP;
        st->over_cap += what[i] == CORE_DP_ADOPTED_OVER_CAP;
        st->same += what[i] == CORE_DP_ADOPTED_SAME;
        st->expired += what[i] == CORE_DP_ADOPTED_EXPIRED;
    }
    pend_clear(b);
    return CORE_OK;
}

/* One record of partition p: the truncation decision on the first, then queue it. */
static core_err restore_one(const rd_kafka_message_t *m, const char *topic, bool first, int64_t low,
                            struct core_dp_ledger *l, int64_t horizon_ms, struct pend *b,
                            json_t *known, struct rel_changelog_restore_stats *st, char *eb,
                            size_t ebn)
{
    if (first) {
        int64_t ts = rd_kafka_message_timestamp(m, NULL), now = core_wall_ms();
        st->truncated = rel_changelog_truncated(low, ts >= 0 ? ts : now, now, horizon_ms);
        if (st->truncated)
            return CORE_OK;
    }
    st->rows++;
    if (!m->payload || m->len == 0)
        return CORE_OK; /* a compaction tombstone: never written by gcdp */
    if (known && m->key && m->key_len > 0 && m->key_len <= CORE_DP_LEDGER_MAX_ID) {
        char id[CORE_DP_LEDGER_MAX_ID + 1];
        memcpy(id, m->key, m->key_len);
        id[m->key_len] = '\0';
        json_object_set_new(known, id, json_true());
    }
    b->rows[b->n] = core_xmalloc(m->len);
    memcpy(b->rows[b->n], m->payload, m->len);
    b->lens[b->n] = m->len;
    b->offs[b->n++] = m->offset;
    return b->n == RESTORE_BATCH ? pend_adopt(b, topic, m->partition, l, st, eb, ebn) : CORE_OK;
}

/* Read [low, high) of topic/p (assigned at low) and adopt every row. */
static core_err restore_range(rd_kafka_t *rk, const char *topic, int32_t p, int64_t low,
                              int64_t high, struct core_dp_ledger *l, int64_t horizon_ms,
                              int timeout_ms, json_t *known, struct rel_changelog_restore_stats *st,
                              char *eb, size_t ebn)
{
    int64_t deadline = core_wall_ms() + timeout_ms, next = low;
    bool first = true;
    struct pend *b = core_xcalloc(1, sizeof(*b));
    core_err rc = CORE_OK;

    while (rc == CORE_OK && next < high && !st->truncated) {
        rd_kafka_message_t *m;
        if (core_wall_ms() > deadline) {
            snprintf(eb, ebn,
                     "%s partition %" PRId32 ": restore not done within %d ms (at "
                     "offset %" PRId64 " of %" PRId64 ")",
                     topic, p, timeout_ms, next, high);
            rc = CORE_EKAFKA;
            break;
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
            rc = restore_one(m, topic, first, low, l, horizon_ms, b, known, st, eb, ebn);
            first = false;
            next = m->offset + 1;
        }
        rd_kafka_message_destroy(m);
    }
    if (rc == CORE_OK && !st->truncated)
        rc = pend_adopt(b, topic, p, l, st, eb, ebn);
    pend_clear(b);
    free(b);
    return rc;
}

core_err rel_changelog_restore(rd_kafka_t *rk, const char *topic, int32_t p,
                               struct core_dp_ledger *l, int64_t horizon_ms, int timeout_ms,
                               json_t *known, struct rel_changelog_restore_stats *st, char *eb,
                               size_t ebn)
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
        st->truncated = rel_changelog_truncated(low, -1, core_wall_ms(), horizon_ms);
        return CORE_OK;
    }
    a = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(a, topic, p)->offset = low;
    e = rd_kafka_assign(rk, a);
    rd_kafka_topic_partition_list_destroy(a);
    if (e) {
        snprintf(eb, ebn, "%s partition %" PRId32 ": assign: %s", topic, p, rd_kafka_err2str(e));
        return CORE_EKAFKA;
    }
    rc = restore_range(rk, topic, p, low, high, l, horizon_ms, timeout_ms, known, st, eb, ebn);
    (void)rd_kafka_assign(rk, NULL);
    return rc;
}
