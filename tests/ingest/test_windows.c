/* test_windows.c - window assignment, watermark/lateness, interpolation, exclusion,
 * clipping/normalization, features, idle timeout (ing/engine.h). */
#include <math.h>

#include "ing_test.h"

/* Small windows: size minutes x 1-min period, lateness in minutes, every reading on time. */
static struct ing_params small(int size_min, int hop_min, int late_min)
{
    struct ing_params p;
    ing_params_default(&p);
    p.window_ms = size_min * T_MIN;
    p.hop_ms = hop_min * T_MIN;
    p.period_ms = T_MIN;
    p.lateness_ms = late_min * T_MIN;
    p.min_coverage = 0.0;
    return p;
}

/* Expected mean of normalized temperatures t0 + k (k in [a, b]) . */
static double mean_run(double t0, int a, int b)
{
    double s = 0;
    for (int k = a; k <= b; k++)
        s += norm_t(t0 + k);
    return s / (b - a + 1);
}

Test(windows, tumbling_windows_follow_the_grid)
{
    struct ing_params p = small(5, 5, 0);
    struct ing_engine *e = mk_engine(&p);
    struct coll c;
    struct ing_sink s = coll_sink(&c);

    for (int k = 0; k < 15; k++)
        cr_assert_eq(push_t(e, &s, "m1", T0 + k * T_MIN, 20 + k, k), ING_R_NONE);
    /* windows 0 and 1 closed by the watermark (lateness 0), window 2 still open */
    cr_assert_eq(json_array_size(c.windows), 2);
    ing_engine_flush(e, &s);
    cr_assert_eq(json_array_size(c.windows), 3);
    for (int w = 0; w < 3; w++) {
        json_t *r = win_at(&c, (size_t)w);
        char id[128];
        snprintf(id, sizeof(id), "m1|%lld|%s", T0 + w * 5 * T_MIN, p.config_version);
        cr_assert_str_eq(json_string_value(json_object_get(r, "id")), id);
        cr_assert_eq(jint(r, "window_start"), T0 + w * 5 * T_MIN);
        cr_assert_eq(jint(r, "window_end"), T0 + (w + 1) * 5 * T_MIN);
        cr_assert_eq(jint(r, "n"), 5);
        cr_assert_float_eq(jnode(r, "temperature.mean"), mean_run(20, 5 * w, 5 * w + 4), 1e-15);
    }
    cr_assert_str_eq(json_string_value(json_object_get(win_at(&c, 0), "window_start_utc")),
                     "2015-02-04T18:00:00Z");
    coll_free(&c);
    ing_engine_free(e);
}

Test(windows, origin_shifts_window_grid)
{
    struct ing_params p = small(5, 5, 0);
    struct ing_engine *e;
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    const long long starts[] = {T0 - 3 * T_MIN, T0 + 2 * T_MIN, T0 + 7 * T_MIN, T0 + 12 * T_MIN};
    const long long ns[] = {2, 5, 5, 3};

    p.origin_ms = 2 * T_MIN;
    e = mk_engine(&p);
    for (int k = 0; k < 15; k++)
        push_t(e, &s, "m1", T0 + k * T_MIN, 20, k);
    ing_engine_flush(e, &s);
    cr_assert_eq(json_array_size(c.windows), 4);
    for (size_t w = 0; w < 4; w++) {
        cr_assert_eq(jint(win_at(&c, w), "window_start"), starts[w]);
        cr_assert_eq(jint(win_at(&c, w), "n"), ns[w]);
    }
    coll_free(&c);
    ing_engine_free(e);
}

