/* test_timefmt.c - the one timestamp parser/formatter (core/timefmt.h): every accepted and
 * refused form decided in the header, the formatter against a gmtime_r + printf rendering,
 * and parse(format(t)) == t. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "core/timefmt.h"

static const int64_t base = INT64_C(1423072260000); /* 2015-02-04T17:51:00Z */

static int64_t parse_ok(const char *s)
{
    int64_t ms = INT64_MIN;
    cr_assert_eq(core_time_parse(s, strlen(s), &ms), CORE_OK, "'%s' must parse", s);
    return ms;
}

static void parse_bad(const char *s)
{
    int64_t ms = 7;
    cr_assert_eq(core_time_parse(s, strlen(s), &ms), CORE_EPARSE, "'%s' must not parse", s);
    cr_assert_eq(ms, 7, "'%s': output untouched on error", s);
}

Test(timefmt, rfc3339_and_naive_forms)
{
    cr_assert_eq(parse_ok("2015-02-04T17:51:00Z"), base);
    cr_assert_eq(parse_ok("2015-02-04 17:51:00"), base, "naive = UTC, space separator");
    cr_assert_eq(parse_ok("2015-02-04T17:51:00"), base);
    cr_assert_eq(parse_ok("2015-02-04t17:51:00z"), base, "RFC 3339 5.6 NOTE: lower case");
    cr_assert_eq(parse_ok("2015-02-04 17:51:00z"), base);
    cr_assert_eq(parse_ok("2016-02-29T00:00:00Z"), INT64_C(1456704000000), "leap day");
    cr_assert_eq(parse_ok("2000-02-29T23:59:59.1234Z"), INT64_C(951868799123));
    cr_assert_eq(parse_ok("1970-01-01T00:00:00Z"), 0);
}

Test(timefmt, fractions_truncate_to_the_millisecond)
{
    cr_assert_eq(parse_ok("2015-02-04T17:51:00.5Z"), base + 500);
    cr_assert_eq(parse_ok("2015-02-04T17:51:00.25Z"), base + 250);
    cr_assert_eq(parse_ok("2015-02-04T17:51:00.999999999Z"), base + 999, "truncated, not rounded");
    cr_assert_eq(parse_ok("2015-02-04t17:51:00.123456789z"), base + 123);
    cr_assert_eq(parse_ok("1969-12-31T23:59:59.9999Z"), -1, "truncation before the epoch");
    parse_bad("2015-02-04T17:51:00.Z");
    parse_bad("2015-02-04T17:51:00.1234567890Z"); /* 10 digits: more than nanoseconds */
    parse_bad("2015-02-04T17:51:00,5Z");
}

Test(timefmt, offsets_move_to_utc)
{
    cr_assert_eq(parse_ok("2015-02-04T18:51:00.250+01:00"), base + 250);
    cr_assert_eq(parse_ok("2015-02-04T12:21:00-05:30"), base);
    cr_assert_eq(parse_ok("2015-02-04T17:51:00-00:00"), base, "unknown local offset = UTC");
    cr_assert_eq(parse_ok("1970-01-01 01:00:00+02:00"), -3600000);
    cr_assert_eq(parse_ok("2015-02-05T17:50:00+23:59"), base);
    parse_bad("2015-02-04T17:51:00+1:00");
    parse_bad("2015-02-04T17:51:00+01");
    parse_bad("2015-02-04T17:51:00+0100");
    parse_bad("2015-02-04T17:51:00+24:00");
    parse_bad("2015-02-04T17:51:00+01:60");
    parse_bad("2015-02-04T17:51:00Z+01:00");
}

Test(timefmt, fields_out_of_range_and_bad_shapes)
{
    static const char *bad[] = {"",
                                "2015-02-29T00:00:00Z",
                                "1900-02-29 00:00:00",
                                "2015-02-30 00:00:00",
                                "2015-04-31 00:00:00",
                                "2015-13-01 00:00:00",
                                "2015-00-01 00:00:00",
                                "2015-01-00 00:00:00",
                                "2015-02-04 24:00:00",
                                "2015-02-04 17:60:00",
                                "2015-02-04T17:51:60Z", /* a leap second: epoch ms cannot name it */
                                "2016-12-31T23:59:60Z",
                                "2015-2-04T17:51:00Z",
                                "2015-02-04",
                                "2015-02-04 17:51",
                                "2015-02-04 17:51:00 ",
                                " 2015-02-04 17:51:00",
                                "2015-02-04 17:51:00x",
                                "2015-02-04_17:51:00",
                                "2015/02/04 17:51:00",
                                "+2015-02-04T17:51:00Z",
                                "2015-02-04T17:51:0aZ",
                                "1423072260000",
                                "-42"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        parse_bad(bad[i]);
    cr_assert_eq(parse_ok("2000-02-29 00:00:00"), INT64_C(951782400000), "400-year leap");
}

Test(timefmt, length_is_respected_without_a_terminator)
{
    const char s[] = "2015-02-04T17:51:00Zjunk";
    int64_t ms = 0;
    cr_assert_eq(core_time_parse(s, 20, &ms), CORE_OK);
    cr_assert_eq(ms, base);
    cr_assert_eq(core_time_parse(s, 21, &ms), CORE_EPARSE);
    cr_assert_eq(core_time_parse(s, 19, &ms), CORE_OK, "19 bytes: the naive form");
}

Test(timefmt, range_is_a_four_digit_utc_year)
{
    cr_assert_eq(parse_ok("0000-01-01T00:00:00Z"), CORE_TIME_MIN_MS);
    cr_assert_eq(parse_ok("9999-12-31T23:59:59.999Z"), CORE_TIME_MAX_MS - 1);
    parse_bad("0000-01-01T00:00:00+00:01"); /* before 0000-01-01 UTC */
    parse_bad("9999-12-31T23:59:59-00:01"); /* 10000-01-01 UTC */
}

Test(timefmt, untyped_text_also_takes_epoch_ms)
{
    static const char *bad[] = {"",
                                "-",
                                "1.5",
                                "+5",
                                "12345678901234567",
                                "1e3",
                                " 1",
                                "1 ",
                                "253402300800000",
                                "-62167219200001",
                                "--1"};
    int64_t ms = 0;
    cr_assert_eq(core_time_parse_text("1423072260000", 13, &ms), CORE_OK);
    cr_assert_eq(ms, base);
    cr_assert_eq(core_time_parse_text("-42", 3, &ms), CORE_OK);
    cr_assert_eq(ms, -42);
    cr_assert_eq(core_time_parse_text("0", 1, &ms), CORE_OK);
    cr_assert_eq(ms, 0);
    cr_assert_eq(core_time_parse_text("253402300799999", 15, &ms), CORE_OK);
    cr_assert_eq(ms, CORE_TIME_MAX_MS - 1);
    cr_assert_eq(core_time_parse_text("2015-02-04t17:51:00z", 20, &ms), CORE_OK);
    cr_assert_eq(ms, base, "and every core_time_parse form");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ms = 7;
        cr_assert_eq(core_time_parse_text(bad[i], strlen(bad[i]), &ms), CORE_EPARSE, "'%s'",
                     bad[i]);
        cr_assert_eq(ms, 7);
    }
}

