/* cmd_ingest.c - `gcdp ingest`: the ingest service as a process (ing/service.h).
 * SIGINT/SIGTERM: graceful shutdown (stop intake, wait for acks, commit, leave the group).
 * A one-line JSON summary goes to stdout at exit. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "app.h"
#include "core/log.h"
#include "core/metrics.h"
#include "flags.h"
#include "help_texts.h"
#include "ing/service.h"

struct ingest_opts {
    const char *group;
    long commit_ms;
    double exit_idle_s;
    bool flush_on_idle;
    bool check;
};

#define AT(f) APP_FLAG_AT(struct ingest_opts, f)

static const struct app_flag ingest_flags[] = {
    {"group", APP_FLAG_STR, AT(group)},
    {"commit-interval", APP_FLAG_INT, AT(commit_ms), .lo = 10, .hi = 600000},
    {"exit-idle", APP_FLAG_DBL, AT(exit_idle_s), .lo = 0, .hi = 86400},
    {"flush-on-idle", APP_FLAG_TRUE, AT(flush_on_idle)},
    {"check", APP_FLAG_TRUE, AT(check)},
    {.name = NULL},
};

#undef AT

static void print_summary(const void *svc, core_err status)
{
    struct ing_service_stats st;
    ing_service_stats(svc, &st);
    printf("{\"status\":\"%s\",\"consumed\":%llu,\"accepted\":%llu,\"rejected\":%llu,"
           "\"windows_out\":%llu,\"dead_letters_out\":%llu,\"produce_errors\":%llu,"
           "\"commits\":%llu,\"offset_gaps\":%llu,\"offsets_lost\":%llu}\n",
           core_errname(status), (unsigned long long)st.consumed, (unsigned long long)st.accepted,
           (unsigned long long)st.rejected, (unsigned long long)st.windows_out,
           (unsigned long long)st.rejected_out, (unsigned long long)st.produce_errors,
           (unsigned long long)st.commits, (unsigned long long)st.offset_gaps,
           (unsigned long long)st.offsets_lost);
    fflush(stdout);
}

static void stop_svc(void *svc)
{
    ing_service_stop(svc);
}

static void free_svc(void *svc)
{
    ing_service_free(svc);
}

static const struct app_service_ops ingest_ops = {
    "ingest",
    "waiting for produced records to be acknowledged, the last offsets to be committed and "
    "the consumer to leave its group",
    stop_svc, print_summary, free_svc};

static int cmd_main(struct app_call *call)
{
    struct core_config *cfg = call->cfg;
    struct core_metrics *metrics = NULL;
    struct ingest_opts o = {"gcdp-ingest", 500, 0, false, false};
    struct app_serve srv;
    struct ing_service *svc = NULL;
    struct ing_service_opts so;
    char eb[1024] = "";
    int rc = APP_EXIT_USAGE;
    core_err err;

    if (app_flags_parse_only("ingest", ingest_flags, call->argc, call->argv, &o, NULL) != 0)
        return APP_EXIT_USAGE;
    if (o.check) {
        struct pipe_check_opts co = {"ingest", false, NULL, NULL, NULL};
        return app_service_check(cfg, &co);
    }
    if (app_require_bootstrap(cfg, "ingest") != 0)
        return APP_EXIT_USAGE;
    if (app_metrics_start(cfg, "ingest", &metrics) != 0) {
        rc = APP_EXIT_FAILURE;
        goto out;
    }
    app_serve_init(&srv, cfg, &ingest_ops);
    so = (struct ing_service_opts){
        o.group,         o.commit_ms,       (int64_t)(o.exit_idle_s * 1000),
        o.flush_on_idle, app_serve_on_done, &srv};
    err = ing_service_new(&srv.loop, cfg, &so, metrics, &svc, eb, sizeof(eb));
    rc = app_serve_run(&srv, svc, err, eb); /* a bad setting: 2 */
out:
    core_metrics_free(metrics);
    return rc;
}

const struct app_command app_cmd_ingest = {
    .name = "ingest",
    .summary = "ingest stage: sensors.raw -> gcdp.windows + sensors.rejected",
    .help = app_help_ingest,
    .options = ingest_flags,
    .run = cmd_main,
    .component = "ingest",
};
