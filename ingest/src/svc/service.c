/* service.c - the ingest service: consumer -> engine -> producer on one libuv loop, with
 * commit-after-acknowledgement bookkeeping, backpressure, metrics and graceful shutdown.
 * Contract: ing/service.h. Kafka/libuv mechanics: core/kafka.h (KAFKA.md §6). */
#include "ing/service.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/kafka.h"
#include "core/kconf.h"
#include "core/log.h"
#include "core/mem.h"
#include "ing/engine.h"

/* Backpressure (KAFKA.md §6.2.7): pause fetching above HIGH undelivered records, resume
 * below LOW. The producer's own queue (queue.buffering.max.messages, default 100000) is
 * larger than HIGH, so QUEUE_FULL is a rare fallback. */
#define OUTQ_HIGH 50000
#define OUTQ_LOW  10000
#define TICK_MS   250

/* Output bound (issue 14): record bytes (value + key) handed to the producer and not yet
 * acknowledged. Window records close in bursts (every device crosses a window boundary
 * within one round of readings: 10,000 records of ~1.1 KB with 10,000 devices), and on the
 * 2-core machine the broker acknowledged them more slowly than the loop made them: up to
 * 30,000 unacknowledged records (~40 MB of RSS with librdkafka's copies) were measured,
 * the largest and most variable part of the service's peak RSS. Above OUT_HOLD_HIGH the
 * consumer's intake is held (core_kconsumer_hold: no purge, the prefetch bound stops
 * fetching) until acknowledgements bring it below OUT_HOLD_LOW; a hold longer than
 * OUT_HOLD_MAX_MS is released (a broker outage is then left to the count-based pause above
 * and to the delivery timeout, as before). */
#define OUT_HOLD_HIGH   ((size_t)16 << 20)
#define OUT_HOLD_LOW    ((size_t)8 << 20)
#define OUT_HOLD_MAX_MS 5000

/* One produced record (window or dead letter) until its delivery report; referenced
 * from the offset heaps of the input partitions it was derived from. */
struct inflight {
    uint32_t refs;
    bool acked;
    bool is_window;
    size_t bytes; /* value + key handed to the producer; counted in out_bytes until its report */
};

struct hent {
    int64_t off;
    struct inflight *rec;
};

/* Per input partition of topics.raw. */
struct pstate {
    bool assigned;
    int64_t next;      /* next offset to consume = last processed + 1; -1 unknown */
    int64_t committed; /* last successfully committed offset; -1 none */
    struct hent *heap; /* min-heap on off: input offsets of unacknowledged records */
    size_t n, cap;
};

enum svc_state { S_RUNNING, S_DRAINING, S_CLOSING, S_DONE };

struct svc_metrics {
    struct core_metric *consumed, *accepted, *rejected[ING_REASON_COUNT];
    struct core_metric *windows_emitted, *windows_excluded, *windows_out, *dead_letters_out;
    struct core_metric *acks, *produce_errors, *commits, *commit_errors, *lag, *gaps, *lost;
    struct core_metric *open_devices, *buffered, *assigned, *paused, *interpolated;
};

struct ing_service {
    uv_loop_t *loop;
    const struct core_config *cfg;
    struct ing_service_opts opts;
    struct ing_engine *eng;
    struct ing_sink sink;
    struct core_kconsumer *cons;
    struct core_kproducer *prod;
    struct core_metrics *metrics;
    struct svc_metrics m;
    const char *t_raw, *t_windows, *t_rejected;
    const rd_kafka_topic_t *raw_rkt; /* topic handle seen with t_raw's name (saves a strcmp) */
    struct pstate parts[ING_SERVICE_MAX_PARTITIONS];
    uv_timer_t commit_timer, tick_timer;
    int open_timers;
    enum svc_state state;
    core_err status;
    bool paused, commit_in_flight, consumed_any, group_joined, done_called;
    bool held;           /* intake held for the output bound (OUT_HOLD_*) */
    bool hold_expired;   /* a hold ran OUT_HOLD_MAX_MS: none again until below OUT_HOLD_LOW */
    uint64_t held_since; /* loop time the hold began */
    size_t out_bytes;    /* record bytes produced and not yet reported (OUT_HOLD_*) */
    bool broker_down;    /* a transport / all-brokers-down error since the broker last
                            answered (a record consumed, a commit acknowledged) */
    uint64_t broker_down_since;  /* loop time of the first such error */
    uint64_t unassigned_since;   /* loop time since which the joined member holds no partition */
    uint64_t session_timeout_ms; /* the consumer's session.timeout.ms */
    uint64_t drain_started, close_started, last_consume;
    int64_t now_ms; /* wall clock for the engine, refreshed every 1024 messages and tick */
    uint32_t since_clock;
    /* Stats readable from any thread. */
    _Atomic uint64_t a_consumed, a_accepted, a_rejected, a_windows_out, a_rejected_out;
    _Atomic uint64_t a_rejected_by[ING_REASON_COUNT];
    _Atomic uint64_t a_produce_errors, a_commits, a_commit_errors, a_gaps, a_lost;
    _Atomic uint64_t a_open_devices, a_produced;
    _Atomic int64_t a_lag;
    _Atomic uint64_t a_holds, a_held_ms;
    atomic_bool a_assigned;
};

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------------------------------ */
/* Offset heaps */

