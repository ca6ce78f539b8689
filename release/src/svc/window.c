/* window.c - window records in (gcdp.window/2 JSON or gcdp.window/3 binary, one set of
 * checks for both), with their provenance (DESIGN §5 release, §7.7):
 * every used θ node is bound to the window node it reads, and the record's own statement of
 * the statistic, counts, imputed runs, gap, period and clip interval is what release
 * certifies from. A record whose provenance is missing, unknown or inconsistent (with itself
 * or with θ) is refused by name. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "rel/release.h"

/* FNV-1a of a node name (the binary reader's name index). */
static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */

    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

void rel_window_init(struct rel_window *w, const struct cal_theta *t)
{
    memset(w, 0, sizeof(*w));
    w->theta = t;
    w->x = core_xcalloc(t->n_nodes, sizeof(*w->x));
    w->obs = core_xcalloc(t->n_nodes, sizeof(*w->obs));
    w->used = rel_theta_used_nodes(t);
    rel_profile_init(&w->prof, t->n_nodes);
    w->ja = core_jalloc_new(REL_JALLOC_BYTES);
    core_wrec_init(&w->rec);
    w->named = core_xcalloc(t->n_nodes ? t->n_nodes : 1, sizeof(*w->named));
    w->name_h = core_xcalloc(t->n_nodes ? t->n_nodes : 1, sizeof(*w->name_h));
    for (size_t m = 0; m < t->n_nodes; m++) {
        char chan[REL_MAX_KEY];
        enum rel_stat st;
        w->named[m] = rel_name_split(t->nodes[m], chan, sizeof(chan), &st);
        w->name_h[m] = name_hash(t->nodes[m]);
    }
}

void rel_window_cleanup(struct rel_window *w)
{
    free(w->x);
    free(w->obs);
    free(w->used);
    rel_profile_cleanup(&w->prof);
    core_jalloc_free(w->ja);
    core_wrec_cleanup(&w->rec);
    free(w->imp);
    free(w->hidx);
    free(w->named);
    free(w->name_h);
    memset(w, 0, sizeof(*w));
}

void rel_profile_init(struct rel_profile *pr, size_t n_nodes)
{
    memset(pr, 0, sizeof(*pr));
    pr->n_nodes = n_nodes;
    pr->node = core_xcalloc(n_nodes ? n_nodes : 1, sizeof(*pr->node));
}

void rel_profile_cleanup(struct rel_profile *pr)
{
    free(pr->node);
    memset(pr, 0, sizeof(*pr));
}

void rel_profile_copy(struct rel_profile *dst, const struct rel_profile *src)
{
    rel_profile_cleanup(dst);
    rel_profile_init(dst, src->n_nodes);
    memcpy(dst->node, src->node, src->n_nodes * sizeof(*src->node));
    dst->interp_gap = src->interp_gap;
    dst->period_ms = src->period_ms;
    dst->from_record = src->from_record;
}

bool rel_name_split(const char *name, char *chan, size_t chan_size, enum rel_stat *stat)
{
    const char *dot = strrchr(name, '.');
    size_t len;

    if (!dot || rel_stat_parse(dot + 1, stat) != CORE_OK)
        return false;
    len = (size_t)(dot - name);
    if (len == 0 || len >= chan_size)
        return false;
    memcpy(chan, name, len);
    chan[len] = '\0';
    return true;
}

/* Device ids as ingest accepts them ([A-Za-z0-9._:-]); '|' would make units ambiguous. */
static int device_ok(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '.' || *s == '_' || *s == ':' || *s == '-'))
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

/* ---- the checks both encodings share: every refusal below reads the same for both ---- */

/* One bound node as the record states it (either encoding), before any check. */
struct node_raw {
    const char *stat, *chan; /* NULL: missing (JSON) */
    double clip_lo, clip_hi, value;
    int64_t n_node, n_imputed, max_run; /* as stated */
    const int64_t *imp;                 /* the imputed slot times as listed */
    size_t n_imp;
};

static core_err refuse_stat(const char *key, char *eb, size_t ebn)
{
    snprintf(eb, ebn, "prov.nodes.%s: stat missing or unknown, or channel missing", key);
    return CORE_EPARSE;
}

static core_err refuse_counts(const char *key, char *eb, size_t ebn)
{
    snprintf(eb, ebn,
             "n_node.%s / prov.nodes.%s.n_imputed / max_run: missing or not "
             "integers in range",
             key, key);
    return CORE_EPARSE;
}

