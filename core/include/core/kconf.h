/* core/kconf.h - core configuration keys and librdkafka client configuration profiles.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Two profiles (KAFKA.md §8.2), chosen by "broker.profile":
 *   embedded   - for the in-memory development/test broker (librdkafka mock cluster):
 *                fetch.wait.max.ms=10 (the default 500 loses data on the mock),
 *                session.timeout.ms=6000, heartbeat.interval.ms=500,
 *                reconnect.backoff.max.ms=1000, auto.offset.reset=earliest.
 *   production - librdkafka defaults apart from the safety settings below.
 * Both: enable.auto.commit=false for consumers (offsets are committed only after the
 * derived output is acknowledged), enable.auto.offset.store=false, one assignment strategy
 * everywhere (cooperative-sticky is NOT used: the mock aborts on mixed lists);
 * producers enable.idempotence=true, acks=all, linger.ms=5.
 * "kafka.*" keys from the configuration are applied last and override the profile.
 *
 * Thread-safety: functions are reentrant.
 */
#ifndef CORE_KCONF_H
#define CORE_KCONF_H

#include <stddef.h>

#include <librdkafka/rdkafka.h>

#include "core/config.h"
#include "core/err.h"

/* Keys owned by core: log.level, broker.*, topics.*, control.*, metrics.*. Terminated by
 * {NULL}. */
extern const struct core_cfg_key core_config_keys[];

enum core_kafka_role { CORE_KAFKA_PRODUCER, CORE_KAFKA_CONSUMER };

/* Resolve a bootstrap spec: "host:port,..." as is, or "@path" read from a file written by
 * `gcdp broker` (first line, "BOOTSTRAP " prefix allowed).
 *   out  receives the address list. CORE_EIO when the file cannot be read. */
CORE_MUST_CHECK core_err core_kafka_bootstrap_resolve(const char *spec, char *out, size_t n,
                                                      char *errbuf, size_t errbuf_size);

/* Write the bootstrap file core_kafka_bootstrap_resolve() reads: "BOOTSTRAP addr\n", written
 * to a temporary file beside path (path.tmp.PID) and renamed over path, so a reader never sees
 * half a line; path's parent directories are created when missing.
 *   path, addr  borrowed.
 * Returns CORE_OK or CORE_EIO (the temporary file is removed). */
CORE_MUST_CHECK core_err core_kafka_bootstrap_write(const char *path, const char *addr);

/* New librdkafka configuration for role: profile + bootstrap + group.id (consumers;
 * may be NULL for producers) + kafka.* overrides.
 *   out  on CORE_OK a new rd_kafka_conf_t; rd_kafka_new() takes it on success only,
 *        otherwise the caller frees it with rd_kafka_conf_destroy().
 * CORE_ECONFIG names the offending property (librdkafka's own message). */
CORE_MUST_CHECK core_err core_kafka_conf_new(const struct core_config *cfg,
                                             enum core_kafka_role role, const char *group_id,
                                             rd_kafka_conf_t **out, char *errbuf,
                                             size_t errbuf_size);

/* Set one property, with librdkafka's message on failure. */
CORE_MUST_CHECK core_err core_kafka_conf_set(rd_kafka_conf_t *conf, const char *name,
                                             const char *value, char *errbuf, size_t errbuf_size);

#endif /* CORE_KCONF_H */
