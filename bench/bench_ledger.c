/* bench_ledger.c - `gcdp bench ledger`: the privacy ledger over a simulated day of a
 * deployment (devices x one window a minute), the JSONL back end (today's path: everything
 * in memory, the file read whole at open) as the baseline and the store back end
 * (core_dp_ledger_open_store) in the same run. Each back end runs in its own child process so
 * that its peak RSS is its own. Figures: releases/s (charge + group commit, the ledger part
 * of the release path), RSS after the first simulated hour and at the end, restart-to-ready
 * after one release and after the whole history, disk per release. */
#include "bench.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "cal/theta.h"
#include "core/dp_ledger.h"
#include "core/dp_rng.h"
#include "flags.h"
#include "help_texts.h"
#include "rel/release.h"

struct lbench {
    long devices, minutes, batch, horizon_min, base_minutes, release_d;
    const char *dir;
};

struct lresult {
    double secs, rate, cpu_rate, restart1_s, restart_s, restart_cpu_s, last_rate, last_cpu_rate;
    long rss_hour_kb, rss_end_kb, peak_kb;
    uint64_t releases, live, db_bytes, audit_bytes, index_ids, index_bytes, store_reads;
    int ok;
};

static double mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* CPU seconds of this process: the machines are shared, and wall-clock rates of an
 * fsync-bound loop mostly measure the other tenants' disk traffic. */
static double cpu(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static long status_kb(const char *key)
{
    char line[256];
    long v = -1;
    size_t kl = strlen(key);
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, key, kl) == 0)
            v = strtol(line + kl, NULL, 10);
    if (f)
        fclose(f);
    return v;
}