static core_err refuse_runs(const char *key, char *eb, size_t ebn)
{
    snprintf(eb, ebn,
             "node %s: provenance inconsistent: imputed list, n_imputed, max_run "
             "and prov.interp_gap disagree",
             key);
    return CORE_EINVAL;
}

static core_err refuse_value(const char *key, char *eb, size_t ebn)
{
    snprintf(eb, ebn, "nodes.%s: missing or not a finite number", key);
    return CORE_EPARSE;
}

static core_err refuse_missing(const char *name, char *eb, size_t ebn)
{
    snprintf(eb, ebn,
             "prov.nodes.%s: missing (theta node %s has no provenance in "
             "this window)",
             name, name);
    return CORE_EPARSE;
}

static core_err refuse_ambiguous(const char *name, char *eb, size_t ebn)
{
    snprintf(eb, ebn,
             "theta node %s: the window has several statistics of channel "
             "%s; calibrate with statistic-named nodes (<channel>.<stat>)",
             name, name);
    return CORE_EINVAL;
}

static core_err refuse_no_channel(const char *name, char *eb, size_t ebn)
{
    snprintf(eb, ebn, "theta node %s: no window node of that channel in prov.nodes", name);
    return CORE_EPARSE;
}

static core_err refuse_window_prov(char *eb, size_t ebn)
{
    snprintf(eb, ebn, "prov.interp_gap / prov.period_ms: missing or out of range");
    return CORE_EPARSE;
}

static core_err refuse_n_slots(char *eb, size_t ebn)
{
    snprintf(eb, ebn, "n_slots: not an integer in range");
    return CORE_EPARSE;
}

/* Longest run of consecutive imputed slot times (step period_ms) in a strictly increasing
 * list; CORE_EINVAL when it is not increasing. */
static core_err imputed_runs(const int64_t *t, size_t n, int64_t period, uint32_t *run)
{
    uint32_t cur = 0;

    *run = 0;
    if (n > REL_MAX_SAMPLES)
        return CORE_EPARSE;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && t[i] <= t[i - 1])
            return CORE_EINVAL;
        cur = i > 0 && t[i] - t[i - 1] == period ? cur + 1 : 1;
        *run = cur > *run ? cur : *run;
    }
    return CORE_OK;
}

/* One bound node (np->key set) checked against itself, the record's gap and period: its
 * name states its statistic and channel, finite clip lo < hi, counts in range, n_imputed
 * and max_run what the imputed list shows, max_run <= G, a finite value. Fills np, ob, x. */
static core_err check_node(const struct node_raw *rn, struct rel_node_prov *np,
                           struct rel_node_obs *ob, double *x, const struct rel_profile *pr,
                           char *eb, size_t ebn)
{
    size_t clen = rn->chan ? strlen(rn->chan) : 0;
    uint32_t run = 0;

    if (!rn->stat || rel_stat_parse(rn->stat, &np->stat) != CORE_OK || !rn->chan ||
        clen >= sizeof(np->chan))
        return refuse_stat(np->key, eb, ebn);
    memcpy(np->chan, rn->chan, clen + 1);
    /* key == "<chan>.<stat>": what splitting the key at its last dot would give, as stat
     * (a known statistic) has no dot */
    if (clen == 0 || strncmp(np->key, rn->chan, clen) != 0 || np->key[clen] != '.' ||
        strcmp(np->key + clen + 1, rn->stat) != 0) {
        snprintf(eb, ebn,
                 "node %s: the name does not state its statistic and channel as its "
                 "provenance does (%s of %s)",
                 np->key, rn->stat, rn->chan);
        return CORE_EINVAL;
    }
    np->clip_lo = rn->clip_lo;
    np->clip_hi = rn->clip_hi;
    if (!(np->clip_lo < np->clip_hi) || !isfinite(np->clip_hi - np->clip_lo)) {
        snprintf(eb, ebn, "prov.nodes.%s.clip: need finite lo < hi", np->key);
        return CORE_EINVAL;
    }
    if (rn->n_node < 1 || rn->n_node > (int64_t)REL_MAX_SAMPLES)
        return refuse_counts(np->key, eb, ebn);
    if (imputed_runs(rn->imp, rn->n_imp, pr->period_ms, &run) != CORE_OK ||
        rn->n_imputed != (int64_t)rn->n_imp || rn->max_run != (int64_t)run || run > pr->interp_gap)
        return refuse_runs(np->key, eb, ebn);
    if (!isfinite(rn->value))
        return refuse_value(np->key, eb, ebn);
    *x = rn->value;
    ob->n_real = (uint32_t)rn->n_node;
    ob->max_run = run;
    ob->n_points = ob->n_real + (uint32_t)rn->n_imp;
    if (ob->n_points < ob->n_real) /* overflow */
        return CORE_ETOOBIG;
    return CORE_OK;
}

