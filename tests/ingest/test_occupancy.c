/* test_occupancy.c - UCI Occupancy rows through the engine (no Kafka) equal the independent
 * offline computation of tests/tools/offline_windows.py: same windows, values to 1e-12. */
#include <stdlib.h>

#include "ing_test.h"
#include "test_support.h"

#define MAX_ROWS 20000

struct row {
    char id[16], date[24], f[5][40];
};

/* Parse R write.csv rows: "id","date" (date quoted or not), 5 numbers, label. */
static size_t read_csv(const char *path, struct row *rows)
{
    size_t len, n = 0;
    char *text = ts_read_file(path, &len), *line, *save = NULL;

    cr_assert_not_null(text, "cannot read %s", path);
    line = strtok_r(text, "\n", &save); /* header */
    while ((line = strtok_r(NULL, "\n", &save)) && n < MAX_ROWS) {
        char *fld[8], *q = line;
        for (int i = 0; i < 8; i++) {
            fld[i] = q;
            q = strchr(q, ',');
            cr_assert(i == 7 || q, "%s: short row %zu", path, n + 1);
            if (q)
                *q++ = '\0';
        }
        for (int i = 0; i < 2; i++)
            if (fld[i][0] == '"') {
                fld[i]++;
                fld[i][strlen(fld[i]) - 1] = '\0';
            }
        snprintf(rows[n].id, sizeof(rows[n].id), "%s", fld[0]);
        snprintf(rows[n].date, sizeof(rows[n].date), "%.10sT%.8sZ", fld[1], fld[1] + 11);
        for (int i = 0; i < 5; i++)
            snprintf(rows[n].f[i], sizeof(rows[n].f[i]), "%s", fld[2 + i]);
        n++;
    }
    free(text);
    return n;
}

/* The replay contract: device "occupancy", RFC 3339 ts, five channels, seq = row id. */
static int reading_json(const struct row *r, bool null_light, char *buf, size_t n)
{
    return snprintf(buf, n,
                    "{\"schema\":\"gcdp.reading/1\",\"device\":\"occupancy\",\"ts\":"
                    "\"%s\",\"readings\":{\"temperature\":%s,\"humidity\":%s,\"light\":%s,"
                    "\"co2\":%s,\"humidity_ratio\":%s},\"seq\":%s}",
                    r->date, r->f[0], r->f[1], null_light ? "null" : r->f[2], r->f[3], r->f[4],
                    r->id);
}

static json_t *load_jsonl(const char *path)
{
    json_t *arr = json_array();
    size_t len;
    char *text = ts_read_file(path, &len), *line, *save = NULL;

    cr_assert_not_null(text);
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_t *v = json_loads(line, 0, NULL);
        cr_assert_not_null(v, "bad JSONL line: %.100s", line);
        json_array_append_new(arr, v);
    }
    free(text);
    return arr;
}

/* json_equal() is false for two NULLs; absent on both sides is equal here. */
static bool same(const json_t *a, const json_t *b)
{
    return (!a && !b) || (a && b && json_equal(a, b));
}

static void compare_windows(const json_t *got, const json_t *want)
{
    size_t i;
    const json_t *g;

    cr_assert_eq(json_array_size(got), json_array_size(want), "window count %zu vs offline %zu",
                 json_array_size(got), json_array_size(want));
    json_array_foreach(got, i, g)
    {
        const json_t *w = json_array_get(want, i);
        const char *node;
        const json_t *v;
        cr_assert_str_eq(json_string_value(json_object_get(g, "id")),
                         json_string_value(json_object_get(w, "id")));
        cr_assert_eq(jint(g, "n"), jint(w, "n"), "window %zu", i);
        cr_assert_eq(jint(g, "window_end"), jint(w, "window_end"));
        cr_assert(same(json_object_get(g, "excluded"), json_object_get(w, "excluded")));
        cr_assert(same(json_object_get(g, "exclude_reason"), json_object_get(w, "exclude_reason")),
                  "window %zu", i);
        cr_assert(same(json_object_get(g, "n_node"), json_object_get(w, "n_node")), "window %zu",
                  i);
        cr_assert(same(json_object_get(g, "imputed"), json_object_get(w, "imputed")),
                  "window %zu imputed slots differ", i);
        cr_assert(same(json_object_get(g, "prov"), json_object_get(w, "prov")),
                  "window %zu provenance differs", i);
        cr_assert_eq(json_object_size(json_object_get(g, "nodes")),
                     json_object_size(json_object_get(w, "nodes")));
        json_object_foreach((json_t *)json_object_get(w, "nodes"), node, v)
        {
            double a = jnode(g, node), b = json_number_value(v);
            cr_assert_float_eq(a, b, 1e-12, "window %zu node %s: %.17g vs %.17g", i, node, a, b);
        }
    }
}

