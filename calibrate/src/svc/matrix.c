/* matrix.c - calibration matrix loaders (CSV, UCI Occupancy); see cal/matrix.h. */
#include "cal/matrix.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cal/theta.h"
#include "core/lines.h"
#include "core/mem.h"
#include "core/timefmt.h"

#define MAX_FIELDS (CAL_MAX_NODES + 8)

void cal_matrix_free(struct cal_matrix *mx)
{
    if (!mx)
        return;
    for (size_t j = 0; mx->names && j < mx->m; j++)
        free(mx->names[j]);
    for (size_t c = 0; mx->class_names && c < mx->n_classes; c++)
        free(mx->class_names[c]);
    free(mx->names);
    free(mx->class_names);
    free(mx->x);
    free(mx->labels);
    free(mx->ts);
    free(mx);
}

void cal_matrix_set_ts(struct cal_matrix *mx, const int64_t *ts)
{
    free(mx->ts);
    mx->ts = core_xmalloc(mx->n * sizeof(int64_t));
    memcpy(mx->ts, ts, mx->n * sizeof(int64_t));
}

core_err cal_matrix_from_arrays(size_t n, size_t m, const double *x, const char *const *names,
                                const int *labels, size_t n_classes, struct cal_matrix **out)
{
    struct cal_matrix *mx;
    *out = NULL;
    if (n == 0 || m == 0 || (labels && n_classes == 0))
        return CORE_EINVAL;
    if (m > CAL_MAX_NODES || n > CAL_MAX_ROWS || n * m > CAL_MAX_CELLS)
        return CORE_ETOOBIG;
    mx = core_xcalloc(1, sizeof(*mx));
    mx->n = n;
    mx->m = m;
    mx->x = core_xmalloc(n * m * sizeof(double));
    memcpy(mx->x, x, n * m * sizeof(double));
    mx->names = core_xcalloc(m, sizeof(char *));
    for (size_t j = 0; j < m; j++)
        mx->names[j] = core_xstrdup(names[j]);
    if (labels) {
        mx->labels = core_xmalloc(n * sizeof(int));
        memcpy(mx->labels, labels, n * sizeof(int));
        mx->n_classes = n_classes;
    }
    *out = mx;
    return CORE_OK;
}

/* Split line in place on commas; strips CR/LF, surrounding blanks and one pair of quotes. */
static size_t split_fields(char *line, char **f, size_t cap)
{
    size_t n = 0;
    char *p = line;
    line[strcspn(line, "\r\n")] = '\0';
    for (;;) {
        char *end = strchr(p, ','), *s = p, *e;
        if (end)
            *end = '\0';
        while (*s == ' ' || *s == '\t')
            s++;
        e = s + strlen(s);
        while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
            *--e = '\0';
        if (e - s >= 2 && s[0] == '"' && e[-1] == '"') {
            e[-1] = '\0';
            s++;
        }
        if (n == cap)
            return cap + 1;
        f[n++] = s;
        if (!end)
            break;
        p = end + 1;
    }
    return n;
}

/* Parser state shared by both formats. */
struct loader {
    size_t m, n, cap_rows, max_rows;
    int *col_of_node; /* header column index per node */
    int label_col;    /* -1: none */
    int ts_col;       /* -1: none */
    int skip_lead;    /* data rows carry one extra leading field (occupancy row id) */
    size_t n_header;
    double *x;
    int *labels;
    int64_t *ts;
    char *ts_name; /* header name of the timestamp column */
    char **class_names;
    size_t n_classes;
    char **names;
};

static const char *const occ_cols[] = {"Temperature", "Humidity", "Light", "CO2", "HumidityRatio"};
static const char *const occ_nodes[] = {"temperature", "humidity", "light", "co2",
                                        "humidity_ratio"};

/* The occupancy header: its five sensor columns in a fixed order, "Occupancy" as label and
 * "date" as timestamp. */
static core_err setup_occupancy_header(struct loader *L, char **f, size_t nf, char *eb, size_t ebn)
{
    for (size_t c = 0; c < 5; c++) {
        size_t h = 0;
        while (h < nf && strcasecmp(f[h], occ_cols[c]) != 0)
            h++;
        if (h == nf) {
            snprintf(eb, ebn, "line 1: occupancy header lacks column \"%s\"", occ_cols[c]);
            return CORE_EPARSE;
        }
        L->col_of_node[L->m] = (int)h;
        L->names[L->m++] = core_xstrdup(occ_nodes[c]);
    }
    for (size_t h = 0; h < nf; h++)
        if (strcasecmp(f[h], "Occupancy") == 0)
            L->label_col = (int)h;
        else if (strcasecmp(f[h], "date") == 0)
            L->ts_col = (int)h;
    return CORE_OK;
}

/* A generic header: every column other than the label and timestamp ones is a node, with a
 * non-empty, unique name. */
