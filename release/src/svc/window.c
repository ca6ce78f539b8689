/* window.c - gcdp.window/2 records in, with their provenance (DESIGN §5 release, §7.7):
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

void rel_window_init(struct rel_window *w, const struct cal_theta *t)
{
    memset(w, 0, sizeof(*w));
    w->theta = t;
    w->x = core_xcalloc(t->n_nodes, sizeof(*w->x));
    w->obs = core_xcalloc(t->n_nodes, sizeof(*w->obs));
    w->used = rel_theta_used_nodes(t);
    rel_profile_init(&w->prof, t->n_nodes);
    w->ja = core_jalloc_new(REL_JALLOC_BYTES);
}

void rel_window_cleanup(struct rel_window *w)
{
    free(w->x);
    free(w->obs);
    free(w->used);
    rel_profile_cleanup(&w->prof);
    core_jalloc_free(w->ja);
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

/* Longest run of consecutive imputed slot times (step period_ms) in a sorted list. */
static core_err imputed_runs(const json_t *list, int64_t period, uint32_t *n, uint32_t *run)
{
    int64_t prev = 0;
    uint32_t cur = 0;

    *n = 0;
    *run = 0;
    if (!json_is_array(list) || json_array_size(list) > REL_MAX_SAMPLES)
        return CORE_EPARSE;
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *v = json_array_get(list, i);
        int64_t t;
        if (!json_is_integer(v))
            return CORE_EPARSE;
        t = json_integer_value(v);
        if (i > 0 && t <= prev)
            return CORE_EINVAL;
        cur = i > 0 && t - prev == period ? cur + 1 : 1;
        *run = cur > *run ? cur : *run;
        prev = t;
    }
    *n = (uint32_t)json_array_size(list);
    return CORE_OK;
}

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
        if (len >= REL_MAX_KEY || !(*pv = json_object_getn(pn, name, len))) {
            snprintf(eb, ebn,
                     "prov.nodes.%s: missing (theta node %s has no provenance in "
                     "this window)",
                     name, name);
            return CORE_EPARSE;
        }
        memcpy(np->key, name, len + 1);
        return CORE_OK;
    }
    json_object_foreach((json_t *)pn, key, v)
    {
        const char *c = json_string_value(json_object_get(v, "channel"));
        if (!c || strcmp(c, name) != 0)
            continue;
        if (hit) {
            snprintf(eb, ebn,
                     "theta node %s: the window has several statistics of channel "
                     "%s; calibrate with statistic-named nodes (<channel>.<stat>)",
                     name, name);
            return CORE_EINVAL;
        }
        hit = v;
        if (strlen(key) >= REL_MAX_KEY)
            return CORE_ETOOBIG;
        snprintf(np->key, sizeof(np->key), "%s", key);
    }
    if (!hit) {
        snprintf(eb, ebn, "theta node %s: no window node of that channel in prov.nodes", name);
        return CORE_EPARSE;
    }
    *pv = hit;
    return CORE_OK;
}

/* prov.nodes.<key>.clip = [lo, hi], finite lo < hi, into np. */
static core_err node_clip(const json_t *clip, struct rel_node_prov *np, char *eb, size_t ebn)
{
    if (!json_is_array(clip) || json_array_size(clip) != 2 ||
        !json_is_number(json_array_get(clip, 0)) || !json_is_number(json_array_get(clip, 1))) {
        snprintf(eb, ebn, "prov.nodes.%s.clip: expected [lo, hi]", np->key);
        return CORE_EPARSE;
    }
    np->clip_lo = json_number_value(json_array_get(clip, 0));
    np->clip_hi = json_number_value(json_array_get(clip, 1));
    if (!(np->clip_lo < np->clip_hi) || !isfinite(np->clip_hi - np->clip_lo)) {
        snprintf(eb, ebn, "prov.nodes.%s.clip: need finite lo < hi", np->key);
        return CORE_EINVAL;
    }
    return CORE_OK;
}

/* One node's provenance, checked against itself, the record's gap and its n_node/imputed
 * (nn, imp: the record's "n_node" and "imputed" objects). */
