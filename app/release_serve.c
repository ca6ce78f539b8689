/* release_serve.c - `gcdp release --serve`: the release service as a process
 * (rel/service.h). SIGINT/SIGTERM: graceful shutdown (commit the pending group, wait for
 * acknowledgements, commit offsets, leave the group). A one-line JSON summary goes to
 * stdout at exit. */
#include <stdio.h>
#include <string.h>

#include <uv.h>

#include "app.h"
#include "core/dp_ledger.h"
#include "core/log.h"
#include "core/metrics.h"
#include "rel/plan.h"
#include "rel/service.h"

static void print_summary(const void *svc, core_err status)
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
           "\"commits\":%llu,\"offset_gaps\":%llu,\"changelog_rows\":%llu,\"adopted\":%llu,"
           "\"adopted_over_cap\":%llu,\"refused_partitions\":%llu,\"changelog_refusals\":%llu}\n",
           (unsigned long long)st.theta_version, (unsigned long long)st.theta_swaps,
           (unsigned long long)st.produce_errors, (unsigned long long)st.commits,
           (unsigned long long)st.offset_gaps, (unsigned long long)st.changelog_sent,
           (unsigned long long)st.adopted, (unsigned long long)st.adopted_over_cap,
           (unsigned long long)st.refused_partitions,
           (unsigned long long)st.changelog_refusals);
    fflush(stdout);
}

static void stop_svc(void *svc)
{
    rel_service_stop(svc);
}

static void free_svc(void *svc)
{
    rel_service_free(svc);
}

static const struct app_service_ops release_ops = {
    "release",
    "waiting for released records to be acknowledged, the last offsets to be committed and "
    "the consumers to leave their groups",
    stop_svc, print_summary, free_svc};

int release_ledger_open(const struct core_config *cfg, const char *path,
                        struct core_dp_ledger_opts *lo, struct core_dp_ledger **out, char *eb,
                        size_t ebn)
{
    struct rel_opts ro;
    char why[1024] = "";
    core_err err;

    if (rel_opts_from_config(cfg, &ro, why, sizeof(why)) != CORE_OK) {
        snprintf(eb, ebn, "configuration error: %s", why);
        return APP_EXIT_USAGE;
    }
    memset(lo, 0, sizeof(*lo));
    lo->path = path;
    lo->cap = ro.cap;
    app_ledger_scheme(cfg, &lo->scheme);
    err = app_ledger_open(cfg, lo, out, why, sizeof(why));
    if (err == CORE_OK)
        return APP_EXIT_OK;
    snprintf(eb, ebn, "ledger '%s': %s (%s)", path,
             err == CORE_EAGAIN ? "held by another process (one release instance per ledger)"
             : why[0]           ? why
                                : "cannot open",
             core_errname(err));
    return err == CORE_ESTATE || err == CORE_ECONFIG ? APP_EXIT_USAGE : APP_EXIT_FAILURE;
}

int release_serve(struct core_config *cfg, const struct release_serve_args *a)
{
    struct core_metrics *metrics = NULL;
    struct core_dp_ledger_opts lo;
    struct core_dp_ledger *ledger = NULL;
    struct rel_service *svc = NULL;
    struct rel_service_opts so;
    struct app_serve srv;
    char eb[1024] = "";
    core_err err;
    int rc;

    if (app_require_bootstrap(cfg, "release") != 0)
        return APP_EXIT_USAGE;
    if ((rc = release_ledger_open(cfg, a->ledger_path, &lo, &ledger, eb, sizeof(eb))) !=
        APP_EXIT_OK) {
        fprintf(stderr, "gcdp release: %s\n", eb);
        return rc;
    }
    if (app_metrics_start(cfg, "release", &metrics) != 0) {
        rc = APP_EXIT_FAILURE;
        goto out;
    }
    app_serve_init(&srv, cfg, &release_ops);
    rel_service_opts_init(cfg, a->group, ledger, &lo.scheme, &so);
    so.theta_path = a->theta;
    so.exit_idle_ms = (int64_t)(a->exit_idle_s * 1000);
    so.on_done = app_serve_on_done;
    so.arg = &srv;
    err = rel_service_new(&srv.loop, cfg, &so, metrics, &svc, eb, sizeof(eb));
    rc = app_serve_run(&srv, svc, err, eb);
out:
    core_metrics_free(metrics);
    core_dp_ledger_free(ledger);
    return rc;
}
