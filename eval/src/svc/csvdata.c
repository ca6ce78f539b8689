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

/* One load: the JSON description, the CSV's header columns and the rows read so far. */
struct csv_load {
    const char *cfg_path;
    json_t *cfg;   /* the description (owned) */
    json_t *nodes; /* borrowed from cfg */
    const char *name, *file, *task;
    size_t d;
    char path[4096]; /* the CSV */
    char *hdr_buf, *hdr[CSV_MAX_COLS];
    int nh, c_split, c_label, c_attr, c_node[EVAL_MAX_NODES];
    size_t n, cap, nlab, ln; /* rows, their capacity, classes, current line */
    double *x;               /* n x d raw node values */
    int *y, *a, *sp;         /* class id, attribute, split of each row */
    char **labels;           /* nlab class names, in order of first appearance */
    char *eb;
    size_t ebn;
};

/* Every key of the description is one of the documented ones. */
static core_err check_known_keys(const struct csv_load *L)
{
    static const char *known[] = {
        "name", "file",       "split_column", "label_column", "attribute_column", "nodes",
        "task", "normalized", "sensitivity",  "task_desc",    "attribute_desc",   "unit_desc"};
    const char *key;
    json_t *v;

    json_object_foreach(L->cfg, key, v)
    {
        size_t i = 0;
        while (i < sizeof(known) / sizeof(known[0]) && strcmp(known[i], key) != 0)
            i++;
        if (i == sizeof(known) / sizeof(known[0])) {
            snprintf(L->eb, L->ebn, "%s: unknown key '%s'", L->cfg_path, key);
            return CORE_ECONFIG;
        }
    }
    return CORE_OK;
}

/* "sensitivity": the statistic and the public query parameters for B_k. */
static core_err read_sensitivity(const struct csv_load *L, struct eval_data *ds)
{
    json_t *sens = json_object_get(L->cfg, "sensitivity");
    const char *stat;

    if (!json_is_object(sens)) {
        snprintf(L->eb, L->ebn, "%s: 'sensitivity' object is required", L->cfg_path);
        return CORE_ECONFIG;
    }
    stat = json_string_value(json_object_get(sens, "stat"));
    if (stat && strcmp(stat, "mean") == 0) {
        json_int_t mn = json_integer_value(json_object_get(sens, "min_samples"));
        json_int_t mx = json_integer_value(json_object_get(sens, "max_samples"));
        json_int_t g = json_integer_value(json_object_get(sens, "interp_gap"));
        ds->stat = REL_STAT_MEAN;
        ds->query.min_samples = (uint32_t)(mn > 0 ? mn : 0);
        ds->query.max_samples = (uint32_t)(mx > 0 ? mx : 0);
        ds->query.interp_gap = (uint32_t)(g > 0 ? g : 0);
        if (rel_query_params_check(&ds->query) == CORE_OK)
            return CORE_OK;
        snprintf(L->eb, L->ebn,
                 "%s: sensitivity: need 2 <= min_samples <= max_samples, interp_gap >= 0",
                 L->cfg_path);
        return CORE_ECONFIG;
    }
    if (stat && strcmp(stat, "range") == 0) {
        ds->stat = REL_STAT_MAX;
        ds->query.min_samples = 2;
        ds->query.max_samples = 2;
        ds->query.interp_gap = 0;
        return CORE_OK;
    }
    snprintf(L->eb, L->ebn, "%s: sensitivity.stat must be \"mean\" or \"range\"", L->cfg_path);
    return CORE_ECONFIG;
}

