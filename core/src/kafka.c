/* kafka.c - librdkafka consumer/producer on a libuv loop: io-event pipe + uv_poll bridge,
 * budgeted draining with an idle continuation, keepalive polling, async close, offset-gap
 * detection. The recipe and its pitfalls are KAFKA.md §6.1-6.2. */
#include "core/kafka.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/kconf.h"
#include "core/log.h"
#include "core/mem.h"

/* ------------------------------------------------------------------------------------ */
/* The bridge: queue io-event -> pipe -> uv_poll (+ idle continuation + keepalive timer) */

typedef bool drain_fn(void *owner); /* true when more work is pending (budget ran out) */

struct bridge {
    uv_poll_t poll;
    uv_idle_t idle;
    uv_timer_t keepalive;
    int fds[2];
    rd_kafka_queue_t *q; /* the final queue the io-event is enabled on; ours */
    drain_fn *drain;
    void *owner;
    int open;                     /* uv handles not yet closed */
    bool closing;                 /* handles being closed */
    void (*release)(void *owner); /* set by _free: frees the owner when open reaches 0 */
};

static void on_idle(uv_idle_t *h)
{
    struct bridge *b = h->data;
    if (!b->drain(b->owner))
        uv_idle_stop(h);
}

static void on_readable(uv_poll_t *h, int status, int events)
{
    struct bridge *b = h->data;
    char buf[256];

    (void)status;
    (void)events;
    while (read(b->fds[0], buf, sizeof(buf)) > 0)
        ;
    if (b->drain(b->owner))
        uv_idle_start(&b->idle, on_idle);
}

static void on_keepalive(uv_timer_t *h)
{
    struct bridge *b = h->data;
    if (b->drain(b->owner))
        uv_idle_start(&b->idle, on_idle);
}

static core_err bridge_init(struct bridge *b, uv_loop_t *loop, rd_kafka_queue_t *q, drain_fn *drain,
                            void *owner, char *eb, size_t ebn)
{
    b->fds[0] = b->fds[1] = -1;
    b->q = q;
    b->drain = drain;
    b->owner = owner;
    if (pipe(b->fds) != 0) {
        snprintf(eb, ebn, "pipe: %s", strerror(errno));
        return CORE_EIO;
    }
    for (int i = 0; i < 2; i++) { /* §6.2.2: MUST be non-blocking (and close-on-exec) */
        int fl = fcntl(b->fds[i], F_GETFL);
        if (fl < 0 || fcntl(b->fds[i], F_SETFL, fl | O_NONBLOCK) != 0 ||
            fcntl(b->fds[i], F_SETFD, FD_CLOEXEC) != 0) {
            snprintf(eb, ebn, "fcntl: %s", strerror(errno));
            return CORE_EIO;
        }
    }
    if (uv_poll_init(loop, &b->poll, b->fds[0]) != 0) {
        snprintf(eb, ebn, "uv_poll_init failed");
        return CORE_EIO;
    }
    uv_idle_init(loop, &b->idle);
    uv_timer_init(loop, &b->keepalive);
    b->poll.data = b->idle.data = b->keepalive.data = b;
    b->open = 3;
    rd_kafka_queue_io_event_enable(q, b->fds[1], "1", 1);
    uv_poll_start(&b->poll, UV_READABLE, on_readable);
    uv_timer_start(&b->keepalive, on_keepalive, 1000, 1000); /* §6.2.4 */
    /* Events may already be queued (the edge happened before we listened). */
    uv_idle_start(&b->idle, on_idle);
    return CORE_OK;
}

static void on_handle_closed(uv_handle_t *h)
{
    struct bridge *b = h->data;
    if (--b->open == 0) {
        close(b->fds[0]);
        close(b->fds[1]);
        b->fds[0] = b->fds[1] = -1;
        if (b->release)
            b->release(b->owner);
    }
}

/* Stop watching and close the uv handles (the loop can then end); the client stays
 * usable for a final destroy. Idempotent. */
static void bridge_detach(struct bridge *b)
{
    if (b->closing)
        return;
    b->closing = true;
    if (b->q)
        rd_kafka_queue_io_event_enable(b->q, -1, NULL, 0); /* before the pipe goes (§6.2.8) */
    if (b->open == 0) {
        if (b->fds[0] >= 0) {
            close(b->fds[0]);
            close(b->fds[1]);
            b->fds[0] = b->fds[1] = -1;
        }
        return;
    }
    uv_close((uv_handle_t *)&b->poll, on_handle_closed);
    uv_close((uv_handle_t *)&b->idle, on_handle_closed);
    uv_close((uv_handle_t *)&b->keepalive, on_handle_closed);
}

/* Drop the queue reference (before rd_kafka_destroy). */
static void bridge_stop(struct bridge *b)
{
    bridge_detach(b);
    if (b->q) {
        rd_kafka_queue_destroy(b->q);
        b->q = NULL;
    }
}

/* Free the owner now if every handle is closed, else when the last one is. */
static void bridge_release(struct bridge *b, void (*release)(void *))
{
    if (b->open == 0)
        release(b->owner);
    else
        b->release = release;
}

