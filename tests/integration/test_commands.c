/* test_commands.c - `gcdp broker` and `gcdp run` as a user runs them: help text that tells
 * the truth, fixed port, clean SIGTERM, bootstrap file lifecycle, a bounded run with a
 * summary and nothing left running. */
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
#include "test_support.h"

/* gcdp run end to end (run_end_to_end_learns_the_dag_better_than_chance) */
#define RUN_E2E_SECONDS    "75"
#define RUN_E2E_F1_MARGIN  0.15
#define RUN_E2E_SHD_MARGIN 2.0

TestSuite(commands, .timeout = 120);

Test(commands, broker_help_says_in_memory_dev_broker_and_production_uses_kafka)
{
    char *dir = ts_tmpdir(), out[600];
    const char *args[] = {"broker", "--help", NULL};
    char *text;

    snprintf(out, sizeof(out), "%s/help.txt", dir);
    cr_assert_eq(ts_wait(ts_spawn(args, out, NULL), 10000), 0);
    text = ts_read_file(out, NULL);
    cr_assert_not_null(text);
    cr_assert_not_null(strstr(text, "IN-MEMORY"));
    cr_assert_not_null(strstr(text, "NOT a production broker"));
    cr_assert_not_null(strstr(text, "production uses"));
    cr_assert_not_null(strstr(text, "--port"));
    cr_assert_not_null(strstr(text, "--bootstrap-file"));
    free(text);
    ts_rmtree(dir);
    free(dir);
}

Test(commands, broker_on_a_chosen_port_stops_on_sigterm_and_removes_its_file)
{
    char *dir = ts_tmpdir(), file[600], port_s[16], want[64], *text = NULL;
    int port = ts_free_port();
    const char *args[] = {"broker", "--port", port_s, "--bootstrap-file", file, NULL};
    pid_t pid;
    int64_t end = ts_now_ms() + 20000;

    snprintf(file, sizeof(file), "%s/sub/kafka.bootstrap", dir); /* parent dir is created */
    snprintf(port_s, sizeof(port_s), "%d", port);
    pid = ts_spawn(args, NULL, NULL);
    while (!(text = ts_read_file(file, NULL))) {
        cr_assert(ts_now_ms() < end, "no bootstrap file");
        ts_sleep_ms(20);
    }
    snprintf(want, sizeof(want), "BOOTSTRAP 127.0.0.1:%d\n", port);
    cr_assert_str_eq(text, want);
    free(text);
    /* A second broker on the same port refuses cleanly instead of aborting. */
    {
        char file2[640];
        const char *a2[] = {"broker", "--port", port_s, "--bootstrap-file", file2, NULL};
        snprintf(file2, sizeof(file2), "%s/other.bootstrap", dir);
        cr_assert_eq(ts_wait(ts_spawn(a2, NULL, NULL), 20000), 1);
        cr_assert_eq(access(file2, F_OK), -1);
    }
    kill(pid, SIGTERM);
    cr_assert_eq(ts_wait(pid, 10000), 0, "broker did not stop cleanly on SIGTERM");
    cr_assert_eq(access(file, F_OK), -1, "bootstrap file left behind");
    ts_rmtree(dir);
    free(dir);
}

Test(commands, run_for_a_duration_prints_a_consistent_summary_and_cleans_up)
{
    char *dir = ts_tmpdir(), file[600], out[600], err[600], *text;
    const char *args[] = {
        "run", "--duration", "8", "--devices",   "20",   "--rate", "1000", "--bootstrap-file",
        file,  "--dir",      dir, "--log-level", "warn", NULL};
    json_t *j, *rel, *priv;

    snprintf(file, sizeof(file), "%s/kafka.bootstrap", dir);
    snprintf(out, sizeof(out), "%s/run.out", dir);
    snprintf(err, sizeof(err), "%s/run.err", dir);
    cr_assert_eq(ts_wait(ts_spawn(args, out, err), 60000), 0, "gcdp run failed");
    text = ts_read_file(out, NULL);
    cr_assert_not_null(text);
    j = json_loads(text, 0, NULL);
    cr_assert_not_null(j, "no JSON summary: %s", text);
#define I(k) json_integer_value(json_object_get(j, k))
    cr_assert_gt(I("sim_sent"), 1000);
    cr_assert_eq(I("sim_failed"), 0);
    cr_assert_eq(I("consumed"), I("accepted") + I("rejected"));
    cr_assert_eq(I("consumed"), I("sim_acked"), "ingest drained what the simulator sent");
    cr_assert_gt(I("windows_out"), 0);
    cr_assert_eq(I("offset_gaps"), 0);
    /* the live privacy path: every window released once under a theta the calibrate
     * service made, charged to a new ledger of this run within its cap */
    rel = json_object_get(j, "release");
    priv = json_object_get(j, "privacy");
    cr_assert_not_null(rel);
    cr_assert_eq(json_integer_value(json_object_get(rel, "released")), I("windows_out"));
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(j, "theta"), "made")), 1);
    cr_assert(json_is_true(json_object_get(priv, "ledger_new")));
    cr_assert_gt(json_number_value(json_object_get(priv, "max_eps")), 0.0);
    cr_assert_leq(json_number_value(json_object_get(priv, "max_eps")),
                  json_number_value(json_object_get(priv, "cap_eps")));
    cr_assert_eq(access(json_string_value(json_object_get(priv, "ledger")), R_OK), 0);
