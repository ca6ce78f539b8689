/* cmd_ledger.c - `gcdp ledger`: read-only inspection of the privacy ledger: totals per
 * protected unit (sequential composition within a unit), remaining budget under the cap. */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "app.h"
#include "core/dp_acct.h"
#include "core/dp_ledger.h"
#include "core/dp_ledger_cfg.h"
#include "core/fsutil.h"
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
    "  --carry-to NEW  change the unit scheme or caps: create the ledger NEW with the scheme\n"
    "                  and caps of this run's configuration (release.ledger.slot_ms,\n"
    "                  release.policy.time_radius, ingest.period_ms, release.ledger.cap_*)\n"
    "                  and carry the spent budget forward conservatively: every new unit\n"
    "                  starts at the maximum spent over any old unit whose time span it\n"
    "                  overlaps. NEW must not exist; refused when a carried total is over\n"
    "                  the new cap. The old ledger is left as it is (keep it: it is the\n"
    "                  record of what was spent); use only NEW from then on.\n"
    "  --import OLD --to NEW\n"
    "                  migrate the JSONL ledger OLD once to the embedded store NEW (SQLite;\n"
    "                  docs/operations.md, \"Ledger store\"): every release's output bytes\n"
    "                  and every unit's total are copied and verified equal before NEW is\n"
    "                  put in place. NEW must not exist; OLD keeps the same scheme and caps\n"
    "                  and stays where it is as NEW's audit log (new rows are appended to\n"
    "                  it). Takes the ledger's lock: stop release/calibrate first.\n"
    "  -h, --help      this text\n"
    "exit status: 0 ok; 1 unreadable, empty, header-less or corrupt ledger; 2 usage.\n\n";

struct charge {
    char *unit;
    struct core_dp_cost cost;
};

struct rowref {
    char *id, *unit0; /* release id and its first unit */
};

struct scan {
    struct charge *v;
    size_t n, cap;
    struct rowref *ids;
    size_t n_ids, cap_ids;
    uint64_t rows, torn;
};