/* librdkafka log lines (served on the loop thanks to log.queue=true). */
static void log_line(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    int lvl = level <= 3   ? CORE_LOG_ERROR
              : level <= 4 ? CORE_LOG_WARN
              : level <= 6 ? CORE_LOG_INFO
                           : CORE_LOG_DEBUG;
    CORE_LOG(lvl, "librdkafka %s %s: %s", rd_kafka_name(rk), fac, buf);
}

/* ------------------------------------------------------------------------------------ */
/* Consumer */

struct part_state {
    char topic[128];
    int32_t partition;
    int64_t next;       /* offset expected next; -1 unknown */
    int64_t reset_from; /* offset of a reported reset not yet resolved; -1 none */
};

/* Refill nudge (core_kconsumer_set_refill): one watermark query in flight at most. The
 * query runs on libuv's thread pool; the struct is freed by its after-callback on the loop,
 * which finds c == NULL when the consumer was freed first. */
struct nudge {
    uv_work_t req;
    rd_kafka_t *rk;
    char topic[128];
    int32_t partition;
    struct core_kconsumer *c;
    atomic_bool done; /* the worker no longer uses rk */
};

struct refill {
    double bound_bytes; /* queued.max.messages.kbytes in bytes; 0: nudging off */
    double bound_msgs;  /* queued.min.messages */
    double avg_len;     /* running mean of key + payload bytes per message */
    bool armed;         /* the queue held 3/4 of a bound since the last nudge */
    struct nudge *inflight;
    size_t next;             /* rotation over the assigned partitions */
    _Atomic uint64_t nudges; /* read from any thread */
};

struct core_kconsumer {
    bool cluster_replaced; /* a CLUSTERID change was reported (once) */
    struct bridge br;
    rd_kafka_t *rk;
    struct core_kconsumer_ops ops;
    rd_kafka_topic_partition_list_t *assigned; /* copy of the current assignment */
    struct part_state parts[CORE_KAFKA_MAX_PARTITIONS];
    size_t nparts, last_part;
    /* check_offset's one-entry cache: parts[hit_idx] is (hit_rkt's topic, hit_part), so a
     * run of messages of one partition costs no topic-name lookup or strcmp. Entries are
     * never removed or moved, so the index stays valid. */
    const rd_kafka_topic_t *hit_rkt;
    int32_t hit_part;
    size_t hit_idx;
    bool paused, closing, closed, closed_notified, fatal;
    bool held; /* core_kconsumer_hold: take no message from the queue */
    struct refill refill;
    /* Look-ahead (ops.on_peek): records taken from the queue, not yet handled, oldest at
     * ahead_first; handed over by ahead_flush / the drain loop. */
    rd_kafka_message_t *ahead[CORE_KAFKA_LOOKAHEAD];
    unsigned ahead_first, ahead_n;
    bool flushing;
};

static struct part_state *part_find(struct core_kconsumer *c, const char *topic, int32_t p,
                                    bool create)
{
    struct part_state *s = &c->parts[c->last_part];
    if (c->nparts && s->partition == p && strcmp(s->topic, topic) == 0)
        return s;
    for (size_t i = 0; i < c->nparts; i++) {
        s = &c->parts[i];
        if (s->partition == p && strcmp(s->topic, topic) == 0) {
            c->last_part = i;
            return s;
        }
    }
    if (!create || c->nparts == CORE_KAFKA_MAX_PARTITIONS || strlen(topic) >= sizeof(s->topic))
        return NULL;
    s = &c->parts[c->nparts];
    snprintf(s->topic, sizeof(s->topic), "%s", topic);
    s->partition = p;
    s->next = -1;
    s->reset_from = -1;
    c->last_part = c->nparts++;
    return s;
}

static void report_gap(struct core_kconsumer *c, const char *topic, int32_t p, int64_t from,
                       int64_t to)
{
    CORE_ERROR("offset gap on %s [%" PRId32 "]: offsets %" PRId64 "..%" PRId64 " (%" PRId64
               " records) will never be consumed",
               topic, p, from, to - 1, to - from);
    if (c->ops.on_gap)
        c->ops.on_gap(c->ops.arg, topic, p, from, to);
}

/* Track the per-partition expected offset; report a forward jump as a gap. */
static void check_offset(struct core_kconsumer *c, const rd_kafka_message_t *m)
{
    struct part_state *s;
    int64_t from;

    if (c->hit_rkt && m->rkt == c->hit_rkt && m->partition == c->hit_part) {
        s = &c->parts[c->hit_idx];
    } else {
        s = part_find(c, rd_kafka_topic_name(m->rkt), m->partition, true);
        if (!s)
            return;
        c->hit_rkt = m->rkt;
        c->hit_part = m->partition;
        c->hit_idx = (size_t)(s - c->parts);
    }
    from = s->next >= 0 ? s->next : s->reset_from;
    if (from >= 0 && m->offset > from) {
        report_gap(c, s->topic, m->partition, from, m->offset);
    } else if (s->next < 0 && s->reset_from >= 0 && m->offset < s->reset_from) {
        /* An offset reset took the position backwards: the log no longer reaches where we
         * were (replaced or truncated under us). What it held past m->offset that we had
         * not consumed is gone: a gap of unknown size, reported, never a silent re-read. */
        CORE_ERROR("kafka: %s [%d] went back from offset %lld to %lld after an offset "
                   "reset: the partition's log was replaced or truncated; records not yet "
                   "consumed from it are lost",
                   s->topic, (int)m->partition, (long long)s->reset_from, (long long)m->offset);
        if (c->ops.on_gap)
            c->ops.on_gap(c->ops.arg, s->topic, m->partition, -1, -1);
    }
    s->reset_from = -1;
    s->next = m->offset + 1;
}

