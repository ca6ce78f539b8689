/* synth.c - synthetic window data of any width M for the runtime-scaling measurement
 * (gc-dp Figure 7; `gcdp eval --figure7`). Benchmark input, not privacy noise.
 *
 * Model (the kind of factor model `gcdp bench calibrate` uses, bench/bench_calibrate.c, so
 * the two scaling measurements run on data of the same kind): 8 AR(1) factors
 * f_q(t) = 0.9 f_q(t-1) + 0.44 e; node j loads on factor (j mod 8) with a lag drawn in 0..3
 * and a loading in [0.2, 1); x_j(t) = clip(0.5 + (load_j f(t - lag_j) + 0.6 e') / 8, 0, 1).
 * Task label: factor 0 > 0 at t; protected attribute: factor 1 > 0 at t. Splits by time:
 * first 60 % train (the calibration portion), next 20 % validation, last 20 % test.
 * B_k as for Occupancy (window mean over >= 14 samples, G = 1: 3/14). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "core/prng.h"
#include "eval_int.h"

core_err eval_load_synth(size_t m, size_t n, uint64_t seed, struct eval_data *ds, char *eb,
                         size_t ebn)
{
    struct core_prng r;
    double f[8][4] = {{0}};
    size_t *lag, ntr = n * 6 / 10, nva = n * 8 / 10;
    double *load;

    memset(ds, 0, sizeof(*ds));
    if (m < 2 || m > EVAL_MAX_NODES || n < 20) {
        snprintf(eb, ebn, "eval: synthetic data needs 2 <= M <= %d and N >= 20 (M %zu, N %zu)",
                 EVAL_MAX_NODES, m, n);
        return CORE_ECONFIG;
    }
    eval_data_alloc(ds, n, m);
    snprintf(ds->name, sizeof(ds->name), "synth-M%zu", m);
    core_prng_seed(&r, seed);
    lag = core_xmalloc(m * sizeof(size_t));
    load = core_xmalloc(m * sizeof(double));
    for (size_t j = 0; j < m; j++) {
        char nm[32];
        snprintf(nm, sizeof(nm), "f%zu.mean", j);
        ds->names[j] = core_xstrdup(nm);
        lag[j] = (size_t)core_prng_below(&r, 4);
        load[j] = 0.2 + 0.8 * core_prng_uniform(&r);
    }
    ds->n_classes = 2;
    ds->class_names = core_xcalloc(2, sizeof(char *));
    ds->class_names[0] = core_xstrdup("low");
    ds->class_names[1] = core_xstrdup("high");
    ds->positive_f1 = 1;
    snprintf(ds->task_desc, sizeof(ds->task_desc), "synthetic: factor 0 > 0");
    snprintf(ds->attr_desc, sizeof(ds->attr_desc), "synthetic: factor 1 > 0");
    snprintf(ds->unit_desc, sizeof(ds->unit_desc),
             "synthetic window means; B_k = 3/14 (n_min 14, G 1) as for Occupancy");
    ds->stat = REL_STAT_MEAN;
    ds->query.min_samples = 14;
    ds->query.max_samples = 15;
    ds->query.interp_gap = 1;
    for (size_t t = 0; t < n; t++) {
        for (int q = 0; q < 8; q++) { /* f[q][l] = factor q at time t - l */
            memmove(&f[q][1], &f[q][0], 3 * sizeof(double));
            f[q][0] = 0.9 * f[q][1] + 0.44 * core_prng_normal(&r);
        }
        for (size_t j = 0; j < m; j++) {
            double v = 0.5 + (load[j] * f[j % 8][lag[j]] + 0.6 * core_prng_normal(&r)) / 8.0;
            ds->x[t * m + j] = v < 0.0 ? 0.0 : (v > 1.0 ? 1.0 : v);
        }
        ds->y[t] = f[0][0] > 0.0;
        ds->attr[t] = f[1][0] > 0.0;
        ds->split[t] = t < ntr ? EVAL_TRAIN : t < nva ? EVAL_VAL : EVAL_TEST;
        ds->order[t] = (int64_t)t;
    }
    free(lag);
    free(load);
    return CORE_OK;
}
