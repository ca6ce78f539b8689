/* decode.c - strict decoding of one gcdp.reading/1 message (ing_decode.h). */
#include "alg/decode.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/timefmt.h"

#define R(reason, ...) (snprintf(detail, detail_size, __VA_ARGS__), (reason))

static enum ing_reason map_json_error(const json_error_t *err, char *detail, size_t detail_size)
{
    static const char *const nonfinite_tokens[] = {"near 'NaN",  "near 'nan",  "near 'Inf",
                                                   "near 'inf",  "near '-Inf", "near '-inf",
                                                   "near '-NaN", "near '+"};
    switch (json_error_code(err)) {
    case json_error_invalid_utf8:
        return R(ING_R_INVALID_UTF8, "invalid UTF-8 at byte %d", err->position);
    case json_error_null_character:
    case json_error_null_byte_in_key:
        return R(ING_R_NUL_CHARACTER, "\\u0000 in a string at byte %d", err->position);
    case json_error_premature_end_of_input:
        return R(ING_R_TRUNCATED, "document ends early at byte %d", err->position);
    case json_error_end_of_input_expected:
        return R(ING_R_TRAILING_DATA, "data after the JSON value at byte %d", err->position);
    case json_error_stack_overflow:
        return R(ING_R_TOO_DEEP, "nesting too deep at byte %d", err->position);
    case json_error_duplicate_key:
        return R(ING_R_DUPLICATE_KEY, "repeated member name at byte %d", err->position);
    case json_error_numeric_overflow:
        return R(ING_R_NON_FINITE, "number overflows a double/int64 at byte %d", err->position);
    default:
        break;
    }
    for (size_t i = 0; i < sizeof(nonfinite_tokens) / sizeof(*nonfinite_tokens); i++)
        if (strstr(err->text, nonfinite_tokens[i]))
            return R(ING_R_NON_FINITE, "NaN/Infinity token at byte %d", err->position);
    return R(ING_R_MALFORMED_JSON, "syntax error at byte %d", err->position);
}

static bool device_char_ok(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == ':' || c == '-';
}

/* The top-level members of a reading, found in one pass over the object. */
struct members {
    const json_t *schema, *device, *ts, *readings, *seq;
    const char *unknown; /* first member outside gcdp.reading/1, or NULL */
};

static void find_members(const json_t *root, struct members *m)
{
    const char *k;
    const json_t *v;

    memset(m, 0, sizeof(*m));
    json_object_foreach((json_t *)root, k, v)
    {
        if (strcmp(k, "schema") == 0)
            m->schema = v;
        else if (strcmp(k, "device") == 0)
            m->device = v;
        else if (strcmp(k, "ts") == 0)
            m->ts = v;
        else if (strcmp(k, "readings") == 0)
            m->readings = v;
        else if (strcmp(k, "seq") == 0)
            m->seq = v;
        else if (!m->unknown)
            m->unknown = k;
    }
}

/* The device rules on a string of n bytes (shared by both decoders); *bad_at receives the
 * offending byte for ING_R_DEVICE_BAD_CHARS. */
static enum ing_reason device_reason(const char *s, size_t n, size_t *bad_at)
{
    if (n == 0)
        return ING_R_DEVICE_EMPTY;
    if (n > ING_DEVICE_MAX)
        return ING_R_DEVICE_TOO_LONG;
    for (size_t i = 0; i < n; i++)
        if (!device_char_ok(s[i])) {
            *bad_at = i;
            return ING_R_DEVICE_BAD_CHARS;
        }
    return ING_R_NONE;
}

static enum ing_reason check_device(const json_t *d, struct ing__reading *out, char *detail,
                                    size_t detail_size)
{
    const char *s;
    size_t n, bad_at = 0;

    if (!d)
        return R(ING_R_MISSING_DEVICE, "no \"device\" member");
    if (!json_is_string(d))
        return R(ING_R_DEVICE_WRONG_TYPE, "\"device\" must be a string");
    s = json_string_value(d);
    n = json_string_length(d);
    switch (device_reason(s, n, &bad_at)) {
    case ING_R_DEVICE_EMPTY:
        return R(ING_R_DEVICE_EMPTY, "\"device\" is empty");
    case ING_R_DEVICE_TOO_LONG:
        return R(ING_R_DEVICE_TOO_LONG, "\"device\" has %zu bytes (max %d)", n, ING_DEVICE_MAX);
    case ING_R_DEVICE_BAD_CHARS:
        return R(ING_R_DEVICE_BAD_CHARS, "\"device\" byte %zu outside [A-Za-z0-9._:-]", bad_at);
    default:
        break;
    }
    out->device = s;
    out->device_len = n;
    return ING_R_NONE;
}

