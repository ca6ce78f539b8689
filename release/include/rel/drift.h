/* rel/drift.h - the drift monitor of GC-DP-Cache (paper Sec. 5.4; DESIGN §5 release): θ is
 * reused while this predeclared monitor accepts it.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Statistic: Algorithm 1's lag-aware summary S_ij = λ ρ0_ij + (1 − λ) max_{|ℓ|≤L} ρ_ij^(ℓ)
 * (θ's own λ and L; core_lagcorr_blas, so the zero-variance and fewer-than-two-pairs rules
 * are θ's) over one horizon of RELEASED windows: post-processing of public values, no
 * budget. Only the released values and their public noise scales are read.
 *   - Nodes: a θ node is observed through the first coordinate k with a(k) = {node} (a
 *     single-node coordinate: |ρ| is invariant to its coefficient); nodes without one are
 *     not observed and every pair touching them is left out. Fewer than two observed nodes:
 *     rel_drift_new refuses (CORE_EINVAL).
 *   - Horizons on window time (opts.span_ms > 0, default one day): a window belongs to the
 *     horizon floor(window_start / span_ms) (UTC days at the default), whatever order it
 *     arrives in, so every device contributes the same stretch of time even when the
 *     release reads a backlog partition by partition. Up to REL_DRIFT_OPEN horizons are
 *     open at once; one closes when it holds `horizon` rows, when a later horizon holds
 *     min_fill x horizon rows, or when a window of a new horizon needs its slot (the oldest
 *     closes). A device enters a closing horizon only with at least 90 % of the fullest
 *     device's windows in it (a device read halfway through the span would weigh one time
 *     of day); a horizon with fewer than min_fill x horizon rows from such devices is not
 *     evaluated (stats.partial: a skewed sample says nothing about drift); a window of a
 *     horizon already closed is counted late and left out. span_ms = 0: the previous arrival-order
 *     horizons (`horizon` consecutive released windows).
 *   - Pooling (as calibrate's matrix stacks rows): the horizon's windows are grouped by
 *     device, each device's windows in window_start order form its series, and the series
 *     are stacked (devices in byte order of their ids) into one rows x nodes matrix. A device
 *     with fewer than min_samples windows in the horizon is left out. At a device boundary
 *     the ℓ ≥ 1 pairs join two devices (≤ L per boundary: a bias toward 0 of at most
 *     L/min_samples on lagged terms, documented in docs/release.md). Windows missing
 *     inside a device's series are not filled: lag ℓ pairs windows ℓ releases apart.
 *   - Noise: released values carry independent noise of public variance σ²_k per
 *     coordinate (rel_drift_noise_var from the record's scale and mechanism). Pearson of
 *     noisy values is attenuated by √(r_i r_j), r = var_true / var_obs; with
 *     opts.correct (default) each correlation is divided by √(r_i r_j) (Spearman's
 *     correction) with r_i = (var_obs_i − mean σ²_i) / var_obs_i from the pooled column and
 *     the mean public noise variance of its rows, and clamped to [0, 1]. A node with
 *     r_i < min_reliability is too noisy to correct: its pairs are left out this horizon.
 *   - Distance (REL_DRIFT_REF_THETA, default): per compared pair, an edge of θ (w_ij ≥ τ)
 *     contributes |S_ij − w_ij|; a non-edge contributes the excess max(0, S_ij − τ), but
 *     only when both endpoints have θ degree < K (a pair at a saturated endpoint may have
 *     been capped by K, not below τ, so it is not compared). score = max over compared
 *     pairs (a sup distance in correlation units); mean = their average (reported only).
 *     REL_DRIFT_REF_BASELINE instead takes the first valid horizon after a reset as the
 *     reference summary and scores max |S_ij − S_base,ij| over observed reliable pairs.
 *   - Decision: a valid horizon is above when score > threshold; consecutive counts valid
 *     above horizons in a row (a valid horizon at or below threshold resets it; an invalid
 *     one, without enough rows or comparable pairs, leaves it unchanged); fire is set on
 *     the horizon where consecutive reaches patience, once: the monitor then stays fired
 *     until rel_drift_reset (the service resets it when it swaps θ).
 *
 * Memory (bounded, allocated in rel_drift_new): REL_DRIFT_OPEN horizons (1 in arrival
 * order) of `horizon` rows; per row the
 * device id (REL_DRIFT_MAX_DEVICE bytes), window_start and 2 doubles per observed node
 * (value, noise variance), plus the pooled matrix and core_lagcorr_work_len scratch.
 * Caps: horizon ≤ REL_DRIFT_MAX_HORIZON rows, open horizons × horizon × observed nodes ≤
 * REL_DRIFT_MAX_CELLS;
 * devices per horizon ≤ horizon (one row each at least); a device keeps at most its windows
 * of the current horizon. Horizons are consecutive and disjoint (a tumbling horizon),
 * so consecutive horizons are independent evidence.
 *
 * Everything a result holds (scores, counts, summaries) is post-processing of public
 * released values; nothing else is exposed. No I/O, no clock, no allocation after new.
 *
 * Thread-safety: a monitor is single-threaded. θ is borrowed read-only and must outlive it
 * (or be replaced through rel_drift_reset).
 */
