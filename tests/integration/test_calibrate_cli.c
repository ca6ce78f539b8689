/* test_calibrate_cli.c - `gcdp calibrate` end to end: exit codes, θ output validated by
 * the strict parser and the JSON schema, clear errors for bad θ and bad configuration. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

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
    snprintf(full, sizeof(full), "%s 2>%s", cmd, path);
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
             "--set calibrate.eps_xi=0.5 --log-level warn",
             GCDP_BIN, OCC, out);
    cr_assert_eq(sh(dir, cmd, &err), 0, "stderr: %s", err);
    free(err);
    cr_assert_eq(cal_theta_load_file(out, &t, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(t->mode, CAL_MODE_PRIVATE);
    cr_assert_float_eq(cal_theta_eps_cal_total(t), 1.5, 1e-15);
    cal_theta_free(t);
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
    ts_write_file(p, "{\"schema\": \"gcdp.theta/1\", \"nodes\": [\"a\"], \"coords\": [], \"x\": 1}");
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
    snprintf(cmd, sizeof(cmd), "head -n 301 %s | %s calibrate -i - -f occupancy -o %s --log-level warn",
             OCC, GCDP_BIN, out);
    cr_assert_eq(sh(dir, cmd, &err), 0, "stderr: %s", err);
    free(err);
    cr_assert_eq(cal_theta_load_file(out, &t, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(t->n_cal, 300, "header + 300 rows from the pipe");
    cal_theta_free(t);
    ts_rmtree(dir);
    free(dir);
}
