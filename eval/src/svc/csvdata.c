/* csvdata.c - a window dataset described by a JSON file (`gcdp eval --dataset csv --data
 * F.json`), so a further dataset in the shape of the built-in ones runs without a code
 * change. docs/evaluation.md has an example. Keys (unknown keys are refused):
 *   "name"        short name (results folder), [A-Za-z0-9._-]
 *   "file"        CSV with a header line; relative paths are relative to the JSON file
 *   "split_column" values train | val | test
 *   "label_column" task label: strings, mapped to classes in order of first appearance
 *                  (task "positive": the labels must be 0 and 1; class 1 is positive)
 *   "attribute_column" protected attribute, 0 or 1
 *   "nodes"       array of the node columns (numbers)
 *   "task"        "positive" (positive-class F1) or "macro" (macro-F1)
 *   "normalized"  true: node values are already in [0,1]; false (default): clip interval =
 *                 min/max of the training rows per node, frozen, then scaled to [0,1]
 *   "sensitivity" {"stat": "mean", "min_samples": n, "max_samples": N, "interp_gap": G}
 *                 (window means: B_k = (1+2G)/n) or {"stat": "range"} (B_k = 1)
 *   "task_desc", "attribute_desc", "unit_desc"  free text for run.txt (optional)
 * Rows keep file order within each split (that order is the time order Algorithm 1's lags
 * use). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/mem.h"
#include "eval_int.h"

#define CSV_MAX_COLS 512

static int find_col(char **hdr, int nh, const char *name)
{
    for (int i = 0; name && i < nh; i++)
        if (strcmp(hdr[i], name) == 0)
            return i;
    return -1;
}

/* split a line in place at commas; returns the field count */
static int split_line(char *line, char **f, int cap)
{
    int n = 0;
    line[strcspn(line, "\r\n")] = '\0';
    for (char *p = line; n < cap;) {
        f[n++] = p;
        p = strchr(p, ',');
        if (!p)
            break;
        *p++ = '\0';
    }
    return n;
}

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(eb, ebn, __VA_ARGS__);                                                            \
        rc = CORE_ECONFIG;                                                                         \
        goto out;                                                                                  \
    } while (0)

