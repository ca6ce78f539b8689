/* wisdm.c - WISDM 2019 phone ARFF feature windows (../shared/data/wisdm/README.md).
 * Decided once, before any run (docs/evaluation.md):
 *   - files whose bytes equal an earlier file's (in name order) are dropped: phone accel
 *     1611-1613 and 1615-1617 are copies of 1610's file;
 *   - one sensor per run (accel or gyro): their windows are made separately and are not
 *     aligned, so they are never joined row by row;
 *   - nodes (13): per axis x, y, z the window's AVG, PEAK, ABSOLDEV, STANDDEV, and the
 *     RESULTANT, each a sensor-axis window feature;
 *   - subject-disjoint split by subject id: id % 5 in {0,1,2} train, 3 validation, 4 test;
 *   - clipping/normalization: per node the training rows' 1st and 99th percentiles, frozen;
 *   - task: the 18 activities, macro-F1; protected attribute: eating or drinking
 *     (H soup, I chips, J pasta, K drinking, L sandwich) - a dietary-behaviour attribute;
 *   - protected unit: one clipped sensor-axis feature in one window; the features are
 *     supplied, so B_k is the clipped range U_k - L_k = 1 (Algorithm 2 step 2 fallback). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "core/mem.h"
#include "eval/eval.h"

#define W_NODES 13
static const int w_cols[W_NODES] = {31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 91};
static const char *w_names[W_NODES] = {"x.avg",  "y.avg",      "z.avg",      "x.peak",     "y.peak",
                                       "z.peak", "x.absoldev", "y.absoldev", "z.absoldev", "x.std",
                                       "y.std",  "z.std",      "resultant"};
static const char acts[] = "ABCDEFGHIJKLMOPQRS"; /* 18 activities, no N */

static core_err hash_file(const char *path, unsigned char out[32], char *eb, size_t ebn)
{
    crypto_generichash_state st;
    unsigned char buf[65536];
    size_t n;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(eb, ebn, "%s: %s", path, strerror(errno));
        return CORE_EIO;
    }
    crypto_generichash_init(&st, NULL, 0, 32);
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
        crypto_generichash_update(&st, buf, n);
    int err = ferror(f);
    fclose(f);
    if (err) {
        snprintf(eb, ebn, "%s: read error", path);
        return CORE_EIO;
    }
    crypto_generichash_final(&st, out, 32);
    return CORE_OK;
}

