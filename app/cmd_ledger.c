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
    "so its output was never published) is reported and not counted. Every row is\n"
    "validated exactly as release and calibrate validate it when they open the ledger;\n"
    "any row they would reject fails this command (a ledger is never read leniently).\n"
    "The unit scheme and caps shown are the ones bound in the ledger's header.\n"
    "\n"
    "options:\n"
    "  --ledger FILE   ledger path (default: release.ledger.path under state.dir)\n"
    "  --unit PREFIX   only units starting with PREFIX (e.g. a device id)\n"
    "  --json          one JSON object per unit instead of the table\n"
    "  -h, --help      this text\n"
    "exit status: 0 ok; 1 unreadable, empty, header-less or corrupt ledger; 2 usage.\n\n";

struct charge {
    char *unit;
    struct core_dp_cost cost;
};

struct scan {
    struct charge *v;
    size_t n, cap;
    char **ids;
    size_t n_ids, cap_ids;
    uint64_t rows, torn;
};

static int by_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

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

/* One ledger row -> its charges, validated as the ledger's own open scan does
 * (core_dp_ledger_parse_row). CORE_EPARSE with the reason when it would be rejected. */
static core_err scan_row(struct scan *s, const char *line, size_t len, const char *prefix,
                         char *eb, size_t ebn)
{
    json_error_t jerr;
    json_t *row = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    struct core_dp_row r;
    size_t i;
    json_t *u;
    core_err rc = core_dp_ledger_parse_row(row, &r, eb, ebn);

    if (!row)
        snprintf(eb, ebn, "not JSON");
    if (rc != CORE_OK) {
        json_decref(row);
        return CORE_EPARSE;
    }
    json_array_foreach(r.units, i, u) {
        if (!prefix || strncmp(json_string_value(u), prefix, strlen(prefix)) == 0)
            push(s, json_string_value(u), &r.cost);
    }
    if (s->n_ids == s->cap_ids) {
        s->cap_ids = s->cap_ids ? 2 * s->cap_ids : 1024;
        s->ids = core_xrealloc(s->ids, s->cap_ids * sizeof(*s->ids));
    }
    s->ids[s->n_ids++] = core_xstrdup(r.id);
    s->rows++;
    json_decref(row);
    return CORE_OK;
}

static int scan_file(FILE *f, struct scan *s, const char *prefix)
{
    char *line = NULL, eb[256] = "";
    size_t cap = 0, lineno = 0;
    ssize_t n;
    int ex = APP_EXIT_OK;

    while ((n = getline(&line, &cap, f)) >= 0) {
        int complete = n > 0 && line[n - 1] == '\n';
        lineno++;
        if (lineno == 1)
            continue; /* the header, checked by core_dp_ledger_read_header */
        if (complete && (size_t)n <= CORE_DP_LEDGER_MAX_LINE &&
            scan_row(s, line, (size_t)n - 1, prefix, eb, sizeof(eb)) == CORE_OK)
            continue;
        if (!feof(f) && getc(f) != EOF) { /* a bad line that is not the last: corrupt */
            fprintf(stderr, "gcdp ledger: line %zu is not a valid ledger row (%s): corrupt "
                            "ledger\n", lineno, eb[0] ? eb : "too long");
            ex = APP_EXIT_FAILURE;
            break;
        }
        s->torn++;
    }
    if (ferror(f)) {
        fprintf(stderr, "gcdp ledger: read error\n");
        ex = APP_EXIT_FAILURE;
    }
    qsort(s->ids, s->n_ids, sizeof(*s->ids), by_str);
    for (size_t i = 1; ex == APP_EXIT_OK && i < s->n_ids; i++)
        if (strcmp(s->ids[i - 1], s->ids[i]) == 0) {
            fprintf(stderr, "gcdp ledger: release id '%s' committed twice: corrupt ledger\n",
                    s->ids[i]);
            ex = APP_EXIT_FAILURE;
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
    const char *flag = NULL, *prefix = NULL;
    char path[4096], eb[1024] = "";
    struct scan s = {0};
    struct core_dp_cost cap;
    struct core_dp_scheme sc;
    FILE *f = NULL;
    int ch, as_json = 0, ex = APP_EXIT_USAGE;

    if (app_help_requested(argc, argv)) {
        printf("%s%s", ledger_help, app_common_help);
        return APP_EXIT_OK;
    }
    if (app_config_load(&argc, argv, &cfg) != CORE_OK)
        return APP_EXIT_USAGE;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (ch) {
        case 'l': flag = optarg; break;
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
    if (app_ledger_path(cfg, flag, path, sizeof(path)) != 0)
        goto out;
    ex = APP_EXIT_FAILURE;
    if (core_dp_ledger_read_header(path, &sc, &cap, eb, sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp ledger: %s\n", eb);
        goto out;
    }
    if (!(f = fopen(path, "r"))) {
        fprintf(stderr, "gcdp ledger: cannot open '%s'\n", path);
        goto out;
    }
    fprintf(stderr, "gcdp ledger: %s: units " CORE_DP_UNIT_FORMAT ", slot_ms %lld, time radius "
            "%lld x period %lld ms; cap eps=%.6g delta=%.4g\n", path, (long long)sc.slot_ms,
            (long long)sc.time_radius, (long long)sc.period_ms, cap.eps, cap.delta);
    ex = scan_file(f, &s, prefix);
    if (ex == APP_EXIT_OK)
        print_units(&s, as_json, &cap);
out:
    if (f)
        fclose(f);
    for (size_t i = 0; i < s.n; i++)
        free(s.v[i].unit);
    for (size_t i = 0; i < s.n_ids; i++)
        free(s.ids[i]);
    free(s.v);
    free(s.ids);
    core_config_free(cfg);
    return ex;
}
