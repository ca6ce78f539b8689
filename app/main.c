/* main.c - gcdp: process-wide set-up, then the command driver (cli.h). */
#include <signal.h>

#include <gsl/gsl_errno.h>

#include "app.h"
#include "core/jalloc.h"

int main(int argc, char **argv)
{
    gsl_set_error_handler_off();
    core_jalloc_install(); /* jansson's allocation hooks, before any thread uses jansson */
    /* A file-size limit (or a full quota) must be an error the command reports (EFBIG), not
     * a silent death by SIGXFSZ between a write and its fsync. */
    signal(SIGXFSZ, SIG_IGN);
    return app_cli_main(app_commands, argc, argv);
}
