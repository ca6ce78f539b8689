/* encode.c - reading JSON encoding, fault transforms (see sim/encode.h). */
#include "sim/encode.h"

#include <stdio.h>
#include <string.h>

#include "core/buf.h"
#include "core/timefmt.h"

/* Physically impossible values, one per channel and direction (below, above). Chosen far
 * outside any sensor's range so they fail every reasonable domain check. */
static const double impossible[SIM_NCH][2] = {
    {-300.0, 1000.0}, /* temperature: below absolute zero / above any indoor value */
    {-5.0, 150.0},    /* humidity % */
    {-10.0, 1.0e7},   /* light lux */
    {-1.0, 100.0},    /* voltage */
};

static void put_value(struct core_buf *b, const struct sim_reading *r, size_t c, enum sim_fault f,
                      size_t target, int dir)
{
    double v = r->values[c];
    if (c != target) {
        core_buf_printf(b, "%.6g", v);
        return;
    }
    switch (f) {
    case SIM_FAULT_OUT_OF_DOMAIN:
        core_buf_printf(b, "%.6g", c < SIM_NCH ? impossible[c][dir] : -1e9);
        break;
    case SIM_FAULT_NONFINITE:
        core_buf_puts(b, "1e999"); /* overflows to infinity in any double parser */
        break;
    case SIM_FAULT_WRONG_TYPE:
        core_buf_printf(b, "\"%.6g\"", v);
        break;
    default:
        core_buf_printf(b, "%.6g", v);
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
    struct core_buf b; /* over the caller's buf: never grown */
    char ts[CORE_TIME_TEXT_MAX];
    size_t target = SIZE_MAX;
    int dir = 0;

    if (cap == 0)
        return CORE_ETOOBIG;
    core_buf_init_fixed(&b, buf, cap);
    if ((f == SIM_FAULT_OUT_OF_DOMAIN || f == SIM_FAULT_NONFINITE || f == SIM_FAULT_WRONG_TYPE) &&
        r->n > 0) {
        target = (size_t)core_prng_below(rng, r->n);
        dir = (int)core_prng_below(rng, 2);
    }
    core_time_format(r->ts_ms, CORE_TIME_MS, ts, sizeof(ts));
    core_buf_printf(&b,
                    "{\"schema\":\"gcdp.reading/1\",\"device\":\"%s\",\"ts\":\"%s\",\"readings\":{",
                    r->device, ts);
    for (size_t c = 0; c < r->n; c++) {
        core_buf_printf(&b, "%s\"%s\":", c ? "," : "", r->names[c]);
        put_value(&b, r, c, f, target, dir);
    }
    if (f == SIM_FAULT_UNKNOWN_CHANNEL)
        core_buf_printf(&b, "%s\"pressure\":1013.25", r->n ? "," : "");
    core_buf_printf(&b, "},\"seq\":%llu", (unsigned long long)r->seq);
    if (f == SIM_FAULT_OVERSIZE && !b.overflow) {
        /* ,"pad":"xxx..."} reaching oversize_bytes + 1 bytes in total */
        size_t need = oversize_bytes + 1, fixed = b.len + 10;
        size_t pad = need > fixed ? need - fixed : 1;
        if (b.len + pad + 12 >= cap) {
            b.overflow = true;
        } else {
            core_buf_puts(&b, ",\"pad\":\"");
            memset(buf + b.len, 'x', pad);
            b.len += pad;
            buf[b.len] = '\0';
            core_buf_putc(&b, '"');
        }
    }
    core_buf_putc(&b, '}');
    if (core_buf_status(&b) != CORE_OK)
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
