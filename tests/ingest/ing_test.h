/* ing_test.h - helpers for the ingest engine suites: a sink that keeps every record. A
 * gcdp.window/3 record (ingest.output.format = binary, the default) is kept as the
 * gcdp.window/2 JSON text it encodes (core_wbin_to_json), so the suites check the content of
 * either encoding. */
#ifndef ING_TEST_H
#define ING_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "core/window_bin.h"
#include "ing/engine.h"

#define T_MIN   60000LL
#define T0      1423072800000LL /* 2015-02-04T18:00:00Z, on the 15-min grid */
#define MAX_SRC 8

struct coll {
    json_t *windows;     /* array of parsed window records */
    json_t *rejects;     /* array of parsed dead letters */
    json_t *raw_windows; /* array of the exact JSON texts */
    struct ing_src_range src[64][MAX_SRC];
    size_t n_src[64];
};

static inline void coll_on_window(void *arg, const char *key, size_t key_len, const char *rec,
                                  size_t rec_len, const struct ing_window_info *info)
{
    struct coll *c = arg;
    struct core_buf text;
    struct core_wrec r;
    json_error_t err;
    const char *json = rec;
    size_t len = rec_len, i = json_array_size(c->windows);
    char eb[256] = "";
    json_t *v;

    core_buf_init(&text, CORE_BUF_NO_CAP);
    core_wrec_init(&r);
    if (core_wbin_is(rec, rec_len)) {
        cr_assert_eq(core_wbin_decode(rec, rec_len, &r, eb, sizeof(eb)), CORE_OK, "%s", eb);
        core_wbin_to_json(&r, &text);
        cr_assert_eq(core_buf_status(&text), CORE_OK);
        json = text.p;
        len = text.len;
    }
    v = json_loadb(json, len, 0, &err);
    cr_assert_not_null(v, "window record is not JSON: %s (%.200s)", err.text, json);
    cr_assert_eq(rec[rec_len], '\0');
    cr_assert_eq(key_len, strlen(info->device));
    cr_assert_eq(memcmp(key, info->device, key_len), 0);
    if (i < 64) {
        c->n_src[i] = info->n_src < MAX_SRC ? info->n_src : MAX_SRC;
        memcpy(c->src[i], info->src, c->n_src[i] * sizeof(*info->src));
    }
    json_array_append_new(c->windows, v);
    json_array_append_new(c->raw_windows, json_stringn(json, len));
    core_wrec_cleanup(&r);
    core_buf_cleanup(&text);
}

static inline void coll_on_reject(void *arg, const char *key, size_t key_len, const char *json,
                                  size_t len, const struct ing_reject_info *info)
{
    struct coll *c = arg;
    json_error_t err;
    json_t *v = json_loadb(json, len, 0, &err);

    (void)key;
    (void)key_len;
    cr_assert_not_null(v, "dead letter is not JSON: %s (%.200s)", err.text, json);
    cr_assert_str_eq(json_string_value(json_object_get(v, "reason")),
                     ing_reason_code(info->reason));
    json_array_append_new(c->rejects, v);
}

static inline struct ing_sink coll_sink(struct coll *c)
{
    memset(c, 0, sizeof(*c));
    c->windows = json_array();
    c->rejects = json_array();
    c->raw_windows = json_array();
    return (struct ing_sink){coll_on_window, coll_on_reject, c};
}

static inline void coll_free(struct coll *c)
{
    json_decref(c->windows);
    json_decref(c->rejects);
    json_decref(c->raw_windows);
}

/* Engine with defaults edited by the caller's params; fails the test if invalid. */
static inline struct ing_engine *mk_engine(const struct ing_params *p)
{
    char eb[256] = "";
    struct ing_engine *e = ing_engine_new(p, eb, sizeof(eb));
    cr_assert_not_null(e, "engine rejected params: %s", eb);
    return e;
}

/* Push a reading {"temperature": temp} for device at epoch ms ts (key = device). */
static inline enum ing_reason push_t(struct ing_engine *e, const struct ing_sink *s,
                                     const char *dev, long long ts, double temp, long long off)
{
    char buf[256];
    struct ing_source src = {"sensors.raw", 0, off};
    enum ing_reason r = ING_R_NONE;
    int n = snprintf(buf, sizeof(buf),
                     "{\"schema\":\"gcdp.reading/1\",\"device\":\"%s\",\"ts\":%lld,"
                     "\"readings\":{\"temperature\":%.17g}}",
                     dev, ts, temp);
    cr_assert_eq(ing_engine_push(e, buf, (size_t)n, dev, strlen(dev), &src, 0, s, &r), CORE_OK);
    return r;
}

/* Push raw text with a key and a processing time. */
static inline enum ing_reason push_raw(struct ing_engine *e, const struct ing_sink *s,
                                       const char *payload, size_t len, const char *key,
                                       int32_t part, long long off, long long now)
{
    struct ing_source src = {"sensors.raw", part, off};
    enum ing_reason r = ING_R_NONE;
    cr_assert_eq(ing_engine_push(e, payload, len, key, key ? strlen(key) : 0, &src, now, s, &r),
                 CORE_OK);
    return r;
}

static inline json_t *win_at(const struct coll *c, size_t i)
{
    cr_assert_lt(i, json_array_size(c->windows));
    return json_array_get(c->windows, i);
}

static inline long long jint(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    cr_assert(json_is_integer(v), "member %s is not an integer", k);
    return (long long)json_integer_value(v);
}

static inline double jnode(const json_t *w, const char *node)
{
    const json_t *v = json_object_get(json_object_get(w, "nodes"), node);
    cr_assert(json_is_number(v), "node %s missing", node);
    return json_number_value(v);
}

/* Temperature clip in the default channels is [10, 40]. */
static inline double norm_t(double x)
{
    double c = x < 10 ? 10 : x > 40 ? 40 : x;
    return (c - 10) / 30;
}

#endif /* ING_TEST_H */