static enum ing_reason check_key(const struct ing_params *p, const struct ing__reading *r,
                                 const char *key, size_t key_len, char *detail, size_t detail_size)
{
    if (p->key_policy == ING_KEY_IGNORE)
        return ING_R_NONE;
    if (!key) {
        if (p->key_policy == ING_KEY_REQUIRE)
            return R(ING_R_MISSING_KEY, "message has no key (must equal \"device\")");
        return ING_R_NONE;
    }
    if (key_len != r->device_len || memcmp(key, r->device, key_len) != 0)
        return R(ING_R_KEY_MISMATCH, "message key differs from \"device\"");
    return ING_R_NONE;
}

/* Range and future rules on an epoch-ms ts (shared by both decoders). */
static enum ing_reason ts_reason(const struct ing_params *p, int64_t ms, int64_t now_ms)
{
    if (!(ms >= p->ts_min_ms && ms < p->ts_max_ms))
        return ING_R_TS_OUT_OF_RANGE;
    /* ms < ING_TS_CEIL and max_future_ms <= ING_TS_CEIL: no overflow in ms - max_future_ms */
    if (p->max_future_ms > 0 && ms - p->max_future_ms > now_ms)
        return ING_R_TS_IN_FUTURE;
    return ING_R_NONE;
}

static enum ing_reason check_ts(const struct ing_params *p, const json_t *t, int64_t now_ms,
                                struct ing__reading *out, char *detail, size_t detail_size)
{
    int64_t ms;

    if (!t)
        return R(ING_R_MISSING_TS, "no \"ts\" member");
    if (json_is_integer(t)) {
        ms = (int64_t)json_integer_value(t);
    } else if (json_is_string(t)) {
        if (core_time_parse(json_string_value(t), json_string_length(t), &ms) != CORE_OK)
            return R(ING_R_TS_UNPARSEABLE, "\"ts\" is not RFC 3339 or 'YYYY-MM-DD HH:MM:SS'");
    } else {
        return R(ING_R_TS_WRONG_TYPE, "\"ts\" must be an RFC 3339 string or integer epoch ms");
    }
    switch (ts_reason(p, ms, now_ms)) {
    case ING_R_TS_OUT_OF_RANGE:
        return R(ING_R_TS_OUT_OF_RANGE, "\"ts\" outside [ingest.ts_min_ms, ingest.ts_max_ms)");
    case ING_R_TS_IN_FUTURE:
        return R(ING_R_TS_IN_FUTURE,
                 "\"ts\" more than ingest.max_future_ms %lld beyond "
                 "processing time",
                 (long long)p->max_future_ms);
    default:
        break;
    }
    out->ts = ms;
    return ING_R_NONE;
}

static bool nonfinite_word(const char *s)
{
    static const char *const words[] = {"nan", "inf", "infinity"};
    if (*s == '+' || *s == '-')
        s++;
    for (size_t i = 0; i < sizeof(words) / sizeof(*words); i++)
        if (strcasecmp(s, words[i]) == 0)
            return true;
    return false;
}

static int channel_find(const struct ing_params *p, const char *name, size_t n)
{
    for (size_t i = 0; i < p->n_channels; i++)
        if (n <= ING_NAME_MAX && p->channels[i].name[0] == name[0] &&
            memcmp(p->channels[i].name, name, n) == 0 && p->channels[i].name[n] == '\0')
            return (int)i;
    return -1;
}

/* Finite and within the channel's domain (shared by both decoders). */
static enum ing_reason number_reason(const struct ing_channel *ch, double x)
{
    if (!isfinite(x))
        return ING_R_NON_FINITE;
    if (!(x >= ch->dom_lo && x <= ch->dom_hi))
        return ING_R_OUT_OF_DOMAIN;
    return ING_R_NONE;
}

