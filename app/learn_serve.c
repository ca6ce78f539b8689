/* learn_serve.c - `gcdp learn --server` and `gcdp learn --participant ID`: wiring of the
 * learner services (lrn/fedsvc.h) to flags, signals and the metrics endpoint. */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app.h"
#include "core/metrics.h"
#include "flags.h"
#include "help_texts.h"
#include "lrn/config.h"
#include "lrn/fedsvc.h"

struct serve_args {
    int server;
    const char *participant, *devices;
    int check;
    double sessions, exit_after;
};

static atomic_bool g_stop;
static double g_exit_after;

static void on_signal(int sig)
{
    (void)sig;
    atomic_store(&g_stop, true);
}

#define AT(f) APP_FLAG_AT(struct serve_args, f)

static const struct app_flag serve_flags[] = {
    {"server", APP_FLAG_TRUE, AT(server)},
    {"participant", APP_FLAG_STR, AT(participant)},
    {"devices", APP_FLAG_STR, AT(devices)},
    {"check", APP_FLAG_TRUE, AT(check)},
    {"sessions", APP_FLAG_DBL, AT(sessions), .hi = DBL_MAX},
    {"exit-after", APP_FLAG_DBL, AT(exit_after), .hi = DBL_MAX},
    {.name = NULL},
};

#undef AT

/* Returns 0 ok, -1 usage error (message printed). */
static int parse(int argc, char **argv, struct serve_args *a)
{
    int first = app_flags_parse("learn", serve_flags, argc, argv, a, NULL);

    if (first < 0)
        return -1;
    if (first < argc || a->server == (a->participant != NULL) || (a->server && a->devices)) {
        fprintf(stderr, "gcdp learn: give --server or --participant ID (--devices with a "
                        "participant only; see --help)\n");
        return -1;
    }
    return 0;
}

static void *stopper(void *arg)
{
    double s = g_exit_after;
    (void)arg;
    struct timespec ts = {0, 100L * 1000000};
    for (double t = 0; t < s && !atomic_load(&g_stop); t += 0.1)
        nanosleep(&ts, NULL);
    atomic_store(&g_stop, true);
    return NULL;
}

static int serve_main(struct app_call *call)
{
    struct core_config *cfg = call->cfg;
    struct serve_args a = {0};
    struct core_metrics *m = NULL;
    char eb[1024] = "";
    pthread_t th;
    int ret = APP_EXIT_USAGE;
    core_err rc;

    if (parse(call->argc, call->argv, &a) != 0)
        return APP_EXIT_USAGE;
    if (lrn_fedsvc_check(cfg, a.participant, a.devices, eb, sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp learn: configuration error: %s\n", eb);
        return APP_EXIT_USAGE;
    }
    if (a.check) {
        printf("gcdp learn: configuration ok\n");
        return APP_EXIT_OK;
    }
    lrn_config_apply_blas(cfg);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    if (app_metrics_start(cfg, "learn", &m) != 0) {
        ret = APP_EXIT_FAILURE;
        goto out;
    }
    core_metrics_set_health(m, true, NULL);
    g_exit_after = a.exit_after;
    if (a.exit_after > 0 && pthread_create(&th, NULL, stopper, NULL) == 0)
        pthread_detach(th);
    rc = lrn_fedsvc_run(cfg, m, a.participant, a.devices, (uint64_t)a.sessions, &g_stop, stdout,
                        "gcdp learn", eb, sizeof(eb));
    ret = app_exit_status("learn", rc, eb);
out:
    core_metrics_free(m);
    return ret;
}

const struct app_command app_cmd_learn_serve = {
    .name = "learn",
    .summary = "the learner services: --server, --participant ID",
    .help = app_help_learn_serve,
    .options = serve_flags,
    .run = serve_main,
};

bool learn_serve_wanted(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--server") == 0 || strcmp(argv[i], "--participant") == 0 ||
            strncmp(argv[i], "--participant=", 14) == 0)
            return true;
    return false;
}
