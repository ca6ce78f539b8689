/* bench_engine.c - throughput of the pure ingest engine vs a parse-only baseline.
 * Built on demand by CMake (not by default):
 *   cmake --build build/<dir> --target bench_engine
 *   build/<dir>/tests/bench_engine [readings=1000000] [devices=10000]
 * Prints readings/s for
 *   (a) json_loadb + json_decref of the same payloads with jansson's default malloc/free,
 *       measured BEFORE any engine exists (so before the engine's allocation hooks are
 *       installed): the baseline, the plain jansson parse;
 *   (b) the same parse through the engine's per-engine arena (core/jalloc.h);
 *   (c) ing_engine_push end to end (decode, validate, buffer, window, encode records);
 *   (d) the same on a fresh engine with ing_engine_prefetch called 4 readings ahead of each
 *       push, as the ingest service does (CORE_KAFKA_LOOKAHEAD); (c) and (d) are run 5 times
 *       each, alternating, and each figure is the median of its runs;
 * the ratios b/a, c/a and d/c, and peak RSS. Rates are per CPU-second of this process
 * (CLOCK_PROCESS_CPUTIME_ID), so other load on the shared machine matters less. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <jansson.h>

#include "alg/window.h" /* ING_JALLOC_BYTES */
#include "core/jalloc.h"
#include "ing/engine.h"

#define FLAGS (JSON_DECODE_ANY | JSON_REJECT_DUPLICATES)

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); /* CPU time: the machine is shared */
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static size_t windows;
static void on_window(void *arg, const char *k, size_t kl, const char *j, size_t l,
                      const struct ing_window_info *i)
{
    (void)arg, (void)k, (void)kl, (void)j, (void)l, (void)i;
    windows++;
}

/* Push readings [0, n) (reading r of device r % devs) into a fresh engine; with lookahead
 * > 0, ing_engine_prefetch runs that many readings ahead. Returns CPU seconds. */
static double run_engine(const struct ing_params *p, long n, long devs, const char *text,
                         const size_t *off, const size_t *len, char (*key)[24], long lookahead,
                         long *rejected)
{
    struct ing_engine *e = ing_engine_new(p, NULL, 0);
    struct ing_sink sink = {on_window, NULL, NULL};
    struct ing_source src = {"sensors.raw", 0, 0};
    double t0, t;

    if (!e)
        exit(1);
    t0 = now_s();
    for (long r = 0; r < n; r++) {
        enum ing_reason why;
        long d = r % devs;
        if (lookahead > 0 && r + lookahead < n)
            ing_engine_prefetch(e, text + off[r + lookahead], len[r + lookahead],
                                key[(r + lookahead) % devs], strlen(key[(r + lookahead) % devs]));
        src.offset = r;
        if (ing_engine_push(e, text + off[r], len[r], key[d], strlen(key[d]), &src, 0, &sink,
                            &why) != CORE_OK ||
            why != ING_R_NONE)
            (*rejected)++;
    }
    t = now_s() - t0;
    ing_engine_flush(e, &sink);
    ing_engine_free(e);
    return t;
}

