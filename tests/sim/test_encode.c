/* test_encode.c - reading encoding, fault transforms and rates, time formats, token bucket. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "sim/bucket.h"
#include "sim/encode.h"
#include "sim/sim.h"

static const char *const names[SIM_NCH] = {"temperature", "humidity", "light", "voltage"};
static const double vals[SIM_NCH] = {21.25, 40.5, 300.0, 2.7};

static char *enc(enum sim_fault f, struct core_prng *r, size_t *len)
{
    struct sim_reading rd = {"mote-7", 1793491200000LL, 17, names, vals, SIM_NCH};
    char *buf = malloc(70000);
    cr_assert_eq(sim_encode_reading(&rd, f, r, 65536, buf, 70000, len), CORE_OK);
    return buf;
}

Test(sim_encode, clean_reading_matches_the_contract)
{
    struct core_prng r;
    size_t len;
    char *s;
    core_prng_seed(&r, 1);
    s = enc(SIM_FAULT_COUNT, &r, &len);
    cr_assert_str_eq(s, "{\"schema\":\"gcdp.reading/1\",\"device\":\"mote-7\","
                        "\"ts\":\"2026-11-01T00:00:00.000Z\",\"readings\":{\"temperature\":21.25,"
                        "\"humidity\":40.5,\"light\":300,\"voltage\":2.7},\"seq\":17}");
    cr_assert_eq(len, strlen(s));
    free(s);
}

/* Every message-level fault is recognizable from the payload alone. */
Test(sim_encode, each_fault_kind_breaks_the_message_the_intended_way)
{
    struct core_prng r;
    json_error_t e;
    core_prng_seed(&r, 2);
    for (int rep = 0; rep < 50; rep++) {
        size_t len;
        char *s = enc(SIM_FAULT_OUT_OF_DOMAIN, &r, &len);
        json_t *doc = json_loads(s, 0, &e), *rd = json_object_get(doc, "readings");
        const char *k;
        json_t *v;
        int outside = 0;
        json_object_foreach(rd, k, v)
        {
            double x = json_number_value(v);
            outside += (!strcmp(k, "temperature") && (x < -40 || x > 125)) ||
                       (!strcmp(k, "humidity") && (x < 0 || x > 100)) ||
                       (!strcmp(k, "light") && (x < 0 || x > 100000)) ||
                       (!strcmp(k, "voltage") && (x < 0 || x > 5));
        }
        cr_assert_eq(outside, 1, "%s", s);
        json_decref(doc);
        free(s);

        s = enc(SIM_FAULT_NONFINITE, &r, &len);
        cr_assert_not_null(strstr(s, ":1e999"));
        cr_assert_null(json_loads(s, 0, &e)); /* overflow: no finite double */
        cr_assert_eq(json_error_code(&e), json_error_numeric_overflow);
        free(s);

        s = enc(SIM_FAULT_WRONG_TYPE, &r, &len);
        doc = json_loads(s, 0, &e);
        rd = json_object_get(doc, "readings");
        outside = 0;
        json_object_foreach(rd, k, v) outside += json_is_string(v);
        cr_assert_eq(outside, 1);
        json_decref(doc);
        free(s);

        s = enc(SIM_FAULT_UNKNOWN_CHANNEL, &r, &len);
        doc = json_loads(s, 0, &e);
        cr_assert_not_null(json_object_get(json_object_get(doc, "readings"), "pressure"));
        json_decref(doc);
        free(s);

        size_t clean_len;
        free(enc(SIM_FAULT_COUNT, &r, &clean_len));
        s = enc(SIM_FAULT_MALFORMED_JSON, &r, &len);
        cr_assert_null(json_loads(s, 0, &e), "%s", s);
        cr_assert_eq(json_error_code(&e), json_error_invalid_syntax, "%s: %s", s, e.text);
        cr_assert_eq(len, clean_len - 1);
        free(s);

        s = enc(SIM_FAULT_TRUNCATED, &r, &len);
        cr_assert_null(json_loads(s, 0, &e), "%s", s);
        cr_assert_eq(json_error_code(&e), json_error_premature_end_of_input, "%s: %s", s, e.text);
        cr_assert(len >= 1 && len < clean_len, "a proper prefix of the clean message");
        free(s);

        s = enc(SIM_FAULT_OVERSIZE, &r, &len);
        cr_assert_eq(len, 65537);
        cr_assert_eq(strlen(s), 65537);
        doc = json_loads(s, 0, &e);
        cr_assert_not_null(doc, "oversize payload is still JSON: %s", e.text);
        json_decref(doc);
        free(s);
    }
}

