/* test_startup_validation.c - bad settings stop startup with exit 2 and a message naming
 * the key, before anything connects (issue: hardening). `topics.raw=` used to crash ingest
 * (double free of the librdkafka configuration after subscribe failed, exit 139) and
 * `topics.raw=^(` aborted in free(); empty output topics and an empty bootstrap list used
 * to "succeed" on nothing. */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "broker.h"
#include "test_support.h"

static int run(const char *dir, const char *args, char **err)
{
    char cmd[4096], path[600];
    int st;
    snprintf(path, sizeof(path), "%s/err.txt", dir);
    snprintf(cmd, sizeof(cmd), "timeout 20 %s %s >/dev/null 2>%s </dev/null", GCDP_BIN, args, path);
    st = system(cmd);
    *err = ts_read_file(path, NULL);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

Test(startup_validation, bad_topics_and_bootstrap_exit_2_naming_the_key)
{
    static const struct {
        const char *args, *key;
    } cases[] = {
        {"ingest --set topics.raw=", "topics.raw"},
        {"ingest --set 'topics.raw=^('", "topics.raw"},
        {"ingest --set topics.windows=", "topics.windows"},
        {"ingest --set topics.rejected=", "topics.rejected"},
        {"ingest --set 'topics.windows=a b'", "topics.windows"},
        {"ingest --set broker.bootstrap=", "broker.bootstrap"},
        {"ingest --set broker.bootstrap=localhost", "broker.bootstrap"},
        {"ingest --set broker.bootstrap=host:99999", "broker.bootstrap"},
        {"run --duration 1 --set topics.raw=", "topics.raw"},
        {"config show --set", "--set"},
        {"ingest --set", "--set"},
        /* settings only the service checks still exit 2 (they used to exit 1) */
        {"ingest --set broker.bootstrap=127.0.0.1:1 --set kafka.nonsense=1", "nonsense"},
        {"ingest --set broker.bootstrap=127.0.0.1:1 --group ''", "group"},
        {"ingest --set broker.bootstrap=127.0.0.1:1 --set ingest.window.hop_ms=7",
         "ingest.window.hop_ms"},
    };
    char *dir = ts_tmpdir(), *err = NULL;
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        int ex = run(dir, cases[i].args, &err);
        cr_assert_eq(ex, 2, "%s: exit %d: %s", cases[i].args, ex, err ? err : "");
        cr_assert(err && strstr(err, cases[i].key), "%s: %s", cases[i].args, err ? err : "");
        free(err);
    }
    ts_rmtree(dir);
    free(dir);
}

/* Does pid catch sig (its SigCgt mask in /proc)? */
static bool catches(pid_t pid, int sig)
{
    char path[64], line[256];
    unsigned long long mask = 0;
    FILE *f;
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    f = fopen(path, "r");
    cr_assert_not_null(f);
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "SigCgt: %llx", &mask) == 1)
            break;
    fclose(f);
    return (mask >> (sig - 1)) & 1ULL;
}

/* Shutdown always ends: after the first SIGTERM the default disposition is back, so a
 * second signal ends ingest at once (even if its loop thread were stuck in a library call:
 * checked on the process's own signal mask, with the broker gone so that the graceful path
 * is still busy); the graceful path alone ends with exit 0. */
Test(startup_validation, second_signal_ends_ingest_at_once, .timeout = 120)
{
    struct ts_broker b;
    char err[600], pset[64];
    int port = ts_free_port();

    ts_broker_start(&b, NULL);
    snprintf(pset, sizeof(pset), "metrics.port=%d", port);
    snprintf(err, sizeof(err), "%s/ingest.err", b.dir);
    for (int round = 0; round < 2; round++) {
        const char *args[] = {"ingest", "--set",       b.set_bootstrap, "--set",
                              pset,     "--log-level", "warn",          NULL};
        pid_t pid = ts_spawn(args, NULL, err);
        int64_t end = ts_now_ms() + 30000;
        while (!catches(pid, SIGTERM) && ts_now_ms() < end)
            ts_sleep_ms(20);
        cr_assert(catches(pid, SIGTERM) && catches(pid, SIGINT), "handlers installed");
        ts_sleep_ms(1000); /* joined its group */
        if (round == 0) {
            cr_assert_eq(kill(pid, SIGTERM), 0);
            cr_assert_eq(ts_wait(pid, 30000), 0, "graceful shutdown exits 0");
            continue;
        }
        ts_broker_stop(&b); /* the graceful path now waits on an unreachable broker */
        cr_assert_eq(kill(pid, SIGTERM), 0);
        end = ts_now_ms() + 1000;
        while (catches(pid, SIGTERM) && ts_now_ms() < end)
            ts_sleep_ms(2);
        cr_assert(!catches(pid, SIGTERM) && !catches(pid, SIGINT),
                  "after the first signal SIGTERM/SIGINT must have their default action");
        cr_assert_eq(kill(pid, SIGTERM), 0);
        int ex = ts_wait(pid, 3000);
        cr_assert_eq(ex, 128 + SIGTERM, "the second SIGTERM must end ingest at once: %d", ex);
    }
}

