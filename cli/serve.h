/* serve.h - the process of a long-running service command: one libuv loop, SIGINT/SIGTERM to
 * a graceful stop with a shutdown watchdog, the service's summary at the end.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Thread-safety: main thread only (signal dispositions, the loop).
 */
#ifndef GCDP_CLI_SERVE_H
#define GCDP_CLI_SERVE_H

#include <stdbool.h>

#include <uv.h>

#include "core/config.h"
#include "core/err.h"

/* The process skeleton of a long-running service command (cli/serve.c): app_serve_init
 * makes the loop; the command starts its service on s->loop with app_serve_on_done (arg s)
 * as its on_done and hands the result to app_serve_run, which (on success) stops the service
 * gracefully on the first SIGINT/SIGTERM (app_shutdown_begin: a second signal or the
 * watchdog ends the process), prints its summary when it is done, frees it and closes the
 * loop. A failed start prints "gcdp <cmd>: <why>" and returns 2 for CORE_ECONFIG /
 * CORE_ESTATE, else 1. Returns the exit status: 0 when the service ended with CORE_OK. */
struct app_service_ops {
    const char *cmd;         /* "ingest", ... (messages, watchdog) */
    const char *waiting_for; /* what a graceful shutdown waits for (watchdog text) */
    void (*stop)(void *svc); /* begin the graceful shutdown */
    void (*summary)(const void *svc, core_err status); /* one line on stdout */
    void (*free)(void *svc);
};
struct app_serve {
    uv_loop_t loop;
    uv_signal_t sigint, sigterm;
    const struct core_config *cfg;
    const struct app_service_ops *ops;
    void *svc;
    core_err status;
    bool signals;
};
void app_serve_init(struct app_serve *s, const struct core_config *cfg,
                    const struct app_service_ops *ops);
void app_serve_on_done(void *arg, core_err status);
int app_serve_run(struct app_serve *s, void *svc, core_err started, const char *why);

/* First SIGINT/SIGTERM of a long-running command: stop listening (the default disposition is
 * restored, so a second signal ends the process at once, even when the loop thread is stuck
 * in a library call) and arm a watchdog: if the graceful shutdown has not finished after
 * shutdown.deadline_s, the process writes what it was waiting for (waiting_for) to stderr
 * and exits with status 1. Signal handles may be NULL. */
void app_shutdown_begin(const struct core_config *cfg, const char *cmd, const char *waiting_for,
                        uv_signal_t *a, uv_signal_t *b);

#endif /* GCDP_CLI_SERVE_H */
