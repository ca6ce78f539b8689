/* params.c - ingest parameters: defaults, reading ingest.* keys, validation (ing/engine.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ing/config.h"
#include "ing/engine.h"
#include "ing_int.h"

/* Default channel table (the ingest.channels default). Domains are sensor/physical
 * limits (values outside are rejected: a broken sensor, not weather); clip intervals
 * are the public, frozen normalization bounds. Covers the simulator's Intel-Lab-like
 * channels (temperature, humidity, light, voltage) and the UCI Occupancy channels
 * (temperature, humidity, light, co2, humidity_ratio). See docs/ingest.md. */
const char ing_default_channels_json[] =
    "{\"temperature\":{\"domain\":[-40,125],\"clip\":[10,40]},"
    "\"humidity\":{\"domain\":[0,100],\"clip\":[0,100]},"
    "\"light\":{\"domain\":[0,100000],\"clip\":[0,2000]},"
    "\"voltage\":{\"domain\":[0,5],\"clip\":[2,3]},"
    "\"co2\":{\"domain\":[0,10000],\"clip\":[300,2500]},"
    "\"humidity_ratio\":{\"domain\":[0,0.1],\"clip\":[0.001,0.01]}}";

static const struct {
    const char *name;
    enum ing_feature bit;
} feature_names[] = {
    {"mean", ING_F_MEAN}, {"count", ING_F_COUNT}, {"min", ING_F_MIN},
    {"max", ING_F_MAX},   {"std", ING_F_STD},
};

const char *ing__feature_name(unsigned bit)
{
    for (size_t i = 0; i < sizeof(feature_names) / sizeof(*feature_names); i++)
        if (feature_names[i].bit == bit)
            return feature_names[i].name;
    return "unknown";
}

/* Channel names become JSON member names and node names: keep them plain. */
static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > ING_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return false;
    }
    return true;
}

static bool pair_get(const json_t *obj, const char *member, double *lo, double *hi)
{
    const json_t *a = json_object_get(obj, member);
    if (!json_is_array(a) || json_array_size(a) != 2 || !json_is_number(json_array_get(a, 0)) ||
        !json_is_number(json_array_get(a, 1)))
        return false;
    *lo = json_number_value(json_array_get(a, 0));
    *hi = json_number_value(json_array_get(a, 1));
    return true;
}

static core_err channel_parse(struct ing_channel *ch, const char *name, const json_t *spec,
                              char *eb, size_t ebn)
{
    const char *k;
    const json_t *v;

    if (!name_ok(name)) {
        snprintf(eb, ebn,
                 "config key 'ingest.channels': channel name '%.40s' must be 1..%d "
                 "characters of [A-Za-z0-9_-]",
                 name, ING_NAME_MAX);
        return CORE_ECONFIG;
    }
    if (!json_is_object(spec)) {
        snprintf(eb, ebn,
                 "config key 'ingest.channels': '%s' must be an object "
                 "{\"domain\":[min,max],\"clip\":[L,U]}",
                 name);
        return CORE_ECONFIG;
    }
    json_object_foreach((json_t *)spec, k, v)
    {
        if (strcmp(k, "domain") != 0 && strcmp(k, "clip") != 0) {
            snprintf(eb, ebn, "config key 'ingest.channels': '%s' has unknown member '%.40s'", name,
                     k);
            return CORE_ECONFIG;
        }
    }
    snprintf(ch->name, sizeof(ch->name), "%s", name);
    if (!pair_get(spec, "domain", &ch->dom_lo, &ch->dom_hi) ||
        !pair_get(spec, "clip", &ch->clip_lo, &ch->clip_hi)) {
        snprintf(eb, ebn,
                 "config key 'ingest.channels': '%s' needs \"domain\":[min,max] and "
                 "\"clip\":[L,U] (numbers)",
                 name);
        return CORE_ECONFIG;
    }
    /* Written as negations so NaN fails closed. */
    if (!(ch->dom_lo < ch->dom_hi) || !(ch->clip_lo < ch->clip_hi) || !isfinite(ch->dom_lo) ||
        !isfinite(ch->dom_hi) || !isfinite(ch->clip_lo) || !isfinite(ch->clip_hi)) {
        snprintf(eb, ebn,
                 "config key 'ingest.channels': '%s' needs finite min < max and "
                 "L < U",
                 name);
        return CORE_ECONFIG;
    }
    return CORE_OK;
}

