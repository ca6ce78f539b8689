/* service.c - the calibrate service: θ versions on topics.calibration (cal/service.h). */
#include "cal/service.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cal/calibrate.h"
#include "cal/ledger.h"
#include "cal/matrix.h"
#include "cal/span.h"
#include "cal/theta.h"
#include "core/clock.h"
#include "core/ctl_listen.h"
#include "core/dp_rng.h"
#include "core/kafka.h"
#include "core/kconf.h"
#include "core/log.h"
#include "core/mem.h"
#include "private.h"

#define TICK_MS   250
#define IO_MS     30000 /* private mode: reading a topic to its end, waiting for acks */
#define SETTLE_MS 1500  /* topics.calibration quiet this long (or lag 0): read to its end */
#define CLOSE_MS  10000

enum svc_state { S_READING, S_RUNNING, S_CLOSING, S_DONE };

struct cal_service {
    uv_loop_t *loop;
    const struct core_config *cfg;
    struct cal_service_opts opts;
    struct cal_opts copts;
    struct core_kconsumer *tcons;
    struct core_kproducer *prod;
    struct core_ctl_listener *ctl; /* signed commands (disabled without control.key_file) */
    bool ctl_closed, paused;
    struct core_metrics *metrics;
    struct core_metric *m_version, *m_made[CAL_N_REASONS], *m_limited, *m_failures;
    struct core_metric *m_refused[CAL_N_REFUSALS];
    bool priv; /* calibrate.mode=private */
    const char *t_cal;
    uv_timer_t tick;
    enum svc_state state;
    core_err status;
    bool done_called, tcons_closed;
    uint64_t started, last_theta_msg, close_started, last_made_at; /* loop ms */
    uint64_t newest;                                               /* newest version seen or made */
    uint64_t periodic_from; /* loop ms the periodic fallback counts from */
    _Atomic uint64_t a_version, a_made, a_published, a_by_reason[CAL_N_REASONS], a_limited,
        a_failures;
    _Atomic uint64_t a_refused[CAL_N_REFUSALS], a_replayed;
    char last_reason[16];
};

static void on_delivery(void *arg, void *opaque, rd_kafka_resp_err_t err)
{
    struct cal_service *s = arg;
    uint64_t version = (uint64_t)(uintptr_t)opaque;

    if (!opaque) { /* a status record */
        if (err)
            CORE_WARN("a status record was not acknowledged (%s)", rd_kafka_err2str(err));
        return;
    }
    if (err) {
        CORE_ERROR("theta version %" PRIu64 " was not acknowledged by the broker (%s)", version,
                   rd_kafka_err2str(err));
        atomic_fetch_add(&s->a_failures, 1);
        return;
    }
    atomic_fetch_add(&s->a_published, 1);
    CORE_INFO("theta version %" PRIu64 " published to %s", version, s->t_cal);
}

/* ------------------------------------------------------------------------------------ */
/* Private mode (cal/service.h: the protocol) */

static const char *const refusal_names[CAL_N_REFUSALS] = {"budget", "release_behind", "no_windows",
                                                          "changelog"};
enum { R_BUDGET, R_BEHIND, R_NO_WINDOWS, R_CHANGELOG };

const char *cal_refusal_name(int i)
{
    return i >= 0 && i < CAL_N_REFUSALS ? refusal_names[i] : NULL;
}

static void reply(struct cal_service *s, const char *nonce, json_t *body);

/* A refusal: counted, logged (reason and detail: counts, times, topics; the budget detail
 * names the unit, as the offline command does on stderr) and reported on topics.status
 * without the detail (the reason code and a fixed sentence: no unit, no value). */
static void refuse(struct cal_service *s, int why, const char *reason, const char *detail)
{
    static const char *const said[CAL_N_REFUSALS] = {
        ("a unit of the declared span would pass its lifetime cap (release.ledger.cap_*): "
         "no noise drawn, no theta"),
        "release has not committed past every window of the declared span",
        "the declared span holds fewer than 2 usable windows",
        "the ledger changelog cannot be read whole (truncated or conflicting)"};

    atomic_fetch_add(&s->a_refused[why], 1);
    core_metric_add(s->m_refused[why], 1);
    CORE_WARN("private recalibration (%s) refused (%s): %s", reason, refusal_names[why], detail);
    reply(s, NULL,
          json_pack("{s:s, s:s, s:s, s:s}", "recalibrate", "refused", "reason", reason, "refusal",
                    refusal_names[why], "detail", said[why]));
}