static void write_raw(const char *path, const json_t *raw)
{
    FILE *f = fopen(path, "w");
    size_t i;
    const json_t *v;
    cr_assert_not_null(f);
    json_array_foreach(raw, i, v) fprintf(f, "%s\n", json_string_value(v));
    fclose(f);
}

static void run_offline(const char *args, const char *out)
{
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/tests/tools/offline_windows.py %s > %s",
             GCDP_SOURCE_DIR, args, out);
    cr_assert_eq(system(cmd), 0, "offline_windows.py failed: %s", cmd);
}

/* One file through a default engine vs the offline script. */
static void run_file(const char *name, size_t want_rows)
{
    static struct row rows[MAX_ROWS];
    char path[1024], buf[2048], *dir = ts_tmpdir(), out[1100];
    struct ing_params p;
    struct ing_engine *e;
    struct ing_counters k;
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    size_t n;
    json_t *want;

    snprintf(path, sizeof(path), "%s/occupancy/%s", GCDP_DATA_DIR, name);
    n = read_csv(path, rows);
    cr_assert_eq(n, want_rows);
    ing_params_default(&p);
    e = mk_engine(&p);
    for (size_t i = 0; i < n; i++) {
        int len = reading_json(&rows[i], false, buf, sizeof(buf));
        cr_assert_eq(push_raw(e, &s, buf, (size_t)len, "occupancy", 0, (long long)i, 0), ING_R_NONE,
                     "%s row %zu", name, i + 1);
    }
    ing_engine_flush(e, &s);
    ing_engine_counters(e, &k);
    cr_assert_eq(k.accepted, want_rows);
    snprintf(out, sizeof(out), "%s/offline.jsonl", dir);
    snprintf(buf, sizeof(buf), "--csv %s", path);
    run_offline(buf, out);
    want = load_jsonl(out);
    compare_windows(c.windows, want);
    cr_assert_gt(json_array_size(want), want_rows / 16, "about one window per 15 rows");
    json_decref(want);
    ts_rmtree(dir);
    free(dir);
    coll_free(&c);
    ing_engine_free(e);
}

Test(occupancy, datatraining_matches_offline_computation, .timeout = 60)
{
    run_file("datatraining.txt", 8143); /* quoted timestamps */
}

Test(occupancy, datatest2_matches_offline_computation, .timeout = 60)
{
    run_file("datatest2.txt", 9752); /* unquoted timestamps */
}

/* Same data with holes (short and long gaps, null channels), out-of-order arrival within
 * lateness, hopping windows and every feature: exercises interpolation and exclusion. */
