/* core/ksync.h - librdkafka clients for code that is not driven by a libuv loop (core/kafka.h
 * is the loop-driven pair): a synchronous producer that polls its own delivery reports
 * (calibrate's θ publisher, the simulator and replay, benchmarks), and the one place that
 * turns a configuration into a client handle (conf ownership stated and handled once).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Delivery reports are served only inside core_ksync_* calls (poll, send while waiting for
 * room, flush), on the calling thread. A message handed to core_ksync_send is never dropped
 * locally: on a full local queue the call polls and retries.
 *
 * Thread-safety: one thread drives a struct core_ksync.
 */
#ifndef CORE_KSYNC_H
#define CORE_KSYNC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "core/config.h"
#include "core/err.h"
#include "core/kconf.h"

/* A client handle for role from cfg (core_kafka_conf_new: profile, bootstrap, kafka.*),
 * with client logs routed to its main queue (log.queue=true in the profiles), so they are
 * served by rd_kafka_poll / the consumer poll.
 *   group_id  consumers: group.id (may be NULL for a handle that never joins); producers NULL.
 *   extra     optional NULL-terminated name, value, name, value, ... properties set after
 *             the profile (e.g. "linger.ms", "20", NULL).
 *   dr_cb, opaque  producers: optional delivery-report callback and rd_kafka opaque.
 *   out       on CORE_OK a new handle; caller destroys it with rd_kafka_destroy().
 * The configuration is never the caller's to free (taken by rd_kafka_new on success,
 * destroyed here on every failure). Returns CORE_OK, CORE_ECONFIG (a property, named by
 * librdkafka's message), CORE_EKAFKA (rd_kafka_new refused). */
typedef void core_kafka_dr_fn(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque);
CORE_MUST_CHECK core_err core_kafka_client_new(const struct core_config *cfg,
                                               enum core_kafka_role role, const char *group_id,
                                               const char *const *extra, core_kafka_dr_fn *dr_cb,
                                               void *opaque, rd_kafka_t **out, char *errbuf,
                                               size_t errbuf_size);

/* The partition ids of topic from the broker's metadata (blocking, up to timeout_ms).
 *   ids  caller storage for max ids; *n receives the partition count (0: the broker does not
 *        know the topic; with more than max partitions, CORE_ETOOBIG and *n the count).
 * Returns CORE_OK, CORE_ETOOBIG, or CORE_EKAFKA (no metadata: errbuf names the topic and
 * librdkafka's reason). */
CORE_MUST_CHECK core_err core_kafka_partitions(rd_kafka_t *rk, const char *topic, int timeout_ms,
                                               int32_t *ids, int max, int *n, char *errbuf,
                                               size_t errbuf_size);

/* A reader of every partition of one topic that is not driven by a libuv loop: it assigns
 * the partitions itself (never joins its group, never commits an offset, so it does not move
 * any service's position), for operator tools (`gcdp ctl`'s replies, `gcdp windows`).
 *   group     group.id the consumer needs for its polls (never joined); any unique name
 *   at_end    true: each partition from its current high watermark (records from now on);
 *             false: from the earliest record the broker keeps
 * Returns CORE_OK, CORE_ECONFIG / CORE_EKAFKA as core_kafka_client_new, or CORE_EKAFKA (no
 * metadata for topic, or no partitions: errbuf names the topic). */
struct core_kread;
CORE_MUST_CHECK core_err core_kread_new(const struct core_config *cfg, const char *topic,
                                        const char *group, bool at_end, struct core_kread **out,
                                        char *errbuf, size_t errbuf_size);

/* The next record, waiting up to timeout_ms; NULL when none came. A record with m->err set is
 * a consumer error (RD_KAFKA_RESP_ERR__PARTITION_EOF never: end of partition is not
 * reported). The caller destroys the message (rd_kafka_message_destroy). */
rd_kafka_message_t *core_kread_poll(struct core_kread *r, int timeout_ms);

/* Close the consumer and free the reader. NULL-safe. */
void core_kread_free(struct core_kread *r);

struct core_ksync;