/* Parse "... TOPIC [P]: offset reset (at offset N, ..." (librdkafka 2.0.2 rdkafka_offset.c;
 * the line starts with "[thrd:...]: "). Returns true with the three fields. */
static bool parse_reset(const char *buf, char *topic, size_t tn, int32_t *p, int64_t *at)
{
    static const char mark[] = "]: offset reset (at offset ";
    const char *m = strstr(buf, mark), *lb, *t0;
    char *end;
    long part;
    long long off;

    if (!m)
        return false;
    for (lb = m; lb > buf && *lb != '['; lb--)
        ;
    if (lb == buf || lb[-1] != ' ')
        return false;
    part = strtol(lb + 1, &end, 10);
    if (end != m || part < 0 || part > INT32_MAX)
        return false;
    for (t0 = lb - 1; t0 > buf && t0[-1] != ' '; t0--)
        ;
    if ((size_t)(lb - 1 - t0) >= tn || lb - 1 == t0)
        return false;
    off = strtoll(m + sizeof(mark) - 1, &end, 10);
    if (end == m + sizeof(mark) - 1)
        return false;
    memcpy(topic, t0, (size_t)(lb - 1 - t0));
    topic[lb - 1 - t0] = '\0';
    *p = (int32_t)part;
    *at = off;
    return true;
}

static void handle_message(struct core_kconsumer *c, rd_kafka_message_t *m);

/* Hand every record held by the look-ahead to on_message, oldest first. Called before any
 * other event of the consumer is acted on, so that events see the records taken before
 * them as handled (the order without a look-ahead). */
static void ahead_flush(struct core_kconsumer *c)
{
    if (c->flushing)
        return;
    c->flushing = true;
    while (c->ahead_n > 0) {
        rd_kafka_message_t *m = c->ahead[c->ahead_first];
        c->ahead_first = (c->ahead_first + 1) % CORE_KAFKA_LOOKAHEAD;
        c->ahead_n--;
        handle_message(c, m);
        rd_kafka_message_destroy(m);
    }
    c->flushing = false;
}

/* Take m into the look-ahead; returns the record that falls out (the oldest) when it was
 * full, else NULL. */
static rd_kafka_message_t *ahead_push(struct core_kconsumer *c, rd_kafka_message_t *m)
{
    rd_kafka_message_t *out = NULL;

    if (c->ahead_n == CORE_KAFKA_LOOKAHEAD) {
        out = c->ahead[c->ahead_first];
        c->ahead_first = (c->ahead_first + 1) % CORE_KAFKA_LOOKAHEAD;
        c->ahead_n--;
    }
    c->ahead[(c->ahead_first + c->ahead_n) % CORE_KAFKA_LOOKAHEAD] = m;
    c->ahead_n++;
    return out;
}

/* librdkafka logs "T [P]: offset reset (at offset N, broker B) to ..." at warning level
 * when a fetch position is no longer on the broker (KAFKA.md §3.1). */
static void consumer_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    struct core_kconsumer *c = rd_kafka_opaque(rk);
    struct part_state *s;
    char topic[128];
    int32_t p;
    int64_t at;

    ahead_flush(c); /* served on the loop (log.queue): after the records taken before it */
    log_line(rk, level, fac, buf);
    if (strcmp(fac, "CLUSTERID") == 0 && !c->cluster_replaced) {
        /* The brokers were replaced by another cluster (an empty one, a restore): committed
         * offsets and records not yet consumed on the old cluster are gone. Not silently:
         * reported once as a gap of unknown size (partition -1). */
        c->cluster_replaced = true;
        CORE_ERROR("kafka: the broker now belongs to another cluster (ClusterId changed): "
                   "records not consumed from the old cluster are lost and offsets restart");
        if (c->ops.on_gap)
            c->ops.on_gap(c->ops.arg, "*", -1, -1, -1);
        return;
    }
    if (strcmp(fac, "OFFSET") != 0 || !parse_reset(buf, topic, sizeof(topic), &p, &at))
        return;
    s = part_find(c, topic, p, true);
    if (!s)
        return;
    if (s->reset_from < 0)
        s->reset_from = s->next >= 0 ? s->next : at;
    s->next = -1; /* the next message resolves the range from reset_from */
}

