/* fedsvc_server.c - the server of the federated learner as a Kafka service (see
 * lrn/fedsvc.h and docs/learner.md "Learner services").
 *
 * The ADMM is the library's: lrn_admm_run() with a REMOTE lrn_local_ops whose solve() sends
 * SOLVE(session, round, W_p, β_p, B_p(prev), ρ₂, PGCD options) to participant p on
 * topics.learner_global and waits for its REPLY on topics.learner_updates (re-sent every
 * learner.service.resend_ms; replies of other sessions/rounds/participants are ignored).
 * A participant that has not answered within learner.service.round_timeout_ms, or that
 * answers that it cannot (no snapshot, other nodes), is absent from that round to the end
 * of the session (lrn/admm.h: CORE_ENOTFOUND).
 *
 * Recovery: the server's ADMM state is a deterministic function of the replies, so the
 * checkpoint (state_dir/server.ckpt, JSON, rewritten by temp + rename after every completed
 * round) is the log of every completed round's replies (the B_p bytes, or null for an
 * absent participant). A restarted server runs lrn_admm_run() again on the same session and
 * answers the logged rounds from the log without the network, then asks the participants
 * from the first round not completed: the same inputs give the same W, duals and DAG.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/log.h"
#include "core/mem.h"
#include "core/metrics.h"
#include "fedsvc_int.h"
#include "lrn/admm.h"
#include "lrn/baselines.h"
#include "lrn/config.h"
#include "lrn/dppgcd.h"
#include "lrn/graphout.h"
#include "lrn/pgcd.h"

#define MAX_ANN      4096
#define ANN_FRESH_MS 15000

struct ann {
    char id[LRN_FEDSVC_MAX_ID + 1];
    uint64_t samples, seen_ms, hash;
    size_t d;
    char **names;
};

struct srv {
    const struct lrn_fedsvc_server_opts *o;
    struct lrn_fedsvc_server_progress *prog;
    const atomic_bool *stop;
    struct fs_link link;
    const char *t_up, *t_glob, *t_dag;
    struct lrn_admm_opts admm;
    struct lrn_pgcd_opts pgcd;
    unsigned center; /* LRN_COV_CENTER | _STANDARDIZE | _RESCALE (learner.center, ...) */
    bool fedbnsl, cov_by_p;
    size_t need, min_samples;
    uint64_t timeout_ms, resend_ms;
    char ckpt_path[4200];
    struct ann *anns;
    size_t nann;
    /* the session */
    uint64_t session, last_session;
    size_t d, P;
    char **names, **ids;
    uint64_t hash, *samples, *missing_from;
    json_t *ckpt;         /* {"last_session", "active": {... "rounds": [[hex|null]...]}} */
    json_t *cur;          /* this round's replies (array of P) */
    size_t replay_rounds; /* rounds answered from the checkpoint */
    /* the reply being waited for */
    uint32_t want_round;
    size_t want_p;
    bool got;
    uint8_t got_status;
    struct fs_wbuf reply, out, blobs[3];
};

/* ---- hex (checkpoint) ---- */

