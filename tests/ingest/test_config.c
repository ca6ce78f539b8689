/* test_config.c - ingest.* keys: defaults, validation errors that name the key. */
#include <math.h>

#include "core/kconf.h"
#include "ing/config.h"
#include "ing_test.h"

static struct core_config *new_cfg(void)
{
    static const struct core_cfg_key *const tables[] = {core_config_keys, ing_config_keys};
    struct core_config *cfg = core_config_new(tables, 2);
    cr_assert_not_null(cfg, "defaults of the ingest keys must be valid");
    return cfg;
}

/* Set key=text; expect from_config (or the set itself) to fail naming want_key. */
static void expect_error(const char *key, const char *text, const char *want_key)
{
    struct core_config *cfg = new_cfg();
    struct ing_params p;
    char eb[512] = "";
    core_err rc = core_config_set(cfg, key, text, "flag", eb, sizeof(eb));

    if (rc == CORE_OK)
        rc = ing_params_from_config(cfg, &p, eb, sizeof(eb));
    cr_assert_eq(rc, CORE_ECONFIG, "%s=%s was accepted", key, text);
    cr_assert_not_null(strstr(eb, want_key), "error '%s' does not name %s", eb, want_key);
    core_config_free(cfg);
}

Test(config, defaults_match_params_default)
{
    struct core_config *cfg = new_cfg();
    struct ing_params p, d;
    char eb[256] = "";

    cr_assert_eq(ing_params_from_config(cfg, &p, eb, sizeof(eb)), CORE_OK, "%s", eb);
    ing_params_default(&d);
    cr_assert_eq(strlen(p.config_version), 16);
    cr_assert_str_neq(p.config_version, d.config_version);
    memcpy(p.config_version, d.config_version, sizeof(d.config_version));
    cr_assert_eq(memcmp(&p, &d, sizeof(p)), 0, "config defaults and ing_params_default differ");
    cr_assert_eq(p.hop_ms, p.window_ms, "hop 0 means tumbling");
    cr_assert_eq(p.n_channels, 6);
    core_config_free(cfg);
}

Test(config, cross_key_rules_name_the_key)
{
    expect_error("ingest.window.hop_ms", "1200000", "ingest.window.hop_ms");
    expect_error("ingest.window.hop_ms", "90000", "ingest.window.hop_ms");
    expect_error("ingest.window.size_ms", "90000", "ingest.window.size_ms");
    expect_error("ingest.split_at_ms", "1423072860000", "ingest.split_at_ms");
    expect_error("ingest.ts_max_ms", "946684800000", "ingest.ts_max_ms");
    expect_error("ingest.nodes", "[\"pressure\"]", "ingest.nodes");
    expect_error("ingest.nodes", "[\"co2\",\"co2\"]", "ingest.nodes");
    expect_error("ingest.nodes", "\"co2\"", "ingest.nodes");
}

Test(config, per_key_checks_name_the_key)
{
    expect_error("ingest.min_coverage", "1.5", "ingest.min_coverage");
    expect_error("ingest.period_ms", "0", "ingest.period_ms");
    expect_error("ingest.max_message_bytes", "10", "ingest.max_message_bytes");
    expect_error("ingest.key_policy", "sometimes", "ingest.key_policy");
    expect_error("ingest.features", "[\"median\"]", "ingest.features");
    expect_error("ingest.features", "[]", "ingest.features");
    expect_error("ingest.features", "[\"mean\",\"mean\"]", "ingest.features");
    expect_error("ingest.channels", "{}", "ingest.channels");
    expect_error("ingest.channels", "{\"t\":{\"domain\":[0,1],\"clip\":[1,1]}}", "ingest.channels");
    expect_error("ingest.channels", "{\"t\":{\"domain\":[0,1]}}", "ingest.channels");
    expect_error("ingest.channels", "{\"t\":{\"domain\":[0,1],\"clip\":[0,1],\"x\":1}}",
                 "ingest.channels");
    expect_error("ingest.channels", "{\"a b\":{\"domain\":[0,1],\"clip\":[0,1]}}",
                 "ingest.channels");
    expect_error("ingest.windows.size_ms", "1", "ingest.windows.size_ms");
}

