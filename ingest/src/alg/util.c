/* util.c - UTF-8 check, JSON output buffer (ing_int.h). */
#include <stdio.h>
#include <string.h>

#include "core/mem.h"
#include "ing_int.h"

/* Length of the UTF-8 sequence at s (n bytes left), or 0 if malformed. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned cp, min;

    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2, cp = c & 0x1f, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3, cp = c & 0x0f, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4, cp = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

bool ing__utf8_valid(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;

    while (i < len) {
        size_t k;
        if (u[i] < 0x80) { /* ASCII fast path */
            i++;
            continue;
        }
        k = utf8_seq(u + i, len - i);
        if (k == 0)
            return false;
        i += k;
    }
    return true;
}

void ing__utf8_sanitize(char *s)
{
    unsigned char *u = (unsigned char *)s;
    size_t n = strlen(s), i = 0;

    while (i < n) {
        size_t k = utf8_seq(u + i, n - i);
        if (k == 0) {
            u[i] = '?';
            k = 1;
        }
        i += k;
    }
}

__extension__ typedef unsigned __int128 ing__u128;

/* Exactly the text of the C conversion "%.17g" of x, for 1e-4 <= x <= 1 (the range of
 * normalized window features), without stdio (~10x cheaper; it runs for every node of
 * every window).
 * Returns the length written to out (>= 24 bytes), or 0 for x outside the range (the
 * caller then uses snprintf). Method: x = m * 2^-s exactly (m < 2^53, 52 <= s <= 66); for
 * the k in [16, 20] with 10^16 <= floor(m * 10^k / 2^s) < 10^17 the 17 significant digits
 * are D = m * 10^k / 2^s rounded to nearest, ties to even (glibc's rounding of the exact
 * binary value), all in 128-bit integers (m * 10^20 < 2^120). %.17g then prints fixed
 * notation (decimal exponent in [-4, 0] < 17) with trailing zeros and a bare '.' removed. */
/* The 17 significant digits of x (1e-4 <= x <= 1, normal) rounded as above, into dig[17];
 * returns the decimal exponent of the first digit (0 when x rounds to 1). */
static int unit_digits(double x, char dig[17])
{
    static const uint64_t p10[] = {10000000000000000ULL, 100000000000000000ULL};
    uint64_t bits, m, d;
    int s, k, ex;
    ing__u128 prod, q, r, half;

    memcpy(&bits, &x, sizeof(bits));
    m = (bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1) << 52); /* x is normal here */
    s = 1075 - (int)((bits >> 52) & 0x7ff);
    for (k = 16;; k++) { /* at most 5 rounds: x >= 1e-4 */
        ing__u128 t = m;
        for (int i = 0; i < k; i++)
            t *= 10;
        q = t >> s;
        if (q >= p10[0] || k == 20) {
            prod = t;
            break;
        }
    }
    r = prod & ((((ing__u128)1) << s) - 1);
    half = ((ing__u128)1) << (s - 1);
    d = (uint64_t)q;
    if (r > half || (r == half && (d & 1)))
        d++;
    ex = 16 - k; /* decimal exponent of the first digit */
    if (d == p10[1]) {
        d = p10[0];
        ex++;
    }
    for (int i = 16; i >= 0; i--) {
        dig[i] = (char)('0' + d % 10);
        d /= 10;
    }
    return ex;
}

size_t ing__fmt_unit_double(double x, char *out)
{
    char dig[17];
    size_t n = 0;
    int ex, last = 16;

    if (!(x >= 1e-4 && x <= 1.0))
        return 0;
    ex = unit_digits(x, dig);
    while (last > 0 && dig[last] == '0')
        last--;
    if (ex == 0) { /* x == 1 after rounding: "1" */
        out[n++] = dig[0];
        if (last > 0) {
            out[n++] = '.';
            memcpy(out + n, dig + 1, (size_t)last);
            n += (size_t)last;
        }
        return n;
    }
    out[n++] = '0';
    out[n++] = '.';
    for (int i = 0; i < -ex - 1; i++)
        out[n++] = '0';
    memcpy(out + n, dig, (size_t)last + 1);
    return n + (size_t)last + 1;
}

void ing__buf_double(struct core_buf *b, double v)
{
    char tmp[40];
    size_t n = ing__fmt_unit_double(v, tmp);
    int k;

    if (n) {
        core_buf_put(b, tmp, n);
        return;
    }
    k = snprintf(tmp, sizeof(tmp), "%.17g", v);
    core_buf_put(b, tmp, (size_t)k);
}