core_err ing_params_set_channels(struct ing_params *p, const json_t *channels, char *errbuf,
                                 size_t errbuf_size)
{
    const char *name;
    const json_t *spec;
    size_t n = 0;

    if (!json_is_object(channels) || json_object_size(channels) == 0) {
        snprintf(errbuf, errbuf_size,
                 "config key 'ingest.channels': expected a non-empty object "
                 "{channel: {\"domain\":[min,max],\"clip\":[L,U]}}");
        return CORE_ECONFIG;
    }
    if (json_object_size(channels) > ING_MAX_CHANNELS) {
        snprintf(errbuf, errbuf_size, "config key 'ingest.channels': more than %d channels",
                 ING_MAX_CHANNELS);
        return CORE_ECONFIG;
    }
    json_object_foreach((json_t *)channels, name, spec)
    {
        core_err rc = channel_parse(&p->channels[n], name, spec, errbuf, errbuf_size);
        if (rc != CORE_OK)
            return rc;
        n++;
    }
    p->n_channels = n;
    p->n_nodes = 0; /* node indexes referred to the old table */
    return CORE_OK;
}

static int channel_index(const struct ing_params *p, const char *name)
{
    for (size_t i = 0; i < p->n_channels; i++)
        if (strcmp(p->channels[i].name, name) == 0)
            return (int)i;
    return -1;
}

core_err ing__params_set_features(struct ing_params *p, const json_t *arr, char *eb, size_t ebn)
{
    size_t i;
    const json_t *v;
    unsigned bits = 0;

    if (!json_is_array(arr) || json_array_size(arr) == 0)
        goto bad;
    json_array_foreach(arr, i, v)
    {
        unsigned bit = 0;
        for (size_t f = 0; f < sizeof(feature_names) / sizeof(*feature_names); f++)
            if (json_is_string(v) && strcmp(json_string_value(v), feature_names[f].name) == 0)
                bit = feature_names[f].bit;
        if (bit == 0 || (bits & bit))
            goto bad;
        bits |= bit;
    }
    p->features = bits;
    return CORE_OK;
bad:
    snprintf(eb, ebn,
             "config key 'ingest.features': expected a non-empty array of distinct "
             "names from mean|count|min|max|std");
    return CORE_ECONFIG;
}

core_err ing__params_set_nodes(struct ing_params *p, const json_t *arr, char *eb, size_t ebn)
{
    size_t i;
    const json_t *v;
    bool seen[ING_MAX_CHANNELS] = {false};

    if (!json_is_array(arr) || json_array_size(arr) > ING_MAX_CHANNELS) {
        snprintf(eb, ebn,
                 "config key 'ingest.nodes': expected an array of channel names "
                 "([] = every channel present in the window)");
        return CORE_ECONFIG;
    }
    json_array_foreach(arr, i, v)
    {
        int c = json_is_string(v) ? channel_index(p, json_string_value(v)) : -1;
        if (c < 0 || seen[c]) {
            snprintf(eb, ebn,
                     "config key 'ingest.nodes': entry %zu is not a distinct channel "
                     "declared in ingest.channels",
                     i);
            return CORE_ECONFIG;
        }
        seen[c] = true;
        p->node_channel[i] = (size_t)c;
    }
    p->n_nodes = json_array_size(arr);
    return CORE_OK;
}

void ing_params_default(struct ing_params *p)
{
    json_t *ch = json_loads(ing_default_channels_json, 0, NULL);
    char eb[256];

    memset(p, 0, sizeof(*p));
    /* The ingest.* rows of ing_config_keys state the numeric defaults once (window, period,
     * lateness, ts bounds, caps, ...); core_config_new and tests/ingest/test_config.c check
     * them. Were one not to fit, its field stays 0 and ing_params_validate refuses. */
    if (core_cfg_defaults(ing_config_keys, ING_KEYS_PARAMS, p, eb, sizeof(eb)) != CORE_OK)
        p->window_ms = 0;
    p->hop_ms = p->window_ms; /* ingest.window.hop_ms 0: tumbling */
    p->has_split = false;
    p->key_policy = ING_KEY_REQUIRE;
    p->decoder = ING_DECODER_SIMDJSON;
    p->out_format = ING_OUT_BINARY; /* gcdp.window/3; ingest.output.format */
    p->features = ING_F_MEAN;
    p->emit_excluded = true;
    /* The literal is ours and tested; a failure here is a programmer error. */
    if (!ch || ing_params_set_channels(p, ch, eb, sizeof(eb)) != CORE_OK)
        p->n_channels = 0;
    json_decref(ch);
    snprintf(p->config_version, sizeof(p->config_version), "0000000000000000");
}