static void consumer_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    struct core_kconsumer *c = opaque;
    char fatal_reason[512];
    bool fatal = err == RD_KAFKA_RESP_ERR__FATAL;

    ahead_flush(c);
    if (fatal) {
        err = rd_kafka_fatal_error(rk, fatal_reason, sizeof(fatal_reason));
        reason = fatal_reason;
        c->fatal = true;
    }
    CORE_LOG(fatal ? CORE_LOG_ERROR : CORE_LOG_WARN, "kafka consumer %s: %s: %s", rd_kafka_name(rk),
             rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
    if (c->ops.on_error)
        c->ops.on_error(c->ops.arg, (rd_kafka_resp_err_t)err, reason, fatal);
}

static void commit_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t *offsets, void *opaque)
{
    struct core_kconsumer *c = opaque;
    (void)rk;
    ahead_flush(c);
    if (err && err != RD_KAFKA_RESP_ERR__NO_OFFSET)
        CORE_WARN("offset commit failed: %s (the next owner re-reads; duplicates allowed)",
                  rd_kafka_err2str(err));
    if (c->ops.on_commit)
        c->ops.on_commit(c->ops.arg, err, offsets);
}

static void set_assigned(struct core_kconsumer *c, const rd_kafka_topic_partition_list_t *l)
{
    if (c->assigned)
        rd_kafka_topic_partition_list_destroy(c->assigned);
    c->assigned = l ? rd_kafka_topic_partition_list_copy(l) : NULL;
}

/* Our own copy of the assignment, updated from what the callback is given: querying it with
 * rd_kafka_assignment() inside the rebalance callback while the consumer closes can block
 * forever in librdkafka 2.0.x (seen once in ~35 exits: SIGTERM then did nothing). */
static void track_assignment(struct core_kconsumer *c, const rd_kafka_topic_partition_list_t *parts,
                             bool assign, bool coop)
{
    rd_kafka_topic_partition_list_t *now;

    if (!coop) { /* eager: the callback carries the whole new assignment, or a full revoke */
        set_assigned(c, assign && parts->cnt ? parts : NULL);
        return;
    }
    now = c->assigned ? rd_kafka_topic_partition_list_copy(c->assigned)
                      : rd_kafka_topic_partition_list_new(parts->cnt);
    for (int i = 0; i < parts->cnt; i++) {
        const rd_kafka_topic_partition_t *t = &parts->elems[i];
        if (assign) {
            if (!rd_kafka_topic_partition_list_find(now, t->topic, t->partition))
                rd_kafka_topic_partition_list_add(now, t->topic, t->partition);
        } else {
            rd_kafka_topic_partition_list_del(now, t->topic, t->partition);
        }
    }
    set_assigned(c, now->cnt ? now : NULL);
    rd_kafka_topic_partition_list_destroy(now);
}

static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    struct core_kconsumer *c = opaque;
    bool coop = strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE") == 0;
    rd_kafka_error_t *e = NULL;
    rd_kafka_resp_err_t r = 0;

    ahead_flush(c); /* the records taken before the rebalance belong to the old assignment */
    CORE_INFO("rebalance: %s %d partition(s)",
              err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS ? "assigned" : "revoked", parts->cnt);
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        if (coop)
            e = rd_kafka_incremental_assign(rk, parts);
        else
            r = rd_kafka_assign(rk, parts);
        track_assignment(c, parts, true, coop);
        if (c->paused && c->assigned && !c->closing)
            rd_kafka_pause_partitions(rk, c->assigned);
        if (c->ops.on_assign)
            c->ops.on_assign(c->ops.arg, parts);
    } else {
        if (c->ops.on_revoke)
            c->ops.on_revoke(c->ops.arg, parts);
        if (coop)
            e = rd_kafka_incremental_unassign(rk, parts);
        else
            r = rd_kafka_assign(rk, NULL);
        track_assignment(c, parts, false, coop);
    }
    if (e) {
        CORE_ERROR("rebalance: %s", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
    } else if (r) {
        CORE_ERROR("rebalance: %s", rd_kafka_err2str(r));
    }
}

/* ------------------------------------------------------------------------------------ */
/* Refill nudge: wake the fetcher of a drained prefetch queue (core_kconsumer_set_refill) */

#define NUDGE_TIMEOUT_MS 500

static void nudge_work(uv_work_t *req)
{
    struct nudge *n = req->data;
    int64_t lo, hi;

    /* The result does not matter: the request itself wakes the leader's broker thread,
     * whose serve loop then re-decides fetching for every partition it leads. */
    (void)rd_kafka_query_watermark_offsets(n->rk, n->topic, n->partition, &lo, &hi,
                                           NUDGE_TIMEOUT_MS);
    atomic_store(&n->done, true);
}

static void nudge_after(uv_work_t *req, int status)
{
    struct nudge *n = req->data;
    (void)status;
    if (n->c)
        n->c->refill.inflight = NULL;
    free(n);
}