Test(windows, exact_boundaries_use_nearest_slot)
{
    struct ing_params p = small(5, 5, 10);
    struct ing_engine *e = mk_engine(&p);
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    const long long end = T0 + 5 * T_MIN;

    push_t(e, &s, "m1", T0, 20, 0);                  /* slot 0 of window 0 */
    push_t(e, &s, "m1", T0 - T_MIN / 2, 21, 1);      /* ts - half ties up: slot 0 of window 0 */
    push_t(e, &s, "m1", end - T_MIN / 2 - 1, 22, 2); /* snaps to end - 1 min: window 0 */
    push_t(e, &s, "m1", end - T_MIN / 2, 23, 3);     /* snaps to end: window 1 */
    push_t(e, &s, "m1", end, 24, 4);                 /* exactly the end: window 1 */
    ing_engine_flush(e, &s);
    cr_assert_eq(json_array_size(c.windows), 2);
    cr_assert_eq(jint(win_at(&c, 0), "window_start"), T0);
    cr_assert_eq(jint(win_at(&c, 0), "n"), 3);
    cr_assert_eq(jint(win_at(&c, 1), "window_start"), end);
    cr_assert_eq(jint(win_at(&c, 1), "n"), 2);
    coll_free(&c);
    ing_engine_free(e);
}

Test(windows, hopping_windows_share_readings)
{
    struct ing_params p = small(10, 5, 0);
    struct ing_engine *e = mk_engine(&p);
    struct coll c;
    struct ing_sink s = coll_sink(&c);

    for (int k = 0; k < 20; k++)
        push_t(e, &s, "m1", T0 + k * T_MIN, 20 + k, k);
    ing_engine_flush(e, &s);
    cr_assert_eq(json_array_size(c.windows), 5);
    for (int w = 0; w < 5; w++) {
        json_t *r = win_at(&c, (size_t)w);
        long long st = T0 + (w - 1) * 5 * T_MIN;
        int a = (w - 1) * 5 < 0 ? 0 : (w - 1) * 5, b = (w + 1) * 5 - 1 > 19 ? 19 : (w + 1) * 5 - 1;
        cr_assert_eq(jint(r, "window_start"), st);
        cr_assert_eq(jint(r, "window_end"), st + 10 * T_MIN);
        cr_assert_eq(jint(r, "n"), b - a + 1);
        cr_assert_float_eq(jnode(r, "temperature.mean"), mean_run(20, a, b), 1e-15);
    }
    coll_free(&c);
    ing_engine_free(e);
}

Test(windows, split_boundary_is_never_crossed)
{
    struct ing_params p = small(10, 5, 0);
    struct ing_engine *e;
    struct ing_counters k;
    struct coll c;
    struct ing_sink s = coll_sink(&c);

    p.has_split = true;
    p.split_at_ms = T0 + 10 * T_MIN;
    e = mk_engine(&p);
    for (int i = 0; i < 20; i++)
        push_t(e, &s, "m1", T0 + i * T_MIN, 20, i);
    ing_engine_flush(e, &s);
    cr_assert_eq(json_array_size(c.windows), 4);
    for (size_t w = 0; w < 4; w++) {
        long long st = jint(win_at(&c, w), "window_start"), en = jint(win_at(&c, w), "window_end");
        cr_assert(!(st < p.split_at_ms && p.split_at_ms < en), "window %zu crosses split", w);
    }
    ing_engine_counters(e, &k);
    cr_assert_eq(k.windows_split_skipped, 1);
    coll_free(&c);
    ing_engine_free(e);
}

Test(windows, watermark_waits_for_lateness)
{
    struct ing_params p = small(5, 5, 2);
    struct ing_engine *e = mk_engine(&p);
    struct coll c;
    struct ing_sink s = coll_sink(&c);

    for (int k = 0; k < 7; k++)
        push_t(e, &s, "m1", T0 + k * T_MIN, 20, k);
    cr_assert_eq(json_array_size(c.windows), 0, "watermark T0+4m has not reached T0+5m");
    push_t(e, &s, "m1", T0 + 7 * T_MIN, 20, 7);
    cr_assert_eq(json_array_size(c.windows), 1);
    coll_free(&c);
    ing_engine_free(e);
}