core_err eval_load_csv(const char *cfg_path, struct eval_data *ds, char *eb, size_t ebn)
{
    static const char *known[] = {
        "name", "file",       "split_column", "label_column", "attribute_column", "nodes",
        "task", "normalized", "sensitivity",  "task_desc",    "attribute_desc",   "unit_desc"};
    json_error_t je;
    json_t *cfg = json_load_file(cfg_path, 0, &je), *nodes, *sens, *v;
    const char *key, *file, *name, *task, *stat;
    char path[4096], line[65536], *hdr_buf = NULL, *hdr[CSV_MAX_COLS], *f[CSV_MAX_COLS];
    char **labels = NULL;
    int nh = 0, c_split, c_label, c_attr, c_node[EVAL_MAX_NODES];
    size_t d, n = 0, cap = 0, nlab = 0, ln = 1;
    double *x = NULL;
    int *y = NULL, *a = NULL, *sp = NULL;
    FILE *fh = NULL;
    core_err rc = CORE_OK;

    memset(ds, 0, sizeof(*ds));
    if (!cfg) {
        snprintf(eb, ebn, "%s:%d: %s", cfg_path, je.line, je.text);
        return CORE_ECONFIG;
    }
    json_object_foreach(cfg, key, v)
    {
        size_t i = 0;
        while (i < sizeof(known) / sizeof(known[0]) && strcmp(known[i], key) != 0)
            i++;
        if (i == sizeof(known) / sizeof(known[0]))
            FAIL("%s: unknown key '%s'", cfg_path, key);
    }
    name = json_string_value(json_object_get(cfg, "name"));
    file = json_string_value(json_object_get(cfg, "file"));
    task = json_string_value(json_object_get(cfg, "task"));
    nodes = json_object_get(cfg, "nodes");
    sens = json_object_get(cfg, "sensitivity");
    if (!name || !*name || strlen(name) >= sizeof(ds->name) ||
        strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
            strlen(name))
        FAIL("%s: 'name' must be 1..63 characters of [A-Za-z0-9._-]", cfg_path);
    if (!file)
        FAIL("%s: 'file' (string) is required", cfg_path);
    if (!task || (strcmp(task, "positive") != 0 && strcmp(task, "macro") != 0))
        FAIL("%s: 'task' must be \"positive\" or \"macro\"", cfg_path);
    d = json_array_size(nodes);
    if (!json_is_array(nodes) || d == 0 || d > EVAL_MAX_NODES)
        FAIL("%s: 'nodes' must be an array of 1..%d column names", cfg_path, EVAL_MAX_NODES);
    if (!json_is_object(sens))
        FAIL("%s: 'sensitivity' object is required", cfg_path);
    stat = json_string_value(json_object_get(sens, "stat"));
    if (stat && strcmp(stat, "mean") == 0) {
        json_int_t mn = json_integer_value(json_object_get(sens, "min_samples"));
        json_int_t mx = json_integer_value(json_object_get(sens, "max_samples"));
        json_int_t g = json_integer_value(json_object_get(sens, "interp_gap"));
        ds->stat = REL_STAT_MEAN;
        ds->query.min_samples = (uint32_t)(mn > 0 ? mn : 0);
        ds->query.max_samples = (uint32_t)(mx > 0 ? mx : 0);
        ds->query.interp_gap = (uint32_t)(g > 0 ? g : 0);
        if (rel_query_params_check(&ds->query) != CORE_OK)
            FAIL("%s: sensitivity: need 2 <= min_samples <= max_samples, interp_gap >= 0",
                 cfg_path);
    } else if (stat && strcmp(stat, "range") == 0) {
        ds->stat = REL_STAT_MAX;
        ds->query.min_samples = 2;
        ds->query.max_samples = 2;
        ds->query.interp_gap = 0;
    } else {
        FAIL("%s: sensitivity.stat must be \"mean\" or \"range\"", cfg_path);
    }
    if (file[0] == '/') {
        snprintf(path, sizeof(path), "%s", file);
    } else {
        const char *sl = strrchr(cfg_path, '/');
        snprintf(path, sizeof(path), "%.*s%s", sl ? (int)(sl - cfg_path + 1) : 0, cfg_path, file);
    }
    if (!(fh = fopen(path, "r"))) {
        snprintf(eb, ebn, "%s: %s", path, strerror(errno));
        rc = CORE_EIO;
        goto out;
    }
    if (!fgets(line, sizeof(line), fh))
        FAIL("%s: empty file", path);
    hdr_buf = core_xstrdup(line);
    nh = split_line(hdr_buf, hdr, CSV_MAX_COLS);
    c_split = find_col(hdr, nh, json_string_value(json_object_get(cfg, "split_column")));
    c_label = find_col(hdr, nh, json_string_value(json_object_get(cfg, "label_column")));
    c_attr = find_col(hdr, nh, json_string_value(json_object_get(cfg, "attribute_column")));
    if (c_split < 0 || c_label < 0 || c_attr < 0)
        FAIL("%s: split_column, label_column and attribute_column must name header columns",
             cfg_path);
    for (size_t k = 0; k < d; k++) {
        c_node[k] = find_col(hdr, nh, json_string_value(json_array_get(nodes, k)));
        if (c_node[k] < 0)
            FAIL("%s: nodes[%zu] is not a header column of %s", cfg_path, k, path);
    }
    while (fgets(line, sizeof(line), fh)) {
        int nf;
        ln++;
        if (line[0] == '\n' || line[0] == '\0')
            continue;
        nf = split_line(line, f, CSV_MAX_COLS);
        if (nf != nh) {
            snprintf(eb, ebn, "%s:%zu: %d fields, header has %d", path, ln, nf, nh);
            rc = CORE_EPARSE;
            goto out;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 1024;
            x = core_xrealloc(x, cap * d * sizeof(double));
            y = core_xrealloc(y, cap * sizeof(int));
            a = core_xrealloc(a, cap * sizeof(int));
            sp = core_xrealloc(sp, cap * sizeof(int));
        }
        const char *s = f[c_split];
        sp[n] = strcmp(s, "train") == 0  ? EVAL_TRAIN
                : strcmp(s, "val") == 0  ? EVAL_VAL
                : strcmp(s, "test") == 0 ? EVAL_TEST
                                         : -1;
        if (sp[n] < 0) {
            snprintf(eb, ebn, "%s:%zu: split '%s' is not train, val or test", path, ln, s);
            rc = CORE_EPARSE;
            goto out;
        }
        if (strcmp(f[c_attr], "0") != 0 && strcmp(f[c_attr], "1") != 0) {
            snprintf(eb, ebn, "%s:%zu: attribute must be 0 or 1", path, ln);
            rc = CORE_EPARSE;
            goto out;
        }
        a[n] = f[c_attr][0] == '1';
        size_t lab = 0;
        while (lab < nlab && strcmp(labels[lab], f[c_label]) != 0)
            lab++;
        if (lab == nlab) {
            if (nlab == EVAL_MAX_CLASSES) {
                snprintf(eb, ebn, "%s:%zu: more than %d classes", path, ln, EVAL_MAX_CLASSES);
                rc = CORE_EPARSE;
                goto out;
            }
            labels = core_xrealloc(labels, (nlab + 1) * sizeof(char *));
            labels[nlab++] = core_xstrdup(f[c_label]);
        }
        y[n] = (int)lab;
        for (size_t k = 0; k < d; k++) {
            char *end;
            double vv = strtod(f[c_node[k]], &end);
            if (end == f[c_node[k]] || *end || !isfinite(vv)) {
                snprintf(eb, ebn, "%s:%zu: column %s is not a finite number", path, ln,
                         hdr[c_node[k]]);
                rc = CORE_EPARSE;
                goto out;
            }
            x[n * d + k] = vv;
        }
        n++;
    }
    if (nlab < 2)
        FAIL("%s: the task needs at least two classes", path);
    if (strcmp(task, "positive") == 0) { /* labels "0"/"1": class id 1 must be "1" */
        if (nlab != 2 || (strcmp(labels[0], "0") != 0 && strcmp(labels[0], "1") != 0) ||
            (strcmp(labels[1], "0") != 0 && strcmp(labels[1], "1") != 0))
            FAIL("%s: task \"positive\" needs labels 0 and 1", path);
        if (strcmp(labels[0], "1") == 0) { /* first row was positive: swap ids */
            for (size_t i = 0; i < n; i++)
                y[i] = 1 - y[i];
            char *t = labels[0];
            labels[0] = labels[1];
            labels[1] = t;
        }
    }
    eval_data_alloc(ds, n, d);
    snprintf(ds->name, sizeof(ds->name), "%s", name);
    for (size_t k = 0; k < d; k++) {
        double lo = INFINITY, hi = -INFINITY;
        int normalized = json_is_true(json_object_get(cfg, "normalized"));
        ds->names[k] = core_xstrdup(json_string_value(json_array_get(nodes, k)));
        for (size_t i = 0; i < n; i++)
            if (sp[i] == EVAL_TRAIN) {
                lo = fmin(lo, x[i * d + k]);
                hi = fmax(hi, x[i * d + k]);
            }
        if (normalized) {
            lo = 0.0;
            hi = 1.0;
        } else if (!(hi > lo)) {
            hi = lo + 1.0;
        }
        for (size_t i = 0; i < n; i++)
            ds->x[i * d + k] = fmin(1.0, fmax(0.0, (x[i * d + k] - lo) / (hi - lo)));
    }
    memcpy(ds->y, y, n * sizeof(int));
    memcpy(ds->attr, a, n * sizeof(int));
    memcpy(ds->split, sp, n * sizeof(int));
    for (size_t i = 0; i < n; i++)
        ds->order[i] = (int64_t)i;
    ds->n_classes = nlab;
    ds->class_names = labels;
    labels = NULL;
    nlab = 0;
    ds->positive_f1 = strcmp(task, "positive") == 0;
    snprintf(ds->task_desc, sizeof(ds->task_desc), "%s",
             json_string_value(json_object_get(cfg, "task_desc"))
                 ? json_string_value(json_object_get(cfg, "task_desc"))
                 : (ds->positive_f1 ? "positive-class F1" : "macro-F1"));
    snprintf(ds->attr_desc, sizeof(ds->attr_desc), "%s",
             json_string_value(json_object_get(cfg, "attribute_desc"))
                 ? json_string_value(json_object_get(cfg, "attribute_desc"))
                 : "attribute column of the CSV");
    snprintf(ds->unit_desc, sizeof(ds->unit_desc), "%s",
             json_string_value(json_object_get(cfg, "unit_desc"))
                 ? json_string_value(json_object_get(cfg, "unit_desc"))
                 : (ds->stat == REL_STAT_MEAN ? "window mean: B_k = (1+2G)/n_min"
                                              : "clipped range: B_k = 1"));
out:
    if (fh)
        fclose(fh);
    for (size_t i = 0; i < nlab; i++)
        free(labels[i]);
    free(labels);
    free(hdr_buf);
    free(x);
    free(y);
    free(a);
    free(sp);
    json_decref(cfg);
    if (rc != CORE_OK)
        eval_data_free(ds);
    return rc;
}
