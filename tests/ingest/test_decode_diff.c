/* test_decode_diff.c - the fast reading decoder (simdjson scanner + jansson for the rest)
 * against the jansson reference decoder, reading by reading: same accept/reject, reason,
 * detail and decoded values (bit-exact doubles), over the bad-input corpus, the simulator's
 * 12 fault kinds, the UCI Occupancy replay, edge cases, and 10^4 seeded mutations
 * (tests/tools/fuzz_decode_diff.c runs >= 10^6; tests/fuzz/fuzz_decode.c is the libFuzzer
 * target). */
#include <stdlib.h>

#include "decode_diff.h"
#include "ing_test.h"
#include "sim/encode.h"
#include "sim/occupancy.h"
#include "svc/replay_int.h"
#include "test_support.h"

struct dd {
    struct ing_params p;
    struct ing__fj *fj;
    struct dd_stats st;
};

static void dd_open(struct dd *d)
{
    memset(d, 0, sizeof(*d));
    ing_params_default(&d->p);
    d->fj = ing__fj_new(d->p.max_message_bytes);
    cr_assert_not_null(d->fj);
}

static void dd_expect(struct dd *d, const char *what, const char *payload, size_t len,
                      const char *key)
{
    char why[512];
    cr_assert(dd_check(&d->p, d->fj, payload, len, key, key ? strlen(key) : 0, 1000, &d->st, why,
                       sizeof(why)),
              "%s: %s (payload %.300s)", what, why, payload);
}

Test(decode_diff, bad_input_corpus)
{
    struct dd d;
    char eb[512], *line = NULL;
    size_t cap = 0;
    ssize_t n;
    FILE *f = fopen(GCDP_SOURCE_DIR "/tests/fixtures/bad_inputs/corpus.jsonl", "r");

    cr_assert_not_null(f);
    dd_open(&d);
    while ((n = getline(&line, &cap, f)) > 0) {
        struct sim_corpus_entry c;
        cr_assert_eq(sim_corpus_entry_parse(line, (size_t)n, &c, eb, sizeof(eb)), CORE_OK);
        dd_expect(&d, c.kind, c.payload, c.payload_len, c.key);
        sim_corpus_entry_cleanup(&c);
    }
    cr_assert_geq(d.st.inputs, 50);
    cr_assert_geq(d.st.rejected, 40, "the corpus is mostly bad input");
    cr_assert_eq(d.st.fast_path, d.st.accepted, "every valid corpus line takes the fast path");
    free(line);
    fclose(f);
    ing__fj_free(d.fj);
}

/* Every fault kind, 200 readings each, through the simulator's own encoder. */
Test(decode_diff, simulator_fault_kinds)
{
    static const char *const names[4] = {"temperature", "humidity", "light", "voltage"};
    struct dd d;
    struct core_prng rng;
    size_t cap = 70000, len;
    char *buf = malloc(cap), dev[32];
    unsigned long long acc_before;

    dd_open(&d);
    core_prng_seed(&rng, 20261101);
    for (int k = 0; k <= SIM_FAULT_COUNT; k++) { /* SIM_FAULT_COUNT: no fault */
        acc_before = d.st.accepted;
        for (int i = 0; i < 200; i++) {
            double vals[4] = {15 + 10 * core_prng_uniform(&rng), 100 * core_prng_uniform(&rng),
                              floor(2000 * core_prng_uniform(&rng)), 2 + core_prng_uniform(&rng)};
            struct sim_reading r = {dev, 1793491200000LL + 60000LL * i, (uint64_t)i, names, vals,
                                    4};
            snprintf(dev, sizeof(dev), "mote-%d", i % 17);
            cr_assert_eq(sim_encode_reading(&r, (enum sim_fault)k, &rng, d.p.max_message_bytes, buf,
                                            cap, &len),
                         CORE_OK);
            dd_expect(&d, k < SIM_FAULT_COUNT ? sim_fault_name((enum sim_fault)k) : "none", buf,
                      len, dev);
        }
        if (k == SIM_FAULT_COUNT || k <= SIM_FAULT_LATE)
            cr_assert_eq(d.st.accepted - acc_before, 200, "fault %d is not message-level", k);
    }
    cr_assert_eq(d.st.fast_path, d.st.accepted);
    cr_assert_gt(d.st.rejected, 1000);
    free(buf);
    ing__fj_free(d.fj);
}

