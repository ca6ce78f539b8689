/* private.h - Kafka I/O of the private calibrate service (stage-internal; cal/service.h,
 * docs/calibrate.md "The private calibrate service"). Every call blocks the calling thread
 * (the service's loop thread) for at most its timeout.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Nothing here logs or returns a protected value: errors name topics, partitions, offsets,
 * counts and release ids.
 */
#ifndef CAL_SVC_PRIVATE_H
#define CAL_SVC_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

#include "cal/span.h"
#include "core/config.h"
#include "core/dp_ledger.h"
#include "core/err.h"

/* Read every partition of topic (cfg's topics.windows) from its log start to the high
 * watermark at the call into set (cal_span_add). Returns CORE_OK, CORE_EKAFKA (metadata,
 * watermarks, assignment, or not done within timeout_ms), the errors of cal_span_add. */
CORE_MUST_CHECK core_err cal_priv_read_windows(const struct core_config *cfg, const char *topic,
                                               struct cal_span_set *set, int timeout_ms,
                                               char *errbuf, size_t errbuf_size);

/* Has consumer group `group` committed, on every partition p of topic with r->need[p] >= 0,
 * an offset >= r->need[p]? (Then every window of the span was released or dead-lettered and
 * the ledger row of each release is acknowledged on the changelog: release commits an offset
 * only after the outputs before it are acknowledged, and an output only after its row.)
 * Returns CORE_OK, CORE_ESTATE (behind: errbuf names the partition and both offsets),
 * CORE_EKAFKA. */
CORE_MUST_CHECK core_err cal_priv_release_caught_up(const struct core_config *cfg,
                                                    const char *group, const char *topic,
                                                    const struct cal_span_result *r, int timeout_ms,
                                                    char *errbuf, size_t errbuf_size);

struct cal_priv_adopt_stats {
    uint64_t rows, adopted, same, over_cap, expired;
    uint64_t rows_in[CAL_SPAN_MAX_PARTITIONS]; /* records read per partition */
};

/* Adopt every row of every partition of the changelog topic (log start to the high
 * watermark) into l (core_dp_ledger_adopt_rows, groups of up to 256 rows). A partition whose
 * log start is > 0 may have lost rows: refused (CORE_ESTATE, fail closed). Returns CORE_OK,
 * CORE_ESTATE, CORE_EKAFKA, the errors of core_dp_ledger_adopt_rows (CORE_EINVARIANT: a row
 * conflicts with this ledger; CORE_EPARSE: a record is not a ledger row). */
CORE_MUST_CHECK core_err cal_priv_adopt_changelog(const struct core_config *cfg, const char *topic,
                                                  struct core_dp_ledger *l, int timeout_ms,
                                                  struct cal_priv_adopt_stats *st, char *errbuf,
                                                  size_t errbuf_size);

/* Publish the ledger rows ids[0..n) of l (core_dp_ledger_row) to the changelog topic on every
 * partition p < n_parts with need[p] >= 0 (key = release id, same bytes on each), wait for
 * every acknowledgement, then publish theta (key = version) to cal_topic and wait for its
 * acknowledgement. Nothing of θ is produced unless every row was acknowledged.
 * Returns CORE_OK, CORE_EKAFKA (a record not acknowledged within timeout_ms), the errors of
 * core_dp_ledger_row. */
CORE_MUST_CHECK core_err cal_priv_publish(const struct core_config *cfg, struct core_dp_ledger *l,
                                          const char *const *ids, size_t n, const int64_t *need,
                                          size_t n_parts, const char *cal_topic, uint64_t version,
                                          const char *theta, size_t theta_len, int timeout_ms,
                                          char *errbuf, size_t errbuf_size);

/* Partitions need[] should name when republishing a stored θ after a restart: every
 * partition of the changelog topic (the units' partitions are not recorded). Fills need[p] =
 * 0 for p < partition count, -1 after; *n_parts. Returns CORE_OK, CORE_EKAFKA. */
CORE_MUST_CHECK core_err cal_priv_all_partitions(const struct core_config *cfg, const char *topic,
                                                 int64_t *need, size_t *n_parts, char *errbuf,
                                                 size_t errbuf_size);

#endif /* CAL_SVC_PRIVATE_H */
