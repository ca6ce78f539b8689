/* eval/eval.h - `gcdp eval`: the GC-DP paper's evaluation protocol (gc-dp Sec. 5,
 * Tables 6-12, Figures 2-7) on window datasets, reusing the stage libraries unchanged
 * (calibrate: Algorithm 1 and θ; release: Algorithm 2-4 alg functions; ingest: the engine's
 * preprocessing).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Pure parts (src/alg): the fixed classifier/attacker (multinomial logistic regression),
 * metrics (AUC, oriented AUC, F1), the split discipline, the per-mechanism release plan and
 * one privatized release of a window matrix (noise from an injected core_rng).
 * Service parts (src/svc): dataset readers (UCI Occupancy and the Intel-Lab-like simulator
 * through the ingest engine, WISDM 2019 ARFF windows, a CSV described by JSON), the harness
 * loop, per-draw CSV, Markdown tables and gnuplot figures. docs/evaluation.md.
 *
 * Thread-safety: every function is reentrant; the harness is single-threaded and sets the
 * OpenBLAS thread count to 1 (a process-wide setting).
 */
#ifndef EVAL_EVAL_H
#define EVAL_EVAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cal/influence.h"
#include "cal/theta.h"
#include "core/dp_mech.h"
#include "core/dp_rng.h"
#include "core/err.h"
#include "rel/bounds.h"
#include "rel/mech.h"

/* ------------------------------------------------------------------ dataset */

enum eval_split { EVAL_TRAIN = 0, EVAL_VAL = 1, EVAL_TEST = 2 };

#define EVAL_MAX_CLASSES CAL_MAX_CLASSES
#define EVAL_MAX_NODES   1024

/* n windows x d nodes, node values in [0,1] (clipped, normalized window features). */
struct eval_data {
    char name[64]; /* "occupancy", "wisdm", ... */
    size_t n, d;
    char **names;   /* d node names */
    double *x;      /* n x d row-major, in [0,1] */
    int *y;         /* n task labels in [0, n_classes) */
    int *attr;      /* n protected-attribute labels in {0,1} */
    int *split;     /* n values of enum eval_split */
    int64_t *order; /* n time keys (window start ms, or subject * 1e6 + file row) */
    size_t n_classes;
    char **class_names; /* n_classes */
    int positive_f1;    /* 1: positive-class (class 1) F1; 0: macro-F1 */
    char task_desc[256];
    char attr_desc[256];
    struct rel_query_params query; /* public query parameters for B_k (Algorithm 2) */
    enum rel_stat stat;  /* the coordinate's statistic for B_k: MEAN (window mean of samples)
                            or MAX (a supplied feature: clipped-range bound) */
    char unit_desc[256]; /* the protected unit and B_k derivation, for the report */
};

void eval_data_free(struct eval_data *ds); /* frees members, not ds; NULL-safe */

/* Allocate members for n windows of d nodes (names NULL, zeros). */
void eval_data_alloc(struct eval_data *ds, size_t n, size_t d);

/* Row indices of one split (increasing), count in *k. Returns a new array (caller frees). */
size_t *eval_split_rows(const struct eval_data *ds, enum eval_split s, size_t *k);

/* Split discipline check: every row has a split in {0,1,2} and no "group" key (a subject,
 * a source file, a window id) occurs in two splits. group may be NULL (range check only).
 * Returns CORE_OK or CORE_EINVARIANT (*bad = first offending row). */
CORE_MUST_CHECK core_err eval_split_check(const struct eval_data *ds, const int64_t *group,
                                          size_t *bad);

/* ------------------------------------------------------------------ metrics */

/* ROC AUC of scores for binary labels (Mann-Whitney U, ties counted 1/2). Both classes
 * must be present, else returns NaN. */
double eval_auc(size_t n, const double *score, const int *label);
/* Oriented AUC max{AUC, 1 - AUC} (gc-dp Sec. 5.3). NaN stays NaN. */
double eval_auc_oriented(double auc);
/* F1 of class `positive` (0 when it never occurs in truth nor prediction). */
double eval_f1_class(size_t n, const int *truth, const int *pred, int positive);