#ifndef REL_DRIFT_H
#define REL_DRIFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cal/theta.h"
#include "core/config.h"
#include "core/err.h"

#define REL_DRIFT_MAX_HORIZON  (1u << 16) /* rows (released windows) per horizon */
#define REL_DRIFT_MAX_CELLS    (1u << 24) /* horizon × observed nodes */
#define REL_DRIFT_MAX_DEVICE   64u        /* device id bytes (as gcdp.released/1) */
#define REL_DRIFT_MAX_PATIENCE 1000u
#define REL_DRIFT_OPEN         2u                  /* open horizons on window time */
#define REL_DRIFT_MAX_SPAN_MS  (30LL * 86400000LL) /* span_ms cap: 30 days */

enum rel_drift_ref {
    REL_DRIFT_REF_THETA = 0,   /* compare with θ's edges and τ (default) */
    REL_DRIFT_REF_BASELINE = 1 /* compare with the first valid horizon after a reset */
};

struct rel_drift_opts {
    size_t horizon;     /* released windows (all devices) per horizon, [8, MAX_HORIZON] */
    double threshold;   /* score above which a horizon is "above", (0, 1] */
    unsigned patience;  /* consecutive above horizons that fire, [1, MAX_PATIENCE] */
    size_t min_samples; /* windows a device needs in a horizon to enter it, [2, horizon] */
    enum rel_drift_ref ref;
    bool correct;           /* attenuation correction (default true) */
    double min_reliability; /* r floor for the correction, (0, 1) (default 0.1) */
    int64_t span_ms;        /* window time per horizon, [0, MAX_SPAN_MS]; 0: arrival order */
    double min_fill;        /* fraction of `horizon` a closing horizon needs, (0, 1] */
};

/* Defaults (docs/release.md "Drift monitor and θ cache": chosen on tuning seeds disjoint
 * from the seeds the tests assert on). */
void rel_drift_opts_default(struct rel_drift_opts *o);

/* Check o. Returns CORE_OK or CORE_EINVAL (errbuf names the field). */
CORE_MUST_CHECK core_err rel_drift_opts_check(const struct rel_drift_opts *o, char *errbuf,
                                              size_t errbuf_size);

/* Read the release.drift.* keys (horizon, threshold, patience, min_samples, span_ms,
 * min_fill, enabled) of cfg
 * into o (other fields: defaults) and *enabled. Returns CORE_OK or CORE_ECONFIG naming the
 * key (e.g. min_samples > horizon). */
CORE_MUST_CHECK core_err rel_drift_opts_from_config(const struct core_config *cfg,
                                                    struct rel_drift_opts *o, bool *enabled,
                                                    char *errbuf, size_t errbuf_size);

/* Variance of the released noise of one coordinate from its published scale: Laplace
 * (b): 2 b²; Gaussian (σ): σ². scale must be finite and >= 0 (else NAN). */
double rel_drift_noise_var(double scale, bool gaussian);

