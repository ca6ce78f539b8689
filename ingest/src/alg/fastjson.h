/* alg/fastjson.h - the C interface of the ingest stage's simdjson scanner (fastjson.cpp),
 * private to ingest. The only C++ in the project sits behind it; no C++ type crosses it.
 * SPDX-License-Identifier: Apache-2.0
 *
 * What it does: one pass of simdjson's On-Demand API (Debian libsimdjson-dev, 3.0) over a
 * payload, extracting the members of a gcdp.reading/1 document into a flat C struct. It
 * decides nothing about acceptance itself: alg/decode.c applies the same checks as the
 * jansson reference decoder to what it extracted, and whenever the scanner returns false
 * (anything outside the plain shape below, including every malformed document) the
 * jansson reference decoder decides, so reject reasons and dead letters are the
 * reference's by construction (docs/ingest.md "Decoder").
 *
 * The plain shape (ing__fj_scan returns true only for it):
 *   - the payload is valid UTF-8 (simdjson's stage 1 validates every byte) and is exactly
 *     one JSON object, whitespace around it allowed, nothing else after it;
 *   - every top-level member name (unescaped) is one of schema, device, ts, readings, seq
 *     and none repeats;
 *   - schema and device are strings; ts is a string or an integer token (no '.', 'e',
 *     'E') in int64 range; seq, when present, is an integer token in int64 range;
 *   - readings is an object of at most ING_MAX_CHANNELS members whose values are null, an
 *     integer token in int64 range, or a real token of at most 19 significant digits whose
 *     value is finite (simdjson 3.0.1 misreads some longer ones: fastjson.cpp).
 * Numbers follow jansson's rules (load.c lex_scan_number): an integer token is an int64
 * and a channel value is (double) of it (so "-0" is +0.0, as in jansson); a real token is
 * the correctly rounded double of its text (simdjson and glibc strtod both round
 * correctly; tests/ingest/test_decode_diff.c checks bit equality).
 *
 * Thread-safety: one scanner per engine, used by one thread at a time.
 */
#ifndef ING_ALG_FASTJSON_H
#define ING_ALG_FASTJSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ing/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Top-level members seen (bits of ing__fj_doc.seen). */
enum {
    ING__FJ_SCHEMA = 1,
    ING__FJ_DEVICE = 2,
    ING__FJ_TS = 4,
    ING__FJ_READINGS = 8,
    ING__FJ_SEQ = 16
};

/* A string: the unescaped bytes in the scanner's buffer (valid until its next scan). */
struct ing__fj_str {
    const char *p;
    size_t n;
};

struct ing__fj_value {
    struct ing__fj_str name; /* channel name, unescaped */
    bool is_null;
    double num; /* when !is_null */
};

struct ing__fj_doc {
    unsigned seen; /* ING__FJ_* */
    struct ing__fj_str schema, device;
    bool ts_is_int; /* else a string in ts_str */
    int64_t ts_int;
    struct ing__fj_str ts_str;
    int64_t seq;     /* when seen & ING__FJ_SEQ */
    size_t n_values; /* members of readings */
    struct ing__fj_value values[ING_MAX_CHANNELS];
};

struct ing__fj;

/* New scanner for payloads of up to max_bytes bytes (buffers allocated once, here), or NULL
 * when out of memory or simdjson refuses the capacity. */
struct ing__fj *ing__fj_new(size_t max_bytes);
void ing__fj_free(struct ing__fj *fj); /* NULL-safe */

/* Scan payload (len <= the scanner's max_bytes; any bytes, need not be NUL-terminated;
 * copied into a padded buffer). Returns true and fills *out when the payload has the plain
 * shape above; false otherwise (out unspecified). Never allocates. */
bool ing__fj_scan(struct ing__fj *fj, const char *payload, size_t len, struct ing__fj_doc *out);

/* Name of the simdjson kernel libsimdjson chose for this CPU at run time for stage 1
 * ("icelake", "haswell", "westmere", "fallback", ...). Static string. */
const char *ing__fj_implementation(void);

#ifdef __cplusplus
}
#endif

#endif /* ING_ALG_FASTJSON_H */
