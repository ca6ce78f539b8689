/* test_flags.c - the subcommands' number parsers (cli/flags.h): whole argument, finite,
 * in range, nothing changed on refusal. */
#include <float.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include "flags.h"

Test(flags, long_accepts_whole_in_range_values_only)
{
    long v = 7;
    cr_expect_eq(app_flag_parse_long("42", 1, 100, &v), 0);
    cr_expect_eq(v, 42);
    cr_expect_eq(app_flag_parse_long("-5", -10, 10, &v), 0);
    cr_expect_eq(v, -5);
    v = 7;
    const char *bad[] = {"", " ", "4x", "x4", "101", "0", "1e2", "99999999999999999999999", "4 "};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        cr_expect_eq(app_flag_parse_long(bad[i], 1, 100, &v), -1, "'%s' accepted", bad[i]);
        cr_expect_eq(v, 7, "'%s' changed the output", bad[i]);
    }
}

Test(flags, u64_refuses_signs_and_overflow)
{
    unsigned long long v = 3;
    cr_expect_eq(app_flag_parse_u64("18446744073709551615", ULLONG_MAX, &v), 0);
    cr_expect_eq(v, ULLONG_MAX);
    cr_expect_eq(app_flag_parse_u64("+12", 100, &v), 0);
    cr_expect_eq(v, 12);
    cr_expect_eq(app_flag_parse_u64("101", 100, &v), -1);
    cr_expect_eq(v, 12);
    v = 3;
    const char *bad[] = {"", "-1", "-0", "18446744073709551616", "12a", "1.5", " "};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        cr_expect_eq(app_flag_parse_u64(bad[i], ULLONG_MAX, &v), -1, "'%s' accepted", bad[i]);
        cr_expect_eq(v, 3, "'%s' changed the output", bad[i]);
    }
}

Test(flags, double_refuses_non_finite_trailing_and_out_of_range)
{
    double v = 2.5;
    cr_expect_eq(app_flag_parse_double("0.125", 0, 1, &v), 0);
    cr_expect_eq(v, 0.125);
    cr_expect_eq(app_flag_parse_double("1e-400", 0, 1, &v), 0, "underflow to 0 is a value");
    cr_expect_eq(v, 0.0);
    v = 2.5;
    const char *bad[] = {"", "nan", "inf", "-inf", "1e400", "0.5s", "abc", "1.5", "-0.1", " "};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        cr_expect_eq(app_flag_parse_double(bad[i], 0, 1, &v), -1, "'%s' accepted", bad[i]);
        cr_expect_eq(v, 2.5, "'%s' changed the output", bad[i]);
    }
}

Test(flags, double_lists)
{
    double out[3];
    size_t n = 9;
    cr_expect_eq(app_flag_parse_doubles("0.5,1,8", DBL_MIN, DBL_MAX, out, 3, &n), 0);
    cr_expect_eq(n, 3);
    cr_expect_eq(out[0], 0.5);
    cr_expect_eq(out[2], 8.0);
    const char *bad[] = {"", ",", "1,", ",1", "1,,2", "1,0", "1,nan", "1,2,3,4", "1;2"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        n = 9;
        cr_expect_eq(app_flag_parse_doubles(bad[i], DBL_MIN, DBL_MAX, out, 3, &n), -1,
                     "'%s' accepted", bad[i]);
        cr_expect_eq(n, 0, "'%s'", bad[i]);
    }
}

/* The flag tables (app_flags_parse): every kind stores at its offset with the field's
 * width, ranges (open ends, clamped to the field) refuse with one message naming the flag
 * and the range, operands come after the options. */
struct tab_args {
    uint8_t small;
    int count;
    long wait;
    size_t n;
    double x;
    double list[3];
    size_t n_list;
    const char *name, *group;
    const char *many[2];
    size_t n_many;
    bool on;
    int png;
    int fn_calls;
};

static int count_fn(void *args, const char *arg)
{
    ((struct tab_args *)args)->fn_calls++;
    return strcmp(arg, "ok") == 0 ? 0 : -1;
}

