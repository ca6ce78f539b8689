/* test_release_cli.c - `gcdp release` / `gcdp ledger` end to end through the real binary:
 * release, replay byte-identity, ledger totals, exit codes and error messages. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "broker.h"
#include "cal/theta.h"
#include "test_support.h"

static const char *const CHANS[3] = {"temperature", "humidity", "co2"};

/* Two released windows and an excluded one (gcdp.window/2, 15 one-minute slots each). */
static void write_windows(const char *path, const char *id_tag)
{
    static const double v1[3] = {0.53, 0.41, 0.33}, v2[3] = {0.55, 0.40, 0.35};
    char a[2048], b[2048], id[64], text[5000];
    snprintf(id, sizeof(id), "room1|0|%s", id_tag);
    ts_window2(a, sizeof(a), "room1", id, 0, 900000, 3, CHANS, v1, 15, 15, 60000);
    snprintf(id, sizeof(id), "room1|900000|%s", id_tag);
    ts_window2(b, sizeof(b), "room1", id, 900000, 1800000, 3, CHANS, v2, 14, 15, 60000);
    snprintf(text, sizeof(text),
             "%s\n%s\n{\"schema\":\"gcdp.window/2\",\"id\":\"room1|1800000|%s\","
             "\"device\":\"room1\",\"window_start\":1800000,\"window_end\":2700000,"
             "\"excluded\":true,\"exclude_reason\":\"long_gap\"}\n",
             a, b, id_tag);
    ts_write_file(path, text);
}

static char *dir;
static char path_theta[512], path_win[512], path_ledger[512];