Test(windows, reorders_within_lateness_and_rejects_late)
{
    struct ing_params p = small(5, 5, 3);
    struct ing_engine *e = mk_engine(&p);
    struct ing_counters k;
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    const int order[] = {0, 1, 3, 4, 5, 2, 6, 7, 8};

    for (size_t i = 0; i < sizeof(order) / sizeof(*order); i++)
        cr_assert_eq(push_t(e, &s, "m1", T0 + order[i] * T_MIN, 20 + order[i], (long long)i),
                     ING_R_NONE);
    cr_assert_eq(json_array_size(c.windows), 1);
    cr_assert_eq(jint(win_at(&c, 0), "n"), 5);
    cr_assert_float_eq(jnode(win_at(&c, 0), "temperature.mean"), mean_run(20, 0, 4), 1e-15);
    /* window 0 is closed: a reading for it is late and dead-lettered verbatim */
    cr_assert_eq(push_t(e, &s, "m1", T0 + 2 * T_MIN + 1000, 25, 99), ING_R_LATE);
    cr_assert_eq(json_array_size(c.rejects), 1);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(c.rejects, 0), "reason")),
                     "late");
    ing_engine_counters(e, &k);
    cr_assert_eq(k.late, 1);
    cr_assert_eq(k.consumed, k.accepted + k.rejected);
    coll_free(&c);
    ing_engine_free(e);
}

Test(windows, duplicate_device_ts_is_dead_lettered)
{
    struct ing_params p = small(5, 5, 2);
    struct ing_engine *e = mk_engine(&p);
    struct ing_counters k;
    struct coll c;
    struct ing_sink s = coll_sink(&c);

    cr_assert_eq(push_t(e, &s, "m1", T0, 20, 0), ING_R_NONE);
    cr_assert_eq(push_t(e, &s, "m1", T0 + T_MIN, 21, 1), ING_R_NONE);
    cr_assert_eq(push_t(e, &s, "m1", T0, 30, 2), ING_R_DUPLICATE, "same ts, other value");
    cr_assert_eq(push_t(e, &s, "m2", T0, 20, 3), ING_R_NONE, "other device, same ts");
    ing_engine_flush(e, &s);
    cr_assert_float_eq(jnode(win_at(&c, 0), "temperature.mean"), (norm_t(20) + norm_t(21)) / 2,
                       1e-15);
    ing_engine_counters(e, &k);
    cr_assert_eq(k.duplicates, 1);
    cr_assert_eq(k.rejected_by_reason[ING_R_DUPLICATE], 1);
    coll_free(&c);
    ing_engine_free(e);
}

Test(windows, short_internal_gap_is_interpolated)
{
    struct ing_params p = small(10, 10, 0);
    struct ing_engine *e;
    struct ing_counters k;
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    const int slots[] = {0, 1, 2, 5, 6, 7, 8, 9};
    double x[10], sum = 0;
    json_t *imp;

    p.max_interp_gap = 2;
    e = mk_engine(&p);
    /* real samples 20 s after their slot time (jitter); values 15 + 2 * slot */
    for (size_t i = 0; i < 8; i++) {
        x[slots[i]] = 15 + 2.0 * slots[i];
        push_t(e, &s, "m1", T0 + slots[i] * T_MIN + 20000, x[slots[i]], (long long)i);
    }
    /* imputed at t_j = T0 + j min between (t_2 + 20 s, x_2) and (t_5 + 20 s, x_5) */
    for (int j = 3; j <= 4; j++) {
        double ta = (double)(2 * T_MIN + 20000), tb = (double)(5 * T_MIN + 20000);
        x[j] = x[2] + (x[5] - x[2]) * (((double)(j * T_MIN) - ta) / (tb - ta));
    }
    for (int j = 0; j < 10; j++)
        sum += norm_t(x[j]);
    ing_engine_flush(e, &s);
    cr_assert_eq(json_array_size(c.windows), 1);
    cr_assert_float_eq(jnode(win_at(&c, 0), "temperature.mean"), sum / 10, 1e-15);
    imp = json_object_get(json_object_get(win_at(&c, 0), "imputed"), "temperature.mean");
    cr_assert_eq(json_array_size(imp), 2);
    cr_assert_eq(json_integer_value(json_array_get(imp, 0)), T0 + 3 * T_MIN);
    cr_assert_eq(json_integer_value(json_array_get(imp, 1)), T0 + 4 * T_MIN);
    cr_assert_eq(jint(json_object_get(win_at(&c, 0), "n_node"), "temperature.mean"), 8);
    ing_engine_counters(e, &k);
    cr_assert_eq(k.interpolated, 2);
    coll_free(&c);
    ing_engine_free(e);
}