/* name, file, task, nodes and sensitivity; the CSV path relative to the description. */
static core_err read_description(struct csv_load *L, struct eval_data *ds)
{
    const char *name;

    L->name = name = json_string_value(json_object_get(L->cfg, "name"));
    L->file = json_string_value(json_object_get(L->cfg, "file"));
    L->task = json_string_value(json_object_get(L->cfg, "task"));
    L->nodes = json_object_get(L->cfg, "nodes");
    if (!name || !*name || strlen(name) >= sizeof(ds->name) ||
        strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
            strlen(name)) {
        snprintf(L->eb, L->ebn, "%s: 'name' must be 1..63 characters of [A-Za-z0-9._-]",
                 L->cfg_path);
        return CORE_ECONFIG;
    }
    if (!L->file) {
        snprintf(L->eb, L->ebn, "%s: 'file' (string) is required", L->cfg_path);
        return CORE_ECONFIG;
    }
    if (!L->task || (strcmp(L->task, "positive") != 0 && strcmp(L->task, "macro") != 0)) {
        snprintf(L->eb, L->ebn, "%s: 'task' must be \"positive\" or \"macro\"", L->cfg_path);
        return CORE_ECONFIG;
    }
    L->d = json_array_size(L->nodes);
    if (!json_is_array(L->nodes) || L->d == 0 || L->d > EVAL_MAX_NODES) {
        snprintf(L->eb, L->ebn, "%s: 'nodes' must be an array of 1..%d column names", L->cfg_path,
                 EVAL_MAX_NODES);
        return CORE_ECONFIG;
    }
    if (L->file[0] == '/') {
        snprintf(L->path, sizeof(L->path), "%s", L->file);
    } else {
        const char *sl = strrchr(L->cfg_path, '/');
        snprintf(L->path, sizeof(L->path), "%.*s%s", sl ? (int)(sl - L->cfg_path + 1) : 0,
                 L->cfg_path, L->file);
    }
    return read_sensitivity(L, ds);
}

/* The header line: the split, label, attribute and node columns must all be present. */
static core_err read_header(struct csv_load *L, FILE *fh, char *line, size_t line_size)
{
    if (!fgets(line, (int)line_size, fh)) {
        snprintf(L->eb, L->ebn, "%s: empty file", L->path);
        return CORE_ECONFIG;
    }
    L->hdr_buf = core_xstrdup(line);
    L->nh = split_line(L->hdr_buf, L->hdr, CSV_MAX_COLS);
    L->c_split =
        find_col(L->hdr, L->nh, json_string_value(json_object_get(L->cfg, "split_column")));
    L->c_label =
        find_col(L->hdr, L->nh, json_string_value(json_object_get(L->cfg, "label_column")));
    L->c_attr =
        find_col(L->hdr, L->nh, json_string_value(json_object_get(L->cfg, "attribute_column")));
    if (L->c_split < 0 || L->c_label < 0 || L->c_attr < 0) {
        snprintf(L->eb, L->ebn,
                 "%s: split_column, label_column and attribute_column must name header columns",
                 L->cfg_path);
        return CORE_ECONFIG;
    }
    for (size_t k = 0; k < L->d; k++) {
        L->c_node[k] = find_col(L->hdr, L->nh, json_string_value(json_array_get(L->nodes, k)));
        if (L->c_node[k] < 0) {
            snprintf(L->eb, L->ebn, "%s: nodes[%zu] is not a header column of %s", L->cfg_path, k,
                     L->path);
            return CORE_ECONFIG;
        }
    }
    return CORE_OK;
}

/* Room for one more row. */
static void grow_rows(struct csv_load *L)
{
    if (L->n < L->cap)
        return;
    L->cap = L->cap ? 2 * L->cap : 1024;
    L->x = core_xrealloc(L->x, L->cap * L->d * sizeof(double));
    L->y = core_xrealloc(L->y, L->cap * sizeof(int));
    L->a = core_xrealloc(L->a, L->cap * sizeof(int));
    L->sp = core_xrealloc(L->sp, L->cap * sizeof(int));
}

/* The class id of label s, adding it as a new class on first appearance (-1: too many). */
static int class_of(struct csv_load *L, const char *s)
{
    size_t lab = 0;

    while (lab < L->nlab && strcmp(L->labels[lab], s) != 0)
        lab++;
    if (lab == L->nlab) {
        if (L->nlab == EVAL_MAX_CLASSES) {
            snprintf(L->eb, L->ebn, "%s:%zu: more than %d classes", L->path, L->ln,
                     EVAL_MAX_CLASSES);
            return -1;
        }
        L->labels = core_xrealloc(L->labels, (L->nlab + 1) * sizeof(char *));
        L->labels[L->nlab++] = core_xstrdup(s);
    }
    return (int)lab;
}

