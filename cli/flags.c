/* flags.c - number parsers of the subcommands' flags (flags.h). */
#include "flags.h"

#include <assert.h>
#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
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

/* ---- the flag tables ---- */

#define MAX_ROWS 64

/* The largest value an unsigned field of size bytes holds. */
static unsigned long long umax_of(size_t size)
{
    return size >= sizeof(unsigned long long) ? ULLONG_MAX : (1ULL << (8 * size)) - 1;
}

static long long smax_of(size_t size)
{
    return size >= sizeof(long long) ? LLONG_MAX : (long long)(umax_of(size) >> 1);
}

/* Integer bounds of a row: [lo, hi] of the table, clamped to the field. */
static void int_bounds(const struct app_flag *r, long long *lo, long long *hi)
{
    long long m = smax_of(r->size);
    *lo = r->lo <= (double)-m ? -m - 1 : (long long)r->lo;
    *hi = r->hi >= (double)m ? m : (long long)r->hi;
}

static unsigned long long uint_hi(const struct app_flag *r)
{
    unsigned long long m = umax_of(r->size);
    return r->hi >= (double)m ? m : (unsigned long long)r->hi;
}

/* Store v in the integer field at p of size bytes (v fits: the bounds were clamped). */
static void store_int(void *p, size_t size, unsigned long long v)
{
    uint8_t b = (uint8_t)v;
    uint16_t h = (uint16_t)v;
    uint32_t w = (uint32_t)v;
    uint64_t d = (uint64_t)v;

    if (size == 1)
        memcpy(p, &b, 1);
    else if (size == 2)
        memcpy(p, &h, 2);
    else if (size == 4)
        memcpy(p, &w, 4);
    else
        memcpy(p, &d, 8);
}

/* "an integer in [1, 100]", "a number >= 0", ... for the message of a refused value. */
static void describe(const struct app_flag *r, char *buf, size_t len)
{
    const char *what = r->kind == APP_FLAG_DBLS  ? "comma-separated numbers, each"
                       : r->kind == APP_FLAG_DBL ? "a number"
                                                 : "an integer";
    char lo[32], hi[32];
    bool top = r->hi >= DBL_MAX;

    if (r->kind == APP_FLAG_UINT) {
        snprintf(lo, sizeof(lo), "%.0f", r->lo);
        top = uint_hi(r) == umax_of(r->size) && r->size >= sizeof(unsigned long long);
        snprintf(hi, sizeof(hi), "%llu", uint_hi(r));
    } else if (r->kind == APP_FLAG_INT) {
        long long l, h;
        int_bounds(r, &l, &h);
        snprintf(lo, sizeof(lo), "%lld", l);
        snprintf(hi, sizeof(hi), "%lld", h);
    } else {
        snprintf(lo, sizeof(lo), "%.15g", r->lo);
        snprintf(hi, sizeof(hi), "%.15g", r->hi);
    }
    if (top && r->kind == APP_FLAG_DBL && r->lo <= -DBL_MAX)
        snprintf(buf, len, "%s", what);
    else if (top)
        snprintf(buf, len, "%s %s %s", what, r->flags & APP_FLAG_OPEN_LO ? ">" : ">=", lo);
    else
        snprintf(buf, len, "%s in %s%s, %s%s", what, r->flags & APP_FLAG_OPEN_LO ? "(" : "[", lo,
                 hi, r->flags & APP_FLAG_OPEN_HI ? ")" : "]");
    if (r->kind == APP_FLAG_DBLS)
        snprintf(buf + strlen(buf), len - strlen(buf), ", at most %zu", r->size / sizeof(double));
}

/* Whether v lies off the open ends of r's range. */
static bool off_open_end(const struct app_flag *r, double v)
{
    return ((r->flags & APP_FLAG_OPEN_LO) && v == r->lo) ||
           ((r->flags & APP_FLAG_OPEN_HI) && v == r->hi);
}

static int parse_number(const struct app_flag *r, const char *arg, char *field)
{
    unsigned long long u;
    long long l, h;
    long v;
    double d;
    size_t *n = (size_t *)(void *)(field - r->offset + r->n_offset);

    switch (r->kind) {
    case APP_FLAG_UINT:
        if (app_flag_parse_u64(arg, uint_hi(r), &u) != 0 || (double)u < r->lo ||
            off_open_end(r, (double)u))
            return -1;
        store_int(field, r->size, u);
        return 0;
    case APP_FLAG_INT:
        int_bounds(r, &l, &h);
        if (app_flag_parse_long(arg, (long)l, (long)h, &v) != 0 || off_open_end(r, (double)v))
            return -1;
        store_int(field, r->size, (unsigned long long)v);
        return 0;
    case APP_FLAG_DBL:
        if (app_flag_parse_double(arg, r->lo, r->hi, &d) != 0 || off_open_end(r, d))
            return -1;
        memcpy(field, &d, sizeof(d));
        return 0;
    default: /* APP_FLAG_DBLS */
        if (app_flag_parse_doubles(arg, r->lo, r->hi, (double *)(void *)field,
                                   r->size / sizeof(double), n) != 0)
            return -1;
        for (size_t i = 0; i < *n; i++)
            if (off_open_end(r, ((double *)(void *)field)[i])) {
                *n = 0;
                return -1;
            }
        return 0;
    }
}