#define PAIRS 5

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static long max_rss_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 1000000;
    long devs = argc > 2 ? strtol(argv[2], NULL, 10) : 10000;
    char *text, (*key)[24];
    size_t *off, *len, used = 0;
    struct ing_params p;
    struct ing_engine *e;
    struct core_jalloc *ja;
    struct ing_sink sink = {on_window, NULL, NULL};
    struct ing_source src = {"sensors.raw", 0, 0};
    struct ing_counters c;
    double t0, ta, tb, tc, tcm, td, tcs[PAIRS], tds[PAIRS];
    long rejected = 0, bad_parse = 0, rss0, rss1;

    if (n < 1 || devs < 1)
        return 2;
    /* Pre-generate every payload (simulator-like: 4 channels, 1 reading/s per device) so
     * the loops measure only parsing / the engine. */
    text = malloc((size_t)n * 200);
    key = malloc((size_t)devs * sizeof(*key));
    off = malloc((size_t)n * sizeof(*off));
    len = malloc((size_t)n * sizeof(*len));
    if (!text || !key || !off || !len)
        return 1;
    for (long d = 0; d < devs; d++)
        snprintf(key[d], sizeof(*key), "mote-%ld", d);
    for (long r = 0; r < n; r++) {
        long d = r % devs, step = r / devs;
        int l = snprintf(text + used, 200,
                         "{\"schema\":\"gcdp.reading/1\",\"device\":\"%s\",\"ts\":%lld,"
                         "\"readings\":{\"temperature\":%.3f,\"humidity\":%.3f,\"light\":%.1f,"
                         "\"voltage\":%.4f},\"seq\":%ld}",
                         key[d], 1700000000000LL + step * 1000LL, 20 + (double)(r % 97) * 0.05,
                         40 + (double)(r % 89) * 0.1, 300 + (double)(r % 83), 2.7, step);
        off[r] = used;
        len[r] = (size_t)l;
        used += (size_t)l;
    }

    /* (a) before any engine: jansson with its default allocator. */
    t0 = now_s();
    for (long r = 0; r < n; r++) {
        json_t *v = json_loadb(text + off[r], len[r], FLAGS, NULL);
        bad_parse += v == NULL;
        json_decref(v);
    }
    ta = now_s() - t0;

    ing_params_default(&p);
    p.period_ms = 1000;
    p.window_ms = p.hop_ms = 10000;
    p.lateness_ms = 2000;
    p.max_devices = (size_t)devs;
    e = ing_engine_new(&p, NULL, 0); /* installs the hooks */
    ja = core_jalloc_new(ING_JALLOC_BYTES);
    if (!e || !ja)
        return 1;

    /* (b) the same parse through an arena. */
    t0 = now_s();
    for (long r = 0; r < n; r++) {
        json_t *v = core_jalloc_parse(ja, text + off[r], len[r], FLAGS, NULL);
        bad_parse += v == NULL;
        core_jalloc_release(ja, v);
    }
    tb = now_s() - t0;
    {
        struct core_jalloc_stats st;
        core_jalloc_stats(ja, &st);
        printf("arena per message: %zu bytes, %zu blocks, %zu fallbacks, hooks %s\n", st.used,
               st.blocks, st.fallbacks, st.hooks_active ? "active" : "INACTIVE");
    }

    /* (c) the engine. */
    rss0 = max_rss_kib();
    t0 = now_s();
    for (long r = 0; r < n; r++) {
        enum ing_reason why;
        long d = r % devs;
        src.offset = r;
        if (ing_engine_push(e, text + off[r], len[r], key[d], strlen(key[d]), &src, 0, &sink,
                            &why) != CORE_OK ||
            why != ING_R_NONE)
            rejected++;
    }
    tc = now_s() - t0;
    ing_engine_counters(e, &c);
    rss1 = max_rss_kib();
    for (int k = 0; k < PAIRS; k++) { /* alternating: the machine's load drifts */
        tcs[k] = run_engine(&p, n, devs, text, off, len, key, 0, &rejected);
        tds[k] = run_engine(&p, n, devs, text, off, len, key, 4, &rejected);
    }
    qsort(tcs, PAIRS, sizeof(double), cmp_double);
    qsort(tds, PAIRS, sizeof(double), cmp_double);
    tcm = tcs[PAIRS / 2];
    td = tds[PAIRS / 2];
    printf("readings %ld, devices %ld, payload bytes %zu\n", n, devs, used);
    printf("(a) baseline json_loadb+decref : %.0f readings/s (%.3f s)\n", (double)n / ta, ta);
    printf("(b) arena json_loadb+release   : %.0f readings/s (%.3f s)\n", (double)n / tb, tb);
    printf("(c) ing_engine_push            : %.0f readings/s (%.3f s); windows %zu, rejected %ld\n",
           (double)n / tc, tc, windows, rejected);
    printf("(d) push, prefetch 4 ahead     : %.0f readings/s (%.3f s); (c) again: %.0f "
           "readings/s (%.3f s); medians of %d alternating runs each, CPU s per run: (c)",
           (double)n / td, td, (double)n / tcm, tcm, PAIRS);
    for (int k = 0; k < PAIRS; k++)
        printf(" %.3f", tcs[k]);
    printf(", (d)");
    for (int k = 0; k < PAIRS; k++)
        printf(" %.3f", tds[k]);
    printf("\n");
    printf("ratio prefetch/plain  (d/c)    : %.2f\n", tcm / td);
    printf("ratio arena/baseline  (b/a)    : %.2f\n", ta / tb);
    printf("ratio engine/baseline (c/a)    : %.2f\n", ta / tc);
    printf("peak RSS before engine loop %ld MiB, after %ld MiB (engine state +%ld MiB); "
           "open devices %llu, buffered readings %llu\n",
           rss0 / 1024, rss1 / 1024, (rss1 - rss0) / 1024, (unsigned long long)c.open_devices,
           (unsigned long long)c.buffered);
    ing_engine_flush(e, &sink);
    ing_engine_free(e);
    core_jalloc_free(ja);
    free(text);
    free(key);
    free(off);
    free(len);
    return rejected != 0 || bad_parse != 0;
}
