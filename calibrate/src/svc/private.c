/* private.c - Kafka I/O of the private calibrate service (private.h). */
#include "private.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "core/clock.h"
#include "core/kafka.h"
#include "core/ksync.h"
#include "core/mem.h"

#define ADOPT_BATCH 256

/* A consumer handle that only assigns (never joins a group, never commits). */
static core_err reader_new(const struct core_config *cfg, const char *group, rd_kafka_t **rk,
                           char *eb, size_t ebn)
{
    static const char *const extra[] = {"enable.partition.eof",
                                        "true",
                                        "enable.auto.commit",
                                        "false",
                                        "auto.offset.reset",
                                        "earliest",
                                        NULL};
    core_err rc =
        core_kafka_client_new(cfg, CORE_KAFKA_CONSUMER, group, extra, NULL, NULL, rk, eb, ebn);
    if (rc == CORE_OK)
        rd_kafka_poll_set_consumer(*rk);
    return rc;
}

typedef core_err rec_fn(void *arg, const rd_kafka_message_t *m, char *eb, size_t ebn);

struct reach {
    int64_t low[CAL_SPAN_MAX_PARTITIONS], high[CAL_SPAN_MAX_PARTITIONS];
    int64_t next[CAL_SPAN_MAX_PARTITIONS];
};

/* Assign every non-empty partition at its log start; rc->low/high filled. */
static core_err assign_all(rd_kafka_t *rk, const char *topic, int np, struct reach *r,
                           size_t *open_parts, char *eb, size_t ebn)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(np > 0 ? np : 1);
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;

    *open_parts = 0;
    for (int p = 0; p < np && !err; p++) {
        err = rd_kafka_query_watermark_offsets(rk, topic, p, &r->low[p], &r->high[p], 10000);
        r->next[p] = r->low[p];
        if (!err && r->high[p] > r->low[p]) {
            rd_kafka_topic_partition_list_add(l, topic, p)->offset = r->low[p];
            (*open_parts)++;
        }
    }
    if (!err && *open_parts > 0)
        err = rd_kafka_assign(rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    if (err) {
        snprintf(eb, ebn, "%s: watermarks / assignment: %s", topic, rd_kafka_err2str(err));
        return CORE_EKAFKA;
    }
    return CORE_OK;
}

/* Read every partition of topic from its log start to the high watermark; fn per record. */
static core_err read_all(rd_kafka_t *rk, const char *topic, int np, struct reach *r, int timeout_ms,
                         rec_fn *fn, void *arg, char *eb, size_t ebn)
{
    int64_t deadline = core_mono_ms() + timeout_ms;
    size_t open_parts = 0;
    core_err rc = assign_all(rk, topic, np, r, &open_parts, eb, ebn);

    while (rc == CORE_OK && open_parts > 0) {
        rd_kafka_message_t *m;
        int32_t p;
        if (core_mono_ms() > deadline) {
            snprintf(eb, ebn, "%s: not read to its end within %d ms", topic, timeout_ms);
            rc = CORE_EKAFKA;
            break;
        }
        if (!(m = rd_kafka_consumer_poll(rk, 200)))
            continue;
        p = m->partition;
        if (p < 0 || p >= np || r->next[p] >= r->high[p]) {
            rd_kafka_message_destroy(m);
            continue;
        }
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            r->next[p] = r->high[p];
            open_parts--;
        } else if (!m->err && m->offset >= r->next[p]) {
            rc = fn(arg, m, eb, ebn);
            r->next[p] = m->offset + 1;
            if (r->next[p] >= r->high[p])
                open_parts--;
        }
        rd_kafka_message_destroy(m);
    }
    (void)rd_kafka_assign(rk, NULL);
    return rc;
}

static core_err add_window(void *arg, const rd_kafka_message_t *m, char *eb, size_t ebn)
{
    core_err rc = cal_span_add(arg, m->payload, m->len, m->partition, m->offset);
    if (rc != CORE_OK)
        snprintf(eb, ebn, "windows: partition %" PRId32 " offset %" PRId64 ": %s", m->partition,
                 m->offset, core_strerror(rc));
    return rc;
}

core_err cal_priv_read_windows(const struct core_config *cfg, const char *topic,
                               struct cal_span_set *set, int timeout_ms, char *eb, size_t ebn)
{
    rd_kafka_t *rk = NULL;
    struct reach *r = core_xcalloc(1, sizeof(*r));
    int32_t ids[CAL_SPAN_MAX_PARTITIONS];
    int np = 0;
    core_err rc = reader_new(cfg, "gcdp-calibrate-span", &rk, eb, ebn);