/* Steps 1-3: windows, span, release caught up, changelog adopted. */
static core_err private_span(struct cal_service *s, struct cal_span_result *r, int *why, char *eb,
                             size_t ebn)
{
    struct cal_span_set set;
    struct cal_priv_adopt_stats ad;
    int64_t widen = cal_ledger_widen_ms(&s->opts.scheme), t0 = 0, t1 = 0;
    core_err rc;

    memset(r, 0, sizeof(*r));
    cal_span_set_init(&set, s->opts.lateness_ms + widen + s->opts.scheme.slot_ms, s->opts.span_ms);
    rc = cal_priv_read_windows(s->cfg, core_config_str(s->cfg, "topics.windows"), &set, IO_MS, eb,
                               ebn);
    if (rc == CORE_OK && !cal_span_bounds(set.newest_end, s->opts.lateness_ms, widen,
                                          s->opts.scheme.slot_ms, s->opts.span_ms, &t0, &t1)) {
        snprintf(eb, ebn, "no window on %s", core_config_str(s->cfg, "topics.windows"));
        rc = CORE_ENOTFOUND;
    }
    if (rc == CORE_OK)
        rc = cal_span_select(&set, t0, t1, r, eb, ebn);
    *why = rc == CORE_ENOTFOUND ? R_NO_WINDOWS : -1;
    if (rc == CORE_OK && s->opts.lateness_ms < r->row_len_ms + widen + s->opts.scheme.slot_ms) {
        snprintf(eb, ebn,
                 "release.service.ledger_lateness_ms = %" PRId64 " is shorter than a "
                 "window (%" PRId64 " ms) + the widening + one slot: a later window of a device "
                 "could charge a unit of the span",
                 s->opts.lateness_ms, r->row_len_ms);
        rc = CORE_ECONFIG;
    }
    if (rc == CORE_OK) {
        rc = cal_priv_release_caught_up(s->cfg, s->opts.release_group,
                                        core_config_str(s->cfg, "topics.windows"), r, IO_MS, eb,
                                        ebn);
        *why = rc == CORE_ESTATE ? R_BEHIND : -1;
    }
    if (rc == CORE_OK) {
        rc = cal_priv_adopt_changelog(s->cfg, core_config_str(s->cfg, "topics.ledger_changelog"),
                                      s->opts.ledger, IO_MS, &ad, eb, ebn);
        *why = rc == CORE_ESTATE || rc == CORE_EINVARIANT || rc == CORE_EPARSE ? R_CHANGELOG : -1;
        for (size_t p = 0; rc == CORE_OK && p < r->n_parts; p++)
            if (r->need[p] >= 0 && ad.rows_in[p] == 0) { /* released windows, no rows */
                snprintf(eb, ebn,
                         "%s partition %zu holds no ledger row although release "
                         "committed past windows of the span: is release.service.changelog "
                         "on for every release instance?",
                         core_config_str(s->cfg, "topics.ledger_changelog"), p);
                rc = CORE_ESTATE;
                *why = R_CHANGELOG;
            }
        if (rc == CORE_OK)
            CORE_INFO("span [%" PRId64 ", %" PRId64 "]: %zu windows of %zu devices (%zu skipped, "
                      "%" PRIu64 " malformed); changelog: %" PRIu64 " rows, %" PRIu64 " adopted",
                      t0, t1, r->mx->n, r->n_devices, r->skipped, set.malformed, ad.rows,
                      ad.adopted);
    }
    cal_span_set_cleanup(&set);
    return rc;
}

/* Step 5 for a committed version: its rows (head and parts) to the changelog, then θ. */
static core_err private_publish(struct cal_service *s, uint64_t version, size_t parts,
                                const char *bytes, size_t len, const int64_t *need, size_t n_parts,
                                char *eb, size_t ebn)
{
    char(*idb)[64] = core_xcalloc(parts ? parts : 1, sizeof(*idb));
    const char **ids = core_xcalloc(parts ? parts : 1, sizeof(*ids));
    core_err rc;

    for (size_t k = 0; k < parts; k++) {
        if (k + 1 < parts)
            snprintf(idb[k], sizeof(idb[k]), "calibrate|%" PRIu64 "#%zu", version, k + 1);
        else
            snprintf(idb[k], sizeof(idb[k]), "calibrate|%" PRIu64, version);
        ids[k] = idb[k];
    }
    rc = cal_priv_publish(s->cfg, s->opts.ledger, ids, parts, need, n_parts, s->t_cal, version,
                          bytes, len, IO_MS, eb, ebn);
    free(ids);
    free(idb);
    return rc;
}

