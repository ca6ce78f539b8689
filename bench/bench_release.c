/* bench_release.c - `gcdp bench release`: released coordinates per second with secure noise
 * and the write-ahead ledger (group commit), against, in the same run, secure noise alone
 * and a plain non-secure loop (same projection, a constant added). Prints ratios. */
#include "bench.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app.h"
#include "cal/theta.h"
#include "core/dp_ledger.h"
#include "core/dp_mech.h"
#include "core/dp_rng.h"
#include "flags.h"
#include "help_texts.h"
#include "rel/plan.h"
#include "rel/release.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU seconds of the whole process (all threads): on a shared, overloaded machine the
 * wall-clock rate mostly measures the other tenants; the CPU rate is what this code costs. */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

struct timing {
    double wall, cpu;
};

/* Synthetic public θ: N nodes "c<i>", identity coordinates, a ring of edges. */
static core_err make_theta(size_t n, struct cal_theta **out)
{
    struct cal_theta *t = NULL;
    char name[32];
    core_err rc = cal_theta_new(n, n, &t);

    for (size_t m = 0; rc == CORE_OK && m < n; m++) {
        snprintf(name, sizeof(name), "c%zu.mean", m);
        rc = cal_theta_set_node(t, m, name);
        t->exposure[m] = (double)(m % 97) / 96.0;
        t->mu[m] = (double)(m % 13) / 12.0;
        t->xi_hat[m] = (double)(m % 7) / 70.0;
    }
    if (rc == CORE_OK)
        rc = cal_theta_set_identity_coords(t);
    if (rc != CORE_OK) {
        cal_theta_free(t);
        return rc;
    }
    *out = t;
    return CORE_OK;
}

static void fill_window(struct rel_window *w, const struct rel_plan *p, size_t n, uint32_t samples,
                        size_t i)
{
    if (!w->prof.from_record) { /* the provenance a record of this plan's profile states */
        rel_profile_copy(&w->prof, &p->prof);
        w->prof.from_record = true;
    }
    snprintf(w->device, sizeof(w->device), "bench");
    snprintf(w->id, sizeof(w->id), "bench|%zu", i);
    w->start = (int64_t)i * 60000;
    w->end = w->start + 60000;
    w->excluded = false;
    for (size_t m = 0; m < n; m++) {
        w->x[m] = (double)((m * 7919 + i * 31) % 1000) / 1000.0;
        w->obs[m] = (struct rel_node_obs){samples, samples, 0};
    }
}

static core_err count_bytes(void *arg, const char *bytes, size_t len, bool replayed)
{
    (void)bytes;
    (void)replayed;
    *(uint64_t *)arg += len + 1;
    return CORE_OK;
}

struct bench {
    size_t n, windows, batch, service_windows, service_runs;
    unsigned threads;
    const char *dir;
    struct rel_plan *plan;
    bool json_windows;             /* --window-format json: gcdp.window/2 in the service phase */
    size_t drift_seeds;            /* --drift S: the drift phase (bench/bench_release_drift.c) */
    struct bench_drift_mode drift; /* --drift-backlog, --drift-span */
};

static struct timing run_plain(struct bench *b, struct rel_window *w, double *y, double *sink)
{
    double t0 = now_s(), c0 = cpu_s(), acc = 0.0;
    for (size_t i = 0; i < b->windows; i++) {
        fill_window(w, b->plan, b->n, 30, i);
        for (size_t k = 0; k < b->n; k++) {
            double v = w->x[k] < 0.0 ? 0.0 : (w->x[k] > 1.0 ? 1.0 : w->x[k]);
            y[k] = v + 0.125;
        }
        acc += y[i % b->n];
    }
    *sink = acc;
    return (struct timing){now_s() - t0, cpu_s() - c0};
}

static struct timing run_noise(struct bench *b, struct rel_window *w, double *y, core_err *rc)
{
    double t0 = now_s(), c0 = cpu_s(), *out = calloc(b->n, sizeof(double)), *work = calloc(b->n, 8);
    *rc = out && work ? CORE_OK : CORE_ENOMEM;
    for (size_t i = 0; *rc == CORE_OK && i < b->windows; i++) {
        fill_window(w, b->plan, b->n, 30, i);
        for (size_t k = 0; k < b->n; k++)
            y[k] = w->x[k] < 0.0 ? 0.0 : (w->x[k] > 1.0 ? 1.0 : w->x[k]);
        *rc = rel_noise_apply(b->plan, core_rng_os(), b->threads, y, out, work);
    }
    free(out);
    free(work);
    return (struct timing){now_s() - t0, cpu_s() - c0};
}

