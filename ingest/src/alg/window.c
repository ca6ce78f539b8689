/* window.c - one window's completed series, features and record (DESIGN.md §5 ingest).
 *
 * Definitions (docs/ingest.md "Windows" is the normative text; tests/tools/offline_windows.py
 * is an independent implementation of the same text):
 *   slots      S = size / period; slot j of window [start, end) is slot time start + j*period;
 *              a reading sits in slot (tau - start) / period.
 *   per node channel c (readings whose value for c is not null):
 *   coverage   occupied slots / S; below ingest.min_coverage -> excluded "low_coverage".
 *   gaps       a run of empty slots between two occupied slots is internal; a run longer
 *              than ingest.max_interp_gap -> excluded "long_gap". Leading/trailing empty slots
 *              are not imputed (no neighbour inside the window) and only lower coverage.
 *   imputation for an empty internal slot j at t_j = start + j*period, with a = the real sample
 *              with the largest ts before the gap and b = the one with the smallest ts after:
 *              x = x_a + (x_b - x_a) * ((t_j - t_a) / (t_b - t_a))   (raw values, raw ts).
 *   normalize  u = (min(max(x, L), U) - L) / (U - L) for every real and imputed point.
 *   series     points in slot order; inside a slot, real readings in ts order.
 *   features   mean = (sum u, left to right) / N; min; max; std = sqrt(sum (u-mean)^2 / N);
 *              count = min(1, real samples / S).
 *   node name  always "<channel>.<feature>" (gcdp.window/2): the statistic travels with the
 *              value, so no downstream stage has to guess it from configuration.
 *   provenance "prov" states what bounds each node's sensitivity (DESIGN.md §5, §7.7): the
 *              interpolation gap G, the sampling period, the normalization and, per node,
 *              its statistic, channel, clip interval, imputed points and longest imputed
 *              run; the real-sample counts are "n_node". Release certifies from these.
 */
#include "alg/window.h"

#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "core/timefmt.h"

enum { F_MEAN, F_COUNT, F_MIN, F_MAX, F_STD };

/* The constant text of every node (struct ing__wscratch.node_txt), in one block. */
static void node_text_init(struct ing__wscratch *ws, const struct ing_params *p)
{
    struct core_buf b;
    size_t at;

    core_buf_init(&b, CORE_BUF_NO_CAP); /* bounded: channels x 5 x short names */
    for (size_t c = 0; c < p->n_channels; c++) {
        const struct ing_channel *ch = &p->channels[c];
        for (unsigned f = 0; f < 5; f++) {
            const char *feat = ing__feature_name(1u << f);
            at = b.len;
            core_buf_puts(&b, "\"");
            core_buf_puts(&b, ch->name);
            core_buf_puts(&b, ".");
            core_buf_puts(&b, feat);
            core_buf_puts(&b, "\":");
            ws->node_txt[c][f].name_off = (uint32_t)at;
            ws->node_txt[c][f].name_len = (uint32_t)(b.len - at);
            at = b.len;
            core_buf_puts(&b, "{\"stat\":\"");
            core_buf_puts(&b, feat);
            core_buf_puts(&b, "\",\"channel\":\"");
            core_buf_puts(&b, ch->name);
            core_buf_puts(&b, "\",\"clip\":[");
            ing__buf_double(&b, ch->clip_lo);
            core_buf_puts(&b, ",");
            ing__buf_double(&b, ch->clip_hi);
            core_buf_puts(&b, "],\"n_imputed\":");
            ws->node_txt[c][f].prov_off = (uint32_t)at;
            ws->node_txt[c][f].prov_len = (uint32_t)(b.len - at);
            snprintf(ws->bin_name[c][f], sizeof(ws->bin_name[c][f]), "%s.%s", ch->name, feat);
        }
    }
    ws->text = core_buf_take(&b, &at);
}

void ing__window_scratch_init(struct ing__wscratch *ws, const struct ing_params *p)
{
    size_t s = (size_t)(p->window_ms / p->period_ms);

    memset(ws, 0, sizeof(*ws));
    ws->n_slots = (int64_t)s;
    ws->slot_first = core_xmalloc(s * sizeof(*ws->slot_first));
    ws->slot_last = core_xmalloc(s * sizeof(*ws->slot_last));
    ws->u = core_xmalloc((s + p->max_buffer) * sizeof(*ws->u));
    ws->imp_ts = core_xmalloc(s * p->n_channels * sizeof(*ws->imp_ts));
    ws->src_cap = 4;
    ws->src = core_xmalloc(ws->src_cap * sizeof(*ws->src));
    node_text_init(ws, p);
}