static void made(struct cal_service *s, uint64_t version, const char *reason)
{
    int ri = cal_reason_index(reason);
    s->newest = version;
    s->last_made_at = uv_now(s->loop);
    snprintf(s->last_reason, sizeof(s->last_reason), "%s", reason);
    atomic_store(&s->a_version, version);
    atomic_fetch_add(&s->a_made, 1);
    atomic_fetch_add(&s->a_by_reason[ri], 1);
    core_metric_set(s->m_version, (int64_t)version);
    core_metric_add(s->m_made[ri], 1);
}

/* One private version (cal/service.h, steps 1-5). */
static core_err make_private_version(struct cal_service *s, const char *reason, char *eb,
                                     size_t ebn)
{
    struct cal_span_result r;
    struct cal_charged ch;
    struct cal_ledger_opts lo;
    struct cal_opts o = s->copts;
    int why = -1;
    core_err rc = private_span(s, &r, &why, eb, ebn);
    int64_t now = core_wall_ms();

    memset(&ch, 0, sizeof(ch));
    o.version = (uint64_t)now > s->newest ? (uint64_t)now : s->newest + 1;
    snprintf(o.reason, sizeof(o.reason), "%s", reason);
    if (rc == CORE_OK) {
        memset(&lo, 0, sizeof(lo));
        lo.devices = (const char *const *)r.devices;
        lo.n_devices = r.n_devices;
        lo.slot_ms = s->opts.scheme.slot_ms;
        lo.widen_ms = cal_ledger_widen_ms(&s->opts.scheme);
        lo.cap = s->opts.cap;
        lo.row_len_ms = r.row_len_ms;
        rc = cal_calibrate_charged(s->opts.ledger, r.mx, &o, &lo, "windows:span", s->opts.rng, &ch,
                                   eb, ebn);
        core_rng_os_wipe();
        why = rc == CORE_EBUDGET ? R_BUDGET : -1;
    }
    if (rc == CORE_OK)
        rc = private_publish(s, ch.version, ch.n_parts, ch.bytes, ch.len, r.need, r.n_parts, eb,
                             ebn);
    if (rc == CORE_OK) {
        made(s, ch.version, reason);
        atomic_fetch_add(&s->a_published, 1);
        CORE_INFO("private theta version %" PRIu64 " (%s): eps_cal %.17g charged to %zu units "
                  "in %zu ledger rows, published after its rows",
                  ch.version, reason, ch.eps_charged, ch.n_units, ch.n_parts);
    } else if (why >= 0) {
        refuse(s, why, reason, eb);
    } else {
        atomic_fetch_add(&s->a_failures, 1);
        core_metric_add(s->m_failures, 1);
        CORE_ERROR("private calibration (%s) failed: %s", reason, eb);
    }
    cal_charged_cleanup(&ch);
    cal_span_result_cleanup(&r);
    return rc;
}

struct newest_head {
    uint64_t v;
};

/* core_dp_ledger_scan callback: the newest "calibrate|<v>" head row. */
static int scan_head(void *arg, const struct core_dp_row *row)
{
    struct newest_head *h = arg;
    const char *p = row->id;
    char *end = NULL;
    unsigned long long v;

    if (strcmp(row->mech, CAL_LEDGER_MECH) != 0 || strncmp(p, "calibrate|", 10) != 0)
        return 0;
    v = strtoull(p + 10, &end, 10);
    if (end && *end == '\0' && v > h->v)
        h->v = v;
    return 0;
}

/* Start, after topics.calibration was read: a version the ledger committed and the topic
 * does not hold (newer than its newest) is republished from the ledger with its rows. */
