/* core/kafka.h - librdkafka clients driven by a libuv loop (KAFKA.md §6 recipe).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Bridge: the client's final queue gets an io-event on a non-blocking pipe (O_NONBLOCK |
 * O_CLOEXEC) watched by uv_poll; the read side is drained until empty with a budget per
 * turn and a uv_idle continuation (the wake-up is edge-triggered, §6.2.1). A 1 s keepalive
 * timer polls even when idle so max.poll.interval.ms never expires (§6.2.4). Every
 * librdkafka callback (messages, rebalance, delivery reports, errors, logs) therefore runs
 * on the loop thread. Nothing here blocks the loop: close is asynchronous
 * (rd_kafka_consumer_close_queue), rd_kafka_destroy() runs in _free after uv_run returns.
 *
 * Offset-gap detection (DESIGN §3): the consumer remembers, per partition, the offset it
 * expects next. A message beyond it, or librdkafka's "offset reset (at offset N ...)" log
 * (the mock's retention evicted data we had not read), is reported with the lost range
 * [from, to) through ops->on_gap and logged at error level. Producers here never use
 * transactions, so on both the mock and real Kafka offsets of a partition are contiguous.
 *
 * Thread-safety: not thread-safe; one loop thread per client.
 */
#ifndef CORE_KAFKA_H
#define CORE_KAFKA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>
#include <uv.h>

#include "core/err.h"

/* Messages served per loop turn before yielding to other handles (§6.2.1). */
#define CORE_KAFKA_BUDGET 2000
/* Partitions tracked per consumer for gap detection (STYLE P8). */
#define CORE_KAFKA_MAX_PARTITIONS 1024

struct core_kconsumer;
struct core_kproducer;

/* Callbacks of a consumer; all run on the loop thread, all optional except on_message.
 * Pointers passed in are borrowed and valid only during the call. */
struct core_kconsumer_ops {
    /* One record (never an error event). */
    void (*on_message)(void *arg, const rd_kafka_message_t *m);
    /* After the new partitions are assigned / before the revoked ones are unassigned. */
    void (*on_assign)(void *arg, const rd_kafka_topic_partition_list_t *parts);
    void (*on_revoke)(void *arg, const rd_kafka_topic_partition_list_t *parts);
    /* Offsets [from, to) of topic/partition will never be delivered (to may be -1 when
     * only the reset point is known yet). */
    void (*on_gap)(void *arg, const char *topic, int32_t partition, int64_t from, int64_t to);
    /* (from = to = -1: a loss of unknown size: the cluster was replaced (partition -1) or a
     *  partition's log went backwards after an offset reset) */
    /* A client error; fatal ones end the consumer (the owner should shut down). */
    void (*on_error)(void *arg, rd_kafka_resp_err_t err, const char *reason, bool fatal);
    /* Result of an asynchronous commit. */
    void (*on_commit)(void *arg, rd_kafka_resp_err_t err,
                      const rd_kafka_topic_partition_list_t *offsets);
    /* The consumer left its group after core_kconsumer_close(); safe to free after. */
    void (*on_closed)(void *arg);
    /* Optional look-ahead: called for every record as it is taken from the queue, up to
     * CORE_KAFKA_LOOKAHEAD records before its on_message (cache prefetch hints: it must not
     * change state the records' handling depends on). With it set, records are still
     * handed to on_message one by one, in queue order, and every other callback (assign,
     * revoke, gap, error, commit, closed) and every log line of the consumer comes after
     * on_message of every record taken before it, as without a look-ahead. Records held
     * back are handed over when the queue runs empty, before a turn ends on a hold
     * (core_kconsumer_hold) and at close; at most CORE_KAFKA_LOOKAHEAD of them wait across
     * turns of the loop when a turn's budget runs out. */
    void (*on_peek)(void *arg, const rd_kafka_message_t *m);
    void *arg;
};

#define CORE_KAFKA_LOOKAHEAD 4

/* The consumer's effective session.timeout.ms (its configuration; 45000 if unreadable). */
struct core_kconsumer;
int64_t core_kconsumer_session_timeout_ms(const struct core_kconsumer *c);

