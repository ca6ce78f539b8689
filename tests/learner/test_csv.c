/* test_csv.c - participant CSV reader: good files, and errors naming file and line. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

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