/* Window-level provenance: gap, period, normalization. */
static core_err check_window_prov(int64_t gap, int64_t period, const char *norm,
                                  struct rel_profile *pr, char *eb, size_t ebn)
{
    if (gap < 0 || gap > (int64_t)REL_MAX_SAMPLES || period < 1)
        return refuse_window_prov(eb, ebn);
    if (!norm || strcmp(norm, REL_NORM_CLIP_MINMAX) != 0) {
        snprintf(eb, ebn, "prov.norm: unknown normalization (expected \"%s\")",
                 REL_NORM_CLIP_MINMAX);
        return CORE_EINVAL;
    }
    pr->interp_gap = (uint32_t)gap;
    pr->period_ms = period;
    pr->from_record = true;
    return CORE_OK;
}

static bool n_slots_ok(int64_t v)
{
    return v >= 0 && v <= (int64_t)REL_MAX_SAMPLES;
}

/* Room for n imputed times in w's scratch. */
static int64_t *imp_scratch(struct rel_window *w, size_t n)
{
    if (n > w->imp_cap) {
        w->imp_cap = n;
        w->imp = core_xrealloc(w->imp, n * sizeof(*w->imp));
    }
    return w->imp;
}

/* ---- gcdp.window/2 (JSON) ---- */

/* Which window node θ node m reads: its own name when it carries a statistic, else the one
 * window node whose provenance names channel == θ node (ambiguity is refused). */
static core_err bind_node(const struct cal_theta *t, size_t m, const json_t *pn,
                          struct rel_node_prov *np, const json_t **pv, char *eb, size_t ebn)
{
    const char *name = t->nodes[m], *key;
    const json_t *v, *hit = NULL;
    char chan[REL_MAX_KEY];
    enum rel_stat st;
    size_t len;

    if (rel_name_split(name, chan, sizeof(chan), &st)) {
        len = strlen(name);
        if (len >= REL_MAX_KEY || !(*pv = json_object_getn(pn, name, len)))
            return refuse_missing(name, eb, ebn);
        memcpy(np->key, name, len + 1);
        return CORE_OK;
    }
    json_object_foreach((json_t *)pn, key, v)
    {
        const char *c = json_string_value(json_object_get(v, "channel"));
        if (!c || strcmp(c, name) != 0)
            continue;
        if (hit)
            return refuse_ambiguous(name, eb, ebn);
        hit = v;
        if (strlen(key) >= REL_MAX_KEY)
            return CORE_ETOOBIG;
        snprintf(np->key, sizeof(np->key), "%s", key);
    }
    if (!hit)
        return refuse_no_channel(name, eb, ebn);
    *pv = hit;
    return CORE_OK;
}

/* The imputed list of a node as JSON (an array of integers) into w's scratch. */
static core_err json_imputed(const json_t *list, struct rel_window *w, struct node_raw *rn)
{
    size_t n = json_array_size(list);
    int64_t *t;

    if (!json_is_array(list) || n > REL_MAX_SAMPLES)
        return CORE_EPARSE;
    t = imp_scratch(w, n);
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(list, i);
        if (!json_is_integer(v))
            return CORE_EPARSE;
        t[i] = json_integer_value(v);
    }
    rn->imp = t;
    rn->n_imp = n;
    return CORE_OK;
}

/* What the record states about bound node np->key (pv: its prov.nodes entry): the JSON
 * shape is checked here, the meaning by check_node. */
static core_err json_node(const json_t *doc, const json_t *pv, const char *key,
                          struct rel_window *w, struct node_raw *rn, char *eb, size_t ebn)
{
    const json_t *clip = json_object_get(pv, "clip"), *v;
    const json_t *nr = json_object_get(json_object_get(doc, "n_node"), key);
    const json_t *ni = json_object_get(pv, "n_imputed"), *mr = json_object_get(pv, "max_run");