Test(windows, long_gap_excludes_window)
{
    struct ing_params p = small(10, 10, 0);
    struct ing_engine *e;
    struct ing_counters k;
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    json_t *w;

    p.max_interp_gap = 2;
    e = mk_engine(&p);
    for (int j = 0; j < 10; j++)
        if (j < 3 || j > 5) /* 3 missing slots > max_interp_gap */
            push_t(e, &s, "m1", T0 + j * T_MIN, 20, j);
    ing_engine_flush(e, &s);
    cr_assert_eq(json_array_size(c.windows), 1);
    w = win_at(&c, 0);
    cr_assert(json_is_true(json_object_get(w, "excluded")));
    cr_assert_str_eq(json_string_value(json_object_get(w, "exclude_reason")), "long_gap");
    cr_assert_null(json_object_get(w, "nodes"), "an excluded window carries no values");
    ing_engine_counters(e, &k);
    cr_assert_eq(k.windows_excluded, 1);
    cr_assert_eq(k.excluded_by_reason[ING_X_LONG_GAP], 1);
    cr_assert_eq(k.interpolated, 0);
    coll_free(&c);
    ing_engine_free(e);
}

Test(windows, excluded_windows_can_be_counted_only)
{
    struct ing_params p = small(10, 10, 0);
    struct ing_engine *e;
    struct ing_counters k;
    struct coll c;
    struct ing_sink s = coll_sink(&c);

    p.min_coverage = 0.5;
    p.emit_excluded = false;
    e = mk_engine(&p);
    for (int j = 0; j < 4; j++) /* 4 of 10 slots < 0.5 */
        push_t(e, &s, "m1", T0 + j * T_MIN, 20, j);
    ing_engine_flush(e, &s);
    cr_assert_eq(json_array_size(c.windows), 0);
    ing_engine_counters(e, &k);
    cr_assert_eq(k.excluded_by_reason[ING_X_LOW_COVERAGE], 1);
    cr_assert_eq(k.windows_emitted, 0);
    coll_free(&c);
    ing_engine_free(e);
}

Test(windows, edge_gaps_are_not_imputed)
{
    struct ing_params p = small(10, 10, 0);
    struct ing_engine *e;
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    double sum = 0;

    p.min_coverage = 0.7;
    e = mk_engine(&p);
    for (int j = 2; j < 10; j++) { /* slots 0 and 1 empty: coverage 0.8 */
        push_t(e, &s, "m1", T0 + j * T_MIN, 10 + 3.0 * j, j);
        sum += norm_t(10 + 3.0 * j);
    }
    ing_engine_flush(e, &s);
    cr_assert_eq(json_array_size(c.windows), 1);
    cr_assert_float_eq(jnode(win_at(&c, 0), "temperature.mean"), sum / 8, 1e-15);
    cr_assert_eq(json_array_size(json_object_get(json_object_get(win_at(&c, 0), "imputed"),
                                                 "temperature.mean")),
                 0);
    coll_free(&c);
    ing_engine_free(e);
}

Test(windows, clip_normalize_and_features)
{
    struct ing_params p = small(5, 5, 0);
    struct ing_engine *e;
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    const double v[] = {-5, 10, 25, 40, 90}; /* clip [10, 40] */
    double u[5], mean = 0, ss = 0;
    json_t *w;

    p.features = ING_F_MEAN | ING_F_COUNT | ING_F_MIN | ING_F_MAX | ING_F_STD;
    e = mk_engine(&p);
    for (int k = 0; k < 5; k++) {
        push_t(e, &s, "m1", T0 + k * T_MIN, v[k], k);
        u[k] = norm_t(v[k]);
        mean += u[k];
    }
    mean /= 5;
    for (int k = 0; k < 5; k++)
        ss += (u[k] - mean) * (u[k] - mean);
    cr_assert_float_eq(u[0], 0.0, 0);
    cr_assert_float_eq(u[4], 1.0, 0);
    ing_engine_flush(e, &s);
    w = win_at(&c, 0);
    cr_assert_float_eq(jnode(w, "temperature.mean"), 0.5, 1e-15);
    cr_assert_float_eq(jnode(w, "temperature.count"), 1.0, 0);
    cr_assert_float_eq(jnode(w, "temperature.min"), 0.0, 0);
    cr_assert_float_eq(jnode(w, "temperature.max"), 1.0, 0);
    cr_assert_float_eq(jnode(w, "temperature.std"), sqrt(ss / 5), 1e-15);
    cr_assert_eq(jint(json_object_get(w, "n_node"), "temperature.std"), 5);
    cr_assert_null(json_object_get(json_object_get(w, "nodes"), "temperature"));
    coll_free(&c);
    ing_engine_free(e);
}

