/* decode_diff.h - the differential check of the fast reading decoder against the jansson
 * reference (alg/decode.h), and the seeded mutator that feeds it. Shared by
 * tests/ingest/test_decode_diff.c (unit suite), tests/tools/fuzz_decode_diff.c (>= 10^6
 * mutated inputs) and tests/fuzz/fuzz_decode.c (libFuzzer). Header-only, no Criterion. */
#ifndef DECODE_DIFF_H
#define DECODE_DIFF_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "alg/decode.h"
#include "core/prng.h"

struct dd_stats {
    unsigned long long inputs;    /* payloads compared */
    unsigned long long accepted;  /* accepted by both */
    unsigned long long fast_path; /* of which decoded by the simdjson scanner alone */
    unsigned long long rejected;  /* rejected by both (same reason and detail) */
    unsigned long long by_reason[ING_REASON_COUNT];
};

/* Decode payload with both decoders; true when they agree on the reason, the detail text,
 * and for an accepted reading on device, ts and every channel value bit for bit (NaN for
 * null/absent has one bit pattern on both sides: the NAN macro). On disagreement why gets
 * a description. fj: the scanner (ing__fj_new(p->max_message_bytes)). */
static inline bool dd_check(const struct ing_params *p, struct ing__fj *fj, const char *payload,
                            size_t len, const char *key, size_t key_len, int64_t now_ms,
                            struct dd_stats *st, char *why, size_t why_n)
{
    struct ing__reading ref, fast;
    char dref[256], dfast[256];
    json_t *rref = NULL, *rfast = NULL;
    enum ing_reason a, b;
    bool ok = true;

    memset(&ref, 0, sizeof(ref));
    memset(&fast, 0, sizeof(fast));
    a = ing__decode(p, NULL, payload, len, key, key_len, now_ms, &rref, &ref, dref, sizeof(dref));
    b = ing__decode_fast(p, fj, NULL, payload, len, key, key_len, now_ms, &rfast, &fast, dfast,
                         sizeof(dfast));
    st->inputs++;
    if (a != b) {
        snprintf(why, why_n, "reason: reference %s, fast %s", ing_reason_code(a),
                 ing_reason_code(b));
        ok = false;
    } else if (strcmp(dref, dfast) != 0) {
        snprintf(why, why_n, "detail: reference '%.200s', fast '%.200s'", dref, dfast);
        ok = false;
    } else if (a == ING_R_NONE) {
        if (ref.device_len != fast.device_len ||
            memcmp(ref.device, fast.device, ref.device_len) != 0)
            snprintf(why, why_n, "device differs"), ok = false;
        else if (ref.ts != fast.ts)
            snprintf(why, why_n, "ts: reference %lld, fast %lld", (long long)ref.ts,
                     (long long)fast.ts),
                ok = false;
        for (size_t i = 0; ok && i < p->n_channels; i++)
            if (memcmp(&ref.val[i], &fast.val[i], sizeof(double)) != 0)
                snprintf(why, why_n, "channel %s: reference %a, fast %a", p->channels[i].name,
                         ref.val[i], fast.val[i]),
                    ok = false;
    }
    if (ok) {
        st->by_reason[a]++;
        if (a == ING_R_NONE) {
            st->accepted++;
            st->fast_path += rfast == NULL;
        } else {
            st->rejected++;
        }
    }
    json_decref(rref);
    json_decref(rfast);
    return ok;
}

/* Tokens the mutator splices in: JSON structure, the member names, number edge cases
 * (overflow, underflow, subnormals, -0, int64 limits, jansson's integer/real split), the
 * NaN/Infinity spellings, escapes (NUL, lone surrogates, escaped letters), and invalid
 * UTF-8 (overlong, surrogate, beyond U+10FFFF, truncated sequences). */
static const char *const dd_tokens[] = {
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"",
    "\\",
    " ",
    "\t",
    "\n",
    "null",
    "true",
    "false",
    "\"schema\"",
    "\"device\"",
    "\"ts\"",
    "\"readings\"",
    "\"seq\"",
    "\"gcdp.reading/1\"",
    "\"temperature\"",
    "\"humidity\"",
    "\"light\"",
    "\"voltage\"",
    "\"co2\"",
    "\"humidity_ratio\"",
    "\"pressure\"",
    "0",
    "-0",
    "-0.0",
    "1",
    "-1",
    "01",
    "1.",
    ".5",
    "1e",
    "1e400",
    "-1e400",
    "1e-400",
    "4.9e-324",
    "2.2250738585072011e-308",
    "1.7976931348623157e308",
    "1.7976931348623159e308",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551616",
    "1E2",
    "1.0",
    "0.1",
    "21.5",
    "125",
    "125.0000000000000001",
    "-40",
    "1793491200000",
    "1793491200000.0",
    "NaN",
    "-NaN",
    "nan",
    "Infinity",
    "-Infinity",
    "inf",
    "+1",
    "\"NaN\"",
    "\"-Infinity\"",
    "\"inf\"",
    "\\u0000",
    "\\ud800",
    "\\udc00",
    "\\ud83d\\ude00",
    "\\u0061",
    "\\u00e9",
    "\\/",
    "\\n",
    "\\x",
    "\xc0\xaf",
    "\xe0\x80\xaf",
    "\xed\xa0\x80",
    "\xf4\x90\x80\x80",
    "\xf8\x88",
    "\xff",
    "\xc3",
    "\xe2\x82",
    "\xc3\xa9",
    "\xf0\x9f\x98\x80",
    "\"2026-11-01T00:00:00Z\"",
    "\"2026-11-01 00:00:00\"",
    "\"2026-11-01T00:00:00.123+01:00\"",
    "\"2015-02-30T00:00:00Z\"",
    "\"m1\"",
    "\"a b\"",
    "\"\"",
    "\xef\xbb\xbf",
    "\x01",
    "\x1f",
    "\x7f",
};