static json_t *hex_json(const uint8_t *p, size_t n)
{
    static const char hx[] = "0123456789abcdef";
    char *s = core_xmalloc(2 * n + 1);
    json_t *j;
    for (size_t i = 0; i < n; i++) {
        s[2 * i] = hx[p[i] >> 4];
        s[2 * i + 1] = hx[p[i] & 15];
    }
    s[2 * n] = 0;
    j = json_string(s);
    free(s);
    return j;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Returns the byte count, or -1 on a malformed string. */
static long unhex(const char *s, struct fs_wbuf *b)
{
    size_t n = strlen(s);
    if (n % 2)
        return -1;
    if (b->cap < n / 2 + 1) {
        b->cap = n / 2 + 1;
        b->p = core_xrealloc(b->p, b->cap);
    }
    for (size_t i = 0; i < n / 2; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        b->p[i] = (uint8_t)(hi << 4 | lo);
    }
    b->n = n / 2;
    return (long)b->n;
}

/* ---- messages in ---- */

/* Record an announcement; takes m->names (and clears them in m) when it is kept. */
static void take_announce(struct srv *s, struct fs_msg *m)
{
    struct ann *a = NULL;

    for (size_t k = 0; k < s->nann && !a; k++)
        if (strcmp(s->anns[k].id, m->id) == 0)
            a = &s->anns[k];
    if (!a) {
        if (s->nann == MAX_ANN || !fs_id_valid(m->id))
            return;
        a = &s->anns[s->nann++];
        snprintf(a->id, sizeof(a->id), "%s", m->id);
    }
    for (size_t i = 0; a->names && i < a->d; i++)
        free(a->names[i]);
    free(a->names);
    a->names = m->names; /* taken */
    a->d = m->d;
    m->names = NULL;
    m->d = 0;
    a->hash = fs_nodes_hash((const char *const *)a->names, a->d);
    a->samples = m->samples;
    a->seen_ms = fs_now_ms();
}

static void on_msg(void *arg, const rd_kafka_message_t *km)
{
    struct srv *s = arg;
    struct fs_msg m;

    if (fs_msg_decode(km->payload, km->len, &m) != CORE_OK)
        return;
    if (m.type == FS_ANNOUNCE) {
        take_announce(s, &m);
    } else if (m.type == FS_REPLY && s->session && m.session == s->session &&
               m.round == s->want_round && s->want_p < s->P && !s->got &&
               strcmp(m.id, s->ids[s->want_p]) == 0) {
        s->got = true;
        s->got_status = m.status;
        s->reply.n = 0;
        if (s->reply.cap < m.blen[0] + 1) {
            s->reply.cap = m.blen[0] + 1;
            s->reply.p = core_xrealloc(s->reply.p, s->reply.cap);
        }
        memcpy(s->reply.p, m.blob[0], m.blen[0]);
        s->reply.n = m.blen[0];
    } /* anything else: another session, a stale or duplicate round: ignored */
    fs_msg_clear(&m);
}

/* ---- checkpoint ---- */

static core_err ckpt_write(struct srv *s)
{
    char eb[512];
    char *txt = json_dumps(s->ckpt, JSON_COMPACT);
    core_err rc = fs_write_atomic(s->ckpt_path, txt, strlen(txt), eb, sizeof(eb));
    free(txt);
    if (rc != CORE_OK)
        CORE_ERROR("learner server: checkpoint not written: %s", eb);
    return rc;
}

static void strs_free(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

static char **strs_from_json(const json_t *a, size_t *n)
{
    char **v;
    *n = json_array_size(a);
    v = core_xcalloc(*n ? *n : 1, sizeof(char *));
    for (size_t i = 0; i < *n; i++) {
        const char *t = json_string_value(json_array_get(a, i));
        v[i] = core_xstrdup(t ? t : "");
    }
    return v;
}

static json_t *strs_json(char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

static void session_clear(struct srv *s)
{
    strs_free(s->names, s->d);
    strs_free(s->ids, s->P);
    free(s->samples);
    free(s->missing_from);
    s->names = s->ids = NULL;
    s->samples = s->missing_from = NULL;
    s->session = 0;
    s->d = s->P = 0;
    s->replay_rounds = 0;
}

/* Adopt the checkpoint's active session (a restart), if any. */
static core_err ckpt_load(struct srv *s, char *eb, size_t ebn)
{
    json_error_t je;
    json_t *act;
    size_t nn = 0;

    s->ckpt = json_load_file(s->ckpt_path, 0, &je);
    if (!s->ckpt) {
        s->ckpt = json_pack("{s:s,s:I,s:n}", "schema", "gcdp.learner-checkpoint/1", "last_session",
                            (json_int_t)0, "active");
        return CORE_OK;
    }
    s->last_session = (uint64_t)json_integer_value(json_object_get(s->ckpt, "last_session"));
    act = json_object_get(s->ckpt, "active");
    if (!json_is_object(act))
        return CORE_OK;
    s->session = (uint64_t)json_integer_value(json_object_get(act, "session"));
    s->names = strs_from_json(json_object_get(act, "nodes"), &s->d);
    s->ids = strs_from_json(json_object_get(act, "ids"), &s->P);
    s->samples = core_xcalloc(s->P, sizeof(uint64_t));
    s->missing_from = core_xcalloc(s->P, sizeof(uint64_t));
    for (size_t p = 0; p < s->P; p++) {
        s->missing_from[p] = UINT64_MAX;
        s->samples[p] =
            (uint64_t)json_integer_value(json_array_get(json_object_get(act, "samples"), p));
    }
    s->replay_rounds = json_array_size(json_object_get(act, "rounds"));
    (void)nn;
    if (s->session == 0 || s->d < 2 || s->P == 0 || s->session <= s->last_session) {
        snprintf(eb, ebn, "checkpoint %s: malformed active session", s->ckpt_path);
        return CORE_EIO;
    }
    s->hash = fs_nodes_hash((const char *const *)s->names, s->d);
    CORE_INFO("learner server: resuming session %" PRIu64 " after %zu completed rounds", s->session,
              s->replay_rounds);
    return CORE_OK;
}

static core_err ckpt_begin(struct srv *s)
{
    json_t *sam = json_array(), *act;
    for (size_t p = 0; p < s->P; p++)
        json_array_append_new(sam, json_integer((json_int_t)s->samples[p]));
    act = json_pack("{s:I,s:o,s:o,s:o,s:[]}", "session", (json_int_t)s->session, "nodes",
                    strs_json(s->names, s->d), "ids", strs_json(s->ids, s->P), "samples", sam,
                    "rounds");
    json_object_set_new(s->ckpt, "active", act);
    return ckpt_write(s);
}

static core_err ckpt_round(struct srv *s)
{
    json_t *rounds = json_object_get(json_object_get(s->ckpt, "active"), "rounds");
    json_array_append(rounds, s->cur);
    return ckpt_write(s);
}

static core_err ckpt_end(struct srv *s)
{
    json_object_set_new(s->ckpt, "last_session", json_integer((json_int_t)s->session));
    json_object_set_new(s->ckpt, "active", json_null());
    return ckpt_write(s);
}

/* ---- the remote local solver ---- */

static enum lrn_wire wire(const struct srv *s)
{
    return s->admm.wire;
}

static core_err encode_blob(struct srv *s, int k, const double *M)
{
    size_t cap = lrn_wire_max_len(s->d, wire(s)), len = 0;
    core_err rc;
    if (s->blobs[k].cap < cap) {
        s->blobs[k].cap = cap;
        s->blobs[k].p = core_xrealloc(s->blobs[k].p, cap);
    }
    rc = lrn_wire_encode(s->d, M, wire(s), s->blobs[k].p, cap, &len, NULL);
    s->blobs[k].n = len;
    return rc;
}

static core_err send_solve(struct srv *s, size_t p, size_t t, const double *W, const double *beta,
                           double rho2, const double *B)
{
    struct fs_msg m = {.type = FS_SOLVE,
                       .session = s->session,
                       .round = (uint32_t)t,
                       .d = s->d,
                       .nodes_hash = s->hash,
                       .rho2 = rho2,
                       .lambda = s->pgcd.lambda,
                       .gamma = s->pgcd.gamma,
                       .tol = s->pgcd.tol,
                       .max_steps = s->pgcd.max_steps,
                       .wire = wire(s) == LRN_WIRE_DENSE,
                       .center = (uint8_t)s->center,
                       .method = s->fedbnsl ? FS_METHOD_FED_BNSL : FS_METHOD_FED_SPARSE,
                       .cov_scale = s->fedbnsl || s->cov_by_p ? (double)s->P : 1.0};
    const double *M[3] = {W, beta, B};
    core_err rc = CORE_OK;

    snprintf(m.id, sizeof(m.id), "%s", s->ids[p]);
    for (int k = 0; k < 3 && rc == CORE_OK; k++) {
        rc = encode_blob(s, k, M[k]);
        m.blob[k] = s->blobs[k].p;
        m.blen[k] = (uint32_t)s->blobs[k].n;
    }
    if (rc != CORE_OK)
        return CORE_ENUMERIC;
    fs_msg_encode(&m, &s->out);
    return fs_link_send(&s->link, s->t_glob, s->ids[p], s->out.p, s->out.n);
}

static core_err mark_absent(struct srv *s, size_t p, size_t t, const char *why)
{
    if (s->missing_from[p] == UINT64_MAX) {
        s->missing_from[p] = t;
        CORE_WARN("learner session %" PRIu64 " round %zu: participant %s absent from now on "
                  "(%s)",
                  s->session, t, s->ids[p], why);
    }
    json_array_set_new(s->cur, p, json_null());
    return CORE_ENOTFOUND;
}

/* Ask participant p for round t and wait (re-sending) for its answer. */
static core_err ask(struct srv *s, size_t p, size_t t, const double *W, const double *beta,
                    double rho2, double *B)
{
    uint64_t t0 = fs_now_ms(), sent;
    core_err rc = send_solve(s, p, t, W, beta, rho2, B);

    sent = fs_now_ms();
    s->want_round = (uint32_t)t;
    s->want_p = p;
    s->got = false;
    while (rc == CORE_OK && !s->got) {
        if (atomic_load(s->stop) || s->link.fatal)
            return CORE_ESTATE;
        if (fs_now_ms() - t0 >= s->timeout_ms)
            return mark_absent(s, p, t, "timeout");
        if (fs_now_ms() - sent >= s->resend_ms) {
            rc = send_solve(s, p, t, W, beta, rho2, B);
            sent = fs_now_ms();
        }
        fs_link_pump(&s->link, 50);
    }
    if (rc != CORE_OK)
        return rc;
    s->want_p = SIZE_MAX;
    if (s->got_status != FS_REPLY_OK)
        return mark_absent(s, p, t,
                           s->got_status == FS_REPLY_NODES ? "other nodes" : "no snapshot");
    if (lrn_wire_decode(s->d, s->reply.p, s->reply.n, wire(s), B) != CORE_OK)
        return mark_absent(s, p, t, "malformed B_p");
    json_array_set_new(s->cur, p, hex_json(s->reply.p, s->reply.n));
    return CORE_OK;
}

/* A logged round: the participant's bytes from the checkpoint (null: it was absent). */
static core_err replay(struct srv *s, size_t p, size_t t, double *B)
{
    json_t *rounds = json_object_get(json_object_get(s->ckpt, "active"), "rounds");
    const char *hx = json_string_value(json_array_get(json_array_get(rounds, t), p));

    if (!hx) {
        if (s->missing_from[p] == UINT64_MAX)
            s->missing_from[p] = t;
        return CORE_ENOTFOUND;
    }
    if (unhex(hx, &s->reply) < 0 ||
        lrn_wire_decode(s->d, s->reply.p, s->reply.n, wire(s), B) != CORE_OK) {
        CORE_ERROR("learner server: checkpoint round %zu participant %zu malformed", t, p);
        return CORE_EIO;
    }
    return CORE_OK;
}

static core_err remote_solve(void *self, size_t p, size_t t, const double *W, const double *beta_p,
                             double rho2, double *B_p)
{
    struct srv *s = self;

    if (p == 0) {
        json_decref(s->cur);
        s->cur = json_array();
        for (size_t q = 0; q < s->P; q++)
            json_array_append_new(s->cur, json_null());
    }
    if (t < s->replay_rounds)
        return replay(s, p, t, B_p);
    if (t == s->replay_rounds && s->replay_rounds > 0 && p == 0)
        atomic_store(&s->prog->resumed_from_round, t);
    if (s->missing_from[p] != UINT64_MAX)
        return CORE_ENOTFOUND; /* absent for the rest of the session */
    return ask(s, p, t, W, beta_p, rho2, B_p);
}

static size_t count_missing(const struct srv *s)
{
    size_t n = 0;
    for (size_t p = 0; p < s->P; p++)
        n += s->missing_from[p] != UINT64_MAX;
    return n;
}

static void metrics_round(struct srv *s, const struct lrn_admm_progress *pr)
{
    struct core_metrics *m = s->o->metrics;
    if (!m)
        return;
    core_metric_set(core_metrics_get(m, CORE_METRIC_GAUGE, "gcdp_learner_server_round", NULL,
                                     "rounds completed in the current session"),
                    (int64_t)pr->round + 1);
    core_metric_set(core_metrics_get(m, CORE_METRIC_GAUGE, "gcdp_learner_server_edges", NULL,
                                     "edges |W| >= w_threshold after the last round"),
                    (int64_t)pr->edges);
    core_metric_set(core_metrics_get(m, CORE_METRIC_GAUGE, "gcdp_learner_server_bytes", NULL,
                                     "Kafka payload bytes sent and received"),
                    (int64_t)(s->link.bytes_in + s->link.bytes_out));
    core_metric_set(core_metrics_get(m, CORE_METRIC_GAUGE, "gcdp_learner_server_missing", NULL,
                                     "participants absent in the current session"),
                    (int64_t)count_missing(s));
}

static bool on_round(void *arg, const struct lrn_admm_progress *pr)
{
    struct srv *s = arg;
    bool logged = pr->round < s->replay_rounds;

    if (!logged && ckpt_round(s) != CORE_OK)
        return false; /* no checkpoint, no progress: stop (the result says "stopped") */
    atomic_store(&s->prog->round, pr->round + 1);
    atomic_store(&s->prog->h, pr->h_server);
    atomic_store(&s->prog->edges, pr->edges);
    atomic_store(&s->prog->bytes, s->link.bytes_in + s->link.bytes_out);
    atomic_store(&s->prog->missing, count_missing(s));
    metrics_round(s, pr);
    CORE_INFO("learner session %" PRIu64 " round %zu%s: h=%.3g support=%zu edges=%zu "
              "nnz_up=%zu nnz_down=%zu bytes_wire=%" PRIu64 " kafka_bytes=%" PRIu64 " missing=%zu",
              s->session, pr->round, logged ? " (replayed)" : "", pr->h_server, pr->server_vars,
              pr->edges, pr->nnz_up, pr->nnz_down, pr->bytes_wire,
              s->link.bytes_in + s->link.bytes_out, count_missing(s));
    return !atomic_load(s->stop);
}

/* ---- the result ---- */

static const char *status_name(enum lrn_admm_status st)
{
    return st == LRN_ADMM_CONVERGED ? "converged"
           : st == LRN_ADMM_STOPPED ? "stopped"
                                    : "max_rounds";
}

static json_t *participants_json(const struct srv *s, size_t rounds)
{
    json_t *a = json_array();
    for (size_t p = 0; p < s->P; p++) {
        bool gone = s->missing_from[p] != UINT64_MAX;
        json_array_append_new(
            a, json_pack("{s:s,s:I,s:b,s:o,s:I}", "id", s->ids[p], "samples",
                         (json_int_t)s->samples[p], "present", !gone, "missing_from_round",
                         gone ? json_integer((json_int_t)s->missing_from[p]) : json_null(),
                         "rounds_answered", (json_int_t)(gone ? s->missing_from[p] : rounds)));
    }
    return a;
}

static json_t *result_json(struct srv *s, const double *W, const struct lrn_admm_result *r)
{
    json_t *j = lrn_graph_to_json(W, s->d, (const char *const *)s->names), *miss = json_array();

    for (size_t p = 0; p < s->P; p++)
        if (s->missing_from[p] != UINT64_MAX)
            json_array_append_new(miss, json_string(s->ids[p]));
    json_object_set_new(j, "schema", json_string("gcdp.learner-dag/1"));
    json_object_set_new(j, "session", json_integer((json_int_t)s->session));
    json_object_set_new(j, "method", json_string(s->fedbnsl ? "fed-bnsl" : "fed-sparse"));
    json_object_set_new(j, "rounds", json_integer((json_int_t)r->rounds));
    json_object_set_new(j, "max_rounds", json_integer((json_int_t)s->admm.max_rounds));
    json_object_set_new(j, "converged", json_boolean(r->status == LRN_ADMM_CONVERGED));
    json_object_set_new(j, "status", json_string(status_name(r->status)));
    json_object_set_new(j, "participants", participants_json(s, r->rounds));
    json_object_set_new(j, "missing", miss);
    json_object_set_new(j, "resumed_from_round",
                        json_integer((json_int_t)atomic_load(&s->prog->resumed_from_round)));
    json_object_set_new(j, "h", json_real(r->h));
    json_object_set_new(j, "pruned", json_integer((json_int_t)r->pruned));
    json_object_set_new(j, "bytes_wire", json_integer((json_int_t)r->bytes_wire));
    json_object_set_new(j, "bytes_model", json_integer((json_int_t)r->bytes_model));
    /* as `gcdp learn`: the optimisation adds no noise of its own; the samples are the
     * release's privatized output (their ε is the release ledger's, not restated here) */
    json_object_set_new(j, "private", json_false());
    json_object_set_new(j, "eps", json_null());
    json_object_set_new(j, "input", json_string("privatized releases"));
    return j;
}

static void write_files(struct srv *s, const double *W, char *dot, size_t dotn)
{
    char path[4200], eb[512], dbuf[4096];
    const char *dir =
        fs_dir(s->o->cfg, "learner.service.out_dir", dbuf, sizeof(dbuf), eb, sizeof(eb));

    dot[0] = 0;
    if (!dir) {
        CORE_WARN("learner server: %s", eb);
        return;
    }
    snprintf(path, sizeof(path), "%s/dag-s%" PRIu64 ".json", dir, s->session);
    if (lrn_graph_write_json(path, W, s->d, (const char *const *)s->names, eb, sizeof(eb)) !=
        CORE_OK)
        CORE_WARN("learner server: %s", eb);
    snprintf(dot, dotn, "%s/dag-s%" PRIu64 ".dot", dir, s->session);
    if (lrn_graph_write_dot(dot, W, NULL, s->d, (const char *const *)s->names, eb, sizeof(eb)) !=
        CORE_OK) {
        CORE_WARN("learner server: %s", eb);
        dot[0] = 0;
        return;
    }
    snprintf(path, sizeof(path), "%s/dag-s%" PRIu64 ".png", dir, s->session);
    if (core_config_bool(s->o->cfg, "learner.service.png") &&
        lrn_graph_render_png(dot, path, eb, sizeof(eb)) != CORE_OK)
        CORE_WARN("learner server: no PNG: %s", eb);
}

static core_err publish(struct srv *s, const double *W, const struct lrn_admm_result *r)
{
    json_t *j = result_json(s, W, r);
    char *txt = json_dumps(j, JSON_COMPACT), key[64], dot[4200];
    struct fs_msg end = {.type = FS_END, .session = s->session};
    core_err rc;

    snprintf(key, sizeof(key), "session-%" PRIu64, s->session);
    rc = fs_link_send(&s->link, s->t_dag, key, txt, strlen(txt));
    write_files(s, W, dot, sizeof(dot));
    fs_msg_encode(&end, &s->out);
    if (rc == CORE_OK)
        rc = fs_link_send(&s->link, s->t_glob, NULL, s->out.p, s->out.n);
    CORE_INFO("learner session %" PRIu64 " done: %zu rounds (%s), %zu edges, %zu of %zu "
              "participants missing",
              s->session, r->rounds, status_name(r->status), r->edges, count_missing(s), s->P);
    if (s->o->on_result) {
        struct lrn_fedsvc_result res = {.session = s->session,
                                        .d = s->d,
                                        .nodes = (const char *const *)s->names,
                                        .w = W,
                                        .rounds = r->rounds,
                                        .converged = r->status == LRN_ADMM_CONVERGED,
                                        .participants = s->P,
                                        .ids = (const char *const *)s->ids,
                                        .missing_from = s->missing_from,
                                        .json = txt,
                                        .dot_path = dot[0] ? dot : NULL};
        s->o->on_result(s->o->arg, &res);
    }
    free(txt);
    json_decref(j);
    return rc;
}

/* Run (or resume) the current session. *done: a result was published. */
static core_err run_session(struct srv *s, bool *done)
{
    struct lrn_local_ops ops = {remote_solve, s, NULL, NULL, NULL, NULL};
    struct lrn_admm_result r;
    double *W = core_xcalloc(s->d * s->d, sizeof(double));
    core_err rc;

    *done = false;
    atomic_store(&s->prog->session, s->session);
    atomic_store(&s->prog->round, 0);
    atomic_store(&s->prog->resumed_from_round, 0);
    rc = lrn_admm_run(s->d, s->P, &ops, &s->admm, on_round, s, W, NULL, &r);
    if (rc == CORE_ESTATE || (rc == CORE_OK && r.status == LRN_ADMM_STOPPED)) {
        CORE_INFO("learner session %" PRIu64 " interrupted; the checkpoint resumes it", s->session);
        rc = s->link.fatal ? CORE_EKAFKA : CORE_OK;
    } else if (rc == CORE_ENOTFOUND) {
        CORE_WARN("learner session %" PRIu64 ": every participant absent; abandoned", s->session);
        rc = ckpt_end(s);
    } else if (rc == CORE_OK) {
        rc = publish(s, W, &r);
        if (rc == CORE_OK)
            rc = ckpt_end(s);
        *done = rc == CORE_OK;
    }
    free(W);
    return rc;
}

/* ---- starting a session ---- */

static int cmp_ann(const void *a, const void *b)
{
    return strcmp(((const struct ann *)a)->id, ((const struct ann *)b)->id);
}

static bool ann_ready(const struct srv *s, const struct ann *a, uint64_t now)
{
    return a->samples >= s->min_samples && a->d >= 2 && now - a->seen_ms <= ANN_FRESH_MS;
}

/* Enough ready participants over one node list? Then they (sorted by id) form the session. */
static bool try_start(struct srv *s)
{
    uint64_t now = fs_now_ms(), best = 0;
    size_t best_n = 0, P = 0;

    for (size_t k = 0; k < s->nann; k++) {
        size_t n = 0;
        for (size_t q = 0; q < s->nann; q++)
            n += ann_ready(s, &s->anns[q], now) && s->anns[q].hash == s->anns[k].hash;
        if (ann_ready(s, &s->anns[k], now) && n > best_n) {
            best_n = n;
            best = s->anns[k].hash;
        }
    }
    if (best_n < s->need)
        return false;
    qsort(s->anns, s->nann, sizeof(*s->anns), cmp_ann);
    s->ids = core_xcalloc(best_n, sizeof(char *));
    s->samples = core_xcalloc(best_n, sizeof(uint64_t));
    s->missing_from = core_xcalloc(best_n, sizeof(uint64_t));
    for (size_t k = 0; k < s->nann; k++) {
        const struct ann *a = &s->anns[k];
        if (!ann_ready(s, a, now) || a->hash != best)
            continue;
        if (!s->names) {
            s->d = a->d;
            s->names = core_xcalloc(a->d, sizeof(char *));
            for (size_t i = 0; i < a->d; i++)
                s->names[i] = core_xstrdup(a->names[i]);
        }
        s->ids[P] = core_xstrdup(a->id);
        s->samples[P] = a->samples;
        s->missing_from[P++] = UINT64_MAX;
    }
    s->P = P;
    s->hash = best;
    s->session = s->last_session + 1;
    CORE_INFO("learner session %" PRIu64 ": %zu participants, %zu nodes", s->session, P, s->d);
    return true;
}

/* Pump for ms (or until stop), collecting announcements. */
static void idle(struct srv *s, uint64_t ms)
{
    uint64_t t0 = fs_now_ms();
    while (!atomic_load(s->stop) && !s->link.fatal && fs_now_ms() - t0 < ms)
        fs_link_pump(&s->link, 100);
}

static core_err srv_open(struct srv *s, char *eb, size_t ebn)
{
    const struct core_config *cfg = s->o->cfg;
    char dbuf[4096];
    const char *dir;
    const char *topics[1] = {s->t_up}, *reset[1] = {"latest"};
    struct lrn_dppgcd_opts dp;
    bool dp_on;
    core_err rc =
        lrn_config_opts(cfg, 2, &s->admm, &s->pgcd, &dp, NULL, &dp_on, &s->cov_by_p, eb, ebn);

    if (rc != CORE_OK)
        return rc;
    s->fedbnsl = strcmp(core_config_str(cfg, "learner.service.method"), "fed-bnsl") == 0;
    if (s->fedbnsl) { /* notears-admm's driver options (lrn/baselines.h); learner.rounds applies */
        s->admm = lrn_fedbnsl_admm_opts_default();
        if (core_config_is_explicit(cfg, "learner.rounds"))
            s->admm.max_rounds = (size_t)core_config_int(cfg, "learner.rounds");
    }
    s->center = (core_config_bool(cfg, "learner.center") ? LRN_COV_CENTER : 0u) |
                (core_config_bool(cfg, "learner.standardize") ? LRN_COV_STANDARDIZE : 0u) |
                (core_config_bool(cfg, "learner.rescale") ? LRN_COV_RESCALE : 0u);
    s->need = (size_t)core_config_int(cfg, "learner.service.participants");
    s->min_samples = (size_t)core_config_int(cfg, "learner.service.min_samples");
    s->timeout_ms = (uint64_t)core_config_int(cfg, "learner.service.round_timeout_ms");
    s->resend_ms = (uint64_t)core_config_int(cfg, "learner.service.resend_ms");
    if (!(dir = fs_dir(cfg, "learner.service.state_dir", dbuf, sizeof(dbuf), eb, ebn)))
        return CORE_EIO;
    snprintf(s->ckpt_path, sizeof(s->ckpt_path), "%s/server.ckpt", dir);
    rc = ckpt_load(s, eb, ebn);
    if (rc == CORE_OK)
        rc = fs_link_open(&s->link, cfg, "gcdp-learner-server", topics, reset, 1, on_msg, s, eb,
                          ebn);
    return rc;
}

static void srv_free(struct srv *s)
{
    fs_link_close(&s->link);
    session_clear(s);
    for (size_t k = 0; k < s->nann; k++)
        strs_free(s->anns[k].names, s->anns[k].d);
    free(s->anns);
    json_decref(s->ckpt);
    json_decref(s->cur);
    fs_wbuf_free(&s->reply);
    fs_wbuf_free(&s->out);
    for (int k = 0; k < 3; k++)
        fs_wbuf_free(&s->blobs[k]);
}

static core_err serve(struct srv *s)
{
    uint64_t interval =
        (uint64_t)(1000.0 * core_config_double(s->o->cfg, "learner.service.session_interval_s"));
    core_err rc = CORE_OK;
    bool done;

    while (rc == CORE_OK && !atomic_load(s->stop) && !s->link.fatal) {
        if (!s->session && !try_start(s)) {
            idle(s, 100);
            continue;
        }
        if (!fs_link_ready(&s->link)) { /* a resumed session: replies need the consumer */
            idle(s, 100);
            continue;
        }
        if (s->replay_rounds == 0 && ckpt_begin(s) != CORE_OK)
            return CORE_EIO;
        rc = run_session(s, &done);
        if (!done)
            break; /* stopped (checkpoint kept), or failed */
        s->last_session = s->session;
        session_clear(s);
        atomic_store(&s->prog->sessions_completed, atomic_load(&s->prog->sessions_completed) + 1);
        if (s->o->metrics)
            core_metric_add(core_metrics_get(s->o->metrics, CORE_METRIC_COUNTER,
                                             "gcdp_learner_server_sessions_total", NULL,
                                             "learned DAGs published"),
                            1);
        if (s->o->max_sessions && atomic_load(&s->prog->sessions_completed) >= s->o->max_sessions)
            break;
        idle(s, interval);
    }
    return rc;
}

core_err lrn_fedsvc_server_run(const struct lrn_fedsvc_server_opts *o, const atomic_bool *stop,
                               struct lrn_fedsvc_server_progress *prog, char *eb, size_t ebn)
{
    struct srv s;
    core_err rc = lrn_fedsvc_check(o->cfg, NULL, NULL, eb, ebn);

    memset(prog, 0, sizeof(*prog));
    if (rc != CORE_OK)
        return rc;
    memset(&s, 0, sizeof(s));
    s.o = o;
    s.prog = prog;
    s.stop = stop;
    s.want_p = SIZE_MAX;
    s.t_up = core_config_str(o->cfg, "topics.learner_updates");
    s.t_glob = core_config_str(o->cfg, "topics.learner_global");
    s.t_dag = core_config_str(o->cfg, "topics.learner_dag");
    s.anns = core_xcalloc(MAX_ANN, sizeof(*s.anns));
    rc = srv_open(&s, eb, ebn);
    if (rc == CORE_OK) {
        atomic_store(&prog->running, true);
        rc = serve(&s);
        if (rc == CORE_EKAFKA || s.link.fatal) {
            snprintf(eb, ebn, "kafka: %s", s.link.fatal_why);
            rc = CORE_EKAFKA;
        } else if (rc != CORE_OK) {
            snprintf(eb, ebn, "learner server: %s", core_strerror(rc));
        }
    }
    atomic_store(&prog->running, false);
    srv_free(&s);
    return rc;
}