Test(windows, idle_timeout_closes_and_later_reading_is_late)
{
    struct ing_params p = small(5, 5, 0);
    struct ing_engine *e;
    struct ing_counters k;
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    char buf[200];
    int n;

    p.idle_timeout_ms = 30000;
    e = mk_engine(&p);
    for (int i = 0; i < 3; i++) {
        n = snprintf(buf, sizeof(buf),
                     "{\"schema\":\"gcdp.reading/1\",\"device\":\"m1\","
                     "\"ts\":%lld,\"readings\":{\"temperature\":20}}",
                     T0 + i * T_MIN);
        cr_assert_eq(push_raw(e, &s, buf, (size_t)n, "m1", 0, i, 1000 + i), ING_R_NONE);
    }
    ing_engine_tick(e, 1002 + 29999, &s);
    cr_assert_eq(json_array_size(c.windows), 0, "not idle long enough");
    ing_engine_tick(e, 1002 + 30000, &s);
    cr_assert_eq(json_array_size(c.windows), 1);
    cr_assert_eq(jint(win_at(&c, 0), "n"), 3);
    ing_engine_counters(e, &k);
    cr_assert_eq(k.idle_closes, 1);
    cr_assert_eq(k.open_devices, 0);
    cr_assert_eq(k.buffered, 0);
    n = snprintf(buf, sizeof(buf),
                 "{\"schema\":\"gcdp.reading/1\",\"device\":\"m1\","
                 "\"ts\":%lld,\"readings\":{\"temperature\":20}}",
                 T0 + 4 * T_MIN);
    cr_assert_eq(push_raw(e, &s, buf, (size_t)n, "m1", 0, 9, 40000), ING_R_LATE,
                 "its window was force-closed: emitting it again would duplicate the id");
    coll_free(&c);
    ing_engine_free(e);
}

Test(windows, all_null_readings_give_no_data_window)
{
    struct ing_params p = small(5, 5, 0);
    struct ing_engine *e = mk_engine(&p);
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    const char *m = "{\"schema\":\"gcdp.reading/1\",\"device\":\"m1\",\"ts\":1423072800000,"
                    "\"readings\":{\"temperature\":null}}";

    cr_assert_eq(push_raw(e, &s, m, strlen(m), "m1", 0, 0, 0), ING_R_NONE);
    ing_engine_flush(e, &s);
    cr_assert_str_eq(json_string_value(json_object_get(win_at(&c, 0), "exclude_reason")),
                     "no_data");
    coll_free(&c);
    ing_engine_free(e);
}

Test(windows, configured_nodes_are_required)
{
    struct ing_params p = small(5, 5, 0);
    struct ing_engine *e;
    struct coll c;
    struct ing_sink s = coll_sink(&c);

    p.n_nodes = 2;
    p.node_channel[0] = 0; /* temperature */
    p.node_channel[1] = 1; /* humidity: never sent */
    p.min_coverage = 0.5;
    e = mk_engine(&p);
    for (int k = 0; k < 5; k++)
        push_t(e, &s, "m1", T0 + k * T_MIN, 20, k);
    ing_engine_flush(e, &s);
    cr_assert_str_eq(json_string_value(json_object_get(win_at(&c, 0), "exclude_reason")),
                     "low_coverage");
    coll_free(&c);
    ing_engine_free(e);
}

