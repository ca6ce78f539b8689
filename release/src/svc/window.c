/* window.c - window records in (gcdp.window/1 JSON lines, or CSV) for the release stage. */
#include "rel/release.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"

#define MAX_CSV_COLS 8192u

void rel_window_init(struct rel_window *w, const struct rel_plan *p)
{
    memset(w, 0, sizeof(*w));
    w->x = core_xcalloc(p->theta->n_nodes, sizeof(*w->x));
    w->n = core_xcalloc(p->theta->n_nodes, sizeof(*w->n));
}

void rel_window_cleanup(struct rel_window *w)
{
    free(w->x);
    free(w->n);
    w->x = NULL;
    w->n = NULL;
}

/* Device ids as ingest accepts them ([A-Za-z0-9._:-]); '|' would make units ambiguous. */
static int device_ok(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              (*s >= '0' && *s <= '9') || *s == '.' || *s == '_' || *s == ':' || *s == '-'))
            return 0;
    return 1;
}

static core_err set_ids(struct rel_window *w, const char *device, const char *id, char *eb,
                        size_t ebn)
{
    if (strlen(device) > REL_MAX_DEVICE || !device_ok(device)) {
        snprintf(eb, ebn, "device: empty, longer than %u bytes or outside [A-Za-z0-9._:-]",
                 REL_MAX_DEVICE);
        return CORE_EINVAL;
    }
    snprintf(w->device, sizeof(w->device), "%s", device);
    if (w->end <= w->start) {
        snprintf(eb, ebn, "window_end must be after window_start");
        return CORE_EINVAL;
    }
    if (id) {
        if (strlen(id) == 0 || strlen(id) > REL_MAX_ID) {
            snprintf(eb, ebn, "id: empty or longer than %u bytes", REL_MAX_ID);
            return CORE_ETOOBIG;
        }
        snprintf(w->id, sizeof(w->id), "%s", id);
    } else {
        snprintf(w->id, sizeof(w->id), "%s|%" PRId64, device, w->start);
    }
    return CORE_OK;
}

static core_err json_count(const json_t *nn, const struct rel_plan *p, size_t m, uint32_t *out,
                           char *eb, size_t ebn)
{
    const json_t *v = json_object_get(nn, p->theta->nodes[m]);
    json_int_t c;
    if (!v)
        v = json_object_get(nn, p->chan_names[p->node_chan[m]]);
    if (!json_is_integer(v)) {
        snprintf(eb, ebn, "n_node.%s: missing or not an integer", p->theta->nodes[m]);
        return CORE_EPARSE;
    }
    c = json_integer_value(v);
    if (c < 0 || c > (json_int_t)REL_MAX_SAMPLES) {
        snprintf(eb, ebn, "n_node.%s: out of range", p->theta->nodes[m]);
        return CORE_EINVAL;
    }
    *out = (uint32_t)c;
    return CORE_OK;
}

static core_err json_values(const struct rel_plan *p, const json_t *doc, struct rel_window *w,
                            char *eb, size_t ebn)
{
    const json_t *nodes = json_object_get(doc, "nodes"), *nn = json_object_get(doc, "n_node");
    core_err rc = CORE_OK;

    if (!json_is_object(nodes) || !json_is_object(nn)) {
        snprintf(eb, ebn, "nodes / n_node: missing or not objects");
        return CORE_EPARSE;
    }
    for (size_t m = 0; m < p->theta->n_nodes && rc == CORE_OK; m++) {
        const json_t *v;
        w->x[m] = NAN;
        w->n[m] = 0;
        if (!p->node_used[m])
            continue;
        v = json_object_get(nodes, p->theta->nodes[m]);
        if (!json_is_number(v) || !isfinite(json_number_value(v))) {
            snprintf(eb, ebn, "nodes.%s: missing or not a finite number (theta/window node "
                     "mismatch?)", p->theta->nodes[m]);
            return CORE_EPARSE;
        }
        w->x[m] = json_number_value(v);
        rc = json_count(nn, p, m, &w->n[m], eb, ebn);
    }
    return rc;
}

core_err rel_window_from_json(const struct rel_plan *p, const char *text, size_t len,
                              struct rel_window *w, char *eb, size_t ebn)
{
    json_error_t jerr;
    json_t *doc = NULL, *v;
    const char *schema, *device, *id;
    core_err rc = CORE_EPARSE;