static core_err private_replay(struct cal_service *s, char *eb, size_t ebn)
{
    struct newest_head h = {0};
    struct core_dp_scheme sc;
    struct core_dp_cost cap;
    uint64_t torn = 0;
    uint8_t *bytes = NULL, *pb = NULL;
    size_t len = 0, plen = 0, parts = 1, n_parts = 0;
    int64_t *need = core_xcalloc(CAL_SPAN_MAX_PARTITIONS, sizeof(*need));
    char id[64];
    json_t *j = NULL;
    core_err rc =
        core_dp_ledger_scan(s->opts.ledger_path, &sc, &cap, scan_head, &h, &torn, eb, ebn);

    if (rc != CORE_OK || h.v <= s->newest)
        goto out;
    snprintf(id, sizeof(id), "calibrate|%" PRIu64, (uint64_t)h.v);
    if ((rc = core_dp_ledger_lookup(s->opts.ledger, id, &bytes, &len)) != CORE_OK)
        goto out;
    j = json_loadb((const char *)bytes, len, 0, NULL);
    if (!json_is_integer(json_object_get(j, "version"))) { /* a failure marker: no θ */
        s->newest = h.v;                                   /* never reused */
        goto out;
    }
    snprintf(id, sizeof(id), "calibrate|%" PRIu64 "#1", (uint64_t)h.v);
    if (core_dp_ledger_lookup(s->opts.ledger, id, &pb, &plen) == CORE_OK) {
        json_t *pj = json_loadb((const char *)pb, plen, 0, NULL);
        parts = (size_t)json_integer_value(json_object_get(pj, "parts"));
        json_decref(pj);
    }
    rc = cal_priv_all_partitions(s->cfg, core_config_str(s->cfg, "topics.windows"), need, &n_parts,
                                 eb, ebn);
    if (rc == CORE_OK)
        rc = private_publish(s, h.v, parts ? parts : 1, (const char *)bytes, len, need, n_parts, eb,
                             ebn);
    if (rc == CORE_OK) {
        s->newest = h.v;
        atomic_store(&s->a_version, h.v);
        atomic_fetch_add(&s->a_replayed, 1);
        atomic_fetch_add(&s->a_published, 1);
        core_metric_set(s->m_version, (int64_t)h.v);
        CORE_INFO("private theta version %" PRIu64 " republished from the ledger (committed, "
                  "not on %s): stored bytes, no noise drawn",
                  (uint64_t)h.v, s->t_cal);
    }
out:
    json_decref(j);
    free(bytes);
    free(pb);
    free(need);
    return rc;
}

/* Calibrate from the source and produce the new version (reason: a θ reason code). */
static core_err make_version(struct cal_service *s, const char *reason, char *eb, size_t ebn)
{
    struct cal_matrix *mx = NULL;
    struct cal_theta *t = NULL;
    struct cal_report rep;
    struct cal_opts o = s->copts;
    const char *base = s->opts.input ? strrchr(s->opts.input, '/') : NULL;
    char *bytes = NULL, key[24];
    size_t len = 0;
    int64_t now = core_wall_ms();
    core_err rc;

    if (s->priv)
        return make_private_version(s, reason, eb, ebn);
    o.version = (uint64_t)now > s->newest ? (uint64_t)now : s->newest + 1;
    rc = cal_matrix_load_ts(s->opts.input, o.format, o.label_column,
                            o.ts_column[0] ? o.ts_column : NULL, o.max_rows, &mx, eb, ebn);
    if (rc == CORE_OK)
        rc = cal_calibrate(mx, &o, NULL, &t, &rep, eb, ebn);
    if (rc == CORE_OK) {
        snprintf(t->source, sizeof(t->source), "%s:%s",
                 o.format == CAL_FORMAT_OCCUPANCY ? "occupancy" : "csv",
                 base ? base + 1 : s->opts.input);
        snprintf(t->reason, sizeof(t->reason), "%s", reason);
        rc = cal_theta_to_bytes(t, &bytes, &len, eb, ebn);
    }
    if (rc == CORE_OK) {
        snprintf(key, sizeof(key), "%" PRIu64, t->version);
        rc = core_kproducer_send(s->prod, s->t_cal, RD_KAFKA_PARTITION_UA, key, strlen(key), bytes,
                                 len, (void *)(uintptr_t)t->version);
        if (rc != CORE_OK)
            snprintf(eb, ebn, "cannot enqueue theta version %" PRIu64 " (%s)", t->version,
                     core_strerror(rc));
    }
    if (rc == CORE_OK) {
        int ri = cal_reason_index(reason);
        s->newest = t->version;
        s->last_made_at = uv_now(s->loop);
        snprintf(s->last_reason, sizeof(s->last_reason), "%s", reason);
        atomic_store(&s->a_version, t->version);
        atomic_fetch_add(&s->a_made, 1);
        atomic_fetch_add(&s->a_by_reason[ri], 1);
        core_metric_set(s->m_version, (int64_t)t->version);
        core_metric_add(s->m_made[ri], 1);
        CORE_INFO("theta version %" PRIu64 " made (%s): %zu rows, %zu edges, %.3f s", t->version,
                  reason, mx->n, rep.n_edges, rep.t_total);
    } else {
        atomic_fetch_add(&s->a_failures, 1);
        core_metric_add(s->m_failures, 1);
        CORE_ERROR("calibration (%s) failed: %s", reason, eb);
    }
    free(bytes);
    cal_theta_free(t);
    cal_matrix_free(mx);
    return rc;
}

