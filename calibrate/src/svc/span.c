/* span.c - the declared span of a private recalibration: windows -> matrix (cal/span.h). */
#include "cal/span.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "core/window_bin.h"

void cal_span_set_init(struct cal_span_set *s, int64_t gap_ms, int64_t span_ms)
{
    memset(s, 0, sizeof(*s));
    s->gap_ms = gap_ms;
    s->keep_ms = gap_ms + span_ms;
    s->dev_newest = json_object();
}

void cal_span_set_cleanup(struct cal_span_set *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        json_decref(s->w[i].nodes);
    free(s->w);
    json_decref(s->dev_newest);
    memset(s, 0, sizeof(*s));
}

/* Drop the kept windows that can no longer be in the span. */
static void prune(struct cal_span_set *s)
{
    size_t m = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (s->w[i].end <= s->newest_end - s->keep_ms) {
            json_decref(s->w[i].nodes);
            s->dropped++;
        } else {
            s->w[m++] = s->w[i];
        }
    }
    s->n = m;
}

/* A gcdp.window/3 record as the members of its gcdp.window/2 JSON text that the span reads
 * (schema, device, window_start, window_end, excluded, nodes), so both encodings go through
 * the same checks below; NULL if it does not decode. */
static json_t *bin_as_json(const void *payload, size_t len)
{
    struct core_wrec r;
    json_t *j = NULL, *nodes;

    core_wrec_init(&r);
    if (core_wbin_decode(payload, len, &r, NULL, 0) == CORE_OK) {
        nodes = json_object();
        for (size_t i = 0; i < r.n_nodes; i++)
            json_object_set_new(nodes, r.node[i].name, json_real(r.node[i].value));
        j = json_pack("{s:s,s:s,s:I,s:I,s:b,s:o}", "schema", "gcdp.window/2", "device", r.device,
                      "window_start", (json_int_t)r.start, "window_end", (json_int_t)r.end,
                      "excluded", r.excluded, "nodes", nodes);
    }
    core_wrec_cleanup(&r);
    return j;
}

core_err cal_span_add(struct cal_span_set *s, const void *payload, size_t len, int32_t partition,
                      int64_t offset)
{
    json_t *j = !payload                     ? NULL
                : core_wbin_is(payload, len) ? bin_as_json(payload, len)
                                             : json_loadb(payload, len, 0, NULL);
    const json_t *st = json_object_get(j, "window_start"), *en = json_object_get(j, "window_end");
    const char *dev = json_string_value(json_object_get(j, "device"));
    const char *schema = json_string_value(json_object_get(j, "schema"));
    json_t *nodes = json_object_get(j, "nodes");
    struct cal_span_win *w;

    if (partition < 0 || partition >= CAL_SPAN_MAX_PARTITIONS) {
        json_decref(j);
        return CORE_EINVAL;
    }
    s->read++;
    if (!schema || strcmp(schema, "gcdp.window/2") != 0 || !dev || !dev[0] ||
        strlen(dev) > CAL_LEDGER_MAX_DEVICE || strchr(dev, '|') || !json_is_integer(st) ||
        !json_is_integer(en) || json_integer_value(st) >= json_integer_value(en) ||
        !json_is_object(nodes)) {
        s->malformed++;
        json_decref(j);
        return CORE_OK;
    }
    if (json_integer_value(en) > s->newest_end)
        s->newest_end = json_integer_value(en);
    if (json_integer_value(en) > json_integer_value(json_object_get(s->dev_newest, dev)))
        json_object_set_new(s->dev_newest, dev, json_integer(json_integer_value(en)));
    if (json_is_true(json_object_get(j, "excluded")) ||
        json_integer_value(en) <= s->newest_end - s->keep_ms) {
        json_decref(j);
        return CORE_OK;
    }
    if (s->n == s->cap) {
        prune(s);
        if (s->n == s->cap) {
            if (s->cap >= CAL_SPAN_MAX_WINDOWS) {
                json_decref(j);
                return CORE_ETOOBIG;
            }
            s->cap = s->cap ? 2 * s->cap : 256;
            s->w = core_xrealloc(s->w, s->cap * sizeof(*s->w));
        }
    }
    w = &s->w[s->n++];
    snprintf(w->device, sizeof(w->device), "%s", dev);
    w->start = json_integer_value(st);
    w->end = json_integer_value(en);
    w->partition = partition;
    w->offset = offset;
    w->nodes = json_incref(nodes);
    json_decref(j);
    return CORE_OK;
}

