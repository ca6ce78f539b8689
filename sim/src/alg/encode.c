/* encode.c - reading JSON encoding, fault transforms, UTC calendar (see sim/encode.h). */
#include "sim/encode.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int64_t sim_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    /* H. Hinnant, "chrono-Compatible Low-Level Date Algorithms", days_from_civil. */
    int64_t era, yoe, doy, doe;
    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (int64_t)(m + (m > 2 ? -3 : 9)) + 2) / 5 + (int64_t)d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    int64_t era, doe, yoe, doy, mp;
    z += 719468;
    era = (z >= 0 ? z : z - 146096) / 146097;
    doe = z - era * 146097;
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    *d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
    *m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

size_t sim_format_rfc3339(int64_t ts_ms, int with_ms, char *out)
{
    int64_t day = ts_ms >= 0 ? ts_ms / 86400000 : -((-ts_ms + 86399999) / 86400000);
    int64_t rem = ts_ms - day * 86400000, y;
    unsigned mo, d;
    int n;

    civil_from_days(day, &y, &mo, &d);
    if (y < 0 || y > 9999)
        y = 0;
    if (with_ms)
        n = snprintf(out, 32, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", (int)y, mo, d,
                     (int)(rem / 3600000), (int)(rem / 60000 % 60), (int)(rem / 1000 % 60),
                     (int)(rem % 1000));
    else
        n = snprintf(out, 32, "%04d-%02u-%02uT%02d:%02d:%02dZ", (int)y, mo, d, (int)(rem / 3600000),
                     (int)(rem / 60000 % 60), (int)(rem / 1000 % 60));
    return n > 0 ? (size_t)n : 0;
}

/* Fixed-width unsigned decimal field s[0..w). */
static int digits(const char *s, size_t w, unsigned *out)
{
    unsigned v = 0;
    for (size_t i = 0; i < w; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    *out = v;
    return 0;
}

/* Optional ".fff..." fraction (milliseconds kept, further digits truncated) and zone
 * ("Z", "+HH:MM", "-HH:MM"; nothing = UTC) after the seconds. */
static core_err parse_tail(const char *s, size_t n, int64_t *ms, int64_t *off_min)
{
    size_t i = 0;
    *ms = 0;
    *off_min = 0;
    if (i < n && s[i] == '.') {
        int64_t scale = 100;
        if (++i >= n || s[i] < '0' || s[i] > '9')
            return CORE_EPARSE;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, scale /= 10)
            *ms += scale > 0 ? (s[i] - '0') * scale : 0;
    }
    if (i == n)
        return CORE_OK;
    if ((s[i] == 'Z' || s[i] == 'z') && i + 1 == n)
        return CORE_OK;
    if ((s[i] == '+' || s[i] == '-') && n - i == 6 && s[i + 3] == ':') {
        unsigned hh, mm;
        if (digits(s + i + 1, 2, &hh) || digits(s + i + 4, 2, &mm) || hh > 23 || mm > 59)
            return CORE_EPARSE;
        *off_min = (s[i] == '-' ? -1 : 1) * (int64_t)(hh * 60 + mm);
        return CORE_OK;
    }
    return CORE_EPARSE;
}

core_err sim_parse_datetime(const char *s, size_t n, int64_t *out)
{
    static const unsigned mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    unsigned y, mo, d, h, mi, sec;
    int64_t ms, off;

    if (n < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') || s[13] != ':' ||
        s[16] != ':')
        return CORE_EPARSE;
    if (digits(s, 4, &y) || digits(s + 5, 2, &mo) || digits(s + 8, 2, &d) ||
        digits(s + 11, 2, &h) || digits(s + 14, 2, &mi) || digits(s + 17, 2, &sec))
        return CORE_EPARSE;
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || sec > 59)
        return CORE_EPARSE;
    if (mo == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
        return CORE_EPARSE;
    if (parse_tail(s + 19, n - 19, &ms, &off) != CORE_OK)
        return CORE_EPARSE;
    *out = ((sim_days_from_civil(y, mo, d) * 24 + h) * 60 + mi - off) * 60000 +
           (int64_t)sec * 1000 + ms;
    return CORE_OK;
}

/* Bounded appender: remembers overflow instead of failing at every call. */
struct sbuf {
    char *p;
    size_t cap, len;
    int overflow;
};

static void CORE_PRINTF(2, 3) put(struct sbuf *b, const char *fmt, ...)
{
    va_list ap;
    int n;
    if (b->overflow)
        return;
    va_start(ap, fmt);
    /* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): va_start is right above */
    n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= b->cap - b->len) {
        b->overflow = 1;
        return;
    }
    b->len += (size_t)n;
}

/* Physically impossible values, one per channel and direction (below, above). Chosen far
 * outside any sensor's range so they fail every reasonable domain check. */
static const double impossible[SIM_NCH][2] = {
    {-300.0, 1000.0}, /* temperature: below absolute zero / above any indoor value */
    {-5.0, 150.0},    /* humidity % */
    {-10.0, 1.0e7},   /* light lux */
    {-1.0, 100.0},    /* voltage */
};

