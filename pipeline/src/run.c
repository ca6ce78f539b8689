/* run.c - `gcdp run`'s pipeline (pipe/run.h): the whole pipeline in one process.
 *
 * Parts: (1) the embedded broker as a CHILD PROCESS `gcdp broker` (KAFKA.md §8.1 prefers a
 * separate process; it runs in its own process group so a terminal Ctrl-C reaches only us
 * and we stop it last, and it gets SIGTERM if we die: PR_SET_PDEATHSIG), skipped when
 * broker.bootstrap is set; (2) the stages, a table below in data-flow order: today the
 * simulator (sim_run() on a thread of its own) and the ingest service (on this loop).
 * Later stages (calibrate, release, learner) plug in by adding one row to `stages`.
 *
 * Shutdown (--duration elapsed, SIGINT or SIGTERM): stages are stopped one at a time in
 * data-flow order, each drained before the next is told to stop, so upstream output is
 * consumed (simulator flushes -> ingest drains, acks, commits, leaves its group); then
 * the broker child gets SIGTERM and is reaped. A second signal skips the waiting. */
#include "pipe/run.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <uv.h>

#include "core/log.h"
#include "core/metrics.h"
#include "ing/service.h"
#include "run_int.h"
#include "sim/sim.h"

/* ------------------------------------------------------------------------------------ */
/* Stage table: start, stop (begin), done (fully stopped), progress text. */

struct run_stage {
    const char *name;
    core_err (*start)(struct run_ctx *c, char *eb, size_t ebn);
    void (*stop)(struct run_ctx *c);
    bool (*done)(struct run_ctx *c);
};

static void sim_main(void *arg)
{
    struct run_ctx *c = arg;
    c->sim_status = sim_run(c->cfg, &c->sim_opts, &c->sim, c->sim_err, sizeof(c->sim_err));
    atomic_store(&c->sim_done, true);
}

static core_err sim_start(struct run_ctx *c, char *eb, size_t ebn)
{
    if (c->o.no_sim) {
        atomic_store(&c->sim_done, true);
        return CORE_OK;
    }
    /* Everything but the three flags comes from the sim.* keys (gcdp config keys). */
    if (sim_options_from_config(c->cfg, &c->sim_opts, eb, ebn) != CORE_OK)
        return CORE_ECONFIG;
    c->sim_opts.devices = c->o.devices;
    c->sim_opts.rate = c->o.rate;
    c->sim_opts.seed = c->o.seed;
    sim_progress_init(&c->sim);
    if (uv_thread_create(&c->sim_thread, sim_main, c) != 0) {
        snprintf(eb, ebn, "cannot start the simulator thread");
        return CORE_EIO;
    }
    c->sim_started = true;
    return CORE_OK;
}

static void sim_stop(struct run_ctx *c)
{
    atomic_store(&c->sim.stop, 1);
}

static bool sim_is_done(struct run_ctx *c)
{
    return !c->sim_started || atomic_load(&c->sim_done);
}

static void ingest_on_done(void *arg, core_err status)
{
    struct run_ctx *c = arg;
    run_service_done(c, "ingest", &c->ingest_done, &c->ingest_status, status);
}

static core_err ingest_start(struct run_ctx *c, char *eb, size_t ebn)
{
    struct ing_service_opts so = {"gcdp-ingest", 500, 0, false, ingest_on_done, c};
    return ing_service_new(&c->loop, c->cfg, &so, c->metrics, &c->ingest, eb, ebn);
}

/* Stopping ingest first lets it catch up with what the simulator had acknowledged (bounded
 * by CATCH_UP_MS; a second signal skips it), so a bounded run ends with consumed == sent. */
static void ingest_stop(struct run_ctx *c)
{
    if (!c->ingest_stop_requested) {
        c->ingest_stop_requested = true;
        c->ingest_stop_deadline = uv_now(&c->loop) + CATCH_UP_MS;
    }
}

