/* config_keys.c - the ingest stage's configuration keys (see ing/config.h, docs/ingest.md).
 * Cross-key rules (hop <= size, multiples of the period, split on the grid, nodes among
 * channels) are checked by ing_params_from_config(), which every ingest command calls. */
#include "ing/config.h"

#include <stdio.h>

#include "core/cfg_keys.h"
#include "ing/engine.h"
#include "ing_int.h"

static core_err check_channels(const json_t *v, char *eb, size_t ebn)
{
    struct ing_params p;
    ing_params_default(&p);
    return ing_params_set_channels(&p, v, eb, ebn);
}

static core_err check_features(const json_t *v, char *eb, size_t ebn)
{
    struct ing_params p;
    ing_params_default(&p);
    return ing__params_set_features(&p, v, eb, ebn);
}

/* Only the shape here: which names are channels depends on ingest.channels, checked
 * together in ing_params_from_config(). */
static core_err check_nodes(const json_t *v, char *eb, size_t ebn)
{
    size_t i;
    const json_t *e;

    if (!json_is_array(v) || json_array_size(v) > ING_MAX_CHANNELS)
        goto bad;
    json_array_foreach(v, i, e)
    {
        if (!json_is_string(e))
            goto bad;
    }
    return CORE_OK;
bad:
    snprintf(eb, ebn,
             "config key 'ingest.nodes': expected an array of at most %d channel "
             "names",
             ING_MAX_CHANNELS);
    return CORE_ECONFIG;
}

#define DAY_MS 86400000.0

