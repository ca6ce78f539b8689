/* ing/service.h - the ingest SERVICE: sensors.raw -> engine -> gcdp.windows + sensors.rejected,
 * on a libuv loop, with at-least-once delivery and /metrics.
 * SPDX-License-Identifier: Apache-2.0
 *
 * One consumer-group member (topics.raw) feeds the pure engine (ing/engine.h); window
 * records go to topics.windows and dead letters to topics.rejected, keyed like their
 * input, through one idempotent producer.
 *
 * Delivery: offset c of partition p is committed only when c <= every offset still
 * buffered by the engine for p, c <= the lowest input offset of any window or dead letter
 * not yet acknowledged by the broker, and c <= the next offset to consume. A crash
 * therefore loses nothing; records derived from uncommitted input may be produced again
 * after a restart or rebalance (same window id: downstream stages are idempotent on it).
 * A delivery failure (retries exhausted) stops the service with CORE_EKAFKA and commits
 * nothing past the failed record.
 *
 * Shutdown (ing_service_stop): stop intake, wait for every produced record's
 * acknowledgement (bounded by ING_SERVICE_DRAIN_MS), commit, leave the group cleanly
 * (bounded by ING_SERVICE_CLOSE_MS), close every handle, then call on_done. Open windows are NOT
 * flushed: their readings stay uncommitted and the next owner rebuilds them.
 *
 * Memory: the consumer's prefetch is bounded by default (queued.max.messages.kbytes=4096,
 * queued.min.messages=50000, fetch.max.bytes=2097152, max.partition.fetch.bytes=262144;
 * each yields to a kafka.* key of the same name). librdkafka 2.0.2 re-checks a full
 * prefetch queue only about once a second, which starved a small queue while a backlog was
 * drained; the service therefore wakes the fetcher once the queue drains
 * (core_kconsumer_set_refill; ingest.prefetch_refill=false turns it off). Measured: peak
 * RSS 57-91 MiB with 10 000 devices (docs/operations.md, "Refill nudge and the bounded
 * default").
 *
 * Thread-safety: every call on the loop thread, except ing_service_stats (any thread).
 */
#ifndef ING_SERVICE_H
#define ING_SERVICE_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "core/config.h"
#include "core/err.h"
#include "core/metrics.h"
#include "ing/engine.h"

/* Upper bound on the time spent waiting for acknowledgements at shutdown. */
#define ING_SERVICE_DRAIN_MS 15000
/* Upper bound on the time spent leaving the consumer group at shutdown. */
#define ING_SERVICE_CLOSE_MS 10000
/* /healthz reports not-ready once the broker has been unreachable this long (transport or
 * all-brokers-down errors with no record consumed or commit acknowledged since). */
#define ING_SERVICE_BROKER_GRACE_MS 5000
/* Partition numbers the service tracks (topics.raw partitions must be below it). */
#define ING_SERVICE_MAX_PARTITIONS 1024

struct ing_service;

struct ing_service_opts {
    const char *group;          /* consumer group id; borrowed */
    int64_t commit_interval_ms; /* how often committable offsets are committed (> 0) */
    int64_t exit_idle_ms;       /* > 0: stop by itself after this long with nothing consumed,
                                   once something was consumed (tests, bounded replays) */
    bool flush_on_idle;         /* with exit_idle_ms: flush open windows before stopping */
    /* Called once on the loop when the service has fully stopped. status: CORE_OK, or
     * the failure that stopped it. */
    void (*on_done)(void *arg, core_err status);
    void *arg;
};

/* Live counters (a snapshot; safe from any thread). */
struct ing_service_stats {
    uint64_t consumed, accepted, rejected;
    uint64_t produced;     /* records (windows + dead letters) handed to the producer */
    uint64_t windows_out;  /* window records acknowledged by the broker */
    uint64_t rejected_out; /* dead letters acknowledged */
    uint64_t produce_errors;
    uint64_t commits, commit_errors;
    uint64_t offset_gaps, offsets_lost;
    int64_t lag; /* -1 unknown */
    uint64_t open_devices;
    bool assigned;
    uint64_t refill_nudges;  /* prefetch refill nudges (core_kconsumer_set_refill) */
    uint64_t output_holds;   /* intake holds for unacknowledged output (> 16 MiB) */
    uint64_t output_held_ms; /* loop time spent in them (ms) */
    uint64_t rejected_by_reason[ING_REASON_COUNT]; /* ing_reason_code() names them */
};

/* Start the service on loop.
 *   cfg      borrowed; must outlive the service (broker.*, topics.*, kafka.*, ingest.*).
 *   metrics  borrowed, may be NULL; series are registered in it (gcdp_* names).
 *   out      new service; free with ing_service_free() after on_done.
 * Returns CORE_OK, CORE_ECONFIG (errbuf names the key), CORE_EKAFKA, CORE_EIO. */
CORE_MUST_CHECK core_err ing_service_new(uv_loop_t *loop, const struct core_config *cfg,
                                         const struct ing_service_opts *opts,
                                         struct core_metrics *metrics, struct ing_service **out,
                                         char *errbuf, size_t errbuf_size);

/* Begin the graceful shutdown described above (idempotent). */
void ing_service_stop(struct ing_service *s);

void ing_service_stats(const struct ing_service *s, struct ing_service_stats *out);

/* Free after on_done; then run the loop once more so closed handles are released.
 * NULL-safe. */
void ing_service_free(struct ing_service *s);

#endif /* ING_SERVICE_H */