static struct timing run_full(struct bench *b, struct rel_window *w, core_err *rc, uint64_t *bytes,
                              uint64_t *fsyncs, int use_store)
{
    char path[4200], db[4200], eb[1024] = "";
    struct core_dp_store_opts so = {.path = db};
    struct core_dp_ledger_opts lo = {path, {1e12, 0.0, 0.0}, 0, {60000, 0, 1000}};
    struct core_dp_ledger *l = NULL;
    struct rel_releaser *r = NULL;
    struct core_dp_ledger_stats st;
    double t0 = 0.0, c0 = 0.0;
    struct timing t;

    snprintf(path, sizeof(path), "%s/bench-ledger.jsonl", b->dir);
    snprintf(db, sizeof(db), "%s/bench-ledger.db", b->dir);
    remove(path);
    *rc = use_store ? core_dp_ledger_open_store(&lo, &so, &l, eb, sizeof(eb))
                    : core_dp_ledger_open(&lo, &l, eb, sizeof(eb));
    if (*rc == CORE_OK)
        *rc = rel_releaser_new(b->plan, l, core_rng_os(), b->batch, b->threads, &r);
    t0 = now_s();
    c0 = cpu_s();
    for (size_t i = 0; *rc == CORE_OK && i < b->windows; i++) {
        fill_window(w, b->plan, b->n, 30, i);
        *rc = rel_releaser_push(r, w, count_bytes, bytes, eb, sizeof(eb));
    }
    if (*rc == CORE_OK)
        *rc = rel_releaser_flush(r, count_bytes, bytes, eb, sizeof(eb));
    t = (struct timing){now_s() - t0, cpu_s() - c0};
    if (*rc != CORE_OK)
        fprintf(stderr, "gcdp bench release: %s (%s)\n", eb, core_errname(*rc));
    if (l) {
        core_dp_ledger_stats(l, &st);
        *fsyncs = st.fsyncs;
    }
    rel_releaser_free(r);
    core_dp_ledger_free(l);
    remove(path);
    remove(db);
    snprintf(db, sizeof(db), "%s/bench-ledger.db-wal", b->dir);
    remove(db);
    return t;
}

static int take_format(void *args, const char *arg)
{
    struct bench *b = args;

    if (strcmp(arg, "json") != 0 && strcmp(arg, "binary") != 0)
        return -1;
    b->json_windows = strcmp(arg, "json") == 0;
    return 0;
}

#define AT(f) APP_FLAG_AT(struct bench, f)

static const struct app_flag bench_flags[] = {
    {"coords", APP_FLAG_UINT, AT(n), .lo = 1, .hi = CAL_MAX_NODES},
    {"windows", APP_FLAG_UINT, AT(windows), .lo = 1, .hi = 4000000},
    {"batch", APP_FLAG_UINT, AT(batch), .lo = 1, .hi = 65536},
    {"threads", APP_FLAG_UINT, AT(threads), .lo = 1, .hi = 16},
    {"dir", APP_FLAG_STR, AT(dir)},
    {"service", APP_FLAG_UINT, AT(service_windows), .lo = 1, .hi = 4000000},
    {"service-runs", APP_FLAG_UINT, AT(service_runs), .lo = 1, .hi = 15},
    {"window-format", APP_FLAG_FN, .fn = take_format},
    {"drift", APP_FLAG_UINT, AT(drift_seeds), .lo = 1, .hi = 20},
    {"drift-backlog", APP_FLAG_TRUE, AT(drift.backlog)},
    {"drift-span", APP_FLAG_INT, AT(drift.span), .lo = 0, .hi = 2592000000.0},
    {.name = NULL},
};

#undef AT

static void report(const struct bench *b, struct timing tp, struct timing tn, struct timing tf,
                   uint64_t bytes, uint64_t fsyncs)
{
    double coords = (double)b->n * (double)b->windows;
    double rp = coords / tp.wall, rn = coords / tn.wall, rf = coords / tf.wall;
    printf("gcdp bench release: %zu windows x %zu coords (mechanism gcdp, eps_rel 1, "
           "batch %zu, %u noise threads)\n",
           b->windows, b->n, b->batch, b->threads);
    printf("  %-30s %14s %10s %16s\n", "", "coords/s", "wall s", "coords/CPU-s");
    printf("  %-30s %14.0f %10.3f %16.0f\n", "plain (constant, no ledger)", rp, tp.wall,
           coords / tp.cpu);
    printf("  %-30s %14.0f %10.3f %16.0f\n", "secure noise (no ledger)", rn, tn.wall,
           coords / tn.cpu);
    printf("  %-30s %14.0f %10.3f %16.0f  (%" PRIu64 " fsyncs, %.1f MB out)\n",
           "full: noise + ledger + JSON", rf, tf.wall, coords / tf.cpu, fsyncs,
           (double)bytes / 1e6);
    printf("  ratios (wall): noise/plain %.4f  full/plain %.4f  full/noise %.4f\n", rn / rp,
           rf / rp, rf / rn);
    printf("  target >= 1000000 coords/s (full, wall clock): %s\n", rf >= 1e6 ? "MET" : "NOT MET");
}