const struct core_cfg_key ing_config_keys[] = {
    K_INT_AT("ingest.window.size_ms", "900000", 1, 7 * DAY_MS,
             "window length, ms (multiple of ingest.period_ms)", ING_KEYS_PARAMS, I64, ing_params,
             window_ms),
    K_INT("ingest.window.hop_ms", "0", 0, 7 * DAY_MS,
          "hop between window starts, ms; 0 = tumbling (hop = size)"),
    K_INT_AT("ingest.window.origin_ms", "0", -9007199254740992.0, 9007199254740992.0,
             "epoch ms the window grid and the sampling grid are aligned to", ING_KEYS_PARAMS, I64,
             ing_params, origin_ms),
    K_INT("ingest.split_at_ms", NULL, 0, 253402300800000.0,
          "optional epoch ms no window may cross (must be on the window grid); unset: none"),
    K_INT_AT("ingest.period_ms", "60000", 1, DAY_MS,
             "expected sampling period, ms; ts is snapped to the nearest grid point",
             ING_KEYS_PARAMS, I64, ing_params, period_ms),
    K_INT_AT("ingest.lateness_ms", "120000", 0, 7 * DAY_MS,
             "allowed event-time lateness: watermark = max slot time - lateness", ING_KEYS_PARAMS,
             I64, ing_params, lateness_ms),
    K_INT_AT("ingest.idle_timeout_ms", "60000", 0, 7 * DAY_MS,
             "close a device's windows after this much processing time without readings; 0: never",
             ING_KEYS_PARAMS, I64, ing_params, idle_timeout_ms),
    K_INT_AT("ingest.device_ttl_ms", "3600000", 0, 30 * DAY_MS,
             "drop a device's entry this long after its last reading once its windows closed; "
             "0: never",
             ING_KEYS_PARAMS, I64, ing_params, device_ttl_ms),
    K_INT_AT("ingest.ts_min_ms", "946684800000", 0, 253402300800000.0,
             "earliest accepted ts (inclusive), epoch ms", ING_KEYS_PARAMS, I64, ing_params,
             ts_min_ms),
    K_INT_AT("ingest.ts_max_ms", "4102444800000", 0, 253402300800000.0,
             "latest accepted ts (exclusive), epoch ms", ING_KEYS_PARAMS, I64, ing_params,
             ts_max_ms),
    K_INT_AT("ingest.max_future_ms", "0", 0, 253402300800000.0,
             "reject (ts_in_future) a reading whose ts is more than this beyond processing time; "
             "0: off (the simulator's clock may run ahead of the wall clock)",
             ING_KEYS_PARAMS, I64, ing_params, max_future_ms),
    K_INT_AT("ingest.max_jump_ms", "86400000", 0, 253402300800000.0,
             "reject (ts_jump) a reading more than this ahead of its device's latest buffered "
             "one, so one wrong clock cannot close the device's windows; 0: off",
             ING_KEYS_PARAMS, I64, ing_params, max_jump_ms),
    K_INT_AT("ingest.jump_confirm", "3", 0, 1000000,
             "consecutive ts_jump readings of a device agreeing within ingest.max_jump_ms after "
             "which its stream restarts at the new time (the last one is accepted); 0: never",
             ING_KEYS_PARAMS, INT, ing_params, jump_confirm),
    K_INT_AT("ingest.max_interp_gap", "2", 0, ING_MAX_SLOTS,
             "longest run of missing samples filled by linear interpolation; longer: excluded",
             ING_KEYS_PARAMS, INT, ing_params, max_interp_gap),
    K_DBL_AT("ingest.min_coverage", "0.5", 0, 1,
             "minimum fraction of a window's sampling slots holding a real sample, per node",
             ING_KEYS_PARAMS, ing_params, min_coverage),
    K_INT_AT("ingest.max_message_bytes", "65536", 64, ING_MAX_MESSAGE_BYTES,
             "larger raw messages are dead-lettered as oversize", ING_KEYS_PARAMS, SIZE, ing_params,
             max_message_bytes),
    K_INT_AT("ingest.max_devices", "100000", 1, ING_MAX_DEVICES_CAP,
             "device entries held; readings of further devices are dead-lettered", ING_KEYS_PARAMS,
             SIZE, ing_params, max_devices),
    K_INT_AT("ingest.max_buffer_per_device", "4096", 1, ING_MAX_BUFFER_CAP,
             "readings buffered per device (open windows + lateness)", ING_KEYS_PARAMS, SIZE,
             ing_params, max_buffer),
    CORE_KEY("ingest.key_policy", CORE_CFG_ENUM, "\"require\"", 1, 0, "require|match|ignore",
             "message key vs device: require equal, match when present, or ignore", NULL),
    CORE_KEY(
        "ingest.decoder", CORE_CFG_ENUM, "\"simdjson\"", 1, 0, "simdjson|jansson",
        "reading decoder: simdjson (fast path, jansson for what it does not accept) or jansson "
        "alone; both give the same result reading by reading",
        NULL),
    CORE_KEY("ingest.output.format", CORE_CFG_ENUM, "\"binary\"", 1, 0, "json|binary",
             "window record encoding on the windows topic: json (gcdp.window/2) or binary "
             "(gcdp.window/3, same content, several times cheaper to read; schemas/window3.md); "
             "not part of config_version",
             NULL),
    CORE_KEY("ingest.features", CORE_CFG_JSON, "[\"mean\"]", 1, 0, NULL,
             "window features per node, from mean|count|min|max|std", check_features),
    K_BOOL_AT("ingest.emit_excluded", "true",
              "also emit excluded windows ({\"excluded\": true, reason}) on the windows topic",
              ING_KEYS_PARAMS, ing_params, emit_excluded),
    CORE_KEY("ingest.prefetch_refill", CORE_CFG_BOOL, "true", 1, 0, NULL,
             "wake librdkafka's fetcher when the bounded prefetch queue has drained "
             "(core_kconsumer_set_refill); false: wait for its own 1 s wake-up",
             NULL),
    CORE_KEY("ingest.channels", CORE_CFG_JSON, ing_default_channels_json, 1, 0, NULL,
             "{channel: {\"domain\":[min,max], \"clip\":[L,U]}}: physical domain and public clip",
             check_channels),
    CORE_KEY("ingest.nodes", CORE_CFG_JSON, "[]", 1, 0, NULL,
             "channels that form window nodes (required); []: every channel present in the window",
             check_nodes),
    {0},
};