/* The three UCI Occupancy files as `gcdp replay` encodes them (sim_occ_row_json). */
Test(decode_diff, occupancy_replay)
{
    static const char *const files[] = {"datatraining.txt", "datatest.txt", "datatest2.txt"};
    struct dd d;
    char eb[512], path[512], buf[1024];

    dd_open(&d);
    for (size_t i = 0; i < sizeof(files) / sizeof(*files); i++) {
        struct sim_occ_reader *r;
        struct sim_occ_row row;
        core_err rc;
        snprintf(path, sizeof(path), "%s/occupancy/%s", GCDP_DATA_DIR, files[i]);
        cr_assert_eq(sim_occ_reader_open(path, &r, eb, sizeof(eb)), CORE_OK, "%s", eb);
        while ((rc = sim_occ_reader_next(r, &row, eb, sizeof(eb))) == CORE_OK) {
            size_t len = sim_occ_row_json(&row, "occupancy", buf, sizeof(buf));
            cr_assert_gt(len, 0);
            dd_expect(&d, files[i], buf, len, "occupancy");
        }
        cr_assert_eq(rc, CORE_ENOTFOUND, "%s", eb);
        sim_occ_reader_free(r);
    }
    cr_assert_gt(d.st.inputs, 20000, "all three files");
    cr_assert_eq(d.st.accepted, d.st.inputs, "every Occupancy row is a valid reading");
    cr_assert_eq(d.st.fast_path, d.st.accepted, "and decoded by the scanner");
    ing__fj_free(d.fj);
}

#define HEAD "{\"schema\":\"gcdp.reading/1\",\"device\":\"m1\",\"ts\":1793491200000,"

/* Edge cases where simdjson and jansson could part: each row's reference outcome is also
 * pinned, so the row keeps testing what it names. */
Test(decode_diff, edge_cases)
{
    static const struct {
        const char *payload;
        enum ing_reason want;
        bool fast; /* accepted by the scanner itself */
    } rows[] = {
        {HEAD "\"readings\":{\"temperature\":-0}}", ING_R_NONE, true},   /* int 0: +0.0 */
        {HEAD "\"readings\":{\"temperature\":-0.0}}", ING_R_NONE, true}, /* real: -0.0 */
        {HEAD "\"readings\":{\"temperature\":1e-400}}", ING_R_NONE, true},
        {HEAD "\"readings\":{\"humidity_ratio\":4.9e-324}}", ING_R_NONE, true},
        {HEAD "\"readings\":{\"humidity_ratio\":2.2250738585072011e-308}}", ING_R_NONE, true},
        {HEAD "\"readings\":{\"light\":99999.99999999999999999999999}}", ING_R_NONE, false},
        {HEAD "\"readings\":{\"temperature\":1e400}}", ING_R_NON_FINITE, false},
        {HEAD "\"readings\":{\"temperature\":9223372036854775808}}", ING_R_NON_FINITE, false},
        {HEAD "\"readings\":{\"temperature\":-9223372036854775808}}", ING_R_OUT_OF_DOMAIN, false},
        {HEAD "\"readings\":{\"temperature\":NaN}}", ING_R_NON_FINITE, false},
        /* jansson's message for '-' followed by a letter names no token: malformed */
        {HEAD "\"readings\":{\"temperature\":-Infinity}}", ING_R_MALFORMED_JSON, false},
        {HEAD "\"readings\":{\"temperature\":\"inf\"}}", ING_R_NON_FINITE, false},
        {HEAD "\"readings\":{\"temperature\":01}}", ING_R_MALFORMED_JSON, false},
        {HEAD "\"readings\":{\"temperature\":1.}}", ING_R_MALFORMED_JSON, false},
        {HEAD "\"readings\":{\"temperature\":+1}}", ING_R_NON_FINITE, false}, /* "near '+" */
        /* simdjson 3.0.1 misreads this (0x1.fcf88d0757764p-8; found by the mutation test):
         * more than 19 significant digits go to the reference */
        {HEAD "\"readings\":{\"humidity\":0.100000000000000000001}}", ING_R_NONE, false},
        {HEAD "\"readings\":{\"humidity\":0.1000000000000000000}}", ING_R_NONE, true},
        {HEAD "\"readings\":{\"temperature\":1,\"temp\\u0065rature\":2}}", ING_R_DUPLICATE_KEY,
         false},
        {HEAD "\"readings\":{\"temperature\":1},\"sch\\u0065ma\":\"x\"}", ING_R_DUPLICATE_KEY,
         false},
        {HEAD "\"readings\":{\"temperature\\u0000\":1}}", ING_R_NUL_CHARACTER, false},
        {HEAD "\"readings\":{\"temperature\":1}} ", ING_R_NONE, true},
        {HEAD "\"readings\":{\"temperature\":1}}}", ING_R_TRAILING_DATA, false},
        {HEAD "\"readings\":{\"temperature\":1}} {}", ING_R_TRAILING_DATA, false},
        {HEAD "\"readings\":{\"temperature\":1}}\xff", ING_R_INVALID_UTF8, false},
        {"\xef\xbb\xbf" HEAD "\"readings\":{\"temperature\":1}}", ING_R_MALFORMED_JSON, false},
        {HEAD "\"readings\":{\"temperature\":1},\"x\":\"\xed\xa0\x80\"}", ING_R_INVALID_UTF8,
         false},
        {HEAD "\"readings\":{\"temperature\":1},\"x\":\"\xf4\x90\x80\x80\"}", ING_R_INVALID_UTF8,
         false},
        {HEAD "\"readings\":{\"temperature\":1},\"x\":\"\xe0\x80\xaf\"}", ING_R_INVALID_UTF8,
         false},
        {HEAD "\"readings\":{\"temperature\":1},\"x\":\"\\ud800\"}", ING_R_MALFORMED_JSON, false},
        {HEAD "\"readings\":{\"temperature\":1},\"seq\":1.0}", ING_R_SEQ_WRONG_TYPE, false},
        {HEAD "\"readings\":{\"temperature\":1},\"seq\":-0}", ING_R_NONE, true},
        {HEAD "\"readings\":{\"temperature\":1},\"seq\":1e2}", ING_R_SEQ_WRONG_TYPE, false},
        {"{\"schema\":\"gcdp.reading/1\",\"device\":\"m1\",\"ts\":1.7934912e12,"
         "\"readings\":{\"temperature\":1}}",
         ING_R_TS_WRONG_TYPE, false},
        {"{\"schema\":\"gcdp.reading/1\",\"device\":\"m\\u0031\",\"ts\":\"2026-11-01T00:00:00Z\","
         "\"readings\":{\"temperature\":null,\"light\":7}}",
         ING_R_NONE, true},
        {"{\"schema\":\"gcdp.reading/1\",\"device\":\"m1\",\"ts\":\"2026-11-01T00:00:00\tZ\","
         "\"readings\":{\"temperature\":1}}",
         ING_R_MALFORMED_JSON, false},
        {HEAD "\"readings\":{\"temperature\":nul}}", ING_R_MALFORMED_JSON, false},
        {HEAD "\"readings\":{\"temperature\":[1]}}", ING_R_WRONG_TYPE, false},
        {HEAD "\"readings\":{}}", ING_R_READINGS_EMPTY, false},
    };
    struct dd d;

    dd_open(&d);
    for (size_t i = 0; i < sizeof(rows) / sizeof(*rows); i++) {
        struct ing__reading out;
        json_t *root = NULL;
        char detail[256];
        unsigned long long fast_before = d.st.fast_path;
        enum ing_reason got = ing__decode(&d.p, NULL, rows[i].payload, strlen(rows[i].payload),
                                          "m1", 2, 1000, &root, &out, detail, sizeof(detail));
        json_decref(root);
        cr_expect_eq(got, rows[i].want, "row %zu: reference says %s", i, ing_reason_code(got));
        dd_expect(&d, "edge", rows[i].payload, strlen(rows[i].payload), "m1");
        cr_expect_eq(d.st.fast_path - fast_before, rows[i].fast ? 1u : 0u,
                     "row %zu: fast path %s expected", i, rows[i].fast ? "" : "not");
    }
    ing__fj_free(d.fj);
}