    rn->stat = json_string_value(json_object_get(pv, "stat"));
    rn->chan = json_string_value(json_object_get(pv, "channel"));
    if (!rn->stat || !rn->chan)
        return refuse_stat(key, eb, ebn);
    if (!json_is_array(clip) || json_array_size(clip) != 2 ||
        !json_is_number(json_array_get(clip, 0)) || !json_is_number(json_array_get(clip, 1))) {
        snprintf(eb, ebn, "prov.nodes.%s.clip: expected [lo, hi]", key);
        return CORE_EPARSE;
    }
    rn->clip_lo = json_number_value(json_array_get(clip, 0));
    rn->clip_hi = json_number_value(json_array_get(clip, 1));
    if (!json_is_integer(nr) || !json_is_integer(ni) || !json_is_integer(mr))
        return refuse_counts(key, eb, ebn);
    rn->n_node = json_integer_value(nr);
    rn->n_imputed = json_integer_value(ni);
    rn->max_run = json_integer_value(mr);
    if (json_imputed(json_object_get(json_object_get(doc, "imputed"), key), w, rn) != CORE_OK)
        return refuse_runs(key, eb, ebn);
    v = json_object_get(json_object_get(doc, "nodes"), key);
    if (!json_is_number(v))
        return refuse_value(key, eb, ebn);
    rn->value = json_number_value(v);
    return CORE_OK;
}

/* Window-level provenance as JSON. */
static core_err json_window_prov(const json_t *prov, struct rel_profile *pr, char *eb, size_t ebn)
{
    const json_t *g = json_object_get(prov, "interp_gap"),
                 *per = json_object_get(prov, "period_ms");

    if (!json_is_object(prov) || !json_is_object(json_object_get(prov, "nodes"))) {
        snprintf(eb, ebn, "prov: missing (a window without provenance cannot be certified)");
        return CORE_EPARSE;
    }
    if (!json_is_integer(g) || !json_is_integer(per))
        return refuse_window_prov(eb, ebn);
    return check_window_prov(json_integer_value(g), json_integer_value(per),
                             json_string_value(json_object_get(prov, "norm")), pr, eb, ebn);
}

static core_err json_values(const json_t *doc, struct rel_window *w, char *eb, size_t ebn)
{
    const struct cal_theta *t = w->theta;
    const json_t *prov = json_object_get(doc, "prov");
    const json_t *pn = json_object_get(prov, "nodes");
    core_err rc;

    if (!json_is_object(json_object_get(doc, "nodes")) ||
        !json_is_object(json_object_get(doc, "n_node")) ||
        !json_is_object(json_object_get(doc, "imputed"))) {
        snprintf(eb, ebn, "nodes / n_node / imputed: missing or not objects");
        return CORE_EPARSE;
    }
    if ((rc = json_window_prov(prov, &w->prof, eb, ebn)) != CORE_OK)
        return rc;
    for (size_t m = 0; m < t->n_nodes; m++) {
        struct rel_node_prov *np = &w->prof.node[m];
        const json_t *pv = NULL;
        struct node_raw rn = {0};
        w->x[m] = NAN;
        memset(np, 0, sizeof(*np));
        memset(&w->obs[m], 0, sizeof(w->obs[m]));
        if (!w->used[m])
            continue;
        if ((rc = bind_node(t, m, pn, np, &pv, eb, ebn)) != CORE_OK ||
            (rc = json_node(doc, pv, np->key, w, &rn, eb, ebn)) != CORE_OK ||
            (rc = check_node(&rn, np, &w->obs[m], &w->x[m], &w->prof, eb, ebn)) != CORE_OK)
            return rc;
    }
    return CORE_OK;
}

/* The record's schema is REL_SCHEMA_WINDOW; false with the reason in eb (gcdp.window/1 is
 * named: it carries no provenance). */
static bool schema_ok(const json_t *doc, char *eb, size_t ebn)
{
    const char *schema = json_string_value(json_object_get(doc, "schema"));

    if (schema && strcmp(schema, "gcdp.window/1") == 0) {
        snprintf(eb, ebn,
                 "schema gcdp.window/1 carries no provenance and cannot be certified; "
                 "re-run ingest to produce \"%s\" records",
                 REL_SCHEMA_WINDOW);
        return false;
    }
    if (!schema || strcmp(schema, REL_SCHEMA_WINDOW) != 0) {
        snprintf(eb, ebn, "schema: expected \"%s\"", REL_SCHEMA_WINDOW);
        return false;
    }
    return true;
}

