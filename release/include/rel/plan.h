/* rel/plan.h - the release plan: θ + fixed configuration -> per-coordinate certified bounds,
 * scales, budgets and noise parameters (paper Algorithms 2 and 3, then the Algorithm 4
 * step 1 checks), computed once per θ version before any window is seen.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Everything in a plan is a function of public inputs only (θ, which is public or was
 * released under ε_cal, and the configuration); no protected value ever enters it, so it
 * may be logged, published with each release (the scales b_k) and audited.
 *
 * Thread-safety: a plan is immutable after rel_plan_new returns; share it read-only.
 */
#ifndef REL_PLAN_H
#define REL_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "cal/theta.h"
#include "core/config.h"
#include "core/dp_acct.h"
#include "core/dp_ledger.h"
#include "core/dp_mech.h"
#include "core/err.h"
#include "rel/alloc.h"
#include "rel/bounds.h"
#include "rel/mech.h"

#define REL_MAX_POLICY_EDGES 65536u
#define REL_MAX_KEY          48u /* bytes of a window node name "<channel>.<stat>" (+ NUL) */
#define REL_NORM_CLIP_MINMAX "clip_minmax" /* the one normalization release certifies */

/* Provenance of one θ node as a window record states it (gcdp.window/2 "prov"). */
struct rel_node_prov {
    char key[REL_MAX_KEY];   /* window node the θ node reads: "<channel>.<stat>" */
    char chan[REL_MAX_KEY];  /* its channel (the G0 vertex) */
    enum rel_stat stat;      /* its statistic */
    double clip_lo, clip_hi; /* public clip interval normalized onto [0, 1] */
};

/* What a plan is built for: per θ node its provenance, plus the window-level interpolation
 * gap G and sampling period. Built from a record (from_record) or, for callers without
 * records (tests, benchmarks, `--plan` without input), from θ node names that carry their
 * statistic and rel_opts' query.interp_gap / period_ms. Public: ingest configuration only. */
struct rel_profile {
    size_t n_nodes;             /* θ n_nodes */
    struct rel_node_prov *node; /* owned, n_nodes (unused θ nodes: zeroed) */
    uint32_t interp_gap;        /* G */
    int64_t period_ms;
    bool from_record;
};

void rel_profile_init(struct rel_profile *pr, size_t n_nodes); /* zeroed, allocated */

/* Which θ nodes some coordinate reads: new array of θ n_nodes flags (1 = read); free(). */
uint8_t *rel_theta_used_nodes(const struct cal_theta *t);
void rel_profile_cleanup(struct rel_profile *pr); /* NULL-safe fields */
void rel_profile_copy(struct rel_profile *dst, const struct rel_profile *src);

/* Split "<channel>.<stat>" (a known statistic after the last dot, channel non-empty and
 * shorter than chan_size). false when the name carries no statistic. */
bool rel_name_split(const char *name, char *chan, size_t chan_size, enum rel_stat *stat);
#define REL_MAX_UNITS_PER_WINDOW 1024u /* ledger units one window may charge */

/* Options of a release, normally from the release.* configuration keys. */
struct rel_opts {
    const struct rel_mech *mech;       /* borrowed (static table) */
    double eps_rel;                    /* release budget per window */
    double delta;                      /* gauss only: δ of the (ε_rel, δ) guarantee */
    struct rel_alloc_params alloc;     /* β_r, β_g, β_u, η, ε_min (0 = Table 5 default) */
    struct rel_query_params query;     /* n_min, n_max; G only without a profile */
    const struct rel_profile *profile; /* borrowed, optional: the windows' provenance (the
                                          plan copies it); NULL: θ node names must carry
                                          their statistic, G = query.interp_gap and
                                          period_ms as given */
    const json_t *policy_edges;        /* borrowed: [[chanA, chanB], ...] names of G0 edges */
    uint32_t policy_hops;              /* G0 neighbourhood radius */
    uint32_t policy_time_radius;       /* h, in sampling periods */
    uint32_t policy_per_slot;          /* k: real readings of a channel that may share a slot */
    int64_t period_ms;                 /* sampling period without a profile (time radius -> ms) */
    int64_t slot_ms;                   /* ledger unit slot length (privacy unit time grain) */
    struct core_dp_cost cap;           /* lifetime cap per unit */
};

/* Read every release.* key of cfg into o (borrowing cfg's JSON; cfg must outlive o). Nothing
 * about how windows were made is read from configuration: that comes from each record's
 * provenance (o->profile), never from release's copy of ingest's settings (DESIGN §7.7).
 * Returns CORE_OK or CORE_ECONFIG with errbuf naming the key and the reason. */
CORE_MUST_CHECK core_err rel_opts_from_config(const struct core_config *cfg, struct rel_opts *o,
                                              char *errbuf, size_t errbuf_size);

