/* release_serve.c - `gcdp release --serve`: the release process (pipe/release_proc.h: the
 * service on its ledger, the audit log's mirror) wired to the shared serve skeleton.
 * SIGINT/SIGTERM: graceful shutdown. A one-line JSON summary goes to stdout at exit. */
#include <stdio.h>

#include "app.h"
#include "core/metrics.h"
#include "pipe/release_proc.h"

static void print_summary(const void *p, core_err status)
{
    pipe_release_proc_summary_print(stdout, p, status);
}

static void stop_svc(void *p)
{
    pipe_release_proc_stop(p);
}

static void free_svc(void *p)
{
    pipe_release_proc_stop_free(p);
}

static const struct app_service_ops release_ops = {
    "release",
    "waiting for released records to be acknowledged, the last offsets to be committed and "
    "the consumers to leave their groups",
    stop_svc, print_summary, free_svc};

int release_serve(struct core_config *cfg, const struct release_serve_args *a)
{
    struct core_metrics *metrics = NULL;
    struct pipe_release_proc *proc = NULL;
    struct app_serve srv;
    char eb[1024] = "";
    core_err err;
    int rc = APP_EXIT_FAILURE;

    if (app_require_bootstrap(cfg, "release") != 0)
        return APP_EXIT_USAGE;
    if ((err = pipe_release_proc_new(cfg, a->ledger_path, &proc, eb, sizeof(eb))) != CORE_OK) {
        fprintf(stderr, "gcdp release: %s\n", eb);
        return err == CORE_ESTATE || err == CORE_ECONFIG ? APP_EXIT_USAGE : APP_EXIT_FAILURE;
    }
    if (app_metrics_start(cfg, "release", &metrics) == 0) {
        struct pipe_release_proc_opts o = {.theta = a->theta,
                                           .group = a->group,
                                           .exit_idle_s = a->exit_idle_s,
                                           .on_done = app_serve_on_done,
                                           .arg = &srv};
        app_serve_init(&srv, cfg, &release_ops);
        err = pipe_release_proc_start(proc, &srv.loop, cfg, &o, metrics, eb, sizeof(eb));
        rc = app_serve_run(&srv, proc, err, eb);
    }
    core_metrics_free(metrics);
    pipe_release_proc_free(proc);
    return rc;
}
