/* test_producer_flags.c - the producer flags `gcdp simulate` and `gcdp replay` share
 * (app/producer_flags.h): one range check and one message naming the flag, the same in
 * both commands; boundary values pass; --help shows the same lines with the real
 * defaults. No broker is needed: every case ends at argument parsing (exit 2). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "broker.h"
#include "sim/sim.h"
#include "test_support.h"

TestSuite(producer_flags, .timeout = 60);

static const char *const commands[] = {"simulate", "replay"};

/* Run `gcdp cmd flag value [extra]`; returns the exit status, *err = stderr (free()). */
static int run(const char *dir, const char *cmd, const char *flag, const char *value,
               const char *extra, char **err)
{
    char out[600], errp[600];
    const char *args[] = {cmd, flag, value, extra, NULL};
    int status;

    snprintf(out, sizeof(out), "%s/out.txt", dir);
    snprintf(errp, sizeof(errp), "%s/err.txt", dir);
    status = ts_wait(ts_spawn(args, out, errp), 20000);
    *err = ts_read_file(errp, NULL);
    cr_assert_not_null(*err);
    return status;
}

Test(producer_flags, invalid_max_lag_bytes_is_refused_naming_the_flag_in_both_commands)
{
    /* below, above, not an integer, empty, negative */
    static const char *const bad[] = {"65535", "5242881", "1e6", "65536.5", "", "-65536"};
    char *dir = ts_tmpdir();

    for (size_t c = 0; c < 2; c++)
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            char want[200], *err;
            snprintf(want, sizeof(want),
                     "gcdp %s: invalid value '%s' for --max-lag-bytes: want an integer in "
                     "[65536, 5242880]\n",
                     commands[c], bad[i]);
            cr_assert_eq(run(dir, commands[c], "--max-lag-bytes", bad[i], NULL, &err), 2,
                         "%s --max-lag-bytes '%s'", commands[c], bad[i]);
            cr_assert_not_null(strstr(err, want), "%s --max-lag-bytes '%s': %s", commands[c],
                               bad[i], err);
            free(err);
        }
    ts_rmtree(dir);
    free(dir);
}

Test(producer_flags, out_of_range_inflight_and_flush_timeout_are_refused_in_both_commands)
{
    static const char *const bad[][3] = {
        {"--max-inflight", "0", "[1, 10000000]"},
        {"--max-inflight", "10000001", "[1, 10000000]"},
        {"--flush-timeout", "3600001", "[0, 3600000]"},
        {"--flush-timeout", "2.5", "[0, 3600000]"},
    };
    char *dir = ts_tmpdir();

    for (size_t c = 0; c < 2; c++)
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            char want[200], *err;
            snprintf(want, sizeof(want),
                     "gcdp %s: invalid value '%s' for %s: want an integer in %s\n", commands[c],
                     bad[i][1], bad[i][0], bad[i][2]);
            cr_assert_eq(run(dir, commands[c], bad[i][0], bad[i][1], NULL, &err), 2);
            cr_assert_not_null(strstr(err, want), "%s %s %s: %s", commands[c], bad[i][0], bad[i][1],
                               err);
            free(err);
        }
    ts_rmtree(dir);
    free(dir);
}

Test(producer_flags, range_ends_are_accepted_in_both_commands)
{
    /* the flag under test is parsed before --no-such-flag, which then ends the run: a
     * refused value would print "invalid value" first */
    static const char *const ok[][2] = {
        {"--max-inflight", "1"},        {"--max-inflight", "10000000"},
        {"--flush-timeout", "0"},       {"--flush-timeout", "3600000"},
        {"--max-lag-bytes", "65536"},   {"--max-lag-bytes", "5242880"},
        {"--lag-group", "gcdp-ingest"}, {"--topic", "sensors.other"},
    };
    char *dir = ts_tmpdir();

    for (size_t c = 0; c < 2; c++)
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
            char *err;
            cr_assert_eq(run(dir, commands[c], ok[i][0], ok[i][1], "--no-such-flag", &err), 2);
            cr_assert_null(strstr(err, "invalid value"), "%s %s %s: %s", commands[c], ok[i][0],
                           ok[i][1], err);
            cr_assert_not_null(strstr(err, "no-such-flag"), "%s", err);
            free(err);
        }
    ts_rmtree(dir);
    free(dir);
}

/* The producer block of a --help text: from "--topic T" to "-h, --help", blanks folded
 * (the two commands indent their flag column differently). New string (free()). */
static char *producer_block(const char *help)
{
    const char *from = strstr(help, "--topic T"), *to = strstr(help, "-h, --help");
    char *out;
    size_t n = 0;

    cr_assert(from && to && to > from, "no producer block in:\n%s", help);
    out = malloc((size_t)(to - from) + 1);
    cr_assert_not_null(out);
    for (const char *p = from; p < to; p++) {
        char ch = *p == '\n' ? ' ' : *p;
        if (ch != ' ' || n == 0 || out[n - 1] != ' ')
            out[n++] = ch;
    }
    out[n] = '\0';
    return out;
}

Test(producer_flags, help_shows_the_same_lines_with_the_real_defaults_in_both_commands)
{
    struct sim_producer_opts d;
    char *dir = ts_tmpdir(), *block[2];
    char inflight[64], flush[64], lag[80];

    sim_producer_opts_default(&d);
    snprintf(inflight, sizeof(inflight), "(default %zu)", d.max_inflight);
    snprintf(flush, sizeof(flush), "0..3600000 (default %d)", d.flush_timeout_ms);
    snprintf(lag, sizeof(lag), "65536..5242880 (default sim.max_lag_bytes, %zu)", d.max_lag_bytes);
    for (size_t c = 0; c < 2; c++) {
        char out[600], *text;
        const char *args[] = {commands[c], "--help", NULL};
        snprintf(out, sizeof(out), "%s/help.txt", dir);
        cr_assert_eq(ts_wait(ts_spawn(args, out, NULL), 10000), 0);
        text = ts_read_file(out, NULL);
        cr_assert_not_null(text);
        block[c] = producer_block(text);
        free(text);
        cr_assert_not_null(strstr(block[c], "--max-inflight N cap on unacknowledged messages, "
                                            "1..10000000"),
                           "%s", block[c]);
        cr_assert_not_null(strstr(block[c], inflight), "%s", block[c]);
        cr_assert_not_null(strstr(block[c], flush), "%s", block[c]);
        cr_assert_not_null(strstr(block[c], lag), "%s", block[c]);
        cr_assert_not_null(strstr(block[c], "default: sim.lag_group (unset = none)"), "%s",
                           block[c]);
    }
    cr_assert_str_eq(block[0], block[1]);
    free(block[0]);
    free(block[1]);
    ts_rmtree(dir);
    free(dir);
}
