/* test_offsets.c - offset low watermark, per-window source ranges, partition revocation. */
#include "ing_test.h"

static enum ing_reason push_p(struct ing_engine *e, struct ing_sink *s, const char *dev,
                              long long ts, int32_t part, long long off)
{
    char buf[200];
    int n = snprintf(buf, sizeof(buf),
                     "{\"schema\":\"gcdp.reading/1\",\"device\":\"%s\","
                     "\"ts\":%lld,\"readings\":{\"temperature\":20}}",
                     dev, ts);
    return push_raw(e, s, buf, (size_t)n, dev, part, off, 0);
}

static struct ing_params five_min(int late_min)
{
    struct ing_params p;
    ing_params_default(&p);
    p.window_ms = p.hop_ms = 5 * T_MIN;
    p.lateness_ms = late_min * T_MIN;
    p.min_coverage = 0;
    return p;
}

Test(offsets, low_watermark_tracks_oldest_buffered_offset)
{
    struct ing_params p = five_min(0);
    struct ing_engine *e = mk_engine(&p);
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    int64_t lw = -1;

    cr_assert_not(ing_engine_low_watermark(e, 0, &lw), "nothing held yet");
    /* two devices interleaved on partition 0: a at even, b at odd offsets */
    for (int k = 0; k < 5; k++) {
        push_p(e, &s, "a", T0 + k * T_MIN, 0, 2 * k);
        push_p(e, &s, "b", T0 + k * T_MIN, 0, 2 * k + 1);
    }
    cr_assert(ing_engine_low_watermark(e, 0, &lw));
    cr_assert_eq(lw, 0);
    /* a's window closes (offsets 0..8 of a released), b still holds offset 1 */
    push_p(e, &s, "a", T0 + 5 * T_MIN, 0, 10);
    cr_assert_eq(json_array_size(c.windows), 1);
    cr_assert(ing_engine_low_watermark(e, 0, &lw));
    cr_assert_eq(lw, 1);
    push_p(e, &s, "b", T0 + 5 * T_MIN, 0, 11);
    cr_assert(ing_engine_low_watermark(e, 0, &lw));
    cr_assert_eq(lw, 10, "only the readings of the open windows remain held");
    cr_assert_not(ing_engine_low_watermark(e, 1, &lw), "other partition holds nothing");
    /* rejected messages are never held */
    push_raw(e, &s, "garbage", 7, "a", 0, 12, 0);
    cr_assert(ing_engine_low_watermark(e, 0, &lw));
    cr_assert_eq(lw, 10);
    ing_engine_flush(e, &s);
    cr_assert_not(ing_engine_low_watermark(e, 0, &lw), "flush releases everything");
    coll_free(&c);
    ing_engine_free(e);
}

Test(offsets, out_of_order_offsets_use_minimum)
{
    struct ing_params p = five_min(5);
    struct ing_engine *e = mk_engine(&p);
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    int64_t lw;

    push_p(e, &s, "a", T0 + 3 * T_MIN, 2, 100);
    push_p(e, &s, "a", T0 + 1 * T_MIN, 2, 101); /* earlier ts, later offset: sorted first */
    cr_assert(ing_engine_low_watermark(e, 2, &lw));
    cr_assert_eq(lw, 100);
    coll_free(&c);
    ing_engine_free(e);
}

Test(offsets, window_reports_its_offset_range)
{
    struct ing_params p = five_min(0);
    struct ing_engine *e = mk_engine(&p);
    struct coll c;
    struct ing_sink s = coll_sink(&c);

    for (int k = 0; k < 6; k++)
        push_p(e, &s, "a", T0 + k * T_MIN, 4, 50 + 3 * k);
    cr_assert_eq(json_array_size(c.windows), 1);
    cr_assert_eq(c.n_src[0], 1);
    cr_assert_eq(c.src[0][0].partition, 4);
    cr_assert_eq(c.src[0][0].min_offset, 50);
    cr_assert_eq(c.src[0][0].max_offset, 62);
    coll_free(&c);
    ing_engine_free(e);
}