void ing__window_scratch_cleanup(struct ing__wscratch *ws)
{
    free(ws->slot_first);
    free(ws->slot_last);
    free(ws->u);
    free(ws->imp_ts);
    free(ws->src);
    free(ws->text);
}

static double normalize(const struct ing_channel *ch, double x)
{
    double c = x < ch->clip_lo ? ch->clip_lo : x > ch->clip_hi ? ch->clip_hi : x;
    return (c - ch->clip_lo) / (ch->clip_hi - ch->clip_lo);
}

/* Mark the slots holding a real (non-null) value of channel c. Returns occupied slots. */
static size_t mark_slots(const struct ing_engine *e, const struct ing__dev *d, size_t c,
                         int64_t start, size_t i0, size_t i1)
{
    struct ing__wscratch *ws = (struct ing__wscratch *)&e->ws;
    size_t occ = 0, nch = e->p.n_channels;

    for (int64_t j = 0; j < ws->n_slots; j++)
        ws->slot_first[j] = SIZE_MAX;
    ws->n_real[c] = 0;
    for (size_t i = i0; i < i1; i++) {
        int64_t j = (d->rd[i].tau - start) / e->p.period_ms;
        if (isnan(d->val[i * nch + c]))
            continue;
        if (ws->slot_first[j] == SIZE_MAX) {
            ws->slot_first[j] = i;
            occ++;
        }
        ws->slot_last[j] = i;
        ws->n_real[c]++;
    }
    return occ;
}

/* Longest internal run of empty slots. */
static int64_t longest_gap(const struct ing__wscratch *ws)
{
    int64_t best = 0, run = 0;
    bool seen = false;

    for (int64_t j = 0; j < ws->n_slots; j++) {
        if (ws->slot_first[j] == SIZE_MAX) {
            run++;
            continue;
        }
        if (seen && run > best)
            best = run;
        seen = true;
        run = 0;
    }
    return best;
}

/* Next occupied slot after j (exists for an internal gap). */
static int64_t next_occupied(const struct ing__wscratch *ws, int64_t j)
{
    while (ws->slot_first[j] == SIZE_MAX)
        j++;
    return j;
}

/* Build the completed, normalized series of channel c into ws->u (slots between the first
 * and the last occupied one; leading/trailing empty slots have no neighbour on one side
 * inside the window and are not imputed). Returns its length. */
static size_t build_series(struct ing_engine *e, const struct ing__dev *d, size_t c, int64_t start)
{
    struct ing__wscratch *ws = &e->ws;
    const struct ing_channel *ch = &e->p.channels[c];
    size_t m = 0, nch = e->p.n_channels, a = SIZE_MAX;
    int64_t first = 0, last = ws->n_slots - 1;

    while (ws->slot_first[first] == SIZE_MAX) /* callers ensure one slot is occupied */
        first++;
    while (ws->slot_first[last] == SIZE_MAX)
        last--;
    size_t run = 0;

    ws->imp_n[c] = 0;
    ws->imp_run[c] = 0;
    for (int64_t j = first; j <= last; j++) {
        if (ws->slot_first[j] != SIZE_MAX) {
            run = 0;
            for (size_t i = ws->slot_first[j]; i <= ws->slot_last[j]; i++)
                if (!isnan(d->val[i * nch + c]))
                    ws->u[m++] = normalize(ch, d->val[i * nch + c]);
            a = ws->slot_last[j];
        } else {
            size_t b = ws->slot_first[next_occupied(ws, j)];
            int64_t tj = start + j * e->p.period_ms, ta = d->rd[a].ts, tb = d->rd[b].ts;
            double xa = d->val[a * nch + c], xb = d->val[b * nch + c];
            /* Linear interpolation between the neighbouring real samples (raw ts). */
            double x = xa + (xb - xa) * ((double)(tj - ta) / (double)(tb - ta));
            ws->u[m++] = normalize(ch, x);
            ws->imp_ts[c * (size_t)ws->n_slots + ws->imp_n[c]++] = tj;
            if (++run > ws->imp_run[c])
                ws->imp_run[c] = run;
        }
    }
    return m;
}

