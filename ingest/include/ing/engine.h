/* ing/engine.h - the pure ingest engine: decode, validate, dead-letter, dedup, reorder,
 * window, interpolate, clip/normalize, featurize (DESIGN.md §5 "ingest").
 * SPDX-License-Identifier: Apache-2.0
 *
 * The engine does no I/O: the service (ingest/src/svc) hands it raw Kafka messages and
 * the processing clock; the engine calls the sink's callbacks synchronously with the
 * encoded window records (schema gcdp.window/1, key = device) and dead-letter records
 * (schema gcdp.rejected/1, key = the original message key). docs/ingest.md has the full
 * semantics; the short version:
 *
 *   - Every pushed message is either ACCEPTED or REJECTED with exactly one reason code
 *     (enum ing_reason, stable snake_case names), so consumed = accepted + rejected.
 *   - Slot time: a reading's ts is snapped to the nearest point of the sampling grid
 *     origin + j*period (ties go up): tau = origin + floor((ts - origin + period/2) / period)
 *     * period. Window membership, the watermark and slots all use tau.
 *   - Window k covers slot times [origin + k*hop, origin + k*hop + size). Windows that
 *     would straddle split_at_ms are never formed.
 *   - Watermark per device = max tau seen - lateness_ms. Window k closes (is emitted) when
 *     watermark >= its end, when the device is idle for idle_timeout_ms of processing
 *     time (ing_engine_tick), or at ing_engine_flush. A reading all of whose windows have
 *     closed is rejected "late"; an exact (device, ts) repeat still buffered is "duplicate".
 *   - Time guards: a reading more than max_jump_ms ahead of its device's buffered stream is
 *     rejected "ts_jump" (so one wrong clock cannot close the device's windows) unless it
 *     is the jump_confirm-th consecutive jump agreeing with the previous ones (the device's
 *     windows are then closed and its stream restarts there); when max_future_ms > 0, a
 *     reading more than max_future_ms beyond now_ms is "ts_in_future".
 *
 * Offsets / at-least-once: the engine remembers the (partition, offset) of every reading
 * it still buffers. ing_engine_low_watermark() gives, per partition, the lowest offset
 * still held. Every emitted window reports the [min, max] offsets per partition it used
 * (struct ing_window_info) so the service can hold them until the broker acks the
 * window. The service may commit offset c (Kafka "next offset to read") for partition p
 * when c <= min(engine low watermark of p, lowest offset used by an un-acked window or
 * dead letter of p, next offset to consume of p).
 *
 * Thread-safety: an engine is single-threaded (one per consumer). Distinct engines are
 * independent. Callbacks run on the caller's thread, inside the call that triggers them,
 * and must not call back into the same engine (another engine is fine).
 * Process-wide effect: the first ing_engine_new (or ing_engine_global_init) installs
 * jansson allocation hooks (json_set_alloc_funcs) that give each engine a parse arena;
 * they behave as malloc/free for every other jansson use. See ing_engine_global_init.
 */
#ifndef ING_ENGINE_H
#define ING_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/err.h"

/* Hard caps (STYLE P8). Configured values are validated against them. */
#define ING_MAX_CHANNELS      32    /* channels declared in ingest.channels */
#define ING_NAME_MAX          32    /* channel name length, bytes, excluding NUL */
#define ING_DEVICE_MAX        64    /* device id length, bytes */
#define ING_MAX_SLOTS         10000 /* window size / period */
#define ING_MAX_MESSAGE_BYTES 1048576
#define ING_MAX_DEVICES_CAP   1000000
#define ING_MAX_BUFFER_CAP    65536 /* readings buffered per device */
#define ING_SCHEMA_READING    "gcdp.reading/1"
#define ING_SCHEMA_WINDOW     "gcdp.window/2"
/* Normalization every node value went through (window record "prov.norm"): clip to the
 * channel's public [clip_lo, clip_hi], then map linearly onto [0, 1]. */
#define ING_NORM_NAME       "clip_minmax"
#define ING_SCHEMA_REJECTED "gcdp.rejected/1"

/* Reject reasons: X(enum, "code", "description"). Codes are stable; never renumber or
 * rename one (consumers of sensors.rejected and /metrics key on the code); new codes are
 * appended. The checks run in the order below (the first failing check wins), except the
 * appended ones: ts_in_future runs right after ts_out_of_range, ts_jump right after
 * too_many_devices (docs/ingest.md lists the codes in check order). */
