/* cmd_healthcheck.c - `gcdp healthcheck`: probe a running service's /healthz (the container
 * image's HEALTHCHECK; no curl in the image). Plain HTTP/1.0 over loopback TCP. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "core/metrics.h"
#include "flags.h"

struct health_args {
    long port; /* 0: metrics.port */
    const char *host;
    double timeout;
};

#define AT(f) APP_FLAG_AT(struct health_args, f)

static const struct app_flag health_flags[] = {
    {"port", APP_FLAG_INT, AT(port), .lo = 1, .hi = 65535, .metavar = "N",
     .help = "port to probe (default: metrics.port; 0 there is an error)"},
    {"host", APP_FLAG_STR, AT(host), .metavar = "A",
     .help = "IPv4 address (default: metrics.bind, 127.0.0.1 when it is 0.0.0.0)"},
    {"timeout", APP_FLAG_DBL, AT(timeout), .lo = 0.1, .hi = 60, .metavar = "S",
     .help = "seconds for connect + answer, 0.1..60 (default 3)"},
    {.name = NULL},
};

#undef AT

static void usage(FILE *f)
{
    fprintf(f, "usage: gcdp healthcheck [--port N] [--host A] [--timeout S] [common options]\n\n"
               "GET /healthz from a running gcdp service on this host and exit 0 when it answers\n"
               "200, 1 otherwise (503 with its reason, refused, timed out). The container\n"
               "image's HEALTHCHECK: it reads the same configuration as the service (GCDP_*\n"
               "environment), so the port is the service's metrics.port.\n\n"
               "options:\n");
    app_flags_help(f, health_flags, 13, 0);
    fprintf(f,
            "  --help       this text\n\n"
            "exit status: 0 healthy, 1 unhealthy or unreachable, 2 usage/config.\n\n%s",
            app_common_help);
}

static int cmd_main(struct app_call *call)
{
    const struct core_config *cfg = call->cfg;
    struct health_args a = {0, NULL, 3};
    const char *host;
    char addr[64], reason[256];
    long port;
    int code, rc;

    if (app_flags_parse_only("healthcheck", health_flags, call->argc, call->argv, &a, NULL) != 0)
        return APP_EXIT_USAGE;
    port = a.port;
    host = a.host;
    if (!port && !(port = (long)core_config_int(cfg, "metrics.port"))) {
        fprintf(stderr, "gcdp healthcheck: metrics.port is 0 (no /healthz served); give "
                        "--port or set metrics.port\n");
        return APP_EXIT_USAGE;
    }
    if (!host)
        host = core_config_str(cfg, "metrics.bind");
    snprintf(addr, sizeof(addr), "%s", strcmp(host, "0.0.0.0") == 0 ? "127.0.0.1" : host);
    rc = APP_EXIT_FAILURE;
    if (core_metrics_probe_health(addr, (int)port, a.timeout, &code, reason, sizeof(reason)) !=
        CORE_OK)
        fprintf(stderr, "gcdp healthcheck: %s:%ld: %s\n", addr, port, strerror(errno));
    else if (code != 200)
        fprintf(stderr, "gcdp healthcheck: %s:%ld/healthz: %d %s\n", addr, port, code,
                code ? reason : "(no HTTP answer)");
    else
        rc = APP_EXIT_OK;
    if (code == 200)
        printf("gcdp healthcheck: %s:%ld/healthz: 200 %s\n", addr, port, reason);
    return rc;
}

const struct app_command app_cmd_healthcheck = {
    .name = "healthcheck",
    .summary = "probe a running service's /healthz (the container image's HEALTHCHECK)",
    .help = usage,
    .run = cmd_main,
};