static void heap_push(struct pstate *p, int64_t off, struct inflight *rec)
{
    size_t i;
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 256;
        p->heap = core_xrealloc(p->heap, p->cap * sizeof(*p->heap));
    }
    i = p->n++;
    while (i > 0 && p->heap[(i - 1) / 2].off > off) {
        p->heap[i] = p->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    p->heap[i].off = off;
    p->heap[i].rec = rec;
    rec->refs++;
}

static void rec_unref(struct inflight *rec)
{
    if (--rec->refs == 0)
        free(rec);
}

static void heap_pop(struct pstate *p)
{
    struct hent last = p->heap[--p->n];
    size_t i = 0;

    rec_unref(p->heap[0].rec);
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        int64_t mo = last.off;
        if (l < p->n && p->heap[l].off < mo) {
            m = l;
            mo = p->heap[l].off;
        }
        if (r < p->n && p->heap[r].off < mo)
            m = r;
        if (m == i)
            break;
        p->heap[i] = p->heap[m];
        i = m;
    }
    if (p->n > 0)
        p->heap[i] = last;
}

/* Lowest input offset of p still held by an unacknowledged record; false if none. */
static bool heap_min(struct pstate *p, int64_t *out)
{
    while (p->n > 0 && p->heap[0].rec->acked)
        heap_pop(p);
    if (p->n == 0)
        return false;
    *out = p->heap[0].off;
    return true;
}

/* ------------------------------------------------------------------------------------ */
/* Producing (engine sink) */

static void fail(struct ing_service *s, core_err why, const char *what);

static void hold_intake(struct ing_service *s, bool held)
{
    uint64_t now = uv_now(s->loop);

    if (s->held == held)
        return;
    s->held = held;
    if (held)
        atomic_fetch_add(&s->a_holds, 1);
    else
        atomic_fetch_add(&s->a_held_ms, now - s->held_since);
    s->held_since = now;
    core_kconsumer_hold(s->cons, held);
}

static void on_delivery(void *arg, void *opaque, rd_kafka_resp_err_t err)
{
    struct ing_service *s = arg;
    struct inflight *rec = opaque;

    if (!rec)
        return;
    s->out_bytes -= rec->bytes;
    if (s->out_bytes < OUT_HOLD_LOW) {
        s->hold_expired = false;
        hold_intake(s, false);
    }
    if (err) {
        atomic_fetch_add(&s->a_produce_errors, 1);
        core_metric_add(s->m.produce_errors, 1);
        /* Not marked acked: the offsets it came from stay uncommitted. */
        fail(s, CORE_EKAFKA, "a record was not acknowledged by the broker");
    } else {
        rec->acked = true;
        core_metric_add(s->m.acks, 1);
        if (rec->is_window) {
            atomic_fetch_add(&s->a_windows_out, 1);
            core_metric_add(s->m.windows_out, 1);
        } else {
            atomic_fetch_add(&s->a_rejected_out, 1);
            core_metric_add(s->m.dead_letters_out, 1);
        }
    }
    rec_unref(rec);
}

/* Produce a copy; on a full local queue serve delivery reports and retry (bounded). */
static void produce(struct ing_service *s, const char *topic, const char *key, size_t klen,
                    const char *json, size_t len, struct inflight *rec)
{
    core_err rc;

    rec->refs++; /* held by the delivery report */
    rec->bytes = len + klen;
    for (int tries = 0;; tries++) {
        rc = core_kproducer_send(s->prod, topic, RD_KAFKA_PARTITION_UA, key, klen, json, len, rec);
        if (rc != CORE_EAGAIN || tries == 6000)
            break;
        core_kproducer_poll(s->prod, 5); /* rare: backpressure pauses us long before */
    }
    if (rc == CORE_OK) {
        atomic_store_explicit(&s->a_produced,
                              atomic_load_explicit(&s->a_produced, memory_order_relaxed) + 1,
                              memory_order_relaxed);
        s->out_bytes += rec->bytes;
        if (s->out_bytes > OUT_HOLD_HIGH && s->state == S_RUNNING && !s->hold_expired)
            hold_intake(s, true);
    } else {
        rec_unref(rec);
        atomic_fetch_add(&s->a_produce_errors, 1);
        core_metric_add(s->m.produce_errors, 1);
        fail(s, rc, "cannot enqueue an output record");
    }
}