#undef I
    /* The broker child stopped last and removed its bootstrap file. */
    cr_assert_eq(access(file, F_OK), -1, "embedded broker still running or file left");
    json_decref(j);
    free(text);
    text = ts_read_file(err, NULL);
    cr_assert_not_null(strstr(text, "readings in"), "no progress line");
    free(text);
    ts_rmtree(dir);
    free(dir);
}

Test(commands, run_stops_gracefully_on_sigint)
{
    char *dir = ts_tmpdir(), file[600], out[600], *text;
    const char *args[] = {"run", "--devices", "10", "--rate",      "500",  "--bootstrap-file",
                          file,  "--dir",     dir,  "--log-level", "warn", NULL};
    pid_t pid;
    json_t *j;

    snprintf(file, sizeof(file), "%s/kafka.bootstrap", dir);
    snprintf(out, sizeof(out), "%s/run.out", dir);
    pid = ts_spawn(args, out, NULL);
    ts_sleep_ms(7000);
    kill(pid, SIGINT);
    cr_assert_eq(ts_wait(pid, 40000), 0, "gcdp run did not stop cleanly on SIGINT");
    text = ts_read_file(out, NULL);
    j = json_loads(text ? text : "", 0, NULL);
    cr_assert_not_null(j, "no summary after SIGINT");
    cr_assert_eq(json_integer_value(json_object_get(j, "consumed")),
                 json_integer_value(json_object_get(j, "sim_acked")));
    cr_assert_eq(access(file, F_OK), -1);
    json_decref(j);
    free(text);
    ts_rmtree(dir);
    free(dir);
}

/* The dev broker restarts on the same --port right after it died with clients connected
 * (their connections' TIME_WAIT used to block the port for ~60 s). */
Test(commands, broker_restarts_on_the_same_port_at_once, .timeout = 120)
{
    char *dir = ts_tmpdir(), file[600], port_s[16], set[700], err[640];
    int port = ts_free_port();
    const char *args[] = {"broker", "--port", port_s, "--bootstrap-file", file, NULL};
    pid_t pid, ing;
    int64_t end = ts_now_ms() + 20000;

    snprintf(file, sizeof(file), "%s/kafka.bootstrap", dir);
    snprintf(port_s, sizeof(port_s), "%d", port);
    snprintf(set, sizeof(set), "broker.bootstrap=@%s", file);
    snprintf(err, sizeof(err), "%s/broker2.err", dir);
    pid = ts_spawn(args, NULL, NULL);
    while (access(file, F_OK) != 0) {
        cr_assert(ts_now_ms() < end, "no bootstrap file");
        ts_sleep_ms(20);
    }
    const char *ia[] = {"ingest", "--set", set, "--log-level", "off", NULL};
    ing = ts_spawn(ia, NULL, NULL);
    ts_sleep_ms(3000);  /* connected, in its group */
    kill(pid, SIGKILL); /* the broker side closes first: its sockets linger in TIME_WAIT */
    ts_wait(pid, 5000);
    pid = ts_spawn(args, NULL, err);
    ts_sleep_ms(2000);
    cr_assert_eq(waitpid(pid, NULL, WNOHANG), 0, "the restarted broker exited: %s",
                 ts_read_file(err, NULL));
    kill(pid, SIGTERM);
    cr_assert_eq(ts_wait(pid, 10000), 0);
    kill(ing, SIGKILL);
    ts_wait(ing, 5000);
    ts_rmtree(dir);
    free(dir);
}

