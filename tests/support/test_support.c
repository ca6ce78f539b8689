/* test_support.c - temporary directories and file helpers for tests. */
#define _XOPEN_SOURCE 700
#include "test_support.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "core/window_bin.h"

char *ts_tmpdir(void)
{
    char tmpl[] = "/tmp/gcdp-test-XXXXXX";
    char *p = mkdtemp(tmpl);
    if (!p) {
        perror("mkdtemp");
        abort();
    }
    return strdup(p);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void ts_rmtree(const char *path)
{
    if (path)
        nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void ts_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        perror(path);
        abort();
    }
}

char *ts_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        if (len)
            *len = (size_t)n;
    }
    return buf;
}

void ts_window2(char *buf, size_t n, const char *device, const char *id, long long start,
                long long end, size_t k, const char *const *chan, const double *val, int n_real,
                int n_slots, long long period_ms)
{
    json_t *w = json_object(), *nodes = json_object(), *nn = json_object(), *imp = json_object();
    json_t *pn = json_object();
    char key[96], *txt;

    for (size_t i = 0; i < k; i++) {
        snprintf(key, sizeof(key), "%s.mean", chan[i]);
        json_object_set_new(nodes, key, json_real(val[i]));
        json_object_set_new(nn, key, json_integer(n_real));
        json_object_set_new(imp, key, json_array());
        json_object_set_new(pn, key,
                            json_pack("{s:s,s:s,s:[i,i],s:i,s:i}", "stat", "mean", "channel",
                                      chan[i], "clip", 0, 1, "n_imputed", 0, "max_run", 0));
    }
    json_object_set_new(w, "schema", json_string("gcdp.window/2"));
    json_object_set_new(w, "id", json_string(id));
    json_object_set_new(w, "device", json_string(device));
    json_object_set_new(w, "window_start", json_integer(start));
    json_object_set_new(w, "window_end", json_integer(end));
    json_object_set_new(w, "n", json_integer(n_real));
    if (n_slots > 0)
        json_object_set_new(w, "n_slots", json_integer(n_slots));
    json_object_set_new(w, "excluded", json_false());
    json_object_set_new(w, "nodes", nodes);
    json_object_set_new(w, "n_node", nn);
    json_object_set_new(w, "imputed", imp);
    json_object_set_new(w, "prov",
                        json_pack("{s:i,s:I,s:s,s:o}", "interp_gap", 2, "period_ms",
                                  (json_int_t)period_ms, "norm", "clip_minmax", "nodes", pn));
    txt = json_dumps(w, JSON_COMPACT | JSON_REAL_PRECISION(17));
    cr_assert(txt && strlen(txt) < n, "ts_window2: buffer too small");
    snprintf(buf, n, "%s", txt);
    free(txt);
    json_decref(w);
}

static const char *jstr(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* Integer or number field as int64 (0 when missing). */
static long long jint(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? json_integer_value(v) : (long long)json_number_value(v);
}

/* The nodes of a window/2 record, in "nodes" order (then any only in prov.nodes), into r
 * (arrays new: free()); returns the object whose keys r's names are (json_decref after). */
static json_t *bin_nodes(const json_t *doc, struct core_wrec *r)
{
    const json_t *pn = json_object_get(json_object_get(doc, "prov"), "nodes");
    json_t *all = json_object(), *v;
    const char *key;
    size_t i = 0;

    json_object_update(all, json_object_get(doc, "nodes"));
    json_object_update_missing(all, (json_t *)pn);
    r->n_nodes = json_object_size(all);
    r->node = calloc(r->n_nodes ? r->n_nodes : 1, sizeof(*r->node));
    json_object_foreach(all, key, v)
    {
        const json_t *pv = json_object_get(pn, key);
        struct core_wrec_node *nd = &r->node[i++];
        const json_t *imp = json_object_get(json_object_get(doc, "imputed"), key);
        int64_t *t = calloc(json_array_size(imp) + 1, sizeof(*t));
        nd->name = key;
        nd->stat = jstr(pv, "stat");
        nd->channel = jstr(pv, "channel");
        nd->value = json_number_value(json_object_get(json_object_get(doc, "nodes"), key));
        nd->clip_lo = json_number_value(json_array_get(json_object_get(pv, "clip"), 0));
        nd->clip_hi = json_number_value(json_array_get(json_object_get(pv, "clip"), 1));
        nd->n_node = (uint32_t)jint(json_object_get(doc, "n_node"), key);
        nd->max_run = (uint32_t)jint(pv, "max_run");
        nd->n_imputed = (uint32_t)json_array_size(imp);
        for (size_t k = 0; k < json_array_size(imp); k++)
            t[k] = json_integer_value(json_array_get(imp, k));
        nd->imputed = t;
    }
    return all;
}

unsigned char *ts_window2_to_bin(const char *json, size_t *len)
{
    json_error_t je;
    json_t *doc = json_loads(json, 0, &je);
    const json_t *prov;
    struct core_wrec r = {0};
    struct core_buf b;
    json_t *names = NULL;

    cr_assert_not_null(doc, "ts_window2_to_bin: %s", je.text);
    prov = json_object_get(doc, "prov");
    r.id = jstr(doc, "id");
    r.device = jstr(doc, "device");
    r.config_version = jstr(doc, "config_version");
    r.start = jint(doc, "window_start");
    r.end = jint(doc, "window_end");
    r.n = (uint32_t)jint(doc, "n");
    r.n_slots = (uint32_t)jint(doc, "n_slots");
    r.excluded = json_is_true(json_object_get(doc, "excluded"));
    r.exclude_reason = jstr(doc, "exclude_reason");
    r.exclude_detail = jstr(doc, "exclude_detail");
    r.closed_early = jstr(doc, "closed_early");
    r.interp_gap = (uint32_t)jint(prov, "interp_gap");
    r.period_ms = jint(prov, "period_ms");
    r.norm = jstr(prov, "norm");
    if (!r.excluded)
        names = bin_nodes(doc, &r);
    core_buf_init(&b, CORE_BUF_NO_CAP);
    cr_assert_eq(core_wbin_encode(&r, &b), CORE_OK);
    cr_assert_eq(core_buf_status(&b), CORE_OK);
    for (size_t i = 0; i < r.n_nodes; i++)
        free((void *)r.node[i].imputed);
    free(r.node);
    json_decref(names);
    json_decref(doc);
    return (unsigned char *)core_buf_take(&b, len);
}