/* The benchmark's release plan: mechanism gcdp, eps_rel 1, Table 5's allocation, one window
 * a minute of 1 s readings (slot 60 s), over make_theta(n). */
core_err bench_release_plan(size_t n, struct cal_theta **theta, struct rel_plan **plan, char *eb,
                            size_t ebn)
{
    struct rel_opts o;
    memset(&o, 0, sizeof(o));
    o.mech = rel_mech_find("gcdp");
    o.eps_rel = 1.0;
    o.alloc = (struct rel_alloc_params){1.0, 1.0, 0.7, 1e-8, 0.0};
    o.query = (struct rel_query_params){10, 10000, 0};
    o.period_ms = 1000;
    o.slot_ms = 60000;
    o.cap = (struct core_dp_cost){1e12, 0.0, 0.0};
    core_err rc = make_theta(n, theta);
    if (rc == CORE_OK && (rc = rel_plan_new(*theta, &o, plan, eb, ebn)) != CORE_OK) {
        cal_theta_free(*theta);
        *theta = NULL;
    }
    return rc;
}

/* The full release path again on the ledger store (SQLite), against tf (JSONL). */
static void run_store(struct bench *b, struct rel_window *w, struct timing tf, core_err *rc)
{
    uint64_t sb = 0, sf = 0;
    double coords = (double)b->n * (double)b->windows;
    struct timing ts = run_full(b, w, rc, &sb, &sf, 1);

    if (*rc == CORE_OK)
        printf("  %-30s %14.0f %10.3f %16.0f  (%" PRIu64 " commits); store/JSONL %.3f wall, "
               "%.3f CPU\n",
               "full, ledger store (SQLite)", coords / ts.wall, ts.wall, coords / ts.cpu, sf,
               tf.wall / ts.wall, tf.cpu / ts.cpu);
}

static int bench_main(struct app_call *call)
{
    struct bench b = {.n = 1000,
                      .windows = 2000,
                      .batch = 64,
                      .service_runs = 3,
                      .threads = 2,
                      .drift = {.backlog = false, .span = -1}};
    struct cal_theta *theta = NULL;
    struct rel_window w;
    char eb[1024] = "", tmpl[] = "/tmp/gcdp-bench-XXXXXX";
    double *y = NULL, sink = 0.0;
    struct timing tp, tn, tf = {0, 0};
    uint64_t bytes = 0, fsyncs = 0;
    core_err rc;
    int ex = APP_EXIT_OK;

    if (app_flags_parse_only("bench release", bench_flags, call->argc, call->argv, &b, NULL) != 0)
        return APP_EXIT_USAGE;
    if (!b.dir && !(b.dir = mkdtemp(tmpl))) {
        fprintf(stderr, "gcdp bench release: cannot create a temporary directory\n");
        return APP_EXIT_FAILURE;
    }
    if (bench_release_plan(b.n, &theta, &b.plan, eb, sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp bench release: setup failed: %s\n", eb);
        return APP_EXIT_FAILURE;
    }
    rel_window_init(&w, theta);
    y = calloc(b.n, sizeof(*y));
    tp = run_plain(&b, &w, y, &sink);
    tn = run_noise(&b, &w, y, &rc);
    if (rc == CORE_OK)
        tf = run_full(&b, &w, &rc, &bytes, &fsyncs, 0);
    if (rc == CORE_OK)
        report(&b, tp, tn, tf, bytes, fsyncs);
    if (rc == CORE_OK) /* the same release path on the ledger store (SQLite) */
        run_store(&b, &w, tf, &rc);
    else
        ex = APP_EXIT_FAILURE;
    if (ex == APP_EXIT_OK && b.service_windows > 0)
        ex = bench_release_service(theta, b.service_windows, b.batch, b.service_runs,
                                   (double)b.n * (double)b.windows / tf.wall, !b.json_windows,
                                   b.dir);
    if (ex == APP_EXIT_OK)
        ex = bench_release_primitives(b.dir);
    if (ex == APP_EXIT_OK && b.drift_seeds > 0)
        ex = bench_release_drift(b.drift_seeds, &b.drift, b.dir);
    if (sink == -1.0)
        puts(""); /* keep the plain loop's result alive */
    core_rng_os_wipe();
    free(y);
    rel_window_cleanup(&w);
    rel_plan_free(b.plan);
    cal_theta_free(theta);
    if (b.dir == tmpl)
        remove(tmpl);
    return ex;
}

/* Settings from its flags only: no common options, no configuration. */
const struct app_command app_bench_release = {
    .name = "release",
    .summary = "released coordinates/s with secure noise and the ledger",
    .help = app_help_bench_release,
    .options = bench_flags,
    .run = bench_main,
    .flags = APP_CMD_NO_CONFIG,
};
