/* service.c - the release service: windows consumer + θ consumer -> releaser -> producer on
 * one libuv loop, with commit-after-acknowledgement bookkeeping and graceful shutdown.
 * Contract: rel/service.h. Kafka/libuv mechanics: core/kafka.h (KAFKA.md §6). */
#include "rel/service.h"

#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>

#include "cal/theta.h"
#include "core/clock.h"
#include "core/ctl.h"
#include "core/ctl_listen.h"
#include "core/dp_rng.h"
#include "core/kafka.h"
#include "core/kconf.h"
#include "core/ksync.h" /* core_kafka_client_new: the changelog reader */
#include "core/log.h"
#include "core/mem.h"
#include "rel/changelog.h"
#include "rel/drift.h"
#include "rel/plan.h"
#include "rel/release.h"

#define TICK_MS            200
#define OUTQ_HIGH          20000 /* pause intake above this many unacknowledged records */
#define OUTQ_LOW           5000
#define THETA_SETTLE_MS    1500    /* θ topic quiet this long (or lag 0): read to its end */
#define EPS_GAUGE_MS       5000    /* the ε spent gauges (a sort of the cached units) */
#define RESTORE_TIMEOUT_MS 60000   /* one changelog partition's restore */
#define CL_KNOWN_MAX       2000000 /* ids remembered as on the changelog (then forgotten: re-sent) */

static const char *const dlq_codes[REL_DLQ_COUNT] = {"malformed", "not_covered", "budget_cap",
                                                     "no_plan"};

const char *rel_dlq_reason_code(enum rel_dlq_reason r)
{
    return (unsigned)r < REL_DLQ_COUNT ? dlq_codes[r] : "unknown";
}

/* One input record whose output (release or dead letter) is not yet acknowledged. Held by
 * its partition's queue and by the producer's delivery report (refs). */
struct entry {
    struct entry *next;  /* partition queue */
    struct entry *enext; /* emit queue (releases waiting for the group commit) */
    int64_t off;
    int32_t part;
    uint32_t refs;
    bool acked, dead_letter, replayed;
    bool cl_inflight; /* its ledger row is on the way to the changelog; out waits */
    char *out;        /* the output, produced once the changelog record is acknowledged */
    size_t out_len;
    char device[REL_MAX_DEVICE + 1];
    char rid[REL_MAX_ID + 32]; /* release id (releases only) */
};

struct pstate {
    bool assigned;
    bool refused;              /* its changelog was truncated: never released from */
    int64_t next, committed;   /* next offset to consume; last committed (-1: none) */
    struct entry *head, *tail; /* in offset order */
};

enum svc_state { S_RUNNING, S_DRAINING, S_CLOSING, S_DONE };

struct svc_metrics {
    struct core_metric *consumed, *released, *replayed, *excluded, *dlq[REL_DLQ_COUNT];
    struct core_metric *theta_version, *theta_swaps, *lag, *commits, *produce_errors, *gaps;
    struct core_metric *drift_score, *drift_horizons, *drift_reports, *drift_partial, *drift_late;
    struct core_metric *eps_q[4], *eps_cap, *eps_units; /* ε spent per unit: max, p50/90/99 */
    struct core_metric *cl_sent, *cl_adopted, *cl_over_cap, *cl_refused;
};

/* The drift monitor over the released stream (rel/drift.h) and what it reports. */
struct drift_state {
    bool enabled;
    struct rel_drift_opts opts;
    struct rel_drift *mon;  /* for the current θ; NULL when disabled or not possible */
    json_t *coord;          /* coordinate name -> index in θ (current θ) */
    struct core_jalloc *ja; /* parse arena of the released records fed to it */
    double *val, *var;      /* d values / noise variances of one released record */
    struct rel_drift_result last;
    uint64_t horizons, reports;
    uint64_t seen_partial, seen_late; /* the monitor's counts already added to /metrics */
    struct core_ctl_key *key;         /* signs drift reports; NULL: control disabled */
    bool pending;                     /* a report was sent and no newer θ came yet */
    uint64_t report_at, retry_ms;     /* loop ms of the last report; re-send interval */
};

struct rel_service {
    uv_loop_t *loop;
    const struct core_config *cfg;
    struct rel_service_opts opts;
    struct rel_opts ropts;
    struct core_dp_ledger *ledger;
    struct cal_theta *theta; /* current θ (owned) */
    struct rel_plan *plan;   /* for theta, built from the first record's provenance */
    struct rel_releaser *rr;
    struct rel_window w; /* parse buffer for theta */
    bool w_init;
    struct core_kconsumer *cons, *tcons; /* windows; θ (NULL with theta_path) */
    struct core_kproducer *prod;
    struct core_ctl_listener *ctl; /* signed commands: pause, resume, status */
    bool ctl_paused;
    struct drift_state dr;
    struct core_metrics *metrics;
    struct svc_metrics m;
    const char *t_windows, *t_released, *t_dlq, *t_cal, *t_changelog;
    rd_kafka_t *restorer;      /* changelog reader (manual assign); NULL: no changelog */
    uint64_t cl_inflight;      /* changelog records not yet acknowledged */
    json_t *cl_known;          /* release ids known to be on the changelog (restored or
                                  acknowledged): a replay of one is not sent again */
    rd_kafka_topic_t *warm[2]; /* topics.released, topics.ledger_changelog: handles made
                                  at start so their metadata is known before the first
                                  release (two lookups in a row otherwise) */
    struct pstate parts[REL_SERVICE_MAX_PARTITIONS];
    struct entry *eq_head, *eq_tail; /* releases pushed, not yet emitted (push order) */
    struct entry *cur;               /* the entry of the record being pushed */
    uv_timer_t commit_timer, tick_timer;
    uv_timer_t flush_timer; /* group commit linger: started by the first pending */
    uint64_t linger_ms;
    int open_handles, closed_consumers, n_consumers;
    enum svc_state state;
    core_err status;
    bool intake, paused, commit_in_flight, consumed_any, group_joined, done_called;
    bool plan_warned;
    int64_t newest_end;    /* newest window end seen (ms): the ledger's watermark */
    uint64_t last_advance; /* loop ms of the last core_dp_ledger_advance */
    uint64_t last_eps;     /* loop ms of the last ε gauges update (0: never) */
    uint64_t last_consume, drain_started, close_started, last_theta_msg;
    _Atomic uint64_t a_consumed, a_released, a_replayed, a_excluded, a_dlq, a_theta_version;
    _Atomic uint64_t a_by_reason[REL_DLQ_COUNT], a_produce_errors, a_commits, a_commit_errors;
    _Atomic uint64_t a_gaps, a_theta_swaps, a_first_read_ns;
    _Atomic int64_t a_drift_ppm; /* the last evaluated drift score, ppm; -1: none yet */
    _Atomic int64_t a_lag;
    _Atomic uint64_t a_cl_sent, a_cl_adopted, a_cl_over_cap, a_cl_refused, a_cl_refusals;
};

static void fail(struct rel_service *s, core_err why, const char *what);
static void on_flush_timer(uv_timer_t *h);

