/* test_calibrate_cli.c - `gcdp calibrate` end to end: exit codes, θ output validated by
 * the strict parser and the JSON schema, clear errors for bad θ and bad configuration. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "broker.h"
#include "cal/theta.h"
#include "test_support.h"

#define OCC GCDP_DATA_DIR "/occupancy/datatraining.txt"

/* Run a shell command; returns its exit status, stderr captured into err (new string). */
static int sh(const char *dir, const char *cmd, char **err)
{
    char full[4096], path[600];
    int st;
    snprintf(path, sizeof(path), "%s/stderr.txt", dir);
    int n = snprintf(full, sizeof(full), "%s 2>%s", cmd, path);
    cr_assert(n > 0 && (size_t)n < sizeof(full), "command line too long");
    st = system(full);
    if (err)
        *err = ts_read_file(path, NULL);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(calibrate_cli, public_occupancy_theta_validates)
{
    char *dir = ts_tmpdir(), cmd[2048], out[600], *err = NULL, eb[256];
    struct cal_theta *t = NULL;
    snprintf(out, sizeof(out), "%s/theta.json", dir);
    snprintf(cmd, sizeof(cmd),
             "%s calibrate -i %s -f occupancy -o %s --set calibrate.task=classify "
             "--set calibrate.tau_select=grid --set calibrate.version=5 --log-level warn",
             GCDP_BIN, OCC, out);
    cr_assert_eq(sh(dir, cmd, &err), 0, "stderr: %s", err);
    free(err);
    cr_assert_eq(cal_theta_load_file(out, &t, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(t->version, 5);
    cr_assert_eq(t->n_nodes, 5);
    cr_assert_eq(t->task, CAL_TASK_CLASSIFY);
    cal_theta_free(t);
    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 -c 'import json,sys,jsonschema; "
             "jsonschema.Draft202012Validator(json.load(open(sys.argv[1]))).validate("
             "json.load(open(sys.argv[2])))' %s/theta.schema.json %s",
             GCDP_SCHEMA_DIR, out);
    cr_assert_eq(sh(dir, cmd, NULL), 0, "schema validation");
    snprintf(cmd, sizeof(cmd), "%s calibrate --check %s >/dev/null", GCDP_BIN, out);
    cr_assert_eq(sh(dir, cmd, NULL), 0);
    ts_rmtree(dir);
    free(dir);
}

Test(calibrate_cli, private_mode_records_budget)
{
    char *dir = ts_tmpdir(), cmd[2048], out[600], *err = NULL, eb[256];
    struct cal_theta *t = NULL;
    snprintf(out, sizeof(out), "%s/theta.json", dir);
    snprintf(cmd, sizeof(cmd),
             "%s calibrate -i %s -f occupancy -o %s --mode private --set calibrate.eps_G=1 "
             "--set calibrate.eps_xi=0.5 --device occupancy --ledger %s/ledger.jsonl "
             "--log-level warn",
             GCDP_BIN, OCC, out, dir);
    cr_assert_eq(sh(dir, cmd, &err), 0, "stderr: %s", err);
    free(err);
    cr_assert_eq(cal_theta_load_file(out, &t, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(t->mode, CAL_MODE_PRIVATE);
    cr_assert_float_eq(cal_theta_eps_cal_total(t), 1.5, 1e-15);
    cal_theta_free(t);
    /* the 8143 rows (one a minute, some minutes twice or skipped), each widened by half a
     * period (ingest snaps readings to the minute grid) -> 8144 charged units */
    snprintf(cmd, sizeof(cmd), "%s ledger --ledger %s/ledger.jsonl >/dev/null", GCDP_BIN, dir);
    cr_assert_eq(sh(dir, cmd, &err), 0, "stderr: %s", err);
    cr_assert(strstr(err, "8144 units, max per unit eps=1.5 "), "%s", err);
    free(err);
    ts_rmtree(dir);
    free(dir);
}

Test(calibrate_cli, errors_have_exit_codes_and_name_the_problem)
{
    char *dir = ts_tmpdir(), cmd[2048], p[600], *err = NULL;
    snprintf(cmd, sizeof(cmd), "%s calibrate -i %s -f occupancy --mode private", GCDP_BIN, OCC);
    cr_assert_eq(sh(dir, cmd, &err), 2, "private without budget is a config error");
    cr_assert(strstr(err, "calibrate.eps_G"), "%s", err);
    free(err);
    snprintf(cmd, sizeof(cmd), "%s calibrate -i %s -f parquet", GCDP_BIN, OCC);
    cr_assert_eq(sh(dir, cmd, &err), 2);
    cr_assert(strstr(err, "calibrate.input.format"), "%s", err);
    free(err);
    snprintf(cmd, sizeof(cmd), "%s calibrate -i %s/nope.csv", GCDP_BIN, dir);
    cr_assert_eq(sh(dir, cmd, &err), 1, "missing input is a runtime failure");
    cr_assert(strstr(err, "nope.csv"), "%s", err);
    free(err);
    snprintf(p, sizeof(p), "%s/bad.json", dir);
    ts_write_file(p,
                  "{\"schema\": \"gcdp.theta/1\", \"nodes\": [\"a\"], \"coords\": [], \"x\": 1}");
    snprintf(cmd, sizeof(cmd), "%s calibrate --check %s", GCDP_BIN, p);
    cr_assert_eq(sh(dir, cmd, &err), 1);
    cr_assert(strstr(err, "x: unknown field"), "%s", err);
    free(err);
    snprintf(cmd, sizeof(cmd), "%s calibrate --help >/dev/null", GCDP_BIN);
    cr_assert_eq(sh(dir, cmd, NULL), 0);
    ts_rmtree(dir);
    free(dir);
}

Test(calibrate_cli, publish_puts_theta_on_the_calibration_topic, .timeout = 120)
{
    struct ts_broker b;
    struct ts_record *recs = NULL;
    struct cal_theta *t = NULL;
    char cmd[2048], *err = NULL, eb[256];
    json_error_t je;
    json_t *j;
    size_t n;
    ts_broker_start(&b, NULL);
    snprintf(cmd, sizeof(cmd),
             "%s calibrate -i %s -f occupancy --publish --set %s --set calibrate.version=77 "
             "--log-level warn >/dev/null",
             GCDP_BIN, OCC, b.set_bootstrap);
    cr_assert_eq(sh(b.dir, cmd, &err), 0, "stderr: %s", err);
    free(err);
    n = ts_topic_read(b.bootstrap, "gcdp.calibration", &recs);
    cr_assert_eq(n, 1, "one theta record");
    cr_assert_str_eq(recs[0].key, "77", "keyed by version");
    j = json_loads(recs[0].value, 0, &je);
    cr_assert_not_null(j, "%s", je.text);
    cr_assert_eq(cal_theta_from_json(j, &t, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(t->version, 77);
    cal_theta_free(t);
    json_decref(j);
    ts_records_free(recs, n);
    ts_broker_stop(&b);
}

Test(calibrate_cli, reads_the_matrix_from_a_stream)
{
    char *dir = ts_tmpdir(), cmd[2048], out[600], *err = NULL, eb[256];
    struct cal_theta *t = NULL;
    snprintf(out, sizeof(out), "%s/theta.json", dir);
    snprintf(cmd, sizeof(cmd),
             "head -n 301 %s | %s calibrate -i - -f occupancy -o %s --log-level warn", OCC,
             GCDP_BIN, out);
    cr_assert_eq(sh(dir, cmd, &err), 0, "stderr: %s", err);
    free(err);
    cr_assert_eq(cal_theta_load_file(out, &t, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(t->n_cal, 300, "header + 300 rows from the pipe");
    cal_theta_free(t);
    ts_rmtree(dir);
    free(dir);
}

/* ------------------------------------------------------------------ ledger (private mode) */

/* The two release windows (gcdp.window/2, minutes 0..14 and 15..29) as JSON lines. */
static void write_windows(const char *path)
{
    static const char *const ch[3] = {"temperature", "humidity", "co2"};
    static const double v1[3] = {0.53, 0.41, 0.33}, v2[3] = {0.55, 0.40, 0.35};
    char a[2048], b[2048], text[4200];
    ts_window2(a, sizeof(a), "room1", "room1|0|c", 0, 900000, 3, ch, v1, 15, 15, 60000);
    ts_window2(b, sizeof(b), "room1", "room1|900000|c", 900000, 1800000, 3, ch, v2, 14, 15, 60000);
    snprintf(text, sizeof(text), "%s\n%s\n", a, b);
    ts_write_file(path, text);
}

/* 60 calibration rows, one a minute from t = 0, and the two release windows above (minutes
 * 0..29). A row charges the slots within half a period of its raw time (ingest snaps a
 * reading to the nearest period point): room1|-1 .. room1|59. */
static void ledger_fixture(const char *dir, int with_ts)
{
    char p[600], *text = malloc(60 * 96 + 64);
    size_t off = (size_t)sprintf(text, "%stemperature,humidity,co2\n", with_ts ? "ts," : "");
    for (int r = 0; r < 60; r++) {
        double u = r;
        if (with_ts)
            off += (size_t)sprintf(text + off, "%d,", r * 60000);
        off += (size_t)sprintf(text + off, "%.6f,%.6f,%.6f\n", 0.5 + 0.4 * sin(0.1 * u),
                               0.5 + 0.3 * sin(0.1 * u + 0.3) + 0.05 * cos(1.7 * u),
                               0.5 + 0.4 * cos(0.37 * u));
    }
    snprintf(p, sizeof(p), "%s/cal.csv", dir);
    ts_write_file(p, text);
    snprintf(p, sizeof(p), "%s/windows.jsonl", dir);
    write_windows(p);
    free(text);
}

static int exists(const char *dir, const char *name)
{
    char p[600];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

#define PRIV "--mode private --set calibrate.eps_G=1 --set calibrate.eps_xi=0.5 --log-level warn"

Test(calibrate_cli, private_calibration_and_release_compose_in_the_ledger, .timeout = 120)
{
    char *dir = ts_tmpdir(), cmd[4096], p[600], *err = NULL, *out, *line, *a, *b;
    int units = 0;
    size_t la = 0, lb = 0, l1 = 0, l2 = 0;
    ledger_fixture(dir, 1);
    snprintf(cmd, sizeof(cmd),
             "cd %s && %s calibrate -i cal.csv --device room1 --ledger led.jsonl "
             "--set calibrate.version=5 -o theta.json " PRIV,
             dir, GCDP_BIN);
    cr_assert_eq(sh(dir, cmd, &err), 0, "stderr: %s", err);
    free(err);
    snprintf(cmd, sizeof(cmd),
             "cd %s && %s release --theta theta.json --input windows.jsonl --ledger led.jsonl "
             "--output rel.jsonl --log-level warn",
             dir, GCDP_BIN);
    cr_assert_eq(sh(dir, cmd, &err), 0, "stderr: %s", err);
    free(err);
    snprintf(cmd, sizeof(cmd), "cd %s && %s ledger --ledger led.jsonl --json --unit room1 >units",
             dir, GCDP_BIN);
    cr_assert_eq(sh(dir, cmd, &err), 0, "stderr: %s", err);
    free(err);
    snprintf(p, sizeof(p), "%s/units", dir);
    out = ts_read_file(p, NULL);
    for (line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        json_t *u = json_loads(line, 0, NULL);
        const char *name = json_string_value(json_object_get(u, "unit"));
        int slot = atoi(strchr(name, '|') + 1);
        double eps = json_number_value(json_object_get(u, "eps"));
        json_int_t rel = json_integer_value(json_object_get(u, "releases"));
        cr_assert(slot >= -1 && slot < 60, "%s", name);
        /* ε_cal = 1.5 on every calibration minute, + ε_rel = 1 on the released minutes */
        cr_assert_float_eq(eps, slot >= 0 && slot < 30 ? 2.5 : 1.5, 1e-12, "%s: eps %.17g", name,
                           eps);
        cr_assert_eq(rel, slot >= 0 && slot < 30 ? 2 : 1, "%s", name);
        units++;
        json_decref(u);
    }
    free(out);
    cr_assert_eq(units, 61);
    /* the same calibrate.version again: the stored bytes, no new charge */
    snprintf(p, sizeof(p), "%s/led.jsonl", dir);
    free(ts_read_file(p, &l1));
    snprintf(cmd, sizeof(cmd),
             "cd %s && %s calibrate -i cal.csv --device room1 --ledger led.jsonl "
             "--set calibrate.version=5 -o theta2.json " PRIV,
             dir, GCDP_BIN);
    cr_assert_eq(sh(dir, cmd, &err), 0, "stderr: %s", err);
    free(err);
    free(ts_read_file(p, &l2));
    cr_assert_eq(l1, l2, "nothing appended to the ledger by the replay");
    snprintf(p, sizeof(p), "%s/theta.json", dir);
    a = ts_read_file(p, &la);
    snprintf(p, sizeof(p), "%s/theta2.json", dir);
    b = ts_read_file(p, &lb);
    cr_assert(la == lb && memcmp(a, b, la) == 0, "replayed theta is byte-identical");
    free(a);
    free(b);
    ts_rmtree(dir);
    free(dir);
}

Test(calibrate_cli, lifetime_cap_bounds_calibration_plus_release, .timeout = 120)
{
    char *dir = ts_tmpdir(), cmd[4096], *err = NULL;
    ledger_fixture(dir, 1);
    /* release first: 1 on minutes 0..29 */
    snprintf(cmd, sizeof(cmd),
             "cd %s && %s release --theta %s --input windows.jsonl --ledger led.jsonl "
             "--output rel.jsonl --set release.ledger.cap_eps=2 --log-level warn",
             dir, GCDP_BIN, "theta0.json");
    {
        /* a public θ with the window's nodes for the first release */
        char c2[4096];
        snprintf(c2, sizeof(c2), "cd %s && %s calibrate -i cal.csv -o theta0.json --log-level warn",
                 dir, GCDP_BIN);
        cr_assert_eq(sh(dir, c2, &err), 0, "stderr: %s", err);
        free(err);
        cr_assert(!exists(dir, "led.jsonl"), "public mode opens no ledger");
    }
    cr_assert_eq(sh(dir, cmd, &err), 0, "stderr: %s", err);
    free(err);
    /* eps_cal = 1.5 would take minute 0 to 2.5 > 2: refused, no theta */
    snprintf(cmd, sizeof(cmd),
             "cd %s && %s calibrate -i cal.csv --device room1 --ledger led.jsonl "
             "--set release.ledger.cap_eps=2 -o theta.json " PRIV,
             dir, GCDP_BIN);
    cr_assert_eq(sh(dir, cmd, &err), 1);
    cr_assert(strstr(err, "privacy budget: unit 'room1|0' has spent eps=1 ") &&
                  strstr(err, "eps_cal=1.5") && strstr(err, "cap eps=2") &&
                  strstr(err, "no theta written"),
              "%s", err);
    free(err);
    cr_assert(!exists(dir, "theta.json"), "refused: no theta");
    /* eps_cal = 0.5 + 0.5 fits exactly (1 + 1 <= 2) */
    snprintf(cmd, sizeof(cmd),
             "cd %s && %s calibrate -i cal.csv --device room1 --ledger led.jsonl "
             "--set release.ledger.cap_eps=2 -o theta.json " PRIV " --set calibrate.eps_G=0.5",
             dir, GCDP_BIN);
    cr_assert_eq(sh(dir, cmd, &err), 0, "stderr: %s", err);
    free(err);
    /* minute 0 is now at the cap: a new release over it is refused */
    snprintf(cmd, sizeof(cmd),
             "cd %s && sed 's/|c\"/|d\"/' windows.jsonl > w2.jsonl && %s release --theta "
             "theta.json --input w2.jsonl --ledger led.jsonl --output rel2.jsonl "
             "--set release.ledger.cap_eps=2 --log-level warn",
             dir, GCDP_BIN);
    cr_assert_eq(sh(dir, cmd, &err), 1);
    cr_assert(strstr(err, "privacy budget: unit 'room1|0'") && strstr(err, "cap eps=2"), "%s", err);
    free(err);
    ts_rmtree(dir);
    free(dir);
}

Test(calibrate_cli, private_mode_refuses_without_units_or_ledger, .timeout = 120)
{
    char *dir = ts_tmpdir(), cmd[4096], *err = NULL, *led;
    size_t n = 0;
    ledger_fixture(dir, 1);
    snprintf(cmd, sizeof(cmd), "cd %s && %s calibrate -i cal.csv --ledger led.jsonl " PRIV, dir,
             GCDP_BIN);
    cr_assert_eq(sh(dir, cmd, &err), 2, "no device id");
    cr_assert(strstr(err, "--device"), "%s", err);
    free(err);
    /* an unusable ledger: nothing drawn, no theta */
    snprintf(cmd, sizeof(cmd),
             "cd %s && %s calibrate -i cal.csv --device room1 --ledger nodir/led.jsonl "
             "-o theta.json " PRIV,
             dir, GCDP_BIN);
    cr_assert_eq(sh(dir, cmd, &err), 1);
    cr_assert(strstr(err, "ledger 'nodir/led.jsonl'") && strstr(err, "no theta written"), "%s",
              err);
    free(err);
    cr_assert(!exists(dir, "theta.json"));
    /* cap 0: refused before any noise, the ledger holds no row */
    snprintf(cmd, sizeof(cmd),
             "cd %s && %s calibrate -i cal.csv --device room1 --ledger led.jsonl "
             "--set release.ledger.cap_eps=0 -o theta.json " PRIV,
             dir, GCDP_BIN);
    cr_assert_eq(sh(dir, cmd, &err), 1);
    cr_assert(strstr(err, "unit 'room1|-1'") && strstr(err, "cap eps=0"), "%s", err);
    free(err);
    cr_assert(!exists(dir, "theta.json"));
    led = ts_read_file((snprintf(cmd, sizeof(cmd), "%s/led.jsonl", dir), cmd), &n);
    cr_assert(led && strncmp(led, "{\"gcdp_ledger\":2,", 16) == 0 &&
                  strchr(led, '\n') == led + strlen(led) - 1,
              "header only: %s", led);
    free(led);
    /* a CSV without timestamps cannot be charged */
    ledger_fixture(dir, 0);
    snprintf(cmd, sizeof(cmd),
             "cd %s && %s calibrate -i cal.csv --device room1 --ledger led.jsonl " PRIV, dir,
             GCDP_BIN);
    cr_assert_eq(sh(dir, cmd, &err), 2);
    cr_assert(strstr(err, "timestamp") && strstr(err, "calibrate.input.ts_column"), "%s", err);
    free(err);
    ts_rmtree(dir);
    free(dir);
}

/* release.policy.time_radius h widens each row by h periods, as release widens windows. */
Test(calibrate_cli, time_radius_widens_the_charged_units, .timeout = 120)
{
    char *dir = ts_tmpdir(), cmd[4096], *err = NULL;
    ledger_fixture(dir, 1);
    snprintf(cmd, sizeof(cmd),
             "cd %s && %s calibrate -i cal.csv --device room1 --ledger led.jsonl "
             "--set release.policy.time_radius=2 --set ingest.period_ms=60000 "
             "-o theta.json " PRIV " && %s ledger --ledger led.jsonl --unit 'room1|-2' "
             "--json 2>/dev/null | grep -q '\"eps\":1.5' && "
             "%s ledger --ledger led.jsonl >/dev/null",
             dir, GCDP_BIN, GCDP_BIN, GCDP_BIN);
    cr_assert_eq(sh(dir, cmd, &err), 0, "stderr: %s", err);
    /* minutes 0..59 widened by 2 minutes and half a period: slots -3..61 */
    cr_assert(strstr(err, "1 releases, 65 units, max per unit eps=1.5 "), "%s", err);
    free(err);
    ts_rmtree(dir);
    free(dir);
}

/* Audit defect 6: Δ₁S for the expansion bound comes from the declared policy graph G0, not
 * a separate setting: with the edge temperature-humidity, one protected occurrence's
 * expansion set touches |A| = 2 nodes of M = 3, so Δ₁S = 2(M-1) - 1 = 3 (not 2 for |A| = 1). */
Test(calibrate_cli, expansion_sensitivity_follows_the_policy_graph, .timeout = 120)
{
    char *dir = ts_tmpdir(), cmd[4096], p[600], *err = NULL, eb[256];
    struct cal_theta *t = NULL;
    static const struct {
        const char *edges;
        double delta_s;
    } cases[] = {{"[]", 2.0}, {"[[\"temperature\",\"humidity\"]]", 3.0}};

    ledger_fixture(dir, 1);
    for (size_t i = 0; i < 2; i++) {
        snprintf(cmd, sizeof(cmd),
                 "cd %s && %s calibrate -i cal.csv --device room1 --ledger led%zu.jsonl "
                 "--set calibrate.private.sensitivity=expansion "
                 "--set 'release.policy.edges=%s' -o theta%zu.json " PRIV,
                 dir, GCDP_BIN, i, cases[i].edges, i);
        cr_assert_eq(sh(dir, cmd, &err), 0, "stderr: %s", err);
        free(err);
        snprintf(p, sizeof(p), "%s/theta%zu.json", dir, i);
        cr_assert_eq(cal_theta_load_file(p, &t, eb, sizeof(eb)), CORE_OK, "%s", eb);
        cr_assert_float_eq(t->delta_S, cases[i].delta_s, 0.0, "edges %s: delta_S %g",
                           cases[i].edges, t->delta_S);
        cal_theta_free(t);
    }
    snprintf(cmd, sizeof(cmd),
             "cd %s && %s calibrate -i cal.csv --device room1 --ledger led9.jsonl "
             "--set calibrate.private.sensitivity=expansion "
             "--set 'release.policy.edges=[[\"temperature\",\"pressure\"]]' -o t9.json " PRIV,
             dir, GCDP_BIN);
    cr_assert_eq(sh(dir, cmd, &err), 2);
    cr_assert(strstr(err, "release.policy.edges[0]: 'pressure'"), "%s", err);
    free(err);
    ts_rmtree(dir);
    free(dir);
}
