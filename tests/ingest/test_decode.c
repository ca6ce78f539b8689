/* test_decode.c - every reject reason, dead-letter content, accounting, ts formats. */
#include "ing_int.h"
#include "ing_test.h"

#define OK_HEAD "{\"schema\":\"gcdp.reading/1\",\"device\":\"m1\","
#define OK_TS   "\"ts\":\"2015-02-04T17:51:00Z\","
#define OK_RD   "\"readings\":{\"temperature\":21.5}"

struct bad {
    const char *kind;
    const char *payload;
    const char *key; /* "-" = no key */
    enum ing_reason want;
};

/* Stateless bad messages: one row per kind (the sim's corpus aligns on these codes). */
static const struct bad corpus[] = {
    {"empty", "", "m1", ING_R_EMPTY_PAYLOAD},
    {"bad_utf8", OK_HEAD OK_TS "\"readings\":{\"temperature\":1},\"x\":\"\xff\xfe\"}", "m1",
     ING_R_INVALID_UTF8},
    {"overlong_utf8", "{\"device\":\"\xc0\xaf\"}", "m1", ING_R_INVALID_UTF8},
    {"nul_escape", OK_HEAD OK_TS OK_RD ",\"seq\":\"a\\u0000b\"}", "m1", ING_R_NUL_CHARACTER},
    {"truncated", OK_HEAD "\"ts\":", "m1", ING_R_TRUNCATED},
    {"trailing", OK_HEAD OK_TS OK_RD "} {}", "m1", ING_R_TRAILING_DATA},
    {"dup_member", OK_HEAD OK_TS OK_RD ",\"ts\":1}", "m1", ING_R_DUPLICATE_KEY},
    {"syntax", "{schema: gcdp}", "m1", ING_R_MALFORMED_JSON},
    {"single_quotes", "{'device':'m1'}", "m1", ING_R_MALFORMED_JSON},
    {"array", "[1,2,3]", "m1", ING_R_NOT_OBJECT},
    {"number", "42", "m1", ING_R_NOT_OBJECT},
    {"string", "\"hello\"", "m1", ING_R_NOT_OBJECT},
    {"no_schema", "{\"device\":\"m1\"," OK_TS OK_RD "}", "m1", ING_R_MISSING_SCHEMA},
    {"schema_v2", "{\"schema\":\"gcdp.reading/2\",\"device\":\"m1\"," OK_TS OK_RD "}", "m1",
     ING_R_UNSUPPORTED_SCHEMA},
    {"schema_type", "{\"schema\":1,\"device\":\"m1\"," OK_TS OK_RD "}", "m1",
     ING_R_UNSUPPORTED_SCHEMA},
    {"extra_field", OK_HEAD OK_TS OK_RD ",\"label\":1}", "m1", ING_R_UNKNOWN_FIELD},
    {"no_device", "{\"schema\":\"gcdp.reading/1\"," OK_TS OK_RD "}", "m1", ING_R_MISSING_DEVICE},
    {"device_int", "{\"schema\":\"gcdp.reading/1\",\"device\":7," OK_TS OK_RD "}", "m1",
     ING_R_DEVICE_WRONG_TYPE},
    {"device_null", "{\"schema\":\"gcdp.reading/1\",\"device\":null," OK_TS OK_RD "}", "m1",
     ING_R_DEVICE_WRONG_TYPE},
    {"device_empty", "{\"schema\":\"gcdp.reading/1\",\"device\":\"\"," OK_TS OK_RD "}", "",
     ING_R_DEVICE_EMPTY},
    {"device_long",
     "{\"schema\":\"gcdp.reading/1\",\"device\":\"" /* 65 chars */
     "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcde\"," OK_TS OK_RD "}",
     "m1", ING_R_DEVICE_TOO_LONG},
    {"device_space", "{\"schema\":\"gcdp.reading/1\",\"device\":\"mo te\"," OK_TS OK_RD "}",
     "mo te", ING_R_DEVICE_BAD_CHARS},
    {"device_pipe", "{\"schema\":\"gcdp.reading/1\",\"device\":\"a|b\"," OK_TS OK_RD "}", "a|b",
     ING_R_DEVICE_BAD_CHARS},
    {"no_key", OK_HEAD OK_TS OK_RD "}", "-", ING_R_MISSING_KEY},
    {"key_mismatch", OK_HEAD OK_TS OK_RD "}", "m2", ING_R_KEY_MISMATCH},
    {"no_ts", OK_HEAD OK_RD "}", "m1", ING_R_MISSING_TS},
    {"ts_bool", OK_HEAD "\"ts\":true," OK_RD "}", "m1", ING_R_TS_WRONG_TYPE},
    {"ts_real", OK_HEAD "\"ts\":1423072260000.5," OK_RD "}", "m1", ING_R_TS_WRONG_TYPE},
    {"ts_words", OK_HEAD "\"ts\":\"yesterday\"," OK_RD "}", "m1", ING_R_TS_UNPARSEABLE},
    {"ts_feb30", OK_HEAD "\"ts\":\"2015-02-30 10:00:00\"," OK_RD "}", "m1", ING_R_TS_UNPARSEABLE},
    {"ts_hour24", OK_HEAD "\"ts\":\"2015-02-03T24:00:00Z\"," OK_RD "}", "m1", ING_R_TS_UNPARSEABLE},
    {"ts_1970", OK_HEAD "\"ts\":1," OK_RD "}", "m1", ING_R_TS_OUT_OF_RANGE},
    {"ts_2200", OK_HEAD "\"ts\":\"2200-01-01T00:00:00Z\"," OK_RD "}", "m1", ING_R_TS_OUT_OF_RANGE},
    {"seq_negative", OK_HEAD OK_TS OK_RD ",\"seq\":-1}", "m1", ING_R_SEQ_WRONG_TYPE},
    {"seq_string", OK_HEAD OK_TS OK_RD ",\"seq\":\"7\"}", "m1", ING_R_SEQ_WRONG_TYPE},
    {"no_readings", OK_HEAD OK_TS "\"seq\":1}", "m1", ING_R_MISSING_READINGS},
    {"readings_array", OK_HEAD OK_TS "\"readings\":[21.5]}", "m1", ING_R_READINGS_NOT_OBJECT},
    {"readings_empty", OK_HEAD OK_TS "\"readings\":{}}", "m1", ING_R_READINGS_EMPTY},
    {"unknown_channel", OK_HEAD OK_TS "\"readings\":{\"pressure\":1013}}", "m1",
     ING_R_UNKNOWN_CHANNEL},
    {"value_string", OK_HEAD OK_TS "\"readings\":{\"temperature\":\"21\"}}", "m1",
     ING_R_WRONG_TYPE},
    {"value_bool", OK_HEAD OK_TS "\"readings\":{\"temperature\":true}}", "m1", ING_R_WRONG_TYPE},
    {"value_array", OK_HEAD OK_TS "\"readings\":{\"temperature\":[1]}}", "m1", ING_R_WRONG_TYPE},
    {"value_object", OK_HEAD OK_TS "\"readings\":{\"temperature\":{\"v\":1}}}", "m1",
     ING_R_WRONG_TYPE},
    {"nan_string", OK_HEAD OK_TS "\"readings\":{\"temperature\":\"NaN\"}}", "m1", ING_R_NON_FINITE},
    {"inf_string", OK_HEAD OK_TS "\"readings\":{\"temperature\":\"-Infinity\"}}", "m1",
     ING_R_NON_FINITE},
    {"overflow", OK_HEAD OK_TS "\"readings\":{\"temperature\":1e999}}", "m1", ING_R_NON_FINITE},
    {"nan_token", OK_HEAD OK_TS "\"readings\":{\"temperature\":NaN}}", "m1", ING_R_NON_FINITE},
    {"too_hot", OK_HEAD OK_TS "\"readings\":{\"temperature\":125.5}}", "m1", ING_R_OUT_OF_DOMAIN},
    {"too_cold", OK_HEAD OK_TS "\"readings\":{\"temperature\":-40.01}}", "m1", ING_R_OUT_OF_DOMAIN},
    {"negative_light", OK_HEAD OK_TS "\"readings\":{\"light\":-1}}", "m1", ING_R_OUT_OF_DOMAIN},
};