/* The README's main job end to end at gcdp run's defaults: simulator -> ingest -> calibrate ->
 * release -> learner services, and the DAG learned from the privatized stream beside the
 * simulator's true one. Chance is the mean of random DAGs with as many edges (computed by
 * gcdp run from a fixed seed); the learned DAG must beat it clearly: SHD at least 2 below
 * chance's and skeleton F1 at least 0.15 above (measured: seed 1 SHD 1 vs 4.00, F1 1.00 vs
 * 0.67; seeds 4-8 SHD 0 vs 2.99-3.80: docs/operations.md "gcdp run"). */
/* Release build only: under the sanitizers the same stages are exercised (and checked for
 * leaks) by run_for_a_duration_prints_a_consistent_summary_and_cleans_up, which starts and
 * stops every one of them; this 80 s accuracy run would add as much again to the suite. */
#if defined(__SANITIZE_ADDRESS__)
#define RUN_E2E_DISABLED true
#else
#define RUN_E2E_DISABLED false
#endif
Test(commands, run_end_to_end_learns_the_dag_better_than_chance, .timeout = 400,
     .disabled = RUN_E2E_DISABLED)
{
    char *dir = ts_tmpdir(), file[600], out[600], err[600], *text;
    const char *args[] = {"run",
                          "--duration",
                          RUN_E2E_SECONDS,
                          "--bootstrap-file",
                          file,
                          "--dir",
                          dir,
                          "--log-level",
                          "warn",
                          NULL};
    json_t *j, *lrn, *truth;

    snprintf(file, sizeof(file), "%s/kafka.bootstrap", dir);
    snprintf(out, sizeof(out), "%s/run.out", dir);
    snprintf(err, sizeof(err), "%s/run.err", dir);
    cr_assert_eq(ts_wait(ts_spawn(args, out, err), 360000), 0, "gcdp run failed: %s",
                 ts_read_file(err, NULL));
    text = ts_read_file(out, NULL);
    j = json_loads(text ? text : "", 0, NULL);
    cr_assert_not_null(j, "no JSON summary: %s", text);
    cr_assert_gt(json_integer_value(json_object_get(j, "windows_out")), 1000);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(j, "release"), "released")),
                 json_integer_value(json_object_get(j, "windows_out")));
    lrn = json_object_get(j, "learner");
    cr_assert(json_is_object(lrn), "no DAG learned: %s", ts_read_file(err, NULL));
    cr_assert_eq(json_integer_value(json_object_get(lrn, "sites")), 4);
    cr_assert_eq(json_integer_value(json_object_get(lrn, "missing")), 0);
    truth = json_object_get(lrn, "truth");
    cr_assert(json_is_object(truth));
    double f1 = json_number_value(json_object_get(truth, "skel_f1"));
    double rf1 = json_number_value(json_object_get(truth, "random_skel_f1"));
    double shd = json_number_value(json_object_get(truth, "shd"));
    double rshd = json_number_value(json_object_get(truth, "random_shd"));
    cr_log_info("learned: SHD %.0f (random %.2f), skeleton F1 %.2f (random %.2f)", shd, rshd, f1,
                rf1);
    cr_assert_geq(f1, rf1 + RUN_E2E_F1_MARGIN, "skeleton F1 %.2f vs chance %.2f", f1, rf1);
    cr_assert_leq(shd, rshd - RUN_E2E_SHD_MARGIN, "SHD %.0f vs chance %.2f", shd, rshd);
    cr_assert_eq(access(json_string_value(json_object_get(truth, "picture")), R_OK), 0);
    cr_assert_eq(access(json_string_value(json_object_get(lrn, "dot")), R_OK), 0);
    json_decref(j);
    free(text);
    ts_rmtree(dir);
    free(dir);
}

/* A setting a stage refuses at start (here the learner pointed at the protected windows) is
 * a configuration error: exit 2 naming the key, nothing charged, no ledger claimed. */
Test(commands, run_refusing_a_setting_at_start_exits_2_naming_it, .timeout = 120)
{
    char *dir = ts_tmpdir(), out[600], err[600], *text;
    const char *args[] = {"run",         "--duration", "5",
                          "--devices",   "5",          "--dir",
                          dir,           "--set",      "topics.released=gcdp.windows",
                          "--log-level", "warn",       NULL};

    snprintf(out, sizeof(out), "%s/run.out", dir);
    snprintf(err, sizeof(err), "%s/run.err", dir);
    cr_assert_eq(ts_wait(ts_spawn(args, out, err), 60000), 2);
    text = ts_read_file(err, NULL);
    cr_assert_not_null(strstr(text, "topics.released"), "%s", text);
    cr_assert_not_null(strstr(text, "the ledger was not opened"), "%s", text);
    free(text);
    ts_rmtree(dir);
    free(dir);
}

