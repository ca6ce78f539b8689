/* test_csv.c - participant CSV reader: good files, and errors naming file and line. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "core/pool.h"
#include "lrn/csvio.h"
#include "test_support.h"

static char *dir;

static void setup(void)
{
    dir = ts_tmpdir();
}

static void teardown(void)
{
    ts_rmtree(dir);
    free(dir);
}

static char *put(const char *name, const char *text)
{
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    snprintf(p, strlen(dir) + strlen(name) + 2, "%s/%s", dir, name);
    ts_write_file(p, text);
    return p;
}

TestSuite(csv, .init = setup, .fini = teardown);

Test(csv, reads_header_and_values)
{
    char *p = put("a.csv", "x0,x1,x2\n1,2,3\n-4.5, 5e-1 ,6\r\n");
    struct lrn_csv *c = NULL;
    char eb[256] = "";
    cr_assert_eq(lrn_csv_read(p, 0, 1, &c, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(c->n, 2);
    cr_assert_eq(c->d, 3);
    cr_assert(c->has_header);
    cr_assert_str_eq(c->names[2], "x2");
    cr_assert_float_eq(c->x[3], -4.5, 0);
    cr_assert_float_eq(c->x[4], 0.5, 0);
    lrn_csv_free(c);
    free(p);
}

Test(csv, reads_headerless_file_and_names_columns)
{
    char *p = put("b.csv", "1,2\n3,4\n5,6\n");
    struct lrn_csv *c = NULL;
    cr_assert_eq(lrn_csv_read(p, 2, 3, &c, NULL, 0), CORE_OK);
    cr_assert_eq(c->n, 3);
    cr_assert_not(c->has_header);
    cr_assert_str_eq(c->names[1], "x1");
    cr_assert_float_eq(c->x[5], 6.0, 0);
    lrn_csv_free(c);
    free(p);
}

Test(csv, ragged_row_names_file_and_line)
{
    char *p = put("ragged.csv", "a,b,c\n1,2,3\n4,5\n");
    struct lrn_csv *c = NULL;
    char eb[256] = "";
    cr_assert_eq(lrn_csv_read(p, 0, 1, &c, eb, sizeof(eb)), CORE_EPARSE);
    cr_assert_null(c);
    cr_assert(strstr(eb, "ragged.csv:3:"), "%s", eb);
    cr_assert(strstr(eb, "expected 3 fields, got 2"), "%s", eb);
    free(p);
}

Test(csv, nan_and_text_values_name_line_and_field)
{
    char *p = put("nan.csv", "1,2\n3,nan\n"), *q = put("txt.csv", "1,2\n3,4\n5,abc\n");
    struct lrn_csv *c = NULL;
    char eb[256] = "";
    cr_assert_eq(lrn_csv_read(p, 0, 1, &c, eb, sizeof(eb)), CORE_EPARSE);
    cr_assert(strstr(eb, "nan.csv:2: field 2"), "%s", eb);
    cr_assert_eq(lrn_csv_read(q, 0, 1, &c, eb, sizeof(eb)), CORE_EPARSE);
    cr_assert(strstr(eb, "txt.csv:3: field 2"), "%s", eb);
    cr_assert(strstr(eb, "abc"), "%s", eb);
    free(p);
    free(q);
}

Test(csv, too_few_rows_and_width_mismatch_are_errors)
{
    char *p = put("few.csv", "x,y\n1,2\n");
    struct lrn_csv *c = NULL;
    char eb[256] = "";
    cr_assert_eq(lrn_csv_read(p, 0, 10, &c, eb, sizeof(eb)), CORE_EINVAL);
    cr_assert(strstr(eb, "too few rows: 1 data rows, need at least 10"), "%s", eb);
    cr_assert_eq(lrn_csv_read(p, 3, 1, &c, eb, sizeof(eb)), CORE_EINVAL);
    cr_assert(strstr(eb, "few.csv:1: 2 columns, expected 3"), "%s", eb);
    free(p);
}

Test(csv, empty_and_missing_files_are_errors)
{
    char *p = put("empty.csv", "");
    struct lrn_csv *c = NULL;
    char eb[256] = "", missing[512];
    cr_assert_eq(lrn_csv_read(p, 0, 1, &c, eb, sizeof(eb)), CORE_EPARSE);
    cr_assert(strstr(eb, "empty file"), "%s", eb);
    snprintf(missing, sizeof(missing), "%s/none.csv", dir);
    cr_assert_eq(lrn_csv_read(missing, 0, 1, &c, eb, sizeof(eb)), CORE_EIO);
    cr_assert(strstr(eb, "none.csv: cannot open"), "%s", eb);
    free(p);
}

Test(csv, write_then_read_round_trips_exactly)
{
    double x[6] = {0.1, -1e-300, 3.141592653589793, 1e300, -0.0, 7};
    const char *names[3] = {"a", "b", "c"};
    char path[512];
    struct lrn_csv *c = NULL;
    snprintf(path, sizeof(path), "%s/rt.csv", dir);
    cr_assert_eq(lrn_csv_write(path, x, 2, 3, names, NULL, 0), CORE_OK);
    cr_assert_eq(lrn_csv_read(path, 3, 2, &c, NULL, 0), CORE_OK);
    for (int k = 0; k < 6; k++)
        cr_assert_eq(c->x[k], x[k]);
    cr_assert_str_eq(c->names[0], "a");
    lrn_csv_free(c);
}

/* ---- the fast row parser against strtod (issue 9) ---- */

