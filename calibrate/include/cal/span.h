/* cal/span.h - the declared span of a private recalibration (issue 12; docs/calibrate.md,
 * "The private calibrate service"): protected gcdp.window/2 records read from topics.windows
 * -> the calibration matrix θ is built from.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Span rule. newest = the newest window end read (release's ledger watermark is the same
 * quantity), then
 *   t1 = newest - lateness_ms - widen_ms - slot_ms,   t0 = t1 - span_ms,
 * (lateness = release.service.ledger_lateness_ms, widen = cal_ledger_widen_ms) so the slot of
 * every unit a span window charges ends at or before newest - lateness: units release has
 * closed (core_dp_ledger_advance evicts them). A window belongs to the span when
 * t0 <= window_start and window_end <= t1 and it is not excluded, and also window_end <=
 * newest_D - lateness - widen - slot_ms with newest_D its own device's newest window end
 * (a device lagging behind the others contributes only windows its own later windows cannot
 * overlap: ingest emits a device's windows in start order, so every window of D read later
 * starts after newest_D - window length; with lateness >= window length + widen + slot_ms,
 * which the service checks, no unit of a used window can be charged by a later window).
 *
 * Matrix. Rows = the span's windows sorted by (device, window_start); one row per window,
 * timestamp = window_start. Nodes = the node keys of the first row ("<channel>.<stat>",
 * sorted); a node is named by its channel when the keys hold one statistic of that channel
 * (the names a public Occupancy θ uses, which release binds to "<channel>.<stat>"), else by
 * its key. A window missing a node or holding a non-finite value is skipped (counted). The
 * values are ingest's normalized [0, 1] values (prov.norm clip_minmax), so θ's bounds are
 * [0, 1] (calibrate.norm_default). Rows of several devices are concatenated (the lag
 * correlations pool devices, as the drift monitor does).
 *
 * Units. Every listed device is charged for every row's slots (cal_ledger_units with
 * row_len_ms = the longest window of the span): a row covers [start - widen, start +
 * row_len - 1 + widen], which holds [start - h p, end - 1 + h p], the units release charged
 * for that window (over-counting, never under-counting).
 *
 * No value of a window is logged or put in an error message (counts and times only).
 * Thread-safety: plain values; one thread per set.
 */
#ifndef CAL_SPAN_H
#define CAL_SPAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "cal/ledger.h"
#include "cal/matrix.h"
#include "core/err.h"

#define CAL_SPAN_MAX_PARTITIONS 1024
#define CAL_SPAN_MAX_WINDOWS    (1u << 22) /* windows one read may keep */

struct cal_span_win {
    char device[CAL_LEDGER_MAX_DEVICE + 1];
    int64_t start, end;
    int32_t partition;
    int64_t offset;
    json_t *nodes; /* owned: the record's "nodes" object */
};

/* The windows read so far that may still fall in the span. */
struct cal_span_set {
    struct cal_span_win *w;
    size_t n, cap;
    int64_t newest_end; /* newest window end read (any window, excluded ones too); 0 none */
    int64_t gap_ms;     /* lateness + widen + slot_ms (the span rule) */
    int64_t keep_ms;    /* windows ending at or before newest_end - keep_ms are dropped */
    json_t *dev_newest; /* owned: device -> its newest window end read */
    int64_t high[CAL_SPAN_MAX_PARTITIONS]; /* per partition: the high watermark read to
                                              (cal_priv_read_windows); 0 unknown */
    uint64_t read, malformed, dropped;
};

/* gap_ms = lateness + widen + slot_ms, span_ms = the declared span: windows ending at or
 * before the running newest end - gap - span are dropped as read (they could never be in
 * the final span: the final newest end is only larger). */
void cal_span_set_init(struct cal_span_set *s, int64_t gap_ms, int64_t span_ms);
void cal_span_set_cleanup(struct cal_span_set *s); /* NULL-safe */

/* Add one record read at (partition, offset), gcdp.window/2 JSON or gcdp.window/3 binary
 * (core/window_bin.h; told apart by the first byte). A record that is not a window object
 * with device, window_start < window_end and a nodes object is counted in s->malformed and
 * skipped (CORE_OK). Returns CORE_OK, CORE_EINVAL (partition outside
 * [0, CAL_SPAN_MAX_PARTITIONS)), CORE_ETOOBIG (more than CAL_SPAN_MAX_WINDOWS kept). */
CORE_MUST_CHECK core_err cal_span_add(struct cal_span_set *s, const void *payload, size_t len,
                                      int32_t partition, int64_t offset);

/* The span's bounds (rule above). Returns false when newest_end is 0 (no window) or a bound
 * would overflow. */
bool cal_span_bounds(int64_t newest_end, int64_t lateness_ms, int64_t widen_ms, int64_t slot_ms,
                     int64_t span_ms, int64_t *t0, int64_t *t1);

struct cal_span_result {
    struct cal_matrix *mx; /* owned; rows with timestamps */
    char **devices;        /* owned, n_devices sorted device ids */
    size_t n_devices;
    int64_t row_len_ms;                    /* the longest window of the span */
    int64_t need[CAL_SPAN_MAX_PARTITIONS]; /* per partition holding a span window: the
                                              high watermark read to (at least the offset
                                              after its last span window) release must
                                              have committed; -1: no span window */
    size_t n_parts;                        /* 1 + the highest partition with a span window */
    size_t skipped;                        /* span windows skipped (a node missing or non-finite) */
};

/* Select the span [t0, t1] from s and build the matrix (rules above).
 *   out  filled on CORE_OK; release with cal_span_result_cleanup.
 * Returns CORE_OK, CORE_ENOTFOUND (fewer than 2 usable windows in the span: errbuf says how
 * many), CORE_ETOOBIG (more devices than CAL_LEDGER_MAX_DEVICES). */
CORE_MUST_CHECK core_err cal_span_select(const struct cal_span_set *s, int64_t t0, int64_t t1,
                                         struct cal_span_result *out, char *errbuf,
                                         size_t errbuf_size);
void cal_span_result_cleanup(struct cal_span_result *r); /* NULL-safe */

#endif /* CAL_SPAN_H */