/* Split, attribute, class and node values of one data row (fields f, as many as the header)
 * into row L->n. */
static core_err parse_row(struct csv_load *L, char **f)
{
    const char *s = f[L->c_split];
    size_t n = L->n, d = L->d;

    L->sp[n] = strcmp(s, "train") == 0  ? EVAL_TRAIN
               : strcmp(s, "val") == 0  ? EVAL_VAL
               : strcmp(s, "test") == 0 ? EVAL_TEST
                                        : -1;
    if (L->sp[n] < 0) {
        snprintf(L->eb, L->ebn, "%s:%zu: split '%s' is not train, val or test", L->path, L->ln, s);
        return CORE_EPARSE;
    }
    if (strcmp(f[L->c_attr], "0") != 0 && strcmp(f[L->c_attr], "1") != 0) {
        snprintf(L->eb, L->ebn, "%s:%zu: attribute must be 0 or 1", L->path, L->ln);
        return CORE_EPARSE;
    }
    L->a[n] = f[L->c_attr][0] == '1';
    if ((L->y[n] = class_of(L, f[L->c_label])) < 0)
        return CORE_EPARSE;
    for (size_t k = 0; k < d; k++) {
        char *end;
        double vv = strtod(f[L->c_node[k]], &end);
        if (end == f[L->c_node[k]] || *end || !isfinite(vv)) {
            snprintf(L->eb, L->ebn, "%s:%zu: column %s is not a finite number", L->path, L->ln,
                     L->hdr[L->c_node[k]]);
            return CORE_EPARSE;
        }
        L->x[n * d + k] = vv;
    }
    L->n++;
    return CORE_OK;
}

/* The data rows after the header (blank lines skipped). */
static core_err read_rows(struct csv_load *L, FILE *fh, char *line, size_t line_size)
{
    char *f[CSV_MAX_COLS];
    core_err rc;

    while (fgets(line, (int)line_size, fh)) {
        int nf;
        L->ln++;
        if (line[0] == '\n' || line[0] == '\0')
            continue;
        nf = split_line(line, f, CSV_MAX_COLS);
        if (nf != L->nh) {
            snprintf(L->eb, L->ebn, "%s:%zu: %d fields, header has %d", L->path, L->ln, nf, L->nh);
            return CORE_EPARSE;
        }
        grow_rows(L);
        if ((rc = parse_row(L, f)) != CORE_OK)
            return rc;
    }
    return CORE_OK;
}

/* At least two classes; task "positive" needs labels 0 and 1, with class id 1 = "1". */
static core_err check_classes(struct csv_load *L)
{
    if (L->nlab < 2) {
        snprintf(L->eb, L->ebn, "%s: the task needs at least two classes", L->path);
        return CORE_ECONFIG;
    }
    if (strcmp(L->task, "positive") != 0)
        return CORE_OK;
    if (L->nlab != 2 || (strcmp(L->labels[0], "0") != 0 && strcmp(L->labels[0], "1") != 0) ||
        (strcmp(L->labels[1], "0") != 0 && strcmp(L->labels[1], "1") != 0)) {
        snprintf(L->eb, L->ebn, "%s: task \"positive\" needs labels 0 and 1", L->path);
        return CORE_ECONFIG;
    }
    if (strcmp(L->labels[0], "1") == 0) { /* first row was positive: swap ids */
        char *t = L->labels[0];
        for (size_t i = 0; i < L->n; i++)
            L->y[i] = 1 - L->y[i];
        L->labels[0] = L->labels[1];
        L->labels[1] = t;
    }
    return CORE_OK;
}

/* Node k of ds scaled to [0,1]: by the training rows' min/max, or as-is when normalized. */
static void scale_node(const struct csv_load *L, size_t k, int normalized, struct eval_data *ds)
{
    size_t n = L->n, d = L->d;
    double lo = INFINITY, hi = -INFINITY;

    for (size_t i = 0; i < n; i++)
        if (L->sp[i] == EVAL_TRAIN) {
            lo = fmin(lo, L->x[i * d + k]);
            hi = fmax(hi, L->x[i * d + k]);
        }
    if (normalized) {
        lo = 0.0;
        hi = 1.0;
    } else if (!(hi > lo)) {
        hi = lo + 1.0;
    }
    for (size_t i = 0; i < n; i++)
        ds->x[i * d + k] = fmin(1.0, fmax(0.0, (L->x[i * d + k] - lo) / (hi - lo)));
}