Test(windows, devices_are_independent)
{
    struct ing_params p = small(5, 5, 0);
    struct ing_engine *e = mk_engine(&p);
    struct ing_counters k;
    struct coll c;
    struct ing_sink s = coll_sink(&c);

    for (int i = 0; i < 6; i++) {
        push_t(e, &s, "a", T0 + i * T_MIN, 20, 2 * i);
        push_t(e, &s, "b", T0 + i * T_MIN, 30, 2 * i + 1);
    }
    /* the 6th reading of each device closes its own window 0 only */
    cr_assert_eq(json_array_size(c.windows), 2);
    cr_assert_str_eq(json_string_value(json_object_get(win_at(&c, 0), "device")), "a");
    cr_assert_float_eq(jnode(win_at(&c, 0), "temperature.mean"), norm_t(20), 1e-15);
    cr_assert_str_eq(json_string_value(json_object_get(win_at(&c, 1), "device")), "b");
    cr_assert_float_eq(jnode(win_at(&c, 1), "temperature.mean"), norm_t(30), 1e-15);
    ing_engine_counters(e, &k);
    cr_assert_eq(k.devices, 2);
    cr_assert_eq(k.open_devices, 2);
    coll_free(&c);
    ing_engine_free(e);
}

Test(windows, device_and_buffer_caps)
{
    struct ing_params p = small(5, 5, 60);
    struct ing_engine *e;
    struct coll c;
    struct ing_sink s = coll_sink(&c);

    p.max_devices = 2;
    p.max_buffer = 3;
    e = mk_engine(&p);
    cr_assert_eq(push_t(e, &s, "a", T0, 20, 0), ING_R_NONE);
    cr_assert_eq(push_t(e, &s, "b", T0, 20, 1), ING_R_NONE);
    cr_assert_eq(push_t(e, &s, "c", T0, 20, 2), ING_R_TOO_MANY_DEVICES);
    cr_assert_eq(push_t(e, &s, "a", T0 + T_MIN, 20, 3), ING_R_NONE);
    cr_assert_eq(push_t(e, &s, "a", T0 + 2 * T_MIN, 20, 4), ING_R_NONE);
    cr_assert_eq(push_t(e, &s, "a", T0 + 3 * T_MIN, 20, 5), ING_R_BUFFER_FULL);
    cr_assert_eq(json_array_size(c.rejects), 2);
    coll_free(&c);
    ing_engine_free(e);
}

/* A window closed before its watermark passed it says so (closed_early): by a flush (the
 * --flush-on-idle path) or an idle timeout; a window closed by the watermark does not. */
Test(windows, windows_closed_early_say_why)
{
    struct ing_params p = small(5, 5, 0);
    struct ing_engine *e;
    struct coll c;
    struct ing_sink s = coll_sink(&c);

    e = mk_engine(&p);
    for (int i = 0; i < 7; i++) /* window 1 closes on the watermark, window 2 stays open */
        push_t(e, &s, "m1", T0 + i * T_MIN, 20.0 + i, i);
    cr_assert_eq(json_array_size(c.windows), 1);
    cr_assert_null(json_object_get(win_at(&c, 0), "closed_early"));
    ing_engine_flush(e, &s);
    cr_assert_eq(json_array_size(c.windows), 2);
    cr_assert_str_eq(json_string_value(json_object_get(win_at(&c, 1), "closed_early")), "flush");
    ing_engine_free(e);
    coll_free(&c);

    p.idle_timeout_ms = 1000;
    e = mk_engine(&p);
    s = coll_sink(&c);
    {
        const char *rd = "{\"schema\":\"gcdp.reading/1\",\"device\":\"m2\","
                         "\"ts\":1423072800000,\"readings\":{\"temperature\":20}}";
        cr_assert_eq(push_raw(e, &s, rd, strlen(rd), "m2", 0, 0, 5000), ING_R_NONE);
    }
    ing_engine_tick(e, 7000, &s);
    cr_assert_eq(json_array_size(c.windows), 1);
    cr_assert_str_eq(json_string_value(json_object_get(win_at(&c, 0), "closed_early")),
                     "idle_timeout");
    ing_engine_free(e);
    coll_free(&c);
}
