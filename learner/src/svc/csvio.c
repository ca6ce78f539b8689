/* csvio.c - strict CSV reader/writer for participant data (errors name file and line).
 *
 * Rows are read by core_lines (the cap holds before allocation) and parsed by a fast path
 * that walks the line once with core_strtod (strtod's bits, core/numparse.h). A row the fast
 * path does not take as is (ragged, a non-number, NaN/Inf, a range error, unusual white
 * space) is parsed again by the strict path below, which decides and names the error: the
 * fast path only ever accepts rows the strict path accepts, with the same values.
 */
#include "lrn/csvio.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "core/lines.h"
#include "core/mem.h"
#include "core/numparse.h"
#include "core/pool.h"

void lrn_csv_free(struct lrn_csv *csv)
{
    if (!csv)
        return;
    if (csv->names)
        for (size_t j = 0; j < csv->d; j++)
            free(csv->names[j]);
    free(csv->names);
    free(csv->x);
    free(csv);
}

static void chomp(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = '\0';
}

static size_t count_fields(const char *s)
{
    size_t k = 1;
    for (; *s; s++)
        k += (*s == ',');
    return k;
}

static char *trim(char *s)
{
    char *e;
    while (*s == ' ' || *s == '\t')
        s++;
    e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
        *--e = '\0';
    return s;
}

/* Parse one finite number; 0 on success. */
static int parse_num(char *tok, double *v)
{
    char *end;
    tok = trim(tok);
    if (*tok == '\0')
        return -1;
    errno = 0;
    *v = core_strtod(tok, &end);
    if (*end != '\0' || !isfinite(*v) || (errno == ERANGE && fabs(*v) > 1.0))
        return -1;
    return 0;
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* The fast path: d finite numbers, each field wholly consumed (spaces and tabs around it
 * allowed, as trim() allows), separated by ',', nothing after the last. Returns 0, or -1
 * when the strict path must decide (the line is not modified). */
static int fast_row(const char *s, size_t d, double *row)
{
    errno = 0;
    for (size_t j = 0; j < d; j++) {
        char *end;
        while (is_blank(*s))
            s++;
        row[j] = core_strtod(s, &end);
        if (end == s || !isfinite(row[j]))
            return -1;
        s = end;
        while (is_blank(*s))
            s++;
        if (*s != (j + 1 < d ? ',' : '\0'))
            return -1;
        s++;
    }
    return errno == 0 ? 0 : -1; /* a range error: the strict path applies its rule */
}

/* Split line into d fields (already counted) and parse; names the field on error. */
static core_err parse_row(char *line, size_t d, double *row, const char *path, size_t lineno,
                          char *eb, size_t ebn)
{
    char *p = line;
    for (size_t j = 0; j < d; j++) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (parse_num(p, &row[j]) != 0) {
            if (eb)
                snprintf(eb, ebn, "%s:%zu: field %zu is not a finite number: '%.40s'", path, lineno,
                         j + 1, trim(p));
            return CORE_EPARSE;
        }
        p = comma ? comma + 1 : p + strlen(p);
    }
    return CORE_OK;
}

static int looks_numeric(const char *line)
{
    char buf[128], *end;
    size_t k = strcspn(line, ",");
    if (k >= sizeof(buf))
        return 0;
    memcpy(buf, line, k);
    buf[k] = '\0';
    {
        char *t = trim(buf);
        (void)strtod(t, &end);
        return end != t && *trim(end) == '\0';
    }
}

static void set_names(struct lrn_csv *c, char *header)
{
    char *p = header;
    c->names = core_xcalloc(c->d, sizeof(*c->names));
    for (size_t j = 0; j < c->d; j++) {
        char nb[32];
        if (header) {
            char *comma = strchr(p, ',');
            if (comma)
                *comma = '\0';
            c->names[j] = core_xstrdup(trim(p));
            p = comma ? comma + 1 : p + strlen(p);
        } else {
            snprintf(nb, sizeof(nb), "x%zu", j);
            c->names[j] = core_xstrdup(nb);
        }
    }
}

#define HUGE_BYTES      ((size_t)2 << 20) /* x86-64 transparent huge page */
#define HINT_MAX_VALUES ((size_t)8 << 20) /* up-front reservation cap: 64 MiB of values */

/* Grow the value buffer to hold at least need doubles (the caller checks the caps). The
 * first allocation takes hint values when that is more: see values_hint(). */
