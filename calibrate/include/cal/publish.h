/* cal/publish.h - publish θ to the calibration topic (DESIGN §1: gcdp.calibration).
 * SPDX-License-Identifier: Apache-2.0
 *
 * One record per θ: key = decimal θ version, value = compact θ JSON (gcdp.theta/1),
 * produced idempotently (acks=all, core client profile) and flushed; returns only after
 * the broker acknowledged it or the timeout passed. θ holds no protected values in public
 * mode; in private mode it holds only released (noised) values, so the topic is public.
 *
 * Thread-safety: blocks the calling thread; do not call from an event-loop callback.
 */
#ifndef CAL_PUBLISH_H
#define CAL_PUBLISH_H

#include "cal/theta.h"
#include "core/config.h"
#include "core/err.h"

/* Produce t to cfg's topics.calibration and wait for the acknowledgement.
 *   cfg         borrowed: broker.bootstrap (required), broker.profile, kafka.*.
 *   timeout_ms  > 0: how long to wait for the acknowledgement.
 * Returns CORE_OK, CORE_ECONFIG (no broker.bootstrap; bad kafka.* key), CORE_EINVAL
 * (θ invalid), CORE_EKAFKA (not acknowledged: reason in errbuf). */
CORE_MUST_CHECK core_err cal_theta_publish(const struct core_config *cfg, const struct cal_theta *t,
                                           int timeout_ms, char *errbuf, size_t errbuf_size);

#endif /* CAL_PUBLISH_H */