#define ING_REASON_MAP(X)                                                                          \
    X(ING_R_NONE, "accepted", "not rejected")                                                      \
    X(ING_R_OVERSIZE, "oversize", "payload larger than ingest.max_message_bytes")                  \
    X(ING_R_EMPTY_PAYLOAD, "empty_payload", "zero-length payload (or tombstone)")                  \
    X(ING_R_INVALID_UTF8, "invalid_utf8", "payload is not valid UTF-8")                            \
    X(ING_R_NUL_CHARACTER, "nul_character", "JSON string contains \\u0000")                        \
    X(ING_R_TRUNCATED, "truncated", "JSON ends before the document is complete")                   \
    X(ING_R_TRAILING_DATA, "trailing_data", "bytes after the JSON document")                       \
    X(ING_R_TOO_DEEP, "too_deep", "JSON nesting deeper than the parser allows")                    \
    X(ING_R_DUPLICATE_KEY, "duplicate_key", "a JSON object repeats a member name")                 \
    X(ING_R_MALFORMED_JSON, "malformed_json", "not JSON (syntax error)")                           \
    X(ING_R_NOT_OBJECT, "not_object", "top-level JSON value is not an object")                     \
    X(ING_R_MISSING_SCHEMA, "missing_schema", "no \"schema\" member")                              \
    X(ING_R_UNSUPPORTED_SCHEMA, "unsupported_schema", "\"schema\" is not gcdp.reading/1")          \
    X(ING_R_UNKNOWN_FIELD, "unknown_field", "top-level member not in gcdp.reading/1")              \
    X(ING_R_MISSING_DEVICE, "missing_device", "no \"device\" member")                              \
    X(ING_R_DEVICE_WRONG_TYPE, "device_wrong_type", "\"device\" is not a string")                  \
    X(ING_R_DEVICE_EMPTY, "device_empty", "\"device\" is the empty string")                        \
    X(ING_R_DEVICE_TOO_LONG, "device_too_long", "\"device\" longer than 64 bytes")                 \
    X(ING_R_DEVICE_BAD_CHARS, "device_bad_chars", "\"device\" outside [A-Za-z0-9._:-]")            \
    X(ING_R_MISSING_KEY, "missing_key", "message has no key (ingest.key_policy=require)")          \
    X(ING_R_KEY_MISMATCH, "key_mismatch", "message key differs from \"device\"")                   \
    X(ING_R_MISSING_TS, "missing_ts", "no \"ts\" member")                                          \
    X(ING_R_TS_WRONG_TYPE, "ts_wrong_type", "\"ts\" neither string nor integer")                   \
    X(ING_R_TS_UNPARSEABLE, "ts_unparseable", "\"ts\" string is not a supported format")           \
    X(ING_R_TS_OUT_OF_RANGE, "ts_out_of_range", "\"ts\" outside [ts_min_ms, ts_max_ms)")           \
    X(ING_R_SEQ_WRONG_TYPE, "seq_wrong_type", "\"seq\" present but not an integer >= 0")           \
    X(ING_R_MISSING_READINGS, "missing_readings", "no \"readings\" member")                        \
    X(ING_R_READINGS_NOT_OBJECT, "readings_not_object", "\"readings\" is not an object")           \
    X(ING_R_READINGS_EMPTY, "readings_empty", "\"readings\" has no members")                       \
    X(ING_R_UNKNOWN_CHANNEL, "unknown_channel", "channel not declared in ingest.channels")         \
    X(ING_R_WRONG_TYPE, "wrong_type", "channel value neither number nor null")                     \
    X(ING_R_NON_FINITE, "non_finite", "NaN/Infinity (as string or token) or overflow")             \
    X(ING_R_OUT_OF_DOMAIN, "out_of_domain", "value outside the channel's physical domain")         \
    X(ING_R_TOO_MANY_DEVICES, "too_many_devices", "new device beyond ingest.max_devices")          \
    X(ING_R_LATE, "late", "every window the reading belongs to has already closed")                \
    X(ING_R_DUPLICATE, "duplicate", "same (device, ts) already buffered")                          \
    X(ING_R_BUFFER_FULL, "buffer_full", "device buffer at ingest.max_buffer_per_device")           \
    X(ING_R_TS_IN_FUTURE, "ts_in_future", "\"ts\" beyond processing time + ingest.max_future_ms")  \
    X(ING_R_TS_JUMP, "ts_jump", "\"ts\" beyond the device's latest + ingest.max_jump_ms")

enum ing_reason {
#define X(name, code, desc) name,
    ING_REASON_MAP(X)
#undef X
        ING_REASON_COUNT
};

/* Stable code ("out_of_domain"); "unknown" for values outside the enum. Static string. */
const char *ing_reason_code(enum ing_reason r);
/* One-line description. Static string. */
const char *ing_reason_desc(enum ing_reason r);