core_err cal_service_request(struct cal_service *s, const char *reason, char *eb, size_t ebn)
{
    uint64_t now = uv_now(s->loop), next;

    if (cal_reason_index(reason) < 0) {
        snprintf(eb, ebn, "unknown reason '%s'", reason);
        return CORE_EINVAL;
    }
    if (s->state != S_RUNNING) {
        snprintf(eb, ebn, "not ready: %s is still being read", s->t_cal);
        return CORE_ESTATE;
    }
    if (s->paused && strcmp(reason, "periodic") != 0) {
        snprintf(eb, ebn, "paused by a control command (gcdp ctl resume --target calibrate)");
        return CORE_ESTATE;
    }
    next = s->last_made_at + (uint64_t)s->opts.min_interval_ms;
    if (s->last_made_at && now < next) {
        atomic_fetch_add(&s->a_limited, 1);
        core_metric_add(s->m_limited, 1);
        snprintf(eb, ebn,
                 "rate-limited: the previous version was made %.1f s ago; the next is "
                 "allowed in %.1f s (calibrate.service.min_interval_s)",
                 (double)(now - s->last_made_at) / 1000.0, (double)(next - now) / 1000.0);
        CORE_WARN("recalibration (%s) refused: %s", reason, eb);
        return CORE_EAGAIN;
    }
    return make_version(s, reason, eb, ebn);
}

static void on_theta_assign(void *arg, const rd_kafka_topic_partition_list_t *parts)
{
    struct cal_service *s = arg;
    (void)parts;
    s->last_theta_msg = uv_now(s->loop); /* the settle time counts from the assignment */
}

static void on_theta_message(void *arg, const rd_kafka_message_t *m)
{
    struct cal_service *s = arg;
    json_t *j;
    const json_t *v;

    s->last_theta_msg = uv_now(s->loop);
    if (!m->payload || m->len == 0)
        return;
    j = json_loadb(m->payload, m->len, 0, NULL);
    v = j ? json_object_get(j, "version") : NULL;
    if (json_is_integer(v) && json_integer_value(v) > 0 &&
        (uint64_t)json_integer_value(v) > s->newest) {
        s->newest = (uint64_t)json_integer_value(v);
        atomic_store(&s->a_version, s->newest);
        core_metric_set(s->m_version, (int64_t)s->newest);
    }
    json_decref(j);
}

/* ------------------------------------------------------------------------------------ */
/* Control commands and status */

/* The service's state as a status body (public values only). */
static json_t *status_body(struct cal_service *s)
{
    struct cal_service_stats st;
    json_t *o, *by = json_object();

    cal_service_stats(s, &st);
    for (int i = 0; i < CAL_N_REASONS; i++)
        json_object_set_new(by, cal_reason_name(i), json_integer((json_int_t)st.by_reason[i]));
    o = json_pack("{s:I, s:s, s:I, s:I, s:o, s:I, s:I, s:b, s:s}", "theta_version",
                  (json_int_t)st.version, "last_reason", st.last_reason, "made",
                  (json_int_t)st.made, "published", (json_int_t)st.published, "by_reason", by,
                  "rate_limited", (json_int_t)st.rate_limited, "failures", (json_int_t)st.failures,
                  "paused", s->paused, "mode", s->priv ? "private" : "public");
    if (s->priv) {
        json_t *rf = json_object();
        for (int i = 0; i < CAL_N_REFUSALS; i++)
            json_object_set_new(rf, refusal_names[i], json_integer((json_int_t)st.refused[i]));
        json_object_set_new(o, "refused", rf);
        json_object_set_new(o, "replayed", json_integer((json_int_t)st.replayed));
        json_object_set_new(o, "private_span_s", json_integer(s->opts.span_ms / 1000));
    }
    json_object_set_new(o, "min_interval_s", json_integer(s->opts.min_interval_ms / 1000));
    json_object_set_new(o, "refresh_s", json_integer(s->opts.refresh_ms / 1000));
    json_object_set_new(o, "control", core_ctl_listener_counts_json(s->ctl));
    return o;
}

static void reply(struct cal_service *s, const char *nonce, json_t *body)
{
    char eb[256] = "";
    if (core_ctl_reply_status(s->prod, core_config_str(s->cfg, "topics.status"), "calibrate",
                              core_ctl_listener_instance(s->ctl), nonce, body, NULL, eb,
                              sizeof(eb)) != CORE_OK)
        CORE_WARN("status reply not sent: %s", eb);
    json_decref(body);
}

static uint64_t refusals(struct cal_service *s)
{
    uint64_t n = 0;
    for (int i = 0; i < CAL_N_REFUSALS; i++)
        n += atomic_load(&s->a_refused[i]);
    return n;
}