#define AT(f) APP_FLAG_AT(struct tab_args, f)
static const struct app_flag tab[] = {
    {"small", APP_FLAG_UINT, AT(small), .hi = DBL_MAX}, /* clamped to 255 */
    {"count", APP_FLAG_INT, AT(count), .lo = -3, .hi = 3},
    {"wait", APP_FLAG_INT, AT(wait), .lo = 0, .hi = 3600},
    {"n", APP_FLAG_UINT, AT(n), .lo = 1, .hi = DBL_MAX},
    {"x", APP_FLAG_DBL, AT(x), .hi = 0.5, .flags = APP_FLAG_OPEN_LO | APP_FLAG_OPEN_HI},
    {"list", APP_FLAG_DBLS, AT(list), .n_offset = offsetof(struct tab_args, n_list), .hi = DBL_MAX,
     .flags = APP_FLAG_OPEN_LO},
    {"name", APP_FLAG_STR, AT(name), .short_name = 'N'},
    {"group", APP_FLAG_STR, AT(group), .flags = APP_FLAG_EMPTY_NULL},
    {"many", APP_FLAG_STRS, AT(many), .n_offset = offsetof(struct tab_args, n_many)},
    {"on", APP_FLAG_TRUE, AT(on), .tag = 2},
    {"no-png", APP_FLAG_FALSE, AT(png)},
    {"fn", APP_FLAG_FN, .fn = count_fn},
    {.name = NULL},
};
#undef AT

/* Parse the NULL-terminated argv (argv[0] = "cmd") into *a; returns app_flags_parse's. */
static int parse_tab(const char **args, struct tab_args *a, unsigned *tags)
{
    static char buf[32][64];
    static char *argv[33];
    int argc = 0;
    for (; args[argc]; argc++) {
        cr_assert_lt(argc, 32);
        snprintf(buf[argc], sizeof(buf[argc]), "%s", args[argc]);
        argv[argc] = buf[argc];
    }
    argv[argc] = NULL;
    return app_flags_parse("cmd", tab, argc, argv, a, tags);
}

Test(flags, table_stores_every_kind_at_its_offset)
{
    const char *args[] = {"cmd",     "--small",  "255",    "--count", "-3",     "--wait",
                          "3600",    "operand",  "--n=7",  "--x",     "0.25",   "-Nz",
                          "--group", "",         "--list", "1,2.5",   "--many", "a",
                          "--on",    "--no-png", "--fn",   "ok",      NULL};
    struct tab_args a = {.png = 1, .group = "g"};
    unsigned tags = 0;

    cr_assert_eq(parse_tab(args, &a, &tags), 21, "operands are permuted to the end");
    cr_expect_eq(a.small, 255);
    cr_expect_eq(a.count, -3);
    cr_expect_eq(a.wait, 3600);
    cr_expect_eq(a.n, 7);
    cr_expect_eq(a.x, 0.25);
    cr_expect_str_eq(a.name, "z");
    cr_expect_null(a.group, "an empty --group is none");
    cr_expect_eq(a.n_list, 2);
    cr_expect_eq(a.list[1], 2.5);
    cr_expect_eq(a.n_many, 1);
    cr_expect_str_eq(a.many[0], "a");
    cr_expect(a.on);
    cr_expect_eq(a.png, 0);
    cr_expect_eq(a.fn_calls, 1);
    cr_expect_eq(tags, 2u);
}

Test(flags, table_refuses_out_of_range_values_naming_flag_and_range, .init = cr_redirect_stderr)
{
    static const char *const bad[][2] = {
        {"--small", "256"}, {"--count", "4"}, {"--count", "1.5"}, {"--wait", "-1"},
        {"--n", "0"},       {"--x", "0"},     {"--x", "0.5"},     {"--x", "nan"},
        {"--list", "1,0"},  {"--fn", "nope"}, {"--nope", "1"},    {"--small", ""},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *args[] = {"cmd", bad[i][0], bad[i][1], NULL};
        struct tab_args a = {.count = 9};
        cr_expect_eq(parse_tab(args, &a, NULL), -1, "%s %s accepted", bad[i][0], bad[i][1]);
        cr_expect_eq(a.count, 9, "%s %s", bad[i][0], bad[i][1]);
    }
    const char *args[] = {"cmd", "--many", "a", "--many", "b", "--many", "c", NULL};
    struct tab_args a = {0};
    cr_expect_eq(parse_tab(args, &a, NULL), -1, "a third --many is over the cap");
    fflush(stderr);
    cr_expect_stderr_neq_str("");
}

Test(flags, table_message_names_the_flag_and_the_range, .init = cr_redirect_stderr)
{
    const char *args[] = {"cmd", "--x", "0.5", NULL};
    struct tab_args a = {0};
    cr_assert_eq(parse_tab(args, &a, NULL), -1);
    fflush(stderr);
    cr_expect_stderr_eq_str("gcdp cmd: invalid value '0.5' for --x: want a number in (0, 0.5)\n"
                            "(gcdp cmd --help lists the options)\n");
}