static enum ing_reason push_bad(struct ing_engine *e, struct ing_sink *s, const struct bad *b,
                                long long off)
{
    return push_raw(e, s, b->payload, strlen(b->payload), strcmp(b->key, "-") ? b->key : NULL, 3,
                    off, 5000);
}

static size_t b64_decode(const char *in, unsigned char *out)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = 0;
    unsigned acc = 0;
    int bits = 0;
    for (; *in && *in != '='; in++) {
        acc = acc << 6 | (unsigned)(strchr(tab, *in) - tab);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[n++] = (unsigned char)(acc >> bits);
        }
    }
    return n;
}

Test(decode, each_bad_kind_gets_its_reason_and_payload_kept)
{
    struct ing_params p;
    struct ing_engine *e;
    struct coll c;
    struct ing_sink s = coll_sink(&c);

    ing_params_default(&p);
    e = mk_engine(&p);
    for (size_t i = 0; i < sizeof(corpus) / sizeof(*corpus); i++) {
        const struct bad *b = &corpus[i];
        json_t *dl;
        const char *enc, *pl;
        enum ing_reason got = push_bad(e, &s, b, (long long)i);

        cr_assert_eq(got, b->want, "%s: got %s, want %s", b->kind, ing_reason_code(got),
                     ing_reason_code(b->want));
        cr_assert_eq(json_array_size(c.rejects), i + 1, "%s: one dead letter each", b->kind);
        dl = json_array_get(c.rejects, i);
        cr_assert_str_eq(json_string_value(json_object_get(dl, "reason")),
                         ing_reason_code(b->want));
        cr_assert_eq(jint(json_object_get(dl, "source"), "offset"), (long long)i);
        cr_assert_eq(jint(json_object_get(dl, "source"), "partition"), 3);
        cr_assert_eq(jint(dl, "payload_bytes"), (long long)strlen(b->payload));
        enc = json_string_value(json_object_get(dl, "payload_encoding"));
        pl = json_string_value(json_object_get(dl, "payload"));
        if (strcmp(enc, "utf8") == 0) {
            cr_assert_eq(json_string_length(json_object_get(dl, "payload")), strlen(b->payload));
            cr_assert_eq(memcmp(pl, b->payload, strlen(b->payload)), 0, "%s verbatim", b->kind);
        } else {
            unsigned char raw[512];
            cr_assert_str_eq(enc, "base64");
            cr_assert_eq(b64_decode(pl, raw), strlen(b->payload), "%s", b->kind);
            cr_assert_eq(memcmp(raw, b->payload, strlen(b->payload)), 0, "%s base64", b->kind);
        }
    }
    coll_free(&c);
    ing_engine_free(e);
}

