/* occupancy.c - UCI Occupancy CSV line parsers (pure; see sim/occupancy.h). */
#include "sim/occupancy.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/timefmt.h"
#include "sim/encode.h"

const char *const sim_occ_channels[SIM_OCC_NVALUES] = {"temperature", "humidity", "light", "co2",
                                                       "humidity_ratio"};
static const char *const header_names[7] = {"date", "Temperature",   "Humidity", "Light",
                                            "CO2",  "HumidityRatio", "Occupancy"};
static const char *const value_names[SIM_OCC_NVALUES] = {"Temperature", "Humidity", "Light", "CO2",
                                                         "HumidityRatio"};

struct field {
    const char *p;
    size_t n;
    int quoted;
};

/* Split line into at most max fields at commas; strips one pair of double quotes around a
 * field (the data has no quoted commas or escaped quotes; a stray quote is an error).
 * Returns the number of fields, or -1 (too many, or bad quoting). */
static int split(const char *line, size_t n, struct field *f, int max)
{
    int k = 0;
    size_t i = 0;
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        n--;
    for (;;) {
        size_t start = i;
        if (k == max)
            return -1;
        while (i < n && line[i] != ',')
            i++;
        f[k].p = line + start;
        f[k].n = i - start;
        f[k].quoted = 0;
        if (f[k].n >= 2 && f[k].p[0] == '"' && f[k].p[f[k].n - 1] == '"') {
            f[k].p++;
            f[k].n -= 2;
            f[k].quoted = 1;
        }
        if (memchr(f[k].p, '"', f[k].n))
            return -1;
        k++;
        if (i >= n)
            return k;
        i++; /* the comma */
    }
}

core_err sim_occ_parse_header(const char *line, size_t n, char *eb, size_t ebn)
{
    struct field f[8];
    int k = split(line, n, f, 8);
    if (k != 7) {
        snprintf(eb, ebn,
                 "header has %d fields, expected the 7 names \"date\",\"Temperature\","
                 "\"Humidity\",\"Light\",\"CO2\",\"HumidityRatio\",\"Occupancy\"",
                 k);
        return CORE_EPARSE;
    }
    for (int i = 0; i < 7; i++) {
        if (f[i].n != strlen(header_names[i]) || memcmp(f[i].p, header_names[i], f[i].n) != 0) {
            snprintf(eb, ebn, "header field %d is '%.*s', expected '%s'", i + 1,
                     (int)(f[i].n > 40 ? 40 : f[i].n), f[i].p, header_names[i]);
            return CORE_EPARSE;
        }
    }
    return CORE_OK;
}

/* JSON number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static int is_json_number(const char *s, size_t n)
{
    size_t i = 0;
#define DIG(c) ((c) >= '0' && (c) <= '9')
    if (i < n && s[i] == '-')
        i++;
    if (i < n && s[i] == '0')
        i++;
    else if (i < n && s[i] >= '1' && s[i] <= '9')
        while (i < n && DIG(s[i]))
            i++;
    else
        return 0;
    if (i < n && s[i] == '.') {
        if (++i >= n || !DIG(s[i]))
            return 0;
        while (i < n && DIG(s[i]))
            i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i >= n || !DIG(s[i]))
            return 0;
        while (i < n && DIG(s[i]))
            i++;
    }
#undef DIG
    return i == n;
}

static core_err parse_number(const struct field *f, const char *name, double *v, char *text,
                             char *eb, size_t ebn)
{
    char *end;
    if (f->n == 0 || f->n >= SIM_OCC_MAX_FIELD) {
        snprintf(eb, ebn, "field %s is %s", name, f->n ? "too long" : "empty");
        return CORE_EPARSE;
    }
    memcpy(text, f->p, f->n);
    text[f->n] = '\0';
    errno = 0;
    *v = strtod(text, &end);
    if (*end != '\0' || errno == ERANGE || !isfinite(*v)) {
        snprintf(eb, ebn, "field %s '%s' is not a finite number", name, text);
        return CORE_EPARSE;
    }
    if (!is_json_number(text, f->n)) /* e.g. "+1" or ".5": re-format, same value */
        snprintf(text, SIM_OCC_MAX_FIELD, "%.17g", *v);
    return CORE_OK;
}

core_err sim_occ_parse_row(const char *line, size_t n, struct sim_occ_row *row, char *eb,
                           size_t ebn)
{
    struct field f[9];
    char tmp[SIM_OCC_MAX_FIELD];
    double occ;
    int k = split(line, n, f, 9);
    core_err rc;

    if (k != 8) {
        snprintf(eb, ebn, "%s: expected 8 fields (row id + 7 columns)",
                 k < 0 ? "bad quoting or more than 8 fields" : "wrong field count");
        return CORE_EPARSE;
    }
    if (f[0].n == 0 || f[0].n > 19 || strspn(f[0].p, "0123456789") < f[0].n) {
        snprintf(eb, ebn, "row id '%.*s' is not an unsigned integer",
                 (int)(f[0].n > 20 ? 20 : f[0].n), f[0].p);
        return CORE_EPARSE;
    }
    row->id = strtoull(f[0].p, NULL, 10);
    if (core_time_parse(f[1].p, f[1].n, &row->ts_ms) != CORE_OK || f[1].n != 19) {
        snprintf(eb, ebn, "date '%.*s' is not YYYY-MM-DD HH:MM:SS",
                 (int)(f[1].n > 30 ? 30 : f[1].n), f[1].p);
        return CORE_EPARSE;
    }
    row->date_quoted = f[1].quoted;
    for (int i = 0; i < SIM_OCC_NVALUES; i++)
        if ((rc = parse_number(&f[2 + i], value_names[i], &row->value[i], row->text[i], eb, ebn)) !=
            CORE_OK)
            return rc;
    if ((rc = parse_number(&f[7], "Occupancy", &occ, tmp, eb, ebn)) != CORE_OK)
        return rc;
    if (occ != 0.0 && occ != 1.0) {
        snprintf(eb, ebn, "field Occupancy '%s' is not 0 or 1", tmp);
        return CORE_EPARSE;
    }
    row->occupancy = (int)occ;
    return CORE_OK;
}
