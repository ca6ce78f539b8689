// fastjson.cpp - simdjson On-Demand scanner of gcdp.reading/1 payloads (alg/fastjson.h).
// SPDX-License-Identifier: Apache-2.0
//
// The project's only C++ file. Built without exceptions and RTTI; every simdjson call uses
// its error-code API; nothing here throws or allocates after ing__fj_new. Any error or any
// shape outside the plain one (fastjson.h) makes ing__fj_scan return false, and the jansson
// reference decoder then decides (alg/decode.c).
#define SIMDJSON_EXCEPTIONS 0
#include "alg/fastjson.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <simdjson.h>
#include <string_view>
#include <utility>

namespace od = simdjson::ondemand;

// Deepest nesting the plain shape has is 2 (root object, readings object); a little more so
// that simdjson, not a depth error, reports the usual errors of deeper documents.
static constexpr size_t kMaxDepth = 8;

struct ing__fj {
    od::parser parser;
    char *buf; // max_bytes + SIMDJSON_PADDING bytes
    size_t max_bytes;
};

namespace
{

unsigned member_bit(std::string_view k)
{
    if (k == "schema")
        return ING__FJ_SCHEMA;
    if (k == "device")
        return ING__FJ_DEVICE;
    if (k == "ts")
        return ING__FJ_TS;
    if (k == "readings")
        return ING__FJ_READINGS;
    if (k == "seq")
        return ING__FJ_SEQ;
    return 0;
}

// jansson without JSON_ALLOW_NUL rejects "\u0000" in any string or member name.
bool to_str(std::string_view s, ing__fj_str *out)
{
    if (s.find('\0') != std::string_view::npos)
        return false;
    *out = ing__fj_str{s.data(), s.size()};
    return true;
}

// jansson (load.c lex_scan_number) makes a token without '.', 'e' or 'E' an integer.
// raw_json_token() may run past the number into whitespace; a number never contains it.
bool is_integer_token(std::string_view tok)
{
    for (char c : tok) {
        if (c == '.' || c == 'e' || c == 'E')
            return false;
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
            break;
    }
    return true;
}

bool get_int(od::value &v, int64_t *out)
{
    if (!is_integer_token(v.raw_json_token()))
        return false;
    return v.get_int64().get(*out) == simdjson::SUCCESS;
}

// Significant digits of a number token (leading zeros, sign, point and exponent excluded).
// simdjson 3.0.1 misreads some reals with more than 19 (e.g. 0.100000000000000000001 as
// 0.00776...; found by tests/ingest/test_decode_diff.c), the case its exact 64-bit path
// does not cover, so those go to the reference.
size_t significant_digits(std::string_view tok)
{
    size_t n = 0;
    bool leading = true;
    for (char c : tok) {
        if (c == 'e' || c == 'E' || c == ' ' || c == '\t' || c == '\n' || c == '\r')
            break;
        if (c < '0' || c > '9')
            continue;
        if (c != '0')
            leading = false;
        n += !leading;
    }
    return n;
}

// A channel value: null, an int64 integer token (as jansson's json_number_value: the
// double of the integer), or a finite real.
bool get_channel_value(od::value &v, ing__fj_value *out)
{
    od::json_type t;
    if (v.type().get(t) != simdjson::SUCCESS)
        return false;
    if (t == od::json_type::null) {
        bool is_null = false;
        if (v.is_null().get(is_null) != simdjson::SUCCESS || !is_null)
            return false;
        out->is_null = true;
        out->num = 0;
        return true;
    }
    if (t != od::json_type::number)
        return false;
    out->is_null = false;
    if (is_integer_token(v.raw_json_token())) {
        int64_t i;
        if (v.get_int64().get(i) != simdjson::SUCCESS)
            return false;
        out->num = static_cast<double>(i);
        return true;
    }
    double d;
    if (significant_digits(v.raw_json_token()) > 19 || v.get_double().get(d) != simdjson::SUCCESS ||
        !std::isfinite(d))
        return false;
    out->num = d;
    return true;
}

bool get_readings(od::value &v, ing__fj_doc *out)
{
    od::object obj;
    if (v.get_object().get(obj) != simdjson::SUCCESS)
        return false;
    for (auto fr : obj) {
        od::field f;
        std::string_view name;
        if (std::move(fr).get(f) != simdjson::SUCCESS ||
            f.unescaped_key().get(name) != simdjson::SUCCESS)
            return false;
        if (out->n_values >= ING_MAX_CHANNELS)
            return false; // more members than channels: a duplicate or unknown one
        ing__fj_value *cv = &out->values[out->n_values];
        od::value val = f.value();
        if (!to_str(name, &cv->name) || !get_channel_value(val, cv))
            return false;
        out->n_values++;
    }
    return true;
}

bool get_string(od::value &v, ing__fj_str *out)
{
    std::string_view s;
    return v.get_string().get(s) == simdjson::SUCCESS && to_str(s, out);
}

bool get_member(unsigned bit, od::value &v, ing__fj_doc *out)
{
    switch (bit) {
    case ING__FJ_SCHEMA:
        return get_string(v, &out->schema);
    case ING__FJ_DEVICE:
        return get_string(v, &out->device);
    case ING__FJ_TS: {
        od::json_type t;
        if (v.type().get(t) != simdjson::SUCCESS)
            return false;
        if (t == od::json_type::string) {
            out->ts_is_int = false;
            return get_string(v, &out->ts_str);
        }
        out->ts_is_int = true;
        return t == od::json_type::number && get_int(v, &out->ts_int);
    }
    case ING__FJ_READINGS:
        return get_readings(v, out);
    case ING__FJ_SEQ: {
        od::json_type t;
        return v.type().get(t) == simdjson::SUCCESS && t == od::json_type::number &&
               get_int(v, &out->seq);
    }
    default:
        return false;
    }
}

bool scan(ing__fj *fj, size_t len, ing__fj_doc *out)
{
    od::document doc;
    od::object obj;

    if (fj->parser.iterate(fj->buf, len, len + simdjson::SIMDJSON_PADDING).get(doc) !=
            simdjson::SUCCESS ||
        doc.get_object().get(obj) != simdjson::SUCCESS)
        return false;
    for (auto fr : obj) {
        od::field f;
        std::string_view k;
        if (std::move(fr).get(f) != simdjson::SUCCESS ||
            f.unescaped_key().get(k) != simdjson::SUCCESS)
            return false;
        unsigned bit = member_bit(k);
        if (bit == 0 || (out->seen & bit) != 0)
            return false; // unknown or repeated member: the reference names it
        out->seen |= bit;
        od::value v = f.value();
        if (!get_member(bit, v, out))
            return false;
    }
    // Nothing may follow the object: after it the iterator must be past the last
    // structural character (trailing whitespace has none).
    const char *where = nullptr;
    return doc.current_location().get(where) == simdjson::OUT_OF_BOUNDS;
}

} // namespace

