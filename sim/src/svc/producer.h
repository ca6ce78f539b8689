/* producer.h - paced, loss-free librdkafka producer shared by the simulator and replay
 * (stage-private).
 *
 * send(): waits for the token bucket, then for the number of unacknowledged messages to
 * drop below max_inflight, then produces (RD_KAFKA_MSG_F_COPY, key = device); on
 * QUEUE_FULL it polls and retries — a message handed to send() is never dropped.
 * Delivery reports update progress->acked / ->failed. finish() flushes with a timeout and
 * counts whatever is still unacknowledged as failed.
 * Thread-safety: one thread drives a producer.
 */
#ifndef SIM_SVC_PRODUCER_H
#define SIM_SVC_PRODUCER_H

#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/err.h"
#include "sim/bucket.h"
#include "sim/sim.h"

struct sim_producer;

/* New producer with the settings po (borrowed; only read here): on po->topic (NULL:
 * "topics.raw"), at most po->max_inflight (>= 1) unacknowledged messages, and, when
 * po->lag_group is set, consumer-lag back-pressure (lagguard.h): before each message it
 * waits while that group lags more than po->max_lag_bytes on any partition of the topic.
 * po->flush_timeout_ms is the caller's to pass to sim_producer_finish().
 *   cfg, progress  borrowed; progress must outlive the producer.
 *   rate           messages/s token bucket (0: unlimited).
 *   max_bytes      largest payload that will be sent; message.max.bytes is raised to fit.
 * out: new; free with sim_producer_free(). CORE_ECONFIG / CORE_EKAFKA with a reason (e.g.
 * no metadata for the topic of the lag guard); *out is then unchanged. */
CORE_MUST_CHECK core_err sim_producer_new(const struct core_config *cfg,
                                          const struct sim_producer_opts *po, double rate,
                                          size_t max_bytes, struct sim_progress *progress,
                                          struct sim_producer **out, char *errbuf,
                                          size_t errbuf_size);

/* Produce one message (copied). fault: value of header "gcdp-fault", or NULL for none.
 * Returns CORE_OK; CORE_ESTATE when progress->stop was set while waiting (the message was
 * NOT produced: the caller ends the run); CORE_EKAFKA on a non-retriable produce error
 * (counted as failed). */
CORE_MUST_CHECK core_err sim_producer_send(struct sim_producer *p, const char *key, size_t key_len,
                                           const char *payload, size_t len, const char *fault);

/* As sim_producer_send with nhdr headers names[i]: values[i] (a NULL value is skipped);
 * key may be NULL (no key). */
CORE_MUST_CHECK core_err sim_producer_send_hdrs(struct sim_producer *p, const char *key,
                                                size_t key_len, const char *payload, size_t len,
                                                const char *const *names, const char *const *values,
                                                size_t nhdr);

/* Wait until the monotonic time deadline_ns (serving delivery reports meanwhile) or until
 * progress->stop is set. */
void sim_producer_sleep_until(struct sim_producer *p, int64_t deadline_ns);

/* Flush for at most timeout_ms; anything not acknowledged then is counted as failed.
 * Returns CORE_OK when progress->failed == 0, else CORE_EKAFKA. */
CORE_MUST_CHECK core_err sim_producer_finish(struct sim_producer *p, int timeout_ms);

void sim_producer_free(struct sim_producer *p); /* NULL-safe; does not flush */

/* Monotonic clock in nanoseconds. */
int64_t sim_now_ns(void);

#endif /* SIM_SVC_PRODUCER_H */