static void nudge_start(struct core_kconsumer *c)
{
    const rd_kafka_topic_partition_t *t =
        &c->assigned->elems[c->refill.next++ % (size_t)c->assigned->cnt];
    struct nudge *n;

    if (strlen(t->topic) >= sizeof(n->topic))
        return;
    n = core_xcalloc(1, sizeof(*n));
    n->rk = c->rk;
    snprintf(n->topic, sizeof(n->topic), "%s", t->topic);
    n->partition = t->partition;
    n->c = c;
    n->req.data = n;
    atomic_init(&n->done, false);
    if (uv_queue_work(c->br.poll.loop, &n->req, nudge_work, nudge_after) != 0) {
        free(n);
        return;
    }
    c->refill.inflight = n;
    atomic_fetch_add_explicit(&c->refill.nudges, 1, memory_order_relaxed);
}

/* Called at the start of every drain turn (every <= CORE_KAFKA_BUDGET messages) and when a
 * turn finds the queue empty: arm when the queue holds 3/4 of a bound, nudge once when it
 * has drained below half of both (below the bound, so the fetcher will fetch; half leaves
 * the nudge and the fetch it causes time to complete before the queue runs dry). */
static void refill_check(struct core_kconsumer *c)
{
    struct refill *r = &c->refill;
    double q, bytes;

    if (r->bound_bytes <= 0 || c->closing || c->paused || !c->assigned || c->assigned->cnt == 0)
        return;
    q = (double)rd_kafka_queue_length(c->br.q);
    bytes = q * r->avg_len;
    if (bytes >= 0.75 * r->bound_bytes || q >= 0.75 * r->bound_msgs)
        r->armed = true;
    else if (r->armed && !r->inflight && bytes < 0.5 * r->bound_bytes && q < 0.5 * r->bound_msgs) {
        r->armed = false;
        nudge_start(c);
    }
}

/* Wait until an in-flight nudge no longer uses the client (before rd_kafka_destroy); its
 * after-callback, run later on the loop, then only frees it. */
static void refill_release(struct core_kconsumer *c)
{
    struct nudge *n = c->refill.inflight;

    if (!n)
        return;
    n->c = NULL;
    c->refill.inflight = NULL;
    if (uv_cancel((uv_req_t *)&n->req) == 0)
        return; /* never ran; nudge_after runs with UV_ECANCELED */
    while (!atomic_load(&n->done)) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

static bool conf_number(rd_kafka_t *rk, const char *name, double *out)
{
    char buf[32];
    size_t n = sizeof(buf);

    if (rd_kafka_conf_get(rd_kafka_conf(rk), name, buf, &n) != RD_KAFKA_CONF_OK)
        return false;
    *out = strtod(buf, NULL);
    return *out > 0;
}

void core_kconsumer_set_refill(struct core_kconsumer *c, bool on)
{
    double kb = 0, msgs = 0;

    if (on && conf_number(c->rk, "queued.max.messages.kbytes", &kb) &&
        conf_number(c->rk, "queued.min.messages", &msgs)) {
        c->refill.bound_bytes = kb * 1024.0;
        c->refill.bound_msgs = msgs;
    } else {
        c->refill.bound_bytes = 0;
    }
    c->refill.armed = false;
}

uint64_t core_kconsumer_refill_nudges(const struct core_kconsumer *c)
{
    return atomic_load_explicit(&c->refill.nudges, memory_order_relaxed);
}

static void handle_message(struct core_kconsumer *c, rd_kafka_message_t *m)
{
    if (m->err) {
        /* Consumer errors arrive as messages (e.g. partition EOF, unknown topic). */
        if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            CORE_WARN("consume error: %s", rd_kafka_message_errstr(m));
            if (m->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET && m->rkt) {
                struct part_state *s =
                    part_find(c, rd_kafka_topic_name(m->rkt), m->partition, true);
                if (s && s->reset_from < 0)
                    s->reset_from = s->next >= 0 ? s->next : m->offset;
            }
            if (c->ops.on_error)
                c->ops.on_error(c->ops.arg, m->err, rd_kafka_message_errstr(m), false);
        }
        return;
    }
    check_offset(c, m);
    c->ops.on_message(c->ops.arg, m);
}

/* Hand m over now, or through the look-ahead when ops.on_peek is set. */
static void take_message(struct core_kconsumer *c, rd_kafka_message_t *m)
{
    if (c->ops.on_peek && !m->err) {
        c->ops.on_peek(c->ops.arg, m);
        m = ahead_push(c, m);
        if (!m)
            return;
    } else {
        ahead_flush(c); /* an error event: after the records before it */
    }
    handle_message(c, m);
    rd_kafka_message_destroy(m);
}

