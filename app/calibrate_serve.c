/* calibrate_serve.c - `gcdp calibrate --serve`: the calibrate service as a process
 * (cal/service.h). SIGINT/SIGTERM: graceful shutdown. One-line JSON summary at exit. */
#include "cal/calibrate.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "cal/ledger.h"
#include "cal/service.h"
#include "core/dp_ledger.h"
#include "core/dp_ledger_cfg.h"
#include "core/dp_rng.h"
#include "core/fsutil.h"
#include "core/log.h"
#include "core/metrics.h"

static void print_summary(const void *svc, core_err status)
{
    struct cal_service_stats st;

    cal_service_stats(svc, &st);
    printf("{\"status\":\"%s\",\"theta_version\":%llu,\"made\":%llu,\"published\":%llu,"
           "\"by_reason\":{",
           core_errname(status), (unsigned long long)st.version, (unsigned long long)st.made,
           (unsigned long long)st.published);
    for (int i = 0; i < CAL_N_REASONS; i++)
        printf("%s\"%s\":%llu", i ? "," : "", cal_reason_name(i),
               (unsigned long long)st.by_reason[i]);
    printf("},\"rate_limited\":%llu,\"failures\":%llu}\n", (unsigned long long)st.rate_limited,
           (unsigned long long)st.failures);
    fflush(stdout);
}

static void stop_svc(void *svc)
{
    cal_service_stop(svc);
}

static void free_svc(void *svc)
{
    cal_service_free(svc);
}

static const struct app_service_ops calibrate_ops = {
    "calibrate", "waiting for the last theta version to be acknowledged", stop_svc, print_summary,
    free_svc};

/* calibrate.ledger.path (relative: under state.dir, created) into buf; 0 or -1 (printed). */
static int cal_ledger_path(const struct core_config *cfg, char *buf, size_t n)
{
    const char *p = core_config_str(cfg, "calibrate.ledger.path");
    const char *dir = core_config_str(cfg, "state.dir");

    if (!p || !p[0]) {
        fprintf(stderr, "gcdp calibrate: calibrate.ledger.path: empty\n");
        return -1;
    }
    if (p[0] == '/')
        return (size_t)snprintf(buf, n, "%s", p) < n ? 0 : -1;
    if (!dir || !dir[0] || core_mkdir_p(dir, 0) != 0) {
        fprintf(stderr, "gcdp calibrate: state.dir '%s': cannot create: %s\n", dir ? dir : "",
                strerror(errno));
        return -1;
    }
    return (size_t)snprintf(buf, n, "%s/%s", dir, p) < n ? 0 : -1;
}

/* Private mode: the service's own ledger (JSONL), with release's scheme and caps. */
static int private_opts(const struct core_config *cfg, struct cal_service_opts *so, char *path,
                        size_t n, struct core_dp_ledger **led)
{
    struct core_dp_ledger_opts lop = {NULL, {0, 0, 0}, 0, {0, 0, 0}};
    char eb[1024] = "";
    core_err rc;

    if (cal_ledger_path(cfg, path, n) != 0)
        return APP_EXIT_USAGE;
    core_dp_scheme_from_config(cfg, &lop.scheme);
    lop.path = path;
    core_dp_cap_from_config(cfg, &lop.cap);
    rc = core_dp_ledger_open(&lop, led, eb, sizeof(eb));
    if (rc != CORE_OK) {
        fprintf(stderr, "gcdp calibrate: ledger '%s': %s (%s)\n", path, eb[0] ? eb : "cannot open",
                core_errname(rc));
        return APP_EXIT_FAILURE;
    }
    so->ledger = *led;
    so->ledger_path = path;
    so->scheme = lop.scheme;
    so->cap = lop.cap;
    so->rng = core_rng_os();
    return APP_EXIT_OK;
}

int calibrate_serve(struct core_config *cfg, const char *input, double exit_after_s)
{
    struct core_metrics *metrics = NULL;
    struct core_dp_ledger *led = NULL;
    struct cal_service *svc = NULL;
    struct cal_service_opts so;
    struct cal_opts co;
    struct app_serve srv;
    char eb[1024] = "", path[4096];
    const char *mode = core_config_str(cfg, "calibrate.mode");
    core_err err;
    int rc = APP_EXIT_FAILURE;

    if (app_require_bootstrap(cfg, "calibrate") != 0)
        return APP_EXIT_USAGE;
    if (cal_service_opts_from_config(cfg, &co, eb, sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp calibrate: %s\n", eb); /* before any ledger is opened */
        return APP_EXIT_USAGE;
    }
    cal_service_opts_init(cfg, input, &so);
    if (mode && strcmp(mode, "private") == 0 &&
        (rc = private_opts(cfg, &so, path, sizeof(path), &led)) != APP_EXIT_OK)
        return rc;
    rc = APP_EXIT_FAILURE;
    if (app_metrics_start(cfg, "calibrate", &metrics) == 0) {
        app_serve_init(&srv, cfg, &calibrate_ops);
        so.exit_after_ms = (int64_t)(exit_after_s * 1000);
        so.on_done = app_serve_on_done;
        so.arg = &srv;
        err = cal_service_new(&srv.loop, cfg, &so, metrics, &svc, eb, sizeof(eb));
        rc = app_serve_run(&srv, svc, err, eb);
    }
    core_metrics_free(metrics);
    core_dp_ledger_free(led);
    return rc;
}
