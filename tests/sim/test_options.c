/* test_options.c - sim.* configuration keys and the ground-truth file. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "core/config.h"
#include "core/kconf.h"
#include "ing/config.h"
#include "sim/config.h"
#include "sim/gen.h"
#include "sim/sim.h"
#include "svc/truth.h"
#include "test_support.h"

static const struct core_cfg_key *const tables[] = {core_config_keys, ing_config_keys,
                                                    sim_config_keys};

Test(sim_options, config_keys_fill_the_options_and_follow_ingest)
{
    struct core_config *cfg = core_config_new(tables, 3);
    struct sim_options o;
    char eb[256];

    cr_assert_not_null(cfg);
    cr_assert_eq(sim_options_from_config(cfg, &o, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(o.devices, 16);
    cr_assert_float_eq(o.period_s, 60.0, 1e-12); /* ingest.period_ms default */
    cr_assert_eq(o.oversize_bytes, 65536);       /* ingest.max_message_bytes default */
    cr_assert(o.regime_change_at_s < 0.0);
    cr_assert_eq(core_config_set_arg(cfg, "ingest.period_ms=30000", eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(core_config_set_arg(cfg, "sim.devices=7", eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(core_config_set_arg(cfg, "sim.faults=late=0.25", eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(core_config_set_arg(cfg, "sim.regime_change_at_s=3600", eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(sim_options_from_config(cfg, &o, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(o.devices, 7);
    cr_assert_float_eq(o.period_s, 30.0, 1e-12);
    cr_assert_float_eq(o.fault_rate[SIM_FAULT_LATE], 0.25, 1e-15);
    cr_assert_float_eq(o.regime_change_at_s, 3600.0, 1e-12);
    cr_assert_eq(core_config_set_arg(cfg, "sim.period_ms=5000", eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(sim_options_from_config(cfg, &o, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_float_eq(o.period_s, 5.0, 1e-12); /* sim.period_ms wins */
    cr_assert_eq(core_config_set_arg(cfg, "sim.faults=late=2", eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(sim_options_from_config(cfg, &o, eb, sizeof(eb)), CORE_ECONFIG);
    cr_assert_not_null(strstr(eb, "sim.faults"), "%s", eb);
    core_config_free(cfg);
}

/* Field by field (memcmp would compare padding). */
static void prod_assert_eq(const struct sim_producer_opts *a, const struct sim_producer_opts *b)
{
    cr_assert_eq(a->topic, b->topic);
    cr_assert_eq(a->max_inflight, b->max_inflight);
    cr_assert_eq(a->flush_timeout_ms, b->flush_timeout_ms);
    cr_assert_eq(a->lag_group, b->lag_group);
    cr_assert_eq(a->max_lag_bytes, b->max_lag_bytes);
}

Test(sim_options, producer_settings_have_one_default_shared_with_the_config_keys)
{
    struct core_config *cfg = core_config_new(tables, 3);
    struct sim_producer_opts d;
    struct sim_options so;
    struct sim_replay_options ro;
    char eb[256];

    cr_assert_not_null(cfg);
    sim_producer_opts_default(&d);
    cr_assert_null(d.topic);
    cr_assert_eq(d.max_inflight, 20000);
    cr_assert_eq(d.flush_timeout_ms, 30000);
    cr_assert_null(d.lag_group);
    cr_assert_eq(d.max_lag_bytes, (size_t)2 * 1024 * 1024, "2 MiB (the sim.max_lag_bytes row)");
    /* the keys' defaults are the struct's: --help shows one number for both */
    cr_assert_eq((size_t)core_config_int(cfg, "sim.max_inflight"), d.max_inflight);
    cr_assert_eq((size_t)core_config_int(cfg, "sim.max_lag_bytes"), d.max_lag_bytes);
    cr_assert_null(core_config_str(cfg, "sim.lag_group"));
    sim_options_default(&so);
    sim_replay_options_default(&ro);
    prod_assert_eq(&so.prod, &d);
    prod_assert_eq(&ro.prod, &d);

    cr_assert_eq(core_config_set_arg(cfg, "sim.max_inflight=123", eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(core_config_set_arg(cfg, "sim.lag_group=gcdp-ingest", eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(core_config_set_arg(cfg, "sim.max_lag_bytes=70000", eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(sim_options_from_config(cfg, &so, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(so.prod.max_inflight, 123);
    cr_assert_str_eq(so.prod.lag_group, "gcdp-ingest");
    cr_assert_eq(so.prod.max_lag_bytes, 70000);
    cr_assert_null(so.prod.topic); /* no sim.* key: topics.raw */
    cr_assert_eq(so.prod.flush_timeout_ms, 30000);
    core_config_free(cfg);
}

Test(sim_options, unknown_sim_key_and_out_of_range_values_are_refused)
{
    struct core_config *cfg = core_config_new(tables, 3);
    char eb[256];
    cr_assert_eq(core_config_set_arg(cfg, "sim.devicez=3", eb, sizeof(eb)), CORE_ECONFIG);
    cr_assert_eq(core_config_set_arg(cfg, "sim.spatial_coupling=1.5", eb, sizeof(eb)),
                 CORE_ECONFIG);
    cr_assert_not_null(strstr(eb, "sim.spatial_coupling"), "%s", eb);
    core_config_free(cfg);
}

Test(sim_truth, file_holds_the_generator_weights_and_implied_covariance)
{
    struct sim_gen_params gp;
    struct sim_gen *g = NULL;
    struct sim_options o;
    char eb[256], *dir = ts_tmpdir(), path[512];
    json_error_t je;
    json_t *doc, *regs;

    sim_gen_params_default(&gp);
    gp.devices = 3;
    gp.seed = 5;
    cr_assert_eq(sim_gen_new(&gp, &g), CORE_OK);
    sim_options_default(&o);
    o.devices = 3;
    o.seed = 5;
    o.regime_change_at_s = 7200;
    snprintf(path, sizeof(path), "%s/truth.json", dir);
    cr_assert_eq(sim_truth_write(g, &o, path, eb, sizeof(eb)), CORE_OK, "%s", eb);
    doc = json_load_file(path, 0, &je);
    cr_assert_not_null(doc, "%s", je.text);
    cr_assert_str_eq(json_string_value(json_object_get(doc, "schema")), "gcdp.sim-truth/1");
    regs = json_object_get(doc, "regimes");
    cr_assert_eq(json_array_size(regs), SIM_NREGIMES);
    for (unsigned r = 0; r < SIM_NREGIMES; r++) {
        json_t *reg = json_array_get(regs, r), *e;
        double w[SIM_NCH * SIM_NCH], cov[SIM_NCH * SIM_NCH];
        size_t i, nedges = 0;
        sim_gen_weights(g, r, SIZE_MAX, w);
        sim_gen_implied_cov(w, cov);
        json_array_foreach(json_object_get(reg, "edges"), i, e)
        {
            size_t a = 0, b = 0;
            while (strcmp(sim_gen_channel_info(a)->name,
                          json_string_value(json_object_get(e, "from"))))
                a++;
            while (
                strcmp(sim_gen_channel_info(b)->name, json_string_value(json_object_get(e, "to"))))
                b++;
            cr_assert_eq(json_real_value(json_object_get(e, "weight")), w[a * SIM_NCH + b]);
        }
        for (i = 0; i < SIM_NCH * SIM_NCH; i++)
            nedges += w[i] != 0.0;
        cr_assert_eq(json_array_size(json_object_get(reg, "edges")), nedges);
        for (i = 0; i < SIM_NCH; i++)
            for (size_t j = 0; j < SIM_NCH; j++)
                cr_assert_eq(json_real_value(json_array_get(
                                 json_array_get(json_object_get(reg, "implied_cov"), i), j)),
                             cov[i * SIM_NCH + j]);
    }
    cr_assert_float_eq(json_real_value(json_object_get(json_array_get(regs, 1), "from_s")), 7200.0,
                       1e-12);
    cr_assert_eq(json_array_size(json_object_get(doc, "device_weights")), 3);
    json_decref(doc);
    sim_gen_free(g);
    ts_rmtree(dir);
    free(dir);
}

Test(sim_truth, unwritable_path_is_an_io_error)
{
    struct sim_gen_params gp;
    struct sim_gen *g = NULL;
    struct sim_options o;
    char eb[256];
    sim_gen_params_default(&gp);
    cr_assert_eq(sim_gen_new(&gp, &g), CORE_OK);
    sim_options_default(&o);
    cr_assert_eq(sim_truth_write(g, &o, "/nonexistent-dir/truth.json", eb, sizeof(eb)), CORE_EIO);
    cr_assert_not_null(strstr(eb, "/nonexistent-dir/truth.json"));
    sim_gen_free(g);
}

/* sim.channel_params overrides the named fields of the named channels only; a channel the
 * simulator does not have, an unknown field or a negative scale stops with the key named. */
Test(sim_options, channel_params_override_fields_and_refuse_nonsense)
{
    struct core_config *cfg = core_config_new(tables, 3);
    struct sim_options o;
    char eb[512];
    const struct sim_channel_info *light = sim_gen_channel_info(SIM_CH_LIGHT);
    static const char *const bad[] = {
        "sim.channel_params={\"co2\":{\"scale\":1}}",
        "sim.channel_params={\"light\":{\"colour\":1}}",
        "sim.channel_params={\"light\":{\"scale\":-1}}",
        "sim.channel_params={\"light\":3}",
        "sim.channel_params=[1]",
    };

    cr_assert_eq(core_config_set_arg(cfg,
                                     "sim.channel_params={\"light\":{\"base\":1000,\"amp\":0},"
                                     "\"voltage\":{\"scale\":0.2}}",
                                     eb, sizeof(eb)),
                 CORE_OK, "%s", eb);
    cr_assert_eq(sim_options_from_config(cfg, &o, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(o.channel[SIM_CH_LIGHT].base, 1000.0);
    cr_assert_eq(o.channel[SIM_CH_LIGHT].amp, 0.0);
    cr_assert_eq(o.channel[SIM_CH_LIGHT].scale, light->scale);
    cr_assert_eq(o.channel[SIM_CH_VOLTAGE].scale, 0.2);
    cr_assert_eq(o.channel[SIM_CH_TEMPERATURE].base, sim_gen_channel_info(0)->base);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_eq(core_config_set_arg(cfg, bad[i], eb, sizeof(eb)), CORE_OK, "%s", eb);
        cr_assert_eq(sim_options_from_config(cfg, &o, eb, sizeof(eb)), CORE_ECONFIG, "%s", bad[i]);
        cr_assert_not_null(strstr(eb, "sim.channel_params"), "%s", eb);
    }
    core_config_free(cfg);
}

/* Public calibration rows: header, shape, rows in [0, 1], window starts on the grid, and
 * readings independent of the protected run (another noise seed, same model). */
Test(sim_options, calibration_csv_has_window_means_in_unit_range)
{
    struct sim_options o;
    double lo[SIM_NCH] = {10, 0, 0, 2}, hi[SIM_NCH] = {40, 100, 2000, 3};
    char *dir = ts_tmpdir(), path[600], eb[256], *text, *save = NULL, *line;
    size_t rows = 0;

    sim_options_default(&o);
    o.devices = 3;
    snprintf(path, sizeof(path), "%s/cal.csv", dir);
    cr_assert_eq(sim_calibration_csv(&o, 77, lo, hi, 20, 15, path, eb, sizeof(eb)), CORE_OK, "%s",
                 eb);
    text = ts_read_file(path, NULL);
    cr_assert_not_null(text);
    line = strtok_r(text, "\n", &save);
    cr_assert_str_eq(line, "ts,temperature.mean,humidity.mean,light.mean,voltage.mean");
    while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
        long long ts;
        double v[4];
        cr_assert_eq(sscanf(line, "%lld,%lf,%lf,%lf,%lf", &ts, &v[0], &v[1], &v[2], &v[3]), 5);
        cr_assert_eq((ts - o.start_ms) % (15 * 60000), 0);
        for (int c = 0; c < 4; c++)
            cr_assert(v[c] >= 0.0 && v[c] <= 1.0, "row %zu: %g", rows, v[c]);
        rows++;
    }
    cr_assert_eq(rows, 3 * 20);
    lo[1] = hi[1];
    cr_assert_eq(sim_calibration_csv(&o, 77, lo, hi, 20, 15, path, eb, sizeof(eb)), CORE_EINVAL);
    free(text);
    ts_rmtree(dir);
    free(dir);
}

/* Options declared once: sim_options_default takes the bound fields from the sim.* rows, so
 * it and an untouched configuration agree field by field. */
Test(sim_options, defaults_are_the_key_table_rows)
{
    struct core_config *cfg = core_config_new(tables, 3);
    struct sim_options a, b;
    char eb[256];

    cr_assert_not_null(cfg);
    sim_options_default(&a);
    cr_assert_eq(sim_options_from_config(cfg, &b, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(a.devices, 16);
    cr_assert_eq(a.seed, 1);
    cr_assert_eq(a.start_ms, 1793491200000LL, "2026-11-01T00:00:00Z");
    cr_assert_eq(a.ar, 0.8);
    cr_assert_eq(a.spatial_lag, 2);
    cr_assert_eq(a.gap_ticks, 20);
    cr_assert(!a.wall_clock);
    cr_assert_eq(a.devices, b.devices);
    cr_assert_eq(a.seed, b.seed);
    cr_assert_eq(a.rate, b.rate);
    cr_assert_eq(a.ticks, b.ticks);
    cr_assert_eq(a.duration_s, b.duration_s);
    cr_assert_eq(a.start_ms, b.start_ms);
    cr_assert_eq(a.hetero_sd, b.hetero_sd);
    cr_assert_eq(a.spatial_coupling, b.spatial_coupling);
    cr_assert_eq(a.spatial_lag, b.spatial_lag);
    cr_assert_eq(a.ar, b.ar);
    cr_assert_eq(a.gap_ticks, b.gap_ticks);
    cr_assert_eq(a.late_s, b.late_s);
    cr_assert_eq(a.wall_clock, b.wall_clock);
    prod_assert_eq(&a.prod, &b.prod);
    core_config_free(cfg);
}
