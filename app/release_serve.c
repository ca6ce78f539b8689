/* release_serve.c - `gcdp release --serve`: the release service as a process
 * (rel/service.h), with its ledger's audit log mirrored to topics.audit
 * (core/audit_mirror.h; release.audit.mirror). SIGINT/SIGTERM: graceful shutdown (commit the
 * pending group, wait for acknowledgements, commit offsets, leave the group, then mirror
 * the last committed rows). A one-line JSON summary goes to stdout at exit. */
#include <stdio.h>
#include <string.h>

#include <uv.h>

#include "app.h"
#include "core/audit_mirror.h"
#include "core/dp_ledger.h"
#include "core/dp_ledger_cfg.h"
#include "core/kconf.h"
#include "core/log.h"
#include "core/metrics.h"
#include "rel/ledger.h"
#include "rel/plan.h"
#include "rel/service.h"

/* The process's parts: the service, and the mirror of its ledger's audit log (NULL: off). */
struct release_proc {
    struct rel_service *svc;
    struct core_audit_mirror *mirror;
    struct core_dp_ledger *ledger;
    struct app_serve *srv;
    core_err status;
};

static void print_summary(const void *arg, core_err status)
{
    const struct release_proc *p = arg;
    struct rel_service_stats st;
    struct core_audit_mirror_stats ms = {0};

    rel_service_stats(p->svc, &st);
    if (p->mirror)
        core_audit_mirror_stats(p->mirror, &ms);
    printf("{\"status\":\"%s\",\"consumed\":%llu,\"released\":%llu,\"replayed\":%llu,"
           "\"excluded\":%llu,\"dead_letters\":%llu,\"refused\":{",
           core_errname(status), (unsigned long long)st.consumed, (unsigned long long)st.released,
           (unsigned long long)st.replayed, (unsigned long long)st.excluded,
           (unsigned long long)st.dead_letters);
    for (int i = 0; i < REL_DLQ_COUNT; i++)
        printf("%s\"%s\":%llu", i ? "," : "", rel_dlq_reason_code((enum rel_dlq_reason)i),
               (unsigned long long)st.by_reason[i]);
    printf("},\"theta_version\":%llu,\"theta_swaps\":%llu,\"produce_errors\":%llu,"
           "\"commits\":%llu,\"offset_gaps\":%llu,\"changelog_rows\":%llu,\"adopted\":%llu,"
           "\"adopted_over_cap\":%llu,\"refused_partitions\":%llu,\"changelog_refusals\":%llu,"
           "\"audit_mirror\":{\"on\":%s,\"rows\":%llu,\"lag_bytes\":%llu,\"errors\":%llu,"
           "\"skipped\":%llu}}\n",
           (unsigned long long)st.theta_version, (unsigned long long)st.theta_swaps,
           (unsigned long long)st.produce_errors, (unsigned long long)st.commits,
           (unsigned long long)st.offset_gaps, (unsigned long long)st.changelog_sent,
           (unsigned long long)st.adopted, (unsigned long long)st.adopted_over_cap,
           (unsigned long long)st.refused_partitions, (unsigned long long)st.changelog_refusals,
           p->mirror ? "true" : "false", (unsigned long long)ms.rows,
           (unsigned long long)ms.lag_bytes, (unsigned long long)ms.errors,
           (unsigned long long)ms.skipped);
    fflush(stdout);
}

static void stop_svc(void *arg)
{
    struct release_proc *p = arg;
    rel_service_stop(p->svc);
}

static void free_svc(void *arg)
{
    struct release_proc *p = arg;
    rel_service_free(p->svc);
    core_audit_mirror_free(p->mirror);
}

static void mirror_done(void *arg)
{
    struct release_proc *p = arg;
    app_serve_on_done(p->srv, p->status);
}

/* The service is done: its last commits are durable; mirror them, then the process ends. */
static void service_done(void *arg, core_err status)
{
    struct release_proc *p = arg;
    p->status = status;
    if (p->mirror)
        core_audit_mirror_stop(p->mirror, 10000, mirror_done, p);
    else
        app_serve_on_done(p->srv, status);
}