/* The outcome of one push. Every field is a public, post-processed value. */
struct rel_drift_result {
    bool evaluated;         /* this push completed a horizon (the fields below are set) */
    bool valid;             /* enough rows and at least one compared pair */
    bool baseline;          /* REF_BASELINE: this horizon became the reference (no score) */
    double score;           /* sup distance (0 when not valid) */
    double mean;            /* mean distance over the compared pairs */
    bool above;             /* valid && score > threshold */
    unsigned consecutive;   /* valid above horizons in a row */
    bool fire;              /* consecutive reached patience on this horizon (once per arm) */
    size_t rows;            /* windows in the pooled matrix */
    size_t devices;         /* devices in it (>= min_samples windows each) */
    size_t pairs;           /* pairs compared */
    size_t noisy;           /* observed nodes too noisy to correct (r < min_reliability) */
    uint64_t horizon_index; /* horizons completed since the last reset, from 1 */
    int64_t span_start_ms;  /* window time the horizon starts at (0 in arrival order) */
};

/* Counters since the last reset (public). */
struct rel_drift_stats {
    uint64_t pushed;     /* windows accepted into a horizon */
    uint64_t duplicates; /* (device, window_start) repeated in a horizon: left out */
    uint64_t sparse;     /* windows of devices with < min_samples in their horizon (on
                            window time also < 90 % of the fullest device's windows) */
    uint64_t late;       /* windows of a horizon already closed: left out */
    uint64_t partial;    /* horizons closed with < min_fill x horizon rows: not evaluated */
    uint64_t horizons, valid, above, fired;
};

struct rel_drift;

/* New monitor for θ (borrowed; must outlive it) with options o (copied, checked).
 * Returns CORE_OK, CORE_EINVAL (options; fewer than two observed nodes; θ's L, K, τ, λ out
 * of range; errbuf says which), CORE_ETOOBIG (horizon × nodes over REL_DRIFT_MAX_CELLS). */
CORE_MUST_CHECK core_err rel_drift_new(const struct cal_theta *theta,
                                       const struct rel_drift_opts *o, struct rel_drift **out,
                                       char *errbuf, size_t errbuf_size);

void rel_drift_free(struct rel_drift *d); /* NULL-safe */

/* Forget the current horizon, the counters, the baseline and the fired state (re-arm).
 * theta: the θ now in use (NULL: keep the current one). On error the monitor is unchanged.
 * Returns as rel_drift_new. */
CORE_MUST_CHECK core_err rel_drift_reset(struct rel_drift *d, const struct cal_theta *theta,
                                         char *errbuf, size_t errbuf_size);

/* Take one released window: device id, window_start (epoch ms), the released values of θ's
 * d coordinates (value[k], as in the record's "values") and their noise variances
 * (noise_var[k], rel_drift_noise_var of the record's "scale"). Only observed nodes'
 * coordinates are read. When this push closes a horizon with enough rows (see "Horizons on
 * window time"), that horizon is evaluated and out->evaluated is true; else it is false. At
 * most one horizon is evaluated per push (another one due closes on a later push).
 * Returns CORE_OK; CORE_EINVAL (NULL/empty/too long device, a non-finite value or a
 * negative/non-finite noise variance on a read coordinate: nothing stored); CORE_ENUMERIC
 * (the kernel failed: the horizon's windows are dropped, no result). */
CORE_MUST_CHECK core_err rel_drift_push(struct rel_drift *d, const char *device,
                                        int64_t window_start, const double *value,
                                        const double *noise_var, struct rel_drift_result *out);

void rel_drift_stats(const struct rel_drift *d, struct rel_drift_stats *out);

/* The last evaluated summary: *m observed nodes, their θ node indices (*nodes), their
 * estimated reliabilities r (*reliability, m values; NAN: below min_reliability, 1 when the
 * correction is off) and the m x m corrected S (row-major, zero diagonal, NAN on pairs with
 * a node too noisy to correct). NULL before the first horizon with >= 2 rows. Any out
 * pointer may be NULL. Borrowed, valid until the next push/reset. */
const double *rel_drift_summary(const struct rel_drift *d, size_t *m, const uint32_t **nodes,
                                const double **reliability);

#endif /* REL_DRIFT_H */
