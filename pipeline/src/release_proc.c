/* release_proc.c - `gcdp release --serve` as one process (pipe/release_proc.h): the release
 * service on its ledger and the audit log's mirror on topics.audit. */
#include "pipe/release_proc.h"

#include <stdlib.h>

#include "core/audit_mirror.h"
#include "core/dp_ledger.h"
#include "core/kconf.h"
#include "core/mem.h"
#include "rel/ledger.h"
#include "rel/plan.h"
#include "rel/service.h"

struct pipe_release_proc {
    struct rel_service *svc;
    struct core_audit_mirror *mirror; /* NULL: release.audit.mirror is false */
    struct core_dp_ledger *ledger;
    struct core_dp_ledger_opts lo;
    const char *ledger_path;
    void (*on_done)(void *arg, core_err status);
    void *arg;
    core_err status;
};

core_err pipe_release_proc_new(const struct core_config *cfg, const char *ledger_path,
                               struct pipe_release_proc **out, char *eb, size_t ebn)
{
    struct pipe_release_proc *p;
    core_err rc;

    core_mem_tune_service(); /* Kafka buffers reused, not faulted in again (core/mem.h) */
    p = core_xcalloc(1, sizeof(*p));
    rc = rel_ledger_open(cfg, ledger_path, &p->lo, &p->ledger, eb, ebn);
    if (rc != CORE_OK) {
        free(p);
        *out = NULL;
        return rc;
    }
    p->ledger_path = ledger_path;
    *out = p;
    return CORE_OK;
}

void pipe_release_proc_summary_print(FILE *f, const struct pipe_release_proc *p, core_err status)
{
    struct rel_service_stats st;
    struct core_audit_mirror_stats ms = {0};

    rel_service_stats(p->svc, &st);
    if (p->mirror)
        core_audit_mirror_stats(p->mirror, &ms);
    fprintf(f,
            "{\"status\":\"%s\",\"consumed\":%llu,\"released\":%llu,\"replayed\":%llu,"
            "\"excluded\":%llu,\"dead_letters\":%llu,\"refused\":{",
            core_errname(status), (unsigned long long)st.consumed, (unsigned long long)st.released,
            (unsigned long long)st.replayed, (unsigned long long)st.excluded,
            (unsigned long long)st.dead_letters);
    for (int i = 0; i < REL_DLQ_COUNT; i++)
        fprintf(f, "%s\"%s\":%llu", i ? "," : "", rel_dlq_reason_code((enum rel_dlq_reason)i),
                (unsigned long long)st.by_reason[i]);
    fprintf(f,
            "},\"theta_version\":%llu,\"theta_swaps\":%llu,\"produce_errors\":%llu,"
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
    fflush(f);
}

void pipe_release_proc_stop(struct pipe_release_proc *p)
{
    rel_service_stop(p->svc);
}

void pipe_release_proc_stop_free(struct pipe_release_proc *p)
{
    rel_service_free(p->svc);
    core_audit_mirror_free(p->mirror);
    p->svc = NULL;
    p->mirror = NULL;
}

void pipe_release_proc_free(struct pipe_release_proc *p)
{
    if (!p)
        return;
    pipe_release_proc_stop_free(p);
    core_dp_ledger_free(p->ledger);
    free(p);
}

static void mirror_done(void *arg)
{
    struct pipe_release_proc *p = arg;
    p->on_done(p->arg, p->status);
}

/* The service is done: its last commits are durable; mirror them, then the process ends. */
static void service_done(void *arg, core_err status)
{
    struct pipe_release_proc *p = arg;
    p->status = status;
    if (p->mirror)
        core_audit_mirror_stop(p->mirror, 10000, mirror_done, p);
    else
        p->on_done(p->arg, status);
}

static uint64_t ledger_durable(void *arg)
{
    struct core_dp_ledger_stats st;
    core_dp_ledger_stats(arg, &st);
    return st.audit_bytes;
}

/* The audit log's mirror on topics.audit (state: "<ledger>.mirror"), unless
 * release.audit.mirror is false. A mirror that cannot start stops the start. */
static core_err mirror_start(const struct core_config *cfg, uv_loop_t *loop,
                             struct core_metrics *metrics, struct pipe_release_proc *p, char *eb,
                             size_t ebn)
{
    char state[4200];
    rd_kafka_conf_t *conf = NULL;
    core_err err;

    if (!core_config_bool(cfg, "release.audit.mirror"))
        return CORE_OK;
    snprintf(state, sizeof(state), "%s.mirror", p->ledger_path);
    struct core_audit_mirror_opts o = {.audit_path = p->ledger_path,
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

core_err pipe_release_proc_start(struct pipe_release_proc *p, uv_loop_t *loop,
                                 const struct core_config *cfg,
                                 const struct pipe_release_proc_opts *o,
                                 struct core_metrics *metrics, char *eb, size_t ebn)
{
    struct rel_service_opts so;
    core_err err;

    p->on_done = o->on_done;
    p->arg = o->arg;
    rel_service_opts_init(cfg, o->group, p->ledger, &p->lo.scheme, &so);
    so.theta_path = o->theta;
    so.exit_idle_ms = (int64_t)(o->exit_idle_s * 1000);
    so.on_done = service_done;
    so.arg = p;
    err = mirror_start(cfg, loop, metrics, p, eb, ebn);
    if (err == CORE_OK)
        err = rel_service_new(loop, cfg, &so, metrics, &p->svc, eb, ebn);
    if (err != CORE_OK && p->mirror) { /* close what the mirror opened on the loop */
        core_audit_mirror_stop(p->mirror, 0, NULL, NULL);
        uv_run(loop, UV_RUN_DEFAULT);
        core_audit_mirror_free(p->mirror);
        p->mirror = NULL;
    }
    return err;
}