bool cal_span_bounds(int64_t newest_end, int64_t lateness_ms, int64_t widen_ms, int64_t slot_ms,
                     int64_t span_ms, int64_t *t0, int64_t *t1)
{
    const int64_t lim = (int64_t)1 << 61;
    if (newest_end <= 0 || newest_end > lim || lateness_ms < 0 || lateness_ms > lim ||
        widen_ms < 0 || widen_ms > lim || slot_ms < 1 || slot_ms > lim || span_ms < 1 ||
        span_ms > lim)
        return false;
    *t1 = newest_end - lateness_ms - widen_ms - slot_ms;
    *t0 = *t1 - span_ms;
    return true;
}

void cal_span_result_cleanup(struct cal_span_result *r)
{
    if (!r)
        return;
    cal_matrix_free(r->mx);
    for (size_t i = 0; i < r->n_devices; i++)
        free(r->devices[i]);
    free(r->devices);
    memset(r, 0, sizeof(*r));
}

static int by_dev_start(const void *a, const void *b)
{
    const struct cal_span_win *const *p = a, *const *q = b;
    int c = strcmp((*p)->device, (*q)->device);
    if (c)
        return c;
    return (*p)->start < (*q)->start ? -1 : (*p)->start > (*q)->start;
}

static int by_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Node keys of w (sorted, borrowed from w->nodes) and their display names (owned). */
static size_t node_names(const struct cal_span_win *w, const char ***keys, char ***names)
{
    size_t m = json_object_size(w->nodes), k = 0;
    const char *key;
    json_t *v;

    *keys = core_xcalloc(m ? m : 1, sizeof(**keys));
    *names = core_xcalloc(m ? m : 1, sizeof(**names));
    json_object_foreach(w->nodes, key, v)(*keys)[k++] = key;
    qsort(*keys, m, sizeof(**keys), by_str);
    for (size_t i = 0; i < m; i++) {
        const char *dot = strrchr((*keys)[i], '.');
        size_t cl = dot ? (size_t)(dot - (*keys)[i]) : 0, same = 0;
        for (size_t j = 0; cl > 0 && j < m; j++)
            same += strncmp((*keys)[j], (*keys)[i], cl) == 0 && (*keys)[j][cl] == '.' &&
                    !strchr((*keys)[j] + cl + 1, '.');
        (*names)[i] = core_xstrdup((*keys)[i]);
        if (same == 1)
            (*names)[i][cl] = '\0'; /* the channel name */
    }
    return m;
}

/* One row's values; false when a node is missing or not a finite number. */
static bool row_values(const struct cal_span_win *w, const char *const *keys, size_t m, double *x)
{
    for (size_t j = 0; j < m; j++) {
        const json_t *v = json_object_get(w->nodes, keys[j]);
        if (!json_is_number(v) || !isfinite(json_number_value(v)))
            return false;
        x[j] = json_number_value(v);
    }
    return true;
}

/* Sorted distinct devices of the rows. */
static core_err collect_devices(const struct cal_span_win *const *sel, size_t n,
                                struct cal_span_result *out, char *eb, size_t ebn)
{
    for (size_t i = 0; i < n; i++) {
        if (out->n_devices > 0 && strcmp(out->devices[out->n_devices - 1], sel[i]->device) == 0)
            continue;
        if (out->n_devices == CAL_LEDGER_MAX_DEVICES) {
            snprintf(eb, ebn,
                     "the span holds windows of more than %u devices; declare a "
                     "shorter span (calibrate.service.private_span_s)",
                     CAL_LEDGER_MAX_DEVICES);
            return CORE_ETOOBIG;
        }
        out->devices = core_xrealloc(out->devices, (out->n_devices + 1) * sizeof(char *));
        out->devices[out->n_devices++] = core_xstrdup(sel[i]->device);
    }
    return CORE_OK;
}

