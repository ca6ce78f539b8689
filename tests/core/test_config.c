/* test_config.c - configuration layering and the errors that name the key. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "core/config.h"
#include "core/kconf.h"
#include "core/log.h"
#include "test_support.h"

static const struct core_cfg_key test_keys[] = {
    CORE_KEY("ingest.window.size_s", CORE_CFG_INT, "60", 1, 86400, NULL, "window length", NULL),
    CORE_KEY("ingest.feature", CORE_CFG_ENUM, "\"mean\"", 1, 0, "mean|min|max", "feature", NULL),
    CORE_KEY("ingest.ratio", CORE_CFG_DOUBLE, "0.5", 0, 1, NULL, "a ratio", NULL),
    CORE_KEY("ingest.bounds", CORE_CFG_JSON, NULL, 1, 0, NULL, "bounds", NULL),
    CORE_KEY("ingest.strict", CORE_CFG_BOOL, "true", 1, 0, NULL, "strict", NULL),
    {0},
};
static const struct core_cfg_key *const tables[] = {core_config_keys, test_keys};

static struct core_config *new_cfg(void)
{
    core_log_level = CORE_LOG_OFF;
    struct core_config *cfg = core_config_new(tables, 2);
    cr_assert_not_null(cfg);
    return cfg;
}

Test(config, defaults_are_loaded)
{
    struct core_config *cfg = new_cfg();
    cr_assert_eq(core_config_int(cfg, "ingest.window.size_s"), 60);
    cr_assert_str_eq(core_config_str(cfg, "ingest.feature"), "mean");
    cr_assert_str_eq(core_config_str(cfg, "topics.raw"), "sensors.raw");
    cr_assert(core_config_bool(cfg, "ingest.strict"));
    cr_assert_null(core_config_json(cfg, "ingest.bounds"));
    core_config_free(cfg);
}

Test(config, unknown_key_is_named)
{
    struct core_config *cfg = new_cfg();
    char eb[256];
    cr_assert_eq(core_config_set(cfg, "ingest.windw.size_s", "30", "flag", eb, sizeof(eb)),
                 CORE_ECONFIG);
    cr_assert(strstr(eb, "ingest.windw.size_s") != NULL, "%s", eb);
    core_config_free(cfg);
}

Test(config, out_of_range_and_wrong_type_are_named)
{
    struct core_config *cfg = new_cfg();
    char eb[256];
    cr_assert_eq(core_config_set(cfg, "ingest.window.size_s", "0", "flag", eb, sizeof(eb)),
                 CORE_ECONFIG);
    cr_assert(strstr(eb, "ingest.window.size_s") && strstr(eb, "outside"), "%s", eb);
    cr_assert_eq(core_config_set(cfg, "ingest.window.size_s", "1.5", "flag", eb, sizeof(eb)),
                 CORE_ECONFIG);
    cr_assert(strstr(eb, "expected integer"), "%s", eb);
    cr_assert_eq(core_config_set(cfg, "ingest.feature", "median", "flag", eb, sizeof(eb)),
                 CORE_ECONFIG);
    cr_assert(strstr(eb, "mean|min|max"), "%s", eb);
    cr_assert_eq(core_config_set(cfg, "ingest.ratio", "1e400", "flag", eb, sizeof(eb)),
                 CORE_ECONFIG);
    core_config_free(cfg);
}

Test(config, file_env_and_flags_layer_in_order)
{
    char *dir = ts_tmpdir(), path[512], eb[256];
    struct core_config *cfg = new_cfg();
    char *env[] = {"GCDP_INGEST__WINDOW__SIZE_S=120", "HOME=/root", "GCDP_CONFIG=x", NULL};

    snprintf(path, sizeof(path), "%s/c.json", dir);
    ts_write_file(path, "{\"ingest\": {\"window\": {\"size_s\": 30}, \"feature\": \"max\","
                        " \"bounds\": {\"t\": [0, 50]}},"
                        " \"kafka\": {\"linger.ms\": 7}}");
    cr_assert_eq(core_config_load_file(cfg, path, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(core_config_int(cfg, "ingest.window.size_s"), 30);
    cr_assert(core_config_is_explicit(cfg, "ingest.window.size_s"));
    cr_assert_not(core_config_is_explicit(cfg, "ingest.ratio"));
    cr_assert(json_is_object(core_config_json(cfg, "ingest.bounds")));
    cr_assert_eq(core_config_load_env(cfg, env, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(core_config_int(cfg, "ingest.window.size_s"), 120);
    cr_assert_eq(core_config_set_arg(cfg, "ingest.window.size_s=15", eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(core_config_int(cfg, "ingest.window.size_s"), 15);
    cr_assert_str_eq(core_config_str(cfg, "ingest.feature"), "max");
    core_config_free(cfg);
    ts_rmtree(dir);
    free(dir);
}

Test(config, bad_file_reports_line)
{
    char *dir = ts_tmpdir(), path[512], eb[256];
    struct core_config *cfg = new_cfg();
    snprintf(path, sizeof(path), "%s/c.json", dir);
    ts_write_file(path, "{\"ingest\": {\"feature\": \"mean\",}}");
    cr_assert_eq(core_config_load_file(cfg, path, eb, sizeof(eb)), CORE_EPARSE);
    cr_assert(strstr(eb, "line 1"), "%s", eb);
    ts_write_file(path, "{\"ingest\": {\"nope\": 1}}");
    cr_assert_eq(core_config_load_file(cfg, path, eb, sizeof(eb)), CORE_ECONFIG);
    cr_assert(strstr(eb, "ingest.nope") && strstr(eb, path), "%s", eb);
    core_config_free(cfg);
    ts_rmtree(dir);
    free(dir);
}

Test(config, kafka_overrides_reach_librdkafka_and_bad_ones_are_named)
{
    struct core_config *cfg = new_cfg();
    rd_kafka_conf_t *conf = NULL;
    char eb[512], val[64];
    size_t n = sizeof(val);

    cr_assert_eq(core_config_set(cfg, "kafka.linger.ms", "7", "flag", eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(core_kafka_conf_new(cfg, CORE_KAFKA_CONSUMER, "g", &conf, eb, sizeof(eb)), CORE_OK,
                 "%s", eb);
    cr_assert_eq(rd_kafka_conf_get(conf, "fetch.wait.max.ms", val, &n), RD_KAFKA_CONF_OK);
    cr_assert_str_eq(val, "10");
    n = sizeof(val);
    cr_assert_eq(rd_kafka_conf_get(conf, "enable.auto.commit", val, &n), RD_KAFKA_CONF_OK);
    cr_assert_str_eq(val, "false");
    rd_kafka_conf_destroy(conf);
    cr_assert_eq(core_config_set(cfg, "kafka.no.such.property", "1", "flag", eb, sizeof(eb)),
                 CORE_OK);
    cr_assert_eq(core_kafka_conf_new(cfg, CORE_KAFKA_PRODUCER, NULL, &conf, eb, sizeof(eb)),
                 CORE_ECONFIG);
    cr_assert(strstr(eb, "no.such.property"), "%s", eb);
    core_config_free(cfg);
}

Test(config, version_changes_with_values)
{
    struct core_config *cfg = new_cfg();
    char a[17], b[17], eb[128];
    core_config_version(cfg, "ingest.", a);
    cr_assert_eq(core_config_set_arg(cfg, "ingest.window.size_s=61", eb, sizeof(eb)), CORE_OK);
    core_config_version(cfg, "ingest.", b);
    cr_assert_eq(strlen(a), 16);
    cr_assert_str_neq(a, b);
    core_config_free(cfg);
}

/* Options declared once: rows bound to fields of an options struct fill it with their
 * defaults and with the configured values; other groups and unbound rows are left alone. */