/* A verified command. A recalibration whose signed reason starts with "drift" (the release
 * service's drift report) is made with reason drift, every other one with reason command. */
static void on_command(void *arg, const struct core_ctl_cmd *cmd)
{
    struct cal_service *s = arg;
    char eb[512] = "";
    const char *why = strncmp(cmd->reason, "drift", 5) == 0 ? "drift" : "command";
    uint64_t refused_before;
    core_err rc;

    switch (cmd->cmd) {
    case CORE_CTL_RECALIBRATE:
        refused_before = refusals(s);
        rc = cal_service_request(s, why, eb, sizeof(eb));
        if (refusals(s) != refused_before) /* private: detail kept off the public topic */
            snprintf(eb, sizeof(eb),
                     "refused by the privacy protocol (see the status record "
                     "with its refusal reason and the service log)");
        reply(s, cmd->nonce,
              json_pack("{s:s, s:s, s:s, s:I}", "recalibrate",
                        rc == CORE_OK       ? "made"
                        : rc == CORE_EAGAIN ? "rate_limited"
                                            : "refused",
                        "reason", why, "detail", rc == CORE_OK ? "" : eb, "theta_version",
                        (json_int_t)s->newest));
        break;
    case CORE_CTL_PAUSE:
    case CORE_CTL_RESUME:
        s->paused = cmd->cmd == CORE_CTL_PAUSE;
        CORE_INFO("recalibration %s by a control command", s->paused ? "paused" : "resumed");
        reply(s, cmd->nonce, status_body(s));
        break;
    case CORE_CTL_STATUS:
        reply(s, cmd->nonce, status_body(s));
        break;
    }
}

static void on_ctl_closed(void *arg)
{
    struct cal_service *s = arg;
    s->ctl_closed = true;
}

/* ------------------------------------------------------------------------------------ */
/* Lifecycle */

static void on_tick_closed(uv_handle_t *h)
{
    struct cal_service *s = h->data;
    if (!s->done_called) {
        s->done_called = true;
        if (s->opts.on_done)
            s->opts.on_done(s->opts.arg, s->status);
    }
}

static void finish(struct cal_service *s)
{
    if (s->state == S_DONE)
        return;
    s->state = S_DONE;
    CORE_INFO("calibrate stopped: newest version %" PRIu64 ", %" PRIu64 " made, %" PRIu64
              " published",
              s->newest, atomic_load(&s->a_made), atomic_load(&s->a_published));
    if (s->metrics)
        core_metrics_set_health(s->metrics, false, "stopped");
    core_kconsumer_detach(s->tcons);
    core_ctl_listener_detach(s->ctl);
    core_kproducer_detach(s->prod);
    uv_close((uv_handle_t *)&s->tick, on_tick_closed);
}

static void on_closed(void *arg)
{
    struct cal_service *s = arg;
    s->tcons_closed = true;
}

void cal_service_stop(struct cal_service *s)
{
    if (s->state == S_CLOSING || s->state == S_DONE)
        return;
    CORE_INFO("calibrate stopping: waiting for the last version to be acknowledged");
    s->state = S_CLOSING;
    s->close_started = uv_now(s->loop);
    core_kconsumer_close(s->tcons);
    core_ctl_listener_close(s->ctl);
}

static void reading_step(struct cal_service *s, uint64_t now)
{
    char eb[1024] = "";
    int64_t lag = core_kconsumer_lag(s->tcons);

    /* read to its end: partitions assigned, and no lag (or nothing new for SETTLE_MS) */
    if (core_kconsumer_assigned(s->tcons) == 0 ||
        !(lag == 0 || now - s->last_theta_msg >= SETTLE_MS))
        return;
    s->state = S_RUNNING;
    if (s->priv && private_replay(s, eb, sizeof(eb)) != CORE_OK) {
        CORE_ERROR("republishing the ledger's unpublished theta failed: %s", eb);
        s->status = CORE_EKAFKA;
        cal_service_stop(s); /* fail closed: no new version above an unpublished one */
        return;
    }
    if (s->newest) {
        CORE_INFO("%s holds version %" PRIu64 ": no initial calibration", s->t_cal, s->newest);
        return;
    }
    if (make_version(s, "initial", eb, sizeof(eb)) != CORE_OK && !s->priv) {
        s->status = CORE_EIO;
        cal_service_stop(s); /* no θ at all: nothing downstream can run; say so and stop */
    }
}