static uint64_t ledger_durable(void *arg)
{
    struct core_dp_ledger_stats st;
    core_dp_ledger_stats(arg, &st);
    return st.audit_bytes;
}

/* The audit log's mirror on topics.audit (state: "<ledger>.mirror"), unless
 * release.audit.mirror is false. A mirror that cannot start stops the start (exit 1). */
static core_err mirror_start(struct core_config *cfg, uv_loop_t *loop, const char *ledger_path,
                             struct core_metrics *metrics, struct release_proc *p, char *eb,
                             size_t ebn)
{
    char state[4200];
    rd_kafka_conf_t *conf = NULL;
    core_err err;
    if (!core_config_bool(cfg, "release.audit.mirror"))
        return CORE_OK;
    snprintf(state, sizeof(state), "%s.mirror", ledger_path);
    struct core_audit_mirror_opts o = {.audit_path = ledger_path,
                                       .state_path = state,
                                       .topic = core_config_str(cfg, "topics.audit"),
                                       .durable = ledger_durable,
                                       .arg = p->ledger,
                                       .metrics = metrics};
    err = core_kafka_conf_new(cfg, CORE_KAFKA_PRODUCER, NULL, &conf, eb, ebn);
    if (err == CORE_OK)
        err = core_audit_mirror_new(loop, conf, &o, &p->mirror, eb, ebn);
    if (err != CORE_OK && conf && !p->mirror)
        rd_kafka_conf_destroy(conf);
    return err;
}

static const struct app_service_ops release_ops = {
    "release",
    "waiting for released records to be acknowledged, the last offsets to be committed and "
    "the consumers to leave their groups",
    stop_svc, print_summary, free_svc};

int release_serve(struct core_config *cfg, const struct release_serve_args *a)
{
    struct core_metrics *metrics = NULL;
    struct core_dp_ledger_opts lo;
    struct core_dp_ledger *ledger = NULL;
    struct release_proc proc = {0};
    struct rel_service_opts so;
    struct app_serve srv;
    char eb[1024] = "";
    core_err err;
    int rc;

    if (app_require_bootstrap(cfg, "release") != 0)
        return APP_EXIT_USAGE;
    if ((err = rel_ledger_open(cfg, a->ledger_path, &lo, &ledger, eb, sizeof(eb))) != CORE_OK) {
        fprintf(stderr, "gcdp release: %s\n", eb);
        return err == CORE_ESTATE || err == CORE_ECONFIG ? APP_EXIT_USAGE : APP_EXIT_FAILURE;
    }
    if (app_metrics_start(cfg, "release", &metrics) != 0) {
        rc = APP_EXIT_FAILURE;
        goto out;
    }
    app_serve_init(&srv, cfg, &release_ops);
    proc.srv = &srv;
    proc.ledger = ledger;
    rel_service_opts_init(cfg, a->group, ledger, &lo.scheme, &so);
    so.theta_path = a->theta;
    so.exit_idle_ms = (int64_t)(a->exit_idle_s * 1000);
    so.on_done = service_done;
    so.arg = &proc;
    err = mirror_start(cfg, &srv.loop, a->ledger_path, metrics, &proc, eb, sizeof(eb));
    if (err == CORE_OK)
        err = rel_service_new(&srv.loop, cfg, &so, metrics, &proc.svc, eb, sizeof(eb));
    if (err != CORE_OK && proc.mirror) { /* close what the mirror opened on the loop */
        core_audit_mirror_stop(proc.mirror, 0, NULL, NULL);
        uv_run(&srv.loop, UV_RUN_DEFAULT);
        core_audit_mirror_free(proc.mirror);
        proc.mirror = NULL;
    }
    rc = app_serve_run(&srv, &proc, err, eb);
out:
    core_metrics_free(metrics);
    core_dp_ledger_free(ledger);
    return rc;
}