static void on_window(void *arg, const char *key, size_t klen, const char *json, size_t len,
                      const struct ing_window_info *info)
{
    struct ing_service *s = arg;
    struct inflight *rec = core_xcalloc(1, sizeof(*rec));

    rec->is_window = true;
    rec->refs = 1; /* ours until the end of this function */
    for (size_t i = 0; i < info->n_src; i++) {
        int32_t p = info->src[i].partition;
        if (p >= 0 && p < ING_SERVICE_MAX_PARTITIONS)
            heap_push(&s->parts[p], info->src[i].min_offset, rec);
    }
    produce(s, s->t_windows, key, klen, json, len, rec);
    rec_unref(rec);
}

static void on_reject(void *arg, const char *key, size_t klen, const char *json, size_t len,
                      const struct ing_reject_info *info)
{
    struct ing_service *s = arg;
    struct inflight *rec = core_xcalloc(1, sizeof(*rec));
    int32_t p = info->src ? info->src->partition : -1;

    rec->refs = 1;
    if (p >= 0 && p < ING_SERVICE_MAX_PARTITIONS)
        heap_push(&s->parts[p], info->src->offset, rec);
    produce(s, s->t_rejected, key, klen, json, len, rec);
    rec_unref(rec);
}

/* ------------------------------------------------------------------------------------ */
/* Metrics */

static void metrics_register(struct ing_service *s)
{
    struct core_metrics *r = s->metrics;
    struct svc_metrics *m = &s->m;
    char lab[CORE_METRICS_MAX_LABELS];

    if (!r)
        return;
#define C(name, help) core_metrics_get(r, CORE_METRIC_COUNTER, name, NULL, help)
#define G(name, help) core_metrics_get(r, CORE_METRIC_GAUGE, name, NULL, help)
    m->consumed = C("gcdp_ingest_consumed_total", "messages consumed from topics.raw");
    m->accepted = C("gcdp_ingest_accepted_total", "messages accepted by validation");
    for (int i = 1; i < ING_REASON_COUNT; i++) {
        snprintf(lab, sizeof(lab), "reason=\"%s\"", ing_reason_code((enum ing_reason)i));
        m->rejected[i] = core_metrics_get(r, CORE_METRIC_COUNTER, "gcdp_ingest_rejected_total", lab,
                                          "messages dead-lettered, by reason");
    }
    m->windows_emitted = C("gcdp_ingest_windows_emitted_total", "window records produced");
    m->windows_excluded = C("gcdp_ingest_windows_excluded_total", "of which excluded");
    m->interpolated = C("gcdp_ingest_interpolated_total", "imputed points in emitted windows");
    m->windows_out = C("gcdp_ingest_windows_out_total", "window records acknowledged");
    m->dead_letters_out = C("gcdp_ingest_dead_letters_out_total", "dead letters acknowledged");
    m->acks = C("gcdp_kafka_produce_acks_total", "records acknowledged by the broker");
    m->produce_errors = C("gcdp_kafka_produce_errors_total", "records the broker did not take");
    m->commits = C("gcdp_kafka_commits_total", "successful offset commits");
    m->commit_errors = C("gcdp_kafka_commit_errors_total", "failed offset commits");
    m->gaps = C("gcdp_offset_gaps_total", "offset gaps or resets detected (data lost)");
    m->lost = C("gcdp_offsets_lost_total", "offsets skipped by gaps/resets");
    m->lag = G("gcdp_consumer_lag", "high watermark - position over assigned partitions");
    m->open_devices = G("gcdp_ingest_open_devices", "devices with buffered readings");
    m->buffered = G("gcdp_ingest_buffered", "readings buffered in open windows");
    m->assigned = G("gcdp_consumer_assigned_partitions", "partitions assigned to this member");
    m->paused = G("gcdp_consumer_paused", "1 while fetching is paused by backpressure");
#undef C
#undef G
}

/* Copy the engine's counters to the stats and the metrics (one consistent snapshot). */
static void metrics_refresh(struct ing_service *s)
{
    struct ing_counters c;
    int64_t lag;

    ing_engine_counters(s->eng, &c);
    atomic_store(&s->a_accepted, c.accepted);
    atomic_store(&s->a_rejected, c.rejected);
    atomic_store(&s->a_open_devices, c.open_devices);
    core_metric_set(s->m.consumed, (int64_t)c.consumed);
    core_metric_set(s->m.accepted, (int64_t)c.accepted);
    for (int i = 1; i < ING_REASON_COUNT; i++) {
        core_metric_set(s->m.rejected[i], (int64_t)c.rejected_by_reason[i]);
        atomic_store(&s->a_rejected_by[i], c.rejected_by_reason[i]);
    }
    core_metric_set(s->m.windows_emitted, (int64_t)c.windows_emitted);
    core_metric_set(s->m.windows_excluded, (int64_t)c.windows_excluded);
    core_metric_set(s->m.interpolated, (int64_t)c.interpolated);
    core_metric_set(s->m.open_devices, (int64_t)c.open_devices);
    core_metric_set(s->m.buffered, (int64_t)c.buffered);
    if (s->cons && s->state == S_RUNNING) {
        lag = core_kconsumer_lag(s->cons);
        atomic_store(&s->a_lag, lag);
        core_metric_set(s->m.lag, lag);
        core_metric_set(s->m.assigned, (int64_t)core_kconsumer_assigned(s->cons));
    }
    core_metric_set(s->m.paused, s->paused);
}