static bool ingest_is_done(struct run_ctx *c)
{
    struct ing_service_stats st;
    bool caught_up;

    if (!c->ingest || c->ingest_done)
        return true;
    if (c->ingest_stop_requested && !c->ingest_stop_sent) {
        ing_service_stats(c->ingest, &st);
        caught_up = c->sim_started ? st.consumed >= atomic_load(&c->sim.acked) : st.lag == 0;
        if (caught_up || c->signals > 1 || uv_now(&c->loop) >= c->ingest_stop_deadline) {
            c->ingest_stop_sent = true;
            ing_service_stop(c->ingest);
        }
    }
    return false;
}

/* Data-flow order. To add a stage: write its four functions and add a row here. */
static const struct run_stage stages[] = {
    {"simulator", sim_start, sim_stop, sim_is_done},
    {"ingest", ingest_start, ingest_stop, ingest_is_done},
    {"release", run_rel_start, run_rel_stop, run_rel_done},
    {"calibrate", run_cal_start, run_cal_stop, run_cal_done},
    {"learner", run_lrn_start, run_lrn_stop, run_lrn_done},
};
#define NSTAGES (sizeof(stages) / sizeof(stages[0]))

/* ------------------------------------------------------------------------------------ */
/* Broker child */

static core_err broker_spawn(struct run_ctx *c, char *eb, size_t ebn)
{
    char exe[4096];
    size_t n = sizeof(exe);
    char *text = NULL;
    int64_t waited = 0;
    int st;

    if (uv_exepath(exe, &n) != 0) {
        snprintf(eb, ebn, "cannot find the gcdp executable");
        return CORE_EIO;
    }
    unlink(c->o.bootstrap_file);
    c->broker_pid = fork();
    if (c->broker_pid < 0) {
        snprintf(eb, ebn, "fork: %s", strerror(errno));
        return CORE_EIO;
    }
    if (c->broker_pid == 0) {
        int devnull = open("/dev/null", O_WRONLY), log;
        char path[4200];
        setpgid(0, 0);                    /* terminal Ctrl-C goes to us, not the broker */
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* ... and it dies with us */
        snprintf(path, sizeof(path), "%s.log", c->o.bootstrap_file);
        log = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (devnull >= 0)
            dup2(devnull, 1);
        if (log >= 0)
            dup2(log, 2);
        execl(exe, exe, "broker", "--bootstrap-file", c->o.bootstrap_file, "--log-level", "warn",
              (char *)NULL);
        _exit(127);
    }
    while (!(text = (access(c->o.bootstrap_file, R_OK) == 0) ? (char *)"" : NULL)) {
        if (waitpid(c->broker_pid, &st, WNOHANG) == c->broker_pid) {
            c->broker_pid = 0;
            snprintf(eb, ebn, "the embedded broker exited at start");
            return CORE_EIO;
        }
        if (waited >= BROKER_START_MS) {
            snprintf(eb, ebn, "the embedded broker did not start within %d ms", BROKER_START_MS);
            return CORE_EIO;
        }
        usleep(20000);
        waited += 20;
    }
    return CORE_OK;
}

static void broker_stop(struct run_ctx *c)
{
    int st;
    if (c->broker_pid <= 0)
        return;
    kill(c->broker_pid, SIGTERM);
    for (int i = 0; i < 500; i++) {
        if (waitpid(c->broker_pid, &st, WNOHANG) == c->broker_pid) {
            c->broker_pid = 0;
            return;
        }
        usleep(20000);
    }
    kill(c->broker_pid, SIGKILL);
    waitpid(c->broker_pid, &st, 0);
    c->broker_pid = 0;
}

/* ------------------------------------------------------------------------------------ */
/* Progress and shutdown */