Test(sim_encode, too_small_buffer_is_an_error_not_a_truncation)
{
    struct core_prng r;
    struct sim_reading rd = {"mote-7", 0, 1, names, vals, SIM_NCH};
    char buf[40];
    size_t len = 0;
    core_prng_seed(&r, 1);
    cr_assert_eq(sim_encode_reading(&rd, SIM_FAULT_COUNT, &r, 100, buf, sizeof(buf), &len),
                 CORE_ETOOBIG);
}

Test(sim_faults, pick_rates_within_binomial_tolerance)
{
    /* N = 400000 draws, each of the 12 kinds p = 0.02 (total 0.24): |count - Np| <= 5 sqrt(Np(1-p))
     */
    enum { N = 400000 };
    double rates[SIM_FAULT_COUNT];
    long count[SIM_FAULT_COUNT + 1] = {0};
    struct core_prng r;
    core_prng_seed(&r, 77);
    for (int k = 0; k < SIM_FAULT_COUNT; k++)
        rates[k] = 0.02;
    for (int i = 0; i < N; i++)
        count[sim_fault_pick(&r, rates)]++;
    for (int k = 0; k < SIM_FAULT_COUNT; k++)
        cr_assert_leq(fabs((double)count[k] - N * 0.02), 5 * sqrt(N * 0.02 * 0.98), "%s: %ld",
                      sim_fault_name(k), count[k]);
    cr_assert_leq(fabs((double)count[SIM_FAULT_COUNT] - N * 0.76), 5 * sqrt(N * 0.76 * 0.24));
}

Test(sim_faults, spec_parsing_names_the_bad_item)
{
    double rates[SIM_FAULT_COUNT] = {0};
    char eb[256];
    cr_assert_eq(sim_faults_parse("duplicate=0.1,late=0.05", rates, eb, sizeof(eb)), CORE_OK);
    cr_assert_float_eq(rates[SIM_FAULT_DUPLICATE], 0.1, 1e-15);
    cr_assert_float_eq(rates[SIM_FAULT_LATE], 0.05, 1e-15);
    cr_assert_eq(rates[SIM_FAULT_GAP], 0.0);
    cr_assert_eq(sim_faults_parse("bogus=0.1", rates, eb, sizeof(eb)), CORE_ECONFIG);
    cr_assert_not_null(strstr(eb, "bogus"));
    cr_assert_eq(sim_faults_parse("late=x", rates, eb, sizeof(eb)), CORE_ECONFIG);
    cr_assert_not_null(strstr(eb, "late"));
    cr_assert_eq(sim_faults_parse("all=0.1", rates, eb, sizeof(eb)), CORE_ECONFIG); /* 1.2 */
    cr_assert_float_eq(rates[SIM_FAULT_DUPLICATE], 0.1, 1e-15); /* unchanged on error */
    cr_assert_eq(sim_faults_parse("all=0.05,oversize=0", rates, eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(rates[SIM_FAULT_OVERSIZE], 0.0);
    cr_assert_float_eq(rates[SIM_FAULT_MISSING], 0.05, 1e-15);
}

Test(sim_bucket, paces_to_the_configured_rate)
{
    struct sim_bucket b;
    int64_t t = 1000000000;
    sim_bucket_init(&b, 100.0, 1.0, t);
    cr_assert_eq(sim_bucket_take(&b, t), 0);
    int64_t w = sim_bucket_take(&b, t);
    cr_assert(w > 9900000 && w <= 10000000, "wait %lld ns", (long long)w);
    cr_assert_gt(sim_bucket_take(&b, t + 5000000), 0);
    cr_assert_eq(sim_bucket_take(&b, t + 10000000), 0);
    /* over one simulated second at most rate + burst tokens are granted */
    int granted = 0;
    for (int64_t now = t + 10000000; now < t + 1010000000; now += 100000)
        granted += sim_bucket_take(&b, now) == 0;
    cr_assert(granted >= 99 && granted <= 101, "granted %d", granted);
    sim_bucket_init(&b, 0.0, 1.0, t); /* unlimited */
    for (int i = 0; i < 1000; i++)
        cr_assert_eq(sim_bucket_take(&b, t), 0);
}