static void bump(_Atomic uint64_t *a) /* single writer: the loop thread */
{
    atomic_store_explicit(a, atomic_load_explicit(a, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

static void entry_unref(struct entry *e)
{
    if (--e->refs == 0) {
        free(e->out);
        free(e);
    }
}

/* ------------------------------------------------------------------------------------ */
/* Producing */

static void produce(struct rel_service *s, const char *topic, struct entry *e, const char *v,
                    size_t len);

static void cl_known_add(struct rel_service *s, const char *rid)
{
    if (json_object_size(s->cl_known) >= CL_KNOWN_MAX)
        json_object_clear(s->cl_known); /* forgetting only costs a re-send */
    json_object_set_new(s->cl_known, rid, json_true());
}

/* The ledger row of e is acknowledged on the changelog: now its output may go out. */
static void on_changelog_ack(struct rel_service *s, struct entry *e, rd_kafka_resp_err_t err)
{
    e->cl_inflight = false;
    s->cl_inflight--;
    if (err) {
        bump(&s->a_produce_errors);
        core_metric_add(s->m.produce_errors, 1);
        fail(s, CORE_EKAFKA, "a ledger changelog record was not acknowledged by the broker");
    } else {
        bump(&s->a_cl_sent);
        core_metric_add(s->m.cl_sent, 1);
        cl_known_add(s, e->rid);
        if (s->status == CORE_OK)
            produce(s, s->t_released, e, e->out, e->out_len);
    }
    free(e->out);
    e->out = NULL;
    entry_unref(e); /* the changelog delivery's reference */
}

static void on_delivery(void *arg, void *opaque, rd_kafka_resp_err_t err)
{
    struct rel_service *s = arg;
    struct entry *e = opaque;

    if (e && e->cl_inflight) {
        on_changelog_ack(s, e, err);
        return;
    }
    if (!e) { /* a status record or a drift report */
        if (err)
            CORE_WARN("a status record or drift report was not acknowledged (%s)",
                      rd_kafka_err2str(err));
        return;
    }
    if (err) {
        bump(&s->a_produce_errors);
        core_metric_add(s->m.produce_errors, 1);
        fail(s, CORE_EKAFKA, "a record was not acknowledged by the broker");
    } else {
        e->acked = true;
        if (e->dead_letter) {
            bump(&s->a_dlq);
        } else if (e->replayed) {
            bump(&s->a_replayed);
            core_metric_add(s->m.replayed, 1);
        } else {
            bump(&s->a_released);
            core_metric_add(s->m.released, 1);
        }
    }
    entry_unref(e);
}

static void produce(struct rel_service *s, const char *topic, struct entry *e, const char *v,
                    size_t len)
{
    core_err rc;

    e->refs++; /* held by the delivery report */
    for (int tries = 0;; tries++) {
        rc = core_kproducer_send(s->prod, topic, RD_KAFKA_PARTITION_UA, e->device,
                                 strlen(e->device), v, len, e);
        if (rc != CORE_EAGAIN || tries == 6000)
            break;
        core_kproducer_poll(s->prod, 5);
    }
    if (rc != CORE_OK) {
        entry_unref(e);
        bump(&s->a_produce_errors);
        fail(s, rc, "cannot enqueue an output record");
    }
}

/* ------------------------------------------------------------------------------------ */
/* Drift monitor (GC-DP-Cache, paper §5.4): post-processing of the released stream */

static const char *coord_name(const struct cal_theta *t, size_t k)
{
    return t->coords[k].name ? t->coords[k].name : k < t->n_nodes ? t->nodes[k] : "?";
}

/* A new monitor for θ (after a swap: re-armed, nothing of the old θ kept). */
static void drift_setup(struct rel_service *s)
{
    struct drift_state *d = &s->dr;
    const struct cal_theta *t = s->theta;
    char eb[512] = "";

    rel_drift_free(d->mon);
    d->mon = NULL;
    json_decref(d->coord);
    d->coord = NULL;
    memset(&d->last, 0, sizeof(d->last));
    d->pending = false;
    d->seen_partial = d->seen_late = 0; /* the new monitor counts from 0 */
    if (!d->enabled)
        return;
    if (rel_drift_new(t, &d->opts, &d->mon, eb, sizeof(eb)) != CORE_OK) {
        CORE_WARN("drift monitor off for theta %" PRIu64 ": %s (the periodic refresh of the "
                  "calibrate service is the fallback)",
                  t->version, eb);
        return;
    }
    d->coord = json_object();
    for (size_t k = 0; k < t->d; k++)
        json_object_set_new(d->coord, coord_name(t, k), json_integer((json_int_t)k));
    d->val = core_xrealloc(d->val, t->d * sizeof(double));
    d->var = core_xrealloc(d->var, t->d * sizeof(double));
}

/* Add the monitor's partial horizons and late windows since the last call to /metrics (a
 * new monitor, made for each θ, counts from 0: drift_setup zeroes seen_*). */
static void drift_count_skipped(struct rel_service *s)
{
    struct drift_state *d = &s->dr;
    struct rel_drift_stats st;

    rel_drift_stats(d->mon, &st);
    core_metric_add(s->m.drift_partial, (int64_t)(st.partial - d->seen_partial));
    core_metric_add(s->m.drift_late, (int64_t)(st.late - d->seen_late));
    d->seen_partial = st.partial;
    d->seen_late = st.late;
}

static json_t *drift_json(const struct rel_service *s)
{
    const struct drift_state *d = &s->dr;
    struct rel_drift_stats st = {0};
    if (d->mon)
        rel_drift_stats(d->mon, &st);
    return json_pack("{s:b, s:f, s:f, s:b, s:i, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "enabled",
                     d->mon != NULL, "score", d->last.score, "threshold", d->opts.threshold,
                     "valid", d->last.valid, "consecutive", (int)d->last.consecutive, "patience",
                     (int)d->opts.patience, "horizons", (json_int_t)d->horizons, "horizon_windows",
                     (json_int_t)d->opts.horizon, "span_ms", (json_int_t)d->opts.span_ms,
                     "span_start_ms", (json_int_t)d->last.span_start_ms, "late",
                     (json_int_t)st.late, "partial", (json_int_t)st.partial, "reports",
                     (json_int_t)d->reports);
}

static void publish_status(struct rel_service *s, const char *in_reply_to, json_t *body);

/* Patience reached: ask the calibrate service for a new θ with a signed recalibrate
 * command whose reason starts with "drift" (docs/operations.md, "Control topic"). */
static void drift_report(struct rel_service *s)
{
    struct drift_state *d = &s->dr;
    char reason[256], eb[256] = "", *rec = NULL;

    d->reports++;
    d->pending = true;
    d->report_at = uv_now(s->loop);
    core_metric_add(s->m.drift_reports, 1);
    snprintf(reason, sizeof(reason),
             "drift: score %.4f above %.4f for %u horizon(s) of %zu "
             "windows under theta %" PRIu64,
             d->last.score, d->opts.threshold, d->last.consecutive, d->opts.horizon,
             s->theta->version);
    if (!d->key) {
        CORE_WARN("%s; control.key_file is empty, so no recalibration was requested", reason);
        return;
    }
    if (core_ctl_sign(d->key, CORE_CTL_RECALIBRATE, "calibrate", reason, core_ctl_now_ms(), NULL,
                      &rec, eb, sizeof(eb)) != CORE_OK ||
        core_kproducer_send(s->prod, core_config_str(s->cfg, "topics.control"),
                            RD_KAFKA_PARTITION_UA, "release", 7, rec, strlen(rec),
                            NULL) != CORE_OK) {
        CORE_ERROR("drift report not sent: %s", eb[0] ? eb : "cannot enqueue");
    } else {
        CORE_WARN("%s: recalibration requested", reason);
    }
    free(rec);
}

/* Feed one released record (its public values and noise scales) to the monitor. */
static void drift_feed(struct rel_service *s, const char *bytes, size_t len)
{
    struct drift_state *d = &s->dr;
    json_t *r, *vals, *scl, *v;
    const char *name;
    struct rel_drift_result res;
    bool gauss = s->ropts.mech->gaussian != 0;
    core_err rc;

    if (!d->mon)
        return;
    if (!d->ja)
        d->ja = core_jalloc_new(REL_JALLOC_BYTES);
    r = core_jalloc_parse(d->ja, bytes, len, 0, NULL); /* until core_jalloc_release below */
    if (!r) {
        core_jalloc_release(d->ja, r);
        return;
    }
    vals = json_object_get(r, "values");
    scl = json_object_get(r, "scale");
    for (size_t k = 0; k < s->theta->d; k++) {
        d->val[k] = NAN;
        d->var[k] = 0;
    }
    json_object_foreach(vals, name, v)
    {
        json_t *ix = json_object_get(d->coord, name);
        if (!ix)
            continue;
        d->val[json_integer_value(ix)] = json_number_value(v);
        d->var[json_integer_value(ix)] =
            rel_drift_noise_var(json_number_value(json_object_get(scl, name)), gauss);
    }
    rc = rel_drift_push(d->mon, json_string_value(json_object_get(r, "device")),
                        json_integer_value(json_object_get(r, "window_start")), d->val, d->var,
                        &res);
    drift_count_skipped(s);
    if (rc == CORE_OK && res.evaluated) {
        d->last = res;
        d->horizons++;
        core_metric_add(s->m.drift_horizons, 1);
        core_metric_set(s->m.drift_score, (int64_t)(res.score * 1e6));
        atomic_store(&s->a_drift_ppm, res.valid ? (int64_t)(res.score * 1e6) : -1);
        publish_status(s, NULL, json_pack("{s:o}", "drift", drift_json(s)));
        if (res.fire)
            drift_report(s);
    }
    core_jalloc_release(d->ja, r);
}

/* The committed ledger row of e (new or replayed) to the changelog, to the partition number
 * of its window, key = release id; the output (copied) waits for the acknowledgement. */
static void changelog_send(struct rel_service *s, struct entry *e, const char *bytes, size_t len)
{
    char *row = NULL;
    size_t rl = 0;
    core_err rc = core_dp_ledger_row(s->ledger, e->rid, &row, &rl);

    if (rc != CORE_OK) {
        CORE_ERROR("release %s: its ledger row cannot be read back for the changelog (%s)", e->rid,
                   core_strerror(rc));
        fail(s, rc, "ledger row not readable for the changelog");
        return;
    }
    e->out = core_xmalloc(len ? len : 1);
    memcpy(e->out, bytes, len);
    e->out_len = len;
    e->refs++; /* held by the changelog delivery report */
    e->cl_inflight = true;
    s->cl_inflight++;
    for (int tries = 0;; tries++) {
        rc = core_kproducer_send(s->prod, s->t_changelog, e->part, e->rid, strlen(e->rid), row, rl,
                                 e);
        if (rc != CORE_EAGAIN || tries == 6000)
            break;
        core_kproducer_poll(s->prod, 5);
    }
    free(row);
    if (rc != CORE_OK) {
        e->cl_inflight = false;
        s->cl_inflight--;
        entry_unref(e);
        bump(&s->a_produce_errors);
        fail(s, rc, "cannot enqueue a ledger changelog record");
    }
}

/* Releaser output: the oldest release still waiting for its group commit (push order). */
static core_err on_emit(void *arg, const char *bytes, size_t len, bool replayed)
{
    struct rel_service *s = arg;
    struct entry *e = s->eq_head;

    if (!e) {
        fail(s, CORE_ESTATE, "released record without a pending input (bug)");
        return CORE_ESTATE;
    }
    s->eq_head = e->enext;
    if (!s->eq_head)
        s->eq_tail = NULL;
    e->replayed = replayed;
    if (s->restorer && !(replayed && json_object_get(s->cl_known, e->rid)))
        changelog_send(s, e, bytes, len); /* the output follows the row's acknowledgement */
    else
        produce(s, s->t_released, e, bytes, len);
    drift_feed(s, bytes, len); /* a repeated (device, window) counts once */
    entry_unref(e);            /* the emit queue's reference */
    return CORE_OK;
}

static core_err flush_releases(struct rel_service *s)
{
    char eb[512] = "";
    core_err rc;

    if (!s->rr)
        return CORE_OK;
    rc = rel_releaser_flush(s->rr, on_emit, s, eb, sizeof(eb));
    if (rc != CORE_OK) {
        CORE_ERROR("release: %s", eb);
        fail(s, rc, "group commit failed");
    }
    return rc;
}

/* New entry for partition p at off, queued on its partition (reference 1). */
static struct entry *entry_new(struct rel_service *s, int32_t p, int64_t off, const char *dev)
{
    struct entry *e = core_xcalloc(1, sizeof(*e));
    struct pstate *ps = &s->parts[p];

    e->off = off;
    e->part = p;
    e->refs = 1;
    snprintf(e->device, sizeof(e->device), "%s", dev);
    if (ps->tail)
        ps->tail->next = e;
    else
        ps->head = e;
    ps->tail = e;
    return e;
}

/* gcdp.release_rejected/1 for the record m, refused for why (detail: errbuf text, which
 * names window ids, fields, units and totals, never values). */
static void dead_letter(struct rel_service *s, const rd_kafka_message_t *m, enum rel_dlq_reason why,
                        const char *detail, const char *window_id)
{
    json_t *o, *payload = NULL;
    struct entry *e;
    char *txt;
    const char *enc = "utf8";

    if (m->payload && m->len > 0)
        payload = json_stringn((const char *)m->payload, m->len);
    if (!payload && m->payload && m->len > 0) { /* not UTF-8: keep it byte-exact */
        size_t n = sodium_base64_ENCODED_LEN(m->len, sodium_base64_VARIANT_ORIGINAL);
        char *b = core_xmalloc(n);
        sodium_bin2base64(b, n, m->payload, m->len, sodium_base64_VARIANT_ORIGINAL);
        payload = json_string(b);
        free(b);
        enc = "base64";
    }
    o = json_pack("{s:s, s:s, s:s, s:s?, s:{s:s, s:i, s:I}, s:I, s:s, s:I, s:o}", "schema",
                  REL_SCHEMA_RELEASE_REJECTED, "reason", rel_dlq_reason_code(why), "detail",
                  detail && detail[0] ? detail : rel_dlq_reason_code(why), "window_id",
                  window_id && window_id[0] ? window_id : NULL, "source", "topic", s->t_windows,
                  "partition", (int)m->partition, "offset", (json_int_t)m->offset, "received_at_ms",
                  (json_int_t)core_wall_ms(), "payload_encoding", enc, "payload_bytes",
                  (json_int_t)m->len, "payload", payload ? payload : json_string(""));
    txt = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!txt) {
        fail(s, CORE_ENOMEM, "cannot encode a dead letter");
        return;
    }
    e = entry_new(s, m->partition, m->offset, "");
    if (m->key && m->key_len <= REL_MAX_DEVICE) { /* keyed like its input */
        memcpy(e->device, m->key, m->key_len);
        e->device[m->key_len] = '\0';
    }
    e->dead_letter = true;
    bump(&s->a_by_reason[why]);
    core_metric_add(s->m.dlq[why], 1);
    CORE_WARN("window %s (partition %" PRId32 " offset %" PRId64 ") dead-lettered: %s: %s",
              window_id && window_id[0] ? window_id : "?", m->partition, m->offset,
              rel_dlq_reason_code(why), detail ? detail : "");
    produce(s, s->t_dlq, e, txt, strlen(txt)); /* the queue's reference stays */
    free(txt);
}

/* ------------------------------------------------------------------------------------ */
/* θ and plan */

static void drop_plan(struct rel_service *s)
{
    rel_releaser_free(s->rr); /* pending charges (never emitted) are cancelled */
    s->rr = NULL;
    rel_plan_free(s->plan);
    s->plan = NULL;
    s->plan_warned = false;
}

static void changelog_restore(struct rel_service *s, int32_t p);
static void refused_count(struct rel_service *s);

/* A private θ was made by the calibrate service after it charged ε_cal to its span's units
 * and got its ledger rows acknowledged on the changelog (docs/calibrate.md, "The private
 * calibrate service"): restore every assigned partition again before any window is
 * released with it, so this ledger's totals include ε_cal before it charges under the new
 * version (a window read again after a θ change is a new release id). */
static void restore_for_private_theta(struct rel_service *s, const struct cal_theta *t)
{
    if (!s->restorer || t->mode != CAL_MODE_PRIVATE)
        return;
    for (int32_t p = 0; p < REL_SERVICE_MAX_PARTITIONS && s->status == CORE_OK; p++)
        if (s->parts[p].assigned && !s->parts[p].refused)
            changelog_restore(s, p);
    refused_count(s);
}

/* Adopt t (taken) when it is newer than the current θ; between two windows, after the
 * pending group commit was emitted. */
static void adopt_theta(struct rel_service *s, struct cal_theta *t)
{
    uint64_t old = s->theta ? s->theta->version : 0;

    if (s->theta && t->version <= old) {
        CORE_INFO("theta version %" PRIu64 " ignored: version %" PRIu64 " is in use", t->version,
                  old);
        cal_theta_free(t);
        return;
    }
    if (flush_releases(s) != CORE_OK) {
        cal_theta_free(t);
        return;
    }
    restore_for_private_theta(s, t);
    drop_plan(s);
    if (s->w_init)
        rel_window_cleanup(&s->w);
    cal_theta_free(s->theta);
    s->theta = t;
    rel_window_init(&s->w, t);
    s->w_init = true;
    drift_setup(s);
    atomic_store(&s->a_theta_version, t->version);
    core_metric_set(s->m.theta_version, (int64_t)t->version);
    if (old) {
        bump(&s->a_theta_swaps);
        core_metric_add(s->m.theta_swaps, 1);
    }
    CORE_INFO("theta version %" PRIu64 " (%s, %s) in use%s", t->version, cal_mode_name(t->mode),
              t->source[0] ? t->source : "-", old ? " from the next window on" : "");
}

static void on_theta_assign(void *arg, const rd_kafka_topic_partition_list_t *parts)
{
    struct rel_service *s = arg;
    (void)parts;
    s->last_theta_msg = uv_now(s->loop); /* the settle time counts from the assignment */
}

static void on_theta_message(void *arg, const rd_kafka_message_t *m)
{
    struct rel_service *s = arg;
    struct cal_theta *t = NULL;
    json_error_t je;
    json_t *j;
    char eb[512] = "";

    s->last_theta_msg = uv_now(s->loop);
    if (!m->payload || m->len == 0)
        return; /* a compaction tombstone */
    j = json_loadb(m->payload, m->len, JSON_REJECT_DUPLICATES, &je);
    if (!j || cal_theta_from_json(j, &t, eb, sizeof(eb)) != CORE_OK ||
        cal_theta_validate(t, eb, sizeof(eb)) != CORE_OK) {
        CORE_WARN("%s partition %" PRId32 " offset %" PRId64 ": not a valid theta (%s); "
                  "ignored",
                  s->t_cal, m->partition, m->offset, j ? eb : je.text);
        json_decref(j);
        cal_theta_free(t);
        return;
    }
    json_decref(j);
    if (s->state == S_RUNNING)
        adopt_theta(s, t);
    else
        cal_theta_free(t);
}

static core_err build_plan(struct rel_service *s, const struct rel_window *w, char *eb, size_t ebn)
{
    core_err rc =
        rel_plan_for_window(s->theta, &s->ropts, w, s->opts.scheme.period_ms, &s->plan, eb, ebn);
    if (rc != CORE_OK)
        return rc;
    rc = rel_releaser_new(s->plan, s->ledger, core_rng_os(),
                          (size_t)core_config_int(s->cfg, "release.ledger.batch"),
                          (unsigned)core_config_int(s->cfg, "release.threads"), &s->rr);
    if (rc != CORE_OK) {
        snprintf(eb, ebn, "cannot start the releaser (%s)", core_strerror(rc));
        drop_plan(s);
    }
    return rc;
}

/* ------------------------------------------------------------------------------------ */
/* Windows */

static enum rel_dlq_reason dlq_reason(core_err rc)
{
    switch (rc) {
    case CORE_EBUDGET:
        return REL_DLQ_BUDGET;
    case CORE_EINVAL:
        return REL_DLQ_NOT_COVERED;
    default:
        return REL_DLQ_MALFORMED;
    }
}

/* Release one parsed window: the plan on first need, then the releaser. */
static void release_window(struct rel_service *s, const rd_kafka_message_t *m)
{
    char eb[1024] = "";
    struct entry *e;
    core_err rc;

    if (!s->plan && (rc = build_plan(s, &s->w, eb, sizeof(eb))) != CORE_OK) {
        if (!s->plan_warned)
            CORE_ERROR("no release plan for theta %" PRIu64 " and window %s: %s", s->theta->version,
                       s->w.id, eb);
        s->plan_warned = true;
        dead_letter(s, m, REL_DLQ_NO_PLAN, eb, s->w.id);
        return;
    }
    e = entry_new(s, m->partition, m->offset, s->w.device);
    snprintf(e->rid, sizeof(e->rid), "%s@%" PRIu64, s->w.id, s->theta->version); /* as the
                                                                            releaser names it */
    e->refs++;       /* the emit queue's */
    if (!s->eq_head) /* the first of a group: it waits at most linger_ms for company */
        uv_timer_start(&s->flush_timer, on_flush_timer, s->linger_ms, 0);
    if (s->eq_tail)
        s->eq_tail->enext = e;
    else
        s->eq_head = e;
    s->eq_tail = e;
    rc = rel_releaser_push(s->rr, &s->w, on_emit, s, eb, sizeof(eb));
    if (rc == CORE_OK)
        return;
    if (rc == CORE_EINVAL || rc == CORE_EBUDGET || rc == CORE_EPARSE || rc == CORE_ETOOBIG) {
        /* refused before it was queued: it is the emit queue's tail and the partition's */
        struct pstate *ps = &s->parts[m->partition];
        struct entry *p = s->eq_head;
        if (s->eq_tail != e || ps->tail != e) {
            fail(s, CORE_ESTATE, "refused window is not the last queued (bug)");
            return;
        }
        if (p == e) {
            s->eq_head = s->eq_tail = NULL;
        } else {
            while (p->enext != e)
                p = p->enext;
            p->enext = NULL;
            s->eq_tail = p;
        }
        e->acked = true; /* its dead letter carries the offset from here */
        entry_unref(e);
        dead_letter(s, m, dlq_reason(rc), eb, s->w.id);
        return;
    }
    CORE_ERROR("release of window %s failed: %s (%s)", s->w.id, eb, core_strerror(rc));
    fail(s, rc, "release failed (ledger, noise or output)");
}

static void on_message(void *arg, const rd_kafka_message_t *m)
{
    struct rel_service *s = arg;
    char eb[1024] = "";
    int32_t p = m->partition;
    core_err rc;

    if (s->state != S_RUNNING || !s->theta)
        return; /* not processed: its offset is not advanced, so never committed */
    if (strcmp(rd_kafka_topic_name(m->rkt), s->t_windows) != 0)
        return;
    if (p < 0 || p >= REL_SERVICE_MAX_PARTITIONS) {
        fail(s, CORE_ETOOBIG, "partition number above REL_SERVICE_MAX_PARTITIONS");
        return;
    }
    if (s->parts[p].refused)
        return; /* truncated changelog: never released from here, never committed */
    s->parts[p].next = m->offset + 1;
    if (!s->consumed_any)
        atomic_store(&s->a_first_read_ns, uv_hrtime());
    bump(&s->a_consumed);
    core_metric_add(s->m.consumed, 1);
    s->consumed_any = true;
    s->last_consume = uv_now(s->loop);
    s->w.id[0] = '\0';
    rc =
        m->payload ? rel_window_from_bytes(m->payload, m->len, &s->w, eb, sizeof(eb)) : CORE_EPARSE;
    if (rc != CORE_OK) {
        dead_letter(s, m, REL_DLQ_MALFORMED, m->payload ? eb : "empty record", s->w.id);
        return;
    }
    if (s->w.end > s->newest_end)
        s->newest_end = s->w.end;
    if (s->w.excluded) {
        bump(&s->a_excluded);
        core_metric_add(s->m.excluded, 1);
        return;
    }
    release_window(s, m);
    if (s->cl_inflight > 0) /* the consumer's budget per loop turn (thousands of windows,
                               each with its fsync) would hold the changelog acknowledgements,
                               and with them every output, until the turn ends */
        core_kproducer_poll(s->prod, 0);
}

/* ------------------------------------------------------------------------------------ */
/* Control commands and status (public values only: counts, versions, budgets, scores) */

/* The ε gauges, in millionths (gauges are integers): spent per unit (q = max, 0.5, 0.9,
 * 0.99), the cap, the units summarized. */
static void eps_gauges(struct rel_service *s, const struct core_dp_eps_summary *e)
{
    const double v[4] = {e->max, e->p50, e->p90, e->p99};

    if (!s->metrics)
        return;
    for (int i = 0; i < 4; i++)
        core_metric_set(s->m.eps_q[i], (int64_t)(v[i] * 1e6 + 0.5));
    core_metric_set(s->m.eps_cap, (int64_t)(s->ropts.cap.eps * 1e6 + 0.5));
    core_metric_set(s->m.eps_units, (int64_t)e->units);
}

/* ε spent per unit over the ledger's units in memory (core_dp_ledger_eps_summary): max and
 * quantiles, the cap and the least remaining; public accounting numbers. Also sets the
 * gcdp_release_eps_* gauges. */
static json_t *eps_json(struct rel_service *s)
{
    struct core_dp_eps_summary e;
    double cap = s->ropts.cap.eps;

    core_dp_ledger_eps_summary(s->ledger, &e);
    eps_gauges(s, &e);
    return json_pack("{s:I, s:f, s:f, s:f, s:f, s:f, s:f}", "units", (json_int_t)e.units, "max",
                     e.max, "p50", e.p50, "p90", e.p90, "p99", e.p99, "cap", cap, "remaining_min",
                     cap > e.max ? cap - e.max : 0.0);
}

static json_t *status_body(struct rel_service *s)
{
    struct rel_service_stats st;
    struct core_dp_ledger_stats ls;
    json_t *o, *refused = json_object();

    rel_service_stats(s, &st);
    core_dp_ledger_stats(s->ledger, &ls);
    for (int i = 0; i < REL_DLQ_COUNT; i++)
        json_object_set_new(refused, dlq_codes[i], json_integer((json_int_t)st.by_reason[i]));
    o = json_pack("{s:I, s:s, s:I, s:I, s:I, s:I, s:I, s:o, s:I, s:b, s:b}", "theta_version",
                  (json_int_t)st.theta_version, "theta_reason",
                  s->theta && s->theta->reason[0] ? s->theta->reason : "-", "consumed",
                  (json_int_t)st.consumed, "released", (json_int_t)st.released, "replayed",
                  (json_int_t)st.replayed, "excluded", (json_int_t)st.excluded, "dead_letters",
                  (json_int_t)st.dead_letters, "refused", refused, "lag", (json_int_t)st.lag,
                  "paused", s->ctl_paused, "intake", s->intake);
    json_object_set_new(o, "ledger",
                        json_pack("{s:I, s:I, s:f, s:f, s:o}", "releases", (json_int_t)ls.releases,
                                  "units", (json_int_t)ls.units, "eps_per_window", s->ropts.eps_rel,
                                  "cap_eps", s->ropts.cap.eps, "eps_spent", eps_json(s)));
    json_object_set_new(o, "drift", drift_json(s));
    json_object_set_new(o, "changelog",
                        json_pack("{s:b, s:I, s:I, s:I, s:I}", "enabled", s->restorer != NULL,
                                  "rows", (json_int_t)st.changelog_sent, "adopted",
                                  (json_int_t)st.adopted, "adopted_over_cap",
                                  (json_int_t)st.adopted_over_cap, "refused_partitions",
                                  (json_int_t)st.refused_partitions));
    json_object_set_new(o, "control", core_ctl_listener_counts_json(s->ctl));
    return o;
}

/* Produce a gcdp.status/1 record (body taken). */
static void publish_status(struct rel_service *s, const char *in_reply_to, json_t *body)
{
    char eb[256] = "";
    if (s->ctl && core_ctl_reply_status(s->prod, core_config_str(s->cfg, "topics.status"),
                                        "release", core_ctl_listener_instance(s->ctl), in_reply_to,
                                        body, NULL, eb, sizeof(eb)) != CORE_OK)
        CORE_WARN("status record not sent: %s", eb);
    json_decref(body);
}

static void on_command(void *arg, const struct core_ctl_cmd *cmd)
{
    struct rel_service *s = arg;

    switch (cmd->cmd) {
    case CORE_CTL_PAUSE:
    case CORE_CTL_RESUME:
        s->ctl_paused = cmd->cmd == CORE_CTL_PAUSE;
        CORE_INFO("window intake %s by a control command", s->ctl_paused ? "paused" : "resumed");
        if (s->state == S_RUNNING)
            core_kconsumer_pause(s->cons, !s->intake || s->paused || s->ctl_paused);
        publish_status(s, cmd->nonce, status_body(s));
        break;
    case CORE_CTL_STATUS:
        publish_status(s, cmd->nonce, status_body(s));
        break;
    case CORE_CTL_RECALIBRATE:
        break; /* the calibrate service's (target "all" reaches every service) */
    }
}

/* ------------------------------------------------------------------------------------ */
/* Committing */

static void queue_drop(struct pstate *ps)
{
    while (ps->head) {
        struct entry *e = ps->head;
        ps->head = e->next;
        entry_unref(e);
    }
    ps->tail = NULL;
}

/* Offset of p that may be committed now: the first record whose output is not yet
 * acknowledged, else the next offset to read; -1 if unknown. */
static int64_t committable(struct pstate *ps)
{
    while (ps->head && ps->head->acked) {
        struct entry *e = ps->head;
        ps->head = e->next;
        if (!ps->head)
            ps->tail = NULL;
        entry_unref(e);
    }
    return ps->head ? ps->head->off : ps->next;
}

static bool commit_now(struct rel_service *s)
{
    rd_kafka_topic_partition_list_t *l;
    bool sent = false;

    if (s->commit_in_flight || s->status != CORE_OK || !s->cons)
        return false;
    l = rd_kafka_topic_partition_list_new(8);
    for (int32_t p = 0; p < REL_SERVICE_MAX_PARTITIONS; p++) {
        int64_t c;
        if (!s->parts[p].assigned)
            continue;
        c = committable(&s->parts[p]);
        if (c >= 0 && c > s->parts[p].committed)
            rd_kafka_topic_partition_list_add(l, s->t_windows, p)->offset = c;
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
    struct rel_service *s = arg;

    s->commit_in_flight = false;
    if (err == RD_KAFKA_RESP_ERR__NO_OFFSET)
        return;
    if (err) {
        bump(&s->a_commit_errors);
        return;
    }
    bump(&s->a_commits);
    core_metric_add(s->m.commits, 1);
    for (int i = 0; offsets && i < offsets->cnt; i++) {
        const rd_kafka_topic_partition_t *t = &offsets->elems[i];
        if (!t->err && t->partition >= 0 && t->partition < REL_SERVICE_MAX_PARTITIONS &&
            strcmp(t->topic, s->t_windows) == 0 && t->offset > s->parts[t->partition].committed)
            s->parts[t->partition].committed = t->offset;
    }
}

static void refused_count(struct rel_service *s)
{
    uint64_t n = 0;
    for (int p = 0; p < REL_SERVICE_MAX_PARTITIONS; p++)
        n += s->parts[p].assigned && s->parts[p].refused;
    atomic_store(&s->a_cl_refused, n);
    core_metric_set(s->m.cl_refused, (int64_t)n);
}

/* Restore partition p's ledger rows from the changelog before any of its windows is
 * served (we are in the assignment callback on the loop thread: nothing of p is served
 * before this returns). A truncated changelog refuses the partition; a conflict or a
 * failed restore stops the service. */
static void changelog_restore(struct rel_service *s, int32_t p)
{
    struct rel_changelog_restore_stats st;
    char eb[1024] = "";
    core_err rc =
        rel_changelog_restore(s->restorer, s->t_changelog, p, s->ledger, s->opts.replay_horizon_ms,
                              RESTORE_TIMEOUT_MS, s->cl_known, &st, eb, sizeof(eb));

    s->parts[p].refused = rc != CORE_OK || st.truncated;
    atomic_fetch_add(&s->a_cl_adopted, st.adopted);
    atomic_fetch_add(&s->a_cl_over_cap, st.over_cap);
    core_metric_add(s->m.cl_adopted, (int64_t)st.adopted);
    core_metric_add(s->m.cl_over_cap, (int64_t)st.over_cap);
    if (rc != CORE_OK) {
        CORE_ERROR("ledger changelog restore of partition %" PRId32 " failed: %s", p, eb);
        fail(s, rc,
             rc == CORE_EINVARIANT ? "a changelog row conflicts with this ledger (two "
                                     "outputs for one release id)"
                                   : "ledger changelog restore failed");
    } else if (st.truncated) {
        bump(&s->a_cl_refusals);
        CORE_ERROR("%s partition %" PRId32 " is truncated (log start > 0 within "
                   "release.ledger.replay_horizon_ms): ledger rows still needed may be gone; "
                   "partition %" PRId32 " of %s is not processed by this instance",
                   s->t_changelog, p, p, s->t_windows);
    } else {
        CORE_INFO("%s partition %" PRId32 " restored: %" PRIu64 " rows, %" PRIu64 " adopted "
                  "(%" PRIu64 " over the cap), %" PRIu64 " already here, %" PRIu64 " expired",
                  s->t_changelog, p, st.rows, st.adopted, st.over_cap, st.same, st.expired);
    }
}

static void on_assign(void *arg, const rd_kafka_topic_partition_list_t *parts)
{
    struct rel_service *s = arg;

    s->group_joined = true;
    if (s->restorer && s->state == S_RUNNING)
        (void)flush_releases(s); /* nothing of ours pending while rows are adopted */
    for (int i = 0; i < parts->cnt; i++) {
        int32_t p = parts->elems[i].partition;
        if (p >= 0 && p < REL_SERVICE_MAX_PARTITIONS &&
            strcmp(parts->elems[i].topic, s->t_windows) == 0) {
            s->parts[p].assigned = true;
            s->parts[p].refused = false;
            s->parts[p].next = s->parts[p].committed = -1;
            if (s->restorer && s->status == CORE_OK)
                changelog_restore(s, p);
        }
    }
    refused_count(s);
}

/* Every changelog record in flight acknowledged (their outputs then go out): an output of
 * ours may be published after the revoke, but never without its row on the changelog
 * before the next owner restores. Not acknowledged in time: fail closed. */
static void changelog_settle(struct rel_service *s)
{
    uint64_t t0 = uv_hrtime();

    while (s->cl_inflight > 0 && s->status == CORE_OK &&
           uv_hrtime() - t0 < (uint64_t)REL_SERVICE_DRAIN_MS * 1000000u)
        core_kproducer_poll(s->prod, 20);
    if (s->cl_inflight > 0 && s->status == CORE_OK)
        fail(s, CORE_EKAFKA,
             "ledger changelog records not acknowledged before the partitions "
             "were revoked");
}

static void on_revoke(void *arg, const rd_kafka_topic_partition_list_t *parts)
{
    struct rel_service *s = arg;

    /* Emit the pending group commit and try to commit what is acknowledged; the rest is
     * read again by the next owner (replayed from the ledger when it shares it). */
    if (s->state == S_RUNNING && flush_releases(s) == CORE_OK)
        (void)commit_now(s);
    if (s->restorer)
        changelog_settle(s);
    for (int i = 0; i < parts->cnt; i++) {
        int32_t p = parts->elems[i].partition;
        if (p < 0 || p >= REL_SERVICE_MAX_PARTITIONS ||
            strcmp(parts->elems[i].topic, s->t_windows) != 0)
            continue;
        s->parts[p].assigned = false;
        s->parts[p].refused = false;
        s->parts[p].next = -1;
        queue_drop(&s->parts[p]);
    }
    refused_count(s);
}

static void on_gap(void *arg, const char *topic, int32_t partition, int64_t from, int64_t to)
{
    struct rel_service *s = arg;
    (void)topic;
    (void)partition;
    (void)from;
    (void)to;
    bump(&s->a_gaps);
    core_metric_add(s->m.gaps, 1);
}

static void on_error(void *arg, rd_kafka_resp_err_t err, const char *reason, bool fatal)
{
    struct rel_service *s = arg;
    (void)err;
    if (fatal)
        fail(s, CORE_EKAFKA, reason);
}

/* ------------------------------------------------------------------------------------ */
/* Flow control, shutdown */

static void apply_pause(struct rel_service *s)
{
    size_t q = core_kproducer_outq(s->prod);
    bool want;

    if (q > OUTQ_HIGH)
        s->paused = true;
    else if (q < OUTQ_LOW)
        s->paused = false;
    want = !s->intake || s->paused || s->ctl_paused || s->state != S_RUNNING;
    core_kconsumer_pause(s->cons, want);
    if (!want && atomic_load(&s->a_cl_refused) > 0) { /* truncated changelogs stay paused */
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(4);
        for (int32_t p = 0; p < REL_SERVICE_MAX_PARTITIONS; p++)
            if (s->parts[p].assigned && s->parts[p].refused)
                rd_kafka_topic_partition_list_add(l, s->t_windows, p);
        (void)rd_kafka_pause_partitions(core_kconsumer_handle(s->cons), l);
        rd_kafka_topic_partition_list_destroy(l);
    }
}

static void on_handle_closed(uv_handle_t *h)
{
    struct rel_service *s = h->data;
    if (--s->open_handles == 0 && !s->done_called) {
        s->done_called = true;
        if (s->opts.on_done)
            s->opts.on_done(s->opts.arg, s->status);
    }
}

static void finish(struct rel_service *s)
{
    struct rel_service_stats st;

    if (s->state == S_DONE)
        return;
    s->state = S_DONE;
    rel_service_stats(s, &st);
    CORE_INFO("release stopped (%s): consumed=%" PRIu64 " released=%" PRIu64 " replayed=%" PRIu64
              " excluded=%" PRIu64 " dead_letters=%" PRIu64,
              core_strerror(s->status), st.consumed, st.released, st.replayed, st.excluded,
              st.dead_letters);
    if (s->metrics)
        core_metrics_set_health(s->metrics, false, "stopped");
    core_kconsumer_detach(s->cons);
    if (s->tcons)
        core_kconsumer_detach(s->tcons);
    if (s->ctl)
        core_ctl_listener_detach(s->ctl);
    core_kproducer_detach(s->prod);
    uv_close((uv_handle_t *)&s->commit_timer, on_handle_closed);
    uv_close((uv_handle_t *)&s->tick_timer, on_handle_closed);
    uv_close((uv_handle_t *)&s->flush_timer, on_handle_closed);
}

static void on_closed(void *arg)
{
    struct rel_service *s = arg;
    if (++s->closed_consumers == s->n_consumers && s->state == S_CLOSING)
        finish(s);
}

static void begin_close(struct rel_service *s)
{
    s->state = S_CLOSING;
    s->close_started = uv_now(s->loop);
    core_kconsumer_close(s->cons);
    if (s->tcons)
        core_kconsumer_close(s->tcons);
    core_ctl_listener_close(s->ctl); /* on_closed counts it like a consumer */
}

static void drain_step(struct rel_service *s)
{
    uint64_t waited = uv_now(s->loop) - s->drain_started;

    if (core_kproducer_outq(s->prod) > 0 && waited < REL_SERVICE_DRAIN_MS && s->status == CORE_OK)
        return;
    if (core_kproducer_outq(s->prod) > 0)
        CORE_WARN("%zu records still unacknowledged at shutdown; their windows stay "
                  "uncommitted (republished from the ledger after a restart)",
                  core_kproducer_outq(s->prod));
    if (s->commit_in_flight && waited < REL_SERVICE_DRAIN_MS)
        return;
    if (s->status == CORE_OK && commit_now(s))
        return;
    begin_close(s);
}

static void fail(struct rel_service *s, core_err why, const char *what)
{
    if (s->status != CORE_OK)
        return;
    CORE_ERROR("release failing: %s (%s); stopping without committing further", what,
               core_strerror(why));
    s->status = why;
    rel_service_stop(s);
}

void rel_service_stop(struct rel_service *s)
{
    if (s->state != S_RUNNING)
        return;
    if (s->status == CORE_OK)
        (void)flush_releases(s); /* committed releases go out before we drain */
    CORE_INFO("release stopping: intake stopped, waiting for acknowledgements");
    s->state = S_DRAINING;
    s->drain_started = uv_now(s->loop);
    core_kconsumer_pause(s->cons, true);
}

/* ------------------------------------------------------------------------------------ */
/* Timers */

static void health_refresh(struct rel_service *s)
{
    if (!s->metrics)
        return;
    if (s->status != CORE_OK)
        core_metrics_set_health(s->metrics, false, core_strerror(s->status));
    else if (s->state != S_RUNNING)
        core_metrics_set_health(s->metrics, false, "shutting down");
    else if (!s->theta)
        core_metrics_set_health(s->metrics, false, "waiting for a theta on topics.calibration");
    else if (!s->group_joined)
        core_metrics_set_health(s->metrics, false, "waiting for the consumer group");
    else if (atomic_load(&s->a_cl_refused) > 0)
        core_metrics_set_health(s->metrics, false,
                                "ledger changelog truncated: partitions "
                                "not processed (see the log)");
    else if (atomic_load(&s->a_gaps) > 0)
        core_metrics_set_health(s->metrics, false,
                                "offset gap detected: windows were lost "
                                "(see the log)");
    else
        core_metrics_set_health(s->metrics, true, NULL);
}

static void intake_check(struct rel_service *s, uint64_t now)
{
    int64_t lag;

    if (s->intake || !s->theta)
        return;
    if (s->tcons && core_kconsumer_assigned(s->tcons) == 0)
        return; /* θ's topic not assigned yet: a newer version may be there */
    lag = s->tcons ? core_kconsumer_lag(s->tcons) : 0;
    if (lag == 0 || now - s->last_theta_msg >= THETA_SETTLE_MS) {
        s->intake = true;
        CORE_INFO("release started: theta version %" PRIu64 ", %s -> %s (dead letters: %s)",
                  s->theta->version, s->t_windows, s->t_released, s->t_dlq);
    }
}

/* The ε gauges every EPS_GAUGE_MS (a sort of the cached units: not on every tick). */
static void eps_refresh(struct rel_service *s, uint64_t now)
{
    struct core_dp_eps_summary e;

    s->last_eps = now ? now : 1;
    if (!s->metrics)
        return;
    core_dp_ledger_eps_summary(s->ledger, &e);
    eps_gauges(s, &e);
}

static void on_tick(uv_timer_t *t)
{
    struct rel_service *s = t->data;
    uint64_t now = uv_now(s->loop);

    if (s->state == S_RUNNING && s->dr.pending && now - s->dr.report_at >= s->dr.retry_ms)
        drift_report(s); /* no newer θ yet: the calibrate service may not have seen it */
    if (s->state == S_RUNNING && (!s->last_eps || now - s->last_eps >= EPS_GAUGE_MS))
        eps_refresh(s, now);
    if (s->state == S_RUNNING && s->newest_end > 0 && now - s->last_advance >= 10000) {
        s->last_advance = now; /* bounded ledger memory (store back end; JSONL: no-op) */
        if (core_dp_ledger_advance(s->ledger, s->newest_end, s->opts.ledger_lateness_ms) != CORE_OK)
            CORE_WARN("ledger advance failed (memory is bounded by the cache cap instead)");
    }
    if (s->state == S_RUNNING) {
        intake_check(s, now);
        if (!s->intake || core_kconsumer_assigned(s->cons) == 0)
            s->last_consume = now; /* idle counts only while windows can be read */
        if (s->opts.exit_idle_ms > 0 && now - s->last_consume >= (uint64_t)s->opts.exit_idle_ms) {
            CORE_INFO("nothing consumed for %" PRId64 " ms: stopping", s->opts.exit_idle_ms);
            rel_service_stop(s);
        }
    }
    if (s->state == S_RUNNING)
        apply_pause(s);
    if (s->state == S_DRAINING)
        drain_step(s);
    if (s->state == S_CLOSING && now - s->close_started >= REL_SERVICE_CLOSE_MS) {
        CORE_WARN("the consumers did not leave their groups within %d ms; stopping anyway",
                  REL_SERVICE_CLOSE_MS);
        finish(s);
    }
    if (s->cons && s->state == S_RUNNING) {
        int64_t lag = core_kconsumer_lag(s->cons);
        atomic_store(&s->a_lag, lag);
        core_metric_set(s->m.lag, lag);
    }
    health_refresh(s);
}

static void on_commit_timer(uv_timer_t *t)
{
    struct rel_service *s = t->data;
    if (s->state == S_RUNNING)
        (void)commit_now(s);
}

/* The group commit's linger has passed: commit and publish what is pending (a full batch
 * was committed by the releaser already). */
static void on_flush_timer(uv_timer_t *h)
{
    struct rel_service *s = h->data;
    if (s->state == S_RUNNING && s->eq_head)
        (void)flush_releases(s);
}

/* ------------------------------------------------------------------------------------ */
/* Lifecycle */

static void metrics_register(struct rel_service *s)
{
    struct core_metrics *r = s->metrics;
    struct svc_metrics *m = &s->m;
    char lab[64];

    if (!r)
        return;
#define C(name, help) core_metrics_get(r, CORE_METRIC_COUNTER, name, NULL, help)
#define G(name, help) core_metrics_get(r, CORE_METRIC_GAUGE, name, NULL, help)
    m->consumed = C("gcdp_release_consumed_total", "window records read from topics.windows");
    m->released = C("gcdp_release_released_total", "new releases acknowledged");
    m->replayed = C("gcdp_release_replayed_total", "releases republished from the ledger");
    m->excluded = C("gcdp_release_excluded_total", "excluded windows (nothing to release)");
    for (int i = 0; i < REL_DLQ_COUNT; i++) {
        snprintf(lab, sizeof(lab), "reason=\"%s\"", dlq_codes[i]);
        m->dlq[i] = core_metrics_get(r, CORE_METRIC_COUNTER, "gcdp_release_refused_total", lab,
                                     "windows dead-lettered, by reason");
    }
    m->theta_version = G("gcdp_release_theta_version", "theta version in use (0: none)");
    m->theta_swaps = C("gcdp_release_theta_swaps_total", "theta versions adopted after the first");
    m->lag = G("gcdp_release_consumer_lag", "windows not yet read (-1 unknown)");
    m->commits = C("gcdp_release_commits_total", "successful offset commits");
    m->produce_errors = C("gcdp_release_produce_errors_total", "records the broker did not take");
    m->gaps = C("gcdp_release_offset_gaps_total", "offset gaps detected on topics.windows");
    m->drift_score = G("gcdp_release_drift_score_ppm",
                       "drift score of the last horizon, in millionths (post-processing)");
    m->drift_horizons = C("gcdp_release_drift_horizons_total", "drift horizons evaluated");
    m->drift_reports =
        C("gcdp_release_drift_reports_total", "drift reports (recalibration requests) sent");
    m->drift_partial = C("gcdp_release_drift_partial_total",
                         "drift horizons closed with too few covered rows: not evaluated");
    m->drift_late = C("gcdp_release_drift_late_total",
                      "released windows of a drift horizon already closed: left out");
    for (int i = 0; i < 4; i++) {
        static const char *const q[4] = {"q=\"max\"", "q=\"0.5\"", "q=\"0.9\"", "q=\"0.99\""};
        m->eps_q[i] = core_metrics_get(r, CORE_METRIC_GAUGE, "gcdp_release_eps_spent_ppm", q[i],
                                       "epsilon spent per unit over the ledger's units in "
                                       "memory, max and quantiles, in millionths");
    }
    m->eps_cap = G("gcdp_release_eps_cap_ppm", "lifetime epsilon cap per unit, in millionths");
    m->eps_units = G("gcdp_release_eps_units", "units the epsilon quantiles are taken over");
    m->cl_sent = C("gcdp_release_changelog_rows_total",
                   "ledger rows acknowledged on topics.ledger_changelog");
    m->cl_adopted = C("gcdp_release_changelog_adopted_total",
                      "ledger rows adopted from the changelog at partition assignments");
    m->cl_over_cap = C("gcdp_release_changelog_over_cap_total",
                       "adopted rows that took a unit above its lifetime cap");
    m->cl_refused = G("gcdp_release_changelog_refused_partitions",
                      "assigned partitions not processed: their changelog was truncated");
#undef C
#undef G
}

static core_err make_consumers(struct rel_service *s, char *eb, size_t ebn)
{
    rd_kafka_conf_t *cc = NULL;
    const char *wt[1] = {s->t_windows};
    struct core_kconsumer_ops ops = {
        .on_message = on_message,
        .on_assign = on_assign,
        .on_revoke = on_revoke,
        .on_gap = on_gap,
        .on_error = on_error,
        .on_commit = on_commit,
        .on_closed = on_closed,
        .arg = s,
    };
    struct core_kconsumer_ops tops = {.on_message = on_theta_message,
                                      .on_assign = on_theta_assign,
                                      .on_error = on_error,
                                      .on_closed = on_closed,
                                      .arg = s};
    char prefix[256];
    core_err rc;

    rc = core_kafka_conf_new(s->cfg, CORE_KAFKA_CONSUMER, s->opts.group, &cc, eb, ebn);
    if (rc != CORE_OK)
        return rc;
    rc = core_kconsumer_new(s->loop, cc, wt, 1, &ops, &s->cons, eb, ebn); /* takes cc */
    if (rc != CORE_OK)
        return rc;
    s->n_consumers = 1;
    core_kconsumer_pause(s->cons, true); /* until a θ is known */
    if (s->opts.theta_path)
        return CORE_OK;
    /* Every instance reads every θ version: a group of its own, from the beginning, never
     * committed (the topic is compacted and small). */
    snprintf(prefix, sizeof(prefix), "%s-theta", s->opts.group);
    rc = core_kconsumer_new_own(s->loop, s->cfg, prefix, s->t_cal, "earliest", &tops, &s->tcons, eb,
                                ebn);
    if (rc == CORE_OK)
        s->n_consumers = 2;
    return rc;
}

static core_err make_control(struct rel_service *s, char *eb, size_t ebn)
{
    struct core_ctl_listener_opts co = {"release", on_command, on_closed, s, s->metrics};
    const char *kf = core_config_str(s->cfg, "control.key_file");
    core_err rc = core_ctl_listener_new(s->loop, s->cfg, &co, &s->ctl, eb, ebn);

    if (rc != CORE_OK)
        return rc;
    s->n_consumers++;
    if (kf && kf[0] && (rc = core_ctl_key_load(kf, &s->dr.key, eb, ebn)) != CORE_OK)
        return CORE_ECONFIG;
    return CORE_OK;
}

static core_err open_state(struct rel_service *s, char *eb, size_t ebn)
{
    struct cal_theta *t = NULL;
    char e2[512] = "";
    core_err rc;

    rc = rel_opts_from_config(s->cfg, &s->ropts, eb, ebn);
    if (rc == CORE_OK)
        rc = rel_drift_opts_from_config(s->cfg, &s->dr.opts, &s->dr.enabled, eb, ebn);
    s->dr.retry_ms = (uint64_t)core_config_int(s->cfg, "release.drift.report_retry_s") * 1000;
    if (rc != CORE_OK)
        return rc;
    s->ledger = s->opts.ledger;
    if (!core_config_str(s->cfg, "release.ledger.store")[0])
        CORE_WARN("release: the ledger is a JSONL file held in memory: about 280 B of RAM per "
                  "release for as long as the service runs, and a restart reads the whole "
                  "file; set release.ledger.store for a long-running service (docs/operations.md, "
                  "\"Ledger store\")");
    if (!s->opts.theta_path)
        return CORE_OK;
    rc = cal_theta_load_file(s->opts.theta_path, &t, e2, sizeof(e2));
    if (rc != CORE_OK) {
        snprintf(eb, ebn, "theta '%s': %s", s->opts.theta_path, e2);
        return CORE_ECONFIG;
    }
    adopt_theta(s, t);
    return CORE_OK;
}

/* The changelog reader: a consumer that only assigns (never joins, never commits). */
static core_err make_restorer(struct rel_service *s, char *eb, size_t ebn)
{
    static const char *const extra[] = {"enable.partition.eof",
                                        "true",
                                        "auto.offset.reset",
                                        "error",
                                        "enable.auto.commit",
                                        "false",
                                        NULL};
    char group[300];
    core_err rc;

    if (!s->opts.changelog)
        return CORE_OK;
    s->t_changelog = core_config_str(s->cfg, "topics.ledger_changelog");
    rc = rel_changelog_topic_check(s->cfg, eb, ebn);
    if (rc != CORE_OK)
        return rc;
    snprintf(group, sizeof(group), "%s-changelog-restore", s->opts.group);
    rc = core_kafka_client_new(s->cfg, CORE_KAFKA_CONSUMER, group, extra, NULL, NULL, &s->restorer,
                               eb, ebn);
    if (rc == CORE_OK) {
        rd_kafka_poll_set_consumer(s->restorer); /* its logs are served by its polls */
        s->cl_known = json_object();
    }
    return rc;
}

static core_err make_producer(struct rel_service *s, char *eb, size_t ebn)
{
    rd_kafka_conf_t *pc = NULL;
    core_err rc = core_kafka_conf_new(s->cfg, CORE_KAFKA_PRODUCER, NULL, &pc, eb, ebn);
    if (rc != CORE_OK)
        return rc;
    rc = core_kproducer_new(s->loop, pc, on_delivery, s, &s->prod, eb, ebn); /* takes pc */
    if (rc == CORE_OK) { /* leader lookups now, not on the first release's path */
        s->warm[0] = rd_kafka_topic_new(core_kproducer_handle(s->prod), s->t_released, NULL);
        if (s->restorer)
            s->warm[1] = rd_kafka_topic_new(core_kproducer_handle(s->prod), s->t_changelog, NULL);
    }
    return rc;
}

void rel_service_opts_init(const struct core_config *cfg, const char *group,
                           struct core_dp_ledger *ledger, const struct core_dp_scheme *scheme,
                           struct rel_service_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->group = group;
    o->ledger = ledger;
    o->scheme = *scheme;
    o->ledger_lateness_ms = core_config_int(cfg, "release.service.ledger_lateness_ms");
    o->commit_interval_ms = 500;
    o->changelog = core_config_bool(cfg, "release.service.changelog");
    o->replay_horizon_ms = core_config_int(cfg, "release.ledger.replay_horizon_ms");
}

core_err rel_service_new(uv_loop_t *loop, const struct core_config *cfg,
                         const struct rel_service_opts *opts, struct core_metrics *metrics,
                         struct rel_service **out, char *eb, size_t ebn)
{
    struct rel_service *s;
    core_err rc;

    *out = NULL;
    if (!opts->group || !opts->group[0] || !opts->ledger || opts->commit_interval_ms <= 0 ||
        opts->ledger_lateness_ms <= 0) {
        snprintf(eb, ebn,
                 "release: a group id, an open ledger, a positive commit interval "
                 "and ledger lateness are required");
        return CORE_ECONFIG;
    }
    s = core_xcalloc(1, sizeof(*s));
    s->loop = loop;
    s->cfg = cfg;
    s->opts = *opts;
    s->metrics = metrics;
    s->t_windows = core_config_str(cfg, "topics.windows");
    s->t_released = core_config_str(cfg, "topics.released");
    s->t_dlq = core_config_str(cfg, "topics.release_rejected");
    s->t_cal = core_config_str(cfg, "topics.calibration");
    for (int i = 0; i < REL_SERVICE_MAX_PARTITIONS; i++)
        s->parts[i].next = s->parts[i].committed = -1;
    atomic_init(&s->a_lag, -1);
    atomic_init(&s->a_drift_ppm, -1);
    metrics_register(s);
    rc = open_state(s, eb, ebn);
    if (rc == CORE_OK)
        rc = make_restorer(s, eb, ebn);
    if (rc == CORE_OK)
        rc = make_producer(s, eb, ebn);
    if (rc == CORE_OK)
        rc = make_consumers(s, eb, ebn);
    if (rc == CORE_OK)
        rc = make_control(s, eb, ebn);
    if (rc != CORE_OK) {
        s->state = S_DONE;
        rel_service_free(s);
        return rc;
    }
    uv_timer_init(loop, &s->commit_timer);
    uv_timer_init(loop, &s->tick_timer);
    uv_timer_init(loop, &s->flush_timer);
    s->commit_timer.data = s->tick_timer.data = s->flush_timer.data = s;
    s->linger_ms = (uint64_t)core_config_int(cfg, "release.service.linger_ms");
    s->open_handles = 3;
    uv_timer_start(&s->commit_timer, on_commit_timer, (uint64_t)opts->commit_interval_ms,
                   (uint64_t)opts->commit_interval_ms);
    uv_timer_start(&s->tick_timer, on_tick, TICK_MS, TICK_MS);
    s->last_theta_msg = uv_now(loop);
    health_refresh(s);
    *out = s;
    return CORE_OK;
}

void rel_service_stats(const struct rel_service *s, struct rel_service_stats *out)
{
    struct rel_service *w = (struct rel_service *)s; /* atomics are read-only here */

    memset(out, 0, sizeof(*out));
    out->consumed = atomic_load(&w->a_consumed);
    out->released = atomic_load(&w->a_released);
    out->replayed = atomic_load(&w->a_replayed);
    out->excluded = atomic_load(&w->a_excluded);
    out->dead_letters = atomic_load(&w->a_dlq);
    for (int i = 0; i < REL_DLQ_COUNT; i++)
        out->by_reason[i] = atomic_load(&w->a_by_reason[i]);
    out->produce_errors = atomic_load(&w->a_produce_errors);
    out->commits = atomic_load(&w->a_commits);
    out->commit_errors = atomic_load(&w->a_commit_errors);
    out->offset_gaps = atomic_load(&w->a_gaps);
    out->theta_version = atomic_load(&w->a_theta_version);
    out->theta_swaps = atomic_load(&w->a_theta_swaps);
    out->lag = atomic_load(&w->a_lag);
    out->first_read_ns = atomic_load(&w->a_first_read_ns);
    out->drift_ppm = atomic_load(&w->a_drift_ppm);
    out->changelog_sent = atomic_load(&w->a_cl_sent);
    out->adopted = atomic_load(&w->a_cl_adopted);
    out->adopted_over_cap = atomic_load(&w->a_cl_over_cap);
    out->refused_partitions = atomic_load(&w->a_cl_refused);
    out->changelog_refusals = atomic_load(&w->a_cl_refusals);
}

void rel_service_free(struct rel_service *s)
{
    if (!s)
        return;
    core_kconsumer_free(s->cons);
    core_kconsumer_free(s->tcons);
    core_ctl_listener_free(s->ctl);
    for (int i = 0; i < 2; i++)
        if (s->warm[i])
            rd_kafka_topic_destroy(s->warm[i]);
    core_kproducer_free(s->prod);
    if (s->restorer)
        rd_kafka_destroy(s->restorer);
    json_decref(s->cl_known);
    rel_drift_free(s->dr.mon);
    json_decref(s->dr.coord);
    core_jalloc_free(s->dr.ja);
    free(s->dr.val);
    free(s->dr.var);
    core_ctl_key_free(s->dr.key);
    while (s->eq_head) { /* never emitted: their charges are cancelled with the releaser */
        struct entry *e = s->eq_head;
        s->eq_head = e->enext;
        entry_unref(e);
    }
    for (int p = 0; p < REL_SERVICE_MAX_PARTITIONS; p++)
        queue_drop(&s->parts[p]);
    drop_plan(s);
    if (s->w_init)
        rel_window_cleanup(&s->w);
    cal_theta_free(s->theta);
    free(s); /* the ledger is the caller's */
}
