/* alg/decode.h - strict decoding of one gcdp.reading/1 message (private to ingest).
 * SPDX-License-Identifier: Apache-2.0
 * Thread-safety: pure; safe on distinct outputs.
 */
#ifndef ING_ALG_DECODE_H
#define ING_ALG_DECODE_H

#include "alg/fastjson.h"
#include "core/jalloc.h"
#include "ing_int.h"

/* One decoded reading. device points into the parsed document (valid while root lives). */
struct ing__reading {
    const char *device;
    size_t device_len;
    int64_t ts;                   /* epoch ms, UTC */
    double val[ING_MAX_CHANNELS]; /* per declared channel; NaN = null or absent */
};

/* The jansson flags of every reading parse (ING_R_NOT_OBJECT and ING_R_DUPLICATE_KEY need
 * them): shared by ing__decode and ing_engine_parse_only. */
#define ING__JSON_FLAGS (JSON_DECODE_ANY | JSON_REJECT_DUPLICATES)

/* Decode and validate payload against p (all checks that need no engine state).
 *   ja      arena the parse allocates from (core/jalloc.h), or NULL for plain malloc.
 *   root    out: the parsed tree or NULL; the caller releases it in every case with
 *           core_jalloc_release(ja, *root) (json_decref(*root) when ja is NULL), after its
 *           last use of out->device.
 *   now_ms  processing clock, ms, for ingest.max_future_ms.
 *   out     filled on ING_R_NONE (device borrowed from *root).
 *   detail  receives a short reason text without protected values.
 * Returns ING_R_NONE or the first failing reason in ING_REASON_MAP order. */
enum ing_reason ing__decode(const struct ing_params *p, struct core_jalloc *ja, const char *payload,
                            size_t len, const char *key, size_t key_len, int64_t now_ms,
                            json_t **root, struct ing__reading *out, char *detail,
                            size_t detail_size);

/* The fast decoder (ingest.decoder = simdjson, the default): the same contract and the same
 * result as ing__decode, reading by reading (reason, detail and every decoded value;
 * tests/ingest/test_decode_diff.c). A plainly shaped reading the reference would accept is
 * decoded by the simdjson scanner fj (alg/fastjson.h), with out->device pointing into fj's
 * buffer and *root NULL; every other payload goes to ing__decode(p, ja, ...), whose *root
 * the caller releases as there. */
enum ing_reason ing__decode_fast(const struct ing_params *p, struct ing__fj *fj,
                                 struct core_jalloc *ja, const char *payload, size_t len,
                                 const char *key, size_t key_len, int64_t now_ms, json_t **root,
                                 struct ing__reading *out, char *detail, size_t detail_size);

#endif /* ING_ALG_DECODE_H */