static void health_refresh(struct ing_service *s)
{
    if (!s->metrics)
        return;
    if (s->status != CORE_OK)
        core_metrics_set_health(s->metrics, false, core_strerror(s->status));
    else if (s->state != S_RUNNING)
        core_metrics_set_health(s->metrics, false, "shutting down");
    else if (!s->group_joined)
        core_metrics_set_health(s->metrics, false, "waiting for the consumer group");
    else if (s->broker_down &&
             uv_now(s->loop) - s->broker_down_since >= ING_SERVICE_BROKER_GRACE_MS)
        core_metrics_set_health(s->metrics, false, "broker unreachable");
    else if (atomic_load(&s->a_gaps) > 0)
        core_metrics_set_health(s->metrics, false,
                                "offset gap or cluster replacement detected: records were lost "
                                "(see the log and gcdp_offset_gaps_total)");
    else if (s->unassigned_since && uv_now(s->loop) - s->unassigned_since >= s->session_timeout_ms)
        core_metrics_set_health(s->metrics, false,
                                "no partition assigned for longer than the session timeout");
    else
        core_metrics_set_health(s->metrics, true, NULL);
}

/* The broker answered (a record consumed or a commit acknowledged). */
static void broker_answered(struct ing_service *s)
{
    if (s->broker_down)
        CORE_INFO("broker reachable again");
    s->broker_down = false;
}

/* ------------------------------------------------------------------------------------ */
/* Committing */

/* Offset of p that may be committed now (ing/engine.h rule); -1 if none. */
static int64_t committable(struct ing_service *s, int32_t p)
{
    struct pstate *ps = &s->parts[p];
    int64_t c = ps->next, o;

    if (c < 0)
        return -1;
    if (ing_engine_low_watermark(s->eng, p, &o) && o < c)
        c = o;
    if (heap_min(ps, &o) && o < c)
        c = o;
    return c;
}

/* Commit every assigned partition whose committable offset moved. Returns true when a
 * commit was sent. */
static bool commit_now(struct ing_service *s)
{
    rd_kafka_topic_partition_list_t *l;
    bool sent = false;

    if (s->commit_in_flight || s->status != CORE_OK || !s->cons)
        return false;
    l = rd_kafka_topic_partition_list_new(8);
    for (int32_t p = 0; p < ING_SERVICE_MAX_PARTITIONS; p++) {
        int64_t c;
        if (!s->parts[p].assigned)
            continue;
        c = committable(s, p);
        if (c >= 0 && c > s->parts[p].committed)
            rd_kafka_topic_partition_list_add(l, s->t_raw, p)->offset = c;
    }
    if (l->cnt > 0 && core_kconsumer_commit(s->cons, l) == CORE_OK) {
        s->commit_in_flight = true;
        sent = true;
    }
    rd_kafka_topic_partition_list_destroy(l);
    return sent;
}

static void on_commit(void *arg, rd_kafka_resp_err_t err,
                      const rd_kafka_topic_partition_list_t *offsets)
{
    struct ing_service *s = arg;

    s->commit_in_flight = false;
    if (err == RD_KAFKA_RESP_ERR__NO_OFFSET)
        return;
    if (err) {
        atomic_fetch_add(&s->a_commit_errors, 1);
        core_metric_add(s->m.commit_errors, 1);
        return;
    }
    atomic_fetch_add(&s->a_commits, 1);
    core_metric_add(s->m.commits, 1);
    broker_answered(s);
    for (int i = 0; offsets && i < offsets->cnt; i++) {
        const rd_kafka_topic_partition_t *t = &offsets->elems[i];
        if (!t->err && t->partition >= 0 && t->partition < ING_SERVICE_MAX_PARTITIONS &&
            strcmp(t->topic, s->t_raw) == 0 && t->offset > s->parts[t->partition].committed)
            s->parts[t->partition].committed = t->offset;
    }
}

/* ------------------------------------------------------------------------------------ */
/* Shutdown state machine: RUNNING -> DRAINING (outq empty, final commit) -> CLOSING
 * (consumer leaves the group) -> DONE (handles closed, on_done). */