/* Header fields of a parsed JSON record (ids, times, excluded, n_slots). */
static core_err json_header(const json_t *doc, struct rel_window *w, char *eb, size_t ebn)
{
    const char *device = json_string_value(json_object_get(doc, "device"));
    const char *id = json_string_value(json_object_get(doc, "id"));
    const json_t *v;
    core_err rc;

    if (!device || !json_is_integer(json_object_get(doc, "window_start")) ||
        !json_is_integer(json_object_get(doc, "window_end"))) {
        snprintf(eb, ebn,
                 "device / window_start / window_end: missing or wrong type "
                 "(epoch ms integers)");
        return CORE_EPARSE;
    }
    w->start = json_integer_value(json_object_get(doc, "window_start"));
    w->end = json_integer_value(json_object_get(doc, "window_end"));
    if ((rc = set_ids(w, device, id, eb, ebn)) != CORE_OK)
        return rc;
    w->excluded = json_is_true(json_object_get(doc, "excluded"));
    v = json_object_get(doc, "n_slots");
    w->n_slots = 0;
    if (v && (!json_is_integer(v) || !n_slots_ok(json_integer_value(v))))
        return refuse_n_slots(eb, ebn);
    if (v)
        w->n_slots = (uint32_t)json_integer_value(v);
    return CORE_OK;
}

core_err rel_window_from_json(const char *text, size_t len, struct rel_window *w, char *eb,
                              size_t ebn)
{
    json_error_t jerr;
    json_t *doc = NULL;
    core_err rc = CORE_EPARSE;

    if (len > REL_MAX_LINE) {
        snprintf(eb, ebn, "record longer than %u bytes", REL_MAX_LINE);
        return CORE_ETOOBIG;
    }
    /* the tree lives in w's arena until core_jalloc_release below: whatever w keeps of
     * it (ids, device, names) is copied out first */
    doc = w->ja ? core_jalloc_parse(w->ja, text, len, JSON_REJECT_DUPLICATES, &jerr)
                : json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(doc)) {
        /* position only: jansson's text quotes the offending token (could be a value) */
        if (doc)
            snprintf(eb, ebn, "not a JSON object (wrong type)");
        else
            snprintf(eb, ebn, "not a JSON object (syntax error at byte %d)", jerr.position);
        goto out;
    }
    if (!schema_ok(doc, eb, ebn))
        goto out;
    if ((rc = json_header(doc, w, eb, ebn)) != CORE_OK)
        goto out;
    w->prof.from_record = false;
    rc = w->excluded ? CORE_OK : json_values(doc, w, eb, ebn);
out:
    if (w->ja)
        core_jalloc_release(w->ja, doc);
    else
        json_decref(doc);
    return rc;
}

/* ---- gcdp.window/3 (binary, core/window_bin.h) ---- */

/* Index the record's node names (open addressing, slots hold index + 1); two nodes of one
 * name are refused, as the JSON reader refuses a duplicated key. */
static core_err index_names(struct rel_window *w, char *eb, size_t ebn)
{
    const struct core_wrec *r = &w->rec;
    size_t cap = 16;

    while (cap < 2 * r->n_nodes)
        cap *= 2;
    if (cap > w->hidx_cap) {
        w->hidx = core_xrealloc(w->hidx, cap * sizeof(*w->hidx));
        w->hidx_cap = cap;
    }
    w->hidx_mask = cap - 1;
    memset(w->hidx, 0, cap * sizeof(*w->hidx));
    for (size_t i = 0; i < r->n_nodes; i++) {
        size_t h = name_hash(r->node[i].name) & w->hidx_mask;
        for (; w->hidx[h]; h = (h + 1) & w->hidx_mask) {
            if (strcmp(r->node[w->hidx[h] - 1].name, r->node[i].name) == 0) {
                snprintf(eb, ebn, "gcdp.window/3: node %.*s appears twice", (int)REL_MAX_KEY,
                         r->node[i].name);
                return CORE_EPARSE;
            }
        }
        w->hidx[h] = (uint32_t)(i + 1);
    }
    return CORE_OK;
}

/* The record node named name (hash h), or NULL; *hint: where to look first (the node after
 * the previous hit: records usually list the nodes in θ's order). */