static core_err setup_generic_header(struct loader *L, char **f, size_t nf,
                                     const char *label_column, const char *ts_column, char *eb,
                                     size_t ebn)
{
    for (size_t h = 0; h < nf; h++) {
        if (!f[h][0] || strlen(f[h]) >= CAL_MAX_NAME) {
            snprintf(eb, ebn, "line 1 column %zu: empty or too long node name", h + 1);
            return CORE_EPARSE;
        }
        if (label_column && strcmp(f[h], label_column) == 0) {
            L->label_col = (int)h;
            continue;
        }
        if (ts_column && strcmp(f[h], ts_column) == 0) {
            L->ts_col = (int)h;
            continue;
        }
        for (size_t o = 0; o < L->m; o++) {
            if (strcmp(L->names[o], f[h]) == 0) {
                snprintf(eb, ebn, "line 1 column %zu: duplicate node name \"%s\"", h + 1, f[h]);
                return CORE_EPARSE;
            }
        }
        L->col_of_node[L->m] = (int)h;
        L->names[L->m++] = core_xstrdup(f[h]);
    }
    if (L->m == 0) {
        snprintf(eb, ebn, "line 1: no node columns");
        return CORE_EPARSE;
    }
    return CORE_OK;
}

/* Map the header fields f[0..nf) to node, label and timestamp columns. */
static core_err setup_header(struct loader *L, char **f, size_t nf, enum cal_format fmt,
                             const char *label_column, const char *ts_column, char *eb, size_t ebn)
{
    L->n_header = nf;
    L->label_col = -1;
    L->ts_col = -1;
    L->col_of_node = core_xcalloc(nf, sizeof(int));
    L->names = core_xcalloc(nf, sizeof(char *));
    if (fmt == CAL_FORMAT_OCCUPANCY)
        return setup_occupancy_header(L, f, nf, eb, ebn);
    return setup_generic_header(L, f, nf, label_column, ts_column, eb, ebn);
}

static int label_id(struct loader *L, const char *s)
{
    for (size_t c = 0; c < L->n_classes; c++)
        if (strcmp(L->class_names[c], s) == 0)
            return (int)c;
    if (L->n_classes >= 64 || strlen(s) >= CAL_MAX_NAME)
        return -1;
    L->class_names = core_xrealloc(L->class_names, (L->n_classes + 1) * sizeof(char *));
    L->class_names[L->n_classes] = core_xstrdup(s);
    return (int)L->n_classes++;
}

static core_err add_row(struct loader *L, char **f, size_t nf, size_t line, char *eb, size_t ebn)
{
    size_t off = (size_t)L->skip_lead;
    const char *tcell;
    if (nf != L->n_header + off) {
        snprintf(eb, ebn, "line %zu: %zu fields, expected %zu", line, nf, L->n_header + off);
        return CORE_EPARSE;
    }
    tcell = L->ts_col >= 0 ? f[(size_t)L->ts_col + off] : NULL;
    if (L->n == L->max_rows || (L->n + 1) * L->m > CAL_MAX_CELLS) {
        snprintf(eb, ebn, "line %zu: more than %zu rows (cap)", line, L->max_rows);
        return CORE_ETOOBIG;
    }
    if (L->n == L->cap_rows) {
        L->cap_rows = L->cap_rows ? 2 * L->cap_rows : 1024;
        L->x = core_xrealloc(L->x, L->cap_rows * L->m * sizeof(double));
        L->labels = core_xrealloc(L->labels, L->cap_rows * sizeof(int));
        if (L->ts_col >= 0)
            L->ts = core_xrealloc(L->ts, L->cap_rows * sizeof(int64_t));
    }
    if (tcell && core_time_parse_text(tcell, strlen(tcell), &L->ts[L->n]) != CORE_OK) {
        snprintf(eb, ebn,
                 "line %zu column \"%s\": not a timestamp (integer ms since the epoch or "
                 "RFC 3339, see core/timefmt.h)",
                 line, L->ts_name);
        return CORE_EPARSE;
    }
    for (size_t j = 0; j < L->m; j++) {
        const char *s = f[(size_t)L->col_of_node[j] + off];
        char *end = NULL;
        double v;
        errno = 0;
        v = strtod(s, &end);
        if (!s[0] || *end != '\0' || errno == ERANGE || !isfinite(v)) {
            snprintf(eb, ebn,
                     "line %zu column \"%s\": not a finite number (missing values are not "
                     "supported in the calibration matrix)",
                     line, L->names[j]);
            return CORE_EPARSE;
        }
        L->x[L->n * L->m + j] = v;
    }
    if (L->label_col >= 0) {
        int id = label_id(L, f[(size_t)L->label_col + off]);
        if (id < 0) {
            snprintf(eb, ebn, "line %zu: more than 64 label classes or label too long", line);
            return CORE_ETOOBIG;
        }
        L->labels[L->n] = id;
    }
    L->n++;
    return CORE_OK;
}