static void on_tick(uv_timer_t *t)
{
    struct cal_service *s = t->data;
    uint64_t now = uv_now(s->loop), since;
    char eb[1024] = "";

    if (s->state == S_READING)
        reading_step(s, now);
    if (s->state == S_RUNNING && s->opts.refresh_ms > 0) {
        since = s->last_made_at > s->periodic_from ? s->last_made_at : s->periodic_from;
        if (now - since >= (uint64_t)s->opts.refresh_ms &&
            cal_service_request(s, "periodic", eb, sizeof(eb)) != CORE_OK)
            s->periodic_from = now; /* failed or limited: try again one period later */
    }
    if (s->state == S_RUNNING && s->opts.exit_after_ms > 0 &&
        now - s->started >= (uint64_t)s->opts.exit_after_ms)
        cal_service_stop(s);
    if (s->state == S_CLOSING &&
        ((s->tcons_closed && s->ctl_closed && core_kproducer_outq(s->prod) == 0) ||
         now - s->close_started >= CLOSE_MS))
        finish(s);
    if (s->metrics && s->state != S_DONE)
        core_metrics_set_health(s->metrics, s->state == S_RUNNING && s->newest > 0,
                                s->state == S_READING ? "reading topics.calibration"
                                : s->newest == 0      ? "no theta yet"
                                                      : NULL);
}

static void metrics_register(struct cal_service *s)
{
    char lab[64];

    if (!s->metrics)
        return;
    s->m_version = core_metrics_get(s->metrics, CORE_METRIC_GAUGE, "gcdp_calibrate_theta_version",
                                    NULL, "newest theta version (0: none)");
    for (int i = 0; i < CAL_N_REASONS; i++) {
        snprintf(lab, sizeof(lab), "reason=\"%s\"", cal_reason_name(i));
        s->m_made[i] =
            core_metrics_get(s->metrics, CORE_METRIC_COUNTER, "gcdp_calibrate_versions_total", lab,
                             "theta versions made, by reason");
    }
    s->m_limited =
        core_metrics_get(s->metrics, CORE_METRIC_COUNTER, "gcdp_calibrate_rate_limited_total", NULL,
                         "recalibration requests refused by the rate limit");
    s->m_failures =
        core_metrics_get(s->metrics, CORE_METRIC_COUNTER, "gcdp_calibrate_failures_total", NULL,
                         "calibrations or publications that failed");
    for (int i = 0; s->priv && i < CAL_N_REFUSALS; i++) {
        snprintf(lab, sizeof(lab), "reason=\"%s\"", refusal_names[i]);
        s->m_refused[i] =
            core_metrics_get(s->metrics, CORE_METRIC_COUNTER, "gcdp_calibrate_refusals_total", lab,
                             "private recalibrations refused, by reason");
    }
}

static core_err make_clients(struct cal_service *s, char *eb, size_t ebn)
{
    rd_kafka_conf_t *c = NULL;
    struct core_kconsumer_ops ops = {.on_message = on_theta_message,
                                     .on_assign = on_theta_assign,
                                     .on_closed = on_closed,
                                     .arg = s};
    core_err rc = core_kafka_conf_new(s->cfg, CORE_KAFKA_PRODUCER, NULL, &c, eb, ebn);

    if (rc != CORE_OK)
        return rc;
    rc = core_kproducer_new(s->loop, c, on_delivery, s, &s->prod, eb, ebn);
    if (rc != CORE_OK)
        return rc;
    rc = core_kconsumer_new_own(s->loop, s->cfg, "gcdp-calibrate", s->t_cal, "earliest", &ops,
                                &s->tcons, eb, ebn); /* every θ version, from the start */
    if (rc == CORE_OK) {
        struct core_ctl_listener_opts co = {"calibrate", on_command, on_ctl_closed, s, s->metrics};
        rc = core_ctl_listener_new(s->loop, s->cfg, &co, &s->ctl, eb, ebn);
    }
    return rc;
}

core_err cal_service_opts_from_config(const struct core_config *cfg, struct cal_opts *o, char *eb,
                                      size_t ebn)
{
    core_err rc = cal_opts_from_config(cfg, o, eb, ebn);

    if (rc == CORE_OK && o->mode == CAL_MODE_PRIVATE && o->sens != CAL_SENS_UNIVERSAL) {
        snprintf(eb, ebn,
                 "calibrate.private.sensitivity: the private calibrate service uses "
                 "universal (the expansion bound needs the policy graph over the "
                 "span's nodes; use the offline `gcdp calibrate --mode private`)");
        rc = CORE_ECONFIG;
    }
    if (rc == CORE_OK && o->mode == CAL_MODE_PRIVATE && o->task != CAL_TASK_AGGREGATE) {
        snprintf(eb, ebn,
                 "calibrate.task: the private calibrate service builds theta from "
                 "windows, which carry no labels: aggregate only");
        rc = CORE_ECONFIG;
    }
    if (rc == CORE_OK && o->mode == CAL_MODE_PRIVATE && o->version != 0) {
        snprintf(eb, ebn, "calibrate.version: the service chooses each version (set 0)");
        rc = CORE_ECONFIG;
    }
    return rc == CORE_OK ? cal_opts_check(o, eb, ebn) : rc;
}

