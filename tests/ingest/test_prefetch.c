/* test_prefetch.c - ing_engine_prefetch is a hint only: an engine given it for every message
 * some messages ahead (as the service's consumer look-ahead does) emits exactly what an
 * engine without it emits, also while devices are evicted, partitions forgotten and keys
 * are missing, foreign or too long for a device id. */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "ing_test.h"

#define N_MSG     12000
#define N_DEV     300
#define LOOKAHEAD 4

struct msg {
    char payload[256];
    size_t len;
    char key[80];
    bool has_key;
    int32_t part;
    long long now;
};

/* Message i: mostly device i % N_DEV in order; every 97th a key that is not the device,
 * every 89th no key, every 83rd a 70-byte key (longer than any device id). */
static void make_msg(struct msg *m, int i)
{
    int d = (i * 7) % N_DEV;
    char dev[32];
    int n;

    snprintf(dev, sizeof(dev), "mote-%d", d);
    n = snprintf(m->payload, sizeof(m->payload),
                 "{\"schema\":\"gcdp.reading/1\",\"device\":\"%s\",\"ts\":%lld,"
                 "\"readings\":{\"temperature\":%.2f,\"humidity\":%.1f}}",
                 dev, 1793491200000LL + 60000LL * (i / N_DEV), 15.0 + (i % 50) * 0.3,
                 30.0 + d % 40);
    m->len = (size_t)n;
    m->has_key = i % 89 != 0;
    if (i % 83 == 0)
        memset(m->key, 'k', 70), m->key[70] = '\0';
    else if (i % 97 == 0)
        snprintf(m->key, sizeof(m->key), "other-%d", i);
    else
        snprintf(m->key, sizeof(m->key), "%s", dev);
    m->part = d % 3;
    m->now = 1000LL * i; /* processing time: 12,000 s over the run, so devices go idle */
}

static void run(struct ing_engine *e, const struct ing_sink *s, const struct msg *ms, bool prefetch)
{
    for (int i = 0; i < N_MSG; i++) {
        const struct msg *m = &ms[i];
        if (prefetch && i == 0)
            for (int j = 0; j < LOOKAHEAD; j++)
                ing_engine_prefetch(e, ms[j].payload, ms[j].len, ms[j].has_key ? ms[j].key : NULL,
                                    strlen(ms[j].key));
        if (prefetch && i + LOOKAHEAD < N_MSG) {
            const struct msg *a = &ms[i + LOOKAHEAD];
            ing_engine_prefetch(e, a->payload, a->len, a->has_key ? a->key : NULL, strlen(a->key));
        }
        push_raw(e, s, m->payload, m->len, m->has_key ? m->key : NULL, m->part, i, m->now);
        if (i % 700 == 699)
            ing_engine_tick(e, m->now, s); /* idle closes and device evictions */
        if (i % 4000 == 3999)
            (void)ing_engine_forget_partition(e, 1); /* frees devices and their buffers */
    }
    ing_engine_flush(e, s);
}

Test(prefetch, changes_no_record_counter_or_reason)
{
    static struct msg ms[N_MSG];
    struct ing_params p;
    struct ing_engine *plain, *hinted;
    struct coll cp, ch;
    struct ing_sink sp = coll_sink(&cp), sh = coll_sink(&ch);
    struct ing_counters a, b;

    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));

    for (int i = 0; i < N_MSG; i++)
        make_msg(&ms[i], i);
    ing_params_default(&p);
    p.key_policy = ING_KEY_MATCH;
    p.idle_timeout_ms = 400000;
    p.device_ttl_ms = 800000;
    plain = mk_engine(&p);
    hinted = mk_engine(&p);
    run(plain, &sp, ms, false);
    run(hinted, &sh, ms, true);
    ing_engine_counters(plain, &a);
    ing_engine_counters(hinted, &b);
    cr_assert_gt(json_array_size(cp.raw_windows), 100);
    cr_assert_gt(json_array_size(cp.rejects), 100); /* the foreign keys */
    cr_assert_gt(a.devices_evicted, 0);
    cr_assert_gt(a.forgotten, 0);
    cr_assert(json_equal(cp.raw_windows, ch.raw_windows), "window records differ");
    cr_assert(json_equal(cp.rejects, ch.rejects), "dead letters differ");
    cr_assert_eq(memcmp(&a, &b, sizeof(a)), 0, "counters differ");
    coll_free(&cp);
    coll_free(&ch);
    ing_engine_free(plain);
    ing_engine_free(hinted);
}