static void progress_line(struct run_ctx *c, bool final)
{
    struct ing_service_stats st = {0};
    double el = (double)(uv_now(&c->loop) - c->t0) / 1000.0;
    uint64_t sent = atomic_load(&c->sim.acked);
    char live[256], lrn[192];

    if (c->ingest)
        ing_service_stats(c->ingest, &st);
    if (final)
        return;
    run_live_progress(c, live, sizeof(live));
    run_lrn_progress(c, lrn, sizeof(lrn));
    fprintf(stderr,
            "%s[%6.1fs] sim sent %llu | readings in %llu (%.0f/s) | windows out %llu "
            "| rejected %llu | lag %lld | gaps %llu%s%s%s",
            c->tty ? "\r" : "", el, (unsigned long long)sent, (unsigned long long)st.consumed,
            el > 0 ? (double)st.consumed / el : 0.0, (unsigned long long)st.windows_out,
            (unsigned long long)st.rejected, (long long)st.lag, (unsigned long long)st.offset_gaps,
            live, lrn, c->tty ? "   " : "\n");
    fflush(stderr);
}

static void on_progress(uv_timer_t *t)
{
    progress_line(t->data, false);
}

static void close_all(struct run_ctx *c)
{
    uv_close((uv_handle_t *)&c->sigint, NULL);
    uv_close((uv_handle_t *)&c->sigterm, NULL);
    uv_close((uv_handle_t *)&c->progress, NULL);
    uv_close((uv_handle_t *)&c->duration, NULL);
    uv_close((uv_handle_t *)&c->poll, NULL);
    uv_close((uv_handle_t *)&c->force, NULL);
}

/* Every 50 ms: advance the stage-by-stage shutdown; notice a stage that died. */
static void on_poll(uv_timer_t *t)
{
    struct run_ctx *c = t->data;

    if (!c->stopping) {
        if (c->ingest_done || c->rel_done || c->cal_done || run_lrn_failed_early(c)) {
            /* a stage ended by itself (a failure): stop the rest */
            c->stopping = true;
            c->stopping_stage = 0;
            stages[0].stop(c);
        }
        return;
    }
    while (c->stopping_stage < NSTAGES && stages[c->stopping_stage].done(c)) {
        if (++c->stopping_stage < NSTAGES) {
            CORE_INFO("stopping %s", stages[c->stopping_stage].name);
            stages[c->stopping_stage].stop(c);
        }
    }
    if (c->stopping_stage == NSTAGES)
        close_all(c);
}

static void begin_shutdown(struct run_ctx *c, const char *why)
{
    if (c->stopping)
        return;
    CORE_INFO("shutting down (%s): stopping %s", why, stages[0].name);
    if (c->tty)
        fputc('\n', stderr);
    c->stopping = true;
    c->stopping_stage = 0;
    stages[0].stop(c);
}

static void on_duration(uv_timer_t *t)
{
    begin_shutdown(t->data, "duration reached");
}

static void on_force(uv_timer_t *t)
{
    struct run_ctx *c = t->data;
    CORE_ERROR("stages did not stop within %d ms of the second signal: giving up", FORCE_MS);
    c->forced = true;
    c->status = CORE_ESTATE;
    uv_stop(&c->loop);
}

static void on_signal(uv_signal_t *h, int sig)
{
    struct run_ctx *c = h->data;
    if (++c->signals > 1) {
        CORE_WARN("second signal %d: stopping every stage now", sig);
        if (c->signals == 2)
            uv_timer_start(&c->force, on_force, FORCE_MS, 0);
        for (size_t i = 0; i < NSTAGES; i++)
            stages[i].stop(c);
        begin_shutdown(c, "second signal");
        return;
    }
    begin_shutdown(c, sig == SIGINT ? "SIGINT" : "SIGTERM");
}

/* Ingest's rejections by reason (ing_reason_code), the non-zero ones in the human line. */
static void ingest_reasons(const struct ing_service_stats *st, FILE *human, FILE *json)
{
    const char *sep = "";

    fprintf(json, ",\"rejected_by_reason\":{");
    for (int i = 1; i < ING_REASON_COUNT; i++) {
        fprintf(json, "%s\"%s\":%llu", i > 1 ? "," : "", ing_reason_code((enum ing_reason)i),
                (unsigned long long)st->rejected_by_reason[i]);
        if (st->rejected_by_reason[i] == 0)
            continue;
        fprintf(human, "%s%s %llu",
                *sep ? ", " : "ingest rejected by reason: ", ing_reason_code((enum ing_reason)i),
                (unsigned long long)st->rejected_by_reason[i]);
        sep = ",";
    }
    fprintf(json, "}");
    if (*sep)
        fputc('\n', human);
}