static bool consumer_drain(void *owner)
{
    struct core_kconsumer *c = owner;
    rd_kafka_message_t *m;

    if (!c->rk)
        return false;
    refill_check(c);
    for (int i = 0; i < CORE_KAFKA_BUDGET; i++) {
        if (c->held && !c->closing) {
            ahead_flush(c);
            return false; /* core_kconsumer_hold(c, false) restarts the turns */
        }
        m = rd_kafka_consumer_poll(c->rk, 0);
        if (!m)
            goto done;
        if (c->refill.bound_bytes > 0) /* mean over ~64 messages */
            c->refill.avg_len += ((double)(m->len + m->key_len) - c->refill.avg_len) / 64.0;
        take_message(c, m);
    }
    return true;
done:
    ahead_flush(c);  /* the queue is empty: nothing to look ahead to */
    refill_check(c); /* the queue is empty now: the turn's first check may have missed it */
    if (c->closing && !c->closed_notified && rd_kafka_consumer_closed(c->rk)) {
        c->closed = c->closed_notified = true;
        CORE_INFO("consumer %s left its group", rd_kafka_name(c->rk));
        if (c->ops.on_closed)
            c->ops.on_closed(c->ops.arg);
    }
    return false;
}

core_err core_kconsumer_new(uv_loop_t *loop, rd_kafka_conf_t *conf, const char *const *topics,
                            size_t ntopics, const struct core_kconsumer_ops *ops,
                            struct core_kconsumer **out, char *eb, size_t ebn)
{
    struct core_kconsumer *c = core_xcalloc(1, sizeof(*c));
    rd_kafka_topic_partition_list_t *sub = NULL;
    rd_kafka_resp_err_t err;
    core_err rc = CORE_EKAFKA;
    char why[512];

    c->ops = *ops;
    rd_kafka_conf_set_opaque(conf, c);
    rd_kafka_conf_set_rebalance_cb(conf, rebalance_cb);
    rd_kafka_conf_set_offset_commit_cb(conf, commit_cb);
    rd_kafka_conf_set_error_cb(conf, consumer_error_cb);
    rd_kafka_conf_set_log_cb(conf, consumer_log_cb);
    c->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, why, sizeof(why));
    if (!c->rk) { /* conf still ours: always taken, so destroy it here */
        snprintf(eb, ebn, "rd_kafka_new(consumer): %s", why);
        rd_kafka_conf_destroy(conf);
        free(c);
        return CORE_EKAFKA;
    }
    /* conf is owned by rk from here on. */
    rd_kafka_poll_set_consumer(c->rk);   /* main queue -> consumer queue */
    rd_kafka_set_log_queue(c->rk, NULL); /* logs -> main -> consumer queue */
    rc = bridge_init(&c->br, loop, rd_kafka_queue_get_consumer(c->rk), consumer_drain, c, eb, ebn);
    if (rc != CORE_OK)
        goto out;
    sub = rd_kafka_topic_partition_list_new((int)ntopics);
    for (size_t i = 0; i < ntopics; i++)
        rd_kafka_topic_partition_list_add(sub, topics[i], RD_KAFKA_PARTITION_UA);
    err = rd_kafka_subscribe(c->rk, sub);
    rd_kafka_topic_partition_list_destroy(sub);
    if (err) {
        snprintf(eb, ebn, "subscribe: %s", rd_kafka_err2str(err));
        rc = CORE_EKAFKA;
        goto out;
    }
    *out = c;
    return CORE_OK;
out:
    c->closed = true; /* never joined */
    core_kconsumer_free(c);
    return rc;
}

void core_kconsumer_pause(struct core_kconsumer *c, bool paused)
{
    if (c->paused == paused)
        return;
    c->paused = paused;
    if (!c->assigned)
        return;
    if (paused)
        rd_kafka_pause_partitions(c->rk, c->assigned);
    else
        rd_kafka_resume_partitions(c->rk, c->assigned);
}

void core_kconsumer_hold(struct core_kconsumer *c, bool held)
{
    if (c->held == held)
        return;
    c->held = held;
    /* The io-event pipe is written once per non-polling spell, so a queue that filled
     * while held may never signal again: drain on the next turn. */
    if (!held && !c->br.closing)
        uv_idle_start(&c->br.idle, on_idle);
}

core_err core_kconsumer_commit(struct core_kconsumer *c,
                               const rd_kafka_topic_partition_list_t *offsets)
{
    rd_kafka_resp_err_t err = rd_kafka_commit(c->rk, offsets, 1);
    if (err) {
        CORE_WARN("commit: %s", rd_kafka_err2str(err));
        return CORE_EKAFKA;
    }
    return CORE_OK;
}