/* Per-coordinate plan (arrays of d, owned by the plan). */
struct rel_plan {
    const struct cal_theta *theta; /* borrowed; must outlive the plan */
    struct rel_opts opts;
    size_t d;
    size_t n_noisy;             /* d' = coordinates with s_k > 0 */
    struct rel_profile prof;    /* what the plan was built for (owned copy) */
    size_t n_chan;              /* channels of G0 (from the profile) */
    char **chan_names;          /* n_chan */
    uint32_t *counts;           /* n_chan x n_chan Γ(u) occurrence counts (Algorithm 2) */
    uint32_t *node_chan;        /* θ node -> channel */
    enum rel_stat *node_stat;   /* θ node -> statistic (from the profile) */
    uint8_t *node_used;         /* θ node -> 1 if some coordinate reads it */
    double *lo, *hi;            /* Π_k interval */
    double *B, *s, *eps;        /* Algorithm 2 / 3 results */
    double *scale;              /* published per-coordinate noise scale: Laplace b_k =
                                   s_k/ε_k; Gaussian σ_k = s_k σ; 0 when deterministic */
    int *analytic;              /* 1: B_k analytic, 0: clipped-range fallback */
    struct core_dp_lap *lap;    /* Laplace params per coordinate (noisy ones) */
    struct core_dp_gauss gauss; /* gauss: params on the s-normalized vector */
    double bound;               /* public clamp: max_k max(|lo_k|, |hi_k|) */
    double eps_min;             /* floor used by Algorithm 3 (0 for lap/gauss) */
    struct core_dp_cost cost;   /* what one window release charges to each unit */
    char params_json[512];      /* public parameters stored in each ledger row */
};

/* Build the plan: channels of G0, Γ(u) counts, Algorithm 2 (B_k, s_k), Algorithm 3 (ε_k)
 * or the mechanism's rule, noise parameters, then the Algorithm 4 step 1 checks
 * (rel_release_check with the recomputed certificates). Any failure refuses the plan.
 *   theta   borrowed; validated by the caller (cal_theta_from_json does).
 *   o       copied (its policy_edges pointer is borrowed).
 *   out     new plan; caller frees with rel_plan_free().
 *   errbuf  the reason, naming the coordinate / key (public parameters only).
 * Returns CORE_OK, CORE_ECONFIG (bad policy / option / θ not suited to the ablation),
 * CORE_EINVAL (θ inputs out of range, Algorithm 3 refusal), CORE_EINVARIANT (Algorithm 4
 * refusal), CORE_ENUMERIC. */
CORE_MUST_CHECK core_err rel_plan_new(const struct cal_theta *theta, const struct rel_opts *o,
                                      struct rel_plan **out, char *errbuf, size_t errbuf_size);
void rel_plan_free(struct rel_plan *p); /* NULL-safe */

/* The plan as `gcdp release --plan` prints it: theta_version, provenance (interp_gap,
 * period_ms), mechanism, eps_rel, eps_cal, eps_min, d, d_noisy, charge_per_unit {eps, delta}
 * and per coordinate {name, reads, lo, hi, B, certificate ("analytic" | "clipped_range"),
 * xi_hat, s, eps, scale}. Public parameters only (θ is public). p borrowed.
 * Returns a new reference (caller json_decref()s). */
json_t *rel_plan_to_json(const struct rel_plan *p);

/* Is window provenance wp (from a record) what plan p was built for? Statistics, window node
 * names, clip intervals and period must match; the record's G may not exceed the plan's.
 * false with errbuf naming the node and the field (public configuration only). */
bool rel_plan_covers(const struct rel_plan *p, const struct rel_profile *wp, char *errbuf,
                     size_t errbuf_size);

/* Copy the plan's B, s, ε, ε_rel and mechanism into θ's release part (for `--theta-out`). */
void rel_plan_fill_theta(const struct rel_plan *p, struct cal_theta *theta);

/* The ledger unit scheme the plan charges under: release.ledger.slot_ms, the policy's time
 * radius and the windows' sampling period (from their provenance). */
void rel_plan_scheme(const struct rel_plan *p, struct core_dp_scheme *out);

/* Ledger units charged by a window [start, end) of device: "<device>|<slot>" for every slot
 * index floor(t / slot_ms) with t in [start - h*period, end + h*period) (the window widened
 * by the policy's time radius: every protected occurrence whose expansion set meets the
 * window lies in one of these slots). Units are written into buf (size buf_size) as
 * consecutive NUL-terminated strings and pointed to by units[0..*n).
 * Returns CORE_OK, CORE_ETOOBIG (more than max_units or buf too small), CORE_EINVAL. */
CORE_MUST_CHECK core_err rel_plan_units(const struct rel_plan *p, const char *device, int64_t start,
                                        int64_t end, char *buf, size_t buf_size, const char **units,
                                        size_t max_units, size_t *n);

#endif /* REL_PLAN_H */
