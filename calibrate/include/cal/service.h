/* cal/service.h - the calibrate SERVICE: θ versions on topics.calibration, made from a
 * public calibration source, on start (when the topic holds none), on request (a control
 * command or a drift report) and periodically, rate-limited.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Public mode (ε_cal = 0): the source is a file of public calibration data
 * (calibrate.input.format), read again for every version, so an operator can refresh it.
 *
 * Private mode (calibrate.mode=private; docs/calibrate.md "The private calibrate service"):
 * each version is built from a declared span of protected windows (cal/span.h) read from
 * topics.windows, charged to the service's OWN ledger (opts.ledger: same scheme and caps as
 * release's) before any noise. Per version, all on the loop thread:
 *   1. read topics.windows to its high watermarks; span = cal_span_bounds (ENDS
 *      release.service.ledger_lateness_ms + widening + one slot before the newest window);
 *   2. refuse unless release's consumer group (opts.release_group) has committed past every
 *      span window (cal_priv_release_caught_up): every release charge of the span is then
 *      on topics.ledger_changelog;
 *   3. adopt every changelog row into the ledger (a partition whose log start is > 0 is
 *      refused: rows may be missing; so is one holding span windows and no row at all);
 *   4. cal_calibrate_charged (lookup -> charge ε_cal to every span unit -> CORE_EBUDGET:
 *      refused, no noise drawn -> noise -> commit, fsync);
 *   5. the calibrate rows go to the changelog on every partition holding a span window,
 *      acknowledged; only then θ goes to topics.calibration, acknowledged.
 * A release instance restores its partitions from the changelog again before it takes a
 * private θ in use (release/src/svc/service.c), so its totals include ε_cal before it
 * charges under the new version. One private calibrate service per deployment.
 * A refusal (budget, release_behind, no_windows, changelog) is counted
 * (gcdp_calibrate_refusals_total{reason}), answered to a command and published unsolicited
 * on topics.status with its reason (no unit names, no values). On start, after reading
 * topics.calibration, a version committed in the ledger and newer than every version on the
 * topic (a crash between the commit and θ's acknowledgement) is republished from the ledger
 * with its rows: the stored bytes, never new noise.
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
#include <stdio.h>

#include <uv.h>

#include "cal/theta.h"
#include "core/config.h"
#include "core/dp_acct.h"
#include "core/dp_ledger.h"
#include "core/err.h"
#include "core/metrics.h"

struct cal_service;
struct core_rng;

#define CAL_N_REFUSALS 4 /* budget, release_behind, no_windows, changelog */

struct cal_service_opts {
    const char *input;       /* public calibration source file; borrowed */
    int64_t min_interval_ms; /* rate limit between versions (>= 0) */
    int64_t refresh_ms;      /* periodic fallback (0 = off) */
    int64_t exit_after_ms;   /* > 0: stop by itself after this long (tests) */
    void (*on_done)(void *arg, core_err status);
    void *arg;
    /* private mode only (set by the caller; every pointer borrowed, outliving the service) */
    struct core_dp_ledger *ledger; /* the service's own ledger, open (JSONL back end) */
    const char *ledger_path;       /* its path: scanned at start for an unpublished θ */
    struct core_dp_scheme scheme;  /* the ledger's unit scheme (bound in its header) */
    struct core_dp_cost cap;       /* its caps (release.ledger.cap_*) */
    int64_t lateness_ms;           /* release.service.ledger_lateness_ms */
    int64_t span_ms;               /* calibrate.service.private_span_s x 1000 */
    const char *release_group;     /* calibrate.service.release_group */
    const struct core_rng *rng;    /* noise source (core_rng_os()) */
};

struct cal_service_stats {
    uint64_t version;                  /* newest version known (made or read); 0 none */
    uint64_t made, published;          /* versions made / acknowledged by the broker */
    uint64_t by_reason[CAL_N_REASONS]; /* made, by cal_reason_name index */
    uint64_t rate_limited;             /* requests refused by the rate limit */
    uint64_t failures;                /* calibrations that failed (source unreadable, invalid θ) */
    uint64_t refused[CAL_N_REFUSALS]; /* private recalibrations refused, by cal_refusal_name */
    uint64_t replayed;                /* stored θ republished from the ledger at start */
    char last_reason[16];
};