/* The usable rows of sel[0..n) (compacted to the front of sel) into x and ts; out's row
 * length, partitions and skipped count. Returns the number of rows. */
static size_t fill_rows(const struct cal_span_set *s, const struct cal_span_win **sel, size_t n,
                        const char *const *keys, size_t m, double *x, int64_t *ts,
                        struct cal_span_result *out)
{
    size_t rows = 0;
    for (size_t i = 0; i < n; i++) {
        const struct cal_span_win *w = sel[i];
        if (!row_values(w, keys, m, x + rows * m)) {
            out->skipped++;
            continue;
        }
        sel[rows] = w;
        ts[rows++] = w->start;
        if (w->end - w->start > out->row_len_ms)
            out->row_len_ms = w->end - w->start;
        if (w->offset + 1 > out->need[w->partition])
            out->need[w->partition] = w->offset + 1;
        if (s->high[w->partition] > out->need[w->partition])
            out->need[w->partition] = s->high[w->partition];
        if ((size_t)w->partition + 1 > out->n_parts)
            out->n_parts = (size_t)w->partition + 1;
    }
    return rows;
}

core_err cal_span_select(const struct cal_span_set *s, int64_t t0, int64_t t1,
                         struct cal_span_result *out, char *eb, size_t ebn)
{
    // NOLINTNEXTLINE(bugprone-sizeof-expression): array of pointers
    const struct cal_span_win **sel = core_xcalloc(s->n ? s->n : 1, sizeof(*sel));
    const char **keys = NULL;
    char **names = NULL;
    double *x = NULL;
    int64_t *ts = NULL;
    size_t n = 0, m = 0, rows = 0;
    core_err rc = CORE_OK;

    memset(out, 0, sizeof(*out));
    for (size_t p = 0; p < CAL_SPAN_MAX_PARTITIONS; p++)
        out->need[p] = -1;
    for (size_t i = 0; i < s->n; i++) {
        int64_t dn = json_integer_value(json_object_get(s->dev_newest, s->w[i].device));
        if (s->w[i].start >= t0 && s->w[i].end <= t1 && s->w[i].end <= dn - s->gap_ms)
            sel[n++] = &s->w[i];
    }
    // NOLINTNEXTLINE(bugprone-sizeof-expression): array of pointers
    qsort(sel, n, sizeof(*sel), by_dev_start);
    if (n > 0)
        m = node_names(sel[0], &keys, &names);
    x = core_xcalloc((n ? n : 1) * (m ? m : 1), sizeof(*x));
    ts = core_xcalloc(n ? n : 1, sizeof(*ts));
    rows = fill_rows(s, sel, n, keys, m, x, ts, out);
    if (rows < 2 || m == 0) {
        snprintf(eb, ebn,
                 "the declared span [%" PRId64 ", %" PRId64 "] holds %zu usable "
                 "windows (%zu skipped); a private recalibration needs at least 2",
                 t0, t1, rows, out->skipped);
        rc = CORE_ENOTFOUND;
    }
    if (rc == CORE_OK)
        rc = collect_devices(sel, rows, out, eb, ebn);
    if (rc == CORE_OK)
        rc = cal_matrix_from_arrays(rows, m, x, (const char *const *)names, NULL, 0, &out->mx);
    if (rc == CORE_OK)
        cal_matrix_set_ts(out->mx, ts);
    if (rc != CORE_OK)
        cal_span_result_cleanup(out);
    for (size_t j = 0; j < m; j++)
        free(names[j]);
    free(names);
    free(keys);
    free(x);
    free(ts);
    free(sel);
    return rc;
}
