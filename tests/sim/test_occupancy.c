/* test_occupancy.c - UCI Occupancy CSV reader on the real files, error reporting, the
 * reading JSON a replay sends, and the bad-input corpus file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "core/timefmt.h"
#include "sim/encode.h"
#include "sim/occupancy.h"
#include "svc/replay_int.h"
#include "test_support.h"

struct expect {
    const char *file;
    unsigned long rows;
    uint64_t first_id, last_id;
    const char *first_date, *last_date;
    double first_temp, last_temp, last_co2, last_ratio;
    int quoted;
};

/* Values read off the files (head -2 / tail -1) and data/occupancy/README.md; the last row
 * of every file has Occupancy 1. */
static const struct expect files[] = {
    {"datatraining.txt", 8143, 1, 8143, "2015-02-04T17:51:00Z", "2015-02-10T09:33:00Z", 23.18, 21.1,
     821, 0.00561206354418701, 1},
    {"datatest.txt", 2665, 140, 2804, "2015-02-02T14:19:00Z", "2015-02-04T10:43:00Z", 23.7,
     24.4083333333333, 1124, 0.00486020770362199, 1},
    {"datatest2.txt", 9752, 1, 9752, "2015-02-11T14:48:00Z", "2015-02-18T09:19:00Z", 21.76, 21,
     1864, 0.00432073200293677, 0},
};

static void check_file(const struct expect *x)
{
    char path[512], eb[512], ts[32];
    struct sim_occ_reader *r = NULL;
    struct sim_occ_row row, first;

    memset(&first, 0, sizeof(first));
    memset(&row, 0, sizeof(row));
    unsigned long n = 0;
    int64_t prev = INT64_MIN;
    core_err rc;

    snprintf(path, sizeof(path), "%s/occupancy/%s", GCDP_DATA_DIR, x->file);
    cr_assert_eq(sim_occ_reader_open(path, &r, eb, sizeof(eb)), CORE_OK, "%s", eb);
    while ((rc = sim_occ_reader_next(r, &row, eb, sizeof(eb))) == CORE_OK) {
        if (n == 0)
            first = row;
        cr_assert_eq(row.date_quoted, x->quoted, "%s row %lu", x->file, n);
        cr_assert_gt(row.ts_ms, prev, "timestamps strictly increase");
        prev = row.ts_ms;
        n++;
    }
    cr_assert_eq(rc, CORE_ENOTFOUND, "%s", eb);
    cr_assert_eq(n, x->rows, "%s: %lu rows", x->file, n);
    cr_assert_eq(first.id, x->first_id);
    cr_assert_eq(row.id, x->last_id);
    core_time_format(first.ts_ms, CORE_TIME_SEC, ts, sizeof(ts));
    cr_assert_str_eq(ts, x->first_date);
    core_time_format(row.ts_ms, CORE_TIME_SEC, ts, sizeof(ts));
    cr_assert_str_eq(ts, x->last_date);
    cr_assert_float_eq(first.value[0], x->first_temp, 1e-12);
    cr_assert_float_eq(row.value[0], x->last_temp, 1e-12);
    cr_assert_float_eq(row.value[3], x->last_co2, 1e-12);
    cr_assert_float_eq(row.value[4], x->last_ratio, 1e-18);
    cr_assert_eq(row.occupancy, 1);
    sim_occ_reader_free(r);
}

Test(sim_occupancy, reads_all_three_files_with_both_date_quotings)
{
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        check_file(&files[i]);
}