/* New consumer group member subscribed to topics, driven by loop.
 *   conf    always taken (from core_kafka_conf_new, consumer role): destroyed here on every
 *           failure, so the caller never frees it after this call (librdkafka owns a conf
 *           once rd_kafka_new succeeded; freeing it again after a later failure, e.g. an
 *           invalid topic name refused by subscribe, was a double free).
 *   topics  ntopics names, borrowed.
 *   ops     copied.
 *   out     new consumer; free with core_kconsumer_free() after on_closed (or on error).
 * Returns CORE_OK, CORE_EKAFKA (message in errbuf), CORE_EIO (pipe/uv failure). */
CORE_MUST_CHECK core_err core_kconsumer_new(uv_loop_t *loop, rd_kafka_conf_t *conf,
                                            const char *const *topics, size_t ntopics,
                                            const struct core_kconsumer_ops *ops,
                                            struct core_kconsumer **out, char *errbuf,
                                            size_t errbuf_size);

/* A consumer in a consumer group of this process's own, "<prefix>.<host>.<pid>": it is
 * assigned every partition of topic (no other member shares them), for what every instance
 * must see (θ versions, control commands).
 *   cfg           borrowed: broker.*, kafka.* (core_kafka_conf_new, consumer role).
 *   offset_reset  where a group without committed offsets starts: "earliest" (the topic
 *                 from its start) or "latest" (only what is produced from now on); set
 *                 after the kafka.* overrides, so it always holds.
 *   ops, out      as core_kconsumer_new.
 * Returns as core_kconsumer_new, or CORE_ECONFIG (errbuf: librdkafka's message). */
struct core_config;
CORE_MUST_CHECK core_err core_kconsumer_new_own(uv_loop_t *loop, const struct core_config *cfg,
                                                const char *prefix, const char *topic,
                                                const char *offset_reset,
                                                const struct core_kconsumer_ops *ops,
                                                struct core_kconsumer **out, char *errbuf,
                                                size_t errbuf_size);

/* Stop fetching (pause every assigned partition) or resume; polling goes on (§6.2.7). */
void core_kconsumer_pause(struct core_kconsumer *c, bool paused);

/* Hold (true) or release (false) the consumer's intake without touching fetching: while
 * held, a drain turn takes no further message from the local queue (the one being handled
 * when the hold is set finishes), so librdkafka's prefetch fills up to its bound and then
 * stops fetching by itself. Unlike core_kconsumer_pause there is no pause/resume version
 * barrier, so nothing queued is purged and refetched; unlike pausing it also serves no
 * rebalance or error event while held: hold for short spells only (the caller bounds them,
 * well below max.poll.interval.ms). Releasing restarts draining on the next loop turn.
 * Closing ignores the hold. Loop thread only. */
void core_kconsumer_hold(struct core_kconsumer *c, bool held);

/* Refill nudge for a bounded prefetch queue (librdkafka 2.0.2). librdkafka stops fetching
 * while the consumer queue holds queued.min.messages messages or queued.max.messages.kbytes
 * of payload, and looks again only when the partition leader's broker thread wakes up: on
 * its 1 s idle timeout or when it has a request to send. With on, once the queue has held
 * 3/4 of either bound (estimated from the consumed messages' mean size) and then drains
 * below half of both, one watermark query (rd_kafka_query_watermark_offsets: two
 * ListOffsets requests to the leader) for one assigned partition, in rotation, runs on
 * libuv's thread pool; the request wakes that leader's broker thread, which then fetches
 * again. It reads and moves no position: no record is lost, repeated or reordered. At most
 * one query is in flight; none while paused or closing; none for a queue that never fills
 * (a consumer keeping up with live traffic). With several brokers each nudge wakes one of
 * them (the rotation reaches the others on later nudges). The bounds are read from the
 * consumer's configuration when called. Loop thread only. */
void core_kconsumer_set_refill(struct core_kconsumer *c, bool on);

/* Nudges sent so far (for benchmarks and tests); any thread. */
uint64_t core_kconsumer_refill_nudges(const struct core_kconsumer *c);

/* Commit offsets asynchronously (result through ops->on_commit).
 *   offsets  borrowed; offset = next offset to read, as Kafka defines it. */
CORE_MUST_CHECK core_err core_kconsumer_commit(struct core_kconsumer *c,
                                               const rd_kafka_topic_partition_list_t *offsets);

/* Start leaving the group; ops->on_revoke then ops->on_closed follow on the loop. */
void core_kconsumer_close(struct core_kconsumer *c);
bool core_kconsumer_closed(const struct core_kconsumer *c);