Test(timefmt, format_precisions)
{
    char out[CORE_TIME_TEXT_MAX];
    cr_assert_eq(core_time_format(base + 5, CORE_TIME_AUTO, out, sizeof(out)), 24);
    cr_assert_str_eq(out, "2015-02-04T17:51:00.005Z");
    cr_assert_eq(core_time_format(base, CORE_TIME_AUTO, out, sizeof(out)), 20);
    cr_assert_str_eq(out, "2015-02-04T17:51:00Z");
    cr_assert_eq(core_time_format(base, CORE_TIME_MS, out, sizeof(out)), 24);
    cr_assert_str_eq(out, "2015-02-04T17:51:00.000Z");
    cr_assert_eq(core_time_format(base + 999, CORE_TIME_SEC, out, sizeof(out)), 20);
    cr_assert_str_eq(out, "2015-02-04T17:51:00Z", "seconds: floor");
    core_time_format(-1, CORE_TIME_MS, out, sizeof(out));
    cr_assert_str_eq(out, "1969-12-31T23:59:59.999Z");
    core_time_format(-1, CORE_TIME_SEC, out, sizeof(out));
    cr_assert_str_eq(out, "1969-12-31T23:59:59Z");
    core_time_format(0, CORE_TIME_AUTO, out, sizeof(out));
    cr_assert_str_eq(out, "1970-01-01T00:00:00Z");
}

Test(timefmt, format_truncates_and_keeps_the_year_outside_the_range)
{
    char out[CORE_TIME_TEXT_MAX], small[8];
    cr_assert_eq(core_time_format(base, CORE_TIME_SEC, small, sizeof(small)), 20);
    cr_assert_str_eq(small, "2015-02");
    cr_assert_eq(core_time_format(base, CORE_TIME_SEC, NULL, 0), 20);
    core_time_format(CORE_TIME_MAX_MS, CORE_TIME_SEC, out, sizeof(out));
    cr_assert_str_eq(out, "10000-01-01T00:00:00Z", "never a wrong date (sim clamped to 0000)");
    core_time_format(CORE_TIME_MIN_MS - 86400000, CORE_TIME_AUTO, out, sizeof(out));
    cr_assert_str_eq(out, "-1-12-31T00:00:00Z");
    cr_assert_lt(core_time_format(INT64_MIN, CORE_TIME_MS, out, sizeof(out)),
                 (size_t)CORE_TIME_TEXT_MAX);
    cr_assert_lt(core_time_format(INT64_MAX, CORE_TIME_MS, out, sizeof(out)),
                 (size_t)CORE_TIME_TEXT_MAX);
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Whole range [0000, 10000) against gmtime_r (64-bit time_t) and printf, and back. */
Test(timefmt, format_matches_gmtime_and_parses_back)
{
    uint64_t st = 9;
    const uint64_t span = (uint64_t)(CORE_TIME_MAX_MS - CORE_TIME_MIN_MS);

    cr_assert_eq(sizeof(time_t), 8);
    for (int i = 0; i < 100000; i++) {
        int64_t ms = CORE_TIME_MIN_MS + (int64_t)(splitmix(&st) % span), back = 0;
        int64_t msub = ((ms % 1000) + 1000) % 1000;
        time_t sec;
        struct tm tm;
        char want[96], got[CORE_TIME_TEXT_MAX];
        if (i % 4 == 0)
            ms -= msub, msub = 0; /* every 4th on a whole second: no fraction printed */
        sec = (time_t)((ms - msub) / 1000);
        cr_assert_not_null(gmtime_r(&sec, &tm));
        snprintf(want, sizeof(want), "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
        if (msub)
            snprintf(want + 19, sizeof(want) - 19, ".%03dZ", (int)msub);
        else
            strcat(want, "Z");
        cr_assert_eq(core_time_format(ms, CORE_TIME_AUTO, got, sizeof(got)), strlen(want));
        cr_assert_str_eq(got, want);
        cr_assert_eq(core_time_parse(got, strlen(got), &back), CORE_OK, "%s", got);
        cr_assert_eq(back, ms, "%s", got);
    }
}