static void on_timer_closed(uv_handle_t *h)
{
    struct ing_service *s = h->data;
    if (--s->open_timers == 0 && !s->done_called) {
        s->done_called = true;
        if (s->opts.on_done)
            s->opts.on_done(s->opts.arg, s->status);
    }
}

static void finish(struct ing_service *s)
{
    if (s->state == S_DONE)
        return;
    s->state = S_DONE;
    metrics_refresh(s);
    health_refresh(s);
    CORE_INFO("ingest stopped: %s", core_strerror(s->status));
    core_kconsumer_detach(s->cons); /* let uv_run return; destroyed in ing_service_free */
    core_kproducer_detach(s->prod);
    uv_close((uv_handle_t *)&s->commit_timer, on_timer_closed);
    uv_close((uv_handle_t *)&s->tick_timer, on_timer_closed);
}

static void on_closed(void *arg)
{
    struct ing_service *s = arg;
    if (s->state == S_CLOSING)
        finish(s);
}

static void begin_close(struct ing_service *s)
{
    s->state = S_CLOSING;
    s->close_started = uv_now(s->loop);
    health_refresh(s);
    core_kconsumer_close(s->cons);
}

/* Called from the tick timer while DRAINING. */
static void drain_step(struct ing_service *s)
{
    uint64_t waited = uv_now(s->loop) - s->drain_started;

    if (core_kproducer_outq(s->prod) > 0 && waited < ING_SERVICE_DRAIN_MS && s->status == CORE_OK)
        return;
    if (core_kproducer_outq(s->prod) > 0)
        CORE_WARN("%zu records still unacknowledged at shutdown; their input stays uncommitted",
                  core_kproducer_outq(s->prod));
    if (s->commit_in_flight && waited < ING_SERVICE_DRAIN_MS)
        return;
    if (s->status == CORE_OK && commit_now(s))
        return; /* wait for its result on a later tick */
    begin_close(s);
}

static void fail(struct ing_service *s, core_err why, const char *what)
{
    if (s->status != CORE_OK)
        return;
    CORE_ERROR("ingest failing: %s (%s); stopping without committing further", what,
               core_strerror(why));
    s->status = why;
    ing_service_stop(s);
}

void ing_service_stop(struct ing_service *s)
{
    if (s->state != S_RUNNING)
        return;
    CORE_INFO("ingest stopping: intake stopped, waiting for acknowledgements");
    s->state = S_DRAINING;
    s->drain_started = uv_now(s->loop);
    hold_intake(s, false); /* the pause below stops intake now; closing needs the queue */
    core_kconsumer_pause(s->cons, true);
    health_refresh(s);
}

/* ------------------------------------------------------------------------------------ */
/* Consumer callbacks */