static enum ing_reason check_value(const struct ing_channel *ch, const json_t *v, double *out,
                                   char *detail, size_t detail_size)
{
    double x;

    if (json_is_null(v)) {
        *out = NAN; /* absent: internal marker only (values are validated finite) */
        return ING_R_NONE;
    }
    if (json_is_string(v) && nonfinite_word(json_string_value(v)))
        return R(ING_R_NON_FINITE, "channel '%s' is not a finite number", ch->name);
    if (!json_is_number(v))
        return R(ING_R_WRONG_TYPE, "channel '%s' must be a number or null", ch->name);
    x = json_number_value(v);
    switch (number_reason(ch, x)) {
    case ING_R_NON_FINITE:
        return R(ING_R_NON_FINITE, "channel '%s' is not a finite number", ch->name);
    case ING_R_OUT_OF_DOMAIN:
        return R(ING_R_OUT_OF_DOMAIN, "channel '%s' outside its physical domain [%g, %g]", ch->name,
                 ch->dom_lo, ch->dom_hi);
    default:
        break;
    }
    *out = x;
    return ING_R_NONE;
}

static enum ing_reason check_readings(const struct ing_params *p, const json_t *rd,
                                      struct ing__reading *out, char *detail, size_t detail_size)
{
    const char *name;
    const json_t *v;

    if (!rd)
        return R(ING_R_MISSING_READINGS, "no \"readings\" member");
    if (!json_is_object(rd))
        return R(ING_R_READINGS_NOT_OBJECT, "\"readings\" must be an object");
    if (json_object_size(rd) == 0)
        return R(ING_R_READINGS_EMPTY, "\"readings\" is empty");
    for (size_t i = 0; i < p->n_channels; i++)
        out->val[i] = NAN;
    json_object_foreach((json_t *)rd, name, v)
    {
        int c = channel_find(p, name, strlen(name));
        enum ing_reason r;
        if (c < 0)
            return R(ING_R_UNKNOWN_CHANNEL, "channel '%.40s' not declared in ingest.channels",
                     name);
        r = check_value(&p->channels[c], v, &out->val[c], detail, detail_size);
        if (r != ING_R_NONE)
            return r;
    }
    return ING_R_NONE;
}

static enum ing_reason check_envelope(const struct members *m, char *detail, size_t detail_size)
{
    if (!m->schema)
        return R(ING_R_MISSING_SCHEMA, "no \"schema\" member");
    if (!json_is_string(m->schema) || strcmp(json_string_value(m->schema), ING_SCHEMA_READING) != 0)
        return R(ING_R_UNSUPPORTED_SCHEMA, "\"schema\" must be \"%s\"", ING_SCHEMA_READING);
    if (m->unknown)
        return R(ING_R_UNKNOWN_FIELD, "member '%.40s' is not part of %s", m->unknown,
                 ING_SCHEMA_READING);
    return ING_R_NONE;
}

static enum ing_reason check_seq(const json_t *s, char *detail, size_t detail_size)
{
    if (s && !(json_is_integer(s) && json_integer_value(s) >= 0))
        return R(ING_R_SEQ_WRONG_TYPE, "\"seq\" must be an integer >= 0");
    return ING_R_NONE;
}

/* Checks run in the order of ING_REASON_MAP; the first failure is the reason. */
enum ing_reason ing__decode(const struct ing_params *p, struct core_jalloc *ja, const char *payload,
                            size_t len, const char *key, size_t key_len, int64_t now_ms,
                            json_t **root, struct ing__reading *out, char *detail,
                            size_t detail_size)
{
    json_error_t err;
    struct members m;
    enum ing_reason r;

    *root = NULL;
    detail[0] = '\0';
    out->device = NULL;
    out->device_len = 0;
    if (len > p->max_message_bytes)
        return R(ING_R_OVERSIZE, "%zu bytes > ingest.max_message_bytes %zu", len,
                 p->max_message_bytes);
    if (len == 0)
        return R(ING_R_EMPTY_PAYLOAD, "empty payload");
    /* jansson accepts only well-formed UTF-8 (strings checked in full, ASCII elsewhere), so
     * the separate UTF-8 scan is needed only to classify a failed parse. */
    *root = ja ? core_jalloc_parse(ja, payload, len, ING__JSON_FLAGS, &err)
               : json_loadb(payload, len, ING__JSON_FLAGS, &err);
    if (!*root && !ing__utf8_valid(payload, len))
        return R(ING_R_INVALID_UTF8, "payload is not UTF-8");
    if (!*root && memchr(payload, '\0', len)) /* jansson calls it "premature end" */
        return R(ING_R_MALFORMED_JSON, "raw NUL byte at byte %zu (a binary payload?)",
                 (size_t)((const char *)memchr(payload, '\0', len) - payload));
    if (!*root)
        return map_json_error(&err, detail, detail_size);
    if (!json_is_object(*root))
        return R(ING_R_NOT_OBJECT, "top-level value is not an object");
    find_members(*root, &m);
    r = check_envelope(&m, detail, detail_size);
    if (r == ING_R_NONE)
        r = check_device(m.device, out, detail, detail_size);
    if (r == ING_R_NONE)
        r = check_key(p, out, key, key_len, detail, detail_size);
    if (r == ING_R_NONE)
        r = check_ts(p, m.ts, now_ms, out, detail, detail_size);
    if (r == ING_R_NONE)
        r = check_seq(m.seq, detail, detail_size);
    if (r == ING_R_NONE)
        r = check_readings(p, m.readings, out, detail, detail_size);
    return r;
}