static int by_id(const void *a, const void *b)
{
    return strcmp(((const struct rowref *)a)->id, ((const struct rowref *)b)->id);
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

/* One committed row (validated by core) -> its charges. */
struct scan_arg {
    struct scan *s;
    const char *prefix;
};

static int on_row(void *arg, const struct core_dp_row *r)
{
    struct scan_arg *a = arg;
    struct scan *s = a->s;
    size_t i;
    json_t *u;

    json_array_foreach(r->units, i, u)
    {
        if (!a->prefix || strncmp(json_string_value(u), a->prefix, strlen(a->prefix)) == 0)
            push(s, json_string_value(u), &r->cost);
    }
    if (s->n_ids == s->cap_ids) {
        s->cap_ids = s->cap_ids ? 2 * s->cap_ids : 1024;
        s->ids = core_xrealloc(s->ids, s->cap_ids * sizeof(*s->ids));
    }
    s->ids[s->n_ids].unit0 = core_xstrdup(json_string_value(json_array_get(r->units, 0)));
    s->ids[s->n_ids++].id = core_xstrdup(r->id);
    s->rows++;
    return 0;
}

/* The read-only scan is core's (core_dp_ledger_scan); here: duplicate ids. */
static int scan_file(const char *path, struct scan *s, const char *prefix,
                     struct core_dp_scheme *sc, struct core_dp_cost *cap)
{
    struct scan_arg a = {s, prefix};
    char eb[1024] = "";
    int ex = APP_EXIT_OK;

    if (core_dp_ledger_scan(path, sc, cap, on_row, &a, &s->torn, eb, sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp ledger: %s\n", eb);
        return APP_EXIT_FAILURE;
    }
    if (s->n_ids > 0) /* qsort of NULL is undefined even for 0 elements */
        qsort(s->ids, s->n_ids, sizeof(*s->ids), by_id);
    for (size_t i = 1; ex == APP_EXIT_OK && i < s->n_ids; i++)
        if (strcmp(s->ids[i - 1].id, s->ids[i].id) == 0) {
            fprintf(stderr, "gcdp ledger: release id '%s' committed twice: corrupt ledger\n",
                    s->ids[i].id);
            ex = APP_EXIT_FAILURE;
        }
    return ex;
}

/* ---- --carry-to: a new unit scheme with the spent budget carried forward ---- */

struct carried {
    char *unit;
    struct core_dp_cost cost;
};

static int by_carried(const void *a, const void *b)
{
    return strcmp(((const struct carried *)a)->unit, ((const struct carried *)b)->unit);
}

/* Old unit "<device>|<slot>" (slot under old) -> the new units whose slots overlap its time
 * span [slot * old, (slot + 1) * old), each with the old unit's total. */
static int map_unit(const char *unit, const struct core_dp_cost *tot,
                    const struct core_dp_scheme *old, const struct core_dp_scheme *nw,
                    struct carried **v, size_t *n, size_t *cap)
{
    char dev[CORE_DP_LEDGER_MAX_ID + 1], name[CORE_DP_LEDGER_MAX_ID + 32];
    int64_t slot, a, b;

    if (core_dp_unit_parse(unit, dev, sizeof(dev), &slot) != 0 ||
        slot > INT64_MAX / old->slot_ms - 1 || slot < INT64_MIN / old->slot_ms + 1)
        return -1;
    a = core_dp_unit_slot(nw, slot * old->slot_ms);
    b = core_dp_unit_slot(nw, (slot + 1) * old->slot_ms - 1);
    for (int64_t ns = a; ns <= b; ns++) {
        if (core_dp_unit_name(name, sizeof(name), dev, ns) < 0)
            return -1;
        if (*n == *cap) {
            *cap = *cap ? 2 * *cap : 1024;
            *v = core_xrealloc(*v, *cap * sizeof(**v));
        }
        (*v)[*n].unit = core_xstrdup(name);
        (*v)[(*n)++].cost = *tot;
    }
    return 0;
}

/* Charge each new unit its carried total (one row per unit; rows committed together). */
static int carry_commit(struct core_dp_ledger *l, const struct carried *v, size_t n,
                        const char *old_path)
{
    char id[CORE_DP_LEDGER_MAX_ID + 1], mark[600];
    int len = snprintf(mark, sizeof(mark), "{\"carried_from\":\"%s\"}", old_path);
    core_err rc = CORE_OK;

    if (len < 0 || (size_t)len >= sizeof(mark) || strchr(old_path, '"') || strchr(old_path, '\\'))
        len = snprintf(mark, sizeof(mark), "{\"carried_from\":\"(old ledger)\"}");
    for (size_t i = 0; i < n && rc == CORE_OK; i++) {
        const char *u = v[i].unit;
        snprintf(id, sizeof(id), "carry|%.200s", u);
        rc = core_dp_ledger_charge(l, id, "carry", &u, 1, &v[i].cost, NULL);
        if (rc == CORE_EBUDGET)
            fprintf(stderr,
                    "gcdp ledger: unit '%s' carries eps=%.6g delta=%.4g, over the new "
                    "ledger's cap: refused (nothing is usable in the new ledger)\n",
                    u, v[i].cost.eps, v[i].cost.delta);
        if (rc == CORE_OK)
            rc = core_dp_ledger_commit_output(l, id, mark, (size_t)len);
    }
    return rc == CORE_OK ? 0 : -1;
}

/* Every old release id with its stored bytes, charged nothing (the totals are carried
 * above): a replay after the change republishes the same bytes, never new noise. */
static int carry_replays(struct core_dp_ledger *nl, const struct scan *s, const char *old_path,
                         const struct core_dp_scheme *old, const struct core_dp_cost *old_cap,
                         const struct core_dp_scheme *nw)
{
    struct core_dp_ledger_opts oo = {old_path, *old_cap, 0, *old};
    struct core_dp_ledger *ol = NULL;
    const struct core_dp_cost zero = {0, 0, 0};
    char eb[512] = "";
    core_err rc;

    if ((rc = core_dp_ledger_open(&oo, &ol, eb, sizeof(eb))) != CORE_OK) {
        fprintf(stderr, "gcdp ledger: %s: %s\n", old_path, eb);
        return -1;
    }
    for (size_t i = 0; rc == CORE_OK && i < s->n_ids; i++) {
        uint8_t *bytes = NULL;
        size_t len = 0, nu = 0, cu = 0;
        struct carried *one = NULL; /* the row's first unit, named in the new scheme */
        const struct core_dp_cost none = {0, 0, 0};
        const char *u;
        if (map_unit(s->ids[i].unit0, &none, old, nw, &one, &nu, &cu) != 0 || nu == 0) {
            fprintf(stderr, "gcdp ledger: release %s: unit is not <device>|<slot>\n", s->ids[i].id);
            rc = CORE_EPARSE;
            break;
        }
        u = one[0].unit;
        rc = core_dp_ledger_lookup(ol, s->ids[i].id, &bytes, &len);
        if (rc == CORE_OK)
            rc = core_dp_ledger_charge(nl, s->ids[i].id, "carry", &u, 1, &zero, NULL);
        if (rc == CORE_OK)
            rc = core_dp_ledger_commit_output(nl, s->ids[i].id, bytes, len);
        free(bytes);
        for (size_t k = 0; k < nu; k++)
            free(one[k].unit);
        free(one);
        if (rc != CORE_OK)
            fprintf(stderr, "gcdp ledger: copying release %s: %s\n", s->ids[i].id,
                    core_strerror(rc));
    }
    core_dp_ledger_free(ol);
    return rc == CORE_OK ? 0 : -1;
}

/* The new ledger's units and what each carries: every old unit's total mapped onto the new
 * slots it overlaps, then per new unit the maximum over those old units. *pv new (caller
 * frees each unit and the array), *pm entries. Returns 0, or -1 after naming a bad unit. */
static int carried_units(struct scan *s, const struct core_dp_scheme *old,
                         const struct core_dp_scheme *nw, struct carried **pv, size_t *pm)
{
    struct carried *v = NULL;
    size_t n = 0, cap = 0, i = 0, m = 0;

    if (s->n > 0) /* none when --unit matches nothing */
        qsort(s->v, s->n, sizeof(*s->v), by_unit);
    while (i < s->n) { /* total per old unit, then its new units */
        struct core_dp_cost tot = {0, 0, 0};
        size_t j = i;
        for (; j < s->n && strcmp(s->v[j].unit, s->v[i].unit) == 0; j++)
            if (core_dp_cost_add(&tot, &s->v[j].cost) != CORE_OK)
                tot.eps = tot.delta = tot.rho = INFINITY;
        if (map_unit(s->v[i].unit, &tot, old, nw, &v, &n, &cap) != 0) {
            fprintf(stderr, "gcdp ledger: unit '%s' is not <device>|<slot>\n", s->v[i].unit);
            for (size_t k = 0; k < n; k++)
                free(v[k].unit);
            free(v);
            return -1;
        }
        i = j;
    }
    if (n > 0)
        qsort(v, n, sizeof(*v), by_carried);
    for (i = 0; i < n; i++) { /* the maximum over the old units each new unit overlaps */
        if (m > 0 && strcmp(v[m - 1].unit, v[i].unit) == 0) {
            if (core_dp_cost_max(&v[m - 1].cost, &v[i].cost) != CORE_OK)
                v[m - 1].cost.eps = INFINITY;
            free(v[i].unit);
        } else {
            v[m++] = v[i];
        }
    }
    *pv = v;
    *pm = m;
    return 0;
}

/* --carry-to: a new ledger (release.ledger.* scheme and caps) holding what the old one
 * spent, per new unit, and its releases for replay. */
static int carry_to(struct scan *s, const char *old_path, const struct core_dp_scheme *old,
                    const struct core_dp_cost *old_cap, const struct core_config *cfg,
                    const char *new_path)
{
    struct core_dp_ledger_opts lo = {new_path, {0, 0, 0}, 0, {0, 0, 0}};
    struct core_dp_ledger *l = NULL;
    struct carried *v = NULL;
    size_t m = 0;
    char eb[1024] = "";
    int ex = APP_EXIT_FAILURE;

    if (access(new_path, F_OK) == 0 || core_path_same(new_path, old_path)) {
        fprintf(stderr,
                "gcdp ledger: --carry-to %s: exists already; the new ledger must be a "
                "new file\n",
                new_path);
        return APP_EXIT_USAGE;
    }
    core_dp_scheme_from_config(cfg, &lo.scheme);
    lo.cap.eps = core_config_double(cfg, "release.ledger.cap_eps");
    lo.cap.delta = core_config_double(cfg, "release.ledger.cap_delta");
    if (carried_units(s, old, &lo.scheme, &v, &m) != 0)
        return ex;
    if (core_dp_ledger_open(&lo, &l, eb, sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp ledger: --carry-to %s: %s\n", new_path, eb);
        goto out;
    }
    if (carry_commit(l, v, m, old_path) == 0 &&
        carry_replays(l, s, old_path, old, old_cap, &lo.scheme) == 0) {
        fprintf(stderr,
                "gcdp ledger: %zu units and %zu releases carried to %s (slot_ms %lld -> "
                "%lld); use it from now on and keep %s as the record of what was "
                "spent\n",
                m, s->n_ids, new_path, (long long)old->slot_ms, (long long)lo.scheme.slot_ms,
                old_path);
        ex = APP_EXIT_OK;
    } else {
        core_dp_ledger_free(l);
        l = NULL;
        unlink(new_path); /* nothing in it may be used: a partial carry would undercount */
    }
out:
    core_dp_ledger_free(l);
    for (size_t i = 0; i < m; i++)
        free(v[i].unit);
    free(v);
    return ex;
}

/* --import OLD --to NEW: the one-off migration of a JSONL ledger to the store. */
static int import_to(const char *old, const char *nw)
{
    struct core_dp_ledger_opts o;
    char eb[1024] = "";
    uint64_t rows = 0;
    core_err rc;

    memset(&o, 0, sizeof(o));
    o.path = old;
    rc = core_dp_ledger_read_header(old, &o.scheme, &o.cap, eb, sizeof(eb));
    if (rc == CORE_OK)
        rc = core_dp_ledger_import(&o, nw, &rows, eb, sizeof(eb));
    if (rc != CORE_OK) {
        fprintf(stderr, "gcdp ledger: --import %s --to %s: %s (%s)\n", old, nw,
                eb[0] ? eb : core_strerror(rc), core_errname(rc));
        return APP_EXIT_FAILURE;
    }
    fprintf(stderr,
            "gcdp ledger: imported %" PRIu64 " releases from %s into the store %s; "
            "every unit's total and every release's bytes verified equal. %s stays in place "
            "as the store's audit log\n",
            rows, old, nw, old);
    return APP_EXIT_OK;
}

static int import_args(const char *imp, const char *to, int other_options)
{
    if (imp && to && !other_options)
        return import_to(imp, to);
    fprintf(stderr, "gcdp ledger: --import OLD --to NEW go together, alone\n");
    return APP_EXIT_USAGE;
}

static void print_units(struct scan *s, int as_json, const struct core_dp_cost *cap)
{
    size_t i = 0, n_units = 0;
    struct core_dp_cost worst = {0, 0, 0};

    if (s->n > 0) /* none when --unit matches nothing */
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
            json_t *o = json_pack("{s:s,s:I,s:f,s:f,s:f,s:f,s:f}", "unit", s->v[i].unit, "releases",
                                  (json_int_t)(j - i), "eps", tot.eps, "delta", tot.delta, "rho",
                                  tot.rho, "eps_cap", cap->eps, "delta_cap", cap->delta);
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
    fprintf(stderr,
            "gcdp ledger: %" PRIu64 " releases, %zu units, max per unit eps=%.6g "
            "delta=%.4g (cap eps=%.6g delta=%.4g)%s\n",
            s->rows, n_units, worst.eps, worst.delta, cap->eps, cap->delta,
            s->torn ? "; torn last line ignored (never published)" : "");
}

/* What one command line asks for. */
struct ledger_cli {
    const char *flag, *prefix, *carry, *imp, *to; /* --ledger, --unit, --carry-to, --import, --to */
    int as_json;
};

static void usage(FILE *f)
{
    fprintf(f, "%s%s", ledger_help, app_common_help);
}

/* Parse argv into cli. Returns -1 to go on, else the exit status (--help printed: OK). */
static int parse_args(int argc, char **argv, struct ledger_cli *cli)
{
    static const struct option lo[] = {
        {"ledger", required_argument, NULL, 'l'}, {"unit", required_argument, NULL, 'u'},
        {"json", no_argument, NULL, 'j'},         {"carry-to", required_argument, NULL, 'c'},
        {"import", required_argument, NULL, 'i'}, {"to", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
    int ch;

    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (ch) {
        case 'l':
            cli->flag = optarg;
            break;
        case 'u':
            cli->prefix = optarg;
            break;
        case 'j':
            cli->as_json = 1;
            break;
        case 'c':
            cli->carry = optarg;
            break;
        case 'i':
            cli->imp = optarg;
            break;
        case 't':
            cli->to = optarg;
            break;
        case 'h':
            usage(stdout);
            return APP_EXIT_OK;
        default:
            return APP_EXIT_USAGE;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "gcdp ledger: unexpected argument '%s'\n", argv[optind]);
        return APP_EXIT_USAGE;
    }
    return -1;
}

/* Inspect (or with --carry-to, carry) the ledger at path. */
static int inspect(const char *path, const struct ledger_cli *cli, const struct core_config *cfg,
                   struct scan *s)
{
    struct core_dp_cost cap;
    struct core_dp_scheme sc;
    int ex;

    if (cli->carry && cli->prefix) {
        fprintf(stderr, "gcdp ledger: --carry-to carries every unit; --unit does not apply\n");
        return APP_EXIT_USAGE;
    }
    ex = scan_file(path, s, cli->prefix, &sc, &cap);
    if (ex != APP_EXIT_OK)
        return ex;
    fprintf(stderr,
            "gcdp ledger: %s: units " CORE_DP_UNIT_FORMAT ", slot_ms %lld, time radius "
            "%lld x period %lld ms; cap eps=%.6g delta=%.4g\n",
            path, (long long)sc.slot_ms, (long long)sc.time_radius, (long long)sc.period_ms,
            cap.eps, cap.delta);
    if (cli->carry)
        return carry_to(s, path, &sc, &cap, cfg, cli->carry);
    print_units(s, cli->as_json, &cap);
    return APP_EXIT_OK;
}

static void scan_cleanup(struct scan *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i].unit);
    for (size_t i = 0; i < s->n_ids; i++) {
        free(s->ids[i].id);
        free(s->ids[i].unit0);
    }
    free(s->v);
    free(s->ids);
}

static int cmd_main(struct app_call *call)
{
    const struct core_config *cfg = call->cfg;
    struct ledger_cli cli = {0};
    char path[4096];
    struct scan s = {0};
    int ex;

    ex = parse_args(call->argc, call->argv, &cli);
    if (ex >= 0)
        goto out;
    if (cli.imp || cli.to) {
        ex = import_args(cli.imp, cli.to, cli.carry || cli.prefix || cli.flag);
        goto out;
    }
    ex = APP_EXIT_USAGE;
    if (app_ledger_path(cfg, cli.flag, path, sizeof(path)) != 0)
        goto out;
    ex = inspect(path, &cli, cfg, &s);
out:
    scan_cleanup(&s);
    return ex;
}

const struct app_command app_cmd_ledger = {
    .name = "ledger",
    .summary = "inspect the privacy ledger: totals per protected unit",
    .help = usage,
    .run = cmd_main,
};
