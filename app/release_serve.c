/* release_serve.c - `gcdp release --serve`: the release service as a process
 * (rel/service.h). SIGINT/SIGTERM: graceful shutdown (commit the pending group, wait for
 * acknowledgements, commit offsets, leave the group). A one-line JSON summary goes to
 * stdout at exit. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <uv.h>

#include "app.h"
#include "core/dp_ledger.h"
#include "core/log.h"
#include "core/metrics.h"
#include "rel/plan.h"
#include "rel/service.h"

struct serve_ctx {
    uv_loop_t loop;
    const struct core_config *cfg;
    struct rel_service *svc;
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
    app_shutdown_begin(c->cfg, "release",
                       "waiting for released records to be acknowledged, the last offsets to "
                       "be committed and the consumers to leave their groups",
                       &c->sigint, &c->sigterm);
    if (c->svc)
        rel_service_stop(c->svc);
}

static void print_summary(const struct rel_service *svc, core_err status)
{
    struct rel_service_stats st;

    rel_service_stats(svc, &st);
    printf("{\"status\":\"%s\",\"consumed\":%llu,\"released\":%llu,\"replayed\":%llu,"
           "\"excluded\":%llu,\"dead_letters\":%llu,\"refused\":{",
           core_errname(status), (unsigned long long)st.consumed,
           (unsigned long long)st.released, (unsigned long long)st.replayed,
           (unsigned long long)st.excluded, (unsigned long long)st.dead_letters);
    for (int i = 0; i < REL_DLQ_COUNT; i++)
        printf("%s\"%s\":%llu", i ? "," : "", rel_dlq_reason_code((enum rel_dlq_reason)i),
               (unsigned long long)st.by_reason[i]);
    printf("},\"theta_version\":%llu,\"theta_swaps\":%llu,\"produce_errors\":%llu,"
           "\"commits\":%llu,\"offset_gaps\":%llu}\n",
           (unsigned long long)st.theta_version, (unsigned long long)st.theta_swaps,
           (unsigned long long)st.produce_errors, (unsigned long long)st.commits,
           (unsigned long long)st.offset_gaps);
    fflush(stdout);
}

int release_serve(struct core_config *cfg, const struct release_serve_args *a)
{
    struct core_metrics *metrics = NULL;
    struct serve_ctx c;
    struct rel_service_opts so;
    char eb[1024] = "";
    int rc = APP_EXIT_USAGE;
    core_err err;

    memset(&c, 0, sizeof(c));
    if (app_require_bootstrap(cfg, "release") != 0)
        return APP_EXIT_USAGE;
    struct rel_opts ro;
    struct core_dp_ledger_opts lo;
    struct core_dp_ledger *ledger = NULL;
    if (rel_opts_from_config(cfg, &ro, eb, sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp release: configuration error: %s\n", eb);
        return APP_EXIT_USAGE;
    }
    memset(&lo, 0, sizeof(lo));
    lo.path = a->ledger_path;
    lo.cap = ro.cap;
    app_ledger_scheme(cfg, &lo.scheme);
    err = app_ledger_open(cfg, &lo, &ledger, eb, sizeof(eb));
    if (err != CORE_OK) {
        fprintf(stderr, "gcdp release: ledger '%s': %s (%s)\n", lo.path,
                err == CORE_EAGAIN ? "held by another process (one release instance per ledger)"
                : eb[0]            ? eb
                                   : "cannot open",
                core_errname(err));
        return err == CORE_ESTATE || err == CORE_ECONFIG ? APP_EXIT_USAGE : APP_EXIT_FAILURE;
    }
    if (app_metrics_start(cfg, "release", &metrics) != 0) {
        core_metrics_free(metrics);
        core_dp_ledger_free(ledger);
        return APP_EXIT_FAILURE;
    }
    uv_loop_init(&c.loop);
    c.cfg = cfg;
    memset(&so, 0, sizeof(so));
    so.group = a->group;
    so.theta_path = a->theta;
    so.ledger = ledger;
    so.scheme = lo.scheme;
    so.ledger_lateness_ms = core_config_int(cfg, "release.service.ledger_lateness_ms");
    so.commit_interval_ms = 500;
    so.exit_idle_ms = (int64_t)(a->exit_idle_s * 1000);
    so.on_done = on_done;
    so.arg = &c;
    err = rel_service_new(&c.loop, cfg, &so, metrics, &c.svc, eb, sizeof(eb));
    if (err != CORE_OK) {
        fprintf(stderr, "gcdp release: %s\n", eb);
        uv_run(&c.loop, UV_RUN_DEFAULT);
        uv_loop_close(&c.loop);
        core_metrics_free(metrics);
        core_dp_ledger_free(ledger);
        return err == CORE_ECONFIG || err == CORE_ESTATE ? APP_EXIT_USAGE : APP_EXIT_FAILURE;
    }
    uv_signal_init(&c.loop, &c.sigint);
    uv_signal_init(&c.loop, &c.sigterm);
    c.sigint.data = c.sigterm.data = &c;
    uv_signal_start(&c.sigint, on_signal, SIGINT);
    uv_signal_start(&c.sigterm, on_signal, SIGTERM);
    uv_run(&c.loop, UV_RUN_DEFAULT);
    print_summary(c.svc, c.status);
    rel_service_free(c.svc);
    uv_run(&c.loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&c.loop) != 0)
        CORE_WARN("event loop closed with handles still open");
    rc = c.status == CORE_OK ? APP_EXIT_OK : APP_EXIT_FAILURE;
    core_metrics_free(metrics);
    core_dp_ledger_free(ledger);
    return rc;
}
