#define _GNU_SOURCE /* RUSAGE_THREAD: per-thread context switches */
/* bench_ingest.c - `gcdp bench ingest`: readings/s through the ingest service on the
 * embedded broker, against a bare librdkafka consumer draining the same topic in the same
 * run, plus peak RSS.
 *
 * Phases, each in a forked child so its peak RSS (wait4 ru_maxrss) is its own and no
 * librdkafka thread exists in the parent when it forks:
 *   0. `gcdp broker` child process (the embedded broker, as in production use of it).
 *   1. preload: N simulator-like gcdp.reading/1 JSON readings of D devices (key = device,
 *      one reading per device per ingest.period_ms) into a fresh topic, zstd-compressed so
 *      the mock's 5 MiB-per-partition retention keeps all of them (checked: the low
 *      watermark of every partition must still be 0, otherwise the run is refused).
 *   2. baseline: a bare librdkafka consumer-group member polls all N messages (no parsing).
 *   3. ingest: the real service (ing/service.h) on a libuv loop, end to end: every reading
 *      validated and windowed, windows produced to a fresh windows topic and acknowledged.
 *   4. engine: ing_engine_push alone on the same readings, no Kafka (JSON generated per
 *      chunk beforehand; only the pushes are timed, wall and thread CPU), with the
 *      configured decoder (ingest.decoder, default simdjson) and with the jansson reference.
 *   5. decoders alone: ing_engine_decode_only on the same payloads (the stateless checks
 *      and nothing else), thread CPU per reading: the fast decoder vs the jansson reference.
 *   6. group: two ingest services in one consumer group on a fresh copy of the topic
 *      (each in its own process): aggregate rate, and each member's share and loop-thread
 *      CPU per reading.
 * Each phase also reports the CPU time of its measuring thread and its context switches
 * over the measured interval (wall vs CPU: waiting for data vs a loaded machine).
 * Rates are measured from the first message received to the last one (group-join time
 * excluded from both), and for ingest until every window produced so far is acknowledged.
 */
#include "bench.h"

#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <uv.h>

#include "app.h"
#include "core/kafka.h"
#include "core/kconf.h"
#include "core/ksync.h"
#include "core/log.h"
#include "core/mem.h"
#include "flags.h"
#include "help_texts.h"
#include "ing/engine.h"
#include "ing/service.h"

struct bench_opts {
    long long readings;
    long devices;
    long partitions;
    int repeat;
    bool core_only;      /* --core-only: preload, bare consumer and ingest only */
    long long period_ms; /* ingest.period_ms: the readings' spacing per device */
};

/* What a phase child reports to the parent through a pipe. */
struct phase_result {
    int ok;
    long long messages;
    double seconds;
    long long windows;
    double cpu;              /* CPU seconds of the measuring thread over the same interval */
    double cpu_proc;         /* CPU seconds of the whole phase process over the interval */
    double t_first, t_last;  /* CLOCK_MONOTONIC of the first and last message (group phase) */
    long long both_consumed; /* group phase: consumed when both members were consuming */
    double both_at;
    long vcsw, ivcsw;         /* voluntary (waited) / involuntary (preempted) context switches */
    long long nudges;         /* ingest: prefetch refill nudges (core_kconsumer_set_refill) */
    long long holds, held_ms; /* ingest: intake holds for unacknowledged output, their time */
    double loop_idle;         /* ingest: seconds the loop waited in the kernel for events */
    char err[256];
};

/* CPU time and context switches of the calling thread, and CPU time of the process. */
struct cpu_mark {
    double thread, proc;
    long vcsw, ivcsw;
};