static void print_summary(struct run_ctx *c)
{
    struct ing_service_stats st = {0};
    double el = (double)(uv_now(&c->loop) - c->t0) / 1000.0;

    if (c->ingest)
        ing_service_stats(c->ingest, &st);
    fprintf(stderr,
            "gcdp run: %.1f s\n"
            "readings: simulator sent %llu (acked %llu, failed %llu); ingest consumed %llu = "
            "accepted %llu + rejected %llu (dead letters out %llu); windows out %llu; offset "
            "gaps %llu (lost %llu)\n",
            el, (unsigned long long)atomic_load(&c->sim.sent),
            (unsigned long long)atomic_load(&c->sim.acked),
            (unsigned long long)atomic_load(&c->sim.failed), (unsigned long long)st.consumed,
            (unsigned long long)st.accepted, (unsigned long long)st.rejected,
            (unsigned long long)st.rejected_out, (unsigned long long)st.windows_out,
            (unsigned long long)st.offset_gaps, (unsigned long long)st.offsets_lost);
    printf("{\"seconds\":%.3f,\"sim_sent\":%llu,\"sim_acked\":%llu,\"sim_failed\":%llu,"
           "\"consumed\":%llu,\"accepted\":%llu,\"rejected\":%llu,\"windows_out\":%llu,"
           "\"dead_letters_out\":%llu,\"offset_gaps\":%llu,\"offsets_lost\":%llu,"
           "\"ingest_status\":\"%s\"",
           el, (unsigned long long)atomic_load(&c->sim.sent),
           (unsigned long long)atomic_load(&c->sim.acked),
           (unsigned long long)atomic_load(&c->sim.failed), (unsigned long long)st.consumed,
           (unsigned long long)st.accepted, (unsigned long long)st.rejected,
           (unsigned long long)st.windows_out, (unsigned long long)st.rejected_out,
           (unsigned long long)st.offset_gaps, (unsigned long long)st.offsets_lost,
           core_errname(c->ingest_status));
    ingest_reasons(&st, stderr, stdout);
    run_live_summary(c, stderr, stdout);
    run_lrn_summary(c, stderr, stdout);
    printf("}\n");
    fflush(stdout);
    if (st.offset_gaps > 0 || c->ingest_status != CORE_OK || run_live_failed(c) ||
        run_lrn_failed(c) || (c->sim_started && c->sim_status != CORE_OK))
        c->status = CORE_ESTATE;
    if (c->sim_started && c->sim_status != CORE_OK)
        fprintf(stderr, "gcdp run: simulator: %s\n", c->sim_err);
}

static core_err start_everything(struct run_ctx *c, char *eb, size_t ebn)
{
    char set[4200];
    int port = (int)core_config_int(c->cfg, "metrics.port");
    core_err rc;

    if (!core_config_is_set(c->cfg, "broker.bootstrap")) {
        rc = broker_spawn(c, eb, ebn);
        if (rc != CORE_OK)
            return rc;
        snprintf(set, sizeof(set), "@%s", c->o.bootstrap_file);
        rc = run_config_set_str(c, "broker.bootstrap", set, eb, ebn);
        if (rc != CORE_OK)
            return rc;
        fprintf(stderr, "gcdp run: embedded broker (in-memory, dev/test only) at @%s\n",
                c->o.bootstrap_file);
    }
    if ((rc = run_files_prepare(c, eb, ebn)) != CORE_OK)
        return rc;
    if (port > 0) {
        rc = core_metrics_serve(c->metrics, core_config_str(c->cfg, "metrics.bind"), port, NULL);
        if (rc != CORE_OK) {
            snprintf(eb, ebn, "cannot serve metrics on port %d", port);
            return rc;
        }
    }
    /* Start downstream first so nothing the simulator sends waits on a missing consumer. */
    for (size_t i = NSTAGES; i-- > 0;) {
        rc = stages[i].start(c, eb, ebn);
        if (rc != CORE_OK)
            return rc;
    }
    return CORE_OK;
}