static core_err node_prov(const json_t *nn, const json_t *imp, const json_t *pv,
                          struct rel_node_prov *np, struct rel_node_obs *ob,
                          const struct rel_profile *pr, char *eb, size_t ebn)
{
    const char *stat = json_string_value(json_object_get(pv, "stat"));
    const json_t *jchan = json_object_get(pv, "channel");
    const char *chan = json_string_value(jchan);
    const json_t *clip = json_object_get(pv, "clip"), *ni = json_object_get(pv, "n_imputed");
    core_err rc;
    const json_t *mr = json_object_get(pv, "max_run");
    const json_t *nr = json_object_get(nn, np->key);
    const json_t *il = json_object_get(imp, np->key);
    char kchan[REL_MAX_KEY];
    enum rel_stat kst;
    uint32_t n_imp = 0, run = 0;
    size_t clen = chan ? strlen(chan) : 0;

    if (!stat || rel_stat_parse(stat, &np->stat) != CORE_OK || !chan || clen >= sizeof(np->chan)) {
        snprintf(eb, ebn, "prov.nodes.%s: stat missing or unknown, or channel missing", np->key);
        return CORE_EPARSE;
    }
    memcpy(np->chan, chan, clen + 1);
    if (!rel_name_split(np->key, kchan, sizeof(kchan), &kst) || kst != np->stat ||
        strcmp(kchan, chan) != 0) {
        snprintf(eb, ebn,
                 "node %s: the name does not state its statistic and channel as its "
                 "provenance does (%s of %s)",
                 np->key, stat, chan);
        return CORE_EINVAL;
    }
    if ((rc = node_clip(clip, np, eb, ebn)) != CORE_OK)
        return rc;
    if (!json_is_integer(nr) || json_integer_value(nr) < 1 ||
        json_integer_value(nr) > (json_int_t)REL_MAX_SAMPLES || !json_is_integer(ni) ||
        !json_is_integer(mr)) {
        snprintf(eb, ebn,
                 "n_node.%s / prov.nodes.%s.n_imputed / max_run: missing or not "
                 "integers in range",
                 np->key, np->key);
        return CORE_EPARSE;
    }
    if (imputed_runs(il, pr->period_ms, &n_imp, &run) != CORE_OK ||
        json_integer_value(ni) != (json_int_t)n_imp || json_integer_value(mr) != (json_int_t)run ||
        run > pr->interp_gap) {
        snprintf(eb, ebn,
                 "node %s: provenance inconsistent: imputed list, n_imputed, max_run "
                 "and prov.interp_gap disagree",
                 np->key);
        return CORE_EINVAL;
    }
    ob->n_real = (uint32_t)json_integer_value(nr);
    ob->max_run = run;
    ob->n_points = ob->n_real + n_imp;
    if (ob->n_points < ob->n_real) /* overflow */
        return CORE_ETOOBIG;
    return CORE_OK;
}

/* Window-level provenance: gap, period, normalization. */
static core_err window_prov(const json_t *prov, struct rel_profile *pr, char *eb, size_t ebn)
{
    const json_t *g = json_object_get(prov, "interp_gap"),
                 *per = json_object_get(prov, "period_ms");
    const char *norm = json_string_value(json_object_get(prov, "norm"));

    if (!json_is_object(prov) || !json_is_object(json_object_get(prov, "nodes"))) {
        snprintf(eb, ebn, "prov: missing (a window without provenance cannot be certified)");
        return CORE_EPARSE;
    }
    if (!json_is_integer(g) || json_integer_value(g) < 0 ||
        json_integer_value(g) > (json_int_t)REL_MAX_SAMPLES || !json_is_integer(per) ||
        json_integer_value(per) < 1) {
        snprintf(eb, ebn, "prov.interp_gap / prov.period_ms: missing or out of range");
        return CORE_EPARSE;
    }
    if (!norm || strcmp(norm, REL_NORM_CLIP_MINMAX) != 0) {
        snprintf(eb, ebn, "prov.norm: unknown normalization (expected \"%s\")",
                 REL_NORM_CLIP_MINMAX);
        return CORE_EINVAL;
    }
    pr->interp_gap = (uint32_t)json_integer_value(g);
    pr->period_ms = json_integer_value(per);
    pr->from_record = true;
    return CORE_OK;
}

static core_err json_values(const json_t *doc, struct rel_window *w, char *eb, size_t ebn)
{
    const struct cal_theta *t = w->theta;
    const json_t *nodes = json_object_get(doc, "nodes"), *prov = json_object_get(doc, "prov");
    const json_t *pn = json_object_get(prov, "nodes");
    const json_t *nn = json_object_get(doc, "n_node"), *imp = json_object_get(doc, "imputed");
    core_err rc;

    if (!json_is_object(nodes) || !json_is_object(nn) || !json_is_object(imp)) {
        snprintf(eb, ebn, "nodes / n_node / imputed: missing or not objects");
        return CORE_EPARSE;
    }
    if ((rc = window_prov(prov, &w->prof, eb, ebn)) != CORE_OK)
        return rc;
    for (size_t m = 0; m < t->n_nodes; m++) {
        struct rel_node_prov *np = &w->prof.node[m];
        const json_t *v, *pv = NULL;
        w->x[m] = NAN;
        memset(np, 0, sizeof(*np));
        memset(&w->obs[m], 0, sizeof(w->obs[m]));
        if (!w->used[m])
            continue;
        if ((rc = bind_node(t, m, pn, np, &pv, eb, ebn)) != CORE_OK ||
            (rc = node_prov(nn, imp, pv, np, &w->obs[m], &w->prof, eb, ebn)) != CORE_OK)
            return rc;
        v = json_object_get(nodes, np->key);
        if (!json_is_number(v) || !isfinite(json_number_value(v))) {
            snprintf(eb, ebn, "nodes.%s: missing or not a finite number", np->key);
            return CORE_EPARSE;
        }
        w->x[m] = json_number_value(v);
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

core_err rel_window_from_json(const char *text, size_t len, struct rel_window *w, char *eb,
                              size_t ebn)
{
    json_error_t jerr;
    json_t *doc = NULL, *v;
    const char *device, *id;
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
    device = json_string_value(json_object_get(doc, "device"));
    id = json_string_value(json_object_get(doc, "id"));
    if (!device || !json_is_integer(json_object_get(doc, "window_start")) ||
        !json_is_integer(json_object_get(doc, "window_end"))) {
        snprintf(eb, ebn,
                 "device / window_start / window_end: missing or wrong type "
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
    w->prof.from_record = false;
    rc = w->excluded ? CORE_OK : json_values(doc, w, eb, ebn);
out:
    if (w->ja)
        core_jalloc_release(w->ja, doc);
    else
        json_decref(doc);
    return rc;
}
