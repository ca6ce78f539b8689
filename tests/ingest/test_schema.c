/* test_schema.c - what the engine emits validates against schemas/<name>.schema.json
 * (checked by python3-jsonschema, Draft 2020-12, in a child process). */
#include <stdlib.h>

#include "ing_test.h"
#include "test_support.h"

/* Validate every line of jsonl against schema; returns the validator's exit status. */
static int validate(const char *dir, const char *schema, const char *jsonl_name, bool quiet)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 -c 'import json,sys,jsonschema\n"
             "s=json.load(open(sys.argv[1]))\n"
             "v=jsonschema.Draft202012Validator(s)\n"
             "bad=0\n"
             "for i,l in enumerate(open(sys.argv[2])):\n"
             "  for e in v.iter_errors(json.loads(l)):\n"
             "    bad+=1; print(\"line\",i+1,e.message[:200])\n"
             "sys.exit(1 if bad else 0)' %s/%s %s/%s%s",
             GCDP_SCHEMA_DIR, schema, dir, jsonl_name, quiet ? " >/dev/null" : "");
    return system(cmd);
}

static void write_lines(const char *dir, const char *name, const json_t *raw_or_parsed)
{
    char path[1024];
    FILE *f;
    size_t i;
    const json_t *v;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    json_array_foreach(raw_or_parsed, i, v)
    {
        if (json_is_string(v))
            fprintf(f, "%s\n", json_string_value(v));
        else
            json_dumpf(v, f, JSON_COMPACT), fputc('\n', f);
    }
    fclose(f);
}

Test(schema, emitted_windows_and_dead_letters_validate)
{
    struct ing_params p;
    struct ing_engine *e;
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    char *dir = ts_tmpdir();
    const char *bad[] = {"",
                         "{",
                         "[1]",
                         "{\"schema\":\"gcdp.reading/1\"}",
                         "\xff\xfe",
                         ("{\"schema\":\"gcdp.reading/1\",\"device\":\"a\",\"ts\":1,"
                          "\"readings\":{\"x\":1}}")};

    ing_params_default(&p);
    p.window_ms = p.hop_ms = 10 * T_MIN;
    p.features = ING_F_MEAN | ING_F_STD;
    e = mk_engine(&p);
    for (int j = 0; j < 10; j++) /* window 0: gap of 2 slots -> imputed */
        if (j != 4 && j != 5)
            push_t(e, &s, "m-1", T0 + j * T_MIN, 20 + j, j);
    for (int j = 10; j < 20; j++) /* window 1: long gap -> excluded */
        if (j < 12 || j > 16)
            push_t(e, &s, "m-1", T0 + j * T_MIN, 20, j);
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        push_raw(e, &s, bad[i], strlen(bad[i]), i % 2 ? NULL : "k", 1, (long long)(100 + i), 7);
    push_t(e, &s, "m-1", T0, 20, 200); /* late */
    ing_engine_flush(e, &s);
    cr_assert_eq(json_array_size(c.windows), 2);
    cr_assert_eq(json_array_size(c.rejects), sizeof(bad) / sizeof(*bad) + 1);
    write_lines(dir, "windows.jsonl", c.raw_windows);
    write_lines(dir, "rejected.jsonl", c.rejects);
    cr_assert_eq(validate(dir, "window.schema.json", "windows.jsonl", false), 0);
    cr_assert_eq(validate(dir, "rejected.schema.json", "rejected.jsonl", false), 0);
    ts_rmtree(dir);
    free(dir);
    coll_free(&c);
    ing_engine_free(e);
}

Test(schema, schema_rejects_a_broken_window_record)
{
    char *dir = ts_tmpdir();
    char path[1024];

    snprintf(path, sizeof(path), "%s/w.jsonl", dir);
    /* excluded with values: the schema's if/then must catch it (the validator can fail) */
    ts_write_file(path, "{\"schema\":\"gcdp.window/1\",\"id\":\"a|0|0000000000000000\","
                        "\"device\":\"a\",\"window_start\":0,\"window_end\":1,"
                        "\"window_start_utc\":\"x\",\"window_end_utc\":\"y\","
                        "\"config_version\":\"0000000000000000\",\"n\":1,\"n_slots\":1,"
                        "\"excluded\":true,\"exclude_reason\":\"long_gap\","
                        "\"exclude_detail\":\"d\",\"nodes\":{\"t\":0.5}}\n");
    cr_assert_neq(validate(dir, "window.schema.json", "w.jsonl", true), 0);
    ts_rmtree(dir);
    free(dir);
}

Test(schema, accepted_readings_validate_against_reading_schema)
{
    char *dir = ts_tmpdir();
    char path[1024];

    snprintf(path, sizeof(path), "%s/r.jsonl", dir);
    ts_write_file(path,
                  "{\"schema\":\"gcdp.reading/1\",\"device\":\"occupancy\",\"ts\":"
                  "\"2015-02-04T17:51:00Z\",\"readings\":{\"temperature\":23.18,\"humidity\":"
                  "27.272,\"light\":426,\"co2\":721.25,\"humidity_ratio\":0.00479298817650529},"
                  "\"seq\":1}\n"
                  "{\"schema\":\"gcdp.reading/1\",\"device\":\"mote-7\",\"ts\":1423072260000,"
                  "\"readings\":{\"temperature\":null}}\n");
    cr_assert_eq(validate(dir, "reading.schema.json", "r.jsonl", false), 0);
    ts_rmtree(dir);
    free(dir);
}

/* The reason enum of schemas/rejected.schema.json is exactly ING_REASON_MAP (minus
 * "accepted"), in the same order: a new code must be added to both. */
Test(schema, rejected_reason_enum_matches_the_reason_map)
{
    char path[1024];
    json_error_t err;
    json_t *s, *en;

    snprintf(path, sizeof(path), "%s/rejected.schema.json", GCDP_SCHEMA_DIR);
    s = json_load_file(path, 0, &err);
    cr_assert_not_null(s, "%s: %s", path, err.text);
    en = json_object_get(json_object_get(json_object_get(s, "properties"), "reason"), "enum");
    cr_assert(json_is_array(en));
    cr_assert_eq(json_array_size(en), (size_t)ING_REASON_COUNT - 1);
    for (int r = 1; r < ING_REASON_COUNT; r++)
        cr_assert_str_eq(json_string_value(json_array_get(en, (size_t)r - 1)),
                         ing_reason_code((enum ing_reason)r));
    json_decref(s);
}
