/* core/broker.h - the embedded in-memory Kafka-protocol broker (librdkafka mock cluster).
 * SPDX-License-Identifier: Apache-2.0
 *
 * DEVELOPMENT / TEST ONLY. Real Kafka wire protocol on loopback TCP (consumer groups work
 * across processes) but: no persistence (a restart empties everything), retention hard-coded
 * at CORE_BROKER_RETENTION_BYTES or 100 000 batches per partition (a lagging consumer is
 * overrun; ingest detects and counts that), no transactions, no admin API, random port.
 * Production uses Apache Kafka. Measured limits: docs/operations.md.
 *
 * Topics are created explicitly at start (auto-creation on the mock would give 4 partitions
 * to any typo).
 * Thread-safety: create and free on one thread; the broker runs in its own thread.
 */
#ifndef CORE_BROKER_H
#define CORE_BROKER_H

#include <stddef.h>

#include "core/err.h"

/* The mock's fixed per-partition retention (librdkafka rdkafka_mock.c, not configurable). */
#define CORE_BROKER_RETENTION_BYTES   (5u * 1024u * 1024u)
#define CORE_BROKER_RETENTION_BATCHES 100000u
#define CORE_BROKER_MAX_BROKERS       16

struct core_broker;

/* Start a mock cluster of nbrokers brokers and create each topic with partitions
 * partitions (replication factor min(3, nbrokers)).
 *   topics  ntopics names, borrowed.
 *   out     new broker; stop and free with core_broker_free().
 * Returns CORE_OK, CORE_EINVAL (counts out of range), CORE_EKAFKA (errbuf says why). */
CORE_MUST_CHECK core_err core_broker_new(int nbrokers, const char *const *topics, size_t ntopics,
                                         int partitions, struct core_broker **out, char *errbuf,
                                         size_t errbuf_size);

/* Create one more topic. CORE_EKAFKA if the mock refuses. */
CORE_MUST_CHECK core_err core_broker_topic_create(struct core_broker *b, const char *topic,
                                                  int partitions);

/* Fault injection (tests): apply one command line to every broker of the cluster.
 *   "down"     close connections and refuse new ones (the port is kept)
 *   "up"       accept again
 *   "rtt MS"   delay every response by MS milliseconds (0 = off)
 * Returns CORE_OK, CORE_EINVAL (unknown command), CORE_EKAFKA. */
CORE_MUST_CHECK core_err core_broker_control(struct core_broker *b, const char *line);

/* "127.0.0.1:PORT,..." (borrowed; valid until core_broker_free). */
const char *core_broker_bootstrap(const struct core_broker *b);

/* Stop the brokers (clients see the connection drop) and free. NULL-safe. */
void core_broker_free(struct core_broker *b);

#endif /* CORE_BROKER_H */