static void features(struct ing__wscratch *ws, size_t c, size_t m)
{
    double sum = 0.0, lo = ws->u[0], hi = ws->u[0], ss = 0.0, mean;

    for (size_t i = 0; i < m; i++) {
        sum += ws->u[i];
        lo = ws->u[i] < lo ? ws->u[i] : lo;
        hi = ws->u[i] > hi ? ws->u[i] : hi;
    }
    mean = sum / (double)m;
    for (size_t i = 0; i < m; i++)
        ss += (ws->u[i] - mean) * (ws->u[i] - mean);
    ws->feat[c][F_MEAN] = mean;
    ws->feat[c][F_COUNT] = fmin(1.0, (double)ws->n_real[c] / (double)ws->n_slots);
    ws->feat[c][F_MIN] = lo;
    ws->feat[c][F_MAX] = hi;
    ws->feat[c][F_STD] = sqrt(ss / (double)m);
}

/* Series and features of node channel c; ING_X_NONE or why the window is excluded. */
static enum ing_excl channel_window(struct ing_engine *e, const struct ing__dev *d, size_t c,
                                    int64_t start, size_t i0, size_t i1, char *why, size_t wn)
{
    struct ing__wscratch *ws = &e->ws;
    size_t occ = mark_slots(e, d, c, start, i0, i1);
    int64_t gap;

    if (!((double)occ / (double)ws->n_slots >= e->p.min_coverage) || occ == 0) {
        snprintf(why, wn,
                 "channel '%s': %zu of %lld slots hold a sample (ingest.min_coverage "
                 "%g)",
                 e->p.channels[c].name, occ, (long long)ws->n_slots, e->p.min_coverage);
        return ING_X_LOW_COVERAGE;
    }
    gap = longest_gap(ws);
    if (gap > e->p.max_interp_gap) {
        snprintf(why, wn, "channel '%s': gap of %lld slots > ingest.max_interp_gap %d",
                 e->p.channels[c].name, (long long)gap, e->p.max_interp_gap);
        return ING_X_LONG_GAP;
    }
    features(ws, c, build_series(e, d, c, start));
    return ING_X_NONE;
}

/* Node channels of this window: ingest.nodes, or every channel with a real value. */
static void pick_nodes(struct ing_engine *e, const struct ing__dev *d, size_t i0, size_t i1)
{
    struct ing__wscratch *ws = &e->ws;
    size_t nch = e->p.n_channels;

    ws->n_nodes = 0;
    if (e->p.n_nodes) {
        memcpy(ws->nodes, e->p.node_channel, e->p.n_nodes * sizeof(*ws->nodes));
        ws->n_nodes = e->p.n_nodes;
        return;
    }
    for (size_t c = 0; c < nch; c++)
        for (size_t i = i0; i < i1; i++)
            if (!isnan(d->val[i * nch + c])) {
                ws->nodes[ws->n_nodes++] = c;
                break;
            }
}

static void collect_src(struct ing__wscratch *ws, const struct ing__dev *d, size_t i0, size_t i1,
                        size_t *n_src)
{
    size_t n = 0;

    for (size_t i = i0; i < i1; i++) {
        const struct ing__rd *r = &d->rd[i];
        size_t s;
        if (r->partition < 0)
            continue;
        for (s = 0; s < n && ws->src[s].partition != r->partition; s++)
            ;
        if (s == n) {
            if (n == ws->src_cap) {
                ws->src_cap *= 2;
                ws->src = core_xrealloc(ws->src, ws->src_cap * sizeof(*ws->src));
            }
            ws->src[n++] = (struct ing_src_range){r->partition, r->offset, r->offset};
        }
        if (r->offset < ws->src[s].min_offset)
            ws->src[s].min_offset = r->offset;
        if (r->offset > ws->src[s].max_offset)
            ws->src[s].max_offset = r->offset;
    }
    *n_src = n;
}

static void put_node_name(struct core_buf *b, const struct ing_engine *e, size_t c, int f)
{
    core_buf_put(b, e->ws.text + e->ws.node_txt[c][f].name_off, e->ws.node_txt[c][f].name_len);
}

/* One node's provenance: {"stat":..,"channel":..,"clip":[L,U],"n_imputed":k,"max_run":r}. */
static void put_node_prov(struct core_buf *b, const struct ing_engine *e, size_t c, int f)
{
    core_buf_put(b, e->ws.text + e->ws.node_txt[c][f].prov_off, e->ws.node_txt[c][f].prov_len);
    core_buf_int(b, (int64_t)e->ws.imp_n[c]);
    core_buf_puts(b, ",\"max_run\":");
    core_buf_int(b, (int64_t)e->ws.imp_run[c]);
    core_buf_puts(b, "}");
}