/* Partitions currently assigned (0 before the first rebalance). */
size_t core_kconsumer_assigned(const struct core_kconsumer *c);

/* Sum over assigned partitions of (high watermark - position), from cached watermarks;
 * -1 when unknown. Cheap (no broker round trip). */
int64_t core_kconsumer_lag(struct core_kconsumer *c);

/* Stop driving the client from the loop (close its uv handles) so uv_run can return;
 * nothing is served afterwards. Call after on_closed, then core_kconsumer_free() once
 * uv_run has returned. Idempotent. */
void core_kconsumer_detach(struct core_kconsumer *c);

/* The underlying handle (borrowed), e.g. for rd_kafka_name() in logs. */
rd_kafka_t *core_kconsumer_handle(struct core_kconsumer *c);

/* Destroy the client (may block ~1 s in rd_kafka_destroy: call after uv_run returned, or
 * after on_closed; a consumer that did not finish closing is destroyed without the
 * implicit blocking close; an in-flight refill query is waited for, <= 0.5 s). NULL-safe. Handles
 * not yet closed are closed with uv_close and the memory is released by their close callbacks: run
 * the loop once more (uv_run DEFAULT) before uv_loop_close. */
void core_kconsumer_free(struct core_kconsumer *c);

/* Enqueue a copy of one record on any producer handle, without librdkafka's producev
 * macros (GNU statement expressions, rejected by clang -Wpedantic -Werror).
 *   key may be NULL (no key); opaque is handed to the delivery report.
 * Returns librdkafka's error code (RD_KAFKA_RESP_ERR__QUEUE_FULL: poll and retry). */
rd_kafka_resp_err_t core_kafka_produce_copy(rd_kafka_t *rk, const char *topic, int32_t partition,
                                            const void *key, size_t key_len, const void *value,
                                            size_t value_len, void *opaque);

/* As core_kafka_produce_copy, with headers hdrs (may be NULL): librdkafka takes them on
 * success only; after an error the caller still owns (and destroys) them. */
rd_kafka_resp_err_t core_kafka_produce_copy_hdrs(rd_kafka_t *rk, const char *topic,
                                                 int32_t partition, const void *key, size_t key_len,
                                                 const void *value, size_t value_len,
                                                 rd_kafka_headers_t *hdrs, void *opaque);

/* Delivery report for one produced record: err 0 = acknowledged by the broker.
 *   opaque  the value passed to core_kproducer_send. */
typedef void core_kdelivery_fn(void *arg, void *opaque, rd_kafka_resp_err_t err);

/* New producer on loop; delivery reports run on the loop thread.
 *   conf  always taken (producer role): destroyed here on every failure. */
CORE_MUST_CHECK core_err core_kproducer_new(uv_loop_t *loop, rd_kafka_conf_t *conf,
                                            core_kdelivery_fn *on_delivery, void *arg,
                                            struct core_kproducer **out, char *errbuf,
                                            size_t errbuf_size);

/* Enqueue a copy of key/value for topic (partition chosen by key hash; partition may be
 * RD_KAFKA_PARTITION_UA).
 * Returns CORE_OK, CORE_EAGAIN (local queue full: serve the loop and retry), CORE_ETOOBIG
 * (larger than message.max.bytes), CORE_EKAFKA. */
CORE_MUST_CHECK core_err core_kproducer_send(struct core_kproducer *p, const char *topic,
                                             int32_t partition, const void *key, size_t key_len,
                                             const void *value, size_t value_len, void *opaque);

/* Records enqueued but not yet delivered or failed. */
size_t core_kproducer_outq(const struct core_kproducer *p);

/* Serve delivery reports now without waiting for the loop (non-blocking poll). */
void core_kproducer_poll(struct core_kproducer *p, int timeout_ms);

/* As core_kconsumer_detach, for a producer whose outq is empty. */
void core_kproducer_detach(struct core_kproducer *p);

rd_kafka_t *core_kproducer_handle(struct core_kproducer *p);

/* As core_kconsumer_free; records still queued are purged (their delivery reports
 * are not called). Wait for core_kproducer_outq() == 0 first to keep them. NULL-safe. */
void core_kproducer_free(struct core_kproducer *p);

#endif /* CORE_KAFKA_H */