/* Every value of the file at path, parsed by strtod on its field text (header skipped). */
static size_t strtod_values(const char *path, double *v, size_t cap)
{
    FILE *f = fopen(path, "r");
    char line[4096];
    size_t k = 0;
    int first = 1;

    cr_assert_not_null(f);
    while (fgets(line, sizeof(line), f)) {
        char *p = line;
        if (first && !strchr("+-.0123456789 ", line[0])) {
            first = 0;
            continue;
        }
        first = 0;
        for (;;) {
            char *comma = strchr(p, ','), *end;
            if (comma)
                *comma = '\0';
            cr_assert_lt(k, cap);
            v[k++] = strtod(p, &end);
            if (!comma)
                break;
            p = comma + 1;
        }
    }
    fclose(f);
    return k;
}

static void expect_strtod_bits(const char *path, size_t d)
{
    struct lrn_csv *c = NULL;
    char eb[256] = "";
    static double v[200000];
    size_t k;

    cr_assert_eq(lrn_csv_read(path, d, 1, &c, eb, sizeof(eb)), CORE_OK, "%s", eb);
    k = strtod_values(path, v, sizeof(v) / sizeof(v[0]));
    cr_assert_eq(k, c->n * c->d);
    for (size_t x = 0; x < k; x++)
        cr_assert_eq(memcmp(&v[x], &c->x[x], sizeof(double)), 0, "%s value %zu: %a vs %a", path, x,
                     v[x], c->x[x]);
    lrn_csv_free(c);
}

Test(csv, values_are_strtods_bits_on_data_files_and_unusual_spellings)
{
    enum { N = 4000, D = 20 };
    double *x = malloc(N * D * sizeof(double));
    char *p = malloc(strlen(dir) + 16), eb[256] = "";
    uint64_t s = 12345;

    for (size_t i = 0; i < (size_t)N * D; i++) { /* data-like values, several magnitudes */
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        x[i] = ((double)(s >> 11) / 9007199254740992.0 - 0.5) * 6.0 *
               (i % 5 == 0   ? 1e-3
                : i % 7 == 0 ? 1e4
                             : 1.0);
    }
    snprintf(p, strlen(dir) + 16, "%s/data.csv", dir);
    cr_assert_eq(lrn_csv_write(p, x, N, D, NULL, eb, sizeof(eb)), CORE_OK, "%s", eb);
    expect_strtod_bits(p, D);
    free(p);
    /* spellings the fast path takes and ones it hands to the strict path (both accepted):
     * blanks around fields, signs, no leading digit, exponents, 20+ digits, hex, \v, a
     * subnormal and an underflow to 0 (accepted as before: |v| <= 1 with ERANGE) */
    p = put("odd.csv", "a,b,c\n 1.5 ,\t-2e3\t,+.25\n0x1p-3,1.00000000000000000000001,\v7\n"
                       "-0,4.9e-324,1e-400\n123456789012345678901,0.1e1,-.5E-2\n");
    expect_strtod_bits(p, 3);
    free(p);
    free(x);
}

Test(csv, reading_many_files_on_threads_answers_as_the_sequential_loop)
{
    struct core_pool *pool = NULL;
    struct lrn_csv *out[3] = {NULL, NULL, NULL};
    char *ok = put("ok.csv", "a,b\n1,2\n3,4\n"), *ok2 = put("ok2.csv", "1,2\n5,6\n");
    char *wide = put("wide.csv", "a,b,c\n1,2,3\n4,5,oops\n"), *bad = put("bad.csv", "1,2\n3,x\n");
    const char *good[3] = {ok, ok2, ok}, *mixed[3] = {ok, wide, bad}, *late[3] = {ok, ok2, bad};
    char eb[256] = "";

    cr_assert_eq(core_pool_new(2, &pool), CORE_OK);
    for (int t = 0; t < 2; t++) { /* sequential, then on two threads */
        struct core_pool *use = t ? pool : NULL;
        cr_assert_eq(lrn_csv_read_all(good, 3, 2, use, out, eb, sizeof(eb)), CORE_OK, "%s", eb);
        cr_assert_eq(out[1]->x[2], 5.0);
        cr_assert_eq(out[2]->n, 2);
        for (int i = 0; i < 3; i++)
            lrn_csv_free(out[i]);
        /* the first failing file in order, with the sequential message (width before the
         * bad value of that same file) */
        cr_assert_eq(lrn_csv_read_all(mixed, 3, 2, use, out, eb, sizeof(eb)), CORE_EINVAL);
        cr_assert(strstr(eb, "wide.csv:1: 3 columns, expected 2"), "%s", eb);
        cr_assert_null(out[0]);
        cr_assert_eq(lrn_csv_read_all(late, 3, 2, use, out, eb, sizeof(eb)), CORE_EPARSE);
        cr_assert(strstr(eb, "bad.csv:2: field 2"), "%s", eb);
        cr_assert_null(out[0]);
        cr_assert_null(out[1]);
    }
    core_pool_free(pool);
    free(ok);
    free(ok2);
    free(wide);
    free(bad);
}
