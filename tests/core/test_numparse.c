/* test_numparse.c - core_strtod gives strtod's bits and end pointer: tricky spellings,
 * boundary values, random doubles in every printf form, random digit strings. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "core/numparse.h"
#include "numparse_int.h"

static uint64_t bits_of(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof(u));
    return u;
}

/* core_strtod(s) must equal strtod(s) bit for bit, with the same end and errno. */
static void same_as_strtod(const char *s)
{
    char *e1 = NULL, *e2 = NULL;
    double a, b;
    int err1, err2;

    errno = 0;
    a = strtod(s, &e1);
    err1 = errno;
    errno = 0;
    b = core_strtod(s, &e2);
    err2 = errno;
    cr_assert_eq(bits_of(a), bits_of(b), "'%s': strtod %a, core_strtod %a", s, a, b);
    cr_assert_eq(e1, e2, "'%s': end %td vs %td", s, e1 - s, e2 - s);
    cr_assert_eq(err1, err2, "'%s': errno %d vs %d", s, err1, err2);
}

Test(numparse, tricky_spellings_match_strtod)
{
    static const char *const cases[] = {
        "0",
        "-0",
        "+0",
        "0.0",
        "-0.0",
        "00000",
        "0e0",
        "0e-999999",
        "-0e999999",
        "1",
        "-1",
        "+1",
        "1.",
        ".5",
        "-.5",
        "+.5e1",
        ".",
        "-",
        "+",
        "",
        "e5",
        "1e",
        "1e+",
        "1e-",
        "1E5",
        "1e+05",
        "1e-05",
        "1.5e",
        "1.5e+x",
        "1..2",
        "1.2.3",
        "12abc",
        "1,5",
        "1 2",
        " 1",
        "\t1",
        "\v1",
        "1 ",
        "0x10",
        "0X1p4",
        "-0x1.8p1",
        "inf",
        "-INF",
        "infinity",
        "nan",
        "NaN(123)",
        "1e308",
        "1.7976931348623157e308",
        "1.7976931348623158e308",
        "1.7976931348623159e308",
        "1e309",
        "-1e400",
        "2.2250738585072014e-308",
        "2.2250738585072011e-308",
        "2.225073858507201e-308",
        "4.9406564584124654e-324",
        "5e-324",
        "2e-324",
        "1e-400",
        "9007199254740993",
        "9007199254740992.5",
        "9007199254740993.0000000001",
        "18446744073709551615",
        "18446744073709551616",
        "9999999999999999999",
        "99999999999999999999",
        "1234567890123456789e-10",
        "0.1",
        "0.2",
        "0.3",
        "0.30000000000000004",
        "123456789012345678901234567890",
        "0.000000000000000000000000000000000000000001",
        "1e-22",
        "1e22",
        "1e23",
        "8.5e-1",
        "3.14159265358979323846",
        "2.718281828459045",
        "7.2057594037927933e16",
        "1e0000000000000000001",
        "1e-0000000000000000001",
        "00000000000000000000001.5",
        "0.00000000000000000000000000000000000000000000000000000000000000000000001e70",
        "1.00000000000000011102230246251565404236316680908203125",
        "1.00000000000000011102230246251565404236316680908203124",
        "1.00000000000000011102230246251565404236316680908203126",
        "-1.6148198469603483",
        "0.18281243743146341",
        "-3.1265958775256397,1.1",
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
        same_as_strtod(cases[k]);
}

/* How often the fast path decided (it must, or the tests above prove nothing about it). */
static size_t fast_hits(const char *s)
{
    double v;
    const char *e;
    return core__strtod_fast(s, &v, &e) ? 1 : 0;
}

static uint64_t next(uint64_t *s)
{
    /* splitmix64 */
    uint64_t z = (*s += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

Test(numparse, random_doubles_in_every_printf_form_match_strtod, .timeout = 120)
{
    uint64_t s = 42;
    char buf[512];
    size_t tried = 0, fast = 0;

    for (int k = 0; k < 300000; k++) {
        uint64_t u = next(&s);
        double x;
        if (k % 2) /* any bit pattern (all exponents) */
            memcpy(&x, &u, sizeof(x));
        else /* data-like: N(0, ~2) magnitudes, as in the learner's CSV files */
            x = ((double)(u >> 11) / 9007199254740992.0 - 0.5) * 8.0 *
                pow(10.0, (double)((int)(u % 7) - 3));
        if (!isfinite(x))
            continue;
        /* literal formats: -Wformat-nonliteral */
        snprintf(buf, sizeof(buf), "%.17g", x), same_as_strtod(buf);
        if (k % 2 == 0)
            tried++, fast += fast_hits(buf);
        snprintf(buf, sizeof(buf), "%.16g", x), same_as_strtod(buf);
        snprintf(buf, sizeof(buf), "%.15g", x), same_as_strtod(buf);
        snprintf(buf, sizeof(buf), "%.6g", x), same_as_strtod(buf);
        snprintf(buf, sizeof(buf), "%.3e", x), same_as_strtod(buf);
        snprintf(buf, sizeof(buf), "%.19e", x), same_as_strtod(buf);
        snprintf(buf, sizeof(buf), "%.20f", x), same_as_strtod(buf);
        snprintf(buf, sizeof(buf), "%f", x), same_as_strtod(buf);
    }
    /* the learner's CSV spelling (%.17g of data-like values) takes the fast path */
    cr_assert_gt(fast, tried * 99 / 100, "fast path decided %zu of %zu", fast, tried);
}

Test(numparse, random_digit_strings_match_strtod, .timeout = 120)
{
    uint64_t s = 7;
    char buf[64];

    for (int k = 0; k < 1000000; k++) {
        uint64_t u = next(&s), v = next(&s);
        int nd = 1 + (int)(u % 20), pt = (int)((u >> 8) % (unsigned)(nd + 1)), p = 0;
        if (u & (1u << 20))
            buf[p++] = '-';
        for (int i = 0; i < nd; i++) {
            if (i == pt && (u & (1u << 21)))
                buf[p++] = '.';
            buf[p++] = (char)('0' + (v % 10));
            v /= 10;
            if (v == 0)
                v = next(&s);
        }
        if (u & (1u << 22))
            p += snprintf(buf + p, sizeof(buf) - (size_t)p, "e%d", (int)((u >> 24) % 700) - 350);
        buf[p] = '\0';
        same_as_strtod(buf);
    }
}