/* Why a window was excluded (emitted with "excluded": true and no values). */
#define ING_EXCL_MAP(X)                                                                            \
    X(ING_X_NONE, "none")                                                                          \
    X(ING_X_LOW_COVERAGE, "low_coverage")                                                          \
    X(ING_X_LONG_GAP, "long_gap")                                                                  \
    X(ING_X_NO_DATA, "no_data")

enum ing_excl {
#define X(name, code) name,
    ING_EXCL_MAP(X)
#undef X
        ING_EXCL_COUNT
};
const char *ing_excl_code(enum ing_excl x);

/* Window features (ingest.features); node names are always "<channel>.<feature>". */
enum ing_feature {
    ING_F_MEAN = 1u << 0,  /* mean of the normalized completed series */
    ING_F_COUNT = 1u << 1, /* min(1, real samples / slots) */
    ING_F_MIN = 1u << 2,
    ING_F_MAX = 1u << 3,
    ING_F_STD = 1u << 4 /* population std (divide by N) of the normalized series */
};

/* How readings are decoded (ingest.decoder); both give the same result, reading by reading
 * (docs/ingest.md "Decoder"). */
/* Encoding of the window records (ingest.output.format): same content either way. */
enum ing_out_format {
    ING_OUT_JSON,  /* gcdp.window/2 JSON text (schemas/window.schema.json) */
    ING_OUT_BINARY /* gcdp.window/3 (core/window_bin.h, schemas/window3.md) */
};

enum ing_decoder {
    ING_DECODER_SIMDJSON, /* simdjson scanner, jansson for everything it does not accept */
    ING_DECODER_JANSSON   /* the jansson reference decoder alone */
};

enum ing_key_policy {
    ING_KEY_REQUIRE, /* key must be present and equal "device" (default) */
    ING_KEY_MATCH,   /* a present key must equal "device"; an absent key is accepted */
    ING_KEY_IGNORE   /* the key is not looked at */
};

/* One channel: physical domain (values outside are rejected) and the public clip
 * interval [clip_lo, clip_hi] used to normalize to [0, 1]. */
struct ing_channel {
    char name[ING_NAME_MAX + 1];
    double dom_lo, dom_hi;
    double clip_lo, clip_hi;
};

/* Frozen, public configuration of an engine (a value type; copy freely). */
struct ing_params {
    int64_t window_ms;       /* ingest.window.size_ms */
    int64_t hop_ms;          /* ingest.window.hop_ms; == window_ms for tumbling */
    int64_t origin_ms;       /* ingest.window.origin_ms */
    bool has_split;          /* ingest.split_at_ms set */
    int64_t split_at_ms;     /* no window crosses it; on the hop grid */
    int64_t period_ms;       /* ingest.period_ms: expected sampling period */
    int64_t lateness_ms;     /* ingest.lateness_ms */
    int64_t idle_timeout_ms; /* ingest.idle_timeout_ms (processing time); 0 = never */
    int64_t device_ttl_ms;   /* ingest.device_ttl_ms: drop idle device entries; 0 = never */
    int64_t ts_min_ms;       /* ingest.ts_min_ms, inclusive */
    int64_t ts_max_ms;       /* ingest.ts_max_ms, exclusive */
    int64_t max_future_ms;   /* ingest.max_future_ms: ts > now_ms + this is rejected; 0 = off */
    int64_t max_jump_ms;     /* ingest.max_jump_ms: slot time > device's max + this is rejected
                              * while the device buffers readings; 0 = off */
    int jump_confirm;        /* ingest.jump_confirm: that many consecutive jumping readings
                              * agreeing within max_jump_ms restart the device's stream at the
                              * new time (its windows are closed); 0 = never */
    int max_interp_gap;      /* ingest.max_interp_gap: longest fillable run of slots */
    double min_coverage;     /* ingest.min_coverage: occupied slots / slots, per node */
    size_t max_message_bytes;
    size_t max_devices;
    size_t max_buffer; /* ingest.max_buffer_per_device */
    enum ing_key_policy key_policy;
    enum ing_decoder decoder;       /* ingest.decoder */
    enum ing_out_format out_format; /* ingest.output.format (not in config_version) */
    unsigned features;              /* OR of enum ing_feature, at least one */
    bool emit_excluded;             /* ingest.emit_excluded: also emit excluded-window records */
    size_t n_channels;
    struct ing_channel channels[ING_MAX_CHANNELS];
    size_t n_nodes;                        /* 0 = auto: channels seen in the window */
    size_t node_channel[ING_MAX_CHANNELS]; /* indexes into channels[] */
    char config_version[17];               /* core_config_version(cfg, "ingest.") or "default" */
};

