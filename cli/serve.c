/* serve.c - the process skeleton every `--serve`-style command shares (serve.h, app_serve_*):
 * one libuv loop, SIGINT/SIGTERM -> graceful stop with the shutdown watchdog, the service's
 * one-line summary, then its free and a last loop run for the handles it closed; and the
 * shutdown watchdog (app_shutdown_begin). */
#include "serve.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "core/log.h"

static char watchdog_msg[512];

static void watchdog_fire(int sig)
{
    (void)sig;
    ssize_t w = write(STDERR_FILENO, watchdog_msg, strlen(watchdog_msg));
    (void)w;
    _exit(APP_EXIT_FAILURE);
}

void app_shutdown_begin(const struct core_config *cfg, const char *cmd, const char *waiting_for,
                        uv_signal_t *a, uv_signal_t *b)
{
    int64_t deadline = core_config_int(cfg, "shutdown.deadline_s");
    struct sigaction sa;

    if (a)
        uv_signal_stop(a); /* the last watcher of the signal: libuv restores SIG_DFL */
    if (b)
        uv_signal_stop(b);
    snprintf(watchdog_msg, sizeof(watchdog_msg),
             "gcdp %s: graceful shutdown did not finish within %lld s (shutdown.deadline_s) "
             "while %s; exiting now (uncommitted input is read again on restart)\n",
             cmd, (long long)deadline, waiting_for);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = watchdog_fire;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    alarm((unsigned)deadline);
    CORE_INFO("graceful shutdown: a second signal ends the process at once; watchdog %lld s",
              (long long)deadline);
}

void app_serve_init(struct app_serve *s, const struct core_config *cfg,
                    const struct app_service_ops *ops)
{
    memset(s, 0, sizeof(*s));
    s->cfg = cfg;
    s->ops = ops;
    uv_loop_init(&s->loop);
}

void app_serve_on_done(void *arg, core_err status)
{
    struct app_serve *s = arg;
    s->status = status;
    if (s->signals) { /* the loop can return once the service's handles are closed */
        uv_close((uv_handle_t *)&s->sigint, NULL);
        uv_close((uv_handle_t *)&s->sigterm, NULL);
    }
}

static void on_signal(uv_signal_t *h, int sig)
{
    struct app_serve *s = h->data;
    CORE_INFO("signal %d: graceful shutdown", sig);
    app_shutdown_begin(s->cfg, s->ops->cmd, s->ops->waiting_for, &s->sigint, &s->sigterm);
    if (s->svc)
        s->ops->stop(s->svc);
}

int app_serve_run(struct app_serve *s, void *svc, core_err started, const char *why)
{
    if (started != CORE_OK) {
        fprintf(stderr, "gcdp %s: %s\n", s->ops->cmd, why);
        uv_run(&s->loop, UV_RUN_DEFAULT); /* close what the failed start opened */
        uv_loop_close(&s->loop);
        return started == CORE_ECONFIG || started == CORE_ESTATE ? APP_EXIT_USAGE
                                                                 : APP_EXIT_FAILURE;
    }
    s->svc = svc;
    uv_signal_init(&s->loop, &s->sigint);
    uv_signal_init(&s->loop, &s->sigterm);
    s->sigint.data = s->sigterm.data = s;
    s->signals = true;
    uv_signal_start(&s->sigint, on_signal, SIGINT);
    uv_signal_start(&s->sigterm, on_signal, SIGTERM);
    uv_run(&s->loop, UV_RUN_DEFAULT);
    s->ops->summary(svc, s->status);
    s->ops->free(svc);
    uv_run(&s->loop, UV_RUN_DEFAULT); /* release the handles closed by the service's free */
    if (uv_loop_close(&s->loop) != 0)
        CORE_WARN("event loop closed with handles still open");
    return s->status == CORE_OK ? APP_EXIT_OK : APP_EXIT_FAILURE;
}
