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
core_err eval_load_smoke(uint64_t seed, struct eval_data *ds, char *eb, size_t ebn);

#endif
