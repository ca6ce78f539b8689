/* test_release_cli.c - `gcdp release` / `gcdp ledger` end to end through the real binary:
 * release, replay byte-identity, ledger totals, exit codes and error messages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "cal/theta.h"
#include "test_support.h"

static const char *WINDOWS =
    "{\"schema\":\"gcdp.window/1\",\"id\":\"room1|0|c\",\"device\":\"room1\","
    "\"window_start\":0,\"window_end\":900000,\"n\":15,\"n_slots\":15,"
    "\"nodes\":{\"temperature\":0.53,\"humidity\":0.41,\"co2\":0.33},"
    "\"n_node\":{\"temperature\":15,\"humidity\":15,\"co2\":15}}\n"
    "{\"schema\":\"gcdp.window/1\",\"id\":\"room1|900000|c\",\"device\":\"room1\","
    "\"window_start\":900000,\"window_end\":1800000,\"n\":14,\"n_slots\":15,"
    "\"nodes\":{\"temperature\":0.55,\"humidity\":0.40,\"co2\":0.35},"
    "\"n_node\":{\"temperature\":14,\"humidity\":14,\"co2\":14}}\n"
    "{\"schema\":\"gcdp.window/1\",\"id\":\"room1|1800000|c\",\"device\":\"room1\","
    "\"window_start\":1800000,\"window_end\":2700000,\"excluded\":true,"
    "\"exclude_reason\":\"long_gap\"}\n";

static char *dir;
static char path_theta[512], path_win[512], path_ledger[512];

static void setup(void)
{
    static const char *names[] = {"temperature", "humidity", "co2"};
    struct cal_theta *t = NULL;
    char eb[256];

    dir = ts_tmpdir();
    snprintf(path_theta, sizeof(path_theta), "%s/theta.json", dir);
    snprintf(path_win, sizeof(path_win), "%s/windows.jsonl", dir);
    snprintf(path_ledger, sizeof(path_ledger), "%s/ledger.jsonl", dir);
    cr_assert_eq(cal_theta_new(3, 3, &t), CORE_OK);
    for (size_t m = 0; m < 3; m++) {
        cr_assert_eq(cal_theta_set_node(t, m, names[m]), CORE_OK);
        t->exposure[m] = 0.5 * (double)m;
        t->mu[m] = 0.5;
    }
    cr_assert_eq(cal_theta_set_identity_coords(t), CORE_OK);
    t->version = 4;
    cr_assert_eq(cal_theta_save_file(t, path_theta, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cal_theta_free(t);
    ts_write_file(path_win, WINDOWS);
}

static void teardown(void)
{
    ts_rmtree(dir);
    free(dir);
}

TestSuite(release_cli, .init = setup, .fini = teardown, .timeout = 120);

/* Run `gcdp <args>` with stdout/stderr to files; returns the exit status. */
static int run(const char *args, const char *out, const char *err)
{
    char cmd[4096];
    int st;
    snprintf(cmd, sizeof(cmd), "GCDP_LOG_LEVEL=warn %s %s >%s/%s 2>%s/%s", GCDP_BIN, args, dir,
             out, dir, err);
    st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *slurp(const char *name)
{
    char p[600];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    char *s = ts_read_file(p, NULL);
    cr_assert_not_null(s, "%s", p);
    return s;
}

Test(release_cli, release_then_rerun_replays_identical_bytes)
{
    char args[2048];
    snprintf(args, sizeof(args), "release --theta %s --input %s --ledger %s", path_theta,
             path_win, path_ledger);
    cr_assert_eq(run(args, "out1", "err1"), 0, "%s", slurp("err1"));
    cr_assert_eq(run(args, "out2", "err2"), 0, "%s", slurp("err2"));
    char *a = slurp("out1"), *b = slurp("out2");
    cr_assert_str_eq(a, b, "rerun must republish the same bytes");
    int lines = 0;
    for (char *p = a; *p; p++)
        lines += *p == '\n';
    cr_assert_eq(lines, 2, "two windows released, the excluded one skipped");
    json_t *r = json_loads(a, JSON_DISABLE_EOF_CHECK, NULL);
    cr_assert_str_eq(json_string_value(json_object_get(r, "release_id")), "room1|0|c@4");
    json_decref(r);
    free(a);
    free(b);

    snprintf(args, sizeof(args), "ledger --ledger %s --json --unit room1", path_ledger);
    cr_assert_eq(run(args, "led", "lederr"), 0);
    char *led = slurp("led"), *p = led;
    int units = 0;
    while ((p = strstr(p, "\"releases\":1"))) {
        units++;
        p++;
    }
    cr_assert_eq(units, 30, "2 windows x 15 one-minute slots, each charged once: %s", led);
    free(led);
}

Test(release_cli, errors_have_clear_messages_and_exit_codes)
{
    char args[2048];
    snprintf(args, sizeof(args), "release --theta %s/nope.json --input %s --ledger %s", dir,
             path_win, path_ledger);
    cr_assert_eq(run(args, "o", "e"), 2);
    char *e = slurp("e");
    cr_assert(strstr(e, "theta") && strstr(e, "nope.json"), "%s", e);
    free(e);

    snprintf(args, sizeof(args), "release --theta %s --mechanism laplace --ledger %s",
             path_theta, path_ledger);
    cr_assert_eq(run(args, "o", "e"), 2);
    e = slurp("e");
    cr_assert(strstr(e, "release.mechanism"), "%s", e);
    free(e);

    snprintf(args, sizeof(args), "release --theta %s --set release.eps_min=0.5 --plan",
             path_theta);
    cr_assert_eq(run(args, "o", "e"), 2);
    e = slurp("e");
    cr_assert(strstr(e, "Algorithm 3"), "%s", e);
    free(e);

    snprintf(args, sizeof(args), "release --theta %s --plan --mechanism lap", path_theta);
    cr_assert_eq(run(args, "plan", "e"), 0);
    char *plan_text = slurp("plan");
    json_t *plan = json_loads(plan_text, 0, NULL);
    free(plan_text);
    cr_assert_not_null(plan);
    cr_assert_eq(json_array_size(json_object_get(plan, "coords")), 3u);
    json_decref(plan);

    /* cap 1.5: the first run spends 1 per slot; new window ids over the same slots refused */
    snprintf(args, sizeof(args), "release --theta %s --input %s --ledger %s "
             "--set release.ledger.cap_eps=1.5", path_theta, path_win, path_ledger);
    cr_assert_eq(run(args, "o", "e"), 0, "%s", slurp("e"));
    char p2[600];
    snprintf(p2, sizeof(p2), "%s/w2.jsonl", dir);
    char *orig = ts_read_file(path_win, NULL);
    for (char *q = orig; (q = strstr(q, "|c\"")); q++)
        q[1] = 'd'; /* new window ids, same slots */
    ts_write_file(p2, orig);
    free(orig);
    snprintf(args, sizeof(args), "release --theta %s --input %s --ledger %s "
             "--set release.ledger.cap_eps=1.5", path_theta, p2, path_ledger);
    cr_assert_eq(run(args, "o", "e"), 1);
    e = slurp("e");
    cr_assert(strstr(e, "privacy budget: unit 'room1|0'") && strstr(e, "cap eps=1.5"), "%s", e);
    free(e);
}

Test(release_cli, skip_refused_reports_the_line_and_releases_the_rest)
{
    char args[2048], path[600];
    char *orig = ts_read_file(path_win, NULL), *nl = strchr(orig, '\n');
    cr_assert_not_null(nl);
    /* a malformed record and a window with too few samples between the good ones */
    int head = (int)(nl - orig) + 1;
    size_t cap = strlen(orig) + 512;
    char *text = malloc(cap);
    snprintf(text, cap, "%.*s%s%s", head, orig,
             "{\"schema\":\"gcdp.window/1\",\"device\":\"room1\"\n"
             "{\"schema\":\"gcdp.window/1\",\"id\":\"few\",\"device\":\"room1\","
             "\"window_start\":0,\"window_end\":900000,"
             "\"nodes\":{\"temperature\":0.5,\"humidity\":0.4,\"co2\":0.3},"
             "\"n_node\":{\"temperature\":3,\"humidity\":15,\"co2\":15}}\n",
             orig + head);
    snprintf(path, sizeof(path), "%s/mixed.jsonl", dir);
    ts_write_file(path, text);
    free(text);
    free(orig);
    snprintf(args, sizeof(args), "release --theta %s --input %s --ledger %s --skip-refused",
             path_theta, path, path_ledger);
    cr_assert_eq(run(args, "out", "err"), 1, "some record skipped -> exit 1");
    char *out = slurp("out"), *err = slurp("err");
    int lines = 0;
    for (char *p = out; *p; p++)
        lines += *p == '\n';
    cr_assert_eq(lines, 2, "both good windows released: %s", out);
    cr_assert(strstr(err, "input line 2:") && strstr(err, "input line 3:") &&
              strstr(err, "3 real samples") && strstr(err, "2 record(s) refused and skipped"),
              "%s", err);
    free(out);
    free(err);
}
