/* cmd_bench.c - `gcdp bench <what>`: benchmarks that print figures and ratios against a
 * baseline measured in the same run (machines are shared and noisy: compare ratios). */
#include <stdio.h>
#include <string.h>

#include "app.h"

static const struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} benches[] = {
    {"ingest", bench_ingest, "ingest readings/s vs a bare consumer on the embedded broker"},
    {"calibrate", bench_calibrate, "Algorithm 1 GFLOP/s vs dgemm and the direct reference"},
    {"release", bench_release, "released coordinates/s with secure noise and the ledger"},
    {"ledger", bench_ledger, "the ledger over a simulated day: JSONL (baseline) vs store"},
    {"learner", bench_learner, "Fed-Sparse-BNSL vs Fed-BNSL (paper Table 1) and sweeps"},
    {NULL, NULL, NULL},
};

int cmd_bench(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        (argv[1][0] == '-' && app_help_requested(argc, argv))) {
        FILE *f = argc < 2 ? stderr : stdout;
        fprintf(f, "usage: gcdp bench <what> [options]   (gcdp bench <what> --help)\n");
        for (int i = 0; benches[i].name; i++)
            fprintf(f, "  %-10s %s\n", benches[i].name, benches[i].summary);
        return argc < 2 ? APP_EXIT_USAGE : APP_EXIT_OK;
    }
    for (int i = 0; benches[i].name; i++)
        if (strcmp(argv[1], benches[i].name) == 0)
            return benches[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "gcdp bench: unknown benchmark '%s'\n", argv[1]);
    return APP_EXIT_USAGE;
}