/* ------------------------------------------------------------------ classifier */

/* The fixed lightweight classifier and attacker (Sec. 5.1): multinomial logistic
 * regression on features standardized with the training rows' mean/sd, zero init,
 * full-batch gradient descent with cal_lr_default's step, iterations and L2 (the same
 * hyperparameters as the calibrate stage's μ classifier), balanced class weights
 * n / (C n_c). Identical for every mechanism. */
struct eval_lr {
    size_t d, nc;
    double *w;         /* d x nc */
    double *b;         /* nc */
    double *mean, *sd; /* d */
};

/* Fit on n rows x (d features, leading dimension ld). y in [0,nc). nc >= 2.
 * Returns CORE_OK, CORE_EINVAL. The model owns its arrays (eval_lr_free). */
CORE_MUST_CHECK core_err eval_lr_fit(size_t n, size_t d, const double *x, size_t ld, const int *y,
                                     size_t nc, const struct cal_lr_params *p, struct eval_lr *m);
/* Class probabilities, n x nc. */
void eval_lr_proba(const struct eval_lr *m, size_t n, const double *x, size_t ld, double *proba);
/* argmax class per row (ties: lower class). */
void eval_lr_predict(const struct eval_lr *m, size_t n, const double *x, size_t ld, int *pred);
void eval_lr_free(struct eval_lr *m);

/* ------------------------------------------------------------------ mechanisms */

enum eval_mech {
    EVAL_M_NONPRIVATE = 0,
    EVAL_M_LAP,
    EVAL_M_GAUSS,
    EVAL_M_ADA,
    EVAL_M_RISK,
    EVAL_M_GCDP,
    EVAL_M_NOLAG,     /* Table 11 w/o Lag (θ with L = 0) */
    EVAL_M_NOCOMP,    /* Table 11 w/o Comp. (θ with τ_c = 1) */
    EVAL_M_NOUTILITY, /* Table 11 w/o Utility (β_u = 0) */
    EVAL_M_NORISK,    /* Table 11 w/o Risk (β_r = 0) */
    EVAL_M_N_
};
const char *eval_mech_name(enum eval_mech m); /* "GC-DP", ... (paper spelling) */
const char *eval_mech_key(enum eval_mech m);  /* "gcdp", ... (CSV / CLI) */
/* The release stage's mechanism for m (NULL for NonPrivate). */
const struct rel_mech *eval_mech_rel(enum eval_mech m);

/* How r̄ enters Algorithm 3 (the "explain, not hide" point 2; docs/evaluation.md):
 * MINMAX  = θ's exposure, min-max normalized as Sec. 4.1 states (the default);
 * MAXNORM = Algorithm 1 step 8 read as "normalize into [0,1]" by r_i / max_j r_j (r
 *           recomputed from θ's edges with Algorithm 1 steps 5-7), so no node gets 0. */
enum eval_expo { EVAL_EXPO_MINMAX = 0, EVAL_EXPO_MAXNORM = 1 };

/* How ξ̂ is read (the "explain, not hide" point 1; src/alg/xi.c): LITERAL = θ's ξ̂ from
 * calibrate (δ_jk of Sec. 4.3 as displayed); NEIGHBOUR = δ_jk for a neighbour j ∉ a(k) read
 * as j's own influence δ_jj, so γ, τ_c and compression can act with one coordinate per
 * node. */
enum eval_xi { EVAL_XI_LITERAL = 0, EVAL_XI_NEIGHBOUR = 1 };

/* The readings' names ("minmax" | "maxnorm", "literal" | "neighbour": the CLI's values and
 * run.txt's words; src/svc/names.c). The parsers return CORE_OK or CORE_EINVAL (out kept). */
const char *eval_expo_name(enum eval_expo e);
const char *eval_xi_name(enum eval_xi x);
CORE_MUST_CHECK core_err eval_expo_parse(const char *name, enum eval_expo *out);
CORE_MUST_CHECK core_err eval_xi_parse(const char *name, enum eval_xi *out);

