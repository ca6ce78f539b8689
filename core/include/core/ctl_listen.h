/* core/ctl_listen.h - the services' side of the control topic: a listener on the libuv loop
 * that verifies every record of topics.control (core/ctl.h) and hands accepted commands to
 * the service, and the gcdp.status/1 reply helper.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Every instance sees every command. The listener is a consumer in a group of its own,
 * "gcdp.ctl.<service>.<host>.<pid>" (one member, so it is assigned every partition of
 * topics.control), with auto.offset.reset=latest and no offset commits: a (re)started
 * instance starts at the end of the topic and never acts on a command published while it
 * was not running (such a command would be stale within control.max_skew_s anyway). A
 * shared group would hand each command to one instance only. The price: a command
 * published before the listener's first assignment (about 3 s after start on the
 * embedded broker, one rebalance on Kafka) is not seen; core_ctl_listener_ready() says
 * when it is listening.
 *
 * Configuration (core/kconf.h): topics.control, control.key_file ("": control disabled:
 * no consumer is created, nothing is subscribed, every command goes unanswered; the
 * listener still exists so the service code has one path), control.prev_key_file (the
 * rotation window's previous key), control.max_skew_s, control.replay_cache.
 *
 * Rejected records are counted by reason (core_ctl_listener_count, and
 * gcdp_control_records_total{service,verdict} when a metrics registry is given) and logged
 * at warn level with the reason, partition and offset (the first 100 of each reason, then
 * every 1000th, so a flood cannot flood the log); never with a key or a signature.
 *
 * Thread-safety: loop thread only.
 */
#ifndef CORE_CTL_LISTEN_H
#define CORE_CTL_LISTEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "core/config.h"
#include "core/ctl.h"
#include "core/err.h"
#include "core/kafka.h"
#include "core/metrics.h"

#define CORE_CTL_STATUS_SCHEMA "gcdp.status/1"

struct core_ctl_listener;

/* An accepted (authenticated, fresh, for us, first seen) command; cmd valid during the
 * call only. Runs on the loop thread. */
typedef void core_ctl_command_fn(void *arg, const struct core_ctl_cmd *cmd);
typedef void core_ctl_closed_fn(void *arg);

struct core_ctl_listener_opts {
    const char *service;             /* this service's target name ("calibrate"); copied */
    core_ctl_command_fn *on_command; /* required */
    core_ctl_closed_fn *on_closed;   /* optional: the listener left its group */
    void *arg;                       /* for both callbacks */
    struct core_metrics *metrics;    /* optional; borrowed, must outlive the listener */
};

/* New listener on loop, configured from cfg (borrowed during the call only).
 *   out  new listener (also when control is disabled); free with core_ctl_listener_free().
 * Returns CORE_OK; CORE_ECONFIG when a key file is unusable or the keys clash (errbuf names
 * the key, e.g. "control.key_file: key file '/etc/gcdp/ctl.key': mode 0644 ..." - the
 * service exits 2); CORE_EKAFKA / CORE_EIO from the consumer. */
CORE_MUST_CHECK core_err core_ctl_listener_new(uv_loop_t *loop, const struct core_config *cfg,
                                               const struct core_ctl_listener_opts *opts,
                                               struct core_ctl_listener **out, char *errbuf,
                                               size_t errbuf_size);

/* False when control.key_file is "" (no consumer). */
bool core_ctl_listener_enabled(const struct core_ctl_listener *l);

/* True once the consumer holds its partitions. Their end offsets (auto.offset.reset=latest)
 * are looked up right after, so a command published in the next few milliseconds may still
 * be skipped; tests that must not lose one probe each partition first (see
 * tests/integration/test_ctl.c). Always false when disabled. */
bool core_ctl_listener_ready(const struct core_ctl_listener *l);

/* Records judged with verdict so far (0 when disabled). */
uint64_t core_ctl_listener_count(const struct core_ctl_listener *l, enum core_ctl_verdict verdict);

/* {"accepted": n, "malformed": n, ...}: every verdict, for a status body. New reference. */
json_t *core_ctl_listener_counts_json(const struct core_ctl_listener *l);

/* This instance's id "<host>:<pid>" (valid while l lives). */
const char *core_ctl_listener_instance(const struct core_ctl_listener *l);

/* Leave the group; opts->on_closed follows on the loop (when disabled: before this call
 * returns). Idempotent. */
void core_ctl_listener_close(struct core_ctl_listener *l);

/* After on_closed: stop driving the consumer from the loop so uv_run can return. */
void core_ctl_listener_detach(struct core_ctl_listener *l);

/* Free after uv_run returned (as core_kconsumer_free: run the loop once more before
 * uv_loop_close). NULL-safe. Wipes the keys. */
void core_ctl_listener_free(struct core_ctl_listener *l);

/* "<host>:<pid>" into buf (n >= 2). */
void core_ctl_instance_id(char *buf, size_t n);

/* The gcdp.status/1 record
 *   {"schema":"gcdp.status/1","service":...,"instance":...,"in_reply_to":<nonce|null>,
 *    "at":<epoch ms>,"status":{...}}
 *   in_reply_to  the nonce of the status command answered, or NULL (unsolicited).
 *   status       a JSON object (borrowed): the service's own body. Public topic: counts,
 *                versions and reasons only, never protected values (DESIGN §7.4).
 *   out          new compact JSON text; caller frees with free().
 * Pure. Returns CORE_OK, CORE_EINVAL (status not an object, a text not UTF-8), CORE_ENOMEM. */
CORE_MUST_CHECK core_err core_ctl_status_encode(const char *service, const char *instance,
                                                const char *in_reply_to, int64_t at_ms,
                                                const json_t *status, char **out);

/* Encode (at = the wall clock now) and enqueue a status record on topic, key = instance.
 *   opaque  handed to p's delivery report.
 * Returns CORE_OK, the errors of core_ctl_status_encode and core_kproducer_send (errbuf). */
CORE_MUST_CHECK core_err core_ctl_reply_status(struct core_kproducer *p, const char *topic,
                                               const char *service, const char *instance,
                                               const char *in_reply_to, const json_t *status,
                                               void *opaque, char *errbuf, size_t errbuf_size);

/* The wall clock in epoch ms (CLOCK_REALTIME), the time commands are judged against. */
int64_t core_ctl_now_ms(void);

#endif /* CORE_CTL_LISTEN_H */
