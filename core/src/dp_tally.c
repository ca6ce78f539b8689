/* dp_tally.c - spending per unit of a ledger, and its carry to a new scheme (core/dp_tally.h). */
#include "core/dp_tally.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "core/dp_acct.h"
#include "core/fsutil.h"
#include "core/mem.h"

struct charge {
    char *unit;
    struct core_dp_cost cost;
};

struct rowref {
    char *id, *unit0; /* release id and its first unit */
};

struct core_dp_tally {
    struct charge *v; /* one per (release, unit counted) */
    size_t n, cap;
    struct rowref *ids; /* one per release */
    size_t n_ids, cap_ids;
    uint64_t rows, torn;
    struct core_dp_scheme scheme;
    struct core_dp_cost caps;
    const char *prefix;
};

static int by_id(const void *a, const void *b)
{
    return strcmp(((const struct rowref *)a)->id, ((const struct rowref *)b)->id);
}

static int by_unit(const void *a, const void *b)
{
    return strcmp(((const struct charge *)a)->unit, ((const struct charge *)b)->unit);
}

static void push(struct charge **v, size_t *n, size_t *cap, const char *unit,
                 const struct core_dp_cost *c)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 1024;
        *v = core_xrealloc(*v, *cap * sizeof(**v));
    }
    (*v)[*n].unit = core_xstrdup(unit);
    (*v)[(*n)++].cost = *c;
}

/* One committed row (validated by core_dp_ledger_scan) -> its charges. */
static int on_row(void *arg, const struct core_dp_row *r)
{
    struct core_dp_tally *t = arg;
    const char *p = t->prefix;
    size_t i;
    json_t *u;

    json_array_foreach(r->units, i, u)
    {
        if (!p || strncmp(json_string_value(u), p, strlen(p)) == 0)
            push(&t->v, &t->n, &t->cap, json_string_value(u), &r->cost);
    }
    if (t->n_ids == t->cap_ids) {
        t->cap_ids = t->cap_ids ? 2 * t->cap_ids : 1024;
        t->ids = core_xrealloc(t->ids, t->cap_ids * sizeof(*t->ids));
    }
    t->ids[t->n_ids].unit0 = core_xstrdup(json_string_value(json_array_get(r->units, 0)));
    t->ids[t->n_ids++].id = core_xstrdup(r->id);
    t->rows++;
    return 0;
}

core_err core_dp_tally_new(const char *path, const char *prefix, struct core_dp_tally **out,
                           char *eb, size_t ebn)
{
    struct core_dp_tally *t = core_xcalloc(1, sizeof(*t));
    core_err rc;

    t->prefix = prefix;
    rc = core_dp_ledger_scan(path, &t->scheme, &t->caps, on_row, t, &t->torn, eb, ebn);
    if (rc == CORE_OK && t->n_ids > 0) /* qsort of NULL is undefined even for 0 elements */
        qsort(t->ids, t->n_ids, sizeof(*t->ids), by_id);
    for (size_t i = 1; rc == CORE_OK && i < t->n_ids; i++)
        if (strcmp(t->ids[i - 1].id, t->ids[i].id) == 0) {
            snprintf(eb, ebn, "release id '%s' committed twice: corrupt ledger", t->ids[i].id);
            rc = CORE_EPARSE;
        }
    if (rc == CORE_OK && t->n > 0) /* none when prefix matches nothing */
        qsort(t->v, t->n, sizeof(*t->v), by_unit);
    t->prefix = NULL;
    if (rc != CORE_OK) {
        core_dp_tally_free(t);
        return rc;
    }
    *out = t;
    return CORE_OK;
}

void core_dp_tally_free(struct core_dp_tally *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i].unit);
    for (size_t i = 0; i < t->n_ids; i++) {
        free(t->ids[i].id);
        free(t->ids[i].unit0);
    }
    free(t->v);
    free(t->ids);
    free(t);
}

void core_dp_tally_header(const struct core_dp_tally *t, struct core_dp_scheme *scheme,
                          struct core_dp_cost *cap, uint64_t *rows, uint64_t *torn)
{
    *scheme = t->scheme;
    *cap = t->caps;
    *rows = t->rows;
    *torn = t->torn;
}

/* The total of the run of charges of one unit starting at i; *end: one past the run. */
static struct core_dp_cost unit_total(const struct charge *v, size_t n, size_t i, size_t *end)
{
    struct core_dp_cost tot = {0, 0, 0};
    size_t j = i;

    for (; j < n && strcmp(v[j].unit, v[i].unit) == 0; j++)
        if (core_dp_cost_add(&tot, &v[j].cost) != CORE_OK)
            tot.eps = tot.delta = tot.rho = INFINITY; /* fail closed: never undercount */
    *end = j;
    return tot;
}

void core_dp_tally_foreach(struct core_dp_tally *t, core_dp_tally_fn *fn, void *arg)
{
    size_t i = 0, j;

    while (i < t->n) {
        struct core_dp_cost tot = unit_total(t->v, t->n, i, &j);
        fn(arg, t->v[i].unit, j - i, &tot);
        i = j;
    }
}

/* ---- carry to a new unit scheme ---- */

static void free_charges(struct charge *v, size_t n)
{
    for (size_t k = 0; k < n; k++)
        free(v[k].unit);
    free(v);
}

/* Old unit "<device>|<slot>" (slot under old) -> the new units whose slots overlap its time
 * span [slot * old, (slot + 1) * old), each with the old unit's total. */
static int map_unit(const char *unit, const struct core_dp_cost *tot,
                    const struct core_dp_scheme *old, const struct core_dp_scheme *nw,
                    struct charge **v, size_t *n, size_t *cap)
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
        push(v, n, cap, name, tot);
    }
    return 0;
}