static void loader_cleanup(struct loader *L)
{
    for (size_t j = 0; L->names && j < L->n_header; j++)
        free(L->names[j]);
    for (size_t c = 0; c < L->n_classes; c++)
        free(L->class_names[c]);
    free(L->names);
    free(L->class_names);
    free(L->col_of_node);
    free(L->x);
    free(L->labels);
    free(L->ts);
    free(L->ts_name);
}

static struct cal_matrix *loader_take(struct loader *L)
{
    struct cal_matrix *mx = core_xcalloc(1, sizeof(*mx));
    mx->n = L->n;
    mx->m = L->m;
    mx->x = L->x;
    mx->names = L->names;
    if (L->label_col >= 0) {
        mx->labels = L->labels;
        mx->n_classes = L->n_classes;
        mx->class_names = L->class_names;
        L->labels = NULL;
        L->class_names = NULL;
        L->n_classes = 0;
    }
    mx->ts = L->ts;
    L->ts = NULL;
    L->x = NULL;
    L->names = NULL;
    return mx;
}

core_err cal_matrix_load(const char *path, enum cal_format fmt, const char *label_column,
                         size_t max_rows, struct cal_matrix **out, char *eb, size_t ebn)
{
    return cal_matrix_load_ts(path, fmt, label_column, NULL, max_rows, out, eb, ebn);
}

/* What a whole file must give: nodes within the cap, 2 rows, 2 Occupancy classes. */
static core_err check_loaded(const struct loader *L, const char *path, enum cal_format fmt,
                             char *eb, size_t ebn)
{
    if (L->m > CAL_MAX_NODES) {
        snprintf(eb, ebn, "%s: more than %u nodes", path, CAL_MAX_NODES);
        return CORE_ETOOBIG;
    }
    if (L->n < 2) {
        snprintf(eb, ebn, "%s: fewer than 2 data rows", path);
        return CORE_EINVAL;
    }
    if (L->label_col >= 0 && L->n_classes < 2 && fmt == CAL_FORMAT_OCCUPANCY) {
        snprintf(eb, ebn, "%s: Occupancy column has fewer than 2 classes", path);
        return CORE_EINVAL;
    }
    return CORE_OK;
}

core_err cal_matrix_load_ts(const char *path, enum cal_format fmt, const char *label_column,
                            const char *ts_column, size_t max_rows, struct cal_matrix **out,
                            char *eb, size_t ebn)
{
    struct loader L = {0};
    char *line, **f = core_xmalloc((MAX_FIELDS + 1) * sizeof(char *));
    size_t len, lineno = 0;
    struct core_lines *ln = NULL;
    core_err rc = CORE_OK;

    *out = NULL;
    L.max_rows = max_rows < CAL_MAX_ROWS ? max_rows : CAL_MAX_ROWS;
    /* caps count the "\n": CAL_MAX_LINE bytes with it */
    if (strcmp(path, "-") == 0) {
        ln = core_lines_wrap(stdin, "-", CAL_MAX_LINE - 1); /* e.g. `... | gcdp calibrate -i -` */
    } else if (core_lines_open(path, CAL_MAX_LINE - 1, &ln, eb, ebn) != CORE_OK) {
        snprintf(eb, ebn, "%s: %s", path, strerror(errno));
        rc = CORE_EIO;
        goto out;
    }
    while ((rc = core_lines_next(ln, &line, &len, eb, ebn)) != CORE_ENOTFOUND) {
        size_t nf;
        lineno = (size_t)core_lines_lineno(ln);
        if (rc == CORE_ETOOBIG)
            snprintf(eb, ebn, "%s line %zu: longer than %u bytes", path, lineno, CAL_MAX_LINE);
        if (rc != CORE_OK)
            goto out; /* also a NUL byte (CORE_EPARSE) and read errors (CORE_EIO) */
        if (line[strspn(line, " \t\r\n")] == '\0')
            continue; /* blank line */
        nf = split_fields(line, f, MAX_FIELDS);
        if (nf > MAX_FIELDS) {
            snprintf(eb, ebn, "%s line %zu: more than %u columns", path, lineno, MAX_FIELDS);
            rc = CORE_ETOOBIG;
            goto out;
        }
        if (!L.col_of_node) {
            rc = setup_header(&L, f, nf, fmt, label_column, ts_column, eb, ebn);
            if (rc == CORE_OK && L.ts_col >= 0)
                L.ts_name = core_xstrdup(f[L.ts_col]);
            L.skip_lead = fmt == CAL_FORMAT_OCCUPANCY ? -1 : 0; /* decided on the first row */
        } else {
            if (L.skip_lead < 0)
                L.skip_lead = nf == L.n_header + 1 ? 1 : 0;
            rc = add_row(&L, f, nf, lineno, eb, ebn);
        }
        if (rc != CORE_OK)
            goto out;
    }
    rc = check_loaded(&L, path, fmt, eb, ebn);
    if (rc == CORE_OK)
        *out = loader_take(&L);
out:
    core_lines_free(ln);
    free(f);
    loader_cleanup(&L);
    return rc;
}
