/* core/audit_mirror.h - the privacy ledger's audit log mirrored to a Kafka topic
 * (topics.audit, gcdp.audit), at least once, from a persisted offset.
 * SPDX-License-Identifier: Apache-2.0
 *
 * The mirror reads the audit log FILE (the JSONL ledger, or the store's audit log) up to the
 * size its caller says is durable (core_dp_ledger_stats.audit_bytes after a commit
 * returned), never the ledger's memory, so it cannot publish a row whose commit did not
 * return. One message per line: key = the row's "id" ("header" for the header line), value
 * = the line without its newline, all on partition 0 with one request in flight (the log's
 * order). The byte offset up to which every message was
 * acknowledged is kept in a state file (written atomically, at most once a second and at
 * stop) together with a hash of the audit log's header line; a restart resumes there, so a
 * row may be mirrored twice (consumers deduplicate by key) but none is skipped. A state file
 * for another audit log (other header) or beyond its end restarts from the beginning.
 * A delivery failure rewinds to the first unacknowledged row once the messages in flight
 * are settled. The local audit log stays authoritative: a mirror that falls behind or
 * fails never stops the ledger's owner; its lag and errors are counted (stats, metrics).
 *
 * Ownership: the mirror owns its timer, its file descriptor and its producer.
 * Thread-safety: loop thread only.
 */
#ifndef CORE_AUDIT_MIRROR_H
#define CORE_AUDIT_MIRROR_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>
#include <uv.h>

#include "core/err.h"

struct core_audit_mirror;
struct core_metrics;

/* The audit log's durable size now (bytes; every row before it is committed). */
typedef uint64_t core_audit_durable_fn(void *arg);

struct core_audit_mirror_opts {
    const char *audit_path; /* the ledger's audit log, borrowed */
    const char *state_path; /* the acknowledged offset, borrowed; created 0600 */
    const char *topic;      /* borrowed */
    int interval_ms;        /* how often new rows are looked for (0: 200) */
    size_t max_inflight;    /* messages in flight (0: 4096) */
    core_audit_durable_fn *durable;
    void *arg;
    struct core_metrics *metrics; /* optional: gcdp_audit_mirror_{rows_total,errors_total,
                                   * lag_bytes} */
};

struct core_audit_mirror_stats {
    uint64_t rows;        /* messages acknowledged since start */
    uint64_t acked_bytes; /* audit log offset acknowledged (resumes here) */
    uint64_t lag_bytes;   /* durable size - acked offset, at the last look */
    uint64_t errors;      /* delivery failures (each rewinds) */
    uint64_t skipped;     /* rows larger than a message may be: not mirrored (logged) */
};

/* Start mirroring on loop. conf: librdkafka producer configuration, taken on CORE_OK (else
 * the caller destroys it). The audit log must exist. Returns CORE_OK, CORE_EINVAL, CORE_EIO
 * (audit log or state file unreadable: errbuf names it), CORE_EKAFKA. */
CORE_MUST_CHECK core_err core_audit_mirror_new(uv_loop_t *loop, rd_kafka_conf_t *conf,
                                               const struct core_audit_mirror_opts *opts,
                                               struct core_audit_mirror **out, char *errbuf,
                                               size_t errbuf_size);

/* Mirror what is durable now, wait (at most timeout_ms) for every message to be
 * acknowledged, persist the offset, close the handles, then call done(arg) on the loop.
 * Call once. */
void core_audit_mirror_stop(struct core_audit_mirror *m, int timeout_ms, void (*done)(void *arg),
                            void *arg);

void core_audit_mirror_stats(const struct core_audit_mirror *m,
                             struct core_audit_mirror_stats *out);

/* Free after done was called (or instead of stop when the loop no longer runs). NULL-safe. */
void core_audit_mirror_free(struct core_audit_mirror *m);

#endif /* CORE_AUDIT_MIRROR_H */
