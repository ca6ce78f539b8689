/* rel/bounds.h - certified sensitivity bounds B_k and release numerators s_k
 * (paper Algorithm 2, Sec. 4.3, Proposition 1; DESIGN §5 release).
 * SPDX-License-Identifier: Apache-2.0
 *
 * The adjacency ~G0 is fixed configuration, never learned from data (DESIGN §7.3):
 *   - the protected atomic unit u = (t, v_i) is one reading occurrence of channel v_i at
 *     one sample time t of one device (component-occurrence privacy, paper Sec. 3.1);
 *   - the expansion set Γ(u) holds, for every channel j within `hops` edges of v_i in the
 *     declared policy graph G0 (v_i itself included), the occurrences of j in the same
 *     reading (h = 0), or in the sampling slots t-h..t+h (h = time radius > 0; at most
 *     `per_slot` real readings of a channel share a slot). Neighbouring datasets agree
 *     outside Γ(u) and may differ arbitrarily inside the clipped domain within it (value
 *     replacement: which samples exist is NOT protected; see docs/release.md).
 * Window values are clipped and normalized to [0,1] by ingest, so every bound below is
 * in normalized units. All bounds hold for every window with at least `min_samples` real
 * samples of the node (windows with fewer are refused), so B_k is a public constant of
 * the configuration and never depends on the protected data.
 *
 * Pure code (no I/O, no allocation). Thread-safety: all functions are reentrant.
 */
#ifndef REL_BOUNDS_H
#define REL_BOUNDS_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

#define REL_MAX_CHANNELS 4096u /* policy graph size cap */
#define REL_MAX_SAMPLES  (1u << 30)

/* Window statistic of one node; the node key's suffix ".mean", ".sum", ".count", ".min",
 * ".max", ".std" selects it; a key without a known suffix is a mean (ingest's default). */
enum rel_stat {
    REL_STAT_MEAN = 0,
    REL_STAT_SUM,
    REL_STAT_COUNT,
    REL_STAT_MIN,
    REL_STAT_MAX,
    REL_STAT_STD,
    REL_STAT_N_
};

/* Public query parameters, fixed in configuration. */
struct rel_query_params {
    uint32_t min_samples; /* n_min >= 2: windows with fewer real samples of a node refused */
    uint32_t max_samples; /* n_max >= n_min: range of a sum; windows with more refused */
    uint32_t interp_gap;  /* G >= ingest.max_interp_gap: longest run of imputed slots ingest
                             fills; one real reading influences at most itself and G filled
                             slots on each side, i.e. at most 1 + 2G points of the completed
                             series, each with weight <= 1 */
};

/* One term of a coordinate q_k = Σ coef · stat(channel). */
struct rel_term {
    uint32_t chan; /* channel index in the policy graph */
    enum rel_stat stat;
    double coef; /* finite */
};

/* Parse a stat suffix: "mean", "sum", ... Returns CORE_OK or CORE_ENOTFOUND. */
CORE_MUST_CHECK core_err rel_stat_parse(const char *name, enum rel_stat *out);
const char *rel_stat_name(enum rel_stat s); /* never NULL */

/* Check qp's ranges. CORE_OK or CORE_EINVAL. */
CORE_MUST_CHECK core_err rel_query_params_check(const struct rel_query_params *qp);

/* Expansion-set occurrence counts (Sec. 3.1 Γ_G0(u)).
 *   n_chan        number of channels in G0 (1..REL_MAX_CHANNELS).
 *   edges         borrowed, 2*n_edges channel indices (undirected pairs; self-loops allowed
 *                 and ignored).
 *   hops          neighbourhood radius in G0 (0: the channel only).
 *   time_radius   h: Γ(u) spans the sampling slots t-h..t+h (0: u's own reading only).
 *   per_slot      k >= 1: real readings of one channel that may share a slot (h > 0 only).
 *   counts        out, caller-allocated n_chan*n_chan: counts[i*n_chan + j] = number of
 *                 occurrences of channel j inside Γ(u) for an occurrence u of channel i
 *                 (1 when h = 0, (2h+1)k when h > 0, or 0).
 *   work          caller-allocated, 2*n_chan uint32_t.
 * Returns CORE_OK, CORE_EINVAL (index out of range, n_chan 0 or over the cap, overflow). */
CORE_MUST_CHECK core_err rel_policy_counts(size_t n_chan, const uint32_t *edges, size_t n_edges,
                                           uint32_t hops, uint32_t time_radius, uint32_t per_slot,
                                           uint32_t *counts, uint32_t *work);

