/* calibrate_serve.c - `gcdp calibrate --serve`: the calibrate service as a process
 * (cal/service.h). SIGINT/SIGTERM: graceful shutdown. One-line JSON summary at exit. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <uv.h>

#include "app.h"
#include "cal/service.h"
#include "core/log.h"
#include "core/metrics.h"

struct serve_ctx {
    uv_loop_t loop;
    const struct core_config *cfg;
    struct cal_service *svc;
    uv_signal_t sigint, sigterm;
    core_err status;
};

static void on_done(void *arg, core_err status)
{
    struct serve_ctx *c = arg;
    c->status = status;
    uv_close((uv_handle_t *)&c->sigint, NULL);
    uv_close((uv_handle_t *)&c->sigterm, NULL);
}

static void on_signal(uv_signal_t *h, int sig)
{
    struct serve_ctx *c = h->data;
    CORE_INFO("signal %d: graceful shutdown", sig);
    app_shutdown_begin(c->cfg, "calibrate",
                       "waiting for the last theta version to be acknowledged", &c->sigint,
                       &c->sigterm);
    if (c->svc)
        cal_service_stop(c->svc);
}

static void print_summary(const struct cal_service *svc, core_err status)
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

int calibrate_serve(struct core_config *cfg, const char *input, double exit_after_s)
{
    struct core_metrics *metrics = NULL;
    struct serve_ctx c;
    struct cal_service_opts so;
    char eb[1024] = "";
    core_err err;
    int rc;

    memset(&c, 0, sizeof(c));
    if (app_require_bootstrap(cfg, "calibrate") != 0)
        return APP_EXIT_USAGE;
    if (app_metrics_start(cfg, "calibrate", &metrics) != 0) {
        core_metrics_free(metrics);
        return APP_EXIT_FAILURE;
    }
    uv_loop_init(&c.loop);
    c.cfg = cfg;
    memset(&so, 0, sizeof(so));
    so.input = input;
    so.min_interval_ms = core_config_int(cfg, "calibrate.service.min_interval_s") * 1000;
    so.refresh_ms = core_config_int(cfg, "calibrate.service.refresh_s") * 1000;
    so.exit_after_ms = (int64_t)(exit_after_s * 1000);
    so.on_done = on_done;
    so.arg = &c;
    err = cal_service_new(&c.loop, cfg, &so, metrics, &c.svc, eb, sizeof(eb));
    if (err != CORE_OK) {
        fprintf(stderr, "gcdp calibrate: %s\n", eb);
        uv_run(&c.loop, UV_RUN_DEFAULT);
        uv_loop_close(&c.loop);
        core_metrics_free(metrics);
        return err == CORE_ECONFIG ? APP_EXIT_USAGE : APP_EXIT_FAILURE;
    }
    uv_signal_init(&c.loop, &c.sigint);
    uv_signal_init(&c.loop, &c.sigterm);
    c.sigint.data = c.sigterm.data = &c;
    uv_signal_start(&c.sigint, on_signal, SIGINT);
    uv_signal_start(&c.sigterm, on_signal, SIGTERM);
    uv_run(&c.loop, UV_RUN_DEFAULT);
    print_summary(c.svc, c.status);
    cal_service_free(c.svc);
    uv_run(&c.loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&c.loop) != 0)
        CORE_WARN("event loop closed with handles still open");
    rc = c.status == CORE_OK ? APP_EXIT_OK : APP_EXIT_FAILURE;
    core_metrics_free(metrics);
    return rc;
}