struct bound_opts {
    int64_t window_ms;
    unsigned tries;
    size_t rows;
    double ratio;
    bool strict;
    int untouched;
};

static const struct core_cfg_key bound_keys[] = {
    CORE_KEY_INT_AT("bound.window_ms", "60000", -5, 1e9, "window", 1, I64, bound_opts, window_ms),
    CORE_KEY_INT_AT("bound.tries", "3", 0, 100, "tries", 1, UINT, bound_opts, tries),
    CORE_KEY_INT_AT("bound.rows", "9216", 1, 65536, "rows", 1, SIZE, bound_opts, rows),
    CORE_KEY_DBL_AT("bound.ratio", "0.25", 0, 1, "ratio", 1, bound_opts, ratio),
    CORE_KEY_BOOL_AT("bound.strict", "true", "strict", 1, bound_opts, strict),
    CORE_KEY_INT_AT("bound.other", "7", 0, 10, "another struct", 2, UINT, bound_opts, tries),
    CORE_KEY_INT("bound.unbound", "5", 0, 10, "not bound"),
    {0},
};

Test(config, bound_rows_fill_defaults_and_values)
{
    const struct core_cfg_key *const t[] = {bound_keys};
    struct core_config *cfg = core_config_new(t, 1);
    struct bound_opts o = {.untouched = 42};
    char eb[256] = "";

    cr_assert_not_null(cfg);
    cr_assert_eq(core_cfg_defaults(bound_keys, 1, &o, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(o.window_ms, 60000);
    cr_assert_eq(o.tries, 3u, "group 2's row does not touch group 1's struct");
    cr_assert_eq(o.rows, 9216u);
    cr_assert_eq(o.ratio, 0.25);
    cr_assert(o.strict);
    cr_assert_eq(o.untouched, 42);
    cr_assert_eq(core_config_set(cfg, "bound.window_ms", "-5", "flag", eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(core_config_set(cfg, "bound.ratio", "1", "flag", eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(core_config_set(cfg, "bound.strict", "false", "flag", eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(core_config_set(cfg, "bound.other", "9", "flag", eb, sizeof(eb)), CORE_OK);
    core_cfg_read(cfg, bound_keys, 1, &o);
    cr_assert_eq(o.window_ms, -5);
    cr_assert_eq(o.ratio, 1.0, "an integer literal for a number key");
    cr_assert(!o.strict);
    cr_assert_eq(o.tries, 3u);
    core_cfg_read(cfg, bound_keys, 2, &o);
    cr_assert_eq(o.tries, 9u);
    core_config_free(cfg);
}

/* core_cfg_read_explicit: only the keys an operator set replace the fields; the others keep
 * what the caller put there, not the keys' defaults. */
Test(config, bound_rows_read_explicit_only)
{
    const struct core_cfg_key *const t[] = {bound_keys};
    struct core_config *cfg = core_config_new(t, 1);
    struct bound_opts o = {.window_ms = 11, .tries = 12, .rows = 13, .ratio = 0.5};
    char eb[256] = "";

    cr_assert_not_null(cfg);
    core_cfg_read_explicit(cfg, bound_keys, 1, &o);
    cr_assert(o.window_ms == 11 && o.tries == 12 && o.rows == 13 && o.ratio == 0.5,
              "nothing set: nothing replaced (not even by a default)");
    cr_assert_eq(core_config_set(cfg, "bound.rows", "99", "flag", eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(core_config_set(cfg, "bound.other", "9", "flag", eb, sizeof(eb)), CORE_OK);
    core_cfg_read_explicit(cfg, bound_keys, 1, &o);
    cr_assert_eq(o.rows, 99u);
    cr_assert_eq(o.tries, 12u, "group 2's explicit key does not touch group 1");
    cr_assert_eq(o.window_ms, 11);
    core_config_free(cfg);
}

/* A row bound to a field its key type cannot fill is refused when the configuration is
 * built, and its default is refused by core_cfg_defaults (both programmer errors). */
Test(config, bindings_that_do_not_fit_are_refused)
{
    static const struct core_cfg_key neg_size[] = {
        CORE_KEY_INT_AT("bound.rows", "1", -1, 10, "rows", 1, SIZE, bound_opts, rows),
        {0},
    };
    static const struct core_cfg_key bad_default[] = {
        CORE_KEY_DBL_AT("bound.ratio", "\"x\"", 0, 1, "ratio", 1, bound_opts, ratio),
        {0},
    };
    const struct core_cfg_key *const t[] = {neg_size};
    struct bound_opts o = {0};
    char eb[256] = "";

    core_log_level = CORE_LOG_OFF;
    cr_assert_null(core_config_new(t, 1), "SIZE field of a key that may be negative");
    cr_assert_eq(core_cfg_defaults(neg_size, 1, &o, eb, sizeof(eb)), CORE_EINVAL);
    cr_assert_eq(core_cfg_defaults(bad_default, 1, &o, eb, sizeof(eb)), CORE_EINVAL);
    cr_assert(strstr(eb, "bound.ratio"), "%s", eb);
}