/* The commands a help text lists ("  name  summary" lines after a line starting with head). */
static size_t listed_commands(const char *text, const char *head, char names[][32], size_t max)
{
    const char *p = strstr(text, head);
    size_t n = 0;
    if (!p)
        return 0;
    p = strchr(p, '\n');
    while (p && p[1] == ' ' && p[2] == ' ' && p[3] != ' ' && n < max) {
        if (sscanf(p + 1, " %31s", names[n]) == 1)
            n++;
        p = strchr(p + 1, '\n');
    }
    return n;
}

static void help_ok_with_broken_config(const char *dir, const char *const *cmd, size_t ncmd)
{
    char out[600], err[600], broken[600], first[64];
    const char *args[16];
    size_t k = 0;
    snprintf(broken, sizeof(broken), "%s/broken.json", dir);
    snprintf(out, sizeof(out), "%s/out.txt", dir);
    snprintf(err, sizeof(err), "%s/err.txt", dir);
    for (size_t i = 0; i < ncmd; i++)
        args[k++] = cmd[i];
    args[k++] = "--config";
    args[k++] = broken;
    args[k++] = "--set";
    args[k++] = "no.such.key=1";
    args[k++] = "--help";
    args[k] = NULL;
    int rc = ts_wait(ts_spawn(args, out, err), 20000);
    char *text = ts_read_file(out, NULL);
    snprintf(first, sizeof(first), "usage: gcdp %s", cmd[0]);
    cr_assert_eq(rc, 0, "gcdp %s %s %s --help with a broken configuration: exit %d", cmd[0],
                 ncmd > 1 ? cmd[1] : "", ncmd > 2 ? cmd[2] : "", rc);
    cr_assert(text && strncmp(text, first, strlen(first)) == 0, "gcdp %s --help printed: %.80s",
              cmd[0], text ? text : "(nothing)");
    free(text);
}

/* Every command listed by `gcdp --help` (and every benchmark, service mode and ctl verb)
 * prints its help and exits 0 although the configuration file is not JSON, the
 * environment names it and --set names an undeclared key. */
Test(commands, every_command_answers_help_whatever_the_configuration)
{
    char *dir = ts_tmpdir(), path[600], names[64][32], benches[16][32];
    const char *top[] = {"--help", NULL};
    snprintf(path, sizeof(path), "%s/broken.json", dir);
    ts_write_file(path, "{\"broken\": ");
    snprintf(path, sizeof(path), "%s/top.txt", dir);
    cr_assert_eq(ts_wait(ts_spawn(top, path, NULL), 10000), 0);
    char *text = ts_read_file(path, NULL);
    size_t n = listed_commands(text, "commands:", names, 64);
    free(text);
    cr_assert_geq(n, 15u, "gcdp --help lists %zu commands", n);
    snprintf(path, sizeof(path), "%s/broken.json", dir);
    setenv("GCDP_CONFIG", path, 1); /* the environment names the broken file too */
    for (size_t i = 0; i < n; i++) {
        const char *cmd[1] = {names[i]};
        help_ok_with_broken_config(dir, cmd, 1);
    }
    const char *bench[] = {"bench", "--help", NULL};
    snprintf(path, sizeof(path), "%s/bench.txt", dir);
    cr_assert_eq(ts_wait(ts_spawn(bench, path, NULL), 10000), 0);
    text = ts_read_file(path, NULL);
    size_t nb = listed_commands(text, "usage: gcdp bench", benches, 16);
    free(text);
    cr_assert_geq(nb, 5u);
    for (size_t i = 0; i < nb; i++) {
        const char *cmd[2] = {"bench", benches[i]};
        help_ok_with_broken_config(dir, cmd, 2);
    }
    /* service modes, verbs, and --help given where a flag expects its value (help, never a
     * run with some other configuration) */
    const char *const modes[][3] = {{"learn", "--server", NULL},
                                    {"learn", "--participant", "site-1"},
                                    {"learn", "--participant", NULL},
                                    {"calibrate", "--serve", NULL},
                                    {"release", "--serve", "--ledger"},
                                    {"ctl", "status", NULL},
                                    {"ctl", "keygen", NULL},
                                    {"config", "show", NULL},
                                    {"ledger", "--import", NULL},
                                    {"sem-gen", "--out", NULL}};
    for (size_t i = 0; i < sizeof(modes) / sizeof(*modes); i++)
        help_ok_with_broken_config(dir, modes[i], modes[i][2] ? 3 : 2);
    ts_rmtree(dir);
    free(dir);
}
