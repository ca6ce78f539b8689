/* cmd_healthcheck.c - `gcdp healthcheck`: probe a running service's /healthz (the container
 * image's HEALTHCHECK; no curl in the image). Plain HTTP/1.0 over loopback TCP. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "core/metrics.h"
#include "flags.h"
#include "help_texts.h"

struct health_args {
    long port; /* 0: metrics.port */
    const char *host;
    double timeout;
};

#define AT(f) APP_FLAG_AT(struct health_args, f)

static const struct app_flag health_flags[] = {
    {"port", APP_FLAG_INT, AT(port), .lo = 1, .hi = 65535},
    {"host", APP_FLAG_STR, AT(host)},
    {"timeout", APP_FLAG_DBL, AT(timeout), .lo = 0.1, .hi = 60},
    {.name = NULL},
};

#undef AT

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
    .help = app_help_healthcheck,
    .options = health_flags,
    .run = cmd_main,
};
