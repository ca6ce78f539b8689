/* calibrate_serve.c - `gcdp calibrate --serve`: the calibrate service as a process
 * (cal/service.h). SIGINT/SIGTERM: graceful shutdown. One-line JSON summary at exit. */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "cal/service.h"
#include "core/log.h"
#include "core/metrics.h"

static void print_summary(const void *svc, core_err status)
{
    struct cal_service_stats st;

    cal_service_stats(svc, &st);
    printf("{\"status\":\"%s\",\"theta_version\":%llu,\"made\":%llu,\"published\":%llu,"
           "\"by_reason\":{", core_errname(status), (unsigned long long)st.version,
           (unsigned long long)st.made, (unsigned long long)st.published);
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
    "calibrate", "waiting for the last theta version to be acknowledged", stop_svc,
    print_summary, free_svc};

int calibrate_serve(struct core_config *cfg, const char *input, double exit_after_s)
{
    struct core_metrics *metrics = NULL;
    struct cal_service *svc = NULL;
    struct cal_service_opts so;
    struct app_serve srv;
    char eb[1024] = "";
    core_err err;
    int rc = APP_EXIT_FAILURE;

    if (app_require_bootstrap(cfg, "calibrate") != 0)
        return APP_EXIT_USAGE;
    if (app_metrics_start(cfg, "calibrate", &metrics) == 0) {
        app_serve_init(&srv, cfg, &calibrate_ops);
        cal_service_opts_init(cfg, input, &so);
        so.exit_after_ms = (int64_t)(exit_after_s * 1000);
        so.on_done = app_serve_on_done;
        so.arg = &srv;
        err = cal_service_new(&srv.loop, cfg, &so, metrics, &svc, eb, sizeof(eb));
        rc = app_serve_run(&srv, svc, err, eb);
    }
    core_metrics_free(metrics);
    return rc;
}