/* Fill p with the built-in defaults (the same values as the ingest.* key defaults).
 * config_version is set to "0000000000000000". */
void ing_params_default(struct ing_params *p);

/* Read and cross-validate every ingest.* key of cfg (borrowed) into p.
 * Returns CORE_OK or CORE_ECONFIG with errbuf naming the offending key. */
CORE_MUST_CHECK core_err ing_params_from_config(const struct core_config *cfg, struct ing_params *p,
                                                char *errbuf, size_t errbuf_size);

/* Check p (e.g. after editing a default). CORE_ECONFIG naming the key on failure. */
CORE_MUST_CHECK core_err ing_params_validate(const struct ing_params *p, char *errbuf,
                                             size_t errbuf_size);

/* Parse a channels JSON object (the ingest.channels value, borrowed) into p->channels.
 * CORE_ECONFIG with a reason naming "ingest.channels" on failure. */
CORE_MUST_CHECK core_err ing_params_set_channels(struct ing_params *p, const json_t *channels,
                                                 char *errbuf, size_t errbuf_size);

/* Where a message came from (borrowed for the duration of a push). */
struct ing_source {
    const char *topic; /* may be NULL ("" in the record) */
    int32_t partition; /* >= 0 for offset tracking; < 0: not tracked */
    int64_t offset;
};

/* Offsets one window used, per partition. */
struct ing_src_range {
    int32_t partition;
    int64_t min_offset, max_offset;
};

struct ing_window_info {
    const char *device;   /* also the record's key */
    int64_t window_start; /* epoch ms, inclusive */
    int64_t window_end;   /* epoch ms, exclusive */
    bool excluded;
    enum ing_excl excl_reason;
    size_t n_src;                    /* entries in src; 0 if no tracked partition */
    const struct ing_src_range *src; /* valid during the callback only */
};

struct ing_reject_info {
    enum ing_reason reason;
    const struct ing_source *src; /* as passed to push */
};

/* Callbacks. key/key_len, json/len and info are valid during the callback only; json is
 * one complete UTF-8 JSON object, NUL-terminated at json[len]. */
typedef void ing_window_fn(void *arg, const char *key, size_t key_len, const char *json, size_t len,
                           const struct ing_window_info *info);
typedef void ing_reject_fn(void *arg, const char *key, size_t key_len, const char *json, size_t len,
                           const struct ing_reject_info *info);

struct ing_sink {
    ing_window_fn *on_window; /* may be NULL (records discarded) */
    ing_reject_fn *on_reject; /* may be NULL */
    void *arg;
};

/* Counters for /metrics. Monotonic except open_devices, devices, buffered. */
struct ing_counters {
    uint64_t consumed; /* == accepted + rejected, always */
    uint64_t accepted;
    uint64_t rejected;
    uint64_t rejected_by_reason[ING_REASON_COUNT];
    uint64_t duplicates;       /* == rejected_by_reason[ING_R_DUPLICATE] */
    uint64_t late;             /* == rejected_by_reason[ING_R_LATE] */
    uint64_t interpolated;     /* imputed points written into emitted windows */
    uint64_t windows_emitted;  /* window records produced (incl. excluded ones if emitted) */
    uint64_t windows_excluded; /* of which excluded */
    uint64_t excluded_by_reason[ING_EXCL_COUNT];
    uint64_t windows_split_skipped; /* windows never formed: they straddle split_at_ms */
    uint64_t idle_closes;           /* devices whose windows tick() force-closed */
    uint64_t forgotten;             /* buffered readings dropped by forget_partition */
    uint64_t devices_evicted;       /* idle device entries dropped after device_ttl_ms */
    uint64_t jump_restarts;         /* device streams restarted by ingest.jump_confirm */
    uint64_t open_devices;          /* devices with buffered readings now */
    uint64_t devices;               /* device entries held now (<= max_devices) */
    uint64_t buffered;              /* readings buffered now */
};

struct ing_engine;

/* New engine with a copy of p (validated first).
 *   errbuf  receives the reason on failure.
 * Returns a new engine (caller frees with ing_engine_free) or NULL if p is invalid. */
struct ing_engine *ing_engine_new(const struct ing_params *p, char *errbuf, size_t errbuf_size);
void ing_engine_free(struct ing_engine *eng); /* NULL-safe; emits nothing */

/* Install the engine's process-wide jansson allocation hooks (json_set_alloc_funcs) now.
 * ing_engine_new does it too; a program whose other threads use jansson should call this
 * (or create its engines) before starting them. The hooks route to a per-engine arena only
 * while that engine parses a message on the calling thread and chain to the previously
 * installed functions (malloc/free) otherwise, so every other jansson use is unchanged;
 * memory from json_dumps etc. is still released with free(). Idempotent, thread-safe. */
