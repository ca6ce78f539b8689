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

/* The standalone broker (`gcdp broker`, broker_run.c). */

/* The topics.* configuration keys whose topics a standalone broker creates at start. */
#define CORE_BROKER_N_TOPIC_KEYS 12
extern const char *const core_broker_topic_keys[CORE_BROKER_N_TOPIC_KEYS];

/* Create the topic of spec "NAME[:P]": P partitions (1..10000), else partitions.
 * Returns CORE_OK, CORE_EINVAL (an empty or over-long name, a bad P), CORE_EKAFKA. */
CORE_MUST_CHECK core_err core_broker_topic_create_spec(struct core_broker *b, const char *spec,
                                                       int partitions);

/* Create the control FIFO at path (replacing any file there) and open it read-write and
 * non-blocking (so reads never see EOF when no writer is attached).
 *   fd  out: the descriptor; the caller closes it (and unlinks path).
 * Returns CORE_OK or CORE_EIO. */
CORE_MUST_CHECK core_err core_broker_fifo_open(const char *path, int *fd);

/* Block until SIGINT or SIGTERM is pending (the caller has blocked both in every thread,
 * before the broker's threads were created) and take it; meanwhile apply every complete
 * line written to the control FIFO fd (-1: none) with core_broker_control, warning about a
 * refused one and dropping an over-long one. Returns the signal taken. */
int core_broker_wait_signal(struct core_broker *b, int fd);

#endif /* CORE_BROKER_H */
