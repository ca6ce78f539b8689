/* cmd_ledger.c - `gcdp ledger`: read-only inspection of the privacy ledger: totals per
 * protected unit (sequential composition within a unit), remaining budget under the cap. */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "app.h"
#include "core/dp_acct.h"
#include "core/dp_ledger.h"
#include "core/mem.h"

static const char ledger_help[] =
    "usage: gcdp ledger [options] [common options]\n"
    "\n"
    "Read the write-ahead privacy ledger (read-only; safe while a release runs) and print\n"
    "the composed cost per privacy unit '<device>|<slot>': every release that covered the\n"
    "unit adds up (sequential composition); different units never add (parallel\n"
    "composition). Totals are rounded up. A torn last line (a commit that never returned,\n"
    "so its output was never published) is reported and not counted.\n"
    "\n"
    "options:\n"
    "  --ledger FILE   ledger path (default: release.ledger.path = gcdp-ledger.jsonl)\n"
    "  --unit PREFIX   only units starting with PREFIX (e.g. a device id)\n"
    "  --json          one JSON object per unit instead of the table\n"
    "  -h, --help      this text\n"
    "Caps shown are release.ledger.cap_eps / cap_delta.\n"
    "exit status: 0 ok; 1 unreadable or corrupt ledger; 2 usage.\n\n";

struct charge {
    char *unit;
    struct core_dp_cost cost;
};

struct scan {
    struct charge *v;
    size_t n, cap;
    uint64_t rows, torn;
};

static int by_unit(const void *a, const void *b)
{
    return strcmp(((const struct charge *)a)->unit, ((const struct charge *)b)->unit);
}

static void push(struct scan *s, const char *unit, const struct core_dp_cost *c)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 1024;
        s->v = core_xrealloc(s->v, s->cap * sizeof(*s->v));
    }
    s->v[s->n].unit = core_xstrdup(unit);
    s->v[s->n++].cost = *c;
}

/* One ledger row -> its charges. CORE_EPARSE when the line is not a ledger row. */
static core_err scan_row(struct scan *s, const char *line, size_t len, const char *prefix)
{
    json_t *row = json_loadb(line, len, 0, NULL), *units, *u;
    struct core_dp_cost c;
    size_t i;
    core_err rc = CORE_EPARSE;

    units = json_object_get(row, "units");
    if (!json_is_array(units) || !json_is_number(json_object_get(row, "eps")) ||
        !json_is_number(json_object_get(row, "rho")) ||
        !json_is_number(json_object_get(row, "delta")))
        goto out;
    c.eps = json_number_value(json_object_get(row, "eps"));
    c.rho = json_number_value(json_object_get(row, "rho"));
    c.delta = json_number_value(json_object_get(row, "delta"));
    json_array_foreach(units, i, u) {
        if (!json_is_string(u))
            goto out;
        if (!prefix || strncmp(json_string_value(u), prefix, strlen(prefix)) == 0)
            push(s, json_string_value(u), &c);
    }
    s->rows++;
    rc = CORE_OK;
out:
    json_decref(row);
    return rc;
}

static int scan_file(FILE *f, struct scan *s, const char *prefix)
{
    char *line = NULL;
    size_t cap = 0, lineno = 0;
    ssize_t n;
    int ex = APP_EXIT_OK;

    while ((n = getline(&line, &cap, f)) >= 0) {
        int complete = n > 0 && line[n - 1] == '\n';
        lineno++;
        if (lineno == 1) {
            if (strncmp(line, "{\"gcdp_ledger\":1}", 17) != 0) {
                fprintf(stderr, "gcdp ledger: not a gcdp ledger (bad header line)\n");
                ex = APP_EXIT_FAILURE;
                break;
            }
            continue;
        }
        if (complete && scan_row(s, line, (size_t)n, prefix) == CORE_OK)
            continue;
        if (!feof(f) && getc(f) != EOF) { /* a bad line that is not the last: corrupt */
            fprintf(stderr, "gcdp ledger: line %zu is not a ledger row (corrupt ledger)\n",
                    lineno);
            ex = APP_EXIT_FAILURE;
            break;
        }
        s->torn++;
    }
    free(line);
    return ex;
}

