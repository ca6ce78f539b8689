/* cmd_healthcheck.c - `gcdp healthcheck`: probe a running service's /healthz (the container
 * image's HEALTHCHECK; no curl in the image). Plain HTTP/1.0 over loopback TCP. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "core/metrics.h"
#include "flags.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gcdp healthcheck [--port N] [--host A] [--timeout S] [common options]\n\n"
            "GET /healthz from a running gcdp service on this host and exit 0 when it answers\n"
            "200, 1 otherwise (503 with its reason, refused, timed out). The container\n"
            "image's HEALTHCHECK: it reads the same configuration as the service (GCDP_*\n"
            "environment), so the port is the service's metrics.port.\n\n"
            "options:\n"
            "  --port N     port to probe (default: metrics.port; 0 there is an error)\n"
            "  --host A     IPv4 address (default: metrics.bind, 127.0.0.1 when it is 0.0.0.0)\n"
            "  --timeout S  seconds for connect + answer, 0.1..60 (default 3)\n"
            "  --help       this text\n\n"
            "exit status: 0 healthy, 1 unhealthy or unreachable, 2 usage/config.\n\n%s",
            app_common_help);
}

static int parse_opts(int argc, char **argv, long *port, const char **host, double *timeout)
{
    static const struct option lo[] = {{"port", required_argument, NULL, 'p'},
                                       {"host", required_argument, NULL, 'H'},
                                       {"timeout", required_argument, NULL, 't'},
                                       {NULL, 0, NULL, 0}};
    int ch;

    optind = 1;
    while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        if (ch == 'p' && app_flag_parse_long(optarg, 1, 65535, port) == 0)
            continue;
        if (ch == 'H') {
            *host = optarg;
            continue;
        }
        if (ch == 't' && app_flag_parse_double(optarg, 0.1, 60, timeout) == 0)
            continue;
        fprintf(stderr, "gcdp healthcheck: bad option (see gcdp healthcheck --help)\n");
        return -1;
    }
    if (optind < argc) {
        fprintf(stderr, "gcdp healthcheck: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    return 0;
}

static int cmd_main(struct app_call *call)
{
    const struct core_config *cfg = call->cfg;
    const char *host = NULL;
    char addr[64], reason[256];
    double timeout = 3;
    long port = 0;
    int code, rc;

    if (parse_opts(call->argc, call->argv, &port, &host, &timeout) != 0)
        return APP_EXIT_USAGE;
    if (!port && !(port = (long)core_config_int(cfg, "metrics.port"))) {
        fprintf(stderr, "gcdp healthcheck: metrics.port is 0 (no /healthz served); give "
                        "--port or set metrics.port\n");
        return APP_EXIT_USAGE;
    }
    if (!host)
        host = core_config_str(cfg, "metrics.bind");
    snprintf(addr, sizeof(addr), "%s", strcmp(host, "0.0.0.0") == 0 ? "127.0.0.1" : host);
    rc = APP_EXIT_FAILURE;
    if (core_metrics_probe_health(addr, (int)port, timeout, &code, reason, sizeof(reason)) !=
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