static uint64_t file_bytes(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static core_err lopen(const char *audit, const char *store, int64_t horizon_ms,
                      struct core_dp_ledger **l)
{
    struct core_dp_ledger_opts o;
    struct core_dp_store_opts so = {
        .path = store, .replay_horizon_ms = horizon_ms, .compact_step_ms = horizon_ms / 4};
    char eb[1024] = "";
    core_err rc;
    memset(&o, 0, sizeof(o));
    o.path = audit;
    o.cap = (struct core_dp_cost){1e12, 1e12, 1};
    o.scheme = (struct core_dp_scheme){60000, 0, 1000};
    o.max_tracked = (size_t)1 << 40; /* the baseline must not stop at the default cap */
    rc = store ? core_dp_ledger_open_store(&o, &so, l, eb, sizeof(eb))
               : core_dp_ledger_open(&o, l, eb, sizeof(eb));
    if (rc != CORE_OK)
        fprintf(stderr, "gcdp bench ledger: open: %s (%s)\n", eb, core_errname(rc));
    return rc;
}

/* One minute of releases: every device's window, B per group commit. */
static core_err minute(struct core_dp_ledger *l, const struct lbench *b, long m, const uint8_t *out,
                       size_t out_len)
{
    static char ids[65536][48];
    const char *idp[65536];
    const void *bp[65536];
    size_t lens[65536], k = 0;
    const struct core_dp_cost c = {0.01, 0, 0};
    core_err rc = CORE_OK;

    for (long d = 0; rc == CORE_OK && d < b->devices; d++) {
        char unit[48];
        snprintf(ids[k], sizeof(ids[k]), "dev%06ld|%ld|bench", d, m * 60000);
        snprintf(unit, sizeof(unit), "dev%06ld|%ld", d, m);
        const char *u[1] = {unit};
        rc = core_dp_ledger_charge(l, ids[k], "gcdp", u, 1, &c, "{\"d\":10}");
        idp[k] = ids[k];
        bp[k] = out;
        lens[k++] = out_len;
        if (rc == CORE_OK && (k == (size_t)b->batch || d + 1 == b->devices)) {
            rc = core_dp_ledger_commit_batch(l, k, idp, bp, lens);
            k = 0;
        }
    }
    return rc;
}

/* --release D: the release path's objects (bench_release_plan's plan over D nodes). */
struct rwork {
    struct cal_theta *theta;
    struct rel_plan *plan;
    struct rel_releaser *r;
    struct rel_window w;
    uint64_t bytes;
};

static core_err count_bytes(void *arg, const char *bytes, size_t len, bool replayed)
{
    (void)bytes;
    (void)replayed;
    *(uint64_t *)arg += len + 1;
    return CORE_OK;
}

static core_err rwork_new(struct rwork *rw, const struct lbench *b, struct core_dp_ledger *l)
{
    char eb[512] = "";
    core_err rc = bench_release_plan((size_t)b->release_d, &rw->theta, &rw->plan, eb, sizeof(eb));
    if (rc == CORE_OK) {
        rel_window_init(&rw->w, rw->theta);
        rel_profile_copy(&rw->w.prof, &rw->plan->prof); /* what a record of the plan states */
        rw->w.prof.from_record = true;
        rc = rel_releaser_new(rw->plan, l, core_rng_os(), (size_t)b->batch, 1, &rw->r);
    }
    if (rc != CORE_OK)
        fprintf(stderr, "gcdp bench ledger: release setup: %s (%s)\n", eb, core_errname(rc));
    return rc;
}

static void rwork_free(struct rwork *rw)
{
    rel_releaser_free(rw->r);
    if (rw->theta)
        rel_window_cleanup(&rw->w);
    rel_plan_free(rw->plan);
    cal_theta_free(rw->theta);
}

/* One minute through the release path: every device's d = D window, released. */
static core_err minute_release(struct rwork *rw, const struct lbench *b, long m)
{
    char eb[512] = "";
    core_err rc = CORE_OK;
    for (long d = 0; rc == CORE_OK && d < b->devices; d++) {
        snprintf(rw->w.device, sizeof(rw->w.device), "dev%06ld", d);
        snprintf(rw->w.id, sizeof(rw->w.id), "dev%06ld|%ld|bench", d, m * 60000);
        rw->w.start = (int64_t)m * 60000;
        rw->w.end = rw->w.start + 60000;
        for (long k = 0; k < b->release_d; k++) {
            rw->w.x[k] = (double)((k * 7919 + d * 31 + m) % 1000) / 1000.0;
            rw->w.obs[k] = (struct rel_node_obs){30, 30, 0};
        }
        rc = rel_releaser_push(rw->r, &rw->w, count_bytes, &rw->bytes, eb, sizeof(eb));
    }
    if (rc == CORE_OK)
        rc = rel_releaser_flush(rw->r, count_bytes, &rw->bytes, eb, sizeof(eb));
    if (rc != CORE_OK)
        fprintf(stderr, "gcdp bench ledger: release: %s (%s)\n", eb, core_errname(rc));
    return rc;
}

/* Wall seconds of an open (and, with cpu_s, its CPU seconds: the figure a loaded machine
 * does not inflate). */
static double timed_open(const char *audit, const char *store, int64_t horizon_ms, double *cpu_s)
{
    struct core_dp_ledger *l = NULL;
    double t0 = mono(), c0 = cpu();
    if (lopen(audit, store, horizon_ms, &l) != CORE_OK)
        return -1.0;
    t0 = mono() - t0;
    if (cpu_s)
        *cpu_s = cpu() - c0;
    core_dp_ledger_free(l);
    return t0;
}

/* Restart-to-ready of a ledger holding one release. */
static double restart_one(const struct lbench *b, int use_store, const uint8_t *out)
{
    char audit[4200], store[4200];
    struct core_dp_ledger *l = NULL;
    struct lbench one = *b;
    one.devices = 1;
    snprintf(audit, sizeof(audit), "%s/one-%d.jsonl", b->dir, use_store);
    snprintf(store, sizeof(store), "%s/one-%d.db", b->dir, use_store);
    if (lopen(audit, use_store ? store : NULL, 0, &l) != CORE_OK ||
        minute(l, &one, 0, out, 740) != CORE_OK) {
        core_dp_ledger_free(l);
        return -1.0;
    }
    core_dp_ledger_free(l);
    return timed_open(audit, use_store ? store : NULL, 0, NULL);
}

static void run_one(const struct lbench *b, int use_store, struct lresult *r)
{
    char audit[4200], store[4200], wal[4300];
    struct core_dp_ledger *l = NULL;
    struct core_dp_ledger_stats st;
    uint8_t out[740];
    long mins = use_store ? b->minutes : b->base_minutes;
    int64_t horizon = (int64_t)b->horizon_min * 60000;
    core_err rc;

    for (size_t i = 0; i < sizeof(out); i++)
        out[i] = (uint8_t)(' ' + i % 90);
    snprintf(audit, sizeof(audit), "%s/%s.jsonl", b->dir, use_store ? "store-audit" : "jsonl");
    snprintf(store, sizeof(store), "%s/store.db", b->dir);
    snprintf(wal, sizeof(wal), "%s-wal", store);
    struct rwork rw = {0};
    r->restart1_s = restart_one(b, use_store, out);
    rc = lopen(audit, use_store ? store : NULL, horizon, &l);
    if (rc == CORE_OK && b->release_d > 0)
        rc = rwork_new(&rw, b, l);
    long last = mins > 60 ? mins - 60 : 0; /* the last simulated hour starts here */
    double t0 = mono(), c0 = cpu(), tl = t0, cl = c0;
    for (long m = 0; rc == CORE_OK && m < mins; m++) {
        if (m == last) {
            tl = mono();
            cl = cpu();
        }
        rc = b->release_d > 0 ? minute_release(&rw, b, m) : minute(l, b, m, out, sizeof(out));
        if (rc == CORE_OK)
            rc = core_dp_ledger_advance(l, (m + 1) * 60000, 0); /* JSONL: a no-op */
        if (m == 59)
            r->rss_hour_kb = status_kb("VmRSS:");
    }
    r->secs = mono() - t0;
    r->cpu_rate = (double)(b->devices * mins) / (cpu() - c0);
    r->last_rate = (double)(b->devices * (mins - last)) / (mono() - tl);
    r->last_cpu_rate = (double)(b->devices * (mins - last)) / (cpu() - cl);
    rwork_free(&rw);
    r->rss_end_kb = status_kb("VmRSS:");
    r->peak_kb = status_kb("VmHWM:");
    r->ok = rc == CORE_OK;
    if (l) {
        core_dp_ledger_stats(l, &st);
        r->releases = (uint64_t)(b->devices * mins);
        r->live = st.releases;
        r->index_ids = st.index_ids;
        r->index_bytes = st.index_bytes;
        r->store_reads = st.id_store_reads;
        r->rate = (double)(b->devices * mins) / r->secs;
    }
    core_dp_ledger_free(l);
    r->restart_s =
        r->ok ? timed_open(audit, use_store ? store : NULL, horizon, &r->restart_cpu_s) : -1.0;
    r->db_bytes = use_store ? file_bytes(store) + file_bytes(wal) : 0;
    r->audit_bytes = file_bytes(audit);
}

/* Run a back end in a child; its result comes back through a pipe. */
static int in_child(const struct lbench *b, int use_store, struct lresult *r)
{
    int fds[2], st;
    memset(r, 0, sizeof(*r));
    if (pipe(fds) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        run_one(b, use_store, r);
        _exit(write(fds[1], r, sizeof(*r)) == (ssize_t)sizeof(*r) ? 0 : 1);
    }
    close(fds[1]);
    ssize_t got = pid > 0 ? read(fds[0], r, sizeof(*r)) : -1;
    close(fds[0]);
    if (pid > 0)
        waitpid(pid, &st, 0);
    return got == (ssize_t)sizeof(*r) && r->ok ? 0 : -1;
}

static double mb(uint64_t bytes)
{
    return (double)bytes / 1e6;
}

static void print_result(const char *name, const struct lbench *b, const struct lresult *r,
                         long mins)
{
    double hour = (double)r->rss_hour_kb / 1024.0, end = (double)r->rss_end_kb / 1024.0;
    printf("  %-6s %9" PRIu64 " releases (%ld min): %8.0f rel/s wall, %8.0f rel/CPU-s; RSS "
           "hour 1 %6.1f MB, end %6.1f MB (peak %6.1f MB, end/hour1 %.2f); restart: 1 release "
           "%.4f s, all %.4f s (%.4f CPU-s)\n",
           name, r->releases, mins, r->rate, r->cpu_rate, hour, end, (double)r->peak_kb / 1024.0,
           hour > 0 ? end / hour : 0.0, r->restart1_s, r->restart_s, r->restart_cpu_s);
    printf("         %s: %8.0f rel/s wall, %8.0f rel/CPU-s\n",
           mins > 60 ? "last simulated hour" : "whole run (an hour or less)", r->last_rate,
           r->last_cpu_rate);
    if (r->db_bytes)
        printf("         store: %" PRIu64 " live releases (horizon %ld min), %.1f MB "
               "(%.0f B per live release); audit log %.1f MB (%.0f B per release)\n",
               r->live, b->horizon_min, mb(r->db_bytes),
               r->live ? mb(r->db_bytes) * 1e6 / (double)r->live : 0.0, mb(r->audit_bytes),
               mb(r->audit_bytes) * 1e6 / (double)r->releases);
    if (r->db_bytes)
        printf("         memory id index: %" PRIu64 " recent ids, %.1f MB; %" PRIu64
               " ids looked up in the store\n",
               r->index_ids, mb(r->index_bytes), r->store_reads);
    if (!r->db_bytes)
        printf("         file: %.1f MB (%.0f B per release)\n", mb(r->audit_bytes),
               mb(r->audit_bytes) * 1e6 / (double)r->releases);
}

#define AT(f) APP_FLAG_AT(struct lbench, f)

static const struct app_flag bench_flags[] = {
    {"devices", APP_FLAG_INT, AT(devices), .lo = 1, .hi = 999999},
    {"minutes", APP_FLAG_INT, AT(minutes), .lo = 1, .hi = 100000000},
    {"batch", APP_FLAG_INT, AT(batch), .lo = 1, .hi = 65536},
    {"horizon-min", APP_FLAG_INT, AT(horizon_min), .lo = 0, .hi = 100000000},
    {"baseline-minutes", APP_FLAG_INT, AT(base_minutes), .lo = 1, .hi = 100000000},
    {"release", APP_FLAG_INT, AT(release_d), .lo = 1, .hi = 4096},
    {"dir", APP_FLAG_STR, AT(dir)},
    {.name = NULL},
};

#undef AT

static int parse(int argc, char **argv, struct lbench *b)
{
    if (app_flags_parse_only("bench ledger", bench_flags, argc, argv, b, NULL) != 0)
        return APP_EXIT_USAGE;
    if (b->base_minutes == 0 || b->base_minutes > b->minutes)
        b->base_minutes = b->minutes;
    return APP_EXIT_OK;
}

static int bench_main(struct app_call *call)
{
    struct lbench b = {10000, 1440, 256, 60, 0, 0, NULL};
    struct lresult base, st;
    char tmpl[] = "/tmp/gcdp-bench-ledger-XXXXXX", cmd[600];
    int ex = parse(call->argc, call->argv, &b);

    if (ex != APP_EXIT_OK)
        return ex;
    if (!b.dir && !(b.dir = mkdtemp(tmpl))) {
        fprintf(stderr, "gcdp bench ledger: cannot create a temporary directory\n");
        return APP_EXIT_FAILURE;
    }
    if (b.release_d > 0)
        printf("gcdp bench ledger: %ld devices x %ld minutes, batch %ld, the release path "
               "(d = %ld windows, secure noise, JSON records), in %s\n",
               b.devices, b.minutes, b.batch, b.release_d, b.dir);
    else
        printf("gcdp bench ledger: %ld devices x %ld minutes, batch %ld, d = 10 (740-byte "
               "outputs), in %s\n",
               b.devices, b.minutes, b.batch, b.dir);
    fflush(stdout);
    if (in_child(&b, 0, &base) == 0) {
        print_result("jsonl", &b, &base, b.base_minutes);
        fflush(stdout);
    }
    if (!base.ok || in_child(&b, 1, &st) != 0) {
        fprintf(stderr, "gcdp bench ledger: a run failed\n");
        ex = APP_EXIT_FAILURE;
    } else {
        print_result("store", &b, &st, b.minutes);
        printf("  store/jsonl throughput %.3f wall, %.3f CPU (target >= 0.8); last hour of each "
               "%.3f wall, %.3f CPU%s\n  ",
               st.rate / base.rate, st.cpu_rate / base.cpu_rate, st.last_rate / base.last_rate,
               st.last_cpu_rate / base.last_cpu_rate,
               b.base_minutes == b.minutes ? " (the same simulated hour)" : "");
        if (st.rss_hour_kb > 0)
            printf("store RSS end/hour 1 %.3f (target <= 1.2); ",
                   (double)st.rss_end_kb / (double)st.rss_hour_kb);
        else
            printf("store RSS end/hour 1: n/a (fewer than 60 minutes simulated); ");
        printf("store restart with history %.4f s, %.4f CPU-s (target <= 2 s)\n", st.restart_s,
               st.restart_cpu_s);
    }
    if (b.dir == tmpl && snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpl) > 0 && system(cmd))
        fprintf(stderr, "gcdp bench ledger: could not remove %s\n", tmpl);
    return ex;
}

/* Settings from its flags only: no common options, no configuration. */
const struct app_command app_bench_ledger = {
    .name = "ledger",
    .summary = "the ledger over a simulated day: JSONL (baseline) vs store",
    .help = app_help_bench_ledger,
    .options = bench_flags,
    .run = bench_main,
    .flags = APP_CMD_NO_CONFIG,
};