static void print_units(struct scan *s, int as_json, const struct core_dp_cost *cap)
{
    size_t i = 0, n_units = 0;
    struct core_dp_cost worst = {0, 0, 0};

    qsort(s->v, s->n, sizeof(*s->v), by_unit);
    if (!as_json)
        printf("%-40s %9s %14s %12s %12s %14s\n", "unit", "releases", "eps", "delta", "rho",
               "eps_remaining");
    while (i < s->n) {
        struct core_dp_cost tot = {0, 0, 0};
        size_t j = i;
        for (; j < s->n && strcmp(s->v[j].unit, s->v[i].unit) == 0; j++)
            if (core_dp_cost_add(&tot, &s->v[j].cost) != CORE_OK)
                tot.eps = tot.delta = tot.rho = INFINITY; /* fail closed: never undercount */
        if (as_json) {
            json_t *o = json_pack("{s:s,s:I,s:f,s:f,s:f,s:f,s:f}", "unit", s->v[i].unit,
                                  "releases", (json_int_t)(j - i), "eps", tot.eps, "delta",
                                  tot.delta, "rho", tot.rho, "eps_cap", cap->eps, "delta_cap",
                                  cap->delta);
            json_dumpf(o, stdout, JSON_COMPACT | JSON_REAL_PRECISION(17));
            putchar('\n');
            json_decref(o);
        } else
            printf("%-40s %9zu %14.6g %12.4g %12.4g %14.6g\n", s->v[i].unit, j - i, tot.eps,
                   tot.delta, tot.rho, cap->eps - tot.eps);
        if (core_dp_cost_max(&worst, &tot) != CORE_OK)
            worst.eps = INFINITY;
        n_units++;
        i = j;
    }
    fprintf(stderr, "gcdp ledger: %" PRIu64 " releases, %zu units, max per unit eps=%.6g "
            "delta=%.4g (cap eps=%.6g delta=%.4g)%s\n", s->rows, n_units, worst.eps,
            worst.delta, cap->eps, cap->delta,
            s->torn ? "; torn last line ignored (never published)" : "");
}

int cmd_ledger(int argc, char **argv)
{
    static const struct option lo[] = {{"ledger", required_argument, NULL, 'l'},
                                       {"unit", required_argument, NULL, 'u'},
                                       {"json", no_argument, NULL, 'j'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
    struct core_config *cfg = NULL;
    const char *path = NULL, *prefix = NULL;
    struct scan s = {0};
    struct core_dp_cost cap;
    FILE *f = NULL;
    int ch, as_json = 0, ex = APP_EXIT_USAGE;

    if (app_config_load(&argc, argv, &cfg) != CORE_OK)
        return APP_EXIT_USAGE;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (ch) {
        case 'l': path = optarg; break;
        case 'u': prefix = optarg; break;
        case 'j': as_json = 1; break;
        case 'h': printf("%s%s", ledger_help, app_common_help); ex = APP_EXIT_OK; goto out;
        default: goto out;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "gcdp ledger: unexpected argument '%s'\n", argv[optind]);
        goto out;
    }
    if (!path)
        path = core_config_str(cfg, "release.ledger.path");
    cap.eps = core_config_double(cfg, "release.ledger.cap_eps");
    cap.delta = core_config_double(cfg, "release.ledger.cap_delta");
    cap.rho = 0.0;
    ex = APP_EXIT_FAILURE;
    if (!(f = fopen(path, "r"))) {
        fprintf(stderr, "gcdp ledger: cannot open '%s'\n", path);
        goto out;
    }
    ex = scan_file(f, &s, prefix);
    if (ex == APP_EXIT_OK)
        print_units(&s, as_json, &cap);
out:
    if (f)
        fclose(f);
    for (size_t i = 0; i < s.n; i++)
        free(s.v[i].unit);
    free(s.v);
    core_config_free(cfg);
    return ex;
}
