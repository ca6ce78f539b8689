/* test_guards.c - ingest.max_jump_ms (ts_jump) and ingest.max_future_ms (ts_in_future):
 * one reading far ahead must not close a device's windows (docs/ingest.md "Time guards"). */
#include "core/kconf.h"
#include "ing/config.h"
#include "ing_test.h"

#define DAY (1440 * T_MIN)

/* Readings of "m1" at T0 + i minutes, i in [from, to), temperature 20 + i/10. */
static void stream(struct ing_engine *e, struct ing_sink *s, int from, int to, long long *off,
                   long long now)
{
    for (int i = from; i < to; i++) {
        char buf[200];
        int n = snprintf(buf, sizeof(buf),
                         "{\"schema\":\"gcdp.reading/1\",\"device\":\"m1\",\"ts\":%lld,"
                         "\"readings\":{\"temperature\":%.1f}}",
                         T0 + i * T_MIN, 20.0 + i / 10.0);
        cr_assert_eq(push_raw(e, s, buf, (size_t)n, "m1", 0, (*off)++, now), ING_R_NONE,
                     "reading %d rejected", i);
    }
}

static const char *reason_of(const struct coll *c, size_t i)
{
    cr_assert_lt(i, json_array_size(c->rejects));
    return json_string_value(json_object_get(json_array_get(c->rejects, i), "reason"));
}

Test(guards, far_future_reading_is_ts_jump_and_windows_stay_open)
{
    struct ing_params p;
    struct ing_engine *e;
    struct ing_counters k;
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    long long off = 0;
    static const char wrong[] =
        "{\"schema\":\"gcdp.reading/1\",\"device\":\"m1\","
        "\"ts\":\"2015-03-04T18:00:00Z\",\"readings\":{\"temperature\":21}}";

    ing_params_default(&p); /* max_jump_ms = 1 day, 15-min windows, 2-min lateness */
    cr_assert_eq(p.max_jump_ms, DAY);
    cr_assert_eq(p.max_future_ms, 0, "processing-time guard off by default");
    e = mk_engine(&p);
    stream(e, &s, 0, 20, &off, 0);
    /* One reading 28 days ahead (a wrong clock), then the normal stream goes on. */
    cr_assert_eq(push_raw(e, &s, wrong, strlen(wrong), "m1", 0, off++, 0), ING_R_TS_JUMP);
    stream(e, &s, 20, 45, &off, 0);
    ing_engine_flush(e, &s);
    ing_engine_counters(e, &k);
    cr_assert_eq(k.accepted, 45);
    cr_assert_eq(k.rejected, 1);
    cr_assert_eq(k.rejected_by_reason[ING_R_TS_JUMP], 1);
    cr_assert_eq(k.late, 0, "no normal reading may become late");
    cr_assert_eq(json_array_size(c.windows), 3, "three full 15-min windows");
    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(jint(win_at(&c, i), "window_start"), T0 + (long long)i * 15 * T_MIN);
        cr_assert_eq(jint(win_at(&c, i), "n"), 15);
    }
    /* The dead letter keeps the payload verbatim and names the key, not the value. */
    cr_assert_str_eq(reason_of(&c, 0), "ts_jump");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(c.rejects, 0), "payload")),
                     wrong);
    cr_assert_not_null(
        strstr(json_string_value(json_object_get(json_array_get(c.rejects, 0), "detail")),
               "ingest.max_jump_ms"));
    coll_free(&c);
    ing_engine_free(e);
}

/* What the guard prevents: with it off, the same input makes the normal readings late. */
Test(guards, without_the_guard_the_stream_after_a_far_reading_is_late)
{
    struct ing_params p;
    struct ing_engine *e;
    struct ing_counters k;
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    long long off = 0;

    ing_params_default(&p);
    p.max_jump_ms = 0;
    e = mk_engine(&p);
    stream(e, &s, 0, 20, &off, 0);
    cr_assert_eq(push_t(e, &s, "m1", T0 + 28 * DAY, 21, off++), ING_R_NONE);
    for (int i = 20; i < 45; i++)
        cr_assert_eq(push_t(e, &s, "m1", T0 + i * T_MIN, 21, off++), ING_R_LATE);
    ing_engine_counters(e, &k);
    cr_assert_eq(k.late, 25);
    coll_free(&c);
    ing_engine_free(e);
}

