/* calibrate_serve.c - `gcdp calibrate --serve`: the calibrate service as a process
 * (cal/service.h). SIGINT/SIGTERM: graceful shutdown. One-line JSON summary at exit. */
#include "cal/calibrate.h"

#include <stdio.h>
#include <string.h>

#include "app.h"
#include "cal/service.h"
#include "core/dp_ledger.h"
#include "core/metrics.h"

static void print_summary(const void *svc, core_err status)
{
    cal_service_summary_print(stdout, svc, status);
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

int calibrate_serve(struct core_config *cfg, const char *input, double exit_after_s)
{
    struct core_metrics *metrics = NULL;
    struct core_dp_ledger *led = NULL;
    struct cal_service *svc = NULL;
    struct cal_service_opts so;
    struct cal_opts co;
    struct app_serve srv;
    char eb[8192] = "", path[4096]; /* messages name the ledger path */
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
        (rc = app_exit_status(
             "calibrate",
             cal_service_ledger_open(cfg, &so, path, sizeof(path), &led, eb, sizeof(eb)), eb)) !=
            APP_EXIT_OK)
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
