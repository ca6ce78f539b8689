/* split.c - the split discipline (gc-dp Sec. 5.1: fixed partitions, no window crosses a
 * split boundary, calibration/normalization from the training portion only). */
#include <stdlib.h>

#include "core/mem.h"
#include "eval/eval.h"

size_t *eval_split_rows(const struct eval_data *ds, enum eval_split s, size_t *k)
{
    size_t *rows = core_xmalloc((ds->n ? ds->n : 1) * sizeof(*rows)), c = 0;
    for (size_t i = 0; i < ds->n; i++)
        if (ds->split[i] == (int)s)
            rows[c++] = i;
    *k = c;
    return rows;
}

struct gs {
    int64_t g;
    int s;
};

static int cmp_gs(const void *a, const void *b)
{
    const struct gs *x = a, *y = b;
    if (x->g != y->g)
        return (x->g > y->g) - (x->g < y->g);
    return (x->s > y->s) - (x->s < y->s);
}

core_err eval_split_check(const struct eval_data *ds, const int64_t *group, size_t *bad)
{
    struct gs *v;
    core_err rc = CORE_OK;

    for (size_t i = 0; i < ds->n; i++) {
        if (ds->split[i] < EVAL_TRAIN || ds->split[i] > EVAL_TEST) {
            if (bad)
                *bad = i;
            return CORE_EINVARIANT;
        }
    }
    if (!group || ds->n == 0)
        return CORE_OK;
    v = core_xmalloc(ds->n * sizeof(*v));
    for (size_t i = 0; i < ds->n; i++) {
        v[i].g = group[i];
        v[i].s = ds->split[i];
    }
    qsort(v, ds->n, sizeof(*v), cmp_gs);
    for (size_t i = 1; i < ds->n && rc == CORE_OK; i++) {
        if (v[i].g == v[i - 1].g && v[i].s != v[i - 1].s) {
            rc = CORE_EINVARIANT;
            for (size_t r = 0; bad && r < ds->n; r++)
                if (group[r] == v[i].g) {
                    *bad = r;
                    break;
                }
        }
    }
    free(v);
    return rc;
}

void eval_data_alloc(struct eval_data *ds, size_t n, size_t d)
{
    ds->n = n;
    ds->d = d;
    ds->names = core_xcalloc(d ? d : 1, sizeof(char *));
    ds->x = core_xcalloc((n ? n : 1) * (d ? d : 1), sizeof(double));
    ds->y = core_xcalloc(n ? n : 1, sizeof(int));
    ds->attr = core_xcalloc(n ? n : 1, sizeof(int));
    ds->split = core_xcalloc(n ? n : 1, sizeof(int));
    ds->order = core_xcalloc(n ? n : 1, sizeof(int64_t));
}

void eval_data_free(struct eval_data *ds)
{
    if (!ds)
        return;
    for (size_t j = 0; ds->names && j < ds->d; j++)
        free(ds->names[j]);
    for (size_t c = 0; ds->class_names && c < ds->n_classes; c++)
        free(ds->class_names[c]);
    free(ds->names);
    free(ds->class_names);
    free(ds->x);
    free(ds->y);
    free(ds->attr);
    free(ds->split);
    free(ds->order);
    ds->names = ds->class_names = NULL;
    ds->x = NULL;
    ds->y = ds->attr = ds->split = NULL;
    ds->order = NULL;
}