core_err eval_find_duplicates(size_t n, const char *const *paths, long *dup, char *eb, size_t ebn)
{
    unsigned char(*h)[32] = core_xmalloc((n ? n : 1) * sizeof(*h));
    core_err rc = sodium_init() < 0 ? CORE_ERNG : CORE_OK;
    for (size_t i = 0; i < n && rc == CORE_OK; i++) {
        rc = hash_file(paths[i], h[i], eb, ebn);
        dup[i] = -1;
        for (size_t j = 0; rc == CORE_OK && j < i && dup[i] < 0; j++)
            if (dup[j] < 0 && memcmp(h[i], h[j], 32) == 0) /* BLAKE2b-256 of the bytes */
                dup[i] = (long)j;
    }
    free(h);
    return rc;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

struct wrow {
    double v[W_NODES];
    int act, subj;
};

/* One @data line of an ARFF file: the activity code, then 92 numbers (the last the subject
 * id); the W_NODES used columns go to r. */
static core_err parse_arff_row(const char *line, const char *path, size_t ln, struct wrow *r,
                               char *eb, size_t ebn)
{
    const char *p, *a = strchr(acts, line[0]);
    char *end;
    double v[93];

    if (!a || line[1] != ',') {
        snprintf(eb, ebn, "%s:%zu: activity code not in A..S", path, ln);
        return CORE_EPARSE;
    }
    p = line + 2;
    for (int nf = 1; nf < 93; nf++) {
        errno = 0;
        v[nf] = strtod(p, &end);
        if (end == p || !isfinite(v[nf])) {
            snprintf(eb, ebn, "%s:%zu: field %d is not a finite number", path, ln, nf);
            return CORE_EPARSE;
        }
        p = end;
        if (nf == 92)
            break;
        if (*p != ',') {
            snprintf(eb, ebn, "%s:%zu: %d fields (93 expected)", path, ln, nf + 1);
            return CORE_EPARSE;
        }
        p++;
    }
    for (int k = 0; k < W_NODES; k++)
        r->v[k] = v[w_cols[k]];
    r->act = (int)(a - acts);
    r->subj = (int)v[92];
    return CORE_OK;
}

/* Append the rows of the ARFF file at path to *rows (n used of cap). */
static core_err parse_arff(const char *path, struct wrow **rows, size_t *n, size_t *cap, char *eb,
                           size_t ebn)
{
    FILE *f = fopen(path, "r");
    char line[16384];
    int data = 0;
    size_t ln = 0;
    struct wrow r;

    if (!f) {
        snprintf(eb, ebn, "%s: %s", path, strerror(errno));
        return CORE_EIO;
    }
    while (fgets(line, sizeof(line), f)) {
        ln++;
        if (!data) {
            data = strncmp(line, "@data", 5) == 0;
            continue;
        }
        if (line[0] == '\n' || line[0] == '\0')
            continue;
        if (parse_arff_row(line, path, ln, &r, eb, ebn) != CORE_OK) {
            fclose(f);
            return CORE_EPARSE;
        }
        if (*n == *cap) {
            *cap = *cap ? 2 * *cap : 8192;
            *rows = core_xrealloc(*rows, *cap * sizeof(**rows));
        }
        (*rows)[(*n)++] = r;
    }
    fclose(f);
    if (!data) {
        snprintf(eb, ebn, "%s: no @data line", path);
        return CORE_EPARSE;
    }
    return CORE_OK;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The files of sub whose names end in suffix, sorted; *paths new (caller frees each and the
 * array). */
static core_err list_arff(const char *sub, const char *suffix, char ***paths, size_t *np, char *eb,
                          size_t ebn)
{
    DIR *dh;
    struct dirent *de;
    size_t cap = 0;

    if (!(dh = opendir(sub))) {
        snprintf(eb, ebn, "%s: %s", sub, strerror(errno));
        return CORE_EIO;
    }
    while ((de = readdir(dh))) {
        size_t l = strlen(de->d_name), ls = strlen(suffix);
        if (l <= ls || strcmp(de->d_name + l - ls, suffix) != 0)
            continue;
        if (*np == cap) {
            cap = cap ? 2 * cap : 64;
            *paths = core_xrealloc(*paths, cap * sizeof(**paths));
        }
        char full[8300];
        snprintf(full, sizeof(full), "%s/%s", sub, de->d_name);
        (*paths)[(*np)++] = core_xstrdup(full);
    }
    closedir(dh);
    if (*np == 0) {
        snprintf(eb, ebn, "%s: no *%s files", sub, suffix);
        return CORE_EIO;
    }
    qsort(*paths, *np, sizeof(**paths), cmp_str);
    return CORE_OK;
}

/* Rows of ds: split by subject id % 5, activity label, eating/drinking attribute, order. */
static void fill_wisdm_rows(const struct wrow *rows, size_t nr, struct eval_data *ds)
{
    for (size_t i = 0; i < nr; i++) {
        int m = rows[i].subj % 5;
        ds->split[i] = m <= 2 ? EVAL_TRAIN : m == 3 ? EVAL_VAL : EVAL_TEST;
        ds->y[i] = rows[i].act;
        ds->attr[i] = rows[i].act >= 7 && rows[i].act <= 11; /* H I J K L */
        ds->order[i] = (int64_t)rows[i].subj * 1000000 + (int64_t)i;
    }
}

/* Node values of ds scaled by the clip interval: training 1st / 99th percentiles (fitted on
 * training only). */
static void scale_wisdm_nodes(const struct wrow *rows, size_t nr, struct eval_data *ds)
{
    double lo[W_NODES], hi[W_NODES];
    double *col = core_xmalloc(nr * sizeof(double));

    for (int k = 0; k < W_NODES; k++) {
        size_t c = 0;
        for (size_t i = 0; i < nr; i++)
            if (ds->split[i] == EVAL_TRAIN)
                col[c++] = rows[i].v[k];
        qsort(col, c, sizeof(double), cmp_dbl);
        lo[k] = c ? col[(size_t)floor(0.01 * (double)(c - 1))] : 0.0;
        hi[k] = c ? col[(size_t)ceil(0.99 * (double)(c - 1))] : 1.0;
        if (!(hi[k] > lo[k]))
            hi[k] = lo[k] + 1.0;
        ds->names[k] = core_xstrdup(w_names[k]);
    }
    for (size_t i = 0; i < nr; i++)
        for (int k = 0; k < W_NODES; k++)
            ds->x[i * W_NODES + k] = fmin(1.0, fmax(0.0, (rows[i].v[k] - lo[k]) / (hi[k] - lo[k])));
    free(col);
}

/* Classes A..S, task, attribute and protected-unit descriptions, and the B_k query. */
static void describe_wisdm(struct eval_data *ds)
{
    ds->n_classes = 18;
    ds->class_names = core_xcalloc(18, sizeof(char *));
    for (int c = 0; c < 18; c++) {
        char nm[2] = {acts[c], 0};
        ds->class_names[c] = core_xstrdup(nm);
    }
    ds->positive_f1 = 0;
    ds->stat = REL_STAT_MAX;
    ds->query.min_samples = 200; /* 10 s at 20 Hz (not used by the range bound) */
    ds->query.max_samples = 200;
    ds->query.interp_gap = 0;
    snprintf(ds->task_desc, sizeof(ds->task_desc), "18 activities, macro-F1");
    snprintf(ds->attr_desc, sizeof(ds->attr_desc),
             "eating or drinking (activities H soup, I chips, J pasta, K drinking, "
             "L sandwich)");
    snprintf(ds->unit_desc, sizeof(ds->unit_desc),
             "one clipped sensor-axis feature in one window (supplied features): B_k = "
             "clipped range 1; split: subject id %% 5 in {0,1,2} train, 3 val, 4 test");
}

/* Read every file of paths that is not a byte-for-byte duplicate of an earlier one (those go
 * to *dropped). */
static core_err read_wisdm_files(char **paths, size_t np, struct wrow **rows, size_t *nr,
                                 char ***dropped, size_t *n_dropped, char *eb, size_t ebn)
{
    long *dup = core_xmalloc(np * sizeof(*dup));
    size_t rcap = 0;
    core_err rc = eval_find_duplicates(np, (const char *const *)paths, dup, eb, ebn);

    for (size_t i = 0; i < np && rc == CORE_OK; i++) {
        if (dup[i] >= 0) {
            *dropped = core_xrealloc(*dropped, (*n_dropped + 1) * sizeof(char *));
            (*dropped)[(*n_dropped)++] = core_xstrdup(paths[i]);
            continue;
        }
        rc = parse_arff(paths[i], rows, nr, &rcap, eb, ebn);
    }
    free(dup);
    return rc;
}

core_err eval_load_wisdm(const char *dir, const char *sensor, struct eval_data *ds, char ***dropped,
                         size_t *n_dropped, char *eb, size_t ebn)
{
    char sub[4096], suffix[64];
    char **paths = NULL;
    size_t np = 0, nr = 0;
    struct wrow *rows = NULL;
    core_err rc;

    memset(ds, 0, sizeof(*ds));
    *dropped = NULL;
    *n_dropped = 0;
    if (strcmp(sensor, "accel") != 0 && strcmp(sensor, "gyro") != 0) {
        snprintf(eb, ebn, "wisdm: sensor must be accel or gyro");
        return CORE_ECONFIG;
    }
    snprintf(sub, sizeof(sub), "%s/arff_files/phone/%s", dir, sensor);
    snprintf(suffix, sizeof(suffix), "_%s_phone.arff", sensor);
    rc = list_arff(sub, suffix, &paths, &np, eb, ebn);
    if (rc == CORE_OK)
        rc = read_wisdm_files(paths, np, &rows, &nr, dropped, n_dropped, eb, ebn);
    if (rc == CORE_OK && nr < 10) {
        snprintf(eb, ebn, "wisdm: only %zu rows", nr);
        rc = CORE_EPARSE;
    }
    if (rc == CORE_OK) {
        eval_data_alloc(ds, nr, W_NODES);
        snprintf(ds->name, sizeof(ds->name), strcmp(sensor, "accel") == 0 ? "wisdm" : "wisdm-gyro");
        fill_wisdm_rows(rows, nr, ds);
        scale_wisdm_nodes(rows, nr, ds);
        describe_wisdm(ds);
        /* order rows of each split by (subject, file row) - already in file order */
    }
    for (size_t i = 0; i < np; i++)
        free(paths[i]);
    free(paths);
    free(rows);
    if (rc != CORE_OK)
        eval_data_free(ds);
    return rc;
}
