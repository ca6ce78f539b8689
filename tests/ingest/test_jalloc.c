/* test_jalloc.c - the per-engine jansson parse arena (core/jalloc.h): routing only inside
 * a parse on this thread, fallback to malloc for big documents (no leak: the ASan+UBSan
 * build runs these with leak detection), nesting, threads, replaced hooks. */
#include <threads.h>

#include "alg/window.h"
#include "core/jalloc.h"
#include "ing_test.h"

static const char reading[] =
    "{\"schema\":\"gcdp.reading/1\",\"device\":\"m1\",\"ts\":1423072800000,"
    "\"readings\":{\"temperature\":21.5,\"humidity\":null},\"seq\":3}";

Test(jalloc, typical_reading_comes_entirely_from_the_arena)
{
    struct core_jalloc *a = core_jalloc_new(ING_JALLOC_BYTES);
    struct core_jalloc_stats st;
    json_error_t err;
    json_t *v = core_jalloc_parse(a, reading, strlen(reading), JSON_REJECT_DUPLICATES, &err);

    cr_assert_not_null(v, "%s", err.text);
    cr_assert(core_jalloc_owns(a, v));
    cr_assert(core_jalloc_owns(a, json_object_get(v, "readings")));
    cr_assert_float_eq(
        json_real_value(json_object_get(json_object_get(v, "readings"), "temperature")), 21.5, 0.0);
    cr_assert_str_eq(json_string_value(json_object_get(v, "device")), "m1");
    core_jalloc_stats(a, &st);
    cr_assert(st.hooks_active);
    cr_assert_gt(st.blocks, 10);
    cr_assert_eq(st.fallbacks, 0);
    cr_assert_gt(st.used, 0);
    cr_assert_lt(st.used, ING_JALLOC_BYTES / 8, "a reading needs a few KiB at most");
    core_jalloc_release(a, v);
    /* The arena is reused from its start by the next message. */
    v = core_jalloc_parse(a, reading, strlen(reading), 0, &err);
    cr_assert_not_null(v);
    core_jalloc_stats(a, &st);
    cr_assert_lt(st.used, ING_JALLOC_BYTES / 8);
    core_jalloc_release(a, v);
    core_jalloc_free(a);
}

/* A document needing more than the arena falls back to malloc block by block; the result
 * is complete and json_decref (inside release) frees the malloc'd part. */
Test(jalloc, document_larger_than_the_arena_falls_back_without_leaking)
{
    struct core_jalloc *a = core_jalloc_new(1024);
    struct core_jalloc_stats st;
    size_t cap = 5 + 2000 * 8, n = 0;
    char *doc = malloc(cap);
    long long sum = 0;
    json_t *v, *arr;

    n += (size_t)snprintf(doc + n, cap - n, "{\"x\":[");
    for (int i = 0; i < 2000; i++)
        n += (size_t)snprintf(doc + n, cap - n, "%s%d", i ? "," : "", i);
    n += (size_t)snprintf(doc + n, cap - n, "]}");
    v = core_jalloc_parse(a, doc, n, 0, NULL);
    cr_assert_not_null(v);
    arr = json_object_get(v, "x");
    cr_assert_eq(json_array_size(arr), 2000);
    for (size_t i = 0; i < 2000; i++)
        sum += json_integer_value(json_array_get(arr, i));
    cr_assert_eq(sum, 1999LL * 2000 / 2);
    core_jalloc_stats(a, &st);
    cr_assert_gt(st.fallbacks, 1000, "most blocks cannot fit in 1 KiB");
    cr_assert_gt(st.blocks, 0);
    core_jalloc_release(a, v); /* LeakSanitizer (ASan build) checks nothing is left */
    free(doc);
    core_jalloc_free(a);
}

/* Failed parses free their partial trees through the hooks: nothing may break. */
Test(jalloc, failed_parses_release_cleanly)
{
    static const char *const bad[] = {"{\"a\":[1,2,{\"b\":", "{\"a\":1,\"a\":2}", "[1,2] x",
                                      "{\"s\":\"\\u0000\"}", ""};
    struct core_jalloc *a = core_jalloc_new(256); /* small: mixes arena and malloc blocks */

    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        json_error_t err;
        json_t *v = core_jalloc_parse(a, bad[i], strlen(bad[i]), JSON_REJECT_DUPLICATES, &err);
        cr_assert_null(v, "'%s' parsed", bad[i]);
        core_jalloc_release(a, v);
    }
    core_jalloc_free(a);
}

/* Inside a scope but outside json_loadb (where sink callbacks run), jansson allocations
 * come from malloc and outlive the scope. */