Test(guards, jump_boundary_is_inclusive)
{
    struct ing_params p;
    struct ing_engine *e;
    struct coll c;
    struct ing_sink s = coll_sink(&c);

    ing_params_default(&p);
    p.max_jump_ms = 60 * T_MIN;
    e = mk_engine(&p);
    cr_assert_eq(push_t(e, &s, "m1", T0, 20, 0), ING_R_NONE);
    /* Slot times are compared: +60 min is allowed, +61 min is not. */
    cr_assert_eq(push_t(e, &s, "m1", T0 + 61 * T_MIN, 20, 1), ING_R_TS_JUMP);
    cr_assert_eq(push_t(e, &s, "m1", T0 + 60 * T_MIN, 20, 2), ING_R_NONE);
    cr_assert_eq(push_t(e, &s, "m1", T0 + 121 * T_MIN, 20, 3), ING_R_TS_JUMP);
    cr_assert_eq(push_t(e, &s, "m1", T0 + 120 * T_MIN + 29999, 20, 4), ING_R_NONE,
                 "snaps to +120 min: a jump of exactly max_jump_ms");
    coll_free(&c);
    ing_engine_free(e);
}

/* Replaying two disjoint periods of one device back to back (e.g. the UCI files
 * datatraining.txt then datatest2.txt, 29 hours apart): jump_confirm (3) consecutive
 * readings agreeing on the new time restart the device's stream; the first two are
 * dead-lettered ts_jump, the old windows are emitted, nothing becomes late. */
Test(guards, consistent_jump_restarts_the_stream_after_jump_confirm_readings)
{
    struct ing_params p;
    struct ing_engine *e;
    struct ing_counters k;
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    long long off = 0;

    ing_params_default(&p);
    cr_assert_eq(p.jump_confirm, 3);
    e = mk_engine(&p);
    stream(e, &s, 0, 20, &off, 0); /* T0 .. T0+19 min */
    cr_assert_eq(json_array_size(c.windows), 1, "[T0, T0+15) closed by the watermark");
    cr_assert_eq(push_t(e, &s, "m1", T0 + 2 * DAY, 20, off++), ING_R_TS_JUMP);
    cr_assert_eq(push_t(e, &s, "m1", T0 + 2 * DAY + T_MIN, 20, off++), ING_R_TS_JUMP);
    cr_assert_eq(json_array_size(c.windows), 1);
    cr_assert_eq(push_t(e, &s, "m1", T0 + 2 * DAY + 2 * T_MIN, 20, off++), ING_R_NONE,
                 "the third agreeing reading restarts the stream");
    cr_assert_eq(json_array_size(c.windows), 2, "the open window [T0+15, T0+30) was closed");
    cr_assert_eq(jint(win_at(&c, 1), "window_start"), T0 + 15 * T_MIN);
    for (int i = 3; i < 30; i++)
        cr_assert_eq(push_t(e, &s, "m1", T0 + 2 * DAY + i * T_MIN, 20, off++), ING_R_NONE);
    /* The old period's reading is now far behind: late, as for any closed window. */
    cr_assert_eq(push_t(e, &s, "m1", T0 + 20 * T_MIN, 20, off++), ING_R_LATE);
    ing_engine_counters(e, &k);
    cr_assert_eq(k.jump_restarts, 1);
    cr_assert_eq(k.rejected_by_reason[ING_R_TS_JUMP], 2);
    cr_assert_eq(k.accepted, 20 + 28);
    cr_assert_eq(k.late, 1);
    coll_free(&c);
    ing_engine_free(e);
}

/* Jumps that disagree with each other (random wrong clocks) never restart the stream, and
 * a normal reading in between resets the count; jump_confirm = 0 never restarts. */
