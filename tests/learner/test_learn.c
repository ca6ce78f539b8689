/* test_learn.c - lrn/learn.h: one offline run over participant CSV files writes the DAG
 * files and the metrics file; bad inputs fail with a reason naming the file. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "core/kconf.h"
#include "core/log.h"
#include "lrn/config.h"
#include "lrn/fedsvc.h"
#include "lrn/learn.h"
#include "lrn/runner.h"
#include "test_support.h"

/* d = 3 chain x0 -> x1 -> x2, n rows, deterministic (no RNG: the values only need spread). */
static void write_participant(const char *path, int n, double phase)
{
    char *text = malloc((size_t)n * 80 + 32);
    size_t off = (size_t)sprintf(text, "a,b,c\n");

    for (int i = 0; i < n; i++) {
        double x0 = sin(0.7 * i + phase), x1 = 1.5 * x0 + 0.4 * cos(1.3 * i);
        double x2 = -1.2 * x1 + 0.4 * sin(2.9 * i + 0.5);
        off += (size_t)sprintf(text + off, "%.6f,%.6f,%.6f\n", x0, x1, x2);
    }
    ts_write_file(path, text);
    free(text);
}

static struct core_config *cfg_new(void)
{
    static const struct core_cfg_key *const tables[] = {lrn_config_keys};
    struct core_config *cfg = core_config_new(tables, 1);
    cr_assert_not_null(cfg);
    return cfg;
}

Test(learn, run_writes_graph_and_metrics)
{
    char *dir = ts_tmpdir(), p1[600], p2[600], out[600], path[700], eb[1024] = "", *text;
    const char *files[2] = {p1, p2};
    struct core_config *cfg = cfg_new();
    FILE *so = tmpfile(), *se = tmpfile();
    struct lrn_learn *l = NULL;
    struct lrn_runner_opts o;

    snprintf(p1, sizeof(p1), "%s/p1.csv", dir);
    snprintf(p2, sizeof(p2), "%s/p2.csv", dir);
    snprintf(out, sizeof(out), "%s/res/learned", dir);
    write_participant(p1, 60, 0.0);
    write_participant(p2, 60, 1.0);
    struct lrn_learn_job job = {.files = files,
                                .P = 2,
                                .min_rows = 10,
                                .out = out,
                                .quiet = true,
                                .out_f = so,
                                .log_f = se,
                                .prog = "test"};
    cr_assert_eq(lrn_learn_load(&job, NULL, &l, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(lrn_learn_d(l), 3);
    o = lrn_runner_opts_default(LRN_METHOD_FED_SPARSE, 3);
    o.admm.max_rounds = 3;
    cr_assert_eq(lrn_learn_configure(l, cfg, &o, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(lrn_learn_run(l, &o, eb, sizeof(eb)), CORE_OK, "%s", eb);
    lrn_learn_free(l);
    snprintf(path, sizeof(path), "%s.metrics.json", out);
    text = ts_read_file(path, NULL);
    cr_assert(text && strstr(text, "gcdp.learn-metrics/1") && strstr(text, "\"participants\": 2"),
              "%s", text ? text : "(no metrics file)");
    free(text);
    snprintf(path, sizeof(path), "%s.dot", out);
    cr_assert_eq(access(path, F_OK), 0, "the DOT file is written");
    fflush(so);
    cr_assert(ftell(so) > 0, "summary lines on out_f");
    fclose(so);
    fclose(se);
    core_config_free(cfg);
    ts_rmtree(dir);
    free(dir);
}

Test(learn, bad_inputs_fail_naming_the_file)
{
    char *dir = ts_tmpdir(), p1[600], p2[600], eb[1024] = "";
    const char *files[2] = {p1, p2};
    struct lrn_learn *l = NULL;

    snprintf(p1, sizeof(p1), "%s/p1.csv", dir);
    snprintf(p2, sizeof(p2), "%s/missing.csv", dir);
    write_participant(p1, 20, 0.0);
    struct lrn_learn_job job = {.files = files,
                                .P = 2,
                                .min_rows = 10,
                                .out = "x",
                                .out_f = stdout,
                                .log_f = stderr,
                                .prog = "test"};
    cr_assert_neq(lrn_learn_load(&job, NULL, &l, eb, sizeof(eb)), CORE_OK);
    cr_assert_null(l);
    cr_assert(strstr(eb, "missing.csv") != NULL, "%s", eb);
    ts_write_file(p1, "a\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n");
    job.P = 1;
    cr_assert_eq(lrn_learn_load(&job, NULL, &l, eb, sizeof(eb)), CORE_EINVAL);
    cr_assert(strstr(eb, "need at least 2 columns") && strstr(eb, "p1.csv"), "%s", eb);
    ts_rmtree(dir);
    free(dir);
}

/* lrn_fedsvc_run: stopped before it starts (no broker reachable), each service still ends
 * with its closing line. */
Test(learn, fedsvc_run_closing_lines, .timeout = 60)
{
    static const struct core_cfg_key *const tables[] = {core_config_keys, lrn_config_keys};
    struct core_config *cfg = core_config_new(tables, 2);
    char *dir = ts_tmpdir(), eb[1024] = "", text[512] = "";
    atomic_bool stop = true;
    FILE *f = tmpfile();

    core_log_level = CORE_LOG_OFF;
    cr_assert_not_null(cfg);
    cr_assert_eq(core_config_set(cfg, "broker.bootstrap", "127.0.0.1:1", "flag", eb, sizeof(eb)),
                 CORE_OK);
    cr_assert_eq(core_config_set(cfg, "state.dir", dir, "flag", eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(lrn_fedsvc_run(cfg, NULL, "s1", NULL, 0, &stop, f, "t", eb, sizeof(eb)), CORE_OK,
                 "%s", eb);
    cr_assert_eq(lrn_fedsvc_run(cfg, NULL, NULL, NULL, 0, &stop, f, "t", eb, sizeof(eb)), CORE_OK,
                 "%s", eb);
    rewind(f);
    cr_assert(fread(text, 1, sizeof(text) - 1, f) > 0);
    cr_assert(strstr(text, "t --participant s1: 0 rows held") &&
                  strstr(text, "t --server: 0 sessions completed"),
              "%s", text);
    fclose(f);
    core_config_free(cfg);
    ts_rmtree(dir);
    free(dir);
}
