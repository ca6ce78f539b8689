/* occupancy.c - UCI Occupancy Detection through the ingest engine's preprocessing (gc-dp
 * Sec. 5.1, Table 3): every row becomes a gcdp.reading/1 message pushed through
 * ing_engine_push exactly as `gcdp replay` + `gcdp ingest` would (invalid timestamps,
 * duplicates and out-of-domain readings rejected, short gaps interpolated, long gaps and
 * low coverage excluded, fixed tumbling windows, clip + [0,1] normalization, window mean).
 * One engine per file, so no window crosses a split boundary. Clip intervals are fitted
 * on the training file only (its per-channel min and max) and frozen for all three files.
 * Split: datatraining = train, datatest = validation, datatest2 = test (the files are
 * disjoint in time). Task label: window occupancy (mean of the rows' 0/1 label >= 0.5).
 * Protected attribute (fixed before any run): the window falls on a weekend (Saturday or
 * Sunday, calendar date of window_start; the file dates are local time read as UTC). */
#include "sim/occupancy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/mem.h"
#include "eval/eval.h"
#include "eval_int.h"
#include "ing/engine.h"

#define OCC_GAP   1   /* ingest.max_interp_gap used here */
#define OCC_COVER 0.9 /* ingest.min_coverage used here */

struct occ_rows {
    size_t n, cap;
    struct sim_occ_row *r;
};

static core_err read_rows(const char *path, struct occ_rows *o, char *eb, size_t ebn)
{
    struct sim_occ_reader *rd;
    core_err rc = sim_occ_reader_open(path, &rd, eb, ebn);
    if (rc != CORE_OK)
        return rc;
    for (;;) {
        if (o->n == o->cap) {
            o->cap = o->cap ? 2 * o->cap : 4096;
            o->r = core_xrealloc(o->r, o->cap * sizeof(*o->r));
        }
        rc = sim_occ_reader_next(rd, &o->r[o->n], eb, ebn);
        if (rc == CORE_ENOTFOUND) {
            rc = CORE_OK;
            break;
        }
        if (rc != CORE_OK)
            break;
        o->n++;
    }
    sim_occ_reader_free(rd);
    return rc;
}

struct win {
    int64_t start, end;
    double v[SIM_OCC_NVALUES];
};

struct sink_ctx {
    struct win *w;
    size_t n, cap;
    int bad;
};

static void on_window(void *arg, const char *key, size_t key_len, const char *json, size_t len,
                      const struct ing_window_info *info)
{
    struct sink_ctx *c = arg;
    json_t *doc, *nodes;
    (void)key;
    (void)key_len;
    if (info->excluded)
        return;
    doc = json_loadb(json, len, 0, NULL);
    nodes = doc ? json_object_get(doc, "nodes") : NULL;
    if (!nodes) {
        c->bad++;
        json_decref(doc);
        return;
    }
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 1024;
        c->w = core_xrealloc(c->w, c->cap * sizeof(*c->w));
    }
    c->w[c->n].start = info->window_start;
    c->w[c->n].end = info->window_end;
    for (size_t j = 0; j < SIM_OCC_NVALUES; j++) {
        char alt[64];
        json_t *v = json_object_get(nodes, sim_occ_channels[j]);
        if (!v) { /* "<channel>.mean": several features, or gcdp.window/2 (always suffixed) */
            snprintf(alt, sizeof(alt), "%s.mean", sim_occ_channels[j]);
            v = json_object_get(nodes, alt);
        }
        if (!json_is_number(v)) {
            c->bad++;
            json_decref(doc);
            return;
        }
        c->w[c->n].v[j] = json_number_value(v);
    }
    c->n++;
    json_decref(doc);
}

static core_err run_engine(const struct ing_params *p, const struct occ_rows *rows,
                           struct sink_ctx *c, char *eb, size_t ebn)
{
    struct ing_engine *eng = ing_engine_new(p, eb, ebn);
    struct ing_sink sink = {on_window, NULL, c};
    struct ing_source src = {"eval", -1, 0};
    char msg[1024];