void core_kconsumer_close(struct core_kconsumer *c)
{
    rd_kafka_error_t *e;

    if (c->closing)
        return;
    c->closing = true;
    e = rd_kafka_consumer_close_queue(c->rk, c->br.q); /* §6.2.6: never block the loop */
    if (e) {
        CORE_ERROR("consumer close: %s", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
    }
    uv_idle_start(&c->br.idle, on_idle); /* drain (revoke, leave) on the next turn */
}

int64_t core_kconsumer_session_timeout_ms(const struct core_kconsumer *c)
{
    char buf[32];
    size_t n = sizeof(buf);
    long long v;

    if (!c->rk ||
        rd_kafka_conf_get(rd_kafka_conf(c->rk), "session.timeout.ms", buf, &n) != RD_KAFKA_CONF_OK)
        return 45000;
    v = strtoll(buf, NULL, 10);
    return v > 0 ? (int64_t)v : 45000;
}

bool core_kconsumer_closed(const struct core_kconsumer *c)
{
    return c->closed;
}

size_t core_kconsumer_assigned(const struct core_kconsumer *c)
{
    return c->assigned ? (size_t)c->assigned->cnt : 0;
}

int64_t core_kconsumer_lag(struct core_kconsumer *c)
{
    rd_kafka_topic_partition_list_t *pos;
    int64_t lag = 0;

    if (!c->assigned)
        return -1;
    pos = rd_kafka_topic_partition_list_copy(c->assigned);
    if (rd_kafka_position(c->rk, pos) != 0) {
        rd_kafka_topic_partition_list_destroy(pos);
        return -1;
    }
    for (int i = 0; i < pos->cnt; i++) {
        int64_t lo, hi;
        rd_kafka_topic_partition_t *t = &pos->elems[i];
        if (rd_kafka_get_watermark_offsets(c->rk, t->topic, t->partition, &lo, &hi) != 0 ||
            hi < 0) {
            lag = -1;
            break;
        }
        lag += t->offset >= 0 ? (hi > t->offset ? hi - t->offset : 0) : (hi - lo);
    }
    rd_kafka_topic_partition_list_destroy(pos);
    return lag;
}

void core_kconsumer_detach(struct core_kconsumer *c)
{
    bridge_detach(&c->br);
}

rd_kafka_t *core_kconsumer_handle(struct core_kconsumer *c)
{
    return c->rk;
}

static void consumer_release(void *owner)
{
    free(owner);
}

void core_kconsumer_free(struct core_kconsumer *c)
{
    if (!c)
        return;
    bridge_stop(&c->br);
    refill_release(c);
    while (c->ahead_n > 0) { /* never handed over: the owner is going away */
        rd_kafka_message_destroy(c->ahead[c->ahead_first]);
        c->ahead_first = (c->ahead_first + 1) % CORE_KAFKA_LOOKAHEAD;
        c->ahead_n--;
    }
    if (c->assigned)
        rd_kafka_topic_partition_list_destroy(c->assigned);
    c->assigned = NULL;
    if (c->rk) {
        /* Not closed (never joined, or the close did not finish): do not block in an
         * implicit close; uncommitted offsets are re-read by the next owner. */
        rd_kafka_destroy_flags(c->rk, c->closed ? 0 : RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
        c->rk = NULL;
    }
    bridge_release(&c->br, consumer_release);
}

/* ------------------------------------------------------------------------------------ */
/* Producer */

struct core_kproducer {
    struct bridge br;
    rd_kafka_t *rk;
    core_kdelivery_fn *on_delivery;
    void *arg;
};

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    struct core_kproducer *p = opaque;
    (void)rk;
    if (m->err)
        CORE_ERROR("delivery to %s failed: %s", rd_kafka_topic_name(m->rkt),
                   rd_kafka_err2str(m->err));
    if (p->on_delivery)
        p->on_delivery(p->arg, m->_private, m->err);
}

static void producer_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    char fatal_reason[512];
    (void)opaque;
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        err = rd_kafka_fatal_error(rk, fatal_reason, sizeof(fatal_reason));
        CORE_ERROR("kafka producer fatal: %s: %s", rd_kafka_err2name((rd_kafka_resp_err_t)err),
                   fatal_reason);
        return;
    }
    CORE_WARN("kafka producer %s: %s: %s", rd_kafka_name(rk),
              rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
}

static bool producer_drain(void *owner)
{
    struct core_kproducer *p = owner;
    int served = 0;

    if (!p->rk)
        return false;
    for (int i = 0; i < CORE_KAFKA_BUDGET; i += served) {
        served = rd_kafka_poll(p->rk, 0);
        if (served <= 0)
            return false;
    }
    return true;
}

core_err core_kproducer_new(uv_loop_t *loop, rd_kafka_conf_t *conf, core_kdelivery_fn *on_delivery,
                            void *arg, struct core_kproducer **out, char *eb, size_t ebn)
{
    struct core_kproducer *p = core_xcalloc(1, sizeof(*p));
    char why[512];
    core_err rc;

    p->on_delivery = on_delivery;
    p->arg = arg;
    rd_kafka_conf_set_opaque(conf, p);
    rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
    rd_kafka_conf_set_error_cb(conf, producer_error_cb);
    rd_kafka_conf_set_log_cb(conf, log_line);
    p->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof(why));
    if (!p->rk) { /* conf still ours: always taken, so destroy it here */
        snprintf(eb, ebn, "rd_kafka_new(producer): %s", why);
        rd_kafka_conf_destroy(conf);
        free(p);
        return CORE_EKAFKA;
    }
    rd_kafka_set_log_queue(p->rk, NULL); /* logs -> main queue, served by rd_kafka_poll */
    rc = bridge_init(&p->br, loop, rd_kafka_queue_get_main(p->rk), producer_drain, p, eb, ebn);
    if (rc != CORE_OK) {
        core_kproducer_free(p);
        return rc;
    }
    *out = p;
    return CORE_OK;
}