static void reserve(struct lrn_csv *c, size_t *cap, size_t need, size_t hint)
{
    if (need <= *cap)
        return;
    if (!c->x && hint >= need && hint * sizeof(double) >= HUGE_BYTES) {
#if defined(MADV_HUGEPAGE)
        size_t bytes = (hint * sizeof(double) + HUGE_BYTES - 1) / HUGE_BYTES * HUGE_BYTES;
        c->x = aligned_alloc(HUGE_BYTES, bytes);
        if (c->x) {
            (void)madvise(c->x, bytes, MADV_HUGEPAGE); /* a hint: failure changes nothing */
            *cap = bytes / sizeof(double);
            return;
        }
#endif
    }
    while (*cap < need)
        *cap = *cap ? *cap * 2 : 1024;
    c->x = core_xrealloc(c->x, *cap * sizeof(double));
}

/* An upper bound of the values in the file at path (every value takes at least one digit
 * and one separator), at most HINT_MAX_VALUES; 0 if unknown. Reserved up front and marked
 * for transparent huge pages, the buffer is mapped by a few 2 MiB faults instead of one
 * 4 KiB fault per 512 values (issue 9: ~1600 faults of ~8 µs each on this VM for the 8
 * files of the d = 20 benchmark); untouched reserved pages are never mapped. */
static size_t values_hint(const char *path)
{
    struct stat st;

    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0)
        return 0;
    if ((uint64_t)st.st_size / 2 + 1 > HINT_MAX_VALUES)
        return HINT_MAX_VALUES;
    return (size_t)st.st_size / 2 + 1;
}

static core_err check_width(const char *path, size_t lineno, size_t k, size_t d, char *eb,
                            size_t ebn)
{
    if (k == d)
        return CORE_OK;
    if (eb)
        snprintf(eb, ebn, "%s:%zu: ragged row: expected %zu fields, got %zu", path, lineno, d, k);
    return CORE_EPARSE;
}

/* Next line of ln (chomped) into *line; CORE_ENOTFOUND at the end. Errors name path:line. */
static core_err next_line(struct core_lines *ln, char **line, char *eb, size_t ebn)
{
    char why[256];
    size_t n;
    core_err rc = core_lines_next(ln, line, &n, why, sizeof(why));

    if (rc == CORE_OK)
        chomp(*line);
    else if (rc == CORE_ETOOBIG && eb)
        snprintf(eb, ebn, "%s:%llu: input exceeds the reader's caps", core_lines_path(ln),
                 (unsigned long long)core_lines_lineno(ln));
    else if (rc != CORE_ENOTFOUND && eb)
        snprintf(eb, ebn, "%s", why);
    return rc;
}

static core_err read_first(struct core_lines *ln, size_t expect_d, struct lrn_csv *c, char **line,
                           char *eb, size_t ebn)
{
    const char *path = core_lines_path(ln);
    core_err rc = next_line(ln, line, eb, ebn);

    if (rc == CORE_ENOTFOUND) {
        if (eb)
            snprintf(eb, ebn, "%s: empty file (no header and no data)", path);
        return CORE_EPARSE;
    }
    if (rc != CORE_OK)
        return rc;
    c->d = count_fields(*line);
    if (c->d > LRN_CSV_MAX_D) {
        if (eb)
            snprintf(eb, ebn, "%s:1: %zu columns exceeds the cap %d", path, c->d, LRN_CSV_MAX_D);
        return CORE_ETOOBIG;
    }
    if (expect_d && c->d != expect_d) {
        if (eb)
            snprintf(eb, ebn, "%s:1: %zu columns, expected %zu (same d in every participant)", path,
                     c->d, expect_d);
        return CORE_EINVAL;
    }
    c->has_header = !looks_numeric(*line);
    set_names(c, c->has_header ? *line : NULL);
    return CORE_OK;
}

static core_err read_rows(struct core_lines *ln, struct lrn_csv *c, char **line, char *eb,
                          size_t ebn)
{
    const char *path = core_lines_path(ln);
    size_t xcap = 0, lineno, hint = values_hint(path);
    core_err rc = CORE_OK;
    int pending = !c->has_header; /* the first line is data already in *line */

    for (;;) {
        if (!pending && (rc = next_line(ln, line, eb, ebn)) != CORE_OK)
            return rc == CORE_ENOTFOUND ? CORE_OK : rc;
        pending = 0;
        lineno = (size_t)core_lines_lineno(ln);
        if (c->n >= LRN_CSV_MAX_ROWS || (c->n + 1) * c->d > LRN_CSV_MAX_CELLS) {
            if (eb)
                snprintf(eb, ebn, "%s:%zu: input exceeds the reader's caps", path, lineno);
            return CORE_ETOOBIG;
        }
        reserve(c, &xcap, (c->n + 1) * c->d, hint);
        if (fast_row(*line, c->d, c->x + c->n * c->d) == 0) {
            c->n++;
            continue;
        }
        rc = check_width(path, lineno, count_fields(*line), c->d, eb, ebn);
        if (rc != CORE_OK)
            return rc;
        rc = parse_row(*line, c->d, c->x + c->n * c->d, path, lineno, eb, ebn);
        if (rc != CORE_OK)
            return rc;
        c->n++;
    }
}

