/* timefmt.c - RFC 3339 / epoch-ms parser and formatter (see core/timefmt.h). */
#include "core/timefmt.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int64_t core_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    int64_t era, yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (int64_t)(m > 2 ? m - 3 : m + 9) + 2) / 5 + (int64_t)d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

void core_civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d)
{
    int64_t z = days + 719468, era, doe, yoe, doy, mp;

    era = (z >= 0 ? z : z - 146096) / 146097;
    doe = z - era * 146097;
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    *d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
    *m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static unsigned days_in_month(int64_t y, unsigned m)
{
    static const unsigned dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : dm[m - 1];
}

/* Read exactly n digits at s; false if any is not a digit. */
static bool digits(const char *s, int n, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10u + (unsigned)(s[i] - '0');
    }
    *out = v;
    return true;
}

/* Parse ".f{1,9}" at s[*i] if present; adds the milliseconds (truncated) to *ms. */
static bool parse_fraction(const char *s, size_t len, size_t *i, int64_t *ms)
{
    int nd = 0;
    int64_t frac = 0;

    if (*i >= len || s[*i] != '.')
        return true;
    (*i)++;
    while (*i < len && s[*i] >= '0' && s[*i] <= '9') {
        if (nd < 3)
            frac = frac * 10 + (s[*i] - '0');
        nd++;
        (*i)++;
    }
    if (nd == 0 || nd > 9)
        return false;
    for (int k = nd; k < 3; k++)
        frac *= 10;
    *ms += frac;
    return true;
}

/* Parse the zone suffix s[i..len): nothing, Z/z, or +HH:MM / -HH:MM. */
static bool parse_zone(const char *s, size_t len, size_t i, int64_t *offset_ms)
{
    unsigned hh, mm;

    *offset_ms = 0;
    if (i == len)
        return true;
    if ((s[i] == 'Z' || s[i] == 'z') && i + 1 == len)
        return true;
    if ((s[i] != '+' && s[i] != '-') || len - i != 6 || s[i + 3] != ':' ||
        !digits(s + i + 1, 2, &hh) || !digits(s + i + 4, 2, &mm) || hh > 23 || mm > 59)
        return false;
    *offset_ms = (int64_t)(hh * 60 + mm) * 60000 * (s[i] == '-' ? -1 : 1);
    return true;
}

core_err core_time_parse(const char *s, size_t len, int64_t *out_ms)
{
    unsigned y, mo, d, h, mi, se;
    int64_t ms = 0, off, t;
    size_t i = 19;

    /* 40 > the longest valid form (19 + 10 + 6): a cheap early exit for long junk. */
    if (len < 19 || len > 40 || s[4] != '-' || s[7] != '-' ||
        (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || s[13] != ':' || s[16] != ':')
        return CORE_EPARSE;
    if (!digits(s, 4, &y) || !digits(s + 5, 2, &mo) || !digits(s + 8, 2, &d) ||
        !digits(s + 11, 2, &h) || !digits(s + 14, 2, &mi) || !digits(s + 17, 2, &se))
        return CORE_EPARSE;
    if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || se > 59)
        return CORE_EPARSE;
    if (!parse_fraction(s, len, &i, &ms) || !parse_zone(s, len, i, &off))
        return CORE_EPARSE;
    t = ((core_days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60000 + (int64_t)se * 1000 + ms -
        off;
    if (!(t >= CORE_TIME_MIN_MS && t < CORE_TIME_MAX_MS))
        return CORE_EPARSE;
    *out_ms = t;
    return CORE_OK;
}

core_err core_time_parse_text(const char *s, size_t n, int64_t *out_ms)
{
    size_t neg = n > 0 && s[0] == '-', nd = 0;
    int64_t v = 0;

    while (neg + nd < n && s[neg + nd] >= '0' && s[neg + nd] <= '9')
        nd++;
    if (nd == 0 || neg + nd != n)
        return core_time_parse(s, n, out_ms);
    if (nd > 16)
        return CORE_EPARSE;
    for (size_t k = 0; k < nd; k++)
        v = v * 10 + (s[neg + k] - '0');
    v = neg ? -v : v;
    if (!(v >= CORE_TIME_MIN_MS && v < CORE_TIME_MAX_MS))
        return CORE_EPARSE;
    *out_ms = v;
    return CORE_OK;
}

/* Write v (0 <= v < 10^w) as exactly w decimal digits at o. */
static void put_digits(char *o, int64_t v, int w)
{
    for (int i = w - 1; i >= 0; i--) {
        o[i] = (char)('0' + v % 10);
        v /= 10;
    }
}

static size_t format_wide_year(int64_t y, unsigned m, unsigned d, int64_t rem, bool with_ms,
                               char *out, size_t out_size)
{
    char tmp[64];
    int k = snprintf(tmp, sizeof(tmp), "%lld-%02u-%02uT%02lld:%02lld:%02lld", (long long)y, m, d,
                     (long long)(rem / 3600000), (long long)(rem / 60000 % 60),
                     (long long)(rem / 1000 % 60));
    if (with_ms)
        k += snprintf(tmp + k, sizeof(tmp) - (size_t)k, ".%03lld", (long long)(rem % 1000));
    tmp[k++] = 'Z';
    tmp[k] = '\0';
    if (out_size > 0)
        snprintf(out, out_size, "%s", tmp);
    return (size_t)k;
}

size_t core_time_format(int64_t ms, enum core_time_prec prec, char *out, size_t out_size)
{
    int64_t days = ms / 86400000, rem = ms % 86400000, y; /* floor division, no overflow */
    unsigned m, d;
    bool with_ms = prec == CORE_TIME_MS || (prec == CORE_TIME_AUTO && rem % 1000 != 0);
    size_t n = with_ms ? 24 : 20;
    char tmp[24];

    if (rem < 0) {
        rem += 86400000;
        days--;
    }
    core_civil_from_days(days, &y, &m, &d);
    if (y < 0 || y > 9999)
        return format_wide_year(y, m, d, rem, with_ms, out, out_size);
    put_digits(tmp, y, 4);
    tmp[4] = '-';
    put_digits(tmp + 5, m, 2);
    tmp[7] = '-';
    put_digits(tmp + 8, d, 2);
    tmp[10] = 'T';
    put_digits(tmp + 11, rem / 3600000, 2);
    tmp[13] = ':';
    put_digits(tmp + 14, rem / 60000 % 60, 2);
    tmp[16] = ':';
    put_digits(tmp + 17, rem / 1000 % 60, 2);
    if (with_ms) {
        tmp[19] = '.';
        put_digits(tmp + 20, rem % 1000, 3);
    }
    tmp[n - 1] = 'Z';
    if (out_size == 0)
        return n;
    memcpy(out, tmp, n < out_size ? n : out_size - 1);
    out[n < out_size ? n : out_size - 1] = '\0';
    return n;
}