void cal_service_opts_init(const struct core_config *cfg, const char *input,
                           struct cal_service_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->input = input;
    o->min_interval_ms = core_config_int(cfg, "calibrate.service.min_interval_s") * 1000;
    o->refresh_ms = core_config_int(cfg, "calibrate.service.refresh_s") * 1000;
    o->span_ms = core_config_int(cfg, "calibrate.service.private_span_s") * 1000;
    o->release_group = core_config_str(cfg, "calibrate.service.release_group");
    o->lateness_ms = core_config_int(cfg, "release.service.ledger_lateness_ms");
}

/* Private mode's own requirements (cal/service.h). */
static core_err private_check(const struct cal_service_opts *o, char *eb, size_t ebn)
{
    if (!o->ledger || !o->ledger_path || !o->rng) {
        snprintf(eb, ebn,
                 "calibrate.mode=private: the service needs its own ledger "
                 "(calibrate.ledger.path) and a noise source");
        return CORE_ECONFIG;
    }
    if (o->span_ms < 1 || o->lateness_ms < 0 || !o->release_group || !o->release_group[0] ||
        o->scheme.slot_ms < 1 || o->scheme.period_ms < 1) {
        snprintf(eb, ebn,
                 "calibrate.service.private_span_s, calibrate.service.release_group, "
                 "release.service.ledger_lateness_ms and release.ledger.slot_ms must be "
                 "set for a private service");
        return CORE_ECONFIG;
    }
    return CORE_OK;
}

core_err cal_service_new(uv_loop_t *loop, const struct core_config *cfg,
                         const struct cal_service_opts *opts, struct core_metrics *metrics,
                         struct cal_service **out, char *eb, size_t ebn)
{
    struct cal_service *s;
    core_err rc;

    *out = NULL;
    s = core_xcalloc(1, sizeof(*s));
    s->loop = loop;
    s->cfg = cfg;
    s->opts = *opts;
    s->metrics = metrics;
    s->t_cal = core_config_str(cfg, "topics.calibration");
    rc = cal_service_opts_from_config(cfg, &s->copts, eb, ebn);
    s->priv = rc == CORE_OK && s->copts.mode == CAL_MODE_PRIVATE;
    if (rc == CORE_OK && s->priv)
        rc = private_check(opts, eb, ebn);
    if (rc == CORE_OK && !s->priv && (!opts->input || !opts->input[0])) {
        snprintf(eb, ebn,
                 "calibrate service: a public calibration source file is required "
                 "(--input FILE)");
        rc = CORE_ECONFIG;
    }
    metrics_register(s);
    if (rc == CORE_OK)
        rc = make_clients(s, eb, ebn);
    if (rc != CORE_OK) {
        cal_service_free(s);
        return rc;
    }
    uv_timer_init(loop, &s->tick);
    s->tick.data = s;
    uv_timer_start(&s->tick, on_tick, TICK_MS, TICK_MS);
    s->started = s->last_theta_msg = s->periodic_from = uv_now(loop);
    *out = s;
    return CORE_OK;
}

void cal_service_stats(const struct cal_service *s, struct cal_service_stats *out)
{
    struct cal_service *w = (struct cal_service *)s;

    memset(out, 0, sizeof(*out));
    out->version = atomic_load(&w->a_version);
    out->made = atomic_load(&w->a_made);
    out->published = atomic_load(&w->a_published);
    for (int i = 0; i < CAL_N_REASONS; i++)
        out->by_reason[i] = atomic_load(&w->a_by_reason[i]);
    out->rate_limited = atomic_load(&w->a_limited);
    out->failures = atomic_load(&w->a_failures);
    for (int i = 0; i < CAL_N_REFUSALS; i++)
        out->refused[i] = atomic_load(&w->a_refused[i]);
    out->replayed = atomic_load(&w->a_replayed);
    snprintf(out->last_reason, sizeof(out->last_reason), "%s", w->last_reason);
}

void cal_service_free(struct cal_service *s)
{
    if (!s)
        return;
    core_kconsumer_free(s->tcons);
    core_ctl_listener_free(s->ctl);
    core_kproducer_free(s->prod);
    free(s);
}
