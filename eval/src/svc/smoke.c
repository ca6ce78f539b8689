/* smoke.c - a small synthetic window dataset for the harness smoke test (not a benchmark):
 * 4 nodes in [0,1], two correlated pairs; label = node 0 + node 1 above their median sum;
 * protected attribute = node 2 above 0.5; splits by position (60/20/20 %, contiguous). */
#include <stdio.h>
#include <string.h>

#include "core/mem.h"
#include "core/prng.h"
#include "eval_int.h"

/* eb is unused (nothing here can fail) but kept: every loader has the same signature. */
// NOLINTNEXTLINE(readability-non-const-parameter)
core_err eval_load_smoke(uint64_t seed, struct eval_data *ds, char *eb, size_t ebn)
{
    static const char *names[4] = {"a", "b", "c", "d"};
    struct core_prng r;
    size_t n = 300;
    (void)eb;
    (void)ebn;
    memset(ds, 0, sizeof(*ds));
    eval_data_alloc(ds, n, 4);
    snprintf(ds->name, sizeof(ds->name), "smoke");
    core_prng_seed(&r, seed);
    for (size_t j = 0; j < 4; j++)
        ds->names[j] = core_xstrdup(names[j]);
    ds->n_classes = 2;
    ds->class_names = core_xcalloc(2, sizeof(char *));
    ds->class_names[0] = core_xstrdup("neg");
    ds->class_names[1] = core_xstrdup("pos");
    ds->positive_f1 = 1;
    snprintf(ds->task_desc, sizeof(ds->task_desc), "synthetic: a + b > 1");
    snprintf(ds->attr_desc, sizeof(ds->attr_desc), "synthetic: c > 0.5");
    ds->query.min_samples = 10;
    ds->query.max_samples = 15;
    ds->query.interp_gap = 1;
    snprintf(ds->unit_desc, sizeof(ds->unit_desc), "synthetic");
    for (size_t t = 0; t < n; t++) {
        double u = core_prng_uniform(&r), v = core_prng_uniform(&r);
        double *x = ds->x + t * 4;
        x[0] = u;
        x[1] = 0.7 * u + 0.3 * core_prng_uniform(&r);
        x[2] = v;
        x[3] = 0.8 * v + 0.2 * core_prng_uniform(&r);
        ds->y[t] = x[0] + x[1] > 1.0;
        ds->attr[t] = x[2] > 0.5;
        ds->split[t] = t < 180 ? EVAL_TRAIN : t < 240 ? EVAL_VAL : EVAL_TEST;
        ds->order[t] = (int64_t)t;
    }
    return CORE_OK;
}