static core_err fail(char *eb, size_t ebn, const char *key, const char *why)
{
    snprintf(eb, ebn, "config key '%s': %s", key, why);
    return CORE_ECONFIG;
}

static int64_t floor_mod(int64_t a, int64_t b)
{
    int64_t m = a % b;
    return m < 0 ? m + b : m;
}

static core_err validate_window(const struct ing_params *p, char *eb, size_t ebn)
{
    if (!(p->period_ms > 0))
        return fail(eb, ebn, "ingest.period_ms", "must be > 0");
    if (!(p->window_ms > 0) || p->window_ms % p->period_ms != 0)
        return fail(eb, ebn, "ingest.window.size_ms",
                    "must be a positive multiple of "
                    "ingest.period_ms");
    if (p->window_ms / p->period_ms > ING_MAX_SLOTS)
        return fail(eb, ebn, "ingest.window.size_ms", "more than 10000 sampling periods");
    if (!(p->hop_ms > 0) || p->hop_ms > p->window_ms || p->hop_ms % p->period_ms != 0)
        return fail(eb, ebn, "ingest.window.hop_ms",
                    "must be a multiple of ingest.period_ms "
                    "in (0, ingest.window.size_ms] (0 in the config = tumbling)");
    if (p->has_split && floor_mod(p->split_at_ms - p->origin_ms, p->hop_ms) != 0)
        return fail(eb, ebn, "ingest.split_at_ms",
                    "must lie on the window grid "
                    "(origin_ms + k * hop)");
    if (p->max_interp_gap < 0 || p->max_interp_gap > ING_MAX_SLOTS)
        return fail(eb, ebn, "ingest.max_interp_gap", "must be in [0, 10000]");
    if (!(p->min_coverage >= 0.0 && p->min_coverage <= 1.0))
        return fail(eb, ebn, "ingest.min_coverage", "must be in [0, 1]");
    return CORE_OK;
}

static core_err validate_limits(const struct ing_params *p, char *eb, size_t ebn)
{
    if (p->lateness_ms < 0)
        return fail(eb, ebn, "ingest.lateness_ms", "must be >= 0");
    if (p->device_ttl_ms < 0)
        return fail(eb, ebn, "ingest.device_ttl_ms", "must be >= 0");
    if (p->idle_timeout_ms < 0)
        return fail(eb, ebn, "ingest.idle_timeout_ms", "must be >= 0");
    if (!(p->ts_min_ms < p->ts_max_ms))
        return fail(eb, ebn, "ingest.ts_max_ms", "must be > ingest.ts_min_ms");
    if (p->ts_min_ms < ING_TS_FLOOR || p->ts_max_ms > ING_TS_CEIL)
        return fail(eb, ebn, "ingest.ts_min_ms", "range must lie within years 1970..9999");
    if (p->max_future_ms < 0 || p->max_future_ms > ING_TS_CEIL)
        return fail(eb, ebn, "ingest.max_future_ms", "must be in [0, 253402300800000] (0 = off)");
    if (p->max_jump_ms < 0 || p->max_jump_ms > ING_TS_CEIL)
        return fail(eb, ebn, "ingest.max_jump_ms", "must be in [0, 253402300800000] (0 = off)");
    if (p->jump_confirm < 0 || p->jump_confirm > 1000000)
        return fail(eb, ebn, "ingest.jump_confirm", "must be in [0, 1000000] (0 = never)");
    if (p->max_jump_ms != 0 && p->max_jump_ms < p->period_ms)
        return fail(eb, ebn, "ingest.max_jump_ms",
                    "must be 0 (off) or >= ingest.period_ms (consecutive readings are a period "
                    "apart)");
    if (p->max_message_bytes < 64 || p->max_message_bytes > ING_MAX_MESSAGE_BYTES)
        return fail(eb, ebn, "ingest.max_message_bytes", "must be in [64, 1048576]");
    if (p->decoder != ING_DECODER_SIMDJSON && p->decoder != ING_DECODER_JANSSON)
        return fail(eb, ebn, "ingest.decoder", "must be simdjson or jansson");
    if (p->out_format != ING_OUT_JSON && p->out_format != ING_OUT_BINARY)
        return fail(eb, ebn, "ingest.output.format", "must be json or binary");
    if (p->max_devices < 1 || p->max_devices > ING_MAX_DEVICES_CAP)
        return fail(eb, ebn, "ingest.max_devices", "must be in [1, 1000000]");
    if (p->max_buffer < 1 || p->max_buffer > ING_MAX_BUFFER_CAP)
        return fail(eb, ebn, "ingest.max_buffer_per_device", "must be in [1, 65536]");
    if (p->features == 0 || (p->features & ~(unsigned)0x1f) != 0)
        return fail(eb, ebn, "ingest.features", "at least one of mean|count|min|max|std");
    return CORE_OK;
}