static void on_message(void *arg, const rd_kafka_message_t *m)
{
    struct ing_service *s = arg;
    struct ing_source src;
    enum ing_reason why;
    int32_t p = m->partition;

    if (s->state != S_RUNNING)
        return; /* not processed: its offset is not advanced, so it is never committed */
    if (m->rkt != s->raw_rkt) {
        if (strcmp(rd_kafka_topic_name(m->rkt), s->t_raw) != 0)
            return; /* as above */
        s->raw_rkt = m->rkt;
    }
    if (p < 0 || p >= ING_SERVICE_MAX_PARTITIONS) {
        fail(s, CORE_ETOOBIG, "partition number above ING_SERVICE_MAX_PARTITIONS");
        return;
    }
    src.topic = s->t_raw;
    src.partition = p;
    src.offset = m->offset;
    if ((s->since_clock++ & 1023u) == 0) /* the engine's clock only drives idle timeouts */
        s->now_ms = wall_ms();
    if (ing_engine_push(s->eng, m->payload, m->payload ? m->len : 0, m->key, m->key_len, &src,
                        s->now_ms, &s->sink, &why) != CORE_OK) {
        fail(s, CORE_EINVAL, "engine refused a message");
        return;
    }
    s->parts[p].next = m->offset + 1;
    /* Single writer (this thread): a relaxed load + store, no locked read-modify-write. */
    atomic_store_explicit(&s->a_consumed,
                          atomic_load_explicit(&s->a_consumed, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    s->consumed_any = true;
    s->last_consume = uv_now(s->loop);
    broker_answered(s);
}

/* Look-ahead (core_kconsumer_ops.on_peek): start loading the device state of a record
 * CORE_KAFKA_LOOKAHEAD records before it is pushed. */
static void on_peek(void *arg, const rd_kafka_message_t *m)
{
    struct ing_service *s = arg;
    ing_engine_prefetch(s->eng, m->payload, m->payload ? m->len : 0, m->key, m->key_len);
}

static void on_assign(void *arg, const rd_kafka_topic_partition_list_t *parts)
{
    struct ing_service *s = arg;
    s->group_joined = true;
    for (int i = 0; i < parts->cnt; i++) {
        int32_t p = parts->elems[i].partition;
        if (p >= 0 && p < ING_SERVICE_MAX_PARTITIONS &&
            strcmp(parts->elems[i].topic, s->t_raw) == 0) {
            s->parts[p].assigned = true;
            s->parts[p].next = -1;
            s->parts[p].committed = -1;
        }
    }
    atomic_store(&s->a_assigned, core_kconsumer_assigned(s->cons) > 0);
    s->unassigned_since = core_kconsumer_assigned(s->cons) > 0 ? 0 : uv_now(s->loop) | 1u;
    health_refresh(s);
}

static void on_revoke(void *arg, const rd_kafka_topic_partition_list_t *parts)
{
    struct ing_service *s = arg;

    /* Try to commit what is safe before losing the partitions (the mock refuses commits
     * during a rebalance, KAFKA.md §3.3: then the next owner re-reads; duplicates). */
    if (s->state == S_RUNNING)
        (void)commit_now(s);
    for (int i = 0; i < parts->cnt; i++) {
        int32_t p = parts->elems[i].partition;
        if (p < 0 || p >= ING_SERVICE_MAX_PARTITIONS ||
            strcmp(parts->elems[i].topic, s->t_raw) != 0)
            continue;
        s->parts[p].assigned = false;
        s->parts[p].next = -1;
        size_t dropped = ing_engine_forget_partition(s->eng, p);
        if (dropped)
            CORE_INFO("partition %" PRId32 " revoked: %zu buffered readings left to its next "
                      "owner",
                      p, dropped);
    }
    atomic_store(&s->a_assigned, false);
    if (!s->unassigned_since)
        s->unassigned_since = uv_now(s->loop) | 1u; /* nonzero: "since" is set */
}

static void on_gap(void *arg, const char *topic, int32_t partition, int64_t from, int64_t to)
{
    struct ing_service *s = arg;
    (void)topic;
    (void)partition; /* -1: the cluster was replaced (unknown range; counted as a gap) */
    atomic_fetch_add(&s->a_gaps, 1);
    core_metric_add(s->m.gaps, 1);
    if (to > from) {
        atomic_fetch_add(&s->a_lost, (uint64_t)(to - from));
        core_metric_add(s->m.lost, (uint64_t)(to - from));
    }
}

static void on_error(void *arg, rd_kafka_resp_err_t err, const char *reason, bool fatal)
{
    struct ing_service *s = arg;
    if (fatal) {
        fail(s, CORE_EKAFKA, reason);
        return;
    }
    if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN || err == RD_KAFKA_RESP_ERR__TRANSPORT) {
        if (!s->broker_down) {
            s->broker_down_since = uv_now(s->loop);
            CORE_WARN("broker unreachable: --exit-idle does not count while it is (an outage "
                      "is not the end of the stream)");
        }
        s->broker_down = true;
    }
}

/* ------------------------------------------------------------------------------------ */
/* Timers */

static void on_commit_timer(uv_timer_t *t)
{
    struct ing_service *s = t->data;
    if (s->state == S_RUNNING)
        (void)commit_now(s);
}

static void backpressure(struct ing_service *s)
{
    size_t q = core_kproducer_outq(s->prod);
    if (!s->paused && q > OUTQ_HIGH) {
        s->paused = true;
        core_kconsumer_pause(s->cons, true);
    } else if (s->paused && q < OUTQ_LOW) {
        s->paused = false;
        core_kconsumer_pause(s->cons, false);
    }
}

static void on_tick(uv_timer_t *t)
{
    struct ing_service *s = t->data;
    uint64_t now = uv_now(s->loop);

    s->now_ms = wall_ms();
    if (s->state == S_RUNNING) {
        if (s->held && now - s->held_since >= OUT_HOLD_MAX_MS) {
            CORE_WARN("%zu bytes of records unacknowledged for %d ms: intake resumed (the "
                      "broker is slow or unreachable)",
                      s->out_bytes, OUT_HOLD_MAX_MS);
            s->hold_expired = true;
            hold_intake(s, false);
        }
        ing_engine_tick(s->eng, s->now_ms, &s->sink);
        backpressure(s);
        if (s->broker_down || core_kconsumer_assigned(s->cons) == 0 || s->held)
            s->last_consume = now; /* idle only counts while the stream can be read (a hold
                                      for unacknowledged output is not the stream's end) */
        if (s->opts.exit_idle_ms > 0 && s->consumed_any &&
            now - s->last_consume >= (uint64_t)s->opts.exit_idle_ms) {
            CORE_INFO("nothing consumed for %" PRId64 " ms: stopping", s->opts.exit_idle_ms);
            if (s->opts.flush_on_idle)
                ing_engine_flush(s->eng, &s->sink);
            ing_service_stop(s);
        }
    }
    if (s->state == S_DRAINING)
        drain_step(s);
    if (s->state == S_CLOSING && now - s->close_started >= ING_SERVICE_CLOSE_MS) {
        CORE_WARN("the consumer did not leave its group within %d ms (broker gone?); "
                  "stopping anyway",
                  ING_SERVICE_CLOSE_MS);
        finish(s);
    }
    metrics_refresh(s);
    health_refresh(s);
}

/* ------------------------------------------------------------------------------------ */
/* Lifecycle */

/* The prefetch keys the service sets unless a kafka.* key of the same name is given. */
static const char *const prefetch_keys[][2] = {
    {"queued.min.messages", "50000"},
    {"queued.max.messages.kbytes", "4096"},
    {"fetch.max.bytes", "2097152"},
    {"max.partition.fetch.bytes", "262144"},
};
#define N_PREFETCH_KEYS (sizeof(prefetch_keys) / sizeof(prefetch_keys[0]))

struct find_keys {
    bool given[N_PREFETCH_KEYS];
};

static void find_key(const char *name, const char *value, void *arg)
{
    struct find_keys *f = arg;
    (void)value;
    for (size_t i = 0; i < N_PREFETCH_KEYS; i++)
        if (strcmp(name, prefetch_keys[i][0]) == 0)
            f->given[i] = true;
}

/* Size the consumer's prefetch (a kafka.* setting of the same name wins), bounded for
 * memory: peak RSS <= 96 MiB with 10 000 devices (issue 14).
 * librdkafka 2.0.2 stops fetching once the consumer queue (all assigned partitions share
 * it) holds queued.min.messages messages or queued.max.messages.kbytes of payload, and
 * looks again only when the leader's broker thread next wakes up: with no fetch in flight,
 * its 1 s idle timeout (2.1.0 added fetch.queue.backoff.ms for this). A queue of less than
 * 1 s of consumption therefore ran dry and the loop waited (measured: 20-45 % of the wall
 * with 8 MiB). The service now wakes it (core_kconsumer_set_refill, ingest.prefetch_refill):
 * once the queue drains, a watermark query to a partition leader makes that broker thread
 * fetch again, so a queue of ~4 MiB (~23 000 readings, ~50 ms at 500 k/s) suffices. Fetch
 * sizes are bounded too: the queue check happens before a fetch, so one fetch response
 * (decompressed) comes on top of the bound. Measured with `gcdp bench ingest` (1 M
 * readings, 10 000 devices, 8 partitions): see docs/operations.md "Bounded prefetch". */
static core_err size_prefetch(const struct core_config *cfg, rd_kafka_conf_t *cc, char *eb,
                              size_t ebn)
{
    struct find_keys f;
    core_err rc = CORE_OK;

    memset(&f, 0, sizeof(f));
    core_config_each_kafka(cfg, find_key, &f);
    for (size_t i = 0; rc == CORE_OK && i < N_PREFETCH_KEYS; i++) {
        const char *v = prefetch_keys[i][1];
        char mmb[32];
        size_t n = sizeof(mmb);
        if (f.given[i])
            continue;
        /* librdkafka refuses fetch.max.bytes < message.max.bytes: follow a larger one. */
        if (strcmp(prefetch_keys[i][0], "fetch.max.bytes") == 0 &&
            rd_kafka_conf_get(cc, "message.max.bytes", mmb, &n) == RD_KAFKA_CONF_OK &&
            strtoll(mmb, NULL, 10) > strtoll(v, NULL, 10))
            v = mmb;
        rc = core_kafka_conf_set(cc, prefetch_keys[i][0], v, eb, ebn);
    }
    return rc;
}

static core_err make_clients(struct ing_service *s, char *eb, size_t ebn)
{
    rd_kafka_conf_t *cc = NULL, *pc = NULL;
    const char *topics[1] = {s->t_raw};
    struct core_kconsumer_ops ops = {
        .on_message = on_message,
        .on_assign = on_assign,
        .on_revoke = on_revoke,
        .on_gap = on_gap,
        .on_error = on_error,
        .on_commit = on_commit,
        .on_closed = on_closed,
        .on_peek = on_peek,
        .arg = s,
    };
    core_err rc;

    rc = core_kafka_conf_new(s->cfg, CORE_KAFKA_PRODUCER, NULL, &pc, eb, ebn);
    if (rc != CORE_OK)
        return rc;
    rc = core_kproducer_new(s->loop, pc, on_delivery, s, &s->prod, eb, ebn); /* takes pc */
    if (rc != CORE_OK)
        return rc;
    rc = core_kafka_conf_new(s->cfg, CORE_KAFKA_CONSUMER, s->opts.group, &cc, eb, ebn);
    if (rc != CORE_OK)
        return rc;
    rc = size_prefetch(s->cfg, cc, eb, ebn);
    if (rc != CORE_OK) {
        rd_kafka_conf_destroy(cc);
        return rc;
    }
    rc = core_kconsumer_new(s->loop, cc, topics, 1, &ops, &s->cons, eb, ebn); /* takes cc */
    if (rc != CORE_OK)
        return rc;
    /* read once: health_refresh runs on every tick */
    s->session_timeout_ms = (uint64_t)core_kconsumer_session_timeout_ms(s->cons);
    core_kconsumer_set_refill(s->cons, core_config_bool(s->cfg, "ingest.prefetch_refill"));
    return CORE_OK;
}

core_err ing_service_new(uv_loop_t *loop, const struct core_config *cfg,
                         const struct ing_service_opts *opts, struct core_metrics *metrics,
                         struct ing_service **out, char *eb, size_t ebn)
{
    struct ing_service *s;
    struct ing_params params;
    core_err rc;

    if (!opts->group || !opts->group[0] || opts->commit_interval_ms <= 0) {
        snprintf(eb, ebn, "ingest: a group id and a positive commit interval are required");
        return CORE_ECONFIG;
    }
    rc = ing_params_from_config(cfg, &params, eb, ebn);
    if (rc != CORE_OK)
        return rc;
    s = core_xcalloc(1, sizeof(*s));
    s->loop = loop;
    s->cfg = cfg;
    s->opts = *opts;
    s->metrics = metrics;
    s->t_raw = core_config_str(cfg, "topics.raw");
    s->t_windows = core_config_str(cfg, "topics.windows");
    s->t_rejected = core_config_str(cfg, "topics.rejected");
    for (int i = 0; i < ING_SERVICE_MAX_PARTITIONS; i++)
        s->parts[i].next = s->parts[i].committed = -1;
    atomic_init(&s->a_lag, -1);
    s->eng = ing_engine_new(&params, eb, ebn);
    if (!s->eng) {
        free(s);
        return CORE_ECONFIG;
    }
    s->sink.on_window = on_window;
    s->sink.on_reject = on_reject;
    s->sink.arg = s;
    metrics_register(s);
    health_refresh(s);
    rc = make_clients(s, eb, ebn);
    if (rc != CORE_OK) {
        s->state = S_DONE;
        ing_service_free(s);
        return rc;
    }
    uv_timer_init(loop, &s->commit_timer);
    uv_timer_init(loop, &s->tick_timer);
    s->commit_timer.data = s->tick_timer.data = s;
    s->open_timers = 2;
    uv_timer_start(&s->commit_timer, on_commit_timer, (uint64_t)opts->commit_interval_ms,
                   (uint64_t)opts->commit_interval_ms);
    uv_timer_start(&s->tick_timer, on_tick, TICK_MS, TICK_MS);
    CORE_INFO("ingest started: group '%s', %s -> %s + %s", opts->group, s->t_raw, s->t_windows,
              s->t_rejected);
    *out = s;
    return CORE_OK;
}

void ing_service_stats(const struct ing_service *s, struct ing_service_stats *out)
{
    struct ing_service *w = (struct ing_service *)s; /* atomics are read-only here */
    out->consumed = atomic_load(&w->a_consumed);
    out->accepted = atomic_load(&w->a_accepted);
    out->rejected = atomic_load(&w->a_rejected);
    out->windows_out = atomic_load(&w->a_windows_out);
    out->produced = atomic_load(&w->a_produced);
    out->rejected_out = atomic_load(&w->a_rejected_out);
    out->produce_errors = atomic_load(&w->a_produce_errors);
    out->commits = atomic_load(&w->a_commits);
    out->commit_errors = atomic_load(&w->a_commit_errors);
    out->offset_gaps = atomic_load(&w->a_gaps);
    out->offsets_lost = atomic_load(&w->a_lost);
    out->lag = atomic_load(&w->a_lag);
    out->open_devices = atomic_load(&w->a_open_devices);
    out->assigned = atomic_load(&w->a_assigned);
    out->refill_nudges = w->cons ? core_kconsumer_refill_nudges(w->cons) : 0;
    out->output_holds = atomic_load(&w->a_holds);
    out->output_held_ms = atomic_load(&w->a_held_ms);
    for (int i = 0; i < ING_REASON_COUNT; i++)
        out->rejected_by_reason[i] = atomic_load(&w->a_rejected_by[i]);
}

void ing_service_free(struct ing_service *s)
{
    if (!s)
        return;
    core_kconsumer_free(s->cons); /* after on_closed: no blocking */
    core_kproducer_free(s->prod); /* outq is empty unless the drain deadline passed */
    for (int p = 0; p < ING_SERVICE_MAX_PARTITIONS; p++) {
        struct pstate *ps = &s->parts[p];
        while (ps->n > 0)
            heap_pop(ps);
        free(ps->heap);
    }
    ing_engine_free(s->eng);
    free(s);
}