/* The event loop: signal handlers and the progress, duration, poll and force timers. */
static void loop_init(struct run_ctx *c)
{
    uv_loop_init(&c->loop);
    c->t0 = uv_now(&c->loop);
    uv_signal_init(&c->loop, &c->sigint);
    uv_signal_init(&c->loop, &c->sigterm);
    uv_timer_init(&c->loop, &c->progress);
    uv_timer_init(&c->loop, &c->duration);
    uv_timer_init(&c->loop, &c->poll);
    uv_timer_init(&c->loop, &c->force);
    c->sigint.data = c->sigterm.data = c->progress.data = c->duration.data = c->poll.data = c;
    c->force.data = c;
    uv_signal_start(&c->sigint, on_signal, SIGINT);
    uv_signal_start(&c->sigterm, on_signal, SIGTERM);
}

/* Start every stage (a failure begins the shutdown), then run the loop until it ends. */
static void run_loop(struct run_ctx *c)
{
    char eb[1024] = "";
    core_err rc;

    if ((rc = start_everything(c, eb, sizeof(eb))) != CORE_OK) {
        fprintf(stderr, "gcdp run: %s\n", eb);
        /* a configuration a stage refuses is a usage error, like any bad key */
        c->status = rc == CORE_ECONFIG ? CORE_ECONFIG : CORE_ESTATE;
        begin_shutdown(c, "start failed");
    }
    uv_update_time(&c->loop); /* starting the broker took seconds: time runs from here */
    c->t0 = uv_now(&c->loop);
    uv_timer_start(&c->progress, on_progress, 1000, 1000);
    uv_timer_start(&c->poll, on_poll, 50, 50);
    if (c->o.duration_s > 0)
        uv_timer_start(&c->duration, on_duration, (uint64_t)(c->o.duration_s * 1000), 0);
    uv_run(&c->loop, UV_RUN_DEFAULT);
}

/* After the loop: the summary, then every stage, the ledger, the loop and the broker.
 * Returns the run's status; frees c (not the configuration: the caller's). */
static core_err finish(struct run_ctx *c)
{
    core_err ret;

    if (c->sim_started)
        uv_thread_join(&c->sim_thread);
    print_summary(c);
    ing_service_free(c->ingest);
    run_live_free(c);
    run_lrn_free(c);
    uv_run(&c->loop, UV_RUN_DEFAULT);
    core_dp_ledger_free(c->ledger);
    uv_loop_close(&c->loop);
    broker_stop(c);
    ret = c->status;
    core_metrics_free(c->metrics);
    free(c);
    return ret;
}

core_err pipe_run(struct core_config *cfg, const struct pipe_run_opts *o, bool *forced)
{
    struct run_ctx *c = calloc(1, sizeof(*c));

    *forced = false;
    if (!c)
        return CORE_ENOMEM;
    c->o = *o;
    c->status = CORE_OK;
    c->sim_status = CORE_OK;
    c->cfg = cfg;
    sim_progress_init(&c->sim);
    if (!c->o.bootstrap_file) {
        snprintf(c->bootstrap_buf, sizeof(c->bootstrap_buf), "%s/kafka.bootstrap", c->o.dir);
        c->o.bootstrap_file = c->bootstrap_buf;
    }
    c->tty = isatty(2);
    if (c->tty)
        core_log_set_line_prefix("\r\033[K"); /* a log line replaces the progress line */
    c->metrics = core_metrics_new();
    loop_init(c);
    run_loop(c);
    if (c->forced) { /* stuck stage: stop the broker, leave the rest to process exit */
        broker_stop(c);
        fprintf(stderr, "gcdp run: forced stop\n");
        *forced = true;
        return CORE_ESTATE;
    }
    return finish(c);
}

void pipe_run_opts_default(struct pipe_run_opts *o)
{
    *o = (struct pipe_run_opts){0, NULL, 100, 2000, 1, false, "run", NULL, NULL, 4};
}
