/* test_pipeline.c - the offline commands' work as library calls: pipe/calibrate.h (public and
 * private θ, the θ check), pipe/ledger.h (the units' totals, refusals), pipe/release.h (the
 * usage errors it tells apart from runtime failures). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cal/config.h"
#include "cal/theta.h"
#include "core/config.h"
#include "core/kconf.h"
#include "core/log.h"
#include "ing/config.h"
#include "pipe/calibrate.h"
#include "pipe/ledger.h"
#include "pipe/release.h"
#include "rel/config.h"
#include "test_support.h"

static struct core_config *cfg_new(void)
{
    static const struct core_cfg_key *const tables[] = {core_config_keys, ing_config_keys,
                                                        cal_config_keys, rel_config_keys};
    struct core_config *cfg;

    core_log_level = CORE_LOG_OFF;
    cfg = core_config_new(tables, sizeof(tables) / sizeof(*tables));
    cr_assert_not_null(cfg);
    return cfg;
}

static void set(struct core_config *cfg, const char *key, const char *value)
{
    char eb[256] = "";
    cr_assert_eq(core_config_set(cfg, key, value, "flag", eb, sizeof(eb)), CORE_OK, "%s", eb);
}

/* 60 rows, one a minute from t = 0, three smooth columns (a timestamp column first). */
static void write_matrix(const char *path)
{
    char *text = malloc(60 * 96 + 64);
    size_t off = (size_t)sprintf(text, "ts,temperature,humidity,co2\n");

    for (int r = 0; r < 60; r++)
        off += (size_t)sprintf(
            text + off, "%d,%.6f,%.6f,%.6f\n", r * 60000, 0.5 + 0.4 * sin(0.1 * r),
            0.5 + 0.3 * sin(0.1 * r + 0.3) + 0.05 * cos(1.7 * r), 0.5 + 0.4 * cos(0.37 * r));
    ts_write_file(path, text);
    free(text);
}

Test(pipeline, calibrate_public_writes_a_theta_that_checks)
{
    char *dir = ts_tmpdir(), in[600], out[600], eb[1024] = "";
    struct core_config *cfg = cfg_new();
    struct pipe_cal_offline req = {.input = in, .output = out};
    FILE *f = tmpfile();
    struct cal_theta *t = NULL;

    snprintf(in, sizeof(in), "%s/cal.csv", dir);
    snprintf(out, sizeof(out), "%s/theta.json", dir);
    write_matrix(in);
    set(cfg, "calibrate.version", "7");
    cr_assert_eq(pipe_calibrate_offline(cfg, &req, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(cal_theta_load_file(out, &t, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(t->version, 7);
    cr_assert_eq(t->n_nodes, 3);
    cal_theta_free(t);
    cr_assert_eq(pipe_calibrate_check_file(out, f, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_gt(ftell(f), 0, "one describing line");
    fclose(f);
    cr_assert_neq(pipe_calibrate_check_file(in, stdout, eb, sizeof(eb)), CORE_OK);
    cr_assert(strncmp(eb, "invalid theta: ", 15) == 0, "%s", eb);
    core_config_free(cfg);
    ts_rmtree(dir);
    free(dir);
}

/* Private mode charges the ledger before θ exists; the ledger's view shows the unit. A
 * missing device id is a usage error (CORE_ECONFIG), a missing input a runtime one. */
Test(pipeline, calibrate_private_charges_the_ledger_the_view_shows)
{
    char *dir = ts_tmpdir(), in[600], out[600], led[600], eb[1024] = "", line[512];
    const char *dev[1] = {"room1"};
    struct core_config *cfg = cfg_new();
    struct pipe_cal_offline req = {.input = in, .output = out, .ledger = led};
    FILE *units = tmpfile(), *log = tmpfile();
    struct pipe_ledger_view v = {
        .prefix = "room1|0", .as_json = true, .out = units, .log = log, .prog = "t"};
    bool seen = false;

    snprintf(in, sizeof(in), "%s/cal.csv", dir);
    snprintf(out, sizeof(out), "%s/theta.json", dir);
    snprintf(led, sizeof(led), "%s/led.jsonl", dir);
    write_matrix(in);
    set(cfg, "calibrate.mode", "private");
    set(cfg, "calibrate.eps_G", "1");
    set(cfg, "calibrate.eps_xi", "0.5");
    cr_assert_eq(pipe_calibrate_offline(cfg, &req, eb, sizeof(eb)), CORE_ECONFIG);
    cr_assert(strstr(eb, "--device") != NULL, "%s", eb);
    req.devices = dev;
    req.n_devices = 1;
    req.input = "/nonexistent/cal.csv";
    cr_assert_neq(pipe_calibrate_offline(cfg, &req, eb, sizeof(eb)), CORE_ECONFIG);
    req.input = in;
    cr_assert_eq(pipe_calibrate_offline(cfg, &req, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(pipe_ledger_view(led, &v, cfg, eb, sizeof(eb)), CORE_OK, "%s", eb);
    rewind(units);
    while (fgets(line, sizeof(line), units))
        seen = seen || (strstr(line, "\"unit\":\"room1|0\"") && strstr(line, "\"eps\":1.5"));
    cr_assert(seen, "room1|0 charged eps_cal = 1.5");
    v.carry = "x.jsonl";
    cr_assert_eq(pipe_ledger_view(led, &v, cfg, eb, sizeof(eb)), CORE_ECONFIG,
                 "--carry-to with --unit");
    v.carry = NULL;
    cr_assert_neq(pipe_ledger_view("/nonexistent/led.jsonl", &v, cfg, eb, sizeof(eb)), CORE_OK);
    fclose(units);
    fclose(log);
    core_config_free(cfg);
    ts_rmtree(dir);
    free(dir);
}

Test(pipeline, release_tells_usage_from_runtime_errors)
{
    char *dir = ts_tmpdir(), led[600];
    struct core_config *cfg = cfg_new();
    FILE *log = tmpfile();
    struct pipe_release_offline req = {.theta = "/nonexistent/theta.json",
                                       .input = dir,
                                       .output = "-",
                                       .ledger_path = led,
                                       .log = log,
                                       .prog = "t"};

    snprintf(led, sizeof(led), "%s/led.jsonl", dir);
    cr_assert_eq(pipe_release_offline(cfg, &req), CORE_ECONFIG, "a θ that does not load");
    fclose(log);
    core_config_free(cfg);
    ts_rmtree(dir);
    free(dir);
}