/* Calls f(b, e, c, bit, feature index) for every node (channel x feature) in order. */
/* One node's value of kind what (put_nodes) after its name. */
static void put_node_value(struct core_buf *b, const struct ing_engine *e, size_t c, int f,
                           int what)
{
    const struct ing__wscratch *ws = &e->ws;

    if (what == 0) {
        ing__buf_double(b, ws->feat[c][f]);
    } else if (what == 1) {
        core_buf_int(b, (int64_t)ws->n_real[c]);
    } else if (what == 3) {
        put_node_prov(b, e, c, f);
    } else {
        core_buf_puts(b, "[");
        for (size_t i = 0; i < ws->imp_n[c]; i++) {
            if (i)
                core_buf_puts(b, ",");
            core_buf_int(b, ws->imp_ts[c * (size_t)ws->n_slots + i]);
        }
        core_buf_puts(b, "]");
    }
}

static void put_nodes(struct core_buf *b, const struct ing_engine *e, int what)
{
    const struct ing__wscratch *ws = &e->ws;
    bool first = true;

    core_buf_puts(b, "{");
    for (size_t k = 0; k < ws->n_nodes; k++) {
        size_t c = ws->nodes[k];
        for (int f = 0; f < 5; f++) {
            if (!(e->p.features & (1u << f)))
                continue;
            if (!first)
                core_buf_puts(b, ",");
            first = false;
            put_node_name(b, e, c, f);
            put_node_value(b, e, c, f, what);
        }
    }
    core_buf_puts(b, "}");
}

static void put_header(struct ing_engine *e, const struct ing__dev *d, int64_t start, int64_t end,
                       size_t n)
{
    struct core_buf *b = &e->out;
    char ts[CORE_TIME_TEXT_MAX];

    core_buf_reset(b);
    core_buf_puts(b, "{\"schema\":\"" ING_SCHEMA_WINDOW "\",\"id\":\"");
    core_buf_put(b, d->id, d->id_len); /* device charset needs no escaping */
    core_buf_puts(b, "|");
    core_buf_int(b, start);
    core_buf_puts(b, "|");
    core_buf_puts(b, e->p.config_version);
    core_buf_puts(b, "\",\"device\":\"");
    core_buf_put(b, d->id, d->id_len);
    core_buf_puts(b, "\",\"window_start\":");
    core_buf_int(b, start);
    core_buf_puts(b, ",\"window_end\":");
    core_buf_int(b, end);
    core_buf_puts(b, ",\"window_start_utc\":\"");
    core_buf_put(b, ts, core_time_format(start, CORE_TIME_AUTO, ts, sizeof(ts)));
    core_buf_puts(b, "\",\"window_end_utc\":\"");
    core_buf_put(b, ts, core_time_format(end, CORE_TIME_AUTO, ts, sizeof(ts)));
    core_buf_puts(b, "\",\"config_version\":\"");
    core_buf_puts(b, e->p.config_version);
    core_buf_puts(b, "\",\"n\":");
    core_buf_int(b, (int64_t)n);
    core_buf_puts(b, ",\"n_slots\":");
    core_buf_int(b, e->n_slots);
    if (e->closed_early) { /* closed before its watermark: readings may be missing */
        core_buf_puts(b, ",\"closed_early\":\"");
        core_buf_puts(b, e->closed_early);
        core_buf_puts(b, "\"");
    }
}

/* The window as gcdp.window/3 (core/window_bin.h) into e->out: the same content as the
 * JSON record put_header and put_nodes write (window_start_utc / _end_utc are derived from
 * the times; a reader prints them from there). why: the exclusion detail, or NULL. */
static void put_binary(struct ing_engine *e, const struct ing__dev *d, int64_t start, size_t n,
                       enum ing_excl x, const char *why)
{
    struct ing__wscratch *ws = &e->ws;
    char dev[ING_DEVICE_MAX + 1], id[ING_DEVICE_MAX + 64];
    struct core_wrec r;
    size_t k = 0;
    core_err rc;