Test(jalloc, allocations_outside_the_parse_are_not_from_the_arena)
{
    struct core_jalloc *a = core_jalloc_new(ING_JALLOC_BYTES);
    json_t *v = core_jalloc_parse(a, reading, strlen(reading), 0, NULL);
    json_t *kept = json_pack("{s:s, s:[i,i]}", "k", "value", "l", 1, 2);
    json_t *parsed = json_loads(reading, 0, NULL);
    char *dump;

    cr_assert_not_null(v);
    cr_assert_not_null(kept);
    cr_assert_not_null(parsed);
    cr_assert_not(core_jalloc_owns(a, kept));
    cr_assert_not(core_jalloc_owns(a, parsed));
    cr_assert_not(core_jalloc_owns(a, json_object_get(parsed, "readings")));
    core_jalloc_release(a, v);
    /* The arena was reset and will be overwritten by the next parse: kept objects intact. */
    v = core_jalloc_parse(a, "{\"zzzzzzzzzzzzzzzz\":[9,9,9,9]}", 30, 0, NULL);
    cr_assert_not_null(v);
    core_jalloc_release(a, v);
    dump = json_dumps(kept, JSON_COMPACT | JSON_SORT_KEYS);
    cr_assert_str_eq(dump, "{\"k\":\"value\",\"l\":[1,2]}");
    free(dump); /* json_dumps memory is still plain malloc memory */
    cr_assert_str_eq(json_string_value(json_object_get(parsed, "device")), "m1");
    json_decref(kept);
    json_decref(parsed);
    core_jalloc_free(a);
}

/* An engine pushed from inside another engine's sink callback: scopes nest. */
struct nest {
    struct ing_engine *inner;
    int calls;
};

static void nest_on_window(void *arg, const char *key, size_t key_len, const char *json, size_t len,
                           const struct ing_window_info *info)
{
    struct nest *n = arg;
    struct ing_source src = {"inner", 0, n->calls};
    enum ing_reason r;
    json_t *copy = json_loadb(json, len, 0, NULL); /* callback's own, kept past the push */

    (void)key, (void)key_len, (void)info;
    cr_assert_not_null(copy);
    cr_assert_not(core_jalloc_owns(n->inner->ja, copy));
    cr_assert_eq(ing_engine_push(n->inner, reading, strlen(reading), "m1", 2, &src, 0, NULL, &r),
                 CORE_OK);
    n->calls++;
    json_decref(copy);
}

Test(jalloc, scopes_nest_across_engines)
{
    struct ing_params p;
    struct ing_engine *outer;
    struct nest n = {NULL, 0};
    struct ing_sink s = {nest_on_window, NULL, &n};
    struct ing_counters k;

    ing_params_default(&p);
    p.out_format = ING_OUT_JSON; /* the sinks below parse the gcdp.window/2 text */
    p.lateness_ms = 0;
    outer = mk_engine(&p);
    n.inner = mk_engine(&p);
    /* Readings 20 minutes apart: each push closes the previous window inside the push, with
     * the outer engine's tree still alive. */
    for (int i = 0; i < 5; i++)
        cr_assert_eq(push_t(outer, &s, "m1", T0 + i * 20 * T_MIN, 20, i), ING_R_NONE);
    cr_assert_eq(n.calls, 4);
    ing_engine_counters(n.inner, &k);
    cr_assert_eq(k.consumed, 4);
    ing_engine_free(n.inner);
    ing_engine_free(outer);
}

/* Two engines on two threads and a third thread using jansson on its own, concurrently. */
#define THREAD_N 3000

struct worker {
    int id;
    uint64_t accepted, windows;
    bool ok;
};

static void count_window(void *arg, const char *key, size_t key_len, const char *json, size_t len,
                         const struct ing_window_info *info)
{
    struct worker *w = arg;
    json_t *v = json_loadb(json, len, 0, NULL);

    (void)key, (void)key_len, (void)info;
    if (!v || json_integer_value(json_object_get(v, "n")) <= 0)
        w->ok = false;
    json_decref(v);
    w->windows++;
}

static int engine_thread(void *arg)
{
    struct worker *w = arg;
    struct ing_params p;
    struct ing_engine *e;
    struct ing_sink s = {count_window, NULL, w};
    struct ing_counters k;

    ing_params_default(&p);
    p.out_format = ING_OUT_JSON; /* the sinks below parse the gcdp.window/2 text */
    e = ing_engine_new(&p, NULL, 0);
    if (!e)
        return 1;
    for (int i = 0; i < THREAD_N; i++) {
        char buf[200], dev[16];
        struct ing_source src = {"t", w->id, i};
        enum ing_reason r;
        int n;
        snprintf(dev, sizeof(dev), "d%d", i % 7);
        n = snprintf(buf, sizeof(buf),
                     "{\"schema\":\"gcdp.reading/1\",\"device\":\"%s\",\"ts\":%lld,"
                     "\"readings\":{\"temperature\":%d.25,\"co2\":%d}}",
                     dev, T0 + (long long)(i / 7) * T_MIN, 15 + i % 10, 400 + i % 50);
        if (ing_engine_push(e, buf, (size_t)n, dev, strlen(dev), &src, 0, &s, &r) != CORE_OK ||
            r != ING_R_NONE)
            w->ok = false;
    }
    ing_engine_flush(e, &s);
    ing_engine_counters(e, &k);
    w->accepted = k.accepted;
    ing_engine_free(e);
    return 0;
}