Test(sim_occupancy, first_row_values_and_reading_json)
{
    char path[512], eb[512], buf[1024];
    struct sim_occ_reader *r = NULL;
    struct sim_occ_row row;
    snprintf(path, sizeof(path), "%s/occupancy/datatraining.txt", GCDP_DATA_DIR);
    cr_assert_eq(sim_occ_reader_open(path, &r, eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(sim_occ_reader_next(r, &row, eb, sizeof(eb)), CORE_OK);
    /* "1","2015-02-04 17:51:00",23.18,27.272,426,721.25,0.00479298817650529,1 */
    cr_assert_float_eq(row.value[1], 27.272, 1e-12);
    cr_assert_float_eq(row.value[2], 426.0, 1e-12);
    cr_assert_float_eq(row.value[3], 721.25, 1e-12);
    cr_assert_float_eq(row.value[4], 0.00479298817650529, 1e-18);
    cr_assert_eq(row.occupancy, 1);
    cr_assert_gt(sim_occ_row_json(&row, "occupancy", buf, sizeof(buf)), 0);
    cr_assert_str_eq(buf, "{\"schema\":\"gcdp.reading/1\",\"device\":\"occupancy\","
                          "\"ts\":\"2015-02-04T17:51:00Z\",\"readings\":{\"temperature\":23.18,"
                          "\"humidity\":27.272,\"light\":426,\"co2\":721.25,"
                          "\"humidity_ratio\":0.00479298817650529},\"seq\":1}");
    sim_occ_reader_free(r);
}

static core_err read_all(const char *text, char *eb, size_t ebn, char **path_out)
{
    char *dir = ts_tmpdir(), path[512];
    struct sim_occ_reader *r = NULL;
    struct sim_occ_row row;
    core_err rc;
    snprintf(path, sizeof(path), "%s/occ.csv", dir);
    ts_write_file(path, text);
    rc = sim_occ_reader_open(path, &r, eb, ebn);
    while (rc == CORE_OK)
        rc = sim_occ_reader_next(r, &row, eb, ebn);
    sim_occ_reader_free(r);
    *path_out = strdup(path);
    ts_rmtree(dir);
    free(dir);
    return rc;
}

#define HDR                                                                                        \
    "\"date\",\"Temperature\",\"Humidity\",\"Light\",\"CO2\",\"HumidityRatio\",\"Occupancy\"\n"
#define ROW "\"1\",\"2015-02-04 17:51:00\",23.18,27.272,426,721.25,0.00479298817650529,1\n"

Test(sim_occupancy, malformed_lines_name_file_and_line)
{
    static const struct {
        const char *text, *line, *why;
    } cases[] = {
        {HDR ROW "\"2\",\"2015-02-04 17:52:00\",23.1,27.2,426,721.25,0.0047\n", ":3:", "field"},
        {HDR ROW ROW "\"4\",\"2015-02-04 17:52:00\",abc,27.2,426,721.25,0.0047,0\n",
         ":4:", "Temperature"},
        {HDR ROW "\"3\",\"2015-13-04 17:52:00\",23.1,27.2,426,721.25,0.0047,0\n", ":3:", "date"},
        {HDR ROW "\"3\",\"2015-02-04 17:52:00\",23.1,27.2,426,721.25,0.0047,2\n",
         ":3:", "Occupancy"},
        {HDR ROW "\"3\",\"2015-02-04 17:52:00\",23.1,27.2,inf,721.25,0.0047,0\n", ":3:", "finite"},
        {HDR "\n", ":2:", "field"},
        {"\"date\",\"Temp\"\n" ROW, ":1:", "header"},
        {"", ":1:", "empty"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char eb[512] = "", *path = NULL;
        core_err rc = read_all(cases[i].text, eb, sizeof(eb), &path);
        cr_assert_eq(rc, CORE_EPARSE, "case %zu: %s", i, core_strerror(rc));
        cr_assert_not_null(strstr(eb, path), "case %zu: '%s' lacks the path", i, eb);
        cr_assert_not_null(strstr(eb, cases[i].line), "case %zu: '%s'", i, eb);
        cr_assert_not_null(strstr(eb, cases[i].why), "case %zu: '%s'", i, eb);
        free(path);
    }
}

Test(sim_occupancy, crlf_and_unquoted_fields_are_accepted)
{
    char eb[512] = "", *path = NULL;
    core_err rc = read_all(HDR "1,2015-02-04 17:51:00,23.18,27.272,426,721.25,0.0047,1\r\n", eb,
                           sizeof(eb), &path);
    cr_assert_eq(rc, CORE_ENOTFOUND, "%s", eb);
    free(path);
}

/* The reason codes ingest publishes: schemas/rejected.schema.json properties.reason.enum. */
static int known_reason(const char *code)
{
    json_error_t e;
    json_t *schema = json_load_file(GCDP_SCHEMA_DIR "/rejected.schema.json", 0, &e), *v;
    const json_t *list =
        json_object_get(json_object_get(json_object_get(schema, "properties"), "reason"), "enum");
    size_t i;
    int found = 0;
    cr_assert_not_null(list, "rejected.schema.json has no reason enum");
    json_array_foreach(list, i, v) found |= !strcmp(json_string_value(v), code);
    json_decref(schema);
    return found;
}

Test(sim_corpus, every_line_parses_and_names_an_ingest_reason)
{
    char path[512], eb[256];
    FILE *f;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int lines = 0, bad_kinds = 0;
    json_t *kinds = json_object();

    snprintf(path, sizeof(path), "%s/tests/fixtures/bad_inputs/corpus.jsonl", GCDP_SOURCE_DIR);
    f = fopen(path, "r");
    cr_assert_not_null(f);
    while ((n = getline(&line, &cap, f)) > 0) {
        struct sim_corpus_entry e;
        cr_assert_eq(sim_corpus_entry_parse(line, (size_t)n, &e, eb, sizeof(eb)), CORE_OK,
                     "line %d: %s", lines + 1, eb);
        cr_assert_null(json_object_get(kinds, e.kind), "kind %s repeated", e.kind);
        json_object_set_new(kinds, e.kind, json_true());
        if (e.expected_reason) {
            cr_assert(known_reason(e.expected_reason), "%s: unknown reason %s", e.kind,
                      e.expected_reason);
            bad_kinds++;
        }
        if (!strcmp(e.kind, "oversize"))
            cr_assert_gt(e.payload_len, 65536);
        if (!strcmp(e.kind, "invalid_utf8"))
            cr_assert_not_null(memchr(e.payload, 0xff, e.payload_len));
        if (!strcmp(e.kind, "missing_key"))
            cr_assert_null(e.key);
        if (!strcmp(e.kind, "key_mismatch"))
            cr_assert_str_eq(e.key, "another-device");
        if (!strcmp(e.kind, "valid_control"))
            cr_assert_str_eq(e.key, "c-valid");
        sim_corpus_entry_cleanup(&e);
        lines++;
    }
    free(line);
    fclose(f);
    cr_assert_geq(bad_kinds, 25);
    cr_assert_eq((int)json_object_size(kinds), lines);
    json_decref(kinds);
}

Test(sim_corpus, bad_corpus_lines_are_refused)
{
    struct sim_corpus_entry e;
    char eb[256];
    const char *bad[] = {
        "{\"kind\":\"x\",\"expected_reason\":null}",
        "{\"kind\":\"x\",\"expected_reason\":null,\"payload\":\"a\",\"payload_hex\":\"61\"}",
        "{\"kind\":\"x\",\"expected_reason\":null,\"payload_hex\":\"6\"}",
        "{\"kind\":\"x\",\"expected_reason\":null,\"payload\":\"no marker\",\"pad\":3}",
        "[1]",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(sim_corpus_entry_parse(bad[i], strlen(bad[i]), &e, eb, sizeof(eb)),
                     CORE_EPARSE, "case %zu", i);
    const char *ok = "{\"kind\":\"p\",\"expected_reason\":\"oversize\","
                     "\"payload\":\"<@PAD@>\",\"pad\":4}";
    cr_assert_eq(sim_corpus_entry_parse(ok, strlen(ok), &e, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_str_eq(e.payload, "<xxxx>");
    cr_assert_str_eq(e.key, "corpus");
    sim_corpus_entry_cleanup(&e);
}