Test(config, valid_settings_are_read)
{
    struct core_config *cfg = new_cfg();
    struct ing_params p;
    char eb[256] = "", v1[17];
    const char *sets[] = {
        "ingest.window.size_ms=600000",
        "ingest.window.hop_ms=300000",
        "ingest.split_at_ms=1423072800000",
        "ingest.features=[\"mean\",\"std\"]",
        "ingest.nodes=[\"temperature\",\"co2\"]",
        "ingest.key_policy=match",
        ("ingest.channels={\"temperature\":{\"domain\":[-40,125],\"clip\":[15,30]},"
         "\"co2\":{\"domain\":[0,10000],\"clip\":[400,2000]}}"), /* one element */
    };

    cr_assert_eq(ing_params_from_config(cfg, &p, eb, sizeof(eb)), CORE_OK);
    memcpy(v1, p.config_version, sizeof(v1));
    for (size_t i = 0; i < sizeof(sets) / sizeof(*sets); i++)
        cr_assert_eq(core_config_set_arg(cfg, sets[i], eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(ing_params_from_config(cfg, &p, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(p.window_ms, 600000);
    cr_assert_eq(p.hop_ms, 300000);
    cr_assert(p.has_split);
    cr_assert_eq(p.features, ING_F_MEAN | ING_F_STD);
    cr_assert_eq(p.n_nodes, 2);
    cr_assert_eq(p.node_channel[1], 1);
    cr_assert_eq(p.key_policy, ING_KEY_MATCH);
    cr_assert_float_eq(p.channels[0].clip_lo, 15.0, 0);
    cr_assert_str_neq(p.config_version, v1, "config_version follows the ingest config");
    core_config_free(cfg);
}

Test(config, engine_refuses_invalid_params)
{
    struct ing_params p;
    char eb[256] = "";

    ing_params_default(&p);
    p.hop_ms = 0;
    cr_assert_null(ing_engine_new(&p, eb, sizeof(eb)));
    cr_assert_not_null(strstr(eb, "ingest.window.hop_ms"), "%s", eb);
    ing_params_default(&p);
    p.min_coverage = NAN;
    cr_assert_null(ing_engine_new(&p, eb, sizeof(eb)), "NaN fails closed");
    cr_assert_not_null(strstr(eb, "ingest.min_coverage"), "%s", eb);
    ing_params_default(&p);
    p.channels[2].clip_hi = p.channels[2].clip_lo;
    cr_assert_null(ing_engine_new(&p, eb, sizeof(eb)));
    cr_assert_not_null(strstr(eb, "ingest.channels"), "%s", eb);
}

Test(config, decoder_key_selects_the_decoder_and_rejects_other_names)
{
    struct core_config *cfg = new_cfg();
    struct ing_params p;
    char eb[512] = "";

    cr_assert_eq(ing_params_from_config(cfg, &p, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(p.decoder, ING_DECODER_SIMDJSON, "simdjson is the default");
    cr_assert_eq(core_config_set(cfg, "ingest.decoder", "\"jansson\"", "flag", eb, sizeof(eb)),
                 CORE_OK, "%s", eb);
    cr_assert_eq(ing_params_from_config(cfg, &p, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(p.decoder, ING_DECODER_JANSSON);
    core_config_free(cfg);
    expect_error("ingest.decoder", "\"rapidjson\"", "ingest.decoder");
    p.decoder = (enum ing_decoder)7;
    cr_assert_eq(ing_params_validate(&p, eb, sizeof(eb)), CORE_ECONFIG);
    cr_assert_not_null(strstr(eb, "ingest.decoder"));
}