/* The optional free-text key, or fallback. */
static const char *desc_or(const json_t *cfg, const char *key, const char *fallback)
{
    const char *s = json_string_value(json_object_get(cfg, key));
    return s ? s : fallback;
}

/* Move the rows read into ds (scaled nodes, labels, attribute, split, descriptions). */
static void fill_data(struct csv_load *L, struct eval_data *ds)
{
    size_t n = L->n, d = L->d;

    eval_data_alloc(ds, n, d);
    snprintf(ds->name, sizeof(ds->name), "%s", L->name);
    for (size_t k = 0; k < d; k++) {
        int normalized = json_is_true(json_object_get(L->cfg, "normalized"));
        ds->names[k] = core_xstrdup(json_string_value(json_array_get(L->nodes, k)));
        scale_node(L, k, normalized, ds);
    }
    memcpy(ds->y, L->y, n * sizeof(int));
    memcpy(ds->attr, L->a, n * sizeof(int));
    memcpy(ds->split, L->sp, n * sizeof(int));
    for (size_t i = 0; i < n; i++)
        ds->order[i] = (int64_t)i;
    ds->n_classes = L->nlab;
    ds->class_names = L->labels;
    L->labels = NULL;
    L->nlab = 0;
    ds->positive_f1 = strcmp(L->task, "positive") == 0;
    snprintf(ds->task_desc, sizeof(ds->task_desc), "%s",
             desc_or(L->cfg, "task_desc", ds->positive_f1 ? "positive-class F1" : "macro-F1"));
    snprintf(ds->attr_desc, sizeof(ds->attr_desc), "%s",
             desc_or(L->cfg, "attribute_desc", "attribute column of the CSV"));
    snprintf(ds->unit_desc, sizeof(ds->unit_desc), "%s",
             desc_or(L->cfg, "unit_desc",
                     ds->stat == REL_STAT_MEAN ? "window mean: B_k = (1+2G)/n_min"
                                               : "clipped range: B_k = 1"));
}

/* Header, rows and class checks of the CSV at L->path. */
static core_err read_csv(struct csv_load *L)
{
    char line[65536];
    FILE *fh = fopen(L->path, "r");
    core_err rc;

    if (!fh) {
        snprintf(L->eb, L->ebn, "%s: %s", L->path, strerror(errno));
        return CORE_EIO;
    }
    if ((rc = read_header(L, fh, line, sizeof(line))) == CORE_OK &&
        (rc = read_rows(L, fh, line, sizeof(line))) == CORE_OK)
        rc = check_classes(L);
    fclose(fh);
    return rc;
}

core_err eval_load_csv(const char *cfg_path, struct eval_data *ds, char *eb, size_t ebn)
{
    struct csv_load L = {.cfg_path = cfg_path, .ln = 1, .eb = eb, .ebn = ebn};
    json_error_t je;
    core_err rc;

    memset(ds, 0, sizeof(*ds));
    L.cfg = json_load_file(cfg_path, 0, &je);
    if (!L.cfg) {
        snprintf(eb, ebn, "%s:%d: %s", cfg_path, je.line, je.text);
        return CORE_ECONFIG;
    }
    if ((rc = check_known_keys(&L)) == CORE_OK && (rc = read_description(&L, ds)) == CORE_OK &&
        (rc = read_csv(&L)) == CORE_OK)
        fill_data(&L, ds);
    for (size_t i = 0; i < L.nlab; i++)
        free(L.labels[i]);
    free(L.labels);
    free(L.hdr_buf);
    free(L.x);
    free(L.y);
    free(L.a);
    free(L.sp);
    json_decref(L.cfg);
    if (rc != CORE_OK)
        eval_data_free(ds);
    return rc;
}
