/* test_format.c - the printf-free number formatting of the record writers must print
 * exactly what printf would (window records are compared bit for bit downstream; the
 * timestamp formatter is tested in tests/core/test_timefmt.c). */
#include <float.h>
#include <math.h>

#include "ing_int.h"
#include "ing_test.h"

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void check_double(double x)
{
    char want[64], got[64];
    struct core_buf b;

    core_buf_init(&b, CORE_BUF_NO_CAP);
    snprintf(want, sizeof(want), "%.17g", x);
    ing__buf_double(&b, x);
    cr_assert_str_eq(b.p, want, "x = %a", x);
    if (x >= 1e-4 && x <= 1.0) {
        size_t n = ing__fmt_unit_double(x, got);
        cr_assert_eq(n, strlen(want), "x = %a", x);
        cr_assert_eq(memcmp(got, want, n), 0, "x = %a", x);
    } else {
        cr_assert_eq(ing__fmt_unit_double(x, got), 0, "x = %a is outside the fast range", x);
    }
    free(b.p);
}

/* N = 10^6 random doubles of [1e-4, 1] (uniform bits and uniform value), 2 x 10^5 dyadic
 * rationals c / 2^b (they produce exact decimal ties at the 17th digit), and edge values;
 * every one must equal snprintf("%.17g"). */
Test(format, unit_doubles_match_printf_exactly)
{
    static const double edge[] = {1.0,
                                  0.1,
                                  0.5,
                                  1e-4,
                                  0.3,
                                  2.0 / 3.0,
                                  0.9999999999999999,
                                  0.99999999999999994,
                                  0.099999999999999992,
                                  0.0001000000000000001,
                                  0.4327555555555556,
                                  0.2726577777777779,
                                  0.001,
                                  0.01,
                                  0.25,
                                  0.0,
                                  -0.0,
                                  -0.5,
                                  1.5,
                                  1e-5,
                                  123456.789,
                                  1e300,
                                  DBL_MIN,
                                  DBL_TRUE_MIN,
                                  9.999999999999999e-5};
    uint64_t st = 42;

    for (size_t i = 0; i < sizeof(edge) / sizeof(*edge); i++)
        check_double(edge[i]);
    check_double(nextafter(1e-4, 0));
    check_double(nextafter(1e-4, 1));
    check_double(nextafter(1.0, 0));
    for (int i = 0; i < 1000000; i++) {
        double x;
        if (i & 1) {
            x = 1e-4 + (1.0 - 1e-4) * ((double)(splitmix(&st) >> 11) * 0x1p-53);
        } else {
            uint64_t bits = splitmix(&st);
            int e = 1023 - 14 + (int)(bits % 15); /* [2^-14, 2^0] */
            bits = (bits & ((UINT64_C(1) << 52) - 1)) | ((uint64_t)e << 52);
            memcpy(&x, &bits, sizeof(x));
        }
        if (x > 1.0)
            x = 1.0;
        check_double(x);
    }
    for (int i = 0; i < 200000; i++) {
        int bexp = 14 + (int)(splitmix(&st) % 47);
        double x = ldexp((double)(splitmix(&st) >> (64 - bexp)), -bexp);
        check_double(x);
    }
}