    if (len > REL_MAX_LINE) {
        snprintf(eb, ebn, "record longer than %u bytes", REL_MAX_LINE);
        return CORE_ETOOBIG;
    }
    doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(doc)) {
        /* position only: jansson's text quotes the offending token (could be a value) */
        if (doc)
            snprintf(eb, ebn, "not a JSON object (wrong type)");
        else
            snprintf(eb, ebn, "not a JSON object (syntax error at byte %d)", jerr.position);
        goto out;
    }
    schema = json_string_value(json_object_get(doc, "schema"));
    if (!schema || strcmp(schema, REL_SCHEMA_WINDOW) != 0) {
        snprintf(eb, ebn, "schema: expected \"%s\"", REL_SCHEMA_WINDOW);
        goto out;
    }
    device = json_string_value(json_object_get(doc, "device"));
    id = json_string_value(json_object_get(doc, "id"));
    if (!device || !json_is_integer(json_object_get(doc, "window_start")) ||
        !json_is_integer(json_object_get(doc, "window_end"))) {
        snprintf(eb, ebn, "device / window_start / window_end: missing or wrong type "
                 "(epoch ms integers)");
        goto out;
    }
    w->start = json_integer_value(json_object_get(doc, "window_start"));
    w->end = json_integer_value(json_object_get(doc, "window_end"));
    rc = set_ids(w, device, id, eb, ebn);
    if (rc != CORE_OK)
        goto out;
    v = json_object_get(doc, "excluded");
    w->excluded = json_is_true(v);
    v = json_object_get(doc, "n_slots");
    w->n_slots = 0;
    if (v && (!json_is_integer(v) || json_integer_value(v) < 0 ||
              json_integer_value(v) > (json_int_t)REL_MAX_SAMPLES)) {
        snprintf(eb, ebn, "n_slots: not an integer in range");
        rc = CORE_EPARSE;
        goto out;
    }
    if (v)
        w->n_slots = (uint32_t)json_integer_value(v);
    rc = w->excluded ? CORE_OK : json_values(p, doc, w, eb, ebn);
out:
    json_decref(doc);
    return rc;
}

/* ------------------------------------------------------------------ CSV */

enum col_kind { COL_SKIP, COL_ID, COL_DEVICE, COL_START, COL_END, COL_EXCL, COL_VALUE,
                COL_COUNT, COL_COUNT_ALL, COL_SLOTS };

struct rel_csv {
    const struct rel_plan *plan;
    size_t ncol;
    enum col_kind *kind;
    size_t *node;   /* COL_VALUE: θ node; COL_COUNT: θ node or channel (flag below) */
    int *by_chan;   /* COL_COUNT keyed by channel */
};

void rel_csv_free(struct rel_csv *c)
{
    if (!c)
        return;
    free(c->kind);
    free(c->node);
    free(c->by_chan);
    free(c);
}

/* Split s (modified in place) at commas; returns field count or SIZE_MAX if over max. */
static size_t split(char *s, char **f, size_t max)
{
    size_t n = 0;
    s[strcspn(s, "\r\n")] = '\0';
    for (;;) {
        if (n == max)
            return SIZE_MAX;
        f[n++] = s;
        s = strchr(s, ',');
        if (!s)
            return n;
        *s++ = '\0';
    }
}

static core_err classify_col(struct rel_csv *c, size_t i, const char *name)
{
    const struct rel_plan *p = c->plan;
    static const struct { const char *n; enum col_kind k; } fixed[] = {
        {"id", COL_ID}, {"device", COL_DEVICE}, {"window_start", COL_START},
        {"window_end", COL_END}, {"excluded", COL_EXCL}, {"n", COL_COUNT_ALL},
        {"n_slots", COL_SLOTS}};
    size_t m;

    for (size_t f = 0; f < sizeof(fixed) / sizeof(*fixed); f++)
        if (strcmp(name, fixed[f].n) == 0) {
            c->kind[i] = fixed[f].k;
            return CORE_OK;
        }
    if (strncmp(name, "n_node.", 7) == 0) {
        if (cal_theta_node_index(p->theta, name + 7, &m) == CORE_OK) {
            c->kind[i] = COL_COUNT;
            c->node[i] = m;
            return CORE_OK;
        }
        for (m = 0; m < p->n_chan; m++)
            if (strcmp(p->chan_names[m], name + 7) == 0) {
                c->kind[i] = COL_COUNT;
                c->node[i] = m;
                c->by_chan[i] = 1;
                return CORE_OK;
            }
        return CORE_ENOTFOUND;
    }
    if (cal_theta_node_index(p->theta, name, &m) == CORE_OK) {
        c->kind[i] = COL_VALUE;
        c->node[i] = m;
    }
    return CORE_OK; /* other columns are ignored */
}

core_err rel_csv_new(const struct rel_plan *p, const char *header, struct rel_csv **out,
                     char *eb, size_t ebn)
{
    char *copy = core_xstrdup(header), **f = core_xcalloc(MAX_CSV_COLS, sizeof(*f));
    struct rel_csv *c = core_xcalloc(1, sizeof(*c));
    int seen[4] = {0};
    core_err rc = CORE_OK;

    c->plan = p;
    c->ncol = split(copy, f, MAX_CSV_COLS);
    if (c->ncol == SIZE_MAX) {
        snprintf(eb, ebn, "CSV header: more than %u columns", MAX_CSV_COLS);
        rc = CORE_ETOOBIG;
        goto out;
    }
    c->kind = core_xcalloc(c->ncol, sizeof(*c->kind));
    c->node = core_xcalloc(c->ncol, sizeof(*c->node));
    c->by_chan = core_xcalloc(c->ncol, sizeof(*c->by_chan));
    for (size_t i = 0; i < c->ncol && rc == CORE_OK; i++) {
        if (classify_col(c, i, f[i]) != CORE_OK) {
            snprintf(eb, ebn, "CSV header: column '%s' names no theta node or channel", f[i]);
            rc = CORE_EPARSE;
        }
        if (c->kind[i] >= COL_DEVICE && c->kind[i] <= COL_END)
            seen[c->kind[i] - COL_DEVICE] = 1;
    }
    if (rc == CORE_OK && (!seen[0] || !seen[1] || !seen[2])) {
        snprintf(eb, ebn, "CSV header: needs device, window_start and window_end columns");
        rc = CORE_EPARSE;
    }
out:
    free(copy);
    free(f);
    if (rc != CORE_OK) {
        rel_csv_free(c);
        return rc;
    }
    *out = c;
    return CORE_OK;
}

