/* lagguard.h - consumer-lag back-pressure for the producers (stage-private).
 *
 * The embedded broker keeps only 5 MiB per partition (KAFKA.md §3.1): a consumer group that
 * falls further behind loses data. The guard watches one consumer group: per partition
 * lag = high watermark - max(committed offset, log start) (no commit yet: the whole
 * retained log counts), times the mean produced message size (+ a per-record overhead).
 * While any partition's lag exceeds max_bytes the producer waits (polling). This bounds
 * the producer by what the consumer has COMMITTED, so it is conservative for consumers
 * that commit late (e.g. ingest commits after the window is acknowledged).
 * Thread-safety: used by the producer's thread only.
 */
#ifndef SIM_SVC_LAGGUARD_H
#define SIM_SVC_LAGGUARD_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "core/config.h"
#include "core/err.h"

struct sim_lagguard;

/* New guard for group on topic; producer (borrowed) is used for metadata and watermarks.
 * out: new; free with sim_lagguard_free(). CORE_ECONFIG / CORE_EKAFKA with a reason. */
CORE_MUST_CHECK core_err sim_lagguard_new(const struct core_config *cfg, rd_kafka_t *producer,
                                          const char *topic, const char *group, size_t max_bytes,
                                          struct sim_lagguard **out, char *errbuf,
                                          size_t errbuf_size);

/* Largest lag over the partitions, in estimated bytes, given the mean message size.
 * Returns CORE_OK, or CORE_EKAFKA when the broker did not answer (the caller then waits,
 * as if over the limit: fail closed). */
CORE_MUST_CHECK core_err sim_lagguard_max_lag(struct sim_lagguard *g, double mean_bytes,
                                              double *lag_bytes);

size_t sim_lagguard_limit(const struct sim_lagguard *g);

void sim_lagguard_free(struct sim_lagguard *g); /* NULL-safe */

#endif /* SIM_SVC_LAGGUARD_H */