/* Row r with argument arg (NULL for a flag without one) into args. 0, -1 (a refused
 * value: the caller prints the message) or -2 (message printed). */
static int take(const char *cmd, const struct app_flag *r, const char *arg, char *args)
{
    char *field = args + r->offset;
    size_t *n = (size_t *)(void *)(args + r->n_offset);

    switch (r->kind) {
    case APP_FLAG_STR:
        arg = (r->flags & APP_FLAG_EMPTY_NULL) && !arg[0] ? NULL : arg;
        memcpy(field, &arg, sizeof(arg));
        return 0;
    case APP_FLAG_STRS:
        if (*n >= r->size / sizeof(arg)) {
            fprintf(stderr, "gcdp %s: --%s: at most %zu values\n", cmd, r->name,
                    r->size / sizeof(arg));
            return -2;
        }
        memcpy(field + (*n)++ * sizeof(arg), &arg, sizeof(arg));
        return 0;
    case APP_FLAG_TRUE:
    case APP_FLAG_FALSE:
        store_int(field, r->size, r->kind == APP_FLAG_TRUE);
        return 0;
    case APP_FLAG_FN:
        return r->fn(args, arg);
    default:
        return parse_number(r, arg, field);
    }
}

/* getopt_long's table and short-option string from the rows; returns the row count. */
static size_t build_options(const struct app_flag *rows, struct option *lo, char *shorts)
{
    size_t n = 0, k = 0;

    shorts[k++] = ':'; /* a missing value returns ':' */
    for (; rows[n].name; n++) {
        bool has_arg = rows[n].kind != APP_FLAG_TRUE && rows[n].kind != APP_FLAG_FALSE;
        assert(n < MAX_ROWS);
        lo[n] = (struct option){rows[n].name, has_arg ? required_argument : no_argument, NULL,
                                rows[n].short_name ? rows[n].short_name : 256 + (int)n};
        if (rows[n].short_name) {
            shorts[k++] = (char)rows[n].short_name;
            if (has_arg)
                shorts[k++] = ':';
        }
    }
    lo[n] = (struct option){NULL, 0, NULL, 0};
    shorts[k] = '\0';
    return n;
}

/* The message of getopt_long's refusal ('?' or ':') of argv[optind - 1]. */
static void refused_option(const char *cmd, int c, char **argv)
{
    char sh[3] = {'-', (char)optopt, '\0'};
    const char *opt = optopt > 0 && optopt < 256 ? sh : argv[optind - 1];

    if (c == ':')
        fprintf(stderr, "gcdp %s: option '%s' needs a value\n", cmd, opt);
    else if (optopt >= 256 || (optopt > 0 && strchr(opt, '=')))
        fprintf(stderr, "gcdp %s: option '%s' takes no value\n", cmd, opt);
    else
        fprintf(stderr, "gcdp %s: unknown option '%s'\n", cmd, opt);
}

int app_flags_parse(const char *cmd, const struct app_flag *rows, int argc, char **argv, void *args,
                    unsigned *tags)
{
    struct option lo[MAX_ROWS + 1];
    char shorts[3 * MAX_ROWS + 2];
    size_t n = build_options(rows, lo, shorts);
    int c, saved_opterr = opterr;

    if (tags)
        *tags = 0;
    opterr = 0;
    optind = 0; /* a full reset of getopt's state (GNU) */
    while ((c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
        size_t i = 0;
        int st = -2;

        while (i < n && (c == '?' || c == ':' || lo[i].val != c))
            i++;
        if (i == n)
            refused_option(cmd, c, argv);
        else
            st = take(cmd, &rows[i], optarg, args);
        if (st == -1) {
            char what[160];
            describe(&rows[i], what, sizeof(what));
            fprintf(stderr, "gcdp %s: invalid value '%s' for --%s%s%s\n", cmd, optarg, rows[i].name,
                    rows[i].kind == APP_FLAG_FN ? "" : ": want ",
                    rows[i].kind == APP_FLAG_FN ? "" : what);
        }
        if (st != 0) {
            fprintf(stderr, "(gcdp %s --help lists the options)\n", cmd);
            opterr = saved_opterr;
            return -1;
        }
        if (tags)
            *tags |= rows[i].tag;
    }
    opterr = saved_opterr;
    return optind;
}

int app_flags_parse_only(const char *cmd, const struct app_flag *rows, int argc, char **argv,
                         void *args, unsigned *tags)
{
    int first = app_flags_parse(cmd, rows, argc, argv, args, tags);

    if (first < 0)
        return -1;
    if (first < argc) {
        fprintf(stderr, "gcdp %s: unexpected argument '%s'\n(gcdp %s --help lists the options)\n",
                cmd, argv[first], cmd);
        return -1;
    }
    return 0;
}