extern "C" struct ing__fj *ing__fj_new(size_t max_bytes)
{
    ing__fj *fj = new (std::nothrow) ing__fj();
    if (!fj)
        return nullptr;
    fj->max_bytes = max_bytes;
    fj->buf = static_cast<char *>(std::calloc(1, max_bytes + simdjson::SIMDJSON_PADDING));
    if (!fj->buf || fj->parser.allocate(max_bytes, kMaxDepth) != simdjson::SUCCESS) {
        ing__fj_free(fj);
        return nullptr;
    }
    return fj;
}

extern "C" void ing__fj_free(struct ing__fj *fj)
{
    if (!fj)
        return;
    std::free(fj->buf);
    delete fj;
}

extern "C" bool ing__fj_scan(struct ing__fj *fj, const char *payload, size_t len,
                             struct ing__fj_doc *out)
{
    if (len == 0 || len > fj->max_bytes)
        return false;
    std::memcpy(fj->buf, payload, len);
    std::memset(fj->buf + len, ' ', simdjson::SIMDJSON_PADDING);
    out->seen = 0;
    out->n_values = 0;
    return scan(fj, len, out);
}

extern "C" const char *ing__fj_implementation(void)
{
    // Stage 1 runs in libsimdjson with the kernel chosen for this CPU at run time; the
    // On-Demand value parsing inlined here is compiled for the portable baseline.
    return simdjson::get_active_implementation()->name().data();
}
