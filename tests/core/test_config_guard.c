/* test_config_guard.c - a misspelt or mistyped key read is fatal in every build (this suite
 * runs in the release build too, where assert() is compiled out), naming the key; and a
 * value that is not UTF-8 is refused with a message that is all initialized text. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "core/cfg_keys.h"
#include "core/config.h"
#include "core/kconf.h"
#include "core/log.h"

static const struct core_cfg_key guard_keys[] = {
    K_INT("t.count", "3", 0, 10, "an int"),
    K_DBL("t.ratio", "0.5", 0, 1, "a double"),
    K_BOOL("t.flag", "true", "a bool"),
    K_STR("t.name", "\"x\"", "a string"),
    K_ENUM("t.mode", "\"a\"", "a|b", "an enum"),
    K_JSON("t.obj", "null", "any JSON", NULL),
    {0},
};
static const struct core_cfg_key *const tables[] = {core_config_keys, guard_keys};

enum read_kind { R_INT, R_DBL, R_BOOL, R_STR, R_JSON, R_IS_SET, R_IS_EXPLICIT };

static void do_read(const struct core_config *cfg, enum read_kind kind, const char *key)
{
    switch (kind) {
    case R_INT:
        printf("%lld\n", (long long)core_config_int(cfg, key));
        break;
    case R_DBL:
        printf("%g\n", core_config_double(cfg, key));
        break;
    case R_BOOL:
        printf("%d\n", core_config_bool(cfg, key));
        break;
    case R_STR:
        printf("%s\n", core_config_str(cfg, key) ? "str" : "null");
        break;
    case R_JSON:
        printf("%p\n", (const void *)core_config_json(cfg, key));
        break;
    case R_IS_SET:
        printf("%d\n", core_config_is_set(cfg, key));
        break;
    case R_IS_EXPLICIT:
        printf("%d\n", core_config_is_explicit(cfg, key));
        break;
    }
}

/* Run the read in a child; return its termination signal (0: exited) and its stderr. */
static int read_in_child(enum read_kind kind, const char *key, char *err, size_t errn)
{
    int fds[2], status = 0;
    ssize_t n, got = 0;
    pid_t pid;

    cr_assert_eq(pipe(fds), 0);
    fflush(NULL);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        struct core_config *cfg = core_config_new(tables, 2);
        dup2(fds[1], STDERR_FILENO);
        if (!freopen("/dev/null", "w", stdout))
            _exit(3);
        core_log_level = CORE_LOG_OFF; /* the fatal line is written even so */
        do_read(cfg, kind, key);
        core_config_free(cfg);
        _exit(0);
    }
    close(fds[1]);
    while (got + 1 < (ssize_t)errn && (n = read(fds[0], err + got, errn - 1 - (size_t)got)) > 0)
        got += n;
    err[got] = '\0';
    close(fds[0]);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

Test(config_guard, declared_keys_read_normally)
{
    char err[2048];
    cr_assert_eq(read_in_child(R_INT, "t.count", err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(read_in_child(R_STR, "t.mode", err, sizeof(err)), 0, "an enum reads as string");
    cr_assert_eq(read_in_child(R_IS_SET, "t.obj", err, sizeof(err)), 0);
    cr_assert_eq(err[0], '\0', "no log line: %s", err);
}

Test(config_guard, an_undeclared_key_aborts_naming_it)
{
    static const enum read_kind kinds[] = {R_INT,  R_DBL,    R_BOOL,       R_STR,
                                           R_JSON, R_IS_SET, R_IS_EXPLICIT};
    char err[2048];
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        int sig = read_in_child(kinds[i], "t.cuont", err, sizeof(err));
        cr_assert_eq(sig, SIGABRT, "read kind %zu: signal %d, stderr '%s'", i, sig, err);
        cr_assert(strstr(err, "'t.cuont'") && strstr(err, "not declared"), "%s", err);
        cr_assert(strstr(err, "\"level\":\"fatal\""), "a fatal log line: %s", err);
    }
}

Test(config_guard, a_wrong_type_aborts_naming_the_key)
{
    char err[2048];
    cr_assert_eq(read_in_child(R_INT, "t.ratio", err, sizeof(err)), SIGABRT);
    cr_assert(strstr(err, "'t.ratio'") && strstr(err, "wrong type"), "%s", err);
    cr_assert_eq(read_in_child(R_DBL, "t.count", err, sizeof(err)), SIGABRT);
    cr_assert_eq(read_in_child(R_BOOL, "t.name", err, sizeof(err)), SIGABRT);
    cr_assert_eq(read_in_child(R_JSON, "t.mode", err, sizeof(err)), SIGABRT);
}

/* The error text: fully written, valid UTF-8 (jansson parses it back), without the bytes. */
static void expect_utf8_refusal(const char *text_or_arg, bool as_arg, const char *key)
{
    struct core_config *cfg = core_config_new(tables, 2);
    char eb[512];
    core_err rc;
    json_t *j;

    memset(eb, 0xff, sizeof(eb)); /* what an uninitialized buffer might hold */
    eb[sizeof(eb) - 1] = '\0';
    rc = as_arg ? core_config_set_arg(cfg, text_or_arg, eb, sizeof(eb))
                : core_config_set(cfg, key, text_or_arg, "flag", eb, sizeof(eb));
    cr_assert_eq(rc, CORE_ECONFIG);
    cr_assert(strstr(eb, key) && strstr(eb, "not valid UTF-8"), "%s", eb);
    cr_assert_null(strchr(eb, '\xff'), "no raw byte of the value echoed");
    j = json_string(eb);
    cr_assert_not_null(j, "the message is valid UTF-8");
    json_decref(j);
    core_config_free(cfg);
}

Test(config_guard, a_value_that_is_not_utf8_is_refused_cleanly)
{
    expect_utf8_refusal("a\xff"
                        "b",
                        false, "topics.raw"); /* bare string */
    expect_utf8_refusal("topics.raw=a\xff"
                        "b",
                        true, "topics.raw");                /* --set */
    expect_utf8_refusal("\"a\xff\"", false, "t.name");      /* quoted: JSON path */
    expect_utf8_refusal("\xff", false, "t.count");          /* a number key */
    expect_utf8_refusal("a\xff", false, "kafka.client.id"); /* pass-through */
}