Test(decode, oversize_and_too_deep)
{
    struct ing_params p;
    struct ing_engine *e;
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    size_t big = 65537;
    char *buf = malloc(big + 1);
    json_t *dl;

    ing_params_default(&p);
    e = mk_engine(&p);
    memset(buf, ' ', big);
    memcpy(buf, OK_HEAD OK_TS OK_RD "}", strlen(OK_HEAD OK_TS OK_RD "}"));
    cr_assert_eq(push_raw(e, &s, buf, big, "m1", 0, 0, 0), ING_R_OVERSIZE);
    dl = json_array_get(c.rejects, 0);
    cr_assert(json_is_true(json_object_get(dl, "payload_truncated")));
    cr_assert_eq(jint(dl, "payload_bytes"), (long long)big);
    cr_assert_eq(json_string_length(json_object_get(dl, "payload")), p.max_message_bytes);
    /* 3000 nested arrays: deeper than jansson's limit, well under the size cap */
    memset(buf, '[', 3000);
    cr_assert_eq(push_raw(e, &s, buf, 3000, "m1", 0, 1, 0), ING_R_TOO_DEEP);
    free(buf);
    coll_free(&c);
    ing_engine_free(e);
}

/* Reasons that need engine state, then a check that every code was produced. */
Test(decode, every_reason_code_is_reachable_and_accounted)
{
    struct ing_params p;
    struct ing_engine *e;
    struct ing_counters k;
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    char big[70000];
    long long off = 0;

    ing_params_default(&p);
    p.max_devices = 2;
    p.max_buffer = 2;
    p.lateness_ms = 0;
    p.window_ms = p.hop_ms = 5 * T_MIN;
    /* push_t's processing clock is 0: "the future" starts at T0 + 3 days here. */
    p.max_future_ms = T0 + 3 * 1440 * T_MIN;
    e = mk_engine(&p);
    for (size_t i = 0; i < sizeof(corpus) / sizeof(*corpus); i++)
        push_bad(e, &s, &corpus[i], off++);
    memset(big, ' ', sizeof(big));
    big[0] = '{';
    push_raw(e, &s, big, sizeof(big), "m1", 0, off++, 0);
    push_raw(e, &s, big, 3000, "m1", 0, off++, 0); /* '{' then spaces: truncated */
    memset(big, '[', 3000);
    push_raw(e, &s, big, 3000, "m1", 0, off++, 0);
    cr_assert_eq(push_t(e, &s, "a", T0 + 10 * T_MIN, 20, off++), ING_R_NONE);
    cr_assert_eq(push_t(e, &s, "a", T0 + 10 * T_MIN, 20, off++), ING_R_DUPLICATE);
    cr_assert_eq(push_t(e, &s, "a", T0, 20, off++), ING_R_LATE);
    cr_assert_eq(push_t(e, &s, "a", T0 + 10 * T_MIN + 1, 20, off++), ING_R_NONE);
    cr_assert_eq(push_t(e, &s, "a", T0 + 10 * T_MIN + 2, 20, off++), ING_R_BUFFER_FULL);
    cr_assert_eq(push_t(e, &s, "b", T0, 20, off++), ING_R_NONE);
    cr_assert_eq(push_t(e, &s, "c", T0, 20, off++), ING_R_TOO_MANY_DEVICES);
    cr_assert_eq(push_t(e, &s, "b", T0 + 4 * 1440 * T_MIN, 20, off++), ING_R_TS_IN_FUTURE);
    cr_assert_eq(push_t(e, &s, "b", T0 + 2 * 1440 * T_MIN, 20, off++), ING_R_TS_JUMP);
    ing_engine_counters(e, &k);
    cr_assert_eq(k.consumed, (uint64_t)off);
    cr_assert_eq(k.consumed, k.accepted + k.rejected);
    cr_assert_eq(k.accepted, 3);
    for (int r = 1; r < ING_REASON_COUNT; r++)
        cr_assert_gt(k.rejected_by_reason[r], 0, "reason %s never produced",
                     ing_reason_code((enum ing_reason)r));
    cr_assert_geq(ING_REASON_COUNT - 1, 25, "at least 25 distinct reason codes");
    coll_free(&c);
    ing_engine_free(e);
}

