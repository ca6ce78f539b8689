/* cmd_release.c - placeholder until the subcommand lands; says so instead of pretending. */
#include <stdio.h>

#include "app.h"

int cmd_release(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "gcdp %s: not built yet\n", argv[0]);
    return APP_EXIT_FAILURE;
}