static double clock_s(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void cpu_mark_take(struct cpu_mark *m)
{
    struct rusage ru;
    memset(&ru, 0, sizeof(ru));
    getrusage(RUSAGE_THREAD, &ru);
    m->thread = clock_s(CLOCK_THREAD_CPUTIME_ID);
    m->proc = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    m->vcsw = ru.ru_nvcsw;
    m->ivcsw = ru.ru_nivcsw;
}

static void cpu_mark_diff(const struct cpu_mark *a, const struct cpu_mark *b,
                          struct phase_result *r)
{
    r->cpu = b->thread - a->thread;
    r->cpu_proc = b->proc - a->proc;
    r->vcsw = b->vcsw - a->vcsw;
    r->ivcsw = b->ivcsw - a->ivcsw;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------------------------ */
/* Phase 1: preload */

/* Reading i: device i % D, tick i / D (one reading per device per ingest.period_ms of
 * simulated time from 2026-11-01T00:00:00Z, on the window grid); deterministic in-domain
 * values.
 * Returns the key length. */
static int reading_json(const struct bench_opts *o, long long i, char *key, size_t kn, char *val,
                        size_t vn)
{
    long dev = (long)(i % o->devices);
    long long tick = i / o->devices;
    int kl = snprintf(key, kn, "mote-%ld", dev);
    snprintf(val, vn,
             "{\"schema\":\"gcdp.reading/1\",\"device\":\"%s\",\"ts\":%lld,\"seq\":%lld,"
             "\"readings\":{\"temperature\":%.2f,\"humidity\":%.2f,\"light\":%.1f,"
             "\"voltage\":%.3f}}",
             key, 1793491200000LL + tick * o->period_ms, tick, 18.0 + (double)((i * 7) % 100) * 0.1,
             30.0 + (double)(dev % 40), (double)((tick * 13) % 1500),
             2.4 + (double)(dev % 50) * 0.01);
    return kl;
}

static int preload(const struct core_config *cfg, const struct bench_opts *o, const char *topic,
                   struct phase_result *r)
{
    static const char *const extra[] = {
        "compression.type", "zstd", "linger.ms", "20", "queue.buffering.max.messages",
        "1000000",          NULL};
    struct core_ksync_opts ko = {.topic = topic, .extra = extra};
    struct core_ksync *ks = NULL;
    rd_kafka_t *rk;
    uint64_t left = 0;
    char eb[512], key[32], val[320];

    if (core_ksync_new(cfg, &ko, &ks, eb, sizeof(eb)) != CORE_OK) {
        snprintf(r->err, sizeof(r->err), "%.200s", eb);
        return -1;
    }
    rk = core_ksync_handle(ks);
    double t = now_s();
    r->ok = 1;
    for (long long i = 0; i < o->readings; i++) {
        int kl = reading_json(o, i, key, sizeof(key), val, sizeof(val));
        if (core_ksync_send(ks, key, (size_t)kl, val, strlen(val), NULL, NULL, 0, eb, sizeof(eb)) !=
            CORE_OK) {
            r->ok = 0;
            break;
        }
    }
    if (r->ok)
        r->ok = core_ksync_flush(ks, 60000, &left, eb, sizeof(eb)) == CORE_OK;
    r->seconds = now_s() - t;
    r->messages = o->readings;
    if (!r->ok)
        snprintf(r->err, sizeof(r->err), "preload: %.200s", eb);
    /* Retention check: nothing may have been evicted. */
    for (int p = 0; r->ok && p < o->partitions; p++) {
        int64_t lo = -1, hi = -1;
        if (rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &hi, 10000) != 0 || lo != 0) {
            r->ok = 0;
            snprintf(r->err, sizeof(r->err),
                     "partition %d lost data to the mock's 5 MiB retention (low watermark "
                     "%" PRId64 "); use more --partitions or fewer --readings",
                     p, lo);
        }
    }
    core_ksync_free(ks);
    return r->ok ? 0 : -1;
}

/* ------------------------------------------------------------------------------------ */
/* Phase 2: bare consumer */

static int bare_consume(const struct core_config *cfg, const struct bench_opts *o,
                        const char *topic, const char *group, struct phase_result *r)
{
    rd_kafka_t *rk;
    rd_kafka_topic_partition_list_t *sub;
    char eb[512];
    long long n = 0;
    double first = 0, last = 0, deadline = now_s() + 120;
    struct cpu_mark c0 = {0}, c1 = {0}; /* taken at the first and the last message */

    if (core_kafka_client_new(cfg, CORE_KAFKA_CONSUMER, group, NULL, NULL, NULL, &rk, eb,
                              sizeof(eb)) != CORE_OK) {
        snprintf(r->err, sizeof(r->err), "%.200s", eb);
        return -1;
    }
    rd_kafka_poll_set_consumer(rk);
    sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_subscribe(rk, sub);
    rd_kafka_topic_partition_list_destroy(sub);
    while (n < o->readings && now_s() < deadline) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (!m)
            continue;
        if (!m->err) {
            if (n++ == 0) {
                first = now_s();
                cpu_mark_take(&c0);
            }
            last = now_s();
            if (n == o->readings)
                cpu_mark_take(&c1);
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    if (n == o->readings)
        cpu_mark_diff(&c0, &c1, r);
    r->messages = n;
    r->seconds = last - first;
    r->ok = n == o->readings;
    if (!r->ok)
        snprintf(r->err, sizeof(r->err), "bare consumer got %lld of %lld", n, o->readings);
    return r->ok ? 0 : -1;
}

/* ------------------------------------------------------------------------------------ */
/* Phase 3: the ingest service */

/* What the two members of the group phase share (MAP_SHARED, set up before they fork). */
struct group_shared {
    _Atomic long long consumed[2];
    _Atomic long long progress_us[2]; /* CLOCK_MONOTONIC of each member's last new message */
};

/* Each member's count and time when it first saw both members consuming (steady state:
 * after the rebalance that the second member's join causes). */
struct group_snap {
    long long consumed;
    double at;
};

struct ing_bench {
    uv_loop_t loop;
    uv_timer_t watch;
    struct ing_service *svc;
    const struct bench_opts *o;
    double first, last, deadline;
    bool stopped;
    struct cpu_mark c0, c1;
    uint64_t idle0, idle1; /* uv_metrics_idle_time at c0 / c1 */
    struct phase_result *r;
    struct group_shared *g; /* group phase: NULL otherwise */
    int member;             /* 0 or 1 in the group phase */
    uint64_t seen;          /* consumed at the previous watch */
};

static void ib_done(void *arg, core_err status)
{
    struct ing_bench *b = arg;
    if (status != CORE_OK)
        snprintf(b->r->err, sizeof(b->r->err), "ingest stopped: %s", core_strerror(status));
    uv_close((uv_handle_t *)&b->watch, NULL);
}

/* 1 ms watch: first message time; end when all N are consumed and every record produced
 * so far is acknowledged. */
static void ib_watch(uv_timer_t *t)
{
    struct ing_bench *b = t->data;
    struct ing_service_stats st;
    double now = now_s();

    ing_service_stats(b->svc, &st);
    if (b->first == 0 && st.consumed > 0) {
        b->first = now;
        cpu_mark_take(&b->c0); /* the watch runs on the service's loop thread */
        b->idle0 = uv_metrics_idle_time(&b->loop);
    }
    if (b->stopped)
        return;
    if (b->g) { /* group phase: done when the group has consumed all N and gone quiet */
        long long total;
        bool quiet;
        if (st.consumed != b->seen) {
            b->seen = st.consumed;
            b->last = now;
            cpu_mark_take(&b->c1);
            b->g->progress_us[b->member] = (long long)(now * 1e6);
        }
        b->g->consumed[b->member] = (long long)st.consumed;
        if (b->r->both_at == 0 && b->g->progress_us[0] && b->g->progress_us[1]) {
            b->r->both_at = now;
            b->r->both_consumed = (long long)st.consumed;
        }
        total = b->g->consumed[0] + b->g->consumed[1];
        quiet = now * 1e6 - (double)b->g->progress_us[0] > 500000 &&
                now * 1e6 - (double)b->g->progress_us[1] > 500000;
        if (total >= b->o->readings && quiet &&
            st.windows_out + st.rejected_out + st.produce_errors >= st.produced) {
            b->stopped = true;
            ing_service_stop(b->svc);
        } else if (now > b->deadline) {
            b->stopped = true;
            snprintf(b->r->err, sizeof(b->r->err), "group member did not finish within 300 s");
            ing_service_stop(b->svc);
        }
        return;
    }
    if (st.consumed >= (uint64_t)b->o->readings &&
        st.windows_out + st.rejected_out + st.produce_errors >= st.produced) {
        b->last = now;
        b->stopped = true;
        cpu_mark_take(&b->c1);
        b->idle1 = uv_metrics_idle_time(&b->loop);
        ing_service_stop(b->svc);
    } else if (now > b->deadline) {
        b->last = now;
        b->stopped = true;
        snprintf(b->r->err, sizeof(b->r->err), "ingest did not finish within 300 s");
        ing_service_stop(b->svc);
    }
}

static int ingest_run(struct core_config *cfg, const struct bench_opts *o, const char *group,
                      struct group_shared *g, int member, struct phase_result *r)
{
    struct ing_bench b;
    struct ing_service_opts so = {group, 1000, 0, false, ib_done, &b};
    struct ing_service_stats st;
    char eb[512];

    memset(&b, 0, sizeof(b));
    b.o = o;
    b.r = r;
    b.g = g;
    b.member = member;
    b.deadline = now_s() + 300;
    uv_loop_init(&b.loop);
    uv_loop_configure(&b.loop, UV_METRICS_IDLE_TIME); /* time spent waiting for events */
    if (ing_service_new(&b.loop, cfg, &so, NULL, &b.svc, eb, sizeof(eb)) != CORE_OK) {
        snprintf(r->err, sizeof(r->err), "%.200s", eb);
        uv_run(&b.loop, UV_RUN_DEFAULT);
        return -1;
    }
    uv_timer_init(&b.loop, &b.watch);
    b.watch.data = &b;
    uv_timer_start(&b.watch, ib_watch, 1, 1);
    uv_run(&b.loop, UV_RUN_DEFAULT);
    ing_service_stats(b.svc, &st);
    r->messages = (long long)st.consumed;
    r->windows = (long long)st.windows_out;
    r->nudges = (long long)st.refill_nudges;
    r->holds = (long long)st.output_holds;
    r->held_ms = (long long)st.output_held_ms;
    r->seconds = b.last - b.first;
    r->t_first = b.first;
    r->t_last = b.last;
    cpu_mark_diff(&b.c0, &b.c1, r);
    r->loop_idle = b.idle1 > b.idle0 ? (double)(b.idle1 - b.idle0) * 1e-9 : 0;
    r->ok = (g ? st.consumed > 0 : st.consumed == (uint64_t)o->readings) && st.offset_gaps == 0 &&
            !r->err[0];
    if (!r->err[0] && !r->ok)
        snprintf(r->err, sizeof(r->err), "ingest consumed %llu of %lld (gaps %llu)",
                 (unsigned long long)st.consumed, o->readings, (unsigned long long)st.offset_gaps);
    ing_service_free(b.svc);
    uv_run(&b.loop, UV_RUN_DEFAULT);
    uv_loop_close(&b.loop);
    return r->ok ? 0 : -1;
}

/* ------------------------------------------------------------------------------------ */
/* Phase 4: the engine alone (no Kafka), same readings, to show where the time goes. */

static void discard_window(void *arg, const char *k, size_t kl, const char *j, size_t jl,
                           const struct ing_window_info *info)
{
    (void)k, (void)kl, (void)j, (void)jl, (void)info;
    (*(long long *)arg)++;
}

enum eng_mode {
    EM_PUSH,     /* ing_engine_push, the configured decoder (ingest.decoder) */
    EM_PUSH_REF, /* ing_engine_push with ingest.decoder=jansson */
    EM_DEC_FAST, /* ing_engine_decode_only: the fast decoder alone */
    EM_DEC_REF   /* ing_engine_decode_only: the jansson reference alone */
};

/* The engine for mode (its decoder as the mode says), or NULL with r->err set. */
static struct ing_engine *engine_for(const struct core_config *cfg, struct phase_result *r,
                                     enum eng_mode mode)
{
    struct ing_params p;
    struct ing_engine *e = NULL;
    char eb[512];

    if (ing_params_from_config(cfg, &p, eb, sizeof(eb)) == CORE_OK) {
        if (mode == EM_PUSH_REF)
            p.decoder = ING_DECODER_JANSSON;
        if (mode == EM_DEC_FAST)
            p.decoder = ING_DECODER_SIMDJSON;
        e = ing_engine_new(&p, eb, sizeof(eb));
    }
    if (!e)
        snprintf(r->err, sizeof(r->err), "%.200s", eb);
    return e;
}

/* Readings base..base+n-1 (their JSON in val[], keys in key[], kl[]) through the engine as
 * mode says; false with r->err set when the engine refuses one. */
static bool push_chunk(struct ing_engine *e, const struct bench_opts *o, enum eng_mode mode,
                       long long base, long long n, char (*key)[32], char (*val)[320],
                       const int *kl, struct ing_sink *sink, struct phase_result *r)
{
    for (long long j = 0; j < n; j++) {
        long long i = base + j;
        struct ing_source src = {"bench", (int32_t)(i % o->partitions), i / o->partitions};
        bool ok = mode >= EM_DEC_FAST
                      ? ing_engine_decode_only(e, val[j], strlen(val[j]), key[j], (size_t)kl[j],
                                               mode == EM_DEC_REF) == ING_R_NONE
                      : ing_engine_push(e, val[j], strlen(val[j]), key[j], (size_t)kl[j], &src, 0,
                                        sink, NULL) == CORE_OK;
        if (!ok) {
            snprintf(r->err, sizeof(r->err), "engine refused reading %lld", i);
            return false;
        }
    }
    return true;
}

static int engine_only(const struct core_config *cfg, const struct bench_opts *o,
                       struct phase_result *r, enum eng_mode mode)
{
    enum { CHUNK = 4096 };
    struct ing_engine *e;
    long long windows = 0;
    struct ing_sink sink = {discard_window, NULL, &windows};
    char(*key)[32] = NULL, (*val)[320] = NULL;
    int *kl = NULL;
    struct cpu_mark c0, c1;
    struct phase_result acc;
    double t = 0;

    if (!(e = engine_for(cfg, r, mode)))
        return -1;
    key = core_xcalloc(CHUNK, sizeof(*key));
    val = core_xcalloc(CHUNK, sizeof(*val));
    kl = core_xcalloc(CHUNK, sizeof(*kl));
    memset(&acc, 0, sizeof(acc));
    /* The JSON of a chunk is generated first, then only the pushes are timed (wall and
     * CPU of this thread), so the figure compares with the ingest loop thread's. */
    for (long long base = 0; base < o->readings; base += CHUNK) {
        long long n = o->readings - base < CHUNK ? o->readings - base : CHUNK;
        for (long long j = 0; j < n; j++)
            kl[j] = reading_json(o, base + j, key[j], sizeof(key[j]), val[j], sizeof(val[j]));
        double t0 = now_s();
        cpu_mark_take(&c0);
        if (!push_chunk(e, o, mode, base, n, key, val, kl, &sink, r))
            goto out;
        cpu_mark_take(&c1);
        t += now_s() - t0;
        cpu_mark_diff(&c0, &c1, r);
        acc.cpu += r->cpu;
        acc.cpu_proc += r->cpu_proc;
        acc.vcsw += r->vcsw;
        acc.ivcsw += r->ivcsw;
    }
    r->messages = o->readings;
    r->windows = windows;
    r->seconds = t;
    r->cpu = acc.cpu;
    r->cpu_proc = acc.cpu_proc;
    r->vcsw = acc.vcsw;
    r->ivcsw = acc.ivcsw;
    r->ok = 1;
out:
    ing_engine_free(e);
    free(key);
    free(val);
    free(kl);
    return r->ok ? 0 : -1;
}

/* ------------------------------------------------------------------------------------ */
/* Phases as children; broker child; CLI */

enum phase { PH_PRELOAD, PH_BARE, PH_INGEST, PH_ENGINE, PH_ENGINE_REF, PH_DEC_FAST, PH_DEC_REF };

/* Run one phase in a child; fills r and *maxrss_kb. Returns 0 when the phase succeeded. */
static int run_phase(enum phase ph, struct core_config *cfg, const struct bench_opts *o,
                     const char *topic, const char *group, struct phase_result *r, long *maxrss_kb)
{
    int fds[2], st = 0;
    pid_t pid;
    struct rusage ru;
    ssize_t got;

    memset(r, 0, sizeof(*r));
    if (pipe(fds) != 0)
        return -1;
    fflush(NULL);
    pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(fds[0]);
        if (ph == PH_PRELOAD)
            preload(cfg, o, topic, r);
        else if (ph == PH_BARE)
            bare_consume(cfg, o, topic, group, r);
        else if (ph == PH_INGEST)
            ingest_run(cfg, o, group, NULL, 0, r);
        else
            engine_only(cfg, o, r, (enum eng_mode)(ph - PH_ENGINE));
        if (write(fds[1], r, sizeof(*r)) != (ssize_t)sizeof(*r))
            _exit(3);
        _exit(r->ok ? 0 : 1);
    }
    close(fds[1]);
    got = read(fds[0], r, sizeof(*r));
    close(fds[0]);
    memset(&ru, 0, sizeof(ru));
    wait4(pid, &st, 0, &ru);
    *maxrss_kb = ru.ru_maxrss;
    if (got != (ssize_t)sizeof(*r)) {
        snprintf(r->err, sizeof(r->err), "phase process died (status %d)", st);
        r->ok = 0;
    }
    return r->ok ? 0 : -1;
}

/* Phase 6: two ingest services (each in its own process) in one new consumer group on the
 * topic. Fills r[0], r[1] and their peak RSS. Returns 0 when both succeeded. */
static int run_group(struct core_config *cfg, const struct bench_opts *o, const char *group,
                     struct phase_result r[2], long rss_kb[2])
{
    struct group_shared *g =
        mmap(NULL, sizeof(*g), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int fds[2][2], ok = 0;
    pid_t pid[2];

    if (g == MAP_FAILED)
        return -1;
    memset(g, 0, sizeof(*g));
    fflush(NULL);
    for (int m = 0; m < 2; m++) {
        memset(&r[m], 0, sizeof(r[m]));
        if (pipe(fds[m]) != 0 || (pid[m] = fork()) < 0)
            return -1;
        if (pid[m] == 0) {
            close(fds[m][0]);
            ingest_run(cfg, o, group, g, m, &r[m]);
            if (write(fds[m][1], &r[m], sizeof(r[m])) != (ssize_t)sizeof(r[m]))
                _exit(3);
            _exit(r[m].ok ? 0 : 1);
        }
        close(fds[m][1]);
    }
    for (int m = 0; m < 2; m++) {
        struct rusage ru;
        int st = 0;
        ssize_t got = read(fds[m][0], &r[m], sizeof(r[m]));
        close(fds[m][0]);
        memset(&ru, 0, sizeof(ru));
        wait4(pid[m], &st, 0, &ru);
        rss_kb[m] = ru.ru_maxrss;
        if (got != (ssize_t)sizeof(r[m])) {
            snprintf(r[m].err, sizeof(r[m].err), "group member %d died (status %d)", m, st);
            r[m].ok = 0;
        }
        ok += r[m].ok;
    }
    munmap(g, sizeof(*g));
    return ok == 2 ? 0 : -1;
}

/* `gcdp broker` child with the bench topics created explicitly (auto-created topics get
 * the mock's default of 4 partitions). Its output goes to DIR/broker.log. */
static pid_t start_broker(const char *dir, const char *file, long partitions, int repeat)
{
    char exe[4096], parts[32], log[700], topics[15][2][80];
    const char *argv[80];
    size_t n = sizeof(exe);
    int a = 0;
    pid_t pid;

    if (uv_exepath(exe, &n) != 0)
        return -1;
    snprintf(parts, sizeof(parts), "%ld", partitions);
    snprintf(log, sizeof(log), "%s/broker.log", dir);
    argv[a++] = exe;
    argv[a++] = "broker";
    argv[a++] = "--bootstrap-file";
    argv[a++] = file;
    argv[a++] = "--partitions";
    argv[a++] = parts;
    argv[a++] = "--log-level";
    argv[a++] = "warn";
    for (int k = 0; k < repeat; k++) {
        snprintf(topics[k][0], sizeof(topics[k][0]), "bench.raw.%d:%ld", k, partitions);
        snprintf(topics[k][1], sizeof(topics[k][1]), "bench.windows.%d:%ld", k, partitions);
        argv[a++] = "--topic";
        argv[a++] = topics[k][0];
        argv[a++] = "--topic";
        argv[a++] = topics[k][1];
    }
    argv[a++] = "--topic";
    argv[a++] = "bench.rejected";
    argv[a] = NULL;
    unlink(file);
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        int out = open("/dev/null", O_WRONLY), err = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (out >= 0)
            dup2(out, 1);
        if (err >= 0)
            dup2(err, 2);
        execv(exe, (char *const *)argv);
        _exit(127);
    }
    for (int i = 0; pid > 0 && i < 1500 && access(file, R_OK) != 0; i++)
        usleep(20000);
    return access(file, R_OK) == 0 ? pid : -1;
}

#define AT(f) APP_FLAG_AT(struct bench_opts, f)

static const struct app_flag bench_flags[] = {
    {"readings", APP_FLAG_INT, AT(readings), .lo = 1, .hi = 100000000},
    {"devices", APP_FLAG_INT, AT(devices), .lo = 1, .hi = 1000000},
    {"partitions", APP_FLAG_INT, AT(partitions), .lo = 1, .hi = 1024},
    {"repeat", APP_FLAG_INT, AT(repeat), .lo = 1, .hi = 15},
    {"core-only", APP_FLAG_TRUE, AT(core_only)},
    {.name = NULL},
};

#undef AT

/* The flags into o (defaults set by the caller). Returns -1 to go on, or an exit status
 * (a refused flag: APP_EXIT_USAGE, message printed). */
static int parse_opts(int argc, char **argv, struct bench_opts *o)
{
    return app_flags_parse_only("bench ingest", bench_flags, argc, argv, o, NULL) != 0
               ? APP_EXIT_USAGE
               : -1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static core_err set_key(struct core_config *cfg, const char *key, const char *val)
{
    char eb[256], lit[700];
    snprintf(lit, sizeof(lit), "\"%s\"", val);
    return core_config_set(cfg, key, lit, "flag", eb, sizeof(eb));
}

/* Figures of all repeats. */
struct bench_figs {
    double bare[15], ing[15], eng[15], eng_ref[15], dec_fast[15], dec_ref[15], group[15];
    double bare_cpu[15], ing_cpu[15], eng_cpu[15], eng_ref_cpu[15]; /* per CPU-s of the thread */
    long rss_bare, rss_ing;
};

/* Where the wall time of a phase went: CPU of the measuring thread (the loop thread for
 * ingest), CPU of the whole process (librdkafka's fetch/decompress threads included), and
 * context switches: voluntary = the thread waited for work, involuntary = it was preempted
 * (a shared, loaded machine). */
static void print_cpu(int k, const struct phase_result *r)
{
    printf("      [%d] thread CPU %.3f s (%.0f per CPU-s, %.0f%% of wall), process CPU %.3f s, "
           "context switches %ld voluntary / %ld involuntary\n",
           k, r->cpu, (double)r->messages / r->cpu, 100.0 * r->cpu / r->seconds, r->cpu_proc,
           r->vcsw, r->ivcsw);
}

/* One repeat k: fresh topics, preload, bare consumer, ingest, engine alone. */
/* A phase failed: its message, -1. */
static int phase_failed(const struct phase_result *r)
{
    fprintf(stderr, "gcdp bench ingest: %s\n", r->err);
    return -1;
}

/* Repeat k's preload, bare consumer and ingest phases on topic. 0 or -1 (reported). */
static int core_phases(struct core_config *cfg, const struct bench_opts *o, int k,
                       struct bench_figs *f, const char *topic)
{
    struct phase_result r;
    char group[64];
    long rss;

    if (run_phase(PH_PRELOAD, cfg, o, topic, NULL, &r, &rss) != 0)
        return phase_failed(&r);
    printf("  [%d] preload   %lld msgs in %.2f s (zstd)\n", k, r.messages, r.seconds);
    snprintf(group, sizeof(group), "bench-bare-%d", k);
    if (run_phase(PH_BARE, cfg, o, topic, group, &r, &rss) != 0)
        return phase_failed(&r);
    f->bare[k] = (double)r.messages / r.seconds;
    f->rss_bare = rss > f->rss_bare ? rss : f->rss_bare;
    f->bare_cpu[k] = (double)r.messages / r.cpu;
    printf("  [%d] bare      %lld msgs in %.3f s = %.0f msg/s, peak RSS %.1f MiB\n", k, r.messages,
           r.seconds, f->bare[k], (double)rss / 1024.0);
    print_cpu(k, &r);
    snprintf(group, sizeof(group), "bench-ingest-%d", k);
    if (run_phase(PH_INGEST, cfg, o, topic, group, &r, &rss) != 0)
        return phase_failed(&r);
    f->ing[k] = (double)r.messages / r.seconds;
    f->rss_ing = rss > f->rss_ing ? rss : f->rss_ing;
    printf("  [%d] ingest    %lld readings in %.3f s = %.0f readings/s, %lld windows acked, "
           "peak RSS %.1f MiB; ratio to bare %.3f; loop waited for events %.3f s (%.0f%% of "
           "wall); %lld refill nudges; %lld output holds, %lld ms\n",
           k, r.messages, r.seconds, f->ing[k], r.windows, (double)rss / 1024.0,
           f->ing[k] / f->bare[k], r.loop_idle, 100.0 * r.loop_idle / r.seconds, r.nudges, r.holds,
           r.held_ms);
    f->ing_cpu[k] = (double)r.messages / r.cpu;
    print_cpu(k, &r);
    return 0;
}

/* Repeat k's engine-alone and decoder-alone phases (no Kafka). 0 or -1 (reported). */
static int engine_phases(struct core_config *cfg, const struct bench_opts *o, int k,
                         struct bench_figs *f, const char *topic)
{
    struct phase_result r;
    long rss;

    if (run_phase(PH_ENGINE, cfg, o, topic, NULL, &r, &rss) != 0)
        return phase_failed(&r);
    f->eng[k] = (double)r.messages / r.seconds;
    printf("  [%d] engine    %lld readings in %.3f s = %.0f readings/s (ing_engine_push "
           "alone, no Kafka; %lld windows), peak RSS %.1f MiB\n",
           k, r.messages, r.seconds, f->eng[k], r.windows, (double)rss / 1024.0);
    f->eng_cpu[k] = (double)r.messages / r.cpu;
    print_cpu(k, &r);
    if (run_phase(PH_ENGINE_REF, cfg, o, topic, NULL, &r, &rss) != 0)
        return phase_failed(&r);
    f->eng_ref[k] = (double)r.messages / r.seconds;
    f->eng_ref_cpu[k] = (double)r.messages / r.cpu;
    printf("  [%d] engine/jansson %.0f readings/s (same, ingest.decoder=jansson), peak RSS "
           "%.1f MiB\n",
           k, f->eng_ref[k], (double)rss / 1024.0);
    print_cpu(k, &r);
    if (run_phase(PH_DEC_FAST, cfg, o, topic, NULL, &r, &rss) != 0)
        return phase_failed(&r);
    f->dec_fast[k] = r.cpu / (double)r.messages * 1e9;
    if (run_phase(PH_DEC_REF, cfg, o, topic, NULL, &r, &rss) != 0)
        return phase_failed(&r);
    f->dec_ref[k] = r.cpu / (double)r.messages * 1e9;
    printf("  [%d] decoder alone (ing_engine_decode_only, thread CPU per reading): simdjson "
           "%.0f ns, jansson reference %.0f ns, speed-up %.2fx\n",
           k, f->dec_fast[k], f->dec_ref[k], f->dec_ref[k] / f->dec_fast[k]);
    return 0;
}

/* Repeat k's two members in one group. 0 or -1 (reported). */
static int group_phase(struct core_config *cfg, const struct bench_opts *o, int k,
                       struct bench_figs *f)
{
    struct phase_result g[2];
    char group[64];
    long grss[2];
    double t0, t1;

    snprintf(group, sizeof(group), "bench-group-%d", k);
    if (run_group(cfg, o, group, g, grss) != 0)
        return phase_failed(g[0].ok ? &g[1] : &g[0]);
    double tb = g[0].both_at > g[1].both_at ? g[0].both_at : g[1].both_at;
    long long nb = g[0].messages - g[0].both_consumed + g[1].messages - g[1].both_consumed;
    t0 = g[0].t_first < g[1].t_first ? g[0].t_first : g[1].t_first;
    t1 = g[0].t_last > g[1].t_last ? g[0].t_last : g[1].t_last;
    f->group[k] = (double)nb / (t1 - tb);
    printf("  [%d] group of 2 %lld readings in %.3f s from the first message = %.0f "
           "readings/s (%lld consumed in all: %lld re-delivered after the rebalance the "
           "second member's join causes); both members consuming: %lld readings in "
           "%.3f s = %.0f readings/s aggregate, ratio to one member %.3f\n",
           k, o->readings, t1 - t0, (double)o->readings / (t1 - t0), g[0].messages + g[1].messages,
           g[0].messages + g[1].messages - o->readings, nb, t1 - tb, f->group[k],
           f->group[k] / f->ing[k]);
    for (int m = 0; m < 2; m++)
        printf("      member %d: %lld readings, loop-thread CPU %.3f s = %.0f ns per reading, "
               "process CPU %.3f s, peak RSS %.1f MiB\n",
               m, g[m].messages, g[m].cpu, g[m].cpu / (double)g[m].messages * 1e9, g[m].cpu_proc,
               (double)grss[m] / 1024.0);
    return 0;
}

static int run_repeat(struct core_config *cfg, const struct bench_opts *o, int k,
                      struct bench_figs *f)
{
    char topic[64], wtopic[64];

    snprintf(topic, sizeof(topic), "bench.raw.%d", k);
    snprintf(wtopic, sizeof(wtopic), "bench.windows.%d", k);
    if (set_key(cfg, "topics.raw", topic) != CORE_OK ||
        set_key(cfg, "topics.windows", wtopic) != CORE_OK ||
        set_key(cfg, "topics.rejected", "bench.rejected") != CORE_OK)
        return -1;
    if (core_phases(cfg, o, k, f, topic) != 0)
        return -1;
    if (o->core_only)
        return 0;
    if (engine_phases(cfg, o, k, f, topic) != 0)
        return -1;
    return group_phase(cfg, o, k, f);
}

static void print_result(const struct bench_opts *o, struct bench_figs *f)
{
    int m = o->repeat / 2;

    qsort(f->bare, (size_t)o->repeat, sizeof(double), cmp_double);
    qsort(f->ing, (size_t)o->repeat, sizeof(double), cmp_double);
    qsort(f->eng, (size_t)o->repeat, sizeof(double), cmp_double);
    qsort(f->eng_ref, (size_t)o->repeat, sizeof(double), cmp_double);
    qsort(f->dec_fast, (size_t)o->repeat, sizeof(double), cmp_double);
    qsort(f->dec_ref, (size_t)o->repeat, sizeof(double), cmp_double);
    qsort(f->group, (size_t)o->repeat, sizeof(double), cmp_double);
    qsort(f->eng_ref_cpu, (size_t)o->repeat, sizeof(double), cmp_double);
    qsort(f->bare_cpu, (size_t)o->repeat, sizeof(double), cmp_double);
    qsort(f->ing_cpu, (size_t)o->repeat, sizeof(double), cmp_double);
    qsort(f->eng_cpu, (size_t)o->repeat, sizeof(double), cmp_double);
    printf("RESULT (medians) bare_consume=%.0f msg/s ingest=%.0f readings/s ratio=%.3f "
           "(target >= 0.50: %s) engine_alone=%.0f readings/s peak_rss_ingest=%.1fMiB "
           "(target <= 96: %s) peak_rss_bare=%.1fMiB devices=%ld group_of_2=%.0f readings/s "
           "(%.3f of one member)\n",
           f->bare[m], f->ing[m], f->ing[m] / f->bare[m],
           f->ing[m] / f->bare[m] >= 0.5 ? "met" : "NOT met", f->eng[m],
           (double)f->rss_ing / 1024.0, f->rss_ing <= 96L * 1024 ? "met" : "NOT met",
           (double)f->rss_bare / 1024.0, o->devices, f->group[m], f->group[m] / f->ing[m]);
    printf("RESULT_CPU (medians, per CPU-second of the measuring thread) bare_consume=%.0f "
           "ingest=%.0f (target >= 500k: %s) engine_alone=%.0f engine_alone_jansson=%.0f "
           "ingest/engine=%.3f decoder_ns_per_reading simdjson=%.0f jansson=%.0f "
           "decoder_speedup=%.2f\n",
           f->bare_cpu[m], f->ing_cpu[m], f->ing_cpu[m] >= 500000 ? "met" : "NOT met",
           f->eng_cpu[m], f->eng_ref_cpu[m], f->ing_cpu[m] / f->eng_cpu[m], f->dec_fast[m],
           f->dec_ref[m], f->dec_ref[m] / f->dec_fast[m]);
}

static int bench_main(struct app_call *call)
{
    struct core_config *cfg = call->cfg;
    struct bench_opts o = {1000000, 10000, 8, 1, false, 60000};
    struct bench_figs figs;
    char dir[] = "/tmp/gcdp-bench-XXXXXX", file[600], at_file[601];
    pid_t broker = -1;
    int rc = APP_EXIT_FAILURE, ret;

    memset(&figs, 0, sizeof(figs));
    if ((ret = parse_opts(call->argc, call->argv, &o)) >= 0 ||
        core_config_is_set(cfg, "broker.bootstrap")) {
        if (ret < 0)
            fprintf(stderr, "gcdp bench ingest: starts its own embedded broker; do not set "
                            "broker.bootstrap\n");
        return ret >= 0 ? ret : APP_EXIT_USAGE;
    }
    o.period_ms = (long long)core_config_int(cfg, "ingest.period_ms");
    if (!mkdtemp(dir))
        return APP_EXIT_FAILURE;
    snprintf(file, sizeof(file), "%s/kafka.bootstrap", dir);
    broker = start_broker(dir, file, o.partitions, o.repeat);
    snprintf(at_file, sizeof(at_file), "@%s", file);
    if (broker < 0 || set_key(cfg, "broker.bootstrap", at_file) != CORE_OK) {
        fprintf(stderr, "gcdp bench ingest: the embedded broker did not start\n");
        goto out;
    }
    printf("gcdp bench ingest: %lld readings, %ld devices, %ld partitions, embedded broker "
           "(separate process), %d repeat(s)\n",
           o.readings, o.devices, o.partitions, o.repeat);
    for (int k = 0; k < o.repeat; k++)
        if (run_repeat(cfg, &o, k, &figs) != 0)
            goto out;
    print_result(&o, &figs);
    rc = APP_EXIT_OK;
out:
    if (broker > 0) {
        kill(broker, SIGTERM);
        waitpid(broker, NULL, 0);
    }
    unlink(file);
    snprintf(file, sizeof(file), "%s/broker.log", dir);
    unlink(file);
    rmdir(dir);
    return rc;
}

const struct app_command app_bench_ingest = {
    .name = "ingest",
    .summary = "ingest readings/s vs a bare consumer on the embedded broker",
    .help = app_help_bench_ingest,
    .options = bench_flags,
    .run = bench_main,
};