rd_kafka_resp_err_t core_kafka_produce_copy_hdrs(rd_kafka_t *rk, const char *topic,
                                                 int32_t partition, const void *key, size_t key_len,
                                                 const void *value, size_t value_len,
                                                 rd_kafka_headers_t *hdrs, void *opaque)
{
    rd_kafka_vu_t vu[7];
    rd_kafka_error_t *e;
    rd_kafka_resp_err_t err;
    size_t n = 0;

    memset(vu, 0, sizeof(vu));
    vu[n].vtype = RD_KAFKA_VTYPE_TOPIC;
    vu[n++].u.cstr = topic;
    vu[n].vtype = RD_KAFKA_VTYPE_PARTITION;
    vu[n++].u.i32 = partition;
    vu[n].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
    vu[n++].u.i = RD_KAFKA_MSG_F_COPY; /* librdkafka copies key and value */
    if (key) {
        vu[n].vtype = RD_KAFKA_VTYPE_KEY;
        vu[n].u.mem.ptr = (void *)key; /* read only (F_COPY) */
        vu[n++].u.mem.size = key_len;
    }
    vu[n].vtype = RD_KAFKA_VTYPE_VALUE;
    vu[n].u.mem.ptr = (void *)value;
    vu[n++].u.mem.size = value_len;
    vu[n].vtype = RD_KAFKA_VTYPE_OPAQUE;
    vu[n++].u.ptr = opaque;
    if (hdrs) {
        vu[n].vtype = RD_KAFKA_VTYPE_HEADERS;
        vu[n++].u.headers = hdrs; /* taken by librdkafka on success only */
    }
    e = rd_kafka_produceva(rk, vu, n);
    if (!e)
        return RD_KAFKA_RESP_ERR_NO_ERROR;
    err = rd_kafka_error_code(e);
    rd_kafka_error_destroy(e);
    return err;
}

rd_kafka_resp_err_t core_kafka_produce_copy(rd_kafka_t *rk, const char *topic, int32_t partition,
                                            const void *key, size_t key_len, const void *value,
                                            size_t value_len, void *opaque)
{
    return core_kafka_produce_copy_hdrs(rk, topic, partition, key, key_len, value, value_len, NULL,
                                        opaque);
}

core_err core_kproducer_send(struct core_kproducer *p, const char *topic, int32_t partition,
                             const void *key, size_t key_len, const void *value, size_t value_len,
                             void *opaque)
{
    rd_kafka_resp_err_t err =
        core_kafka_produce_copy(p->rk, topic, partition, key, key_len, value, value_len, opaque);

    switch (err) {
    case RD_KAFKA_RESP_ERR_NO_ERROR:
        return CORE_OK;
    case RD_KAFKA_RESP_ERR__QUEUE_FULL:
        return CORE_EAGAIN;
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
        return CORE_ETOOBIG;
    default:
        CORE_ERROR("produce to %s: %s", topic, rd_kafka_err2str(err));
        return CORE_EKAFKA;
    }
}

size_t core_kproducer_outq(const struct core_kproducer *p)
{
    int n = rd_kafka_outq_len(p->rk);
    return n > 0 ? (size_t)n : 0;
}

void core_kproducer_poll(struct core_kproducer *p, int timeout_ms)
{
    rd_kafka_poll(p->rk, timeout_ms);
}

void core_kproducer_detach(struct core_kproducer *p)
{
    bridge_detach(&p->br);
}

rd_kafka_t *core_kproducer_handle(struct core_kproducer *p)
{
    return p->rk;
}

static void producer_release(void *owner)
{
    free(owner);
}

void core_kproducer_free(struct core_kproducer *p)
{
    if (!p)
        return;
    bridge_stop(&p->br);
    if (p->rk) {
        rd_kafka_purge(p->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        p->on_delivery = NULL; /* purged records: no callbacks into a dying owner */
        rd_kafka_destroy(p->rk);
        p->rk = NULL;
    }
    bridge_release(&p->br, producer_release);
}

core_err core_kconsumer_new_own(uv_loop_t *loop, const struct core_config *cfg, const char *prefix,
                                const char *topic, const char *offset_reset,
                                const struct core_kconsumer_ops *ops, struct core_kconsumer **out,
                                char *eb, size_t ebn)
{
    const char *topics[1] = {topic};
    char group[512], host[256] = "unknown";
    rd_kafka_conf_t *conf = NULL;
    core_err rc;

    if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "unknown");
    host[sizeof(host) - 1] = '\0';
    snprintf(group, sizeof(group), "%s.%s.%ld", prefix, host, (long)getpid());
    rc = core_kafka_conf_new(cfg, CORE_KAFKA_CONSUMER, group, &conf, eb, ebn);
    if (rc == CORE_OK)
        rc = core_kafka_conf_set(conf, "auto.offset.reset", offset_reset, eb, ebn);
    if (rc != CORE_OK) {
        if (conf)
            rd_kafka_conf_destroy(conf);
        return rc;
    }
    return core_kconsumer_new(loop, conf, topics, 1, ops, out, eb, ebn); /* takes conf */
}