Test(offsets, forget_partition_drops_its_devices_only)
{
    struct ing_params p = five_min(0);
    struct ing_engine *e = mk_engine(&p);
    struct ing_counters k;
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    int64_t lw;

    for (int i = 0; i < 3; i++) {
        push_p(e, &s, "a", T0 + i * T_MIN, 0, i);
        push_p(e, &s, "b", T0 + i * T_MIN, 1, i);
    }
    cr_assert_eq(ing_engine_forget_partition(e, 0), 3);
    cr_assert_not(ing_engine_low_watermark(e, 0, &lw));
    cr_assert(ing_engine_low_watermark(e, 1, &lw));
    ing_engine_counters(e, &k);
    cr_assert_eq(k.forgotten, 3);
    cr_assert_eq(k.devices, 1);
    cr_assert_eq(k.buffered, 3);
    /* "a" comes back (partition reassigned): fresh state, its old ts is not a duplicate */
    cr_assert_eq(push_p(e, &s, "a", T0, 0, 0), ING_R_NONE);
    ing_engine_flush(e, &s);
    cr_assert_eq(json_array_size(c.windows), 2);
    coll_free(&c);
    ing_engine_free(e);
}

Test(offsets, many_devices_fit)
{
    struct ing_params p = five_min(0);
    struct ing_engine *e = mk_engine(&p);
    struct ing_counters k;
    struct coll c;
    struct ing_sink s = {NULL, NULL, NULL};
    char dev[32];

    (void)c;
    for (int d = 0; d < 10000; d++) {
        snprintf(dev, sizeof(dev), "mote-%d", d);
        for (int i = 0; i < 6; i++)
            cr_assert_eq(push_p(e, &s, dev, T0 + i * T_MIN, d % 4, d * 6 + i), ING_R_NONE);
    }
    ing_engine_counters(e, &k);
    cr_assert_eq(k.devices, 10000);
    cr_assert_eq(k.windows_emitted, 10000);
    cr_assert_eq(k.buffered, 10000, "one reading of the next window per device");
    ing_engine_free(e);
}

Test(devices, ttl_evicts_idle_entries_and_lookups_survive_deletion)
{
    struct ing_params p = five_min(0);
    struct ing_engine *e;
    struct ing_counters k;
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    char dev[32], buf[200];
    int n;

    p.idle_timeout_ms = 1000;
    p.device_ttl_ms = 5000;
    p.max_devices = 600;
    e = mk_engine(&p);
    for (int d = 0; d < 500; d++) {
        snprintf(dev, sizeof(dev), "d%d", d);
        n = snprintf(buf, sizeof(buf),
                     "{\"schema\":\"gcdp.reading/1\",\"device\":\"%s\","
                     "\"ts\":%lld,\"readings\":{\"temperature\":20}}",
                     dev, T0);
        cr_assert_eq(push_raw(e, &s, buf, (size_t)n, dev, 0, d, d < 250 ? 0 : 3000), ING_R_NONE);
    }
    ing_engine_tick(e, 3000, &s); /* devices d0..d249 idle-closed */
    ing_engine_counters(e, &k);
    cr_assert_eq(k.idle_closes, 250);
    cr_assert_eq(k.open_devices, 250);
    ing_engine_tick(e, 5000, &s); /* d250.. closed; d0..d249 older than the TTL: dropped */
    ing_engine_counters(e, &k);
    cr_assert_eq(k.devices_evicted, 250);
    cr_assert_eq(k.devices, 250);
    cr_assert_eq(json_array_size(c.windows), 500);
    for (int d = 0; d < 500; d++) {
        snprintf(dev, sizeof(dev), "d%d", d);
        n = snprintf(buf, sizeof(buf),
                     "{\"schema\":\"gcdp.reading/1\",\"device\":\"%s\","
                     "\"ts\":%lld,\"readings\":{\"temperature\":20}}",
                     dev, T0 + T_MIN);
        /* kept entries still know their window closed; dropped ones start afresh */
        cr_assert_eq(push_raw(e, &s, buf, (size_t)n, dev, 0, 1000 + d, 6000),
                     d < 250 ? ING_R_NONE : ING_R_LATE, "device %s", dev);
    }
    ing_engine_counters(e, &k);
    cr_assert_eq(k.devices, 500);
    coll_free(&c);
    ing_engine_free(e);
}