Test(guards, disagreeing_or_interrupted_jumps_never_restart)
{
    struct ing_params p;
    struct ing_engine *e;
    struct ing_counters k;
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    long long off = 0;

    ing_params_default(&p);
    e = mk_engine(&p);
    stream(e, &s, 0, 5, &off, 0);
    cr_assert_eq(push_t(e, &s, "m1", T0 + 2 * DAY, 20, off++), ING_R_TS_JUMP);
    cr_assert_eq(push_t(e, &s, "m1", T0 + 10 * DAY, 20, off++), ING_R_TS_JUMP);
    cr_assert_eq(push_t(e, &s, "m1", T0 + 20 * DAY, 20, off++), ING_R_TS_JUMP);
    cr_assert_eq(push_t(e, &s, "m1", T0 + 2 * DAY, 20, off++), ING_R_TS_JUMP);
    cr_assert_eq(push_t(e, &s, "m1", T0 + 2 * DAY + T_MIN, 20, off++), ING_R_TS_JUMP);
    stream(e, &s, 5, 6, &off, 0); /* a normal reading: the run starts over */
    cr_assert_eq(push_t(e, &s, "m1", T0 + 2 * DAY + 2 * T_MIN, 20, off++), ING_R_TS_JUMP);
    ing_engine_counters(e, &k);
    cr_assert_eq(k.jump_restarts, 0);
    cr_assert_eq(k.rejected_by_reason[ING_R_TS_JUMP], 6);
    coll_free(&c);
    ing_engine_free(e);

    s = coll_sink(&c);
    p.jump_confirm = 0;
    e = mk_engine(&p);
    off = 0;
    stream(e, &s, 0, 5, &off, 0);
    for (int i = 0; i < 50; i++)
        cr_assert_eq(push_t(e, &s, "m1", T0 + 2 * DAY + i * T_MIN, 20, off++), ING_R_TS_JUMP);
    ing_engine_counters(e, &k);
    cr_assert_eq(k.jump_restarts, 0);
    coll_free(&c);
    ing_engine_free(e);
}

/* The jump guard only protects a device with buffered readings: a device resuming after
 * its windows were closed (idle timeout, flush) starts afresh, whatever the gap. */
Test(guards, device_resuming_after_idle_close_is_not_a_jump)
{
    struct ing_params p;
    struct ing_engine *e;
    struct ing_counters k;
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    long long off = 0;

    ing_params_default(&p);
    e = mk_engine(&p);
    stream(e, &s, 0, 15, &off, 1000);
    ing_engine_tick(e, 1000 + p.idle_timeout_ms, &s); /* idle close */
    ing_engine_counters(e, &k);
    cr_assert_eq(k.idle_closes, 1);
    cr_assert_eq(k.buffered, 0);
    cr_assert_eq(push_t(e, &s, "m1", T0 + 3 * DAY, 20, off++), ING_R_NONE);
    cr_assert_eq(push_t(e, &s, "m1", T0 + 3 * DAY + T_MIN, 20, off++), ING_R_NONE);
    coll_free(&c);
    ing_engine_free(e);
}

/* A simulator-like stream (sim/: ts = start + tick * period on a simulated clock far ahead
 * of processing time, with a 20-tick gap fault) passes the default guards untouched. */
Test(guards, simulated_clock_with_gaps_passes_the_defaults)
{
    struct ing_params p;
    struct ing_engine *e;
    struct ing_counters k;
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    long long off = 0, start = 1793491200000LL; /* sim.start_ms default, 2026-11-01 */

    ing_params_default(&p);
    e = mk_engine(&p);
    for (int tick = 0; tick < 3000; tick++) {
        if (tick >= 1000 && tick < 1020) /* gap fault: sim.gap_ticks = 20 */
            continue;
        cr_assert_eq(push_t(e, &s, "m1", start + tick * T_MIN, 20, off++), ING_R_NONE, "tick %d",
                     tick);
    }
    ing_engine_counters(e, &k);
    cr_assert_eq(k.rejected, 0);
    coll_free(&c);
    ing_engine_free(e);
}