    if (!eng)
        return CORE_ECONFIG;
    for (size_t i = 0; i < rows->n; i++) {
        const struct sim_occ_row *r = &rows->r[i];
        int len = snprintf(msg, sizeof(msg),
                           "{\"schema\":\"gcdp.reading/1\",\"device\":\"occupancy\",\"ts\":%lld,"
                           "\"readings\":{",
                           (long long)r->ts_ms);
        for (size_t j = 0; j < SIM_OCC_NVALUES; j++)
            len += snprintf(msg + len, sizeof(msg) - (size_t)len, "%s\"%s\":%s", j ? "," : "",
                            sim_occ_channels[j], r->text[j]);
        len += snprintf(msg + len, sizeof(msg) - (size_t)len, "}}");
        if (ing_engine_push(eng, msg, (size_t)len, NULL, 0, &src, r->ts_ms, &sink, NULL) !=
            CORE_OK) {
            ing_engine_free(eng);
            snprintf(eb, ebn, "ingest engine refused a push");
            return CORE_EINVAL;
        }
    }
    ing_engine_flush(eng, &sink);
    ing_engine_free(eng);
    if (c->bad) {
        snprintf(eb, ebn, "ingest emitted %d window records without the expected nodes", c->bad);
        return CORE_EPARSE;
    }
    return CORE_OK;
}

static int weekend(int64_t ms)
{
    int64_t days = ms >= 0 ? ms / 86400000 : -((-ms + 86399999) / 86400000);
    int dow = (int)(((days % 7) + 7 + 4) % 7); /* 1970-01-01 was a Thursday (4), 0 = Sunday */
    return dow == 0 || dow == 6;
}

/* Ingest parameters: tumbling windows of window_ms, the window mean, and per channel the clip
 * [L, U] fitted on the training rows only (their in-domain min and max), then frozen
 * (Sec. 5.1); validated. */
static core_err occ_ingest_params(struct ing_params *p, int64_t window_ms,
                                  const struct occ_rows *train, char *eb, size_t ebn)
{
    eval_ingest_params_offline(p, window_ms, OCC_GAP, OCC_COVER);
    p->n_nodes = SIM_OCC_NVALUES;
    for (size_t j = 0; j < SIM_OCC_NVALUES; j++) {
        size_t c = 0;
        double lo = INFINITY, hi = -INFINITY;
        while (c < p->n_channels && strcmp(p->channels[c].name, sim_occ_channels[j]) != 0)
            c++;
        if (c == p->n_channels) {
            snprintf(eb, ebn, "ingest default channels lack '%s'", sim_occ_channels[j]);
            return CORE_ECONFIG;
        }
        for (size_t i = 0; i < train->n; i++) {
            double v = train->r[i].value[j];
            if (v >= p->channels[c].dom_lo && v <= p->channels[c].dom_hi) {
                lo = fmin(lo, v);
                hi = fmax(hi, v);
            }
        }
        if (!(hi > lo)) {
            snprintf(eb, ebn, "occupancy: channel %s constant on the training file",
                     sim_occ_channels[j]);
            return CORE_EINVAL;
        }
        p->channels[c].clip_lo = lo;
        p->channels[c].clip_hi = hi;
        p->node_channel[j] = c;
    }
    return ing_params_validate(p, eb, ebn);
}

/* Names, classes, task, attribute and protected-unit descriptions, and the B_k query for
 * windows of `slots` one-minute slots. */
