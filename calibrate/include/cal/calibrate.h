/* cal/calibrate.h - one calibration run: calibration matrix + options -> θ (gc-dp Sec. 4.1-4.4),
 * public (ε_cal = 0) or private (Sec. 4.2, ε_cal = ε_G + ε_τ + ε_μ + ε_ξ).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Private mode reads the protected records once per released statistic and then only the
 * released (noised, projected) values: S̃ (ε_G), τ (exponential mechanism, ε_τ, grid
 * only), μ (ε_μ; classify task; the aggregate task's weights are public so ε_μ may be 0),
 * V_ξ = ξ̂/g_max (ε_ξ). Noise comes only from core/dp_mech.h with the rng passed in.
 * cal_calibrate itself does not touch the privacy ledger: a private run that is published
 * must go through cal_calibrate_charged (cal/ledger.h), which charges ε_cal to the ledger
 * before calling it (that is what `gcdp calibrate --mode private` does).
 *
 * Thread-safety: reentrant; sets the OpenBLAS thread count when opts.threads > 0
 * (a process-wide setting).
 */
#ifndef CAL_CALIBRATE_H
#define CAL_CALIBRATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "cal/matrix.h"
#include "cal/theta.h"
#include "core/config.h"
#include "core/dp_rng.h"
#include "core/err.h"

#define CAL_MAX_TAU_GRID 64

struct cal_opts {
    enum cal_mode mode;
    enum cal_format format;
    char label_column[CAL_MAX_NAME];
    char ts_column[CAL_MAX_NAME]; /* csv: timestamp column ("" = none) */
    size_t max_rows;
    int L;
    double lambda, tau;
    bool tau_from_grid;
    size_t n_tau_grid;
    double tau_grid[CAL_MAX_TAU_GRID];
    int K;
    double alpha, gamma, tau_c, kappa, g_max, mask_value;
    enum cal_task task;
    double train_frac;
    struct cal_eps_cal eps;
    enum cal_sens sens;
    int expansion_nodes; /* |A|: most nodes one expansion set touches, derived from the
                            declared policy graph G0 (release.policy.edges / hops), never a
                            setting of its own; 0 = not derived (private expansion mode
                            refuses) */
    uint64_t version;    /* 0: ms since the epoch */
    int threads;         /* 0: OpenBLAS default */
    /* borrowed JSON (from the configuration; NULL = unset/null) */
    const json_t *norm, *norm_default, *coords, *task_weights;
    char config_version[24];
    char reason[16]; /* "" or a θ reason code (initial, drift, command, periodic) written
                        into θ by cal_calibrate_charged (the calibrate service) */
};

/* Table 5 defaults, public mode, aggregate task, identity coordinates. */
void cal_opts_default(struct cal_opts *o);

/* Read every calibrate.* key. JSON members stay borrowed from cfg (valid while cfg lives).
 * Returns CORE_OK or CORE_ECONFIG (errbuf names the key). */
CORE_MUST_CHECK core_err cal_opts_from_config(const struct core_config *cfg, struct cal_opts *o,
                                              char *errbuf, size_t errbuf_size);

/* Mode / budget consistency of o (Sec. 4.2: which ε_cal parts must be > 0 or 0; the first
 * thing cal_calibrate checks). Returns CORE_OK or CORE_ECONFIG (errbuf names the key). */
CORE_MUST_CHECK core_err cal_opts_check(const struct cal_opts *o, char *errbuf, size_t errbuf_size);

/* Timings (seconds, CLOCK_MONOTONIC) and diagnostics of one run. No protected values. */
struct cal_report {
    double t_alg1;    /* normalization + lagged correlations + S + graph + exposure
                         (excludes setup/copies and the τ grid search, t_tau) */
    double t_lagcorr; /* the (L+1) products and corrections alone */
    double t_xi, t_mu, t_tau, t_noise, t_total;
    double f1_full; /* classify: unmasked validation macro-F1 (public mode only; -1 otherwise) */
    size_t n_edges;
    size_t tau_index;                     /* index into the grid when selected from it */
    double tau_utility[CAL_MAX_TAU_GRID]; /* public grid selection only */
};

/* Run a calibration.
 *   mx    borrowed calibration matrix (raw values; labels needed for classify).
 *   rng   noise source for private mode (core_rng_os() in production); may be NULL in
 *         public mode.
 *   out   on CORE_OK a new θ (validated); caller frees with cal_theta_free().
 *   rep   optional.
 * Returns CORE_OK, CORE_ECONFIG (inconsistent options: message names the key), CORE_EINVAL
 * (data/dimension mismatch, e.g. a coordinate naming an unknown node), CORE_ERNG,
 * CORE_ENUMERIC, CORE_ETOOBIG. */
CORE_MUST_CHECK core_err cal_calibrate(const struct cal_matrix *mx, const struct cal_opts *o,
                                       const struct core_rng *rng, struct cal_theta **out,
                                       struct cal_report *rep, char *errbuf, size_t errbuf_size);

/* Private-mode Δ₁S for m nodes: universal P = m(m-1)/2, or with |A| = a nodes touched,
 * a(m-1) - a(a-1)/2 (DESIGN §5), capped at P. */
double cal_delta_s(size_t m, enum cal_sens sens, size_t a);

#endif /* CAL_CALIBRATE_H */