/* Every --help shows a real environment-variable example: the key it names exists. */
Test(startup_validation, help_environment_example_is_a_real_key)
{
    char *dir = ts_tmpdir(), *out = NULL, cmd[4096], path[600];
    snprintf(path, sizeof(path), "%s/help.txt", dir);
    snprintf(cmd, sizeof(cmd), "%s ingest --help >%s 2>&1", GCDP_BIN, path);
    cr_assert_eq(system(cmd), 0);
    out = ts_read_file(path, NULL);
    cr_assert(strstr(out, "GCDP_INGEST__WINDOW__SIZE_MS"), "%s", out);
    free(out);
    snprintf(cmd, sizeof(cmd), "%s config keys >%s 2>&1", GCDP_BIN, path);
    cr_assert_eq(system(cmd), 0);
    out = ts_read_file(path, NULL);
    cr_assert(strstr(out, "ingest.window.size_ms"), "the example's key must exist");
    free(out);
    ts_rmtree(dir);
    free(dir);
}

/* `gcdp config show` prints the effective configuration but never a credential passed to
 * librdkafka (kafka.sasl.password and the like): those are shown as "<redacted>". */
Test(startup_validation, config_show_redacts_credentials)
{
    char *dir = ts_tmpdir(), *out = NULL, cmd[4096], path[600];
    snprintf(path, sizeof(path), "%s/show.txt", dir);
    snprintf(cmd, sizeof(cmd),
             "GCDP_KAFKA__SSL__KEY__PASSWORD=s3cr3t-env %s config show --set "
             "kafka.sasl.password=hunter2 --set kafka.sasl.username=alice >%s 2>&1",
             GCDP_BIN, path);
    cr_assert_eq(system(cmd), 0);
    out = ts_read_file(path, NULL);
    cr_assert_null(strstr(out, "hunter2"), "%s", out);
    cr_assert_null(strstr(out, "s3cr3t-env"), "%s", out);
    cr_assert_not_null(strstr(out, "\"kafka.sasl.password\": \"<redacted>\""), "%s", out);
    cr_assert_not_null(strstr(out, "\"kafka.sasl.username\": \"alice\""), "%s", out);
    free(out);
    ts_rmtree(dir);
    free(dir);
}

/* `gcdp release` with its input on a terminal says so at once instead of waiting silently. */
Test(startup_validation, release_input_on_a_terminal_is_refused)
{
    char cmd[4096];
    snprintf(cmd, sizeof(cmd),
             "timeout 20 script -qec '%s release --theta %s --plan' /dev/null "
             "| grep -q 'standard input, which is a terminal'",
             GCDP_BIN, GCDP_SOURCE_DIR "/tests/fuzz/corpus-theta/occupancy-public.json");
    cr_assert_eq(system(cmd), 0, "no clear refusal on a terminal stdin");
}