static void describe_occupancy(struct eval_data *ds, size_t slots)
{
    snprintf(ds->name, sizeof(ds->name), "occupancy");
    for (size_t j = 0; j < SIM_OCC_NVALUES; j++)
        ds->names[j] = core_xstrdup(sim_occ_channels[j]);
    ds->n_classes = 2;
    ds->class_names = core_xcalloc(2, sizeof(char *));
    ds->class_names[0] = core_xstrdup("empty");
    ds->class_names[1] = core_xstrdup("occupied");
    ds->positive_f1 = 1;
    snprintf(ds->task_desc, sizeof(ds->task_desc),
             "window occupancy (mean of the rows' label >= 0.5), positive-class F1");
    snprintf(ds->attr_desc, sizeof(ds->attr_desc),
             "weekend: the window's calendar date (file time read as UTC) is a Saturday "
             "or Sunday");
    ds->query.min_samples = (uint32_t)ceil(OCC_COVER * (double)slots);
    ds->query.max_samples = (uint32_t)slots;
    ds->query.interp_gap = OCC_GAP;
    snprintf(ds->unit_desc, sizeof(ds->unit_desc),
             "one channel value at one timestamp (one real sample of one node); window "
             "mean over >= n_min = %u real samples of %zu slots, interpolation gap G = %d: "
             "B_k = (1+2G)/n_min (release stage rel_stat_sensitivity)",
             ds->query.min_samples, slots, OCC_GAP);
}

/* The windows of file f (0 train, 1 validation, 2 test) as rows of ds from *row on: node
 * means, occupancy label from the file rows inside the window, weekend attribute. */
static void fill_occupancy_rows(int f, const struct occ_rows *rows, const struct sink_ctx *win,
                                struct eval_data *ds, size_t *row)
{
    size_t r0 = 0;

    for (size_t w = 0; w < win->n; w++, (*row)++) {
        const struct win *wn = &win->w[w];
        double occ = 0.0, cnt = 0.0;
        memcpy(ds->x + *row * ds->d, wn->v, SIM_OCC_NVALUES * sizeof(double));
        while (r0 < rows->n && rows->r[r0].ts_ms < wn->start)
            r0++;
        for (size_t i = r0; i < rows->n && rows->r[i].ts_ms < wn->end; i++) {
            occ += rows->r[i].occupancy;
            cnt += 1.0;
        }
        ds->y[*row] = cnt > 0.0 && occ / cnt >= 0.5;
        ds->attr[*row] = weekend(wn->start);
        ds->split[*row] = f == 0 ? EVAL_TRAIN : f == 1 ? EVAL_VAL : EVAL_TEST;
        ds->order[*row] = wn->start;
    }
}

core_err eval_load_occupancy(const char *dir, int64_t window_ms, struct eval_data *ds, char *eb,
                             size_t ebn)
{
    static const char *files[3] = {"datatraining.txt", "datatest.txt", "datatest2.txt"};
    struct occ_rows rows[3] = {{0}};
    struct sink_ctx win[3] = {{0}};
    struct ing_params p;
    size_t total = 0, row = 0;
    core_err rc = CORE_OK;

    memset(ds, 0, sizeof(*ds));
    for (int f = 0; f < 3 && rc == CORE_OK; f++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, files[f]);
        rc = read_rows(path, &rows[f], eb, ebn);
    }
    if (rc == CORE_OK)
        rc = occ_ingest_params(&p, window_ms, &rows[0], eb, ebn);
    for (int f = 0; f < 3 && rc == CORE_OK; f++) {
        rc = run_engine(&p, &rows[f], &win[f], eb, ebn);
        total += win[f].n;
    }
    if (rc == CORE_OK) {
        eval_data_alloc(ds, total, SIM_OCC_NVALUES);
        describe_occupancy(ds, (size_t)(window_ms / p.period_ms));
        for (int f = 0; f < 3; f++)
            fill_occupancy_rows(f, &rows[f], &win[f], ds, &row);
    }
    for (int f = 0; f < 3; f++) {
        free(rows[f].r);
        free(win[f].w);
    }
    if (rc != CORE_OK)
        eval_data_free(ds);
    return rc;
}