Test(decode, reason_codes_are_distinct_snake_case)
{
    for (int i = 0; i < ING_REASON_COUNT; i++) {
        const char *a = ing_reason_code((enum ing_reason)i);
        for (const char *q = a; *q; q++)
            cr_assert((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '_',
                      "%s is not snake_case", a);
        for (int j = 0; j < i; j++)
            cr_assert_str_neq(a, ing_reason_code((enum ing_reason)j));
    }
    cr_assert_str_eq(ing_reason_code(ING_REASON_COUNT), "unknown");
}

Test(decode, key_policies)
{
    struct ing_params p;
    struct ing_engine *e;
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    const char *m = OK_HEAD OK_TS OK_RD "}";

    ing_params_default(&p);
    p.key_policy = ING_KEY_MATCH;
    e = mk_engine(&p);
    cr_assert_eq(push_raw(e, &s, m, strlen(m), NULL, 0, 0, 0), ING_R_NONE);
    cr_assert_eq(push_raw(e, &s, m, strlen(m), "zz", 0, 1, 0), ING_R_KEY_MISMATCH);
    ing_engine_free(e);
    p.key_policy = ING_KEY_IGNORE;
    e = mk_engine(&p);
    cr_assert_eq(push_raw(e, &s, m, strlen(m), "zz", 0, 2, 0), ING_R_NONE);
    ing_engine_free(e);
    coll_free(&c);
}

Test(decode, binary_key_is_base64_in_dead_letter)
{
    struct ing_params p;
    struct ing_engine *e;
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    struct ing_source src = {"t", 1, 2};
    const char key[] = {'\xff', '\x00', 'a'};
    json_t *dl;

    ing_params_default(&p);
    e = mk_engine(&p);
    cr_assert_eq(ing_engine_push(e, "x", 1, key, 3, &src, 0, &s, NULL), CORE_OK);
    dl = json_array_get(c.rejects, 0);
    cr_assert_str_eq(json_string_value(json_object_get(dl, "key_encoding")), "base64");
    cr_assert_str_eq(json_string_value(json_object_get(dl, "key")), "/wBh");
    cr_assert_eq(ing_engine_push(e, NULL, 1, NULL, 0, &src, 0, &s, NULL), CORE_EINVAL);
    coll_free(&c);
    ing_engine_free(e);
}

Test(decode, accepted_forms_of_a_reading)
{
    struct ing_params p;
    struct ing_engine *e;
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    const char *ok[] = {
        OK_HEAD OK_TS OK_RD "}",
        OK_HEAD "\"ts\":\"2015-02-04 17:52:00\",\"readings\":{\"temperature\":null,"
                "\"humidity\":40},\"seq\":0}",
        OK_HEAD "\"ts\":1423072380000,\"readings\":{\"co2\":412.75,\"humidity_ratio\":0.0047,"
                "\"light\":0,\"voltage\":2.7}}",
        ("{\"readings\":{\"temperature\":-40},\"ts\":\"2015-02-04T17:54:00.000Z\","
         "\"device\":\"m1\",\"schema\":\"gcdp.reading/1\"}"),
    };

    ing_params_default(&p);
    e = mk_engine(&p);
    for (size_t i = 0; i < sizeof(ok) / sizeof(*ok); i++)
        cr_assert_eq(
            push_raw(e, &s, ok[i], strlen(ok[i]), "m1", 0, (long long)i, 0), ING_R_NONE,
            "message %zu: %s", i,
            c.rejects && json_array_size(c.rejects)
                ? json_string_value(json_object_get(json_array_get(c.rejects, 0), "detail"))
                : "");
    coll_free(&c);
    ing_engine_free(e);
}

Test(decode, utf8_validator_edge_cases)
{
    cr_assert(ing__utf8_valid("a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 10), "2/3/4-byte forms");
    cr_assert_not(ing__utf8_valid("\xed\xa0\x80", 3), "UTF-16 surrogate");
    cr_assert_not(ing__utf8_valid("\xf4\x90\x80\x80", 4), "beyond U+10FFFF");
    cr_assert_not(ing__utf8_valid("\xe0\x80\xaf", 3), "overlong 3-byte");
    cr_assert_not(ing__utf8_valid("\xe2\x82", 2), "truncated sequence");
    cr_assert_not(ing__utf8_valid("\x80", 1), "lone continuation byte");
    cr_assert(ing__utf8_valid("", 0));
}

Test(decode, detail_stays_utf8_when_a_name_is_cut)
{
    struct ing_params p;
    struct ing_engine *e;
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    /* 39 ASCII bytes then a 2-byte character: "%.40s" cuts it in half */
    const char *m = OK_HEAD OK_TS "\"readings\":{\"abcdefghijabcdefghijabcdefghijabcdefghi\xc3\xa9"
                                  "\":1}}";
    const char *detail;

    ing_params_default(&p);
    e = mk_engine(&p);
    cr_assert_eq(push_raw(e, &s, m, strlen(m), "m1", 0, 0, 0), ING_R_UNKNOWN_CHANNEL);
    detail = json_string_value(json_object_get(json_array_get(c.rejects, 0), "detail"));
    cr_assert_not_null(detail, "the dead letter parsed (valid UTF-8) and has a detail");
    cr_assert_not_null(strstr(detail, "abcdefghi?' not declared"), "%s", detail);
    coll_free(&c);
    ing_engine_free(e);
}

/* A binary payload (raw NUL bytes; here the first bytes of a gzip stream) is malformed JSON,
 * not "truncated" (jansson stops at the NUL and calls it a premature end); the dead letter
 * keeps the bytes (base64). */
Test(decode, binary_payload_is_malformed_not_truncated)
{
    static const unsigned char gz[] = {0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00,
                                       0x00, 0x00, 0x03, 0x7b, 0x22, 0x00, 0x7d};
    static const char nul_in_doc[] = "{\"schema\":\"gcdp.reading/1\"\0,\"device\":\"d\"}";
    struct ing_params p;
    struct ing_engine *e;
    struct coll c;
    struct ing_sink s = coll_sink(&c);
    struct ing_source src = {"sensors.raw", 0, 0};
    enum ing_reason r = ING_R_NONE;

    ing_params_default(&p);
    e = mk_engine(&p);
    cr_assert_eq(ing_engine_push(e, (const char *)gz + 10, 4, "d", 1, &src, 0, &s, &r), CORE_OK);
    cr_assert_eq(r, ING_R_MALFORMED_JSON, "got %s", ing_reason_code(r));
    cr_assert_eq(ing_engine_push(e, nul_in_doc, sizeof(nul_in_doc) - 1, "d", 1, &src, 0, &s, &r),
                 CORE_OK);
    cr_assert_eq(r, ING_R_MALFORMED_JSON, "got %s", ing_reason_code(r));
    cr_assert(strstr(json_string_value(json_object_get(json_array_get(c.rejects, 1), "detail")),
                     "raw NUL byte"));
    coll_free(&c);
    ing_engine_free(e);
}
