/* ing_int.h - private to the ingest stage (ing__ functions shared across its files).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ING_INT_H
#define ING_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/buf.h"
#include "core/err.h"
#include "ing/engine.h"

#define ING_TS_FLOOR INT64_C(0)               /* 1970-01-01 */
#define ING_TS_CEIL  INT64_C(253402300800000) /* 10000-01-01 */

extern const char ing_default_channels_json[];

/* "mean" for ING_F_MEAN, ...; "unknown" otherwise. Static string. */
const char *ing__feature_name(unsigned bit);

/* ingest.features / ingest.nodes array parsers (arr borrowed). CORE_ECONFIG names the key. */
CORE_MUST_CHECK core_err ing__params_set_features(struct ing_params *p, const json_t *arr,
                                                  char *errbuf, size_t errbuf_size);
CORE_MUST_CHECK core_err ing__params_set_nodes(struct ing_params *p, const json_t *arr,
                                               char *errbuf, size_t errbuf_size);

/* True when s[0..len) is well-formed UTF-8 (no overlongs, surrogates or > U+10FFFF). */
bool ing__utf8_valid(const char *s, size_t len);

/* Replace, in the NUL-terminated s, every byte that does not start a well-formed UTF-8
 * sequence by '?', so s becomes valid UTF-8. */
void ing__utf8_sanitize(char *s);

/* The engine's output buffer is a core_buf (core/buf.h; engine-owned, reused: no
 * per-record malloc once grown). */
void ing__buf_double(struct core_buf *b, double v); /* %.17g; finite values only */
/* printf("%.17g", x) for 1e-4 <= x <= 1 into out (>= 24 bytes) without printf; returns the
 * length, or 0 (nothing written) for x outside that range. */
size_t ing__fmt_unit_double(double x, char *out);

/* floor division / modulo for possibly negative numerators (b > 0). */
static inline int64_t ing__floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

#endif /* ING_INT_H */