static const struct core_wrec_node *find_name(const struct rel_window *w, const char *name,
                                              uint32_t h, size_t *hint)
{
    const struct core_wrec_node *nd = w->rec.node;

    if (*hint < w->rec.n_nodes && strcmp(nd[*hint].name, name) == 0)
        return &nd[(*hint)++];
    for (size_t i = h & w->hidx_mask; w->hidx[i]; i = (i + 1) & w->hidx_mask) {
        if (strcmp(nd[w->hidx[i] - 1].name, name) == 0) {
            *hint = w->hidx[i];
            return &nd[w->hidx[i] - 1];
        }
    }
    return NULL;
}

/* bind_node for a decoded record. */
static core_err bin_bind(const struct rel_window *w, size_t m, size_t *hint,
                         struct rel_node_prov *np, const struct core_wrec_node **pnd, char *eb,
                         size_t ebn)
{
    const char *name = w->theta->nodes[m];
    const struct core_wrec_node *hit = NULL;
    size_t len;

    if (w->named[m]) {
        len = strlen(name);
        if (len >= REL_MAX_KEY || !(*pnd = find_name(w, name, w->name_h[m], hint)))
            return refuse_missing(name, eb, ebn);
        memcpy(np->key, name, len + 1);
        return CORE_OK;
    }
    for (size_t i = 0; i < w->rec.n_nodes; i++) {
        if (strcmp(w->rec.node[i].channel, name) != 0)
            continue;
        if (hit)
            return refuse_ambiguous(name, eb, ebn);
        hit = &w->rec.node[i];
        if (strlen(hit->name) >= REL_MAX_KEY)
            return CORE_ETOOBIG;
        snprintf(np->key, sizeof(np->key), "%s", hit->name);
    }
    if (!hit)
        return refuse_no_channel(name, eb, ebn);
    *pnd = hit;
    return CORE_OK;
}

static core_err bin_values(struct rel_window *w, char *eb, size_t ebn)
{
    const struct cal_theta *t = w->theta;
    const struct core_wrec *r = &w->rec;
    size_t hint = 0;
    core_err rc;

    if ((rc = check_window_prov(r->interp_gap, r->period_ms, r->norm, &w->prof, eb, ebn)) !=
            CORE_OK ||
        (rc = index_names(w, eb, ebn)) != CORE_OK)
        return rc;
    for (size_t m = 0; m < t->n_nodes; m++) {
        struct rel_node_prov *np = &w->prof.node[m];
        const struct core_wrec_node *nd = NULL;
        struct node_raw rn;
        w->x[m] = NAN;
        memset(np, 0, sizeof(*np));
        memset(&w->obs[m], 0, sizeof(w->obs[m]));
        if (!w->used[m])
            continue;
        if ((rc = bin_bind(w, m, &hint, np, &nd, eb, ebn)) != CORE_OK)
            return rc;
        rn = (struct node_raw){nd->stat,   nd->channel,   nd->clip_lo, nd->clip_hi, nd->value,
                               nd->n_node, nd->n_imputed, nd->max_run, nd->imputed, nd->n_imputed};
        if ((rc = check_node(&rn, np, &w->obs[m], &w->x[m], &w->prof, eb, ebn)) != CORE_OK)
            return rc;
    }
    return CORE_OK;
}

static core_err rel_window_from_bin(const char *p, size_t len, struct rel_window *w, char *eb,
                                    size_t ebn)
{
    const struct core_wrec *r = &w->rec;
    core_err rc;

    if (len > REL_MAX_LINE) {
        snprintf(eb, ebn, "record longer than %u bytes", REL_MAX_LINE);
        return CORE_ETOOBIG;
    }
    if ((rc = core_wbin_decode(p, len, &w->rec, eb, ebn)) != CORE_OK)
        return rc;
    w->start = r->start;
    w->end = r->end;
    if ((rc = set_ids(w, r->device, r->id, eb, ebn)) != CORE_OK)
        return rc;
    w->excluded = r->excluded;
    if (!n_slots_ok(r->n_slots))
        return refuse_n_slots(eb, ebn);
    w->n_slots = r->n_slots;
    w->prof.from_record = false;
    return w->excluded ? CORE_OK : bin_values(w, eb, ebn);
}

core_err rel_window_from_bytes(const char *p, size_t len, struct rel_window *w, char *eb,
                               size_t ebn)
{
    if (len > 0 && (unsigned char)p[0] == CORE_WBIN_MAGIC0)
        return rel_window_from_bin(p, len, w, eb, ebn);
    return rel_window_from_json(p, len, w, eb, ebn);
}