/* Certified global sensitivity of one node statistic when c of its real samples may change,
 * in normalized units, with P = c(1+2G) changed points of the completed series (DESIGN §5:
 * a mean over >= n_min points moves by <= P/n_min, capped at the clipped range; std by
 * <= sqrt(P/(n_min-1)); sum by P; count (ingest's coverage ratio) by 0 under value
 * replacement; min/max fall back to the clipped range 1).
 * c = 0 gives 0. Returns the bound (finite, >= 0). qp must pass rel_query_params_check. */
double rel_stat_sensitivity(enum rel_stat s, uint64_t c, const struct rel_query_params *qp);

/* What one window's record says about one node (gcdp.window/2 provenance; DESIGN §7.7). Which
 * samples exist is public under the adjacency (value replacement), so these counts are the
 * same in neighbouring datasets and may shape the window's own certificate. */
struct rel_node_obs {
    uint32_t n_real;   /* real samples of the node's channel in the window (n_node) */
    uint32_t n_points; /* points of the completed series = n_real + imputed points */
    uint32_t max_run;  /* longest run of imputed slots (<= the record's interp_gap) */
};

/* The window's own certificate for one node statistic when c of its real samples may change:
 * each changed sample moves itself and the imputed points of the gaps on either side of it,
 * P = min(c, n_real) (1 + 2 max_run) points of the completed series, each by <= 1 after
 * clip + normalization. mean: min(P / n_points, 1); std (population, as ingest computes it):
 * min(sqrt(P / n_points), 1/2) (std is 1/sqrt(n)-times a 1-Lipschitz function of the vector
 * in l2); sum: min(P, n_max); count: 0; min/max: 1. c = 0 gives 0.
 * For a window with n_real >= n_min and max_run <= G this never exceeds
 * rel_stat_sensitivity (the plan's bound), which is what lets the plan fix the noise scale
 * before any window is seen. o must have n_points >= n_real >= 1. */
double rel_stat_sensitivity_obs(enum rel_stat s, uint64_t c, const struct rel_node_obs *o,
                                const struct rel_query_params *qp);

/* Algorithm 2 step 2 with the window's certificate: B = max_i Σ_t |coef_t|
 * Δ_obs(stat_t, counts[i][chan_t], obs[t]) (no range cap beyond each term's own), rounded up.
 *   obs  one per term. Returns CORE_OK or CORE_EINVAL (as rel_coord_bound; n_points 0). */
CORE_MUST_CHECK core_err rel_coord_bound_obs(size_t n_chan, const uint32_t *counts, size_t n_terms,
                                             const struct rel_term *terms,
                                             const struct rel_node_obs *obs,
                                             const struct rel_query_params *qp, double *B);

/* Public clipped interval of one statistic: mean/min/max/count [0,1] (count is ingest's
 * coverage ratio), std [0, sqrt(n/(4(n-1)))] at n = n_min (the largest sample std of values
 * in [0,1]), sum [0, n_max]. */
void rel_stat_range(enum rel_stat s, const struct rel_query_params *qp, double *lo, double *hi);

/* Algorithm 2 step 2 for one coordinate: projection interval Π_k = [lo, hi] (natural range
 * of the linear combination) and certified bound
 *   B_k = min( max_i Σ_t |coef_t| Δ(stat_t, counts[i][chan_t]),  hi - lo )
 * (triangle inequality over terms; the clipped-range fallback U_k - L_k when tighter).
 *   analytic  out, optional: 1 when the analytic bound was used, 0 for the range fallback.
 * Returns CORE_OK, CORE_EINVAL (no terms, bad channel, non-finite coef, overflow). */
CORE_MUST_CHECK core_err rel_coord_bound(size_t n_chan, const uint32_t *counts, size_t n_terms,
                                         const struct rel_term *terms,
                                         const struct rel_query_params *qp, double *lo, double *hi,
                                         double *B, int *analytic);

/* Algorithm 2 step 5: s_k = max{B_k, ξ̂_k} (xi NULL: s_k = B_k, mechanisms that omit the
 * empirical influence). Proposition 1: s_k >= B_k for every k.
 * Returns CORE_OK, CORE_EINVAL (B_k or ξ̂_k negative or not finite; NaN fails closed). */
CORE_MUST_CHECK core_err rel_scale_compute(size_t d, const double *B, const double *xi, double *s);

#endif /* REL_BOUNDS_H */