/* ---- the fast decoder (docs/ingest.md "Decoder") ----
 * The simdjson scanner (alg/fastjson.h) extracts the members of a plainly shaped document;
 * here the reference's checks run on them, through the same rule helpers (device_reason,
 * check_key, ts_reason, number_reason, channel_find). Only a reading the reference would
 * accept is accepted here; every other outcome (a reject, or a shape the scanner does not
 * handle) is left to ing__decode, so reasons and details are the reference's. */
static bool fast_accept(const struct ing_params *p, const struct ing__fj_doc *d, const char *key,
                        size_t key_len, int64_t now_ms, struct ing__reading *out)
{
    const unsigned need = ING__FJ_SCHEMA | ING__FJ_DEVICE | ING__FJ_TS | ING__FJ_READINGS;
    uint32_t have = 0;
    size_t bad_at;
    char scratch[1];
    int64_t ms;

    if ((d->seen & need) != need || d->schema.n != sizeof(ING_SCHEMA_READING) - 1 ||
        memcmp(d->schema.p, ING_SCHEMA_READING, d->schema.n) != 0 ||
        device_reason(d->device.p, d->device.n, &bad_at) != ING_R_NONE)
        return false;
    out->device = d->device.p;
    out->device_len = d->device.n;
    if (check_key(p, out, key, key_len, scratch, 0) != ING_R_NONE)
        return false;
    if (d->ts_is_int)
        ms = d->ts_int;
    else if (core_time_parse(d->ts_str.p, d->ts_str.n, &ms) != CORE_OK)
        return false;
    if (ts_reason(p, ms, now_ms) != ING_R_NONE || ((d->seen & ING__FJ_SEQ) && d->seq < 0) ||
        d->n_values == 0)
        return false;
    out->ts = ms;
    for (size_t i = 0; i < p->n_channels; i++)
        out->val[i] = NAN;
    for (size_t i = 0; i < d->n_values; i++) {
        const struct ing__fj_value *v = &d->values[i];
        int c = channel_find(p, v->name.p, v->name.n);
        if (c < 0 || (have & (UINT32_C(1) << c)))
            return false; /* unknown channel, or a repeated name (duplicate_key) */
        have |= UINT32_C(1) << c;
        if (!v->is_null && number_reason(&p->channels[c], v->num) != ING_R_NONE)
            return false;
        out->val[c] = v->is_null ? NAN : v->num;
    }
    return true;
}

enum ing_reason ing__decode_fast(const struct ing_params *p, struct ing__fj *fj,
                                 struct core_jalloc *ja, const char *payload, size_t len,
                                 const char *key, size_t key_len, int64_t now_ms, json_t **root,
                                 struct ing__reading *out, char *detail, size_t detail_size)
{
    struct ing__fj_doc doc;

    *root = NULL;
    detail[0] = '\0';
    if (len > 0 && len <= p->max_message_bytes && ing__fj_scan(fj, payload, len, &doc) &&
        fast_accept(p, &doc, key, key_len, now_ms, out))
        return ING_R_NONE;
    return ing__decode(p, ja, payload, len, key, key_len, now_ms, root, out, detail, detail_size);
}
