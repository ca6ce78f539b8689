/* flags.c - number parsers of the subcommands' flags (flags.h). */
#include "flags.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int app_flag_parse_u64(const char *s, unsigned long long max, unsigned long long *out)
{
    int saved = errno, bad;
    char *end;
    unsigned long long v;

    if (!s[0] || strchr(s, '-'))
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    bad = errno != 0 || end == s || *end || v > max;
    errno = saved;
    if (bad)
        return -1;
    *out = v;
    return 0;
}

int app_flag_parse_long(const char *s, long lo, long hi, long *out)
{
    int saved = errno, bad;
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    bad = errno != 0 || end == s || *end || v < lo || v > hi;
    errno = saved;
    if (bad)
        return -1;
    *out = v;
    return 0;
}

int app_flag_parse_double(const char *s, double lo, double hi, double *out)
{
    int saved = errno, bad;
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    /* ERANGE on underflow still gives a usable (tiny or zero) value; only overflow and
     * non-numbers are refused, by the isfinite and range checks. */
    bad = end == s || *end || !isfinite(v) || !(v >= lo && v <= hi);
    errno = saved;
    if (bad)
        return -1;
    *out = v;
    return 0;
}

int app_flag_parse_doubles(const char *s, double lo, double hi, double *out, size_t cap, size_t *n)
{
    char item[64];

    *n = 0;
    while (*s) {
        size_t len = strcspn(s, ",");
        if (*n == cap || len == 0 || len >= sizeof(item))
            goto bad;
        memcpy(item, s, len);
        item[len] = '\0';
        if (app_flag_parse_double(item, lo, hi, &out[*n]) != 0)
            goto bad;
        (*n)++;
        s += len;
        if (*s == ',' && !*++s)
            goto bad; /* a trailing comma */
    }
    if (*n > 0)
        return 0;
bad:
    *n = 0;
    return -1;
}