Test(occupancy, gapped_hopping_stream_matches_offline_computation, .timeout = 60)
{
    static struct row rows[MAX_ROWS];
    char path[1024], buf[2048], *dir = ts_tmpdir(), in[1100], out[1100], args[3000];
    struct ing_params p;
    struct ing_engine *e;
    struct ing_counters k;
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    size_t n, kept = 0;
    json_t *fed = json_array(), *want;

    snprintf(path, sizeof(path), "%s/occupancy/datatraining.txt", GCDP_DATA_DIR);
    n = read_csv(path, rows);
    ing_params_default(&p);
    p.hop_ms = 5 * T_MIN;
    p.features = ING_F_MEAN | ING_F_COUNT | ING_F_MIN | ING_F_MAX | ING_F_STD;
    p.lateness_ms = 3 * T_MIN;
    e = mk_engine(&p);
    for (size_t i = 0; i < n; i++) {
        size_t m = i % 97;
        /* drop 1-2 rows often (interpolated), 3-5 rows sometimes (excluded) */
        if (m == 10 || m == 40 || m == 41 || (i % 389 >= 200 && i % 389 < 200 + 3 + i % 3))
            continue;
        json_array_append_new(fed, json_integer((json_int_t)i));
    }
    /* swap neighbours now and then: arrival out of order within lateness */
    for (size_t i = 0; i + 1 < json_array_size(fed); i += 13) {
        json_t *a = json_incref(json_array_get(fed, i)),
               *b = json_incref(json_array_get(fed, i + 1));
        json_array_set_new(fed, i, b);
        json_array_set_new(fed, i + 1, a);
    }
    snprintf(in, sizeof(in), "%s/fed.jsonl", dir);
    {
        FILE *f = fopen(in, "w");
        size_t j;
        json_t *v;
        json_array_foreach(fed, j, v)
        {
            size_t i = (size_t)json_integer_value(v);
            int len = reading_json(&rows[i], i % 53 == 0, buf, sizeof(buf));
            fprintf(f, "%s\n", buf);
            cr_assert_eq(push_raw(e, &s, buf, (size_t)len, "occupancy", 0, (long long)j, 0),
                         ING_R_NONE, "row %zu", i + 1);
            kept++;
        }
        fclose(f);
    }
    ing_engine_flush(e, &s);
    ing_engine_counters(e, &k);
    cr_assert_eq(k.accepted, kept);
    cr_assert_gt(k.interpolated, 100, "interpolation exercised");
    cr_assert_gt(k.excluded_by_reason[ING_X_LONG_GAP], 10, "long gaps exercised");
    snprintf(out, sizeof(out), "%s/offline.jsonl", dir);
    snprintf(args, sizeof(args),
             "--jsonl %s --set ingest.window.hop_ms=300000 "
             "--set 'ingest.features=[\"mean\",\"count\",\"min\",\"max\",\"std\"]'",
             in);
    run_offline(args, out);
    want = load_jsonl(out);
    compare_windows(c.windows, want);
    snprintf(out, sizeof(out), "%s/engine.jsonl", dir);
    write_raw(out, c.raw_windows);
    json_decref(want);
    json_decref(fed);
    ts_rmtree(dir);
    free(dir);
    coll_free(&c);
    ing_engine_free(e);
}

/* Replay of two UCI files back to back for one device (datatraining.txt ends 2015-02-10
 * 09:33, datatest2.txt starts 2015-02-11 14:48: a 29-hour jump > ingest.max_jump_ms) with
 * the default configuration: the first jump_confirm - 1 = 2 rows of the second file are
 * dead-lettered ts_jump, then the stream restarts; nothing is late. */
Test(occupancy, back_to_back_files_restart_after_the_jump, .timeout = 60)
{
    static struct row rows[2][MAX_ROWS];
    size_t n[2];
    char path[1024], buf[512];
    struct ing_params p;
    struct ing_engine *e;
    struct ing_counters k;
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    long long off = 0;

    snprintf(path, sizeof(path), "%s/occupancy/datatraining.txt", GCDP_DATA_DIR);
    n[0] = read_csv(path, rows[0]);
    snprintf(path, sizeof(path), "%s/occupancy/datatest2.txt", GCDP_DATA_DIR);
    n[1] = read_csv(path, rows[1]);
    cr_assert_eq(n[0], 8143);
    cr_assert_eq(n[1], 9752);
    ing_params_default(&p);
    e = mk_engine(&p);
    for (int f = 0; f < 2; f++)
        for (size_t i = 0; i < n[f]; i++) {
            int len = reading_json(&rows[f][i], false, buf, sizeof(buf));
            enum ing_reason why = push_raw(e, &s, buf, (size_t)len, "occupancy", 0, off++, 0);
            if (f == 1 && i < 2)
                cr_assert_eq(why, ING_R_TS_JUMP, "row %zu of datatest2.txt", i);
            else
                cr_assert_eq(why, ING_R_NONE, "file %d row %zu", f, i);
        }
    ing_engine_flush(e, &s);
    ing_engine_counters(e, &k);
    cr_assert_eq(k.jump_restarts, 1);
    cr_assert_eq(k.rejected, 2);
    cr_assert_eq(k.late, 0);
    cr_assert_eq(k.accepted, 8143 + 9752 - 2);
    coll_free(&c);
    ing_engine_free(e);
}