/* 10^4 seeded mutations (1..4 each; half of the inputs change digits only) of the seed
 * readings, three key situations. */
Test(decode_diff, ten_thousand_mutations)
{
    struct dd d;
    struct core_prng rng;
    char buf[4096], why[512];
    size_t distinct = 0;

    dd_open(&d);
    core_prng_seed(&rng, 14);
    for (int i = 0; i < 10000; i++) {
        const char *seed = dd_seeds[core_prng_below(&rng, sizeof(dd_seeds) / sizeof(*dd_seeds))];
        size_t len = strlen(seed), muts = 1 + (size_t)core_prng_below(&rng, 4);
        uint64_t km = core_prng_below(&rng, 8);
        memcpy(buf, seed, len);
        bool digits_only = core_prng_below(&rng, 2) == 0; /* half: numbers only */
        for (size_t m = 0; m < muts; m++)
            if (digits_only)
                dd_mutate_digit(&rng, buf, &len, sizeof(buf));
            else
                dd_mutate(&rng, buf, &len, sizeof(buf));
        d.p.key_policy = km == 0 ? ING_KEY_IGNORE : km == 1 ? ING_KEY_MATCH : ING_KEY_REQUIRE;
        cr_assert(dd_check(&d.p, d.fj, buf, len, km == 2 ? NULL : "m1", km == 2 ? 0 : 2, 1000,
                           &d.st, why, sizeof(why)),
                  "mutation %d: %s (payload %.*s)", i, why, (int)len, buf);
    }
    for (int r = 0; r < ING_REASON_COUNT; r++)
        distinct += d.st.by_reason[r] > 0;
    cr_log_info("mutations: %llu inputs, %llu accepted (%llu by the scanner), %llu rejected, "
                "%zu distinct reasons",
                d.st.inputs, d.st.accepted, d.st.fast_path, d.st.rejected, distinct);
    cr_assert_eq(d.st.inputs, 10000);
    cr_assert_gt(d.st.accepted, 500, "mutations keep some readings valid");
    cr_assert_gt(d.st.rejected, 5000);
    cr_assert_geq(distinct, 15, "the mutations reach many reject reasons");
    ing__fj_free(d.fj);
}