core_err lrn_csv_read(const char *path, size_t expect_d, size_t min_rows, struct lrn_csv **out,
                      char *eb, size_t ebn)
{
    struct core_lines *ln = NULL;
    char *line, why[256];
    struct lrn_csv *c = NULL;
    core_err rc;

    *out = NULL;
    if (core_lines_open(path, LRN_CSV_MAX_LINE - 1, &ln, why, sizeof(why)) != CORE_OK) {
        if (eb)
            snprintf(eb, ebn, "%s: cannot open: %s", path, strerror(errno));
        return CORE_EIO;
    }
    c = core_xcalloc(1, sizeof(*c));
    rc = read_first(ln, expect_d, c, &line, eb, ebn);
    if (rc != CORE_OK)
        goto out;
    rc = read_rows(ln, c, &line, eb, ebn);
    if (rc != CORE_OK)
        goto out;
    if (c->n < min_rows || c->n == 0) {
        if (eb)
            snprintf(eb, ebn, "%s:%llu: too few rows: %zu data rows, need at least %zu", path,
                     (unsigned long long)core_lines_lineno(ln), c->n, min_rows ? min_rows : 1);
        rc = CORE_EINVAL;
        goto out;
    }
    *out = c;
    c = NULL;
out:
    core_lines_free(ln);
    lrn_csv_free(c);
    return rc;
}

/* ---- several files at once ---- */

struct read_job {
    const char *const *paths;
    size_t min_rows;
    struct lrn_csv **out;
    core_err *rc;
};

static void read_one(void *arg, size_t i)
{
    struct read_job *j = arg;
    j->rc[i] = lrn_csv_read(j->paths[i], 0, j->min_rows, &j->out[i], NULL, 0);
}

core_err lrn_csv_read_all(const char *const *paths, size_t n, size_t min_rows,
                          struct core_pool *pool, struct lrn_csv **out, char *eb, size_t ebn)
{
    core_err *rc = core_xcalloc(n ? n : 1, sizeof(*rc)), ret = CORE_OK;
    struct read_job job = {paths, min_rows, out, rc};
    size_t bad = n;

    core_pool_run(pool, n, read_one, &job);
    /* The answer of the sequential loop: the first file in order that fails, with the
     * width of file 0 required of the others. */
    for (size_t i = 0; i < n && bad == n; i++)
        if (rc[i] != CORE_OK || (i > 0 && out[i]->d != out[0]->d))
            bad = i;
    if (bad < n) {
        /* read it again alone for the exact message (error path only) */
        lrn_csv_free(out[bad]);
        out[bad] = NULL;
        ret = lrn_csv_read(paths[bad], bad ? out[0]->d : 0, min_rows, &out[bad], eb, ebn);
        if (ret == CORE_OK) { /* cannot happen with unchanged files; never report OK */
            if (eb)
                snprintf(eb, ebn, "%s: changed while it was read", paths[bad]);
            ret = CORE_EIO;
        }
        for (size_t i = 0; i < n; i++) {
            lrn_csv_free(out[i]);
            out[i] = NULL;
        }
    }
    free(rc);
    return ret;
}

core_err lrn_csv_write(const char *path, const double *x, size_t n, size_t d,
                       const char *const *names, char *eb, size_t ebn)
{
    FILE *f = fopen(path, "w");
    core_err rc = CORE_OK;

    if (!f) {
        if (eb)
            snprintf(eb, ebn, "%s: cannot create: %s", path, strerror(errno));
        return CORE_EIO;
    }
    for (size_t j = 0; names && j < d; j++)
        fprintf(f, "%s%s", names[j], j + 1 < d ? "," : "\n");
    for (size_t r = 0; r < n; r++)
        for (size_t j = 0; j < d; j++)
            fprintf(f, "%.17g%s", x[r * d + j], j + 1 < d ? "," : "\n");
    if (ferror(f))
        rc = CORE_EIO;
    if (fclose(f) != 0)
        rc = CORE_EIO;
    if (rc != CORE_OK && eb)
        snprintf(eb, ebn, "%s: write failed: %s", path, strerror(errno));
    return rc;
}
