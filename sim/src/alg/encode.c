/* encode.c - reading JSON encoding, fault transforms (see sim/encode.h). */
#include "sim/encode.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/timefmt.h"

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
    char ts[CORE_TIME_TEXT_MAX];
    size_t target = SIZE_MAX;
    int dir = 0;

    if (cap == 0)
        return CORE_ETOOBIG;
    if ((f == SIM_FAULT_OUT_OF_DOMAIN || f == SIM_FAULT_NONFINITE || f == SIM_FAULT_WRONG_TYPE) &&
        r->n > 0) {
        target = (size_t)core_prng_below(rng, r->n);
        dir = (int)core_prng_below(rng, 2);
    }
    core_time_format(r->ts_ms, CORE_TIME_MS, ts, sizeof(ts));
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