/* ξ̂ under the neighbour reading for θ's coordinates, from the n x M normalized calibration
 * matrix x (the rows θ was calibrated on) and the mask value. xi: d values in [0, g_max].
 * Returns CORE_OK, CORE_EINVAL, CORE_ENUMERIC. */
CORE_MUST_CHECK core_err eval_xi_neighbour(const struct cal_theta *t, size_t n, const double *x,
                                           double mask, double *xi);

/* r̄ of θ under the chosen reading (out: M values in [0,1]). */
void eval_exposure(const struct cal_theta *t, enum eval_expo expo, double *out);

/* One mechanism's public release plan for a θ (Algorithms 2-3 via the release stage's alg
 * functions): per coordinate B_k, s_k, ε_k; Gaussian σ factor. d <= EVAL_MAX_NODES. */
struct eval_plan {
    enum eval_mech mech;
    size_t d;
    double eps_rel, delta;
    double B[EVAL_MAX_NODES], s[EVAL_MAX_NODES], eps[EVAL_MAX_NODES];
    struct core_dp_gauss gauss; /* Gau-DP: analytic Gaussian on y_k / s_k (l2 cert. sqrt(d)) */
    double bound;               /* clamp for the sampler (values are in [0,1]) */
};

/* Build the plan. theta may be NULL for NonPrivate / Lap / Gauss only. Identity coordinates
 * (a(k) = {v_k}, d = M) are assumed: node k of the data is coordinate k; stat and qp give
 * the certified bound B_k (rel_coord_bound with G0 = the component occurrence itself).
 * Returns CORE_OK, CORE_EINVAL, CORE_EINVARIANT (Algorithm 4 step 1 refused). */
CORE_MUST_CHECK core_err eval_plan_make(enum eval_mech m, const struct cal_theta *theta, size_t d,
                                        enum rel_stat stat, const struct rel_query_params *qp,
                                        double eps_rel, double delta, enum eval_expo expo,
                                        struct eval_plan *p, char *errbuf, size_t errbuf_size);

/* Release every row of x (n x d) in place: y_k + Laplace(s_k/ε_k) through the core
 * sampler (or the analytic-Gaussian discrete Gaussian for Gau-DP); NonPrivate copies.
 * Returns CORE_OK, CORE_ERNG, CORE_EINVAL. */
CORE_MUST_CHECK core_err eval_release_rows(const struct eval_plan *p, const struct core_rng *rng,
                                           size_t n, const double *x, double *out);

/* ------------------------------------------------------------------ one setting */

/* Scores of one privatized release scored by the fixed classifier and attacker. */
struct eval_scores {
    double task_f1;    /* test (or validation) F1, positive-class or macro */
    double attack_auc; /* oriented */
    double attack_auc_raw;
    double attack_f1;
    double mae; /* mean |released - clean| over the scored rows and coordinates (values
                   normalized by their clip range: normalized MAE) */
};

/* Train the classifier on rows tr of xr (released), score rows te; same for the attacker
 * (binary attr). Pure. Returns CORE_OK or CORE_EINVAL. */
CORE_MUST_CHECK core_err eval_score(const struct eval_data *ds, const double *xr, const size_t *tr,
                                    size_t ntr, const size_t *te, size_t nte,
                                    struct eval_scores *out);

/* ------------------------------------------------------------------ harness (svc) */

struct eval_opts {
    const char *dataset;  /* "occupancy" | "wisdm" | "sim" | "csv" | "smoke" */
    const char *data_dir; /* dataset folder (csv: the JSON description) */
    const char *out_dir;  /* results folder */
    size_t n_eps;
    double eps[8];
    int draws;
    int tune_draws; /* draws for τ selection (seeds disjoint from reported ones) */
    uint64_t seed;  /* base seed of the ChaCha20 noise streams */
    double delta;   /* Gau-DP δ */
    size_t n_tau;
    double tau_grid[8];
    bool ablations, runtime, plots, tau_sweep;
    enum eval_expo expo;
    enum eval_xi xi;
    double eps_cal; /* > 0: private calibration (Sec. 4.2), split G/mu/xi equally */
    bool quiet;
    int64_t window_ms;  /* occupancy: window size */
    const char *sensor; /* wisdm: "accel" (default) or "gyro" */
    /* Figure 7 (eval_run_scaling): node counts M, synthetic windows per M, timed rounds */
    size_t n_scale_m;
    size_t scale_m[16];
    size_t scale_windows;
    int scale_reps;
};
void eval_opts_default(struct eval_opts *o);