core_err ing_params_validate(const struct ing_params *p, char *errbuf, size_t errbuf_size)
{
    core_err rc = validate_window(p, errbuf, errbuf_size);
    if (rc == CORE_OK)
        rc = validate_limits(p, errbuf, errbuf_size);
    if (rc != CORE_OK)
        return rc;
    if (p->n_channels == 0 || p->n_channels > ING_MAX_CHANNELS)
        return fail(errbuf, errbuf_size, "ingest.channels", "needs 1..32 channels");
    for (size_t i = 0; i < p->n_channels; i++) {
        const struct ing_channel *c = &p->channels[i];
        if (!name_ok(c->name) || !(c->dom_lo < c->dom_hi) || !(c->clip_lo < c->clip_hi) ||
            !isfinite(c->dom_lo) || !isfinite(c->dom_hi) || !isfinite(c->clip_lo) ||
            !isfinite(c->clip_hi))
            return fail(errbuf, errbuf_size, "ingest.channels",
                        "a channel has a bad name or interval");
        for (size_t j = 0; j < i; j++)
            if (strcmp(p->channels[j].name, c->name) == 0)
                return fail(errbuf, errbuf_size, "ingest.channels", "duplicate channel name");
    }
    if (p->n_nodes > p->n_channels)
        return fail(errbuf, errbuf_size, "ingest.nodes", "more nodes than channels");
    for (size_t i = 0; i < p->n_nodes; i++)
        if (p->node_channel[i] >= p->n_channels)
            return fail(errbuf, errbuf_size, "ingest.nodes", "refers to an undeclared channel");
    return CORE_OK;
}

static core_err read_ints(const struct core_config *cfg, struct ing_params *p)
{
    int64_t hop = core_config_int(cfg, "ingest.window.hop_ms");

    core_cfg_read(cfg, ing_config_keys, ING_KEYS_PARAMS, p); /* the table's bound rows */
    p->hop_ms = hop == 0 ? p->window_ms : hop;
    p->has_split = core_config_is_set(cfg, "ingest.split_at_ms");
    p->split_at_ms = p->has_split ? core_config_int(cfg, "ingest.split_at_ms") : 0;
    return CORE_OK;
}

/* Keys that change how windows are written, not what they say: left out of config_version,
 * so a window keeps its id in either encoding. */
static const char *const version_skip[] = {"ingest.output.format", NULL};

core_err ing_params_from_config(const struct core_config *cfg, struct ing_params *p, char *errbuf,
                                size_t errbuf_size)
{
    const char *kp;
    core_err rc;

    ing_params_default(p);
    rc = read_ints(cfg, p);
    kp = core_config_str(cfg, "ingest.key_policy");
    p->key_policy = !kp || strcmp(kp, "require") == 0 ? ING_KEY_REQUIRE
                    : strcmp(kp, "match") == 0        ? ING_KEY_MATCH
                                                      : ING_KEY_IGNORE;
    kp = core_config_str(cfg, "ingest.decoder");
    p->decoder = kp && strcmp(kp, "jansson") == 0 ? ING_DECODER_JANSSON : ING_DECODER_SIMDJSON;
    kp = core_config_str(cfg, "ingest.output.format");
    p->out_format = kp && strcmp(kp, "binary") == 0 ? ING_OUT_BINARY : ING_OUT_JSON;
    if (rc == CORE_OK)
        rc = ing_params_set_channels(p, core_config_json(cfg, "ingest.channels"), errbuf,
                                     errbuf_size);
    if (rc == CORE_OK)
        rc = ing__params_set_nodes(p, core_config_json(cfg, "ingest.nodes"), errbuf, errbuf_size);
    if (rc == CORE_OK)
        rc = ing__params_set_features(p, core_config_json(cfg, "ingest.features"), errbuf,
                                      errbuf_size);
    if (rc == CORE_OK)
        rc = ing_params_validate(p, errbuf, errbuf_size);
    if (rc == CORE_OK)
        core_config_version_except(cfg, "ingest.", version_skip, p->config_version);
    return rc;
}