/* Why a private recalibration was refused (stable codes, also metric labels). */
const char *cal_refusal_name(int i); /* NULL outside [0, CAL_N_REFUSALS) */

/* The service's calibration options from cfg: cal_opts_from_config, cal_opts_check;
 * private mode needs calibrate.private.sensitivity=universal (the expansion bound is derived
 * from the policy graph over the matrix's nodes, which the service learns only per span). What
 * cal_service_new validates before it opens anything (also used by `gcdp calibrate --serve
 * --check`). JSON members of o stay borrowed from cfg. Returns CORE_OK or CORE_ECONFIG (errbuf
 * names the key). */
struct cal_opts;
CORE_MUST_CHECK core_err cal_service_opts_from_config(const struct core_config *cfg,
                                                      struct cal_opts *o, char *errbuf,
                                                      size_t errbuf_size);

/* o zeroed, then from cfg (borrowed): input (borrowed), min_interval_ms and refresh_ms
 * (calibrate.service.min_interval_s, .refresh_s). The caller adds exit_after_ms, on_done. */
void cal_service_opts_init(const struct core_config *cfg, const char *input,
                           struct cal_service_opts *o);

/* Start on loop. cfg borrowed (must outlive the service): calibrate.*, topics.*, broker.*.
 * Returns CORE_OK, CORE_ECONFIG (errbuf names the key: public mode without input, private
 * mode without a ledger / span / release group, or with expansion sensitivity),
 * CORE_EKAFKA. */
CORE_MUST_CHECK core_err cal_service_new(uv_loop_t *loop, const struct core_config *cfg,
                                         const struct cal_service_opts *opts,
                                         struct core_metrics *metrics, struct cal_service **out,
                                         char *errbuf, size_t errbuf_size);

/* Ask for a new version for reason ("drift" or "command"). Returns CORE_OK (made and being
 * published; private mode: published and acknowledged), CORE_EAGAIN (rate-limited: errbuf
 * says when the next is allowed), CORE_ESTATE (not ready: the topic is still being read, or
 * paused), private-mode refusals (counted and reported; errbuf says why): CORE_EBUDGET
 * (a unit's lifetime cap: no noise drawn), CORE_ESTATE (release behind the span, or a
 * truncated changelog), CORE_ENOTFOUND (fewer than 2 windows in the span); or the
 * calibration's error. */
CORE_MUST_CHECK core_err cal_service_request(struct cal_service *s, const char *reason,
                                             char *errbuf, size_t errbuf_size);

void cal_service_stop(struct cal_service *s);
void cal_service_stats(const struct cal_service *s, struct cal_service_stats *out);
void cal_service_free(struct cal_service *s);

/* Private mode's ledger (service_ledger.c): calibrate.ledger.path (relative: under state.dir,
 * which is created) opened as a JSONL ledger with release's unit scheme and caps
 * (release.ledger.*, ingest.period_ms); o->ledger, ledger_path, scheme, cap and rng
 * (core_rng_os) are set from it.
 *   path  caller storage of n bytes for the path; o->ledger_path points into it.
 *   led   out: the opened ledger; the caller frees it (core_dp_ledger_free) after the service.
 * Returns CORE_OK; CORE_ECONFIG (an empty path, state.dir that cannot be created, a path
 * that does not fit); otherwise the ledger's open error (eb says why). */
CORE_MUST_CHECK core_err cal_service_ledger_open(const struct core_config *cfg,
                                                 struct cal_service_opts *o, char *path, size_t n,
                                                 struct core_dp_ledger **led, char *eb, size_t ebn);

/* The service's one-line JSON summary (status, version, counts by reason) to f, flushed. */
void cal_service_summary_print(FILE *f, const struct cal_service *s, core_err status);

#endif /* CAL_SERVICE_H */
