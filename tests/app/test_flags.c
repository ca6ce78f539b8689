/* test_flags.c - the subcommands' number parsers (app/flags.h): whole argument, finite,
 * in range, nothing changed on refusal. */
#include <float.h>
#include <limits.h>

#include <criterion/criterion.h>

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