/* The services refuse what they cannot do, with exit 2 and the reason, before serving. */
Test(startup_validation, services_refuse_bad_modes_and_flags)
{
    char *dir = ts_tmpdir(), *err = NULL, args[2048];

    cr_assert_eq(
        run(dir, "release --serve --input x.jsonl --set broker.bootstrap=127.0.0.1:1", &err), 2);
    cr_assert(strstr(err, "--serve reads topics.windows"), "%s", err);
    free(err);
    cr_assert_eq(run(dir,
                     "calibrate --serve -i x.csv --output t.json "
                     "--set broker.bootstrap=127.0.0.1:1",
                     &err),
                 2);
    cr_assert(strstr(err, "--serve publishes"), "%s", err);
    free(err);
    /* the private service: its options are checked before any ledger is opened */
    snprintf(args, sizeof(args),
             "calibrate --serve --mode private --set state.dir=%s/state "
             "--set broker.bootstrap=127.0.0.1:1",
             dir);
    cr_assert_eq(run(dir, args, &err), 2);
    cr_assert(strstr(err, "calibrate.eps_G"), "%s", err);
    free(err);
    snprintf(args, sizeof(args),
             "calibrate --serve --mode private --set state.dir=%s/state "
             "--set calibrate.eps_G=1 --set calibrate.eps_xi=0.5 --set "
             "calibrate.private.sensitivity=expansion --set broker.bootstrap=127.0.0.1:1",
             dir);
    cr_assert_eq(run(dir, args, &err), 2);
    cr_assert(strstr(err, "calibrate.private.sensitivity"), "%s", err);
    free(err);
    snprintf(args, sizeof(args), "%s/state", dir);
    cr_assert(access(args, F_OK) != 0, "a refused configuration created the ledger's state.dir");
    cr_assert_eq(run(dir, "calibrate --serve --set broker.bootstrap=127.0.0.1:1", &err), 2);
    cr_assert(strstr(err, "--serve needs -i/--input FILE"),
              "public mode still needs its "
              "source: %s",
              err);
    free(err);
    snprintf(args, sizeof(args),
             "release --serve --ledger %s/l.jsonl --set "
             "broker.bootstrap=127.0.0.1:1 --set control.key_file=%s/missing.key",
             dir, dir);
    cr_assert_eq(run(dir, args, &err), 2);
    cr_assert(strstr(err, "control.key_file"), "%s", err);
    free(err);
    ts_rmtree(dir);
    free(dir);
}

/* One release instance per ledger: a second one on the same ledger says so and exits. */
Test(startup_validation, second_release_instance_on_one_ledger_is_refused, .timeout = 120)
{
    struct ts_broker b;
    char led[600], err2[600], theta[600];

    ts_broker_start(&b, NULL);
    snprintf(led, sizeof(led), "%s/ledger.jsonl", b.dir);
    snprintf(err2, sizeof(err2), "%s/err2.txt", b.dir);
    snprintf(theta, sizeof(theta), "%s/theta.json", b.dir);
    const char *cal[] = {"calibrate", "-i",          GCDP_DATA_DIR "/occupancy/datatest.txt",
                         "-f",        "occupancy",   "-o",
                         theta,       "--log-level", "warn",
                         NULL};
    cr_assert_eq(ts_wait(ts_spawn(cal, NULL, NULL), 60000), 0);
    const char *rel[] = {"release", "--serve",       "--theta",     theta,  "--ledger", led,
                         "--set",   b.set_bootstrap, "--log-level", "warn", NULL};
    pid_t first = ts_spawn(rel, NULL, NULL);
    int64_t t0 = ts_now_ms();
    while (access(led, F_OK) != 0 && ts_now_ms() - t0 < 20000)
        ts_sleep_ms(50);
    ts_sleep_ms(300);
    cr_assert_eq(ts_wait(ts_spawn(rel, NULL, err2), 30000), 1);
    char *e = ts_read_file(err2, NULL);
    cr_assert(e && strstr(e, "held by another process"), "%s", e ? e : "");
    free(e);
    kill(first, SIGTERM);
    cr_assert_eq(ts_wait(first, 60000), 0);
    ts_broker_stop(&b);
}

/* issue 10: `--set "topics.raw=$(printf 'a\xffb')"` printed an uninitialized jansson error
 * text (garbage); now a message naming the key, all of it valid text, exit 2. */
Test(startup_validation, set_value_not_utf8_exits_2_with_a_clean_message)
{
    char *dir = ts_tmpdir(), *err = NULL;
    int ex = run(dir, "config show --set \"topics.raw=$(printf 'a\\377b')\"", &err);

    cr_assert_eq(ex, 2, "exit %d: %s", ex, err ? err : "");
    cr_assert(err && strstr(err, "'topics.raw'") && strstr(err, "not valid UTF-8"), "%s",
              err ? err : "");
    cr_assert_null(strchr(err, '\xff'), "the raw byte is not echoed");
    for (const char *p = err; *p; p++)
        cr_assert((unsigned char)*p >= 0x20 || *p == '\n', "control byte %02x in '%s'",
                  (unsigned char)*p, err);
    free(err);
    ts_rmtree(dir);
    free(dir);
}