    if (rc == CORE_OK)
        rc = core_kafka_partitions(rk, topic, 10000, ids, CAL_SPAN_MAX_PARTITIONS, &np, eb, ebn);
    if (rc == CORE_OK)
        rc = read_all(rk, topic, np, r, timeout_ms, add_window, set, eb, ebn);
    for (int p = 0; rc == CORE_OK && p < np; p++)
        set->high[p] = r->high[p];
    if (rk)
        rd_kafka_destroy(rk);
    free(r);
    return rc;
}

core_err cal_priv_release_caught_up(const struct core_config *cfg, const char *group,
                                    const char *topic, const struct cal_span_result *res,
                                    int timeout_ms, char *eb, size_t ebn)
{
    rd_kafka_t *rk = NULL;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_resp_err_t err;
    core_err rc = reader_new(cfg, group, &rk, eb, ebn);

    for (size_t p = 0; p < res->n_parts; p++)
        if (res->need[p] >= 0)
            rd_kafka_topic_partition_list_add(l, topic, (int32_t)p);
    if (rc == CORE_OK && (err = rd_kafka_committed(rk, l, timeout_ms)) != 0) {
        snprintf(eb, ebn, "committed offsets of group %s on %s: %s", group, topic,
                 rd_kafka_err2str(err));
        rc = CORE_EKAFKA;
    }
    for (int i = 0; rc == CORE_OK && i < l->cnt; i++) {
        const rd_kafka_topic_partition_t *e = &l->elems[i];
        if (e->err || e->offset < res->need[e->partition]) {
            snprintf(eb, ebn,
                     "release (group %s) has not caught up with the span: %s partition "
                     "%" PRId32 " committed %" PRId64 ", needs >= %" PRId64,
                     group, topic, e->partition, e->err ? (int64_t)-1 : e->offset,
                     res->need[e->partition]);
            rc = CORE_ESTATE;
        }
    }
    rd_kafka_topic_partition_list_destroy(l);
    if (rk)
        rd_kafka_destroy(rk);
    return rc;
}

/* ---------------------------------------------------------------- changelog adoption */

struct adopt_ctx {
    struct core_dp_ledger *l;
    struct cal_priv_adopt_stats *st;
    char *rows[ADOPT_BATCH];
    size_t lens[ADOPT_BATCH], n;
};

static core_err adopt_flush(struct adopt_ctx *a, char *eb, size_t ebn)
{
    enum core_dp_adopted what[ADOPT_BATCH];
    size_t bad = 0;
    core_err rc = CORE_OK;

    if (a->n > 0)
        rc = core_dp_ledger_adopt_rows(a->l, a->n, (const char *const *)a->rows, a->lens, what,
                                       &bad, eb, ebn);
    for (size_t i = 0; rc == CORE_OK && i < a->n; i++) {
        a->st->adopted += what[i] == CORE_DP_ADOPTED_NEW || what[i] == CORE_DP_ADOPTED_OVER_CAP;
        a->st->over_cap += what[i] == CORE_DP_ADOPTED_OVER_CAP;
        a->st->same += what[i] == CORE_DP_ADOPTED_SAME;
        a->st->expired += what[i] == CORE_DP_ADOPTED_EXPIRED;
    }
    for (size_t i = 0; i < a->n; i++)
        free(a->rows[i]);
    a->n = 0;
    return rc;
}

static core_err add_row(void *arg, const rd_kafka_message_t *m, char *eb, size_t ebn)
{
    struct adopt_ctx *a = arg;

    a->st->rows++;
    if (m->partition >= 0 && m->partition < CAL_SPAN_MAX_PARTITIONS)
        a->st->rows_in[m->partition]++;
    if (!m->payload || m->len == 0)
        return CORE_OK; /* a compaction tombstone: never written by gcdp */
    a->rows[a->n] = core_xmalloc(m->len);
    memcpy(a->rows[a->n], m->payload, m->len);
    a->lens[a->n++] = m->len;
    return a->n == ADOPT_BATCH ? adopt_flush(a, eb, ebn) : CORE_OK;
}

core_err cal_priv_adopt_changelog(const struct core_config *cfg, const char *topic,
                                  struct core_dp_ledger *l, int timeout_ms,
                                  struct cal_priv_adopt_stats *st, char *eb, size_t ebn)
{
    rd_kafka_t *rk = NULL;
    struct reach *r = core_xcalloc(1, sizeof(*r));
    struct adopt_ctx *a = core_xcalloc(1, sizeof(*a));
    int32_t ids[CAL_SPAN_MAX_PARTITIONS];
    int np = 0;
    core_err rc = reader_new(cfg, "gcdp-calibrate-changelog", &rk, eb, ebn);