static void put_value(struct sbuf *b, const struct sim_reading *r, size_t c, enum sim_fault f,
                      size_t target, int dir)
{
    double v = r->values[c];
    if (c != target) {
        put(b, "%.6g", v);
        return;
    }
    switch (f) {
    case SIM_FAULT_OUT_OF_DOMAIN:
        put(b, "%.6g", c < SIM_NCH ? impossible[c][dir] : -1e9);
        break;
    case SIM_FAULT_NONFINITE:
        put(b, "1e999"); /* overflows to infinity in any double parser */
        break;
    case SIM_FAULT_WRONG_TYPE:
        put(b, "\"%.6g\"", v);
        break;
    default:
        put(b, "%.6g", v);
    }
}

/* Syntax error, deterministic: "readings":{ becomes "readings"{ (a ':' is missing). */
static void drop_readings_colon(char *buf, size_t *len)
{
    char *p = strstr(buf, "\"readings\":");
    if (!p)
        return;
    p += 10;                                     /* the ':' */
    memmove(p, p + 1, *len - (size_t)(p - buf)); /* includes the NUL */
    (*len)--;
}

/* Index of the k-th structural '{', ',' or ':' outside strings in buf[0..len-1), or the
 * number of them when k == SIZE_MAX. */
static size_t structural(const char *buf, size_t len, size_t k)
{
    size_t seen = 0;
    int in_str = 0;
    for (size_t i = 0; i + 1 < len; i++) {
        char c = buf[i];
        if (c == '"' && (i == 0 || buf[i - 1] != '\\'))
            in_str = !in_str;
        if (in_str || (c != '{' && c != ',' && c != ':'))
            continue;
        if (seen == k)
            return i;
        seen++;
    }
    return seen;
}

/* A proper prefix ending right after a structural '{', ',' or ':': the document is then
 * incomplete (the next token is missing) wherever the cut falls. */
static size_t cut_point(const char *buf, size_t len, struct core_prng *rng)
{
    size_t n = structural(buf, len, SIZE_MAX);
    if (n == 0)
        return 1;
    return structural(buf, len, (size_t)core_prng_below(rng, n)) + 1;
}

core_err sim_encode_reading(const struct sim_reading *r, enum sim_fault f, struct core_prng *rng,
                            size_t oversize_bytes, char *buf, size_t cap, size_t *len)
{
    struct sbuf b = {buf, cap, 0, 0};
    char ts[32];
    size_t target = SIZE_MAX;
    int dir = 0;

    if (cap == 0)
        return CORE_ETOOBIG;
    if ((f == SIM_FAULT_OUT_OF_DOMAIN || f == SIM_FAULT_NONFINITE || f == SIM_FAULT_WRONG_TYPE) &&
        r->n > 0) {
        target = (size_t)core_prng_below(rng, r->n);
        dir = (int)core_prng_below(rng, 2);
    }
    sim_format_rfc3339(r->ts_ms, 1, ts);
    put(&b, "{\"schema\":\"gcdp.reading/1\",\"device\":\"%s\",\"ts\":\"%s\",\"readings\":{",
        r->device, ts);
    for (size_t c = 0; c < r->n; c++) {
        put(&b, "%s\"%s\":", c ? "," : "", r->names[c]);
        put_value(&b, r, c, f, target, dir);
    }
    if (f == SIM_FAULT_UNKNOWN_CHANNEL)
        put(&b, "%s\"pressure\":1013.25", r->n ? "," : "");
    put(&b, "},\"seq\":%llu", (unsigned long long)r->seq);
    if (f == SIM_FAULT_OVERSIZE && !b.overflow) {
        /* ,"pad":"xxx..."} reaching oversize_bytes + 1 bytes in total */
        size_t need = oversize_bytes + 1, fixed = b.len + 10;
        size_t pad = need > fixed ? need - fixed : 1;
        if (b.len + pad + 12 >= cap) {
            b.overflow = 1;
        } else {
            put(&b, ",\"pad\":\"");
            memset(buf + b.len, 'x', pad);
            b.len += pad;
            buf[b.len] = '\0';
            put(&b, "\"");
        }
    }
    put(&b, "}");
    if (b.overflow)
        return CORE_ETOOBIG;
    if (f == SIM_FAULT_MALFORMED_JSON)
        drop_readings_colon(buf, &b.len);
    if (f == SIM_FAULT_TRUNCATED)
        b.len = cut_point(buf, b.len, rng);
    buf[b.len] = '\0';
    *len = b.len;
    return CORE_OK;
}

enum sim_fault sim_fault_pick(struct core_prng *rng, const double rates[SIM_FAULT_COUNT])
{
    double u = core_prng_uniform(rng), acc = 0.0;
    for (int k = 0; k < SIM_FAULT_COUNT; k++) {
        acc += rates[k];
        if (u < acc)
            return (enum sim_fault)k;
    }
    return SIM_FAULT_COUNT;
}
