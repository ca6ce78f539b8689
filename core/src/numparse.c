/* numparse.c - core_strtod: Eisel-Lemire fast path, strtod for everything else (see
 * core/numparse.h). */
#include "core/numparse.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "numparse_int.h"
#include "pow10_128.h"

#define MAX_DIGITS     19 /* significant digits that fit a uint64_t exactly */
#define MAX_EXP_DIGITS 6  /* beyond this the exponent is out of range anyway: strtod */

/* A decimal significand and exponent: value = man · 10^e10 (sign apart). */
struct decimal {
    uint64_t man;
    int e10;
    bool neg;
};

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* man·10^k + the k digits at *s, for the run of digits at *s. Four digits are combined
 * apart from man first, so the multiply-add chain through man is a quarter as long (the
 * CSV numbers have 17 digits). s[1..3] are read only after s[0..2] were digits, so never
 * past the string's end. */
static uint64_t take_digits(const char **ps, uint64_t man)
{
    const char *s = *ps;

    while (is_digit(s[0]) && is_digit(s[1]) && is_digit(s[2]) && is_digit(s[3])) {
        uint64_t four = (uint64_t)(s[0] - '0') * 1000 + (uint64_t)(s[1] - '0') * 100 +
                        (uint64_t)(s[2] - '0') * 10 + (uint64_t)(s[3] - '0');
        man = man * 10000 + four;
        s += 4;
    }
    while (is_digit(*s))
        man = man * 10 + (uint64_t)(*s++ - '0');
    *ps = s;
    return man;
}

/* 64×64 → 128-bit product. */
static void mul64(uint64_t a, uint64_t b, uint64_t *hi, uint64_t *lo)
{
#if defined(__SIZEOF_INT128__)
    __extension__ typedef unsigned __int128 u128; /* __extension__: no -Wpedantic warning */
    u128 p = (u128)a * b;
    *lo = (uint64_t)p;
    *hi = (uint64_t)(p >> 64);
#else
    uint64_t a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);

    *lo = (mid << 32) | (p00 & 0xffffffffu);
    *hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
#endif
}

static int clz64(uint64_t x) /* x != 0 */
{
#if defined(__GNUC__)
    return __builtin_clzll(x);
#else
    int n = 0;
    while (!(x & (UINT64_C(1) << 63))) {
        x <<= 1;
        n++;
    }
    return n;
#endif
}

/* floor(e · log2(10)) for |e| < 2^15, by the usual fixed-point constant 217706 / 2^16. */
static int64_t floor_log2_pow10(int e)
{
    int64_t t = 217706 * (int64_t)e;
    return t >= 0 ? t / 65536 : -((-t + 65535) / 65536);
}

/* Eisel-Lemire: the correctly rounded normal double of d, or false (then use strtod). */
static bool eisel_lemire(const struct decimal *d, double *out)
{
    uint64_t man = d->man, xhi, xlo, yhi, ylo, mant, bits;
    const uint64_t *pw;
    int64_t exp2;
    int clz;

    if (man == 0) {
        *out = d->neg ? -0.0 : 0.0;
        return true;
    }
    if (d->e10 < CORE_POW10_MIN_EXP || d->e10 > CORE_POW10_MAX_EXP)
        return false;
    pw = core_pow10_128[d->e10 - CORE_POW10_MIN_EXP];
    clz = clz64(man);
    man <<= clz;
    exp2 = floor_log2_pow10(d->e10) + 64 + 1023 - clz;
    mul64(man, pw[1], &xhi, &xlo);
    if ((xhi & 0x1ff) == 0x1ff && xlo + man < man) { /* the 64-bit product is not enough */
        uint64_t mhi = xhi, mlo;
        mul64(man, pw[0], &yhi, &ylo);
        mlo = xlo + yhi;
        mhi += mlo < xlo;
        if ((mhi & 0x1ff) == 0x1ff && mlo + 1 == 0 && ylo + man < man)
            return false;
        xhi = mhi;
        xlo = mlo;
    }
    {
        uint64_t msb = xhi >> 63;
        mant = xhi >> (msb + 9);
        exp2 -= (int64_t)(1 ^ msb);
    }
    if (xlo == 0 && (xhi & 0x1ff) == 0 && (mant & 3) == 1)
        return false; /* exactly half-way at this precision: strtod decides */
    mant += mant & 1;
    mant >>= 1;
    if (mant >> 53) {
        mant >>= 1;
        exp2++;
    }
    if (exp2 <= 0 || exp2 >= 0x7ff)
        return false; /* subnormal, zero by underflow or overflow: strtod sets ERANGE */
    bits = ((uint64_t)exp2 << 52) | (mant & ((UINT64_C(1) << 52) - 1));
    if (d->neg)
        bits |= UINT64_C(1) << 63;
    memcpy(out, &bits, sizeof(*out));
    return true;
}

/* Digits of the significand from *p (one point allowed); false when there are more than
 * MAX_DIGITS significant ones. *ndig counts all digits. Leading zeros add nothing to man,
 * so man holds exactly the significant digits whenever there are at most MAX_DIGITS. */
static bool scan_significand(const char **p, struct decimal *d, size_t *ndig)
{
    const char *s = *p, *start = s, *frac;
    uint64_t man = 0;
    size_t nfrac = 0;

    man = take_digits(&s, man);
    *ndig = (size_t)(s - start);
    if (*s == '.') {
        frac = ++s;
        man = take_digits(&s, man);
        nfrac = (size_t)(s - frac);
        *ndig += nfrac;
    }
    if (*ndig > MAX_DIGITS) { /* count the significant ones: skip leading zeros */
        size_t lz = 0;
        for (const char *q = start; q < s && (*q == '0' || *q == '.'); q++)
            lz += *q == '0';
        if (*ndig - lz > MAX_DIGITS)
            return false;
    }
    if (nfrac > INT32_MAX / 2)
        return false;
    d->man = man;
    d->e10 = -(int)nfrac;
    *p = s;
    return true;
}

/* Optional exponent at *p; false when strtod must decide ("e" without digits, huge). */
static bool scan_exponent(const char **p, struct decimal *d)
{
    const char *s = *p;
    int e = 0, k = 0;
    bool neg = false;

    if (*s != 'e' && *s != 'E')
        return true;
    s++;
    if (*s == '+' || *s == '-')
        neg = *s++ == '-';
    if (!is_digit(*s))
        return false;
    for (; is_digit(*s); s++)
        if (++k > MAX_EXP_DIGITS)
            return false;
        else
            e = e * 10 + (*s - '0');
    d->e10 += neg ? -e : e;
    *p = s;
    return true;
}

bool core__strtod_fast(const char *s, double *out, const char **end)
{
    struct decimal d = {0, 0, false};
    size_t ndig;

    if (*s == '+' || *s == '-')
        d.neg = *s++ == '-';
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        return false; /* hex float */
    if (!scan_significand(&s, &d, &ndig) || ndig == 0)
        return false;
    if (!scan_exponent(&s, &d) || !eisel_lemire(&d, out))
        return false;
    *end = s;
    return true;
}

double core_strtod(const char *s, char **end)
{
    const char *e = NULL;
    double v;

    if (core__strtod_fast(s, &v, &e)) {
        if (end)
            *end = (char *)(uintptr_t)e; /* as strtod: end points into the caller's s */
        return v;
    }
    return strtod(s, end);
}