static core_err parse_i64(const char *s, int64_t *out)
{
    char *end;
    long long v;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || end == s || *end)
        return CORE_EPARSE;
    *out = v;
    return CORE_OK;
}

static core_err parse_f64(const char *s, double *out)
{
    char *end;
    errno = 0;
    *out = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(*out))
        return CORE_EPARSE;
    return CORE_OK;
}

static core_err csv_field(const struct rel_csv *c, size_t i, const char *f, struct rel_window *w,
                          const char **device, const char **id, int64_t *all_n)
{
    const struct rel_plan *p = c->plan;
    int64_t v = 0;
    core_err rc = CORE_OK;

    switch (c->kind[i]) {
    case COL_ID: *id = f; break;
    case COL_DEVICE: *device = f; break;
    case COL_START: rc = parse_i64(f, &w->start); break;
    case COL_END: rc = parse_i64(f, &w->end); break;
    case COL_EXCL: w->excluded = strcmp(f, "1") == 0 || strcmp(f, "true") == 0; break;
    case COL_VALUE: rc = f[0] ? parse_f64(f, &w->x[c->node[i]]) : CORE_OK; break;
    case COL_COUNT_ALL: rc = parse_i64(f, all_n); break;
    case COL_SLOTS:
        rc = parse_i64(f, &v);
        if (rc == CORE_OK && (v < 0 || v > (int64_t)REL_MAX_SAMPLES))
            rc = CORE_EINVAL;
        w->n_slots = (uint32_t)v;
        break;
    case COL_COUNT:
        rc = parse_i64(f, &v);
        if (rc == CORE_OK && (v < 0 || v > (int64_t)REL_MAX_SAMPLES))
            rc = CORE_EINVAL;
        for (size_t m = 0; rc == CORE_OK && m < p->theta->n_nodes; m++)
            if (c->by_chan[i] ? p->node_chan[m] == c->node[i] : m == c->node[i])
                w->n[m] = (uint32_t)v;
        break;
    default: break;
    }
    return rc;
}

core_err rel_csv_parse(const struct rel_csv *c, const char *row, struct rel_window *w, char *eb,
                       size_t ebn)
{
    const struct rel_plan *p = c->plan;
    char *copy, **f;
    const char *device = NULL, *id = NULL;
    int64_t all_n = -1;
    size_t nf;
    core_err rc = CORE_OK;

    if (strlen(row) > REL_MAX_LINE) {
        snprintf(eb, ebn, "CSV row longer than %u bytes", REL_MAX_LINE);
        return CORE_ETOOBIG;
    }
    copy = core_xstrdup(row);
    f = core_xcalloc(c->ncol + 1, sizeof(*f));
    nf = split(copy, f, c->ncol + 1);
    w->excluded = false;
    w->n_slots = 0;
    for (size_t m = 0; m < p->theta->n_nodes; m++) {
        w->x[m] = NAN;
        w->n[m] = UINT32_MAX; /* "not given" */
    }
    if (nf != c->ncol) {
        snprintf(eb, ebn, "CSV row has %zu fields, header has %zu",
                 nf == SIZE_MAX ? c->ncol + 1 : nf, c->ncol);
        rc = CORE_EPARSE;
    }
    for (size_t i = 0; i < c->ncol && rc == CORE_OK; i++) {
        rc = csv_field(c, i, f[i], w, &device, &id, &all_n);
        if (rc != CORE_OK)
            snprintf(eb, ebn, "CSV column %zu: malformed or out-of-range value", i + 1);
    }
    for (size_t m = 0; rc == CORE_OK && m < p->theta->n_nodes; m++) {
        if (w->n[m] == UINT32_MAX)
            w->n[m] = all_n >= 0 && all_n <= (int64_t)REL_MAX_SAMPLES ? (uint32_t)all_n : 0;
        if (!w->excluded && p->node_used[m] && !isfinite(w->x[m])) {
            snprintf(eb, ebn, "CSV: node %s missing (theta/window node mismatch?)",
                     p->theta->nodes[m]);
            rc = CORE_EPARSE;
        }
    }
    if (rc == CORE_OK)
        rc = set_ids(w, device ? device : "", id, eb, ebn);
    free(copy);
    free(f);
    return rc;
}