    memset(st, 0, sizeof(*st));
    a->l = l;
    a->st = st;
    if (rc == CORE_OK)
        rc = core_kafka_partitions(rk, topic, 10000, ids, CAL_SPAN_MAX_PARTITIONS, &np, eb, ebn);
    if (rc == CORE_OK)
        rc = read_all(rk, topic, np, r, timeout_ms, add_row, a, eb, ebn);
    for (int p = 0; rc == CORE_OK && p < np; p++)
        if (r->low[p] > 0) { /* rows may have been deleted: the totals would undercount */
            snprintf(eb, ebn,
                     "%s partition %d starts at offset %" PRId64 ": rows may have "
                     "been deleted, so release's charges cannot all be adopted",
                     topic, p, r->low[p]);
            rc = CORE_ESTATE;
        }
    if (rc == CORE_OK)
        rc = adopt_flush(a, eb, ebn);
    for (size_t i = 0; i < a->n; i++)
        free(a->rows[i]);
    free(a);
    free(r);
    if (rk)
        rd_kafka_destroy(rk);
    return rc;
}

/* ---------------------------------------------------------------- publication */

static core_err send_rows(struct core_ksync *k, struct core_dp_ledger *l, const char *const *ids,
                          size_t n, const int64_t *need, size_t n_parts, char *eb, size_t ebn)
{
    core_err rc = CORE_OK;
    for (size_t i = 0; i < n && rc == CORE_OK; i++) {
        char *row = NULL;
        size_t len = 0;
        if ((rc = core_dp_ledger_row(l, ids[i], &row, &len)) != CORE_OK) {
            snprintf(eb, ebn, "ledger row %s: %s", ids[i], core_strerror(rc));
            break;
        }
        for (size_t p = 0; p < n_parts && rc == CORE_OK; p++)
            if (need[p] >= 0)
                rc = core_ksync_send_to(k, (int32_t)p, ids[i], strlen(ids[i]), row, len, NULL, NULL,
                                        0, eb, ebn);
        free(row);
    }
    return rc;
}

core_err cal_priv_publish(const struct core_config *cfg, struct core_dp_ledger *l,
                          const char *const *ids, size_t n, const int64_t *need, size_t n_parts,
                          const char *cal_topic, uint64_t version, const char *theta,
                          size_t theta_len, int timeout_ms, char *eb, size_t ebn)
{
    struct core_ksync_opts co = {.topic = core_config_str(cfg, "topics.ledger_changelog")};
    struct core_ksync_opts to = {.topic = cal_topic, .max_message_bytes = theta_len};
    struct core_ksync *rows = NULL, *th = NULL;
    char key[24];
    core_err rc = core_ksync_new(cfg, &co, &rows, eb, ebn);

    if (rc == CORE_OK)
        rc = send_rows(rows, l, ids, n, need, n_parts, eb, ebn);
    if (rc == CORE_OK)
        rc = core_ksync_flush(rows, timeout_ms, NULL, eb, ebn);
    if (rc == CORE_OK) /* θ only once every row is on the changelog */
        rc = core_ksync_new(cfg, &to, &th, eb, ebn);
    snprintf(key, sizeof(key), "%" PRIu64, version);
    if (rc == CORE_OK)
        rc = core_ksync_send(th, key, strlen(key), theta, theta_len, NULL, NULL, 0, eb, ebn);
    if (rc == CORE_OK)
        rc = core_ksync_flush(th, timeout_ms, NULL, eb, ebn);
    core_ksync_free(rows);
    core_ksync_free(th);
    return rc;
}

core_err cal_priv_all_partitions(const struct core_config *cfg, const char *topic, int64_t *need,
                                 size_t *n_parts, char *eb, size_t ebn)
{
    rd_kafka_t *rk = NULL;
    int32_t ids[CAL_SPAN_MAX_PARTITIONS];
    int np = 0;
    core_err rc = reader_new(cfg, "gcdp-calibrate-meta", &rk, eb, ebn);

    if (rc == CORE_OK)
        rc = core_kafka_partitions(rk, topic, 10000, ids, CAL_SPAN_MAX_PARTITIONS, &np, eb, ebn);
    for (int p = 0; p < CAL_SPAN_MAX_PARTITIONS; p++)
        need[p] = p < np ? 0 : -1;
    *n_parts = (size_t)np;
    if (rk)
        rd_kafka_destroy(rk);
    return rc;
}
