/* fuzz_decode_diff.c - the seeded mutation fuzzer of the differential decoder test at scale:
 * N mutated inputs (default 10^6) from the well-formed seeds of tests/ingest/decode_diff.h
 * and the lines of the bad-input corpus, each decoded by the fast decoder and by the jansson
 * reference; the first disagreement is printed (payload in hex) and the exit status is 1.
 *   cmake --build --preset release --target fuzz_decode_diff
 *   build/release/tests/fuzz_decode_diff [N] [seed]
 * Same inputs for the same N and seed. The unit suite runs 10^4 of the same kind. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decode_diff.h"

#define MAX_SEEDS 128

/* The "payload" strings of the corpus file, unescaped by jansson. */
static size_t load_corpus(const char *path, char **seeds, size_t *lens, size_t n)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;

    if (!f)
        return n;
    while (n < MAX_SEEDS && (got = getline(&line, &cap, f)) > 0) {
        json_error_t err;
        json_t *o = json_loadb(line, (size_t)got, 0, &err);
        const json_t *pl = json_object_get(o, "payload");
        if (json_is_string(pl) && json_string_length(pl) < 2048) {
            lens[n] = json_string_length(pl);
            seeds[n] = malloc(lens[n] + 1);
            memcpy(seeds[n], json_string_value(pl), lens[n] + 1);
            n++;
        }
        json_decref(o);
    }
    free(line);
    fclose(f);
    return n;
}

int main(int argc, char **argv)
{
    unsigned long long total = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000ULL;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
    struct ing_params p;
    struct ing__fj *fj;
    struct dd_stats st;
    struct core_prng rng;
    char *seeds[MAX_SEEDS], buf[4096], why[512];
    size_t lens[MAX_SEEDS], n_seeds = 0, distinct = 0;
    struct timespec t0, t1;

    for (size_t i = 0; i < sizeof(dd_seeds) / sizeof(*dd_seeds); i++) {
        lens[n_seeds] = strlen(dd_seeds[i]);
        seeds[n_seeds++] = strdup(dd_seeds[i]);
    }
    n_seeds = load_corpus(GCDP_SOURCE_DIR "/tests/fixtures/bad_inputs/corpus.jsonl", seeds, lens,
                          n_seeds);
    memset(&st, 0, sizeof(st));
    ing_params_default(&p);
    fj = ing__fj_new(p.max_message_bytes);
    if (!fj)
        return 2;
    core_prng_seed(&rng, seed);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned long long i = 0; i < total; i++) {
        /* 3 in 4 from the well-formed seeds: those reach the value paths */
        size_t s = core_prng_below(&rng, 4)
                       ? (size_t)core_prng_below(&rng, sizeof(dd_seeds) / sizeof(*dd_seeds))
                       : (size_t)core_prng_below(&rng, n_seeds);
        size_t len = lens[s] < sizeof(buf) ? lens[s] : sizeof(buf);
        size_t muts = 1 + (size_t)core_prng_below(&rng, 4);
        uint64_t km = core_prng_below(&rng, 8);
        bool digits_only = core_prng_below(&rng, 2) == 0;
        memcpy(buf, seeds[s], len);
        for (size_t m = 0; m < muts; m++)
            if (digits_only)
                dd_mutate_digit(&rng, buf, &len, sizeof(buf));
            else
                dd_mutate(&rng, buf, &len, sizeof(buf));
        p.key_policy = km == 0 ? ING_KEY_IGNORE : km == 1 ? ING_KEY_MATCH : ING_KEY_REQUIRE;
        if (!dd_check(&p, fj, buf, len, km == 2 ? NULL : "m1", km == 2 ? 0 : 2, 1000, &st, why,
                      sizeof(why))) {
            printf("DISAGREEMENT at input %llu (seed %llu): %s\npayload hex:", i,
                   (unsigned long long)seed, why);
            for (size_t k = 0; k < len; k++)
                printf("%02x", (unsigned char)buf[k]);
            printf("\npayload: %.*s\n", (int)len, buf);
            return 1;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    for (int r = 0; r < ING_REASON_COUNT; r++)
        distinct += st.by_reason[r] > 0;
    printf("fuzz_decode_diff: %llu inputs (seed %llu, %zu seeds, simdjson stage 1 kernel %s), "
           "all agree: %llu accepted (%llu by the scanner), %llu rejected, %zu distinct "
           "reasons, %.1f s\n",
           st.inputs, (unsigned long long)seed, n_seeds, ing__fj_implementation(), st.accepted,
           st.fast_path, st.rejected, distinct,
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
    for (int r = 0; r < ING_REASON_COUNT; r++)
        if (st.by_reason[r])
            printf("  %-20s %llu\n", ing_reason_code((enum ing_reason)r), st.by_reason[r]);
    for (size_t i = 0; i < n_seeds; i++)
        free(seeds[i]);
    ing__fj_free(fj);
    return 0;
}