/* 10^4 random values in every print form (%.Ng, %.Ne, N = 1..17; integers) decode to the
 * same double, bit for bit, and all take the fast path. */
Test(decode_diff, random_numbers_bit_exact)
{
    struct dd d;
    struct core_prng rng;
    char buf[512], num[64];

    dd_open(&d);
    core_prng_seed(&rng, 1414);
    for (int i = 0; i < 10000; i++) {
        double x = core_prng_uniform(&rng) * pow(10, (double)core_prng_below(&rng, 6)) *
                   (core_prng_below(&rng, 2) ? 1e-5 : 1);
        int prec = 1 + (int)core_prng_below(&rng, 17);
        switch (core_prng_below(&rng, 3)) {
        case 0:
            snprintf(num, sizeof(num), "%.*g", prec, x);
            break;
        case 1:
            snprintf(num, sizeof(num), "%.*e", prec, x);
            break;
        default:
            snprintf(num, sizeof(num), "%lld", (long long)x);
            break;
        }
        snprintf(buf, sizeof(buf), HEAD "\"readings\":{\"light\":%s,\"temperature\":-%s}}", num,
                 x < 40 ? num : "0");
        dd_expect(&d, num, buf, strlen(buf), "m1");
    }
    cr_assert_eq(d.st.accepted, 10000);
    cr_assert_eq(d.st.fast_path, 10000);
    ing__fj_free(d.fj);
}

/* End to end through two engines, ingest.decoder=simdjson and =jansson: the same stream
 * (clean readings of 17 devices, every simulator fault kind, 2,000 mutations) gives the same
 * window records and the same dead letters, byte for byte / value for value. */
Test(decode_diff, engines_with_either_decoder_emit_the_same_records)
{
    static const char *const names[4] = {"temperature", "humidity", "light", "voltage"};
    struct ing_params pf, pr;
    struct ing_engine *ef, *er;
    struct coll cf, cr;
    struct ing_sink sf = coll_sink(&cf), sr = coll_sink(&cr);
    struct core_prng rng;
    size_t cap = 70000, len;
    char *buf = malloc(cap), dev[32];
    long long off = 0;

    ing_params_default(&pf);
    pf.key_policy = ING_KEY_MATCH;
    pr = pf;
    pf.decoder = ING_DECODER_SIMDJSON;
    pr.decoder = ING_DECODER_JANSSON;
    ef = mk_engine(&pf);
    er = mk_engine(&pr);
    core_prng_seed(&rng, 99);
    for (int i = 0; i < 6000; i++) {
        int k = (int)core_prng_below(&rng, SIM_FAULT_COUNT + 4); /* >= COUNT: clean */
        double vals[4] = {15 + 10 * core_prng_uniform(&rng), 100 * core_prng_uniform(&rng),
                          floor(2000 * core_prng_uniform(&rng)), 2 + core_prng_uniform(&rng)};
        struct sim_reading r = {dev, 1793491200000LL + 60000LL * (i / 17), (uint64_t)i, names, vals,
                                4};
        snprintf(dev, sizeof(dev), "mote-%d", i % 17);
        cr_assert_eq(sim_encode_reading(&r,
                                        k < SIM_FAULT_COUNT ? (enum sim_fault)k : SIM_FAULT_COUNT,
                                        &rng, pf.max_message_bytes, buf, cap, &len),
                     CORE_OK);
        if (i % 3 == 0)
            dd_mutate(&rng, buf, &len, cap);
        push_raw(ef, &sf, buf, len, dev, 0, off, 1000);
        push_raw(er, &sr, buf, len, dev, 0, off++, 1000);
    }
    ing_engine_flush(ef, &sf);
    ing_engine_flush(er, &sr);
    cr_assert_gt(json_array_size(cr.raw_windows), 100);
    cr_assert_gt(json_array_size(cr.rejects), 1000);
    cr_assert(json_equal(cf.raw_windows, cr.raw_windows), "window records differ");
    cr_assert(json_equal(cf.rejects, cr.rejects), "dead letters differ");
    coll_free(&cf);
    coll_free(&cr);
    ing_engine_free(ef);
    ing_engine_free(er);
    free(buf);
}
