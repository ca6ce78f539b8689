/* rel/service.h - the release SERVICE: topics.windows -> Algorithm 4 -> topics.released,
 * with θ from topics.calibration (or a file), the write-ahead ledger, dead letters for
 * refused windows, at-least-once delivery with byte-identical replays, and /metrics.
 * SPDX-License-Identifier: Apache-2.0
 *
 * One consumer-group member reads window records (gcdp.window/2) and hands each to the
 * releaser (rel/release.h) of the current θ; a released record is produced to
 * topics.released (key = device) only after its ledger row is fsync'd (group commit of up
 * to release.ledger.batch rows, flushed whenever the loop has nothing else to do). A
 * window the releaser refuses (malformed, not covered by the plan or by its own
 * certificate, over a unit's lifetime cap) is dead-lettered to topics.release_rejected
 * (gcdp.release_rejected/1: reason, detail, window id, source offset, the record) and
 * processing goes on; the refusal is counted by reason.
 *
 * θ: from opts.theta_path (fixed), or the newest version on topics.calibration (read from
 * the beginning by a private consumer of this instance; window intake starts once a θ is
 * known and the topic has been read to its end). A newer θ is swapped in between two
 * windows: the pending group commit is flushed, the plan is rebuilt lazily from the next
 * record's provenance, and every record names the θ version that released it. An older or
 * equal version, or a θ that does not validate, is ignored with a warning.
 *
 * Delivery: offset c of an input partition is committed only when every record read
 * before c has its output (released record or dead letter) acknowledged by the broker, or
 * needed none (excluded window). After a crash the uncommitted windows are read again:
 * those already in the ledger are republished byte-for-byte from it (same release id =
 * window id @ θ version), never re-noised. A window read again after θ changed is a new
 * release id (charged again, against the same caps): documented in docs/release.md.
 *
 * Failing closed: a ledger I/O error, a noise failure or a delivery failure (retries
 * exhausted) stops the service (status = the error) without committing past the failed
 * record. The ledger file is locked: a second instance on the same ledger cannot open it.
 *
 * Several instances (opts.changelog; rel/changelog.h, docs/release.md "Several instances"):
 * each has its own ledger; every committed row (new or replayed) is produced to
 * topics.ledger_changelog, to the partition number of its window, and the output is
 * produced only after that record is acknowledged. An assigned partition is restored from
 * the changelog (rows adopted into the ledger) inside the assignment callback, before any
 * of its records is served; a conflicting row stops the service (CORE_EINVARIANT); a
 * truncated changelog partition is refused (never released from, counted, unhealthy).
 * Before partitions are revoked every changelog record in flight is acknowledged (or the
 * service fails), so every output published has its row on the changelog.
 *
 * Thread-safety: every call on the loop thread, except rel_service_stats (any thread).
 */
#ifndef REL_SERVICE_H
#define REL_SERVICE_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "core/config.h"
#include "core/dp_ledger.h"
#include "core/err.h"
#include "core/metrics.h"

#define REL_SCHEMA_RELEASE_REJECTED "gcdp.release_rejected/1"
/* Upper bound on the time spent waiting for acknowledgements / leaving the group. */
#define REL_SERVICE_DRAIN_MS       15000
#define REL_SERVICE_CLOSE_MS       10000
#define REL_SERVICE_MAX_PARTITIONS 1024

/* Why a window was dead-lettered (stable codes, also metric labels). */
enum rel_dlq_reason {
    REL_DLQ_MALFORMED,   /* not a gcdp.window/2 record this θ can read */
    REL_DLQ_NOT_COVERED, /* provenance or certificate outside the plan (Algorithm 4) */
    REL_DLQ_BUDGET,      /* a unit's lifetime cap */
    REL_DLQ_NO_PLAN,     /* θ, configuration and the record's provenance make no plan */
    REL_DLQ_COUNT
};
const char *rel_dlq_reason_code(enum rel_dlq_reason r);

struct rel_service;