Test(guards, max_future_ms_against_processing_time)
{
    struct ing_params p;
    struct ing_engine *e;
    struct ing_counters k;
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    long long now = T0 + 10 * T_MIN;
    static const char fut[] = "{\"schema\":\"gcdp.reading/1\",\"device\":\"m1\","
                              "\"ts\":1423073700001,\"readings\":{\"temperature\":21}}";
    static const char edge[] = "{\"schema\":\"gcdp.reading/1\",\"device\":\"m1\","
                               "\"ts\":1423073700000,\"readings\":{\"temperature\":21}}";

    ing_params_default(&p);
    p.max_future_ms = 5 * T_MIN; /* now + 5 min = 1423073700000 */
    e = mk_engine(&p);
    cr_assert_eq(push_raw(e, &s, fut, strlen(fut), "m1", 0, 0, now), ING_R_TS_IN_FUTURE);
    cr_assert_eq(push_raw(e, &s, edge, strlen(edge), "m1", 0, 1, now), ING_R_NONE,
                 "exactly now + max_future_ms is accepted");
    /* The same reading is fine once processing time has moved on. */
    cr_assert_eq(push_raw(e, &s, fut, strlen(fut), "m1", 0, 2, now + 1), ING_R_NONE);
    ing_engine_counters(e, &k);
    cr_assert_eq(k.rejected_by_reason[ING_R_TS_IN_FUTURE], 1);
    cr_assert_str_eq(reason_of(&c, 0), "ts_in_future");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(c.rejects, 0), "payload")),
                     fut);
    /* ts_in_future is checked right after ts_out_of_range, before seq and readings. */
    {
        static const char both[] = "{\"schema\":\"gcdp.reading/1\",\"device\":\"m1\","
                                   "\"ts\":1423080000000,\"readings\":{\"pressure\":1}}";
        cr_assert_eq(push_raw(e, &s, both, strlen(both), "m1", 0, 3, now), ING_R_TS_IN_FUTURE);
    }
    coll_free(&c);
    ing_engine_free(e);
}

static struct core_config *new_cfg(void)
{
    static const struct core_cfg_key *const tables[] = {core_config_keys, ing_config_keys};
    struct core_config *cfg = core_config_new(tables, 2);
    cr_assert_not_null(cfg);
    return cfg;
}

Test(guards, config_keys_are_read_and_checked)
{
    struct core_config *cfg = new_cfg();
    struct ing_params p;
    char eb[512] = "";

    cr_assert_eq(ing_params_from_config(cfg, &p, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(p.max_jump_ms, DAY);
    cr_assert_eq(p.max_future_ms, 0);
    cr_assert_eq(p.jump_confirm, 3);
    cr_assert_eq(core_config_set(cfg, "ingest.jump_confirm", "5", "flag", eb, sizeof(eb)), CORE_OK,
                 "%s", eb);
    cr_assert_eq(core_config_set(cfg, "ingest.max_future_ms", "300000", "flag", eb, sizeof(eb)),
                 CORE_OK, "%s", eb);
    cr_assert_eq(core_config_set(cfg, "ingest.max_jump_ms", "0", "flag", eb, sizeof(eb)), CORE_OK,
                 "%s", eb);
    cr_assert_eq(ing_params_from_config(cfg, &p, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(p.max_future_ms, 300000);
    cr_assert_eq(p.max_jump_ms, 0);
    cr_assert_eq(p.jump_confirm, 5);
    eb[0] = '\0';
    cr_assert_eq(core_config_set(cfg, "ingest.jump_confirm", "-1", "flag", eb, sizeof(eb)),
                 CORE_ECONFIG);
    cr_assert_not_null(strstr(eb, "ingest.jump_confirm"), "%s", eb);
    /* Below one period every reading would jump: refused, naming the key. */
    cr_assert_eq(core_config_set(cfg, "ingest.max_jump_ms", "30000", "flag", eb, sizeof(eb)),
                 CORE_OK, "%s", eb);
    cr_assert_eq(ing_params_from_config(cfg, &p, eb, sizeof(eb)), CORE_ECONFIG);
    cr_assert_not_null(strstr(eb, "ingest.max_jump_ms"), "%s", eb);
    eb[0] = '\0';
    cr_assert_eq(core_config_set(cfg, "ingest.max_future_ms", "-1", "flag", eb, sizeof(eb)),
                 CORE_ECONFIG);
    cr_assert_not_null(strstr(eb, "ingest.max_future_ms"), "%s", eb);
    core_config_free(cfg);
    ing_params_default(&p);
    p.max_future_ms = -5;
    cr_assert_eq(ing_params_validate(&p, eb, sizeof(eb)), CORE_ECONFIG);
    cr_assert_not_null(strstr(eb, "ingest.max_future_ms"), "%s", eb);
}