static int plain_thread(void *arg)
{
    struct worker *w = arg;
    json_t *keep = json_array();

    for (int i = 0; i < THREAD_N; i++) {
        json_t *v = json_loads(reading, 0, NULL);
        if (!v) {
            w->ok = false;
            break;
        }
        json_array_append_new(keep, v); /* kept across many engine parses on other threads */
        if (json_array_size(keep) > 64)
            json_array_remove(keep, 0);
    }
    for (size_t i = 0; i < json_array_size(keep); i++)
        if (strcmp(json_string_value(json_object_get(json_array_get(keep, i), "device")), "m1"))
            w->ok = false;
    json_decref(keep);
    return 0;
}

Test(jalloc, engines_on_threads_and_other_jansson_users_do_not_interfere)
{
    struct worker w[3] = {{0, 0, 0, true}, {1, 0, 0, true}, {2, 0, 0, true}};
    thrd_t t[3];

    ing_engine_global_init();
    cr_assert_eq(thrd_create(&t[0], engine_thread, &w[0]), thrd_success);
    cr_assert_eq(thrd_create(&t[1], engine_thread, &w[1]), thrd_success);
    cr_assert_eq(thrd_create(&t[2], plain_thread, &w[2]), thrd_success);
    for (int i = 0; i < 3; i++)
        thrd_join(t[i], NULL);
    for (int i = 0; i < 3; i++)
        cr_assert(w[i].ok, "worker %d saw a bad parse or record", i);
    cr_assert_eq(w[0].accepted, THREAD_N);
    cr_assert_eq(w[1].accepted, THREAD_N);
    cr_assert_eq(w[0].windows, w[1].windows);
    cr_assert_gt(w[0].windows, 7 * 20);
}

/* If someone replaces jansson's hooks after ours, the arena gets nothing and release
 * falls back to json_decref (no leak, no bad free). */
Test(jalloc, replaced_hooks_are_detected)
{
    struct core_jalloc *a = core_jalloc_new(ING_JALLOC_BYTES);
    struct core_jalloc_stats st;
    json_malloc_t m;
    json_free_t f;
    json_t *v;

    json_get_alloc_funcs(&m, &f);
    json_set_alloc_funcs(malloc, free);
    v = core_jalloc_parse(a, reading, strlen(reading), 0, NULL);
    cr_assert_not_null(v);
    cr_assert_not(core_jalloc_owns(a, v));
    core_jalloc_stats(a, &st);
    cr_assert_not(st.hooks_active);
    cr_assert_eq(st.blocks, 0);
    core_jalloc_release(a, v);
    json_set_alloc_funcs(m, f);
    core_jalloc_free(a);
}

/* ing_engine_parse_only (the bench's jansson floor): the engine's parse and nothing else —
 * true for a reading, false for what jansson rejects (including a duplicate member, which
 * the engine's flags forbid), nothing counted, nothing emitted, the arena reused. */
Test(jalloc, parse_only_parses_with_the_engine_flags_and_counts_nothing)
{
    struct ing_params p;
    struct ing_counters c;
    char eb[256];
    struct ing_engine *e;
    static const char dup[] = "{\"device\":\"m1\",\"device\":\"m2\"}";

    ing_params_default(&p);
    p.out_format = ING_OUT_JSON; /* the sinks below parse the gcdp.window/2 text */
    e = ing_engine_new(&p, eb, sizeof(eb));
    cr_assert_not_null(e, "%s", eb);
    for (int i = 0; i < 1000; i++)
        cr_assert(ing_engine_parse_only(e, reading, strlen(reading)));
    cr_assert_not(ing_engine_parse_only(e, dup, strlen(dup)));
    cr_assert_not(ing_engine_parse_only(e, "{\"a\":", 5));
    cr_assert(ing_engine_parse_only(e, "7", 1), "JSON_DECODE_ANY: a scalar parses");
    cr_assert_not(ing_engine_parse_only(e, NULL, 0));
    ing_engine_counters(e, &c);
    cr_assert_eq(c.consumed, 0);
    cr_assert_eq(c.accepted, 0);
    ing_engine_free(e);
}