/* The new ledger's units and what each carries: every old unit's total mapped onto the new
 * slots it overlaps, then per new unit the maximum over those old units. *pv new (free with
 * free_charges), *pm entries. */
static core_err carried_units(const struct core_dp_tally *t, const struct core_dp_scheme *nw,
                              struct charge **pv, size_t *pm, char *eb, size_t ebn)
{
    struct charge *v = NULL;
    size_t n = 0, cap = 0, i = 0, j, m = 0;

    while (i < t->n) { /* total per old unit, then its new units */
        struct core_dp_cost tot = unit_total(t->v, t->n, i, &j);
        if (map_unit(t->v[i].unit, &tot, &t->scheme, nw, &v, &n, &cap) != 0) {
            snprintf(eb, ebn, "unit '%s' is not <device>|<slot>", t->v[i].unit);
            free_charges(v, n);
            return CORE_EPARSE;
        }
        i = j;
    }
    if (n > 0)
        qsort(v, n, sizeof(*v), by_unit);
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
    return CORE_OK;
}

/* Charge each new unit its carried total (one row per unit; rows committed together). */
static core_err carry_commit(struct core_dp_ledger *l, const struct charge *v, size_t n,
                             const char *old_path, char *eb, size_t ebn)
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
            snprintf(eb, ebn,
                     "unit '%s' carries eps=%.6g delta=%.4g, over the new ledger's cap: "
                     "refused (nothing is usable in the new ledger)",
                     u, v[i].cost.eps, v[i].cost.delta);
        if (rc == CORE_OK)
            rc = core_dp_ledger_commit_output(l, id, mark, (size_t)len);
    }
    return rc;
}

/* One old release copied into nl with its bytes, charged nothing, under its first unit. */
static core_err carry_one(struct core_dp_ledger *nl, struct core_dp_ledger *ol,
                          const struct rowref *r, const struct core_dp_scheme *old,
                          const struct core_dp_scheme *nw, char *eb, size_t ebn)
{
    const struct core_dp_cost zero = {0, 0, 0};
    struct charge *one = NULL; /* the row's first unit, named in the new scheme */
    uint8_t *bytes = NULL;
    size_t len = 0, nu = 0, cu = 0;
    const char *u;
    core_err rc;

    if (map_unit(r->unit0, &zero, old, nw, &one, &nu, &cu) != 0 || nu == 0) {
        free_charges(one, nu);
        snprintf(eb, ebn, "release %s: unit is not <device>|<slot>", r->id);
        return CORE_EPARSE;
    }
    u = one[0].unit;
    rc = core_dp_ledger_lookup(ol, r->id, &bytes, &len);
    if (rc == CORE_OK)
        rc = core_dp_ledger_charge(nl, r->id, "carry", &u, 1, &zero, NULL);
    if (rc == CORE_OK)
        rc = core_dp_ledger_commit_output(nl, r->id, bytes, len);
    free(bytes);
    free_charges(one, nu);
    if (rc != CORE_OK)
        snprintf(eb, ebn, "copying release %s: %s", r->id, core_strerror(rc));
    return rc;
}

/* Every old release id with its stored bytes, charged nothing (the totals are carried
 * above): a replay after the change republishes the same bytes, never new noise. */
static core_err carry_replays(struct core_dp_ledger *nl, const struct core_dp_tally *t,
                              const char *old_path, const struct core_dp_scheme *nw, char *eb,
                              size_t ebn)
{
    struct core_dp_ledger_opts oo = {old_path, t->caps, 0, t->scheme};
    struct core_dp_ledger *ol = NULL;
    char why[512] = "";
    core_err rc;

    if ((rc = core_dp_ledger_open(&oo, &ol, why, sizeof(why))) != CORE_OK) {
        snprintf(eb, ebn, "%s: %s", old_path, why);
        return rc;
    }
    for (size_t i = 0; rc == CORE_OK && i < t->n_ids; i++)
        rc = carry_one(nl, ol, &t->ids[i], &t->scheme, nw, eb, ebn);
    core_dp_ledger_free(ol);
    return rc;
}

core_err core_dp_tally_carry_to(struct core_dp_tally *t, const char *old_path,
                                const struct core_dp_scheme *nw, const struct core_dp_cost *cap,
                                const char *new_path, size_t *n_units, size_t *n_releases, char *eb,
                                size_t ebn)
{
    struct core_dp_ledger_opts lo = {new_path, *cap, 0, *nw};
    struct core_dp_ledger *l = NULL;
    struct charge *v = NULL;
    size_t m = 0;
    char why[1024] = "";
    core_err rc;

    eb[0] = '\0';
    if (access(new_path, F_OK) == 0 || core_path_same(new_path, old_path)) {
        snprintf(eb, ebn, "--carry-to %s: exists already; the new ledger must be a new file",
                 new_path);
        return CORE_EEXIST;
    }
    if ((rc = carried_units(t, nw, &v, &m, eb, ebn)) != CORE_OK)
        return rc;
    if ((rc = core_dp_ledger_open(&lo, &l, why, sizeof(why))) != CORE_OK) {
        snprintf(eb, ebn, "--carry-to %s: %s", new_path, why);
        goto out;
    }
    rc = carry_commit(l, v, m, old_path, eb, ebn);
    if (rc == CORE_OK)
        rc = carry_replays(l, t, old_path, nw, eb, ebn);
    if (rc != CORE_OK) {
        core_dp_ledger_free(l);
        l = NULL;
        unlink(new_path); /* nothing in it may be used: a partial carry would undercount */
    }
    *n_units = m;
    *n_releases = t->n_ids;
out:
    core_dp_ledger_free(l);
    free_charges(v, m);
    return rc;
}