/* Called for every delivery report (on the thread in a core_ksync_* call). err is
 * RD_KAFKA_RESP_ERR_NO_ERROR when the broker acknowledged the message. */
typedef void core_ksync_dr_fn(void *arg, rd_kafka_resp_err_t err);

struct core_ksync_opts {
    const char *topic;             /* default topic of core_ksync_send (copied); required */
    size_t max_message_bytes;      /* largest payload to send; message.max.bytes is raised to
                                      fit when librdkafka's default (1000000) is too small; 0: default */
    const char *const *extra;      /* as core_kafka_client_new (e.g. linger.ms); may be NULL */
    core_ksync_dr_fn *on_delivery; /* optional */
    void *arg;                     /* for on_delivery */
    const atomic_int *stop;        /* optional: while waiting for room, a set flag ends the
                                      wait with CORE_ESTATE (the message is not produced) */
    atomic_uint_fast64_t *retries; /* optional: +1 per back-off on a full local queue */
};

/* New synchronous producer (idempotent, acks=all: the profile's producer settings).
 *   cfg, o  borrowed. out: new; free with core_ksync_free().
 * Returns as core_kafka_client_new, or CORE_EINVAL (no topic). */
CORE_MUST_CHECK core_err core_ksync_new(const struct core_config *cfg,
                                        const struct core_ksync_opts *o, struct core_ksync **out,
                                        char *errbuf, size_t errbuf_size);

/* Produce one message (key and value copied) to the default topic, with nhdr headers
 * names[i]: values[i] (a NULL value is skipped; names/values may be NULL when nhdr is 0);
 * key may be NULL (no key). On a full local queue: polls and retries.
 * Returns CORE_OK; CORE_ESTATE when o->stop was set while waiting (not produced);
 * CORE_EKAFKA on a non-retriable produce error (errbuf: topic and librdkafka's reason). */
CORE_MUST_CHECK core_err core_ksync_send(struct core_ksync *p, const void *key, size_t key_len,
                                         const void *value, size_t len, const char *const *names,
                                         const char *const *values, size_t nhdr, char *errbuf,
                                         size_t errbuf_size);

/* As core_ksync_send, to partition of the default topic (RD_KAFKA_PARTITION_UA: the
 * partitioner chooses, which is core_ksync_send). An unknown partition fails the delivery
 * (its report counts as failed), or the call with CORE_EKAFKA. */
CORE_MUST_CHECK core_err core_ksync_send_to(struct core_ksync *p, int32_t partition,
                                            const void *key, size_t key_len, const void *value,
                                            size_t len, const char *const *names,
                                            const char *const *values, size_t nhdr, char *errbuf,
                                            size_t errbuf_size);

/* Serve delivery reports for at most timeout_ms (0: only what is ready). */
void core_ksync_poll(struct core_ksync *p, int timeout_ms);

/* Messages produced and not yet reported (acknowledged or failed). */
uint64_t core_ksync_inflight(const struct core_ksync *p);

/* Counts since core_ksync_new: produced (accepted by core_ksync_send), acknowledged, failed
 * (delivery reports with an error). Any may be NULL. */
void core_ksync_counts(const struct core_ksync *p, uint64_t *sent, uint64_t *acked,
                       uint64_t *failed);

/* Wait up to timeout_ms until every produced message is reported.
 *   unreported  optional out: messages still without a report at the end.
 * Returns CORE_OK when all were acknowledged; CORE_EKAFKA when some failed or are still
 * unreported (errbuf: how many; the topic). */
CORE_MUST_CHECK core_err core_ksync_flush(struct core_ksync *p, int timeout_ms,
                                          uint64_t *unreported, char *errbuf, size_t errbuf_size);

/* The underlying handle (borrowed, valid until core_ksync_free), for metadata and
 * watermark queries; do not set callbacks or destroy it. */
rd_kafka_t *core_ksync_handle(struct core_ksync *p);

/* Destroy without flushing (unreported messages are dropped by librdkafka). NULL-safe. */
void core_ksync_free(struct core_ksync *p);

#endif /* CORE_KSYNC_H */
