/* rel/changelog.h - the ledger changelog: several release instances in one consumer group,
 * the ledger rows following the partitions of topics.windows (issue 12; docs/release.md,
 * "Several instances").
 * SPDX-License-Identifier: Apache-2.0
 *
 * topics.ledger_changelog (default gcdp.ledger.changelog; protected) has the partition count
 * of topics.windows; the row of a release (core_dp_ledger_row: the ledger's one row format)
 * is produced with key = release id to the SAME partition number as the window it came from.
 * Order per release: local ledger commit (fsync) -> changelog record acknowledged (acks=all)
 * -> output produced to topics.released -> input offset committed after the output's ack.
 * When an instance is assigned a partition it reads that changelog partition from its start
 * to its high watermark (rel_changelog_restore) and adopts every row into its own ledger
 * (core_dp_ledger_adopt_rows: groups of up to 256 rows, one group commit each) before it
 * releases any window of the partition.
 *
 * Thread-safety: rel_changelog_restore blocks the calling thread (the service's loop thread,
 * inside the assignment callback: no record of the partition is served before it returns).
 */
#ifndef REL_CHANGELOG_H
#define REL_CHANGELOG_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>
#include <librdkafka/rdkafka.h>

#include "core/config.h"
#include "core/dp_ledger.h"
#include "core/err.h"

/* Pure (release/src/alg): may the changelog partition be missing rows the ledger still
 * needs? log_start: the partition's first available offset; first_ts_ms: timestamp of the
 * first available record (-1: the partition holds none); now_ms: the clock; horizon_ms:
 * release.ledger.replay_horizon_ms (0: every row is needed forever).
 *   log_start <= 0                 -> false (nothing was ever deleted)
 *   horizon_ms == 0                -> true  (a deleted row may be needed)
 *   first_ts_ms < 0 (none left)    -> false (emptied by time retention >= the horizon;
 *                                            size retention keeps the newest records)
 *   otherwise                      -> first_ts_ms > now_ms - horizon_ms (rows produced
 *                                      within the horizon may have been deleted before it) */
bool rel_changelog_truncated(int64_t log_start, int64_t first_ts_ms, int64_t now_ms,
                             int64_t horizon_ms);

/* topics.ledger_changelog must be set and differ from every other topics.* key (and from the
 * default names of the protected topics). Returns CORE_OK or CORE_ECONFIG (errbuf names the
 * key). */
CORE_MUST_CHECK core_err rel_changelog_topic_check(const struct core_config *cfg, char *errbuf,
                                                   size_t errbuf_size);

struct rel_changelog_restore_stats {
    uint64_t rows;     /* records read */
    uint64_t adopted;  /* rows new to this ledger (CORE_DP_ADOPTED_NEW / _OVER_CAP) */
    uint64_t same;     /* rows this ledger already had with the same bytes */
    uint64_t expired;  /* rows older than the ledger's replay horizon (not recorded) */
    uint64_t over_cap; /* adopted rows that took a unit above the cap */
    bool truncated;    /* rel_changelog_truncated said so: nothing was adopted */
};

/* Restore partition p of topic into l: watermarks, the truncation decision, then every
 * record from the log start to the high watermark adopted in offset order.
 *   rk          a consumer handle that never joins a group (manual assign; borrowed; its
 *               assignment is replaced and cleared again).
 *   horizon_ms  release.ledger.replay_horizon_ms.
 *   timeout_ms  for the whole partition.
 *   known       optional (NULL): a JSON object used as a set; the key (release id) of every
 *               row read is added (the caller then need not send those rows again).
 * Returns CORE_OK (st->truncated: the partition must not be processed), CORE_EINVARIANT
 * (a row conflicts with this ledger: errbuf names the release id; fail closed),
 * CORE_EPARSE (a record is not a ledger row: errbuf names partition and offset),
 * CORE_EKAFKA (watermarks, assignment, fetch, or timeout), errors of
 * core_dp_ledger_adopt_row. A topic the broker does not know is empty (CORE_OK). */
CORE_MUST_CHECK core_err rel_changelog_restore(rd_kafka_t *rk, const char *topic, int32_t p,
                                               struct core_dp_ledger *l, int64_t horizon_ms,
                                               int timeout_ms, json_t *known,
                                               struct rel_changelog_restore_stats *st, char *errbuf,
                                               size_t errbuf_size);

#endif /* REL_CHANGELOG_H */