    memcpy(dev, d->id, d->id_len);
    dev[d->id_len] = '\0';
    snprintf(id, sizeof(id), "%s|%lld|%s", dev, (long long)start, e->p.config_version);
    r = (struct core_wrec){.id = id,
                           .device = dev,
                           .config_version = e->p.config_version,
                           .start = start,
                           .end = start + e->p.window_ms,
                           .n = (uint32_t)n,
                           .n_slots = (uint32_t)e->n_slots,
                           .excluded = x != ING_X_NONE,
                           .exclude_reason = x != ING_X_NONE ? ing_excl_code(x) : "",
                           .exclude_detail = why ? why : "",
                           .closed_early = e->closed_early ? e->closed_early : "",
                           .interp_gap = (uint32_t)e->p.max_interp_gap,
                           .period_ms = e->p.period_ms,
                           .norm = ING_NORM_NAME};
    for (size_t i = 0; x == ING_X_NONE && i < ws->n_nodes; i++) {
        size_t c = ws->nodes[i];
        for (int f = 0; f < 5; f++) {
            if (!(e->p.features & (1u << f)))
                continue;
            ws->bin_node[k++] = (struct core_wrec_node){
                ws->bin_name[c][f],       ing__feature_name(1u << f),
                e->p.channels[c].name,    ws->feat[c][f],
                e->p.channels[c].clip_lo, e->p.channels[c].clip_hi,
                (uint32_t)ws->n_real[c],  (uint32_t)ws->imp_run[c],
                (uint32_t)ws->imp_n[c],   ws->imp_ts + c * (size_t)ws->n_slots};
        }
    }
    r.n_nodes = k;
    r.node = ws->bin_node;
    core_buf_reset(&e->out);
    rc = core_wbin_encode(&r, &e->out);
    assert(rc == CORE_OK); /* names, ids and counts are bounded by the engine's limits */
    (void)rc;
}

void ing__window_emit(struct ing_engine *e, const struct ing__dev *d, int64_t start, size_t i0,
                      size_t i1, const struct ing_sink *sink)
{
    struct ing__wscratch *ws = &e->ws;
    struct core_buf *b = &e->out;
    enum ing_excl x = ING_X_NONE;
    char why[160] = "";
    struct ing_window_info info;
    size_t n_src = 0;

    pick_nodes(e, d, i0, i1);
    if (ws->n_nodes == 0) {
        x = ING_X_NO_DATA;
        snprintf(why, sizeof(why), "no channel has a non-null value");
    }
    for (size_t k = 0; k < ws->n_nodes && x == ING_X_NONE; k++)
        x = channel_window(e, d, ws->nodes[k], start, i0, i1, why, sizeof(why));
    collect_src(ws, d, i0, i1, &n_src);
    e->c.windows_excluded += x != ING_X_NONE;
    e->c.excluded_by_reason[x] += x != ING_X_NONE;
    for (size_t k = 0; x == ING_X_NONE && k < ws->n_nodes; k++)
        e->c.interpolated += ws->imp_n[ws->nodes[k]];
    if (x != ING_X_NONE && !e->p.emit_excluded)
        return;
    e->c.windows_emitted++;
    if (!sink || !sink->on_window)
        return;
    if (e->p.out_format == ING_OUT_BINARY) {
        put_binary(e, d, start, i1 - i0, x, x != ING_X_NONE ? why : NULL);
        goto emit;
    }
    put_header(e, d, start, start + e->p.window_ms, i1 - i0);
    if (x != ING_X_NONE) {
        core_buf_puts(b, ",\"excluded\":true,\"exclude_reason\":\"");
        core_buf_puts(b, ing_excl_code(x));
        core_buf_puts(b, "\",\"exclude_detail\":");
        core_buf_json_str(b, why, strlen(why));
    } else {
        core_buf_puts(b, ",\"excluded\":false,\"nodes\":");
        put_nodes(b, e, 0);
        core_buf_puts(b, ",\"n_node\":");
        put_nodes(b, e, 1);
        core_buf_puts(b, ",\"imputed\":");
        put_nodes(b, e, 2);
        core_buf_puts(b, ",\"prov\":{\"interp_gap\":");
        core_buf_int(b, e->p.max_interp_gap);
        core_buf_puts(b, ",\"period_ms\":");
        core_buf_int(b, e->p.period_ms);
        core_buf_puts(b, ",\"norm\":\"" ING_NORM_NAME "\",\"nodes\":");
        put_nodes(b, e, 3);
        core_buf_puts(b, "}");
    }
    core_buf_puts(b, "}");
emit:
    info = (struct ing_window_info){d->id, start,  start + e->p.window_ms, x != ING_X_NONE, x,
                                    n_src, ws->src};
    sink->on_window(sink->arg, d->id, d->id_len, b->p, b->len, &info);
}
