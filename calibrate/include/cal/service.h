/* cal/service.h - the calibrate SERVICE: θ versions on topics.calibration, made from a
 * public calibration source, on start (when the topic holds none), on request (a control
 * command or a drift report) and periodically, rate-limited.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Public mode only (ε_cal = 0): the source is a file of public calibration data
 * (calibrate.input.format), read again for every version, so an operator can refresh it.
 * Private mode reads protected windows and charges ε_cal to the ledger; the service
 * refuses it at start (CORE_ECONFIG) and the offline `gcdp calibrate --mode private
 * --publish` remains the way to publish a private θ.
 *
 * Versions: on start the service reads topics.calibration to its end (a consumer of its
 * own, from the beginning) and continues above the newest version there: a new version is
 * max(now in ms, newest + 1), so versions only grow, also across restarts and clock steps
 * back. Each record states why it was made (θ "reason": initial, drift, command,
 * periodic). Requests closer than min_interval_ms to the previous version are refused and
 * counted (rate limit); a refused request is reported by cal_service_request's return.
 *
 * Calibration runs on the loop thread (public calibration of a few thousand rows takes
 * milliseconds; the loop is not serving readings). Publication is asynchronous; a version
 * counts as published when the broker acknowledged it.
 *
 * Thread-safety: every call on the loop thread, except cal_service_stats.
 */
#ifndef CAL_SERVICE_H
#define CAL_SERVICE_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "cal/theta.h"
#include "core/config.h"
#include "core/err.h"
#include "core/metrics.h"

struct cal_service;

struct cal_service_opts {
    const char *input;          /* public calibration source file; borrowed */
    int64_t min_interval_ms;    /* rate limit between versions (>= 0) */
    int64_t refresh_ms;         /* periodic fallback (0 = off) */
    int64_t exit_after_ms;      /* > 0: stop by itself after this long (tests) */
    void (*on_done)(void *arg, core_err status);
    void *arg;
};

struct cal_service_stats {
    uint64_t version;           /* newest version known (made or read); 0 none */
    uint64_t made, published;   /* versions made / acknowledged by the broker */
    uint64_t by_reason[CAL_N_REASONS]; /* made, by cal_reason_name index */
    uint64_t rate_limited;      /* requests refused by the rate limit */
    uint64_t failures;          /* calibrations that failed (source unreadable, invalid θ) */
    char last_reason[16];
};

/* The service's calibration options from cfg: cal_opts_from_config, public mode only,
 * cal_opts_check. What cal_service_new validates before it opens anything (also used by
 * `gcdp calibrate --serve --check`). JSON members of o stay borrowed from cfg.
 * Returns CORE_OK or CORE_ECONFIG (errbuf names the key). */
struct cal_opts;
CORE_MUST_CHECK core_err cal_service_opts_from_config(const struct core_config *cfg,
                                                      struct cal_opts *o, char *errbuf,
                                                      size_t errbuf_size);

/* o zeroed, then from cfg (borrowed): input (borrowed), min_interval_ms and refresh_ms
 * (calibrate.service.min_interval_s, .refresh_s). The caller adds exit_after_ms, on_done. */
void cal_service_opts_init(const struct core_config *cfg, const char *input,
                           struct cal_service_opts *o);

/* Start on loop. cfg borrowed (must outlive the service): calibrate.*, topics.*, broker.*.
 * Returns CORE_OK, CORE_ECONFIG (errbuf names the key: private mode, no input),
 * CORE_EKAFKA. */
CORE_MUST_CHECK core_err cal_service_new(uv_loop_t *loop, const struct core_config *cfg,
                                         const struct cal_service_opts *opts,
                                         struct core_metrics *metrics,
                                         struct cal_service **out, char *errbuf,
                                         size_t errbuf_size);

/* Ask for a new version for reason ("drift" or "command"). Returns CORE_OK (made and being
 * published), CORE_EAGAIN (rate-limited: errbuf says when the next is allowed),
 * CORE_ESTATE (not ready: the topic is still being read), or the calibration's error. */
CORE_MUST_CHECK core_err cal_service_request(struct cal_service *s, const char *reason,
                                             char *errbuf, size_t errbuf_size);

void cal_service_stop(struct cal_service *s);
void cal_service_stats(const struct cal_service *s, struct cal_service_stats *out);
void cal_service_free(struct cal_service *s);

#endif /* CAL_SERVICE_H */
