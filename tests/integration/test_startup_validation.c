/* test_startup_validation.c - bad settings stop startup with exit 2 and a message naming
 * the key, before anything connects (issue: hardening). `topics.raw=` used to crash ingest
 * (double free of the librdkafka configuration after subscribe failed, exit 139) and
 * `topics.raw=^(` aborted in free(); empty output topics and an empty bootstrap list used
 * to "succeed" on nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <criterion/criterion.h>

#include "test_support.h"

static int run(const char *dir, const char *args, char **err)
{
    char cmd[4096], path[600];
    int st;
    snprintf(path, sizeof(path), "%s/err.txt", dir);
    snprintf(cmd, sizeof(cmd), "timeout 20 %s %s >/dev/null 2>%s </dev/null", GCDP_BIN, args,
             path);
    st = system(cmd);
    *err = ts_read_file(path, NULL);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

Test(startup_validation, bad_topics_and_bootstrap_exit_2_naming_the_key)
{
    static const struct { const char *args, *key; } cases[] = {
        {"ingest --set topics.raw=", "topics.raw"},
        {"ingest --set 'topics.raw=^('", "topics.raw"},
        {"ingest --set topics.windows=", "topics.windows"},
        {"ingest --set topics.rejected=", "topics.rejected"},
        {"ingest --set 'topics.windows=a b'", "topics.windows"},
        {"ingest --set broker.bootstrap=", "broker.bootstrap"},
        {"ingest --set broker.bootstrap=localhost", "broker.bootstrap"},
        {"ingest --set broker.bootstrap=host:99999", "broker.bootstrap"},
        {"run --duration 1 --set topics.raw=", "topics.raw"},
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
