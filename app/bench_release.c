/* bench_release.c - placeholder until the benchmark lands; says so instead of pretending. */
#include <stdio.h>

#include "app.h"

int bench_release(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "gcdp bench %s: not built yet\n", argv[0]);
    return APP_EXIT_FAILURE;
}
