/* bench_release_service.c - the service phase of `gcdp bench release`: window records
 * produced to gcdp.windows on an in-process embedded broker, released by the release service
 * (rel/service.h, ledger on disk) to gcdp.released; windows/s and released coordinates/s from
 * the first window read to the last release acknowledged, beside the offline path's rate
 * measured in the same run. */
#include "bench.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <uv.h>

#include "app.h"
#include "cal/theta.h"
#include "core/broker.h"
#include "core/dp_ledger.h"
#include "core/dp_rng.h"
#include "core/kafka.h"
#include "core/kconf.h"
#include "core/ksync.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/window_bin.h"
#include "rel/plan.h"
#include "rel/release.h"
#include "rel/service.h"

#define SVC_DEVICES    16
#define SVC_MAX_RUNS   15 /* --service-runs */
#define SVC_PARTITIONS 16 /* of gcdp.windows: 5 MiB retained per partition (KAFKA.md) */

struct svc_bench {
    uv_loop_t loop;
    uv_timer_t poll;
    struct rel_service *svc;
    size_t windows;
    double t_first, t_last; /* first read; last acknowledgement */
    double t_read_all;      /* every window read and pushed to the releaser */
    bool stopping;
    core_err status;
};

/* One gcdp.window/2 record of n nodes "c<m>.mean" (clip [0,1], 30 real samples of 60). */
static char *window_json(size_t n, size_t i)
{
    json_t *w = json_object(), *nodes = json_object(), *nn = json_object(), *imp = json_object();
    json_t *pn = json_object();
    char key[48], chan[40], id[64], dev[32], *txt;
    long long start = (long long)(i / SVC_DEVICES) * 60000;

    for (size_t m = 0; m < n; m++) {
        snprintf(chan, sizeof(chan), "c%zu", m);
        snprintf(key, sizeof(key), "c%zu.mean", m);
        json_object_set_new(nodes, key, json_real((double)((m * 7919 + i * 31) % 1000) / 1000.0));
        json_object_set_new(nn, key, json_integer(30));
        json_object_set_new(imp, key, json_array());
        json_object_set_new(pn, key,
                            json_pack("{s:s,s:s,s:[i,i],s:i,s:i}", "stat", "mean", "channel", chan,
                                      "clip", 0, 1, "n_imputed", 0, "max_run", 0));
    }
    snprintf(dev, sizeof(dev), "bench-%zu", i % SVC_DEVICES);
    snprintf(id, sizeof(id), "%s|%lld", dev, start);
    txt = NULL;
    json_object_set_new(w, "schema", json_string("gcdp.window/2"));
    json_object_set_new(w, "id", json_string(id));
    json_object_set_new(w, "device", json_string(dev));
    json_object_set_new(w, "window_start", json_integer(start));
    json_object_set_new(w, "window_end", json_integer(start + 60000));
    json_object_set_new(w, "n", json_integer(30));
    json_object_set_new(w, "n_slots", json_integer(60));
    json_object_set_new(w, "excluded", json_false());
    json_object_set_new(w, "nodes", nodes);
    json_object_set_new(w, "n_node", nn);
    json_object_set_new(w, "imputed", imp);
    json_object_set_new(w, "prov",
                        json_pack("{s:i,s:i,s:s,s:o}", "interp_gap", 0, "period_ms", 1000, "norm",
                                  "clip_minmax", "nodes", pn));
    txt = json_dumps(w, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(w);
    return txt;
}

/* The same record as window_json, as gcdp.window/3 (*len bytes; free()). */
static char *window_bin(size_t n, size_t i, size_t *len)
{
    struct core_wrec_node *nd = calloc(n ? n : 1, sizeof(*nd));
    char(*names)[2][32] = calloc(n ? n : 1, sizeof(*names));
    char id[64], dev[32];
    long long start = (long long)(i / SVC_DEVICES) * 60000;
    struct core_wrec r;
    struct core_buf b;

    for (size_t m = 0; m < n; m++) {
        snprintf(names[m][0], sizeof(names[m][0]), "c%zu.mean", m);
        snprintf(names[m][1], sizeof(names[m][1]), "c%zu", m);
        nd[m] = (struct core_wrec_node){
            names[m][0], "mean", names[m][1], (double)((m * 7919 + i * 31) % 1000) / 1000.0,
            0.0,         1.0,    30,          0,
            0,           NULL};
    }
    snprintf(dev, sizeof(dev), "bench-%zu", i % SVC_DEVICES);
    snprintf(id, sizeof(id), "%s|%lld", dev, start);
    r = (struct core_wrec){.id = id,
                           .device = dev,
                           .config_version = "",
                           .start = start,
                           .end = start + 60000,
                           .n = 30,
                           .n_slots = 60,
                           .closed_early = "",
                           .period_ms = 1000,
                           .norm = "clip_minmax",
                           .n_nodes = n,
                           .node = nd};
    core_buf_init(&b, CORE_BUF_NO_CAP);
    if (core_wbin_encode(&r, &b) != CORE_OK || core_buf_status(&b) != CORE_OK)
        core_buf_reset(&b); /* cannot happen with these names; the service refuses "" */
    free(nd);
    free(names);
    return core_buf_take(&b, len);
}

/* Record i of n nodes in the phase's encoding (*len bytes; free()). */
static char *window_rec(size_t n, size_t i, bool binary, size_t *len)
{
    char *txt;

    if (binary)
        return window_bin(n, i, len);
    txt = window_json(n, i);
    *len = strlen(txt);
    return txt;
}

/* Produce the records synchronously (acks=all) before the service starts. */
static core_err produce_windows(const struct core_config *cfg, size_t n, size_t windows,
                                bool binary, char *eb, size_t ebn)
{
    struct core_ksync_opts ko = {.topic = core_config_str(cfg, "topics.windows")};
    struct core_ksync *ks = NULL;
    core_err rc = core_ksync_new(cfg, &ko, &ks, eb, ebn);

    for (size_t i = 0; rc == CORE_OK && i < windows; i++) {
        size_t len;
        char *txt = window_rec(n, i, binary, &len), dev[32];
        snprintf(dev, sizeof(dev), "bench-%zu", i % SVC_DEVICES);
        rc = core_ksync_send(ks, dev, strlen(dev), txt, len, NULL, NULL, 0, eb, ebn);
        free(txt);
    }
    if (rc == CORE_OK)
        rc = core_ksync_flush(ks, 60000, NULL, eb, ebn); /* acknowledged within 60 s */
    core_ksync_free(ks);
    return rc;
}

static core_err discard(void *arg, const char *bytes, size_t len, bool replayed)
{
    (void)bytes;
    (void)replayed;
    *(uint64_t *)arg += len;
    return CORE_OK;
}

/* The offline path on the same records, as `gcdp release --input` runs it: parse each
 * record (rel_window_from_bytes: either encoding), plan from the first one's provenance,
 * release with the ledger. Returns coords/s (wall), 0 on failure. */
static double offline_parsed(const struct core_config *cfg, const struct cal_theta *theta,
                             size_t windows, bool binary, const char *ledger)
{
    struct core_dp_ledger_opts lo = {ledger, {1e6, 0.0, 0.0}, 0, {60000, 0, 1000}};
    struct core_dp_ledger *l = NULL;
    struct rel_releaser *r = NULL;
    struct rel_plan *plan = NULL;
    struct rel_opts o;
    struct rel_window w;
    char eb[1024] = "";
    uint64_t bytes = 0;
    double t0, t1;
    core_err rc = rel_opts_from_config(cfg, &o, eb, sizeof(eb));
    char **txt = calloc(windows, sizeof(*txt));
    size_t *len = calloc(windows, sizeof(*len));

    for (size_t i = 0; i < windows; i++)
        txt[i] = window_rec(theta->d, i, binary, &len[i]);
    rel_window_init(&w, theta);
    remove(ledger);
    if (rc == CORE_OK)
        rc = core_dp_ledger_open(&lo, &l, eb, sizeof(eb));
    t0 = 1e-9 * (double)uv_hrtime();
    for (size_t i = 0; rc == CORE_OK && i < windows; i++) {
        rc = rel_window_from_bytes(txt[i], len[i], &w, eb, sizeof(eb));
        if (rc == CORE_OK && !plan) {
            o.profile = &w.prof;
            rc = rel_plan_new(theta, &o, &plan, eb, sizeof(eb));
            if (rc == CORE_OK)
                rc = rel_releaser_new(plan, l, core_rng_os(),
                                      (size_t)core_config_int(cfg, "release.ledger.batch"), 1, &r);
        }
        if (rc == CORE_OK)
            rc = rel_releaser_push(r, &w, discard, &bytes, eb, sizeof(eb));
    }
    if (rc == CORE_OK)
        rc = rel_releaser_flush(r, discard, &bytes, eb, sizeof(eb));
    t1 = 1e-9 * (double)uv_hrtime();
    if (rc != CORE_OK)
        fprintf(stderr, "gcdp bench release: offline (parsed): %s\n", eb);
    rel_releaser_free(r);
    rel_plan_free(plan);
    core_dp_ledger_free(l);
    remove(ledger);
    rel_window_cleanup(&w);
    for (size_t i = 0; i < windows; i++)
        free(txt[i]);
    free(txt);
    free(len);
    return rc == CORE_OK ? (double)windows * (double)theta->d / (t1 - t0) : 0.0;
}

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Thread CPU µs to read and check one record (rel_window_from_bytes) in the given encoding:
 * 64 records, each read 32 times; its size in bytes in *bytes. 0 on a refusal. */
static double read_cost_us(const struct cal_theta *theta, bool binary, size_t *bytes)
{
    enum { K = 64, REP = 32 };
    struct rel_window w;
    char *rec[K], eb[512];
    size_t len[K];
    double t0, t1;
    core_err rc = CORE_OK;

    for (size_t i = 0; i < K; i++)
        rec[i] = window_rec(theta->d, i, binary, &len[i]);
    *bytes = len[0];
    rel_window_init(&w, theta);
    t0 = thread_cpu_s();
    for (size_t r = 0; r < REP && rc == CORE_OK; r++)
        for (size_t i = 0; i < K && rc == CORE_OK; i++)
            rc = rel_window_from_bytes(rec[i], len[i], &w, eb, sizeof(eb));
    t1 = thread_cpu_s();
    rel_window_cleanup(&w);
    for (size_t i = 0; i < K; i++)
        free(rec[i]);
    return rc == CORE_OK ? 1e6 * (t1 - t0) / (K * REP) : 0.0;
}

static void on_done(void *arg, core_err status)
{
    struct svc_bench *b = arg;
    b->status = status;
    uv_close((uv_handle_t *)&b->poll, NULL);
}

static void on_poll(uv_timer_t *t)
{
    struct svc_bench *b = t->data;
    struct rel_service_stats st;

    rel_service_stats(b->svc, &st);
    if (b->t_read_all == 0 && st.consumed >= b->windows)
        b->t_read_all = 1e-9 * (double)uv_hrtime();
    if (!b->stopping && st.released + st.dead_letters >= b->windows) {
        b->t_first = 1e-9 * (double)st.first_read_ns;
        b->t_last = 1e-9 * (double)uv_hrtime();
        b->stopping = true;
        rel_service_stop(b->svc);
    }
}

/* One service run's figures: windows/s and coords/s from the first read to the last
 * acknowledgement. */
struct svc_figs {
    double wps, cps;
    double loop_cpu, proc_cpu; /* CPU s of the service's loop thread, of the whole process */
};

static double cpu_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Run the service's loop until it stops, polling its progress; the CPU it took into f. */
static void run_loop(struct svc_bench *b, struct svc_figs *f)
{
    uv_timer_init(&b->loop, &b->poll);
    b->poll.data = b;
    uv_timer_start(&b->poll, on_poll, 2, 2);
    f->loop_cpu = cpu_clock(CLOCK_THREAD_CPUTIME_ID);
    f->proc_cpu = cpu_clock(CLOCK_PROCESS_CPUTIME_ID);
    uv_run(&b->loop, UV_RUN_DEFAULT);
    f->loop_cpu = cpu_clock(CLOCK_THREAD_CPUTIME_ID) - f->loop_cpu;
    f->proc_cpu = cpu_clock(CLOCK_PROCESS_CPUTIME_ID) - f->proc_cpu;
}

/* Run the phase as consumer group `group` on the JSONL ledger (store NULL) or the ledger
 * store; *f receives its figures. */
static int run_service(struct core_config *cfg, size_t windows, const char *theta_path,
                       const char *ledger, const char *store, const char *group, size_t n,
                       struct svc_figs *f)
{
    struct core_dp_ledger_opts lo = {ledger, {1e6, 0.0, 0.0}, 0, {60000, 0, 1000}};
    struct core_dp_store_opts sto = {.path = store};
    struct core_dp_ledger *l = NULL;
    struct svc_bench b;
    struct rel_service_opts so;
    struct rel_service_stats st;
    char eb[1024] = "";
    core_err rc;

    memset(&b, 0, sizeof(b));
    memset(&so, 0, sizeof(so));
    b.windows = windows;
    so.group = group;
    so.theta_path = theta_path;
    so.scheme = lo.scheme;
    so.ledger_lateness_ms = 3600000;
    if ((store ? core_dp_ledger_open_store(&lo, &sto, &l, eb, sizeof(eb))
               : core_dp_ledger_open(&lo, &l, eb, sizeof(eb))) != CORE_OK) {
        fprintf(stderr, "gcdp bench release: ledger: %s\n", eb);
        return APP_EXIT_FAILURE;
    }
    so.ledger = l;
    so.commit_interval_ms = 500;
    so.on_done = on_done;
    so.arg = &b;
    uv_loop_init(&b.loop);
    rc = rel_service_new(&b.loop, cfg, &so, NULL, &b.svc, eb, sizeof(eb));
    if (rc != CORE_OK) {
        fprintf(stderr, "gcdp bench release: service: %s\n", eb);
        uv_run(&b.loop, UV_RUN_DEFAULT);
        uv_loop_close(&b.loop);
        core_dp_ledger_free(l);
        return APP_EXIT_FAILURE;
    }
    run_loop(&b, f);
    rel_service_stats(b.svc, &st);
    rel_service_free(b.svc);
    uv_run(&b.loop, UV_RUN_DEFAULT);
    uv_loop_close(&b.loop);
    core_dp_ledger_free(l);
    if (b.status != CORE_OK || st.released != windows || b.t_last <= b.t_first) {
        fprintf(stderr,
                "gcdp bench release: service phase: %s, %" PRIu64 " of %zu released, "
                "%" PRIu64 " refused\n",
                core_strerror(b.status), st.released, windows, st.dead_letters);
        return APP_EXIT_FAILURE;
    }
    f->wps = (double)windows / (b.t_last - b.t_first);
    f->cps = f->wps * (double)n;
    printf("  service run (%s ledger): %.0f coords/s; all read %.3f s, all acknowledged %.3f s "
           "after the first read\n",
           store ? "store" : "JSONL", f->cps, b.t_read_all - 1e-9 * (double)st.first_read_ns,
           b.t_last - b.t_first);
    return APP_EXIT_OK;
}

/* Median (and range) of one figure over the runs. */
struct spread {
    double med, lo, hi;
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static struct spread spread_of(const struct svc_figs *f, size_t runs, size_t off)
{
    double v[SVC_MAX_RUNS];
    struct spread s;

    for (size_t r = 0; r < runs; r++)
        memcpy(&v[r], (const char *)&f[r] + off, sizeof(double));
    qsort(v, runs, sizeof(double), cmp_double);
    s.lo = v[0];
    s.hi = v[runs - 1];
    s.med = runs % 2 ? v[runs / 2] : 0.5 * (v[runs / 2 - 1] + v[runs / 2]);
    return s;
}

#define SPREAD(f, runs, field) spread_of(f, runs, offsetof(struct svc_figs, field))

static void print_service(size_t windows, size_t d, size_t batch, bool binary, size_t runs,
                          const struct svc_figs *jl, const struct svc_figs *st, double parsed_cps,
                          double offline_cps)
{
    double coords = (double)windows * (double)d;
    struct spread w = SPREAD(jl, runs, wps), c = SPREAD(jl, runs, cps), sc = SPREAD(st, runs, cps);
    struct spread lc = SPREAD(jl, runs, loop_cpu), pc = SPREAD(jl, runs, proc_cpu);

    printf("  service: %zu windows x %zu coords (%s), gcdp.windows -> gcdp.released on the "
           "embedded broker, ledger on disk, batch %zu; median of %zu runs [min - max]\n",
           windows, d, binary ? "gcdp.window/3 binary" : "gcdp.window/2 JSON", batch, runs);
    printf("  %-30s %14.0f windows/s %14.0f coords/s [%.0f - %.0f]\n",
           "service (first read to last ack)", w.med, c.med, c.lo, c.hi);
    printf("  %-30s %14.0f coords/CPU-s of the service loop thread (%.3f s), %.0f per "
           "process CPU-s (%.3f s, broker threads included)\n",
           "service CPU", coords / lc.med, lc.med, coords / pc.med, pc.med);
    printf("  %-30s %14.0f coords/s (the same records decoded, released, no broker)\n",
           "offline path, parsed", parsed_cps);
    printf("  ratio service / offline parsed: %.4f (target >= 0.5: %s); service / "
           "offline pre-parsed (above): %.4f; >= 1000000 coords/s: %s\n",
           c.med / parsed_cps, c.med / parsed_cps >= 0.5 ? "MET" : "NOT MET", c.med / offline_cps,
           c.med >= 1e6 ? "MET" : "NOT MET");
    printf("  %-30s %14.0f windows/s %14.0f coords/s [%.0f - %.0f]; store / JSONL %.3f\n",
           "service, ledger store", SPREAD(st, runs, wps).med, sc.med, sc.lo, sc.hi,
           sc.med / c.med);
}

/* The ledger store's file and SQLite's write-ahead files beside it. */
static void remove_store(const char *store)
{
    char p[4300];

    remove(store);
    snprintf(p, sizeof(p), "%s-wal", store);
    remove(p);
    snprintf(p, sizeof(p), "%s-shm", store);
    remove(p);
}

/* runs pairs of service runs over the same records, each by a consumer group of its own on a
 * new ledger: the JSONL ledger, then the ledger store (issue 16's baseline: the JSONL path,
 * same run), interleaved so that a change of machine load falls on both. */
static int run_pairs(struct core_config *cfg, size_t windows, size_t d, size_t runs,
                     const char *theta_path, const char *ledger, const char *store,
                     struct svc_figs *jl, struct svc_figs *st)
{
    int ex = APP_EXIT_OK;
    char group[64];

    for (size_t r = 0; r < runs && ex == APP_EXIT_OK; r++) {
        remove(ledger);
        snprintf(group, sizeof(group), "gcdp-bench-release-%zu", r);
        ex = run_service(cfg, windows, theta_path, ledger, NULL, group, d, &jl[r]);
        remove(ledger);
        remove_store(store);
        snprintf(group, sizeof(group), "gcdp-bench-release-store-%zu", r);
        if (ex == APP_EXIT_OK)
            ex = run_service(cfg, windows, theta_path, ledger, store, group, d, &st[r]);
        remove(ledger);
        remove_store(store);
    }
    return ex;
}

int bench_release_service(const struct cal_theta *theta, size_t windows, size_t batch, size_t runs,
                          double offline_cps, bool binary, const char *dir)
{
    const char *topics[] = {"gcdp.windows",     "gcdp.released", "gcdp.windows.rejected",
                            "gcdp.calibration", "gcdp.control",  "gcdp.status"};
    struct core_broker *br = NULL;
    struct core_config *cfg = NULL;
    char eb[1024] = "", boot[300], theta_path[4200], ledger[4200], store[4200], bset[64];
    /* clang-format off */
    char *argv[] = {"bench", "--set", boot, "--set", "ingest.period_ms=1000",
                    "--set", "release.ledger.cap_eps=1e6", "--set", "release.drift.enabled=false",
                    "--set", bset, "--log-level", "warn", NULL};
    /* clang-format on */
    int argc = 13, ex = APP_EXIT_FAILURE;
    struct svc_figs jl[SVC_MAX_RUNS] = {0}, st[SVC_MAX_RUNS] = {0};
    double parsed_cps = 0;

    core_mem_tune_service(); /* as `gcdp release --serve` starts */
    snprintf(theta_path, sizeof(theta_path), "%s/bench-theta.json", dir);
    snprintf(ledger, sizeof(ledger), "%s/bench-service-ledger.jsonl", dir);
    snprintf(store, sizeof(store), "%s/bench-service-ledger.db", dir);
    remove(ledger);
    remove_store(store);
    if (core_broker_new(1, topics, 6, SVC_PARTITIONS, &br, eb, sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp bench release: embedded broker: %s\n", eb);
        return APP_EXIT_FAILURE;
    }
    snprintf(boot, sizeof(boot), "broker.bootstrap=%s", core_broker_bootstrap(br));
    snprintf(bset, sizeof(bset), "release.ledger.batch=%zu", batch); /* as the offline run */
    if (app_config_load(&argc, argv, &cfg) != CORE_OK)
        goto out;
    if (cal_theta_save_file(theta, theta_path, eb, sizeof(eb)) != CORE_OK ||
        produce_windows(cfg, theta->d, windows, binary, eb, sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp bench release: service setup: %s\n", eb);
        goto out;
    }
    parsed_cps = offline_parsed(cfg, theta, windows, binary, ledger);
    ex = run_pairs(cfg, windows, theta->d, runs, theta_path, ledger, store, jl, st);
    if (ex == APP_EXIT_OK) {
        size_t bj, bb;
        double uj = read_cost_us(theta, false, &bj), ub = read_cost_us(theta, true, &bb);
        print_service(windows, theta->d, batch, binary, runs, jl, st, parsed_cps, offline_cps);
        printf("  %-30s gcdp.window/3 %.1f us (%zu B), gcdp.window/2 JSON %.1f us (%zu B): "
               "%.1fx\n",
               "read + check one record (CPU)", ub, bb, uj, bj, ub > 0 ? uj / ub : 0.0);
    }
out:
    remove(ledger);
    remove_store(store);
    remove(theta_path);
    core_config_free(cfg);
    core_broker_free(br);
    return ex;
}
