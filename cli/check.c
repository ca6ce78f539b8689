/* check.c - `--check` of the service commands (common.h, app_service_check): the checks are the
 * pipeline library's (pipe/check.h); here the broker requirement and the verdict's words. */
#include <stdio.h>

#include "cli.h"
#include "common.h"

int app_service_check(struct core_config *cfg, const struct pipe_check_opts *o)
{
    char eb[1024] = "";
    core_err rc;

    if (app_require_bootstrap(cfg, o->cmd) != 0)
        return APP_EXIT_USAGE;
    rc = pipe_service_check(cfg, o, eb, sizeof(eb));
    if (rc != CORE_OK) {
        fprintf(stderr, "gcdp %s: configuration error: %s\n", o->cmd,
                eb[0] ? eb : core_strerror(rc));
        return APP_EXIT_USAGE;
    }
    printf("gcdp %s: configuration ok\n", o->cmd);
    fflush(stdout);
    return APP_EXIT_OK;
}