static void setup(void)
{
    const char *const *names = CHANS;
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
    write_windows(path_win, "c");
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
    char cmd[8192];
    int st;
    snprintf(cmd, sizeof(cmd), "GCDP_LOG_LEVEL=warn %s %s >%s/%s 2>%s/%s", GCDP_BIN, args, dir, out,
             dir, err);
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
    snprintf(args, sizeof(args), "release --theta %s --input %s --ledger %s", path_theta, path_win,
             path_ledger);
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

    snprintf(args, sizeof(args), "release --theta %s --mechanism laplace --ledger %s", path_theta,
             path_ledger);
    cr_assert_eq(run(args, "o", "e"), 2);
    e = slurp("e");
    cr_assert(strstr(e, "release.mechanism"), "%s", e);
    free(e);

    snprintf(args, sizeof(args), "release --theta %s --input %s --set release.eps_min=0.5 --plan",
             path_theta, path_win);
    cr_assert_eq(run(args, "o", "e"), 2);
    e = slurp("e");
    cr_assert(strstr(e, "Algorithm 3"), "%s", e);
    free(e);

    snprintf(args, sizeof(args), "release --theta %s --plan --mechanism lap --input %s", path_theta,
             path_win);
    cr_assert_eq(run(args, "plan", "e"), 0);
    char *plan_text = slurp("plan");
    json_t *plan = json_loads(plan_text, 0, NULL);
    free(plan_text);
    cr_assert_not_null(plan);
    cr_assert_eq(json_array_size(json_object_get(plan, "coords")), 3u);
    json_decref(plan);

    /* cap 1.5: the first run spends 1 per slot; new window ids over the same slots refused */
    char p2[600], l2[600];
    snprintf(l2, sizeof(l2), "%s/ledger-cap.jsonl", dir);
    snprintf(args, sizeof(args),
             "release --theta %s --input %s --ledger %s "
             "--set release.ledger.cap_eps=1.5",
             path_theta, path_win, l2);
    cr_assert_eq(run(args, "o", "e"), 0, "%s", slurp("e"));
    snprintf(p2, sizeof(p2), "%s/w2.jsonl", dir);
    write_windows(p2, "d"); /* new window ids, same slots */
    snprintf(args, sizeof(args),
             "release --theta %s --input %s --ledger %s "
             "--set release.ledger.cap_eps=1.5",
             path_theta, p2, l2);
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
    size_t cap = strlen(orig) + 4096;
    char *text = malloc(cap), few[2048];
    static const double v[3] = {0.5, 0.4, 0.3};
    ts_window2(few, sizeof(few), "room1", "few", 0, 900000, 3, CHANS, v, 3, 15, 60000);
    snprintf(text, cap, "%.*s%s%s\n%s", head, orig,
             "{\"schema\":\"gcdp.window/2\",\"device\":\"room1\"\n", few, orig + head);
    snprintf(path, sizeof(path), "%s/mixed.jsonl", dir);
    ts_write_file(path, text);
    free(text);
    free(orig);
    snprintf(args, sizeof(args), "release --theta %s --input %s --ledger %s --skip-refused",
             path_theta, path, path_ledger);
    cr_assert_eq(run(args, "out", "err"), 0, "skipped records are reported, not a failure");
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

/* ------------------------------------------------------------------ audit regressions */

static long file_size(const char *path)
{
    FILE *f = fopen(path, "r");
    long n = -1;
    if (f && fseek(f, 0, SEEK_END) == 0)
        n = ftell(f);
    if (f)
        fclose(f);
    return n;
}

/* Defect 2: the unit scheme is bound in the ledger header; another slot_ms is refused, so
 * re-running with other slot lengths can no longer release the same window past the cap. */
Test(release_cli, changing_slot_ms_is_refused_by_the_ledger)
{
    static const char *const slots[] = {"60000", "30000", "120000", "20000"};
    char args[2048];
    snprintf(args, sizeof(args), "release --theta %s --input %s --ledger %s", path_theta, path_win,
             path_ledger);
    cr_assert_eq(run(args, "o", "e"), 0, "%s", slurp("e"));
    for (size_t i = 1; i < 4; i++) {
        snprintf(args, sizeof(args),
                 "release --theta %s --input %s --ledger %s "
                 "--set release.ledger.slot_ms=%s --set release.ledger.cap_eps=2.5",
                 path_theta, path_win, path_ledger, slots[i]);
        cr_assert_eq(run(args, "o", "e"), 2, "slot_ms %s", slots[i]);
        char *e = slurp("e");
        cr_assert(strstr(e, "slot_ms 60000") && strstr(e, slots[i]), "%s", e);
        free(e);
    }
    snprintf(args, sizeof(args), "ledger --ledger %s --json", path_ledger);
    cr_assert_eq(run(args, "led", "e"), 0);
    char *led = slurp("led");
    cr_assert_null(strstr(led, "\"releases\":2"), "no unit charged twice: %s", led);
    free(led);
}

/* Defect 5: a typo can no longer wipe the ledger or the input; an emptied ledger is never
 * taken for a new one; gcdp ledger rejects what release would reject. */
Test(release_cli, aliasing_paths_and_emptied_ledgers_are_refused)
{
    char args[4096], link[600], bad[600];
    snprintf(args, sizeof(args), "release --theta %s --input %s --ledger %s", path_theta, path_win,
             path_ledger);
    cr_assert_eq(run(args, "o", "e"), 0, "%s", slurp("e"));
    long led = file_size(path_ledger), win = file_size(path_win);
    cr_assert_gt(led, 0);
    snprintf(args, sizeof(args), "release --theta %s --input %s --ledger %s --output %s",
             path_theta, path_win, path_ledger, path_ledger);
    cr_assert_eq(run(args, "o", "e"), 2);
    cr_assert_eq(file_size(path_ledger), led, "ledger untouched");
    snprintf(link, sizeof(link), "%s/win-link.jsonl", dir);
    cr_assert_eq(symlink(path_win, link), 0);
    snprintf(args, sizeof(args), "release --theta %s --input %s --ledger %s --output %s",
             path_theta, path_win, path_ledger, link);
    cr_assert_eq(run(args, "o", "e"), 2);
    char *e = slurp("e");
    cr_assert(strstr(e, "same file as --input"), "%s", e);
    free(e);
    cr_assert_eq(file_size(path_win), win, "input untouched");
    /* an emptied ledger is refused, by release and by gcdp ledger */
    ts_write_file(path_ledger, "");
    snprintf(args, sizeof(args), "release --theta %s --input %s --ledger %s", path_theta, path_win,
             path_ledger);
    cr_assert_eq(run(args, "o", "e"), 2);
    e = slurp("e");
    cr_assert(strstr(e, "empty") && strstr(e, "never silently new"), "%s", e);
    free(e);
    snprintf(args, sizeof(args), "ledger --ledger %s", path_ledger);
    cr_assert_eq(run(args, "o", "e"), 1);
    snprintf(args, sizeof(args), "ledger --ledger %s", dir);
    cr_assert_eq(run(args, "o", "e"), 1, "a directory is not a ledger");
    /* rows release would reject: negative eps, no units */
    static const char *const rows[] = {
        "{\"v\":1,\"id\":\"a\",\"mech\":\"lap\",\"units\":[\"u\"],\"eps\":-1,\"rho\":0,"
        "\"delta\":0,\"out\":\"\"}",
        "{\"v\":1,\"id\":\"a\",\"mech\":\"lap\",\"units\":[],\"eps\":1,\"rho\":0,"
        "\"delta\":0,\"out\":\"\"}"};
    snprintf(bad, sizeof(bad), "%s/bad.jsonl", dir);
    for (size_t i = 0; i < 2; i++) {
        char text[1024];
        snprintf(text, sizeof(text),
                 "{\"gcdp_ledger\":2,\"scheme\":{\"unit\":\"<device>|floor(t/slot_ms)\","
                 "\"slot_ms\":60000,\"time_radius\":0,\"period_ms\":60000},\"cap\":{\"eps\":10,"
                 "\"rho\":0,\"delta\":1e-05},\"accounting\":\"basic\"}\n%s\n%s\n",
                 rows[i],
                 "{\"v\":1,\"id\":\"b\",\"mech\":\"lap\",\"units\":[\"u\"],\"eps\":1,"
                 "\"rho\":0,\"delta\":0,\"out\":\"\"}");
        ts_write_file(bad, text);
        snprintf(args, sizeof(args), "ledger --ledger %s", bad);
        cr_assert_eq(run(args, "o", "e"), 1, "row %zu accepted", i);
    }
}

/* Records without provenance (gcdp.window/1) are refused by name. */
Test(release_cli, window_records_without_provenance_are_refused)
{
    char args[2048], path[600];
    snprintf(path, sizeof(path), "%s/old.jsonl", dir);
    ts_write_file(path, "{\"schema\":\"gcdp.window/1\",\"id\":\"x|0|c\",\"device\":\"x\","
                        "\"window_start\":0,\"window_end\":900000,\"n\":15,"
                        "\"nodes\":{\"temperature\":0.5,\"humidity\":0.4,\"co2\":0.3},"
                        "\"n_node\":{\"temperature\":15,\"humidity\":15,\"co2\":15}}\n");
    snprintf(args, sizeof(args), "release --theta %s --input %s --ledger %s", path_theta, path,
             path_ledger);
    cr_assert_eq(run(args, "o", "e"), 1);
    char *e = slurp("e");
    cr_assert(strstr(e, "gcdp.window/1 carries no provenance"), "%s", e);
    free(e);
}

/* The explicit scheme change: `gcdp ledger --carry-to` starts every new unit at the most any
 * overlapping old unit spent and keeps every release id's bytes, so a replay after the
 * change republishes the same record and the cap still counts what was spent before. */
Test(release_cli, carry_to_a_new_slot_length_keeps_spent_budget_and_replays)
{
    char args[4096], l30[600], wd[600], we[600];
    snprintf(l30, sizeof(l30), "%s/ledger30.jsonl", dir);
    snprintf(wd, sizeof(wd), "%s/wd.jsonl", dir);
    snprintf(we, sizeof(we), "%s/we.jsonl", dir);
    write_windows(wd, "d");
    write_windows(we, "e");
    snprintf(args, sizeof(args),
             "release --theta %s --input %s --ledger %s "
             "--set release.ledger.cap_eps=2.5",
             path_theta, path_win, path_ledger);
    cr_assert_eq(run(args, "out1", "e"), 0, "%s", slurp("e"));
    snprintf(args, sizeof(args),
             "ledger --ledger %s --carry-to %s --set "
             "release.ledger.slot_ms=30000 --set release.ledger.cap_eps=2.5",
             path_ledger, l30);
    cr_assert_eq(run(args, "o", "e"), 0, "%s", slurp("e"));
    snprintf(args, sizeof(args),
             "release --theta %s --input %s --ledger %s "
             "--set release.ledger.cap_eps=2.5 --set release.ledger.slot_ms=30000",
             path_theta, path_win, l30);
    cr_assert_eq(run(args, "out2", "e"), 0, "%s", slurp("e"));
    char *a = slurp("out1"), *b = slurp("out2");
    cr_assert_str_eq(a, b, "after the carry the same release ids replay the same bytes");
    free(a);
    free(b);
    snprintf(args, sizeof(args),
             "release --theta %s --input %s --ledger %s "
             "--set release.ledger.cap_eps=2.5 --set release.ledger.slot_ms=30000",
             path_theta, wd, l30);
    cr_assert_eq(run(args, "o", "e"), 0, "1 carried + 1 <= 2.5: %s", slurp("e"));
    snprintf(args, sizeof(args),
             "release --theta %s --input %s --ledger %s "
             "--set release.ledger.cap_eps=2.5 --set release.ledger.slot_ms=30000",
             path_theta, we, l30);
    cr_assert_eq(run(args, "o", "e"), 1, "1 carried + 1 + 1 > 2.5 must be refused");
    char *e = slurp("e");
    cr_assert(strstr(e, "privacy budget: unit 'room1|0'"), "%s", e);
    free(e);
}

/* A full disk (here a file-size limit on the ledger) refuses the release and loses nothing:
 * exit 1 with the ledger's I/O error, the output file untouched, and a rerun without the
 * limit republishes what was committed and releases the rest. */
Test(release_cli, full_disk_on_the_ledger_refuses_and_loses_nothing)
{
    char args[4096], out[600], led[600], win[600], big[200000];
    size_t off = 0;
    static const double v[3] = {0.5, 0.4, 0.3};
    snprintf(win, sizeof(win), "%s/many.jsonl", dir);
    snprintf(out, sizeof(out), "%s/out-full.jsonl", dir);
    snprintf(led, sizeof(led), "%s/ledger-full.jsonl", dir);
    for (int i = 0; i < 60; i++) { /* 60 windows of 15 minutes */
        char id[64], line[2048];
        snprintf(id, sizeof(id), "room1|%d|c", i * 900000);
        ts_window2(line, sizeof(line), "room1", id, (long long)i * 900000,
                   (long long)(i + 1) * 900000, 3, CHANS, v, 15, 15, 60000);
        off += (size_t)snprintf(big + off, sizeof(big) - off, "%s\n", line);
    }
    ts_write_file(win, big);
    ts_write_file(out, "previous output\n");
    snprintf(args, sizeof(args),
             "prlimit --fsize=12000 %s release --theta %s --input %s "
             "--ledger %s --output %s --set release.ledger.batch=4 >%s/o 2>%s/e",
             GCDP_BIN, path_theta, win, led, out, dir, dir);
    int st = system(args);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "exit %d: %s", WEXITSTATUS(st), slurp("e"));
    char *e = slurp("e");
    cr_assert(strstr(e, "ledger commit failed") && strstr(e, "nothing of the batch was published"),
              "%s", e);
    free(e);
    char *prev = ts_read_file(out, NULL);
    cr_assert_str_eq(prev, "previous output\n", "a failed run leaves the output untouched");
    free(prev);
    snprintf(args, sizeof(args), "release --theta %s --input %s --ledger %s --output %s",
             path_theta, win, led, out);
    cr_assert_eq(run(args, "o", "e"), 0, "%s", slurp("e"));
    char *text = ts_read_file(out, NULL);
    int lines = 0;
    for (char *p = text; *p; p++)
        lines += *p == '\n';
    cr_assert_eq(lines, 60, "every window released exactly once across the two runs");
    free(text);
}