/* gc-dp Figure 7: runtime of one calibration-and-release pass at ε = 1 versus the number
 * of nodes M, on synthetic windows of each M (eval_load_synth: AR(1) factor model,
 * 60 % of scale_windows calibrate), measured with the Table 12 code (forked children, the
 * five variants Lap-DP, Ada-DP, Risk-DP, GC-DP, GC-DP-Cache and an idle child, scale_reps
 * interleaved rounds) at the calibrate stage's default τ. Writes out_dir/figure7/: runs.csv
 * (every run), figure7.csv and figure7.md (median, fastest, slowest, ratios, memory per M
 * and variant; recomputed from runs.csv), figure7.gp and fig7_runtime_vs_m.png (gnuplot),
 * run.txt. Returns CORE_OK, CORE_ECONFIG (bad sizes), CORE_EIO, or a calibration error. */
CORE_MUST_CHECK core_err eval_run_scaling(const struct eval_opts *o, char *errbuf,
                                          size_t errbuf_size);
/* Rebuild figure7.csv, figure7.md (and figure7.dat) from dir/runs.csv. */
CORE_MUST_CHECK core_err eval_scaling_report(const char *dir, char *errbuf, size_t errbuf_size);
/* Synthetic window data with m nodes and n windows (the Figure 7 input; src/svc/synth.c). */
CORE_MUST_CHECK core_err eval_load_synth(size_t m, size_t n, uint64_t seed, struct eval_data *ds,
                                         char *errbuf, size_t errbuf_size);

/* Run the protocol; writes out_dir/<dataset>/draws.csv, tables.md, figures. */
CORE_MUST_CHECK core_err eval_run(const struct eval_opts *o, char *errbuf, size_t errbuf_size);

/* The same protocol on a dataset already in memory (borrowed; e.g. built by a test).
 * dropped: file names to list in run.txt. */
CORE_MUST_CHECK core_err eval_run_data(const struct eval_opts *o, const struct eval_data *ds,
                                       const char *const *dropped, size_t n_dropped, char *errbuf,
                                       size_t errbuf_size);

/* Recompute the Markdown tables from a per-draw CSV (what eval_run writes).
 * Returns CORE_OK, CORE_EIO, CORE_EPARSE. */
CORE_MUST_CHECK core_err eval_tables_from_csv(const char *csv_path, const char *md_path,
                                              char *errbuf, size_t errbuf_size);

/* Readers. */
CORE_MUST_CHECK core_err eval_load_occupancy(const char *dir, int64_t window_ms,
                                             struct eval_data *ds, char *errbuf,
                                             size_t errbuf_size);
/* WISDM 2019 phone ARFF windows of one sensor ("accel" or "gyro"; the two are not aligned
 * and are never joined). Files whose bytes equal an earlier file's are dropped and named in
 * *dropped (caller frees the array and strings). */
CORE_MUST_CHECK core_err eval_load_wisdm(const char *dir, const char *sensor, struct eval_data *ds,
                                         char ***dropped, size_t *n_dropped, char *errbuf,
                                         size_t errbuf_size);
/* Duplicate detection over a list of files (byte-identical content): dup[i] = index of the
 * first file with the same bytes, or -1. Returns CORE_OK or CORE_EIO. */
CORE_MUST_CHECK core_err eval_find_duplicates(size_t n, const char *const *paths, long *dup,
                                              char *errbuf, size_t errbuf_size);

/* Deterministic ChaCha20 noise source keyed by seed (libsodium); a CSPRNG stream, so draws
 * are reproducible from the seed written next to every per-draw output. */
struct eval_rng;
struct eval_rng *eval_rng_new(uint64_t seed);
const struct core_rng *eval_rng_iface(struct eval_rng *r);
void eval_rng_free(struct eval_rng *r);

#endif /* EVAL_EVAL_H */