void ing_engine_global_init(void);

/* The engine's (validated) parameters; borrowed, valid for the engine's lifetime. */
const struct ing_params *ing_engine_params(const struct ing_engine *eng);

/* Only the JSON parse that ing_engine_push starts with: jansson's json_loadb on payload with
 * the engine's flags and arena, then the tree is released. Counts nothing, emits nothing.
 * For `gcdp bench ingest`, to show the floor jansson puts under ing_engine_push.
 * Returns true when the payload parsed. */
bool ing_engine_parse_only(struct ing_engine *eng, const char *payload, size_t len);

/* Only the decoding ing_engine_push starts with (the stateless checks, no device state):
 * the engine's decoder, or jansson's reference decoder when reference is true. Counts
 * nothing, emits nothing. For `gcdp bench ingest` (decoder alone, fast vs reference).
 * Returns the reason the stateless checks give (ING_R_NONE: they accept). */
enum ing_reason ing_engine_decode_only(struct ing_engine *eng, const char *payload, size_t len,
                                       const char *key, size_t key_len, bool reference);

/* Process one raw message.
 *   payload/len  borrowed; any bytes (need not be NUL-terminated).
 *   key/key_len  borrowed message key; key == NULL means "no key".
 *   src          borrowed; copied into dead letters and used for offset tracking.
 *   now_ms       processing clock (epoch ms, wall clock), non-decreasing across calls
 *                (idle timeouts, the dead letter's received_at_ms, ingest.max_future_ms).
 *   sink         callbacks; called synchronously (a dead letter for this message, and/or
 *                windows this reading's watermark advance closed).
 *   out_reason   optional; ING_R_NONE if accepted, else the reject reason.
 * Returns CORE_OK whenever the message was accounted (accepted or rejected);
 * CORE_EINVAL only for NULL eng/src or payload == NULL with len > 0 (nothing counted). */
CORE_MUST_CHECK core_err ing_engine_push(struct ing_engine *eng, const char *payload, size_t len,
                                         const char *key, size_t key_len,
                                         const struct ing_source *src, int64_t now_ms,
                                         const struct ing_sink *sink, enum ing_reason *out_reason);

/* Cache hint for a message to be pushed a few calls later. Call it for every message in
 * push order, some messages ahead of its push (the service: CORE_KAFKA_LOOKAHEAD = 4):
 * it starts loading the payload's first bytes and the device table slot of this key, the
 * device entry of the previous call's key, and the buffer tail of the device of the call
 * before that (the key is the device id under ingest.key_policy require/match; otherwise
 * that part of the hint is merely useless). With 10,000 devices each reading finds its
 * device's state cold; loading it while the messages before it are handled hides that
 * latency. Reads only the key (payload: prefetch only): no result, counter or later call
 * depends on it. key NULL: no device hint. */
void ing_engine_prefetch(struct ing_engine *eng, const char *payload, size_t len, const char *key,
                         size_t key_len);

/* Close every window of devices idle (no accepted reading) for >= idle_timeout_ms of
 * processing time as of now_ms; then drop the entries of devices without buffered readings
 * whose last accepted reading is >= device_ttl_ms old (their memory of closed windows goes
 * with them). Cost O(devices closed or dropped): both lists are kept oldest first.
 * Call it from a timer. */
void ing_engine_tick(struct ing_engine *eng, int64_t now_ms, const struct ing_sink *sink);

/* Close and emit every open window of every device (end of a bounded stream). The engine
 * stays usable; closed windows stay closed (later readings for them are "late"). */
void ing_engine_flush(struct ing_engine *eng, const struct ing_sink *sink);

/* Lowest offset of partition still held in a device buffer.
 *   out  set when the result is true.
 * Returns false when the engine holds nothing from that partition. Cost O(buffered). */
bool ing_engine_low_watermark(const struct ing_engine *eng, int32_t partition, int64_t *out);

/* Drop, without emitting, all state (buffered readings and the memory of closed windows)
 * of every device whose latest accepted reading came from partition or that buffers a
 * reading from it. Cost O(device table). Call it when the
 * partition is revoked: its next owner re-reads from the committed offset. Returns the
 * number of buffered readings dropped (also added to counters.forgotten). */
size_t ing_engine_forget_partition(struct ing_engine *eng, int32_t partition);

/* Snapshot of the counters. */
void ing_engine_counters(const struct ing_engine *eng, struct ing_counters *out);

#endif /* ING_ENGINE_H */
