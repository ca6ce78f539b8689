/* eval_int.h - internals shared by the eval service files. */
#ifndef EVAL_INT_H
#define EVAL_INT_H

#include <stdint.h>

#include "eval/eval.h"

#define EVAL_CSV_HEADER                                                                            \
    "dataset,phase,mechanism,eps,tau,reading,draw,seed,split,task_f1,attack_auc,"                  \
    "attack_auc_raw,attack_f1,mae"

double eval_now(void);
uint64_t eval_draw_seed(uint64_t base, int phase, int mech, size_t eps_i, size_t tau_i, int draw);
int eval_mkdirs(const char *dir);
/* tables.md, figures (gnuplot when present) from dir/draws.csv, runtime.csv. */
core_err eval_write_report(const char *dir, const struct eval_opts *o, char *eb, size_t ebn);
/* A small synthetic window dataset (the smoke test's): 4 nodes, 2 classes. */
core_err eval_load_csv(const char *cfg_path, struct eval_data *ds, char *eb, size_t ebn);
core_err eval_load_sim(struct eval_data *ds, char *eb, size_t ebn);
struct ing_params;

/* Ingest parameters of an offline replay through the real engine: tumbling windows of
 * window_ms of the window mean, one-minute sampling, no idle close, message keys ignored,
 * excluded windows not emitted, the given gap fill and coverage (the caller sets channels). */
void eval_ingest_params_offline(struct ing_params *p, int64_t window_ms, int max_interp_gap,
                                double min_coverage);

core_err eval_load_smoke(uint64_t seed, struct eval_data *ds, char *eb, size_t ebn);

/* ---- runtime of one calibration-and-release pass (Table 12, Figure 7; run.c) */
#define EVAL_N_PASS 5 /* Lap-DP, Ada-DP, Risk-DP, GC-DP, GC-DP-Cache */
/* "Lap-DP", ..., "GC-DP-Cache" for v in [0, EVAL_N_PASS); "baseline" (idle child) for -1. */
const char *eval_pass_label(int v);
struct eval_pass_run {
    int variant; /* -1 idle child, else index of eval_pass_label */
    int rep;
    double seconds, peak_rss_kb;
};
/* reps x (EVAL_N_PASS + 1) forked children on ds at ε = 1 (runs: that many slots; failed
 * children are left out). */
core_err eval_runtime_passes(const struct eval_opts *o, const struct eval_data *ds, double tau,
                             int reps, struct eval_pass_run *runs, size_t *n_runs, char *eb,
                             size_t ebn);
/* Median, fastest and slowest wall time and median peak RSS of n runs (report.c; NaN when n = 0).
 */
struct eval_rt_stats {
    size_t n;
    double median_s, fastest_s, slowest_s, median_kb;
};
void eval_rt_stats(size_t n, const double *seconds, const double *kb, struct eval_rt_stats *out);

#endif