struct rel_service_opts {
    const char *group;             /* consumer group of topics.windows; borrowed */
    const char *theta_path;        /* NULL: θ from topics.calibration; else a θ file (fixed) */
    struct core_dp_ledger *ledger; /* opened by the caller (JSONL or store back end, with
                                      release.ledger.cap_*): borrowed, must outlive the
                                      service */
    struct core_dp_scheme scheme;  /* the ledger's unit scheme (bound in its header) */
    int64_t ledger_lateness_ms;    /* store back end: units of slots that ended more than this
                                      before the newest window end seen are evicted from memory
                                      (core_dp_ledger_advance, every 10 s); > 0 */
    int64_t commit_interval_ms;    /* > 0 */
    bool changelog;                /* release.service.changelog (default false): every ledger
                                      row goes to topics.ledger_changelog (acknowledged) before
                                      its output is published; an assigned partition is restored
                                      from it before any of its windows is released
                                      (rel/changelog.h) */
    int64_t replay_horizon_ms;     /* release.ledger.replay_horizon_ms: the truncation decision
                                      of a restore (rel_changelog_truncated) */
    int64_t exit_idle_ms;          /* > 0: stop after this long with nothing consumed, counted
                                      while windows can be read (θ known, partitions assigned):
                                      tests, bounded replays, catching up on a finished topic */
    void (*on_done)(void *arg, core_err status);
    void *arg;
};

struct rel_service_stats {
    uint64_t consumed;     /* window records read */
    uint64_t released;     /* new releases committed and acknowledged */
    uint64_t replayed;     /* republished from the ledger and acknowledged */
    uint64_t excluded;     /* excluded windows (nothing to release) */
    uint64_t dead_letters; /* refused windows acknowledged on topics.release_rejected */
    uint64_t by_reason[REL_DLQ_COUNT];
    uint64_t produce_errors, commits, commit_errors, offset_gaps;
    uint64_t theta_version;      /* 0: none yet */
    uint64_t theta_swaps;        /* θ versions adopted after the first */
    int64_t lag;                 /* -1 unknown */
    uint64_t first_read_ns;      /* uv_hrtime() when the first window was read; 0 none yet */
    int64_t drift_ppm;           /* last valid drift score (rel/drift.h) in ppm; -1: none yet */
    uint64_t changelog_sent;     /* ledger rows acknowledged on topics.ledger_changelog */
    uint64_t adopted;            /* rows adopted from the changelog at assignments */
    uint64_t adopted_over_cap;   /* of which took a unit above the cap (counted, recorded) */
    uint64_t refused_partitions; /* assigned partitions refused now: changelog truncated */
    uint64_t changelog_refusals; /* assignments refused so far (truncated changelogs) */
};

/* o zeroed, then from cfg (borrowed) and the opened ledger (borrowed, lo its options): group,
 * ledger, scheme, ledger_lateness_ms (release.service.ledger_lateness_ms), commit_interval_ms
 * (500). θ from topics.calibration unless the caller sets theta_path; the caller adds
 * exit_idle_ms and on_done. Also changelog (release.service.changelog) and
 * replay_horizon_ms (release.ledger.replay_horizon_ms). */
void rel_service_opts_init(const struct core_config *cfg, const char *group,
                           struct core_dp_ledger *ledger, const struct core_dp_scheme *scheme,
                           struct rel_service_opts *o);

/* Start the service on loop.
 *   cfg      borrowed, must outlive the service (broker.*, topics.*, kafka.*, release.*,
 *            ingest.period_ms for the ledger scheme).
 *   metrics  borrowed, may be NULL.
 * Returns CORE_OK, CORE_ECONFIG (errbuf names the key or file), CORE_EIO, CORE_EKAFKA. */
CORE_MUST_CHECK core_err rel_service_new(uv_loop_t *loop, const struct core_config *cfg,
                                         const struct rel_service_opts *opts,
                                         struct core_metrics *metrics, struct rel_service **out,
                                         char *errbuf, size_t errbuf_size);

/* Graceful shutdown: stop intake, commit the pending group, wait for acknowledgements,
 * commit offsets, leave the group, then on_done (idempotent). */
void rel_service_stop(struct rel_service *s);

void rel_service_stats(const struct rel_service *s, struct rel_service_stats *out);

/* Free after on_done, then run the loop once more. NULL-safe. */
void rel_service_free(struct rel_service *s);

#endif /* REL_SERVICE_H */