/* Release through pipes: each record reaches a live stdout pipe as soon as it is committed
 * (line-buffered, not at exit), and SIGTERM in the middle of a run leaves no half-written
 * output file: the target keeps its old content. A directory as input is refused before
 * the ledger is opened. */
Test(release_cli, live_pipe_output_sigterm_and_directory_input, .timeout = 120)
{
    char fifo[600], out[600], led[600], cmd[4096], line[4096];
    static const double v[3] = {0.5, 0.4, 0.3};
    FILE *w, *r;
    pid_t pid;

    snprintf(fifo, sizeof(fifo), "%s/in.fifo", dir);
    snprintf(out, sizeof(out), "%s/out-live.jsonl", dir);
    snprintf(led, sizeof(led), "%s/ledger-live.jsonl", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    /* 1. stdout is a pipe: the first record arrives while the input is still open */
    snprintf(cmd, sizeof(cmd),
             "%s release --theta %s --input %s --ledger %s "
             "--set release.ledger.batch=1 --log-level warn",
             GCDP_BIN, path_theta, fifo, led);
    r = popen(cmd, "r");
    cr_assert_not_null(r);
    w = fopen(fifo, "w");
    cr_assert_not_null(w);
    ts_window2(line, sizeof(line), "room1", "room1|0|live", 0, 900000, 3, CHANS, v, 15, 15, 60000);
    fprintf(w, "%s\n", line);
    fflush(w);
    cr_assert_not_null(fgets(line, sizeof(line), r), "no record before the input ended");
    cr_assert(strstr(line, "room1|0|live@4"), "%s", line);
    fclose(w);
    cr_assert_eq(pclose(r), 0);
    /* 2. SIGTERM mid-run: the output file keeps its old content */
    ts_write_file(out, "old\n");
    {
        const char *args[] = {"release",
                              "--theta",
                              path_theta,
                              "--input",
                              fifo,
                              "--ledger",
                              led,
                              "--output",
                              out,
                              "--set",
                              "release.ledger.batch=1",
                              "--log-level",
                              "warn",
                              NULL};
        pid = ts_spawn(args, NULL, NULL);
    }
    w = fopen(fifo, "w");
    cr_assert_not_null(w);
    ts_window2(line, sizeof(line), "room1", "room1|900000|live", 900000, 1800000, 3, CHANS, v, 15,
               15, 60000);
    fprintf(w, "%s\n", line);
    fflush(w);
    ts_sleep_ms(500);
    kill(pid, SIGTERM);
    cr_assert_neq(ts_wait(pid, 10000), -1);
    fclose(w);
    char *old = ts_read_file(out, NULL);
    cr_assert_str_eq(old, "old\n", "a killed run must not leave a partial output");
    free(old);
    /* 3. a directory as input */
    snprintf(cmd, sizeof(cmd), "release --theta %s --input %s --ledger %s/never.jsonl", path_theta,
             dir, dir);
    cr_assert_eq(run(cmd, "o", "e"), 2);
    char *e = slurp("e");
    cr_assert(strstr(e, "is a directory"), "%s", e);
    free(e);
    snprintf(cmd, sizeof(cmd), "%s/never.jsonl", dir);
    cr_assert_eq(access(cmd, F_OK), -1, "no ledger created for a refused input");
}

/* A JSON row that release would reject fails `gcdp ledger` also as the last line (only an
 * unparsable or unterminated last line is a torn append, as when release opens it). */
Test(release_cli, ledger_rejects_an_invalid_last_row_as_release_does)
{
    char args[2048], bad[600];
    snprintf(bad, sizeof(bad), "%s/bad-last.jsonl", dir);
    ts_write_file(bad,
                  "{\"gcdp_ledger\":2,\"scheme\":{\"unit\":\"<device>|floor(t/slot_ms)\","
                  "\"slot_ms\":60000,\"time_radius\":0,\"period_ms\":60000},\"cap\":{\"eps\":10,"
                  "\"rho\":0,\"delta\":1e-05},\"accounting\":\"basic\"}\n"
                  "{\"v\":1,\"id\":\"a\",\"mech\":\"lap\",\"units\":[\"u\"],\"eps\":-1,"
                  "\"rho\":0,\"delta\":0,\"out\":\"\"}\n");
    snprintf(args, sizeof(args), "ledger --ledger %s", bad);
    cr_assert_eq(run(args, "o", "e"), 1);
    char *e = slurp("e");
    cr_assert(strstr(e, "not a valid ledger row"), "%s", e);
    free(e);
    snprintf(args, sizeof(args), "release --theta %s --input %s --ledger %s", path_theta, path_win,
             bad);
    cr_assert_neq(run(args, "o", "e"), 0, "release refuses the same file");
}

/* release.ledger.store: the same releases and replays on the SQLite store, the audit log read
 * by `gcdp ledger`, an existing JSONL ledger refused until imported, then imported once. */
Test(release_cli, ledger_store_replays_and_imports_a_jsonl_ledger)
{
    char args[4096], db[600], l2[600], db2[600], *e0;
    snprintf(db, sizeof(db), "%s/ledger.db", dir);
    snprintf(l2, sizeof(l2), "%s/l2.jsonl", dir);
    snprintf(db2, sizeof(db2), "%s/l2.db", dir);
    snprintf(args, sizeof(args),
             "release --theta %s --input %s --ledger %s "
             "--set release.ledger.store=%s",
             path_theta, path_win, path_ledger, db);
    cr_assert_eq(run(args, "out1", "e"), 0, "%s", slurp("e"));
    cr_assert_eq(run(args, "out2", "e"), 0, "%s", slurp("e"));
    char *a = slurp("out1"), *b = slurp("out2");
    cr_assert_str_eq(a, b, "rerun on the store republishes the same bytes");
    free(b);
    snprintf(args, sizeof(args), "ledger --ledger %s --json --unit room1", path_ledger);
    cr_assert_eq(run(args, "led", "e"), 0, "the audit log is a JSONL ledger: %s", slurp("e"));
    char *led = slurp("led"), *p = led;
    int units = 0;
    while ((p = strstr(p, "\"releases\":1"))) {
        units++;
        p++;
    }
    cr_assert_eq(units, 30, "%s", led);
    free(led);
    snprintf(args, sizeof(args),
             "release --theta %s --input %s --ledger %s --output %s "
             "--set release.ledger.store=%s",
             path_theta, path_win, path_ledger, db, db);
    cr_assert_eq(run(args, "o", "e"), 2, "the output may not be the store");
    e0 = slurp("e");
    cr_assert(strstr(e0, "the ledger store"), "%s", e0);
    free(e0);
    /* a JSONL ledger without its store is refused by name, then imported once */
    snprintf(args, sizeof(args), "release --theta %s --input %s --ledger %s", path_theta, path_win,
             l2);
    cr_assert_eq(run(args, "out3", "e"), 0, "%s", slurp("e"));
    snprintf(args, sizeof(args),
             "release --theta %s --input %s --ledger %s "
             "--set release.ledger.store=%s",
             path_theta, path_win, l2, db2);
    cr_assert_eq(run(args, "o", "e"), 2);
    char *e = slurp("e");
    cr_assert(strstr(e, "--import"), "%s", e);
    free(e);
    snprintf(args, sizeof(args), "ledger --import %s --to %s", l2, db2);
    cr_assert_eq(run(args, "o", "e"), 0, "%s", slurp("e"));
    cr_assert_eq(run(args, "o", "e"), 1, "a second import refuses the existing store");
    snprintf(args, sizeof(args),
             "release --theta %s --input %s --ledger %s "
             "--set release.ledger.store=%s",
             path_theta, path_win, l2, db2);
    cr_assert_eq(run(args, "out4", "e"), 0, "%s", slurp("e"));
    char *c = slurp("out3"), *d = slurp("out4");
    cr_assert_str_eq(c, d, "after the import the same ids replay the same bytes");
    free(a);
    free(c);
    free(d);
}
