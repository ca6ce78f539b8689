/* engine_allocs.c - checks that ing_engine_push allocates nothing per reading once warm:
 * N bench-like readings of D devices (as `gcdp bench ingest` makes them) are pushed; the
 * malloc/calloc/realloc calls made process-wide (alloc_preload.c) during the pushes of the
 * second half are counted, for ingest.decoder=simdjson and =jansson. Exit 1 if any.
 *   cmake --build --preset release --target engine_allocs
 *   build/release/tests/engine_allocs [N] [D]        (default 2000000 10000) */
#include "ing/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern long alloc_count;
extern int alloc_count_on;

enum { CHUNK = 4096 };
static char key[CHUNK][32], val[CHUNK][320];
static int kl[CHUNK];

static void on_window(void *arg, const char *k, size_t klen, const char *j, size_t jl,
                      const struct ing_window_info *info)
{
    (void)k, (void)klen, (void)j, (void)jl, (void)info;
    (*(long *)arg)++;
}

static int run(long n, long d, enum ing_decoder dec)
{
    struct ing_params p;
    struct ing_engine *e;
    long windows = 0;
    struct ing_sink sink = {on_window, NULL, &windows};
    char eb[256];

    ing_params_default(&p);
    p.decoder = dec;
    if (!(e = ing_engine_new(&p, eb, sizeof(eb))))
        return 2;
    alloc_count = 0;
    for (long base = 0; base < n; base += CHUNK) {
        for (int j = 0; j < CHUNK; j++) {
            long i = base + j, dev = i % d, tick = i / d;
            kl[j] = snprintf(key[j], sizeof(key[j]), "mote-%ld", dev);
            snprintf(val[j], sizeof(val[j]),
                     "{\"schema\":\"gcdp.reading/1\",\"device\":\"%.31s\",\"ts\":%lld,\"seq\":%ld,"
                     "\"readings\":{\"temperature\":%.2f,\"humidity\":%.2f,\"light\":%.1f,"
                     "\"voltage\":%.3f}}",
                     key[j], 1793491200000LL + tick * 60000, tick,
                     18.0 + (double)((i * 7) % 100) * 0.1, 30.0 + (double)(dev % 40),
                     (double)((tick * 13) % 1500), 2.4 + (double)(dev % 50) * 0.01);
        }
        alloc_count_on = base >= n / 2;
        for (int j = 0; j < CHUNK; j++) {
            struct ing_source src = {"b", (int32_t)((base + j) % 8), (base + j) / 8};
            enum ing_reason r;
            if (ing_engine_push(e, val[j], strlen(val[j]), key[j], (size_t)kl[j], &src, 0, &sink,
                                &r) != CORE_OK ||
                r != ING_R_NONE)
                return 2;
        }
        alloc_count_on = 0;
    }
    printf("ingest.decoder=%s: %ld readings, %ld devices, %ld windows; allocations during the "
           "pushes of the second half: %ld\n",
           dec == ING_DECODER_SIMDJSON ? "simdjson" : "jansson", n, d, windows, alloc_count);
    ing_engine_free(e);
    return alloc_count != 0;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 2000000, d = argc > 2 ? atol(argv[2]) : 10000;
    int rc = run(n, d, ING_DECODER_SIMDJSON);
    int rc2 = run(n, d, ING_DECODER_JANSSON);
    return rc > rc2 ? rc : rc2;
}