/* Change one digit of buf (from a random position on) to another digit, or insert one: most
 * such inputs stay valid readings with other numbers, which exercises the value path. */
static inline void dd_mutate_digit(struct core_prng *r, char *buf, size_t *len, size_t cap)
{
    size_t n = *len, start = n ? (size_t)core_prng_below(r, n) : 0;

    for (size_t k = 0; k < n; k++) {
        size_t i = (start + k) % n;
        if (buf[i] < '0' || buf[i] > '9')
            continue;
        if (core_prng_below(r, 2) == 0 || n + 1 > cap) {
            buf[i] = (char)('0' + core_prng_below(r, 10));
        } else {
            memmove(buf + i + 1, buf + i, n - i);
            buf[i] = (char)('0' + core_prng_below(r, 10));
            *len = n + 1;
        }
        return;
    }
}

/* One random mutation of buf[0..*len) in place (cap bytes available): flip a bit, set a
 * byte, delete a span, duplicate a span, insert a token, replace a span by a token,
 * truncate, or (3 times in 10) change a digit. Deterministic for a given rng state. */
static inline void dd_mutate(struct core_prng *r, char *buf, size_t *len, size_t cap)
{
    size_t n = *len, pos = n ? (size_t)core_prng_below(r, n + 1) : 0;
    size_t span = 1 + (size_t)core_prng_below(r, 8);
    const char *tok;
    size_t tl;
    uint64_t op = core_prng_below(r, 10);

    if (op >= 7) {
        dd_mutate_digit(r, buf, len, cap);
        return;
    }
    switch (op) {
    case 0: /* bit flip */
        if (n)
            buf[pos % n] = (char)(buf[pos % n] ^ (1 << core_prng_below(r, 8)));
        break;
    case 1: /* byte set */
        if (n)
            buf[pos % n] = (char)core_prng_below(r, 256);
        break;
    case 2: /* delete span */
        if (pos + span > n)
            span = n - pos;
        memmove(buf + pos, buf + pos + span, n - pos - span);
        *len = n - span;
        break;
    case 3: /* duplicate span */
        if (pos + span > n)
            span = n - pos;
        if (n + span <= cap) {
            memmove(buf + pos + span, buf + pos, n - pos);
            *len = n + span;
        }
        break;
    case 4: /* insert token */
    case 5: /* replace span by token */
        tok = dd_tokens[core_prng_below(r, sizeof(dd_tokens) / sizeof(*dd_tokens))];
        tl = strlen(tok);
        if (op == 5 && pos < n) { /* replace */
            if (pos + span > n)
                span = n - pos;
            memmove(buf + pos, buf + pos + span, n - pos - span);
            n -= span;
        }
        if (n + tl <= cap) {
            memmove(buf + pos + tl, buf + pos, n - pos);
            memcpy(buf + pos, tok, tl);
            n += tl;
        }
        *len = n;
        break;
    default: /* truncate */
        *len = pos;
        break;
    }
}

/* Well-formed readings the mutator starts from (and the libFuzzer seed corpus holds). */
static const char *const dd_seeds[] = {
    "{\"schema\":\"gcdp.reading/1\",\"device\":\"m1\",\"ts\":\"2026-11-01T00:00:00.000Z\","
    "\"readings\":{\"temperature\":21.25,\"humidity\":40.5,\"light\":300,\"voltage\":2.7},"
    "\"seq\":17}",
    "{\"schema\":\"gcdp.reading/1\",\"device\":\"m1\",\"ts\":1793491200000,\"seq\":3,"
    "\"readings\":{\"temperature\":18.70,\"humidity\":31.00,\"light\":13.0,\"voltage\":2.410}}",
    "{ \"device\" : \"m1\" , \"schema\" : \"gcdp.reading/1\" , \"ts\" : \"2015-02-04 17:51:00\" ,"
    " \"readings\" : { \"co2\" : 721.25 , \"humidity_ratio\" : 0.00479298817650529 ,"
    " \"light\" : null } }\n",
    "{\"schema\":\"gcdp.reading/1\",\"device\":\"m\\u0031\",\"ts\":\"2026-11-01T01:00:00+01:00\","
    "\"readings\":{\"temperature\":-0,\"humidity\":1e1,\"light\":0.1e-3,\"voltage\":5}}",
    "{\"schema\":\"gcdp.reading/1\",\"device\":\"m1\",\"ts\":1793491200000,"
    "\"readings\":{\"temperature\":125,\"humidity\":0.000000000000000000001}}",
};

#endif /* DECODE_DIFF_H */
