/* fedsvc_participant.c - one site of the federated learner as a Kafka service (see
 * lrn/fedsvc.h and docs/learner.md "Learner services").
 *
 * Choices (documented in docs/learner.md):
 *  - The node set is the sorted coordinate names of the first accepted record; a later
 *    record of the site's devices lacking one of them is skipped and counted (extra
 *    coordinates are ignored).
 *  - The participant keeps no ADMM state: every SOLVE carries W_p, β_p and its own previous
 *    B_p (the server's lrn_admm_run holds them), so the reply is a pure function of the
 *    request and the frozen snapshot: a re-asked round gets the same B_p, a restarted
 *    participant answers as before. A fresh PGCD solver is built per request (its cached
 *    gradient would otherwise make the answer depend on the call history).
 *  - The snapshot (rows at the session's round-0 request) is persisted to the state dir, so
 *    a participant restarted mid-session answers the later rounds from the same rows.
 */
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "core/log.h"
#include "core/mem.h"
#include "core/metrics.h"
#include "fedsvc_int.h"
#include "lrn/admm.h"
#include "lrn/baselines.h"
#include "lrn/pgcd.h"

#define SNAP_MAGIC "LFSNAP1\n"

struct reply_cache {
    uint64_t session;
    uint32_t round;
    bool used;
    struct fs_wbuf b;
};

/* release_ids of the rows in the ring (FNV-1a 64; 0 marks an empty slot): a republished
 * record (byte-identical after a release crash or rebalance, docs/consumers.md) is not a new
 * sample. Open addressing, linear probing, backward-shift deletion. */
struct idset {
    uint64_t *slot;
    size_t mask;
};

static uint64_t id_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ULL;
    return h ? h : 1;
}

static bool idset_has(const struct idset *t, uint64_t h)
{
    for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
        if (t->slot[i] == h)
            return true;
        if (t->slot[i] == 0)
            return false;
    }
}

static void idset_add(struct idset *t, uint64_t h)
{
    size_t i = h & t->mask;
    while (t->slot[i] != 0 && t->slot[i] != h)
        i = (i + 1) & t->mask;
    t->slot[i] = h;
}

static void idset_del(struct idset *t, uint64_t h)
{
    size_t i = h & t->mask, j;
    while (t->slot[i] != h) {
        if (t->slot[i] == 0)
            return;
        i = (i + 1) & t->mask;
    }
    t->slot[i] = 0;
    for (j = (i + 1) & t->mask; t->slot[j] != 0; j = (j + 1) & t->mask) {
        size_t home = t->slot[j] & t->mask;
        /* move slot j back to the hole at i when its home is not in (i, j] (cyclically) */
        if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
            t->slot[i] = t->slot[j];
            t->slot[j] = 0;
            i = j;
        }
    }
}

struct part {
    const struct lrn_fedsvc_participant_opts *o;
    struct lrn_fedsvc_participant_progress *prog;
    struct fs_link link;
    const char *t_up, *t_glob;
    char *globs;
    size_t horizon;
    size_t d;
    char **names;
    double *ring, *row;
    size_t n, head;
    uint64_t *ring_ids, duplicates;
    struct idset ids;
    uint64_t snap_session, snap_hash;
    size_t snap_n;
    double *snap_x, *sigma;
    bool snap_centered;
    struct reply_cache cache[2];
    size_t cache_next;
    char snap_path[4096];
    uint64_t last_announce, announce_ms;
    uint64_t samples, skipped, other;
    struct fs_wbuf out;
    core_err fatal;
};

static bool device_matches(const struct part *s, const char *dev)
{
    char buf[4200];
    char *save = NULL, *g;

    snprintf(buf, sizeof(buf), "%s", s->globs);
    for (g = strtok_r(buf, ",", &save); g; g = strtok_r(NULL, ",", &save))
        if (fnmatch(g, dev, 0) == 0)
            return true;
    return false;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The first accepted record fixes the nodes: its coordinate names, sorted. */
static bool adopt_nodes(struct part *s, json_t *values)
{
    const char *k;
    json_t *v;
    size_t i = 0, d = json_object_size(values);

    if (d < 2 || d > LRN_FEDSVC_MAX_NODES)
        return false;
    s->names = core_xcalloc(d, sizeof(char *));
    json_object_foreach(values, k, v) s->names[i++] = core_xstrdup(k);
    qsort(s->names, d, sizeof(char *), cmp_str);
    s->d = d;
    s->ring = core_xcalloc(s->horizon * d, sizeof(double));
    s->row = core_xcalloc(d, sizeof(double));
    s->ring_ids = core_xcalloc(s->horizon, sizeof(uint64_t));
    s->ids.mask = 1;
    while (s->ids.mask + 1 < 2 * s->horizon)
        s->ids.mask = s->ids.mask * 2 + 1;
    s->ids.slot = core_xcalloc(s->ids.mask + 1, sizeof(uint64_t));
    CORE_INFO("participant %s: %zu nodes from the first record", s->o->id, d);
    return true;
}

static void take_record(struct part *s, const char *bytes, size_t len)
{
    json_t *j = json_loadb(bytes, len, 0, NULL), *values;
    const char *schema = json_string_value(json_object_get(j, "schema"));
    const char *dev = json_string_value(json_object_get(j, "device"));
    const char *rid = json_string_value(json_object_get(j, "release_id"));
    uint64_t h;

    values = json_object_get(j, "values");
    if (!schema || strcmp(schema, "gcdp.released/1") != 0 || !dev || !rid ||
        !json_is_object(values)) {
        s->skipped++;
        json_decref(j);
        return;
    }
    if (!device_matches(s, dev)) {
        s->other++;
        json_decref(j);
        return;
    }
    if (s->d == 0 && !adopt_nodes(s, values)) {
        s->skipped++;
        json_decref(j);
        return;
    }
    for (size_t i = 0; i < s->d; i++) {
        json_t *v = json_object_get(values, s->names[i]);
        s->row[i] = json_is_number(v) ? json_number_value(v) : NAN;
        if (!isfinite(s->row[i])) {
            s->skipped++;
            json_decref(j);
            return;
        }
    }
    h = id_hash(rid);
    if (idset_has(&s->ids, h)) {
        s->duplicates++;
        json_decref(j);
        return;
    }
    if (s->n == s->horizon)
        idset_del(&s->ids, s->ring_ids[s->head]);
    idset_add(&s->ids, h);
    s->ring_ids[s->head] = h;
    memcpy(s->ring + s->head * s->d, s->row, s->d * sizeof(double));
    s->head = (s->head + 1) % s->horizon;
    if (s->n < s->horizon)
        s->n++;
    s->samples++;
    json_decref(j);
}

/* ---- snapshot ---- */

static void snap_drop(struct part *s)
{
    free(s->snap_x);
    free(s->sigma);
    s->snap_x = s->sigma = NULL;
    s->snap_session = 0;
    s->snap_n = 0;
    for (int k = 0; k < 2; k++)
        s->cache[k].used = false;
}

/* m->center: the server's learner.center / .standardize / .rescale as LRN_COV_* bits. */
static core_err snap_sigma(struct part *s, const struct fs_msg *m)
{
    s->sigma = core_xcalloc(s->d * s->d, sizeof(double));
    s->snap_centered = m->center != 0;
    return lrn_covariance_ex(s->snap_n, s->d, s->snap_x, m->cov_scale,
                             m->center & (LRN_COV_CENTER | LRN_COV_STANDARDIZE | LRN_COV_RESCALE),
                             s->sigma);
}

static void snap_persist(struct part *s)
{
    struct fs_wbuf b = {0};
    char eb[256];
    uint8_t hdr[8];
    uint64_t u[4] = {s->snap_session, s->snap_n, s->d, s->snap_hash};

    memcpy(hdr, SNAP_MAGIC, 8);
    b.cap = 64 + s->snap_n * s->d * 8;
    b.p = core_xmalloc(b.cap);
    memcpy(b.p, hdr, 8);
    memcpy(b.p + 8, u, sizeof(u)); /* host order: the file never leaves this machine */
    memcpy(b.p + 8 + sizeof(u), s->snap_x, s->snap_n * s->d * sizeof(double));
    b.n = 8 + sizeof(u) + s->snap_n * s->d * sizeof(double);
    if (fs_write_atomic(s->snap_path, b.p, b.n, eb, sizeof(eb)) != CORE_OK)
        CORE_WARN("participant %s: snapshot not persisted: %s", s->o->id, eb);
    fs_wbuf_free(&b);
}

/* Round 0 of a new session: freeze the ring (oldest row first). */
static core_err snap_freeze(struct part *s, const struct fs_msg *m)
{
    size_t first = s->n < s->horizon ? 0 : s->head;

    snap_drop(s);
    s->snap_n = s->n;
    s->snap_x = core_xmalloc(s->n * s->d * sizeof(double));
    for (size_t k = 0; k < s->n; k++)
        memcpy(s->snap_x + k * s->d, s->ring + ((first + k) % s->horizon) * s->d,
               s->d * sizeof(double));
    s->snap_session = m->session;
    s->snap_hash = m->nodes_hash;
    snap_persist(s);
    CORE_INFO("participant %s: session %" PRIu64 " on %zu rows", s->o->id, m->session, s->n);
    return snap_sigma(s, m);
}

/* A later round of a session this process did not start (it was restarted). */
static core_err snap_load(struct part *s, const struct fs_msg *m)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    uint64_t u[4];
    core_err rc = fs_read_file(s->snap_path, &buf, &len);

    if (rc != CORE_OK)
        return rc;
    if (len < 8 + sizeof(u) || memcmp(buf, SNAP_MAGIC, 8) != 0) {
        free(buf);
        return CORE_EPARSE;
    }
    memcpy(u, buf + 8, sizeof(u));
    if (u[0] != m->session || u[2] != s->d || u[3] != m->nodes_hash ||
        len != 8 + sizeof(u) + u[1] * u[2] * sizeof(double)) {
        free(buf);
        return CORE_ENOTFOUND;
    }
    snap_drop(s);
    s->snap_n = (size_t)u[1];
    s->snap_x = core_xmalloc(s->snap_n * s->d * sizeof(double));
    memcpy(s->snap_x, buf + 8 + sizeof(u), s->snap_n * s->d * sizeof(double));
    free(buf);
    s->snap_session = m->session;
    s->snap_hash = m->nodes_hash;
    CORE_INFO("participant %s: session %" PRIu64 " resumed from its persisted snapshot", s->o->id,
              m->session);
    return snap_sigma(s, m);
}

/* ---- solving ---- */

static void send_reply(struct part *s, const struct fs_msg *req, uint8_t status,
                       const struct fs_wbuf *blob)
{
    struct fs_msg r = {.type = FS_REPLY,
                       .session = req->session,
                       .round = req->round,
                       .status = status,
                       .samples = s->snap_n};
    snprintf(r.id, sizeof(r.id), "%s", s->o->id);
    if (blob) {
        r.blob[0] = blob->p;
        r.blen[0] = (uint32_t)blob->n;
    }
    fs_msg_encode(&r, &s->out);
    if (fs_link_send(&s->link, s->t_up, s->o->id, s->out.p, s->out.n) == CORE_OK)
        atomic_store(&s->prog->replies, atomic_load(&s->prog->replies) + 1);
}

/* fed-bnsl: the library's closed form B_p = (Σ_p + ρ₂I)⁻¹(ρ₂W − β_p + Σ_p), one solver
 * built per request as for PGCD. */
static core_err closed_form(struct part *s, const struct fs_msg *m, const double *W,
                            const double *beta, double *B)
{
    const double *sig[1] = {s->sigma};
    struct lrn_fedbnsl_local *fb = NULL;
    core_err rc = lrn_fedbnsl_local_new(s->d, 1, sig, &fb);
    if (rc == CORE_OK) {
        struct lrn_local_ops ops = lrn_fedbnsl_local_ops(fb);
        rc = ops.solve(ops.self, 0, m->round, W, beta, m->rho2, B);
    }
    lrn_fedbnsl_local_free(fb);
    return rc;
}

/* B ← PGCD(Σ_p; W_p, β_p, ρ₂) from the warm start B_p(prev) (fed-sparse) or the closed form
 * (fed-bnsl), encoded into blob. */
static core_err local_step(struct part *s, const struct fs_msg *m, struct fs_wbuf *blob)
{
    size_t d = s->d, d2 = d * d, len = 0;
    enum lrn_wire wire = m->wire ? LRN_WIRE_DENSE : LRN_WIRE_SPARSE;
    double *buf = core_xcalloc(3 * d2, sizeof(double));
    struct lrn_pgcd_opts po = {m->lambda, m->gamma, (size_t)m->max_steps, m->tol};
    struct lrn_pgcd *pg = NULL;
    core_err rc = CORE_OK;

    for (int k = 0; k < 3 && rc == CORE_OK; k++)
        rc = lrn_wire_decode(d, m->blob[k], m->blen[k], wire, buf + k * d2);
    if (rc == CORE_OK && m->method == FS_METHOD_FED_BNSL)
        rc = closed_form(s, m, buf, buf + d2, buf + 2 * d2);
    else if (rc == CORE_OK)
        rc = lrn_pgcd_new(d, s->sigma, &pg);
    if (rc == CORE_OK && pg)
        rc = lrn_pgcd_solve(pg, &po, buf, buf + d2, m->rho2, buf + 2 * d2, NULL);
    if (rc == CORE_OK) {
        blob->cap = blob->cap < lrn_wire_max_len(d, wire) ? lrn_wire_max_len(d, wire) : blob->cap;
        blob->p = core_xrealloc(blob->p, blob->cap);
        rc = lrn_wire_encode(d, buf + 2 * d2, wire, blob->p, blob->cap, &len, NULL);
        blob->n = len;
    }
    lrn_pgcd_free(pg);
    free(buf);
    return rc;
}

static struct reply_cache *cache_find(struct part *s, uint64_t session, uint32_t round)
{
    for (int k = 0; k < 2; k++)
        if (s->cache[k].used && s->cache[k].session == session && s->cache[k].round == round)
            return &s->cache[k];
    return NULL;
}

static void handle_solve(struct part *s, const struct fs_msg *m)
{
    struct reply_cache *c = cache_find(s, m->session, m->round);
    core_err rc = CORE_OK;

    if (c) { /* idempotent: the bytes sent before */
        send_reply(s, m, FS_REPLY_OK, &c->b);
        return;
    }
    if (m->session < s->snap_session || s->d == 0)
        return; /* stale; or no record read yet (a restart): the server re-sends */
    if (m->d != s->d || m->nodes_hash != fs_nodes_hash((const char *const *)s->names, s->d)) {
        send_reply(s, m, FS_REPLY_NODES, NULL);
        return;
    }
    if (m->session != s->snap_session)
        rc = m->round == 0 ? snap_freeze(s, m) : snap_load(s, m);
    if (rc != CORE_OK) {
        CORE_WARN("participant %s: no snapshot for session %" PRIu64 " round %u (%s)", s->o->id,
                  m->session, m->round, core_strerror(rc));
        snap_drop(s);
        send_reply(s, m, FS_REPLY_NO_SNAPSHOT, NULL);
        return;
    }
    if (atomic_load(&s->prog->session) != m->session) {
        atomic_store(&s->prog->session, m->session);
        atomic_store(&s->prog->first_round, m->round);
    }
    c = &s->cache[s->cache_next];
    s->cache_next ^= 1;
    rc = local_step(s, m, &c->b);
    if (rc != CORE_OK) {
        CORE_ERROR("participant %s: local step of round %u failed (%s)", s->o->id, m->round,
                   core_strerror(rc));
        c->used = false;
        return;
    }
    c->used = true;
    c->session = m->session;
    c->round = m->round;
    atomic_store(&s->prog->last_round, m->round);
    send_reply(s, m, FS_REPLY_OK, &c->b);
}

static void on_msg(void *arg, const rd_kafka_message_t *km)
{
    struct part *s = arg;
    const char *topic = rd_kafka_topic_name(km->rkt);
    struct fs_msg m;

    if (strcmp(topic, s->t_glob) != 0) {
        take_record(s, km->payload, km->len);
        return;
    }
    if (fs_msg_decode(km->payload, km->len, &m) != CORE_OK)
        return;
    if (strcmp(m.id, s->o->id) == 0 && m.type == FS_SOLVE)
        handle_solve(s, &m);
    else if (m.type == FS_END && m.session == s->snap_session && m.session != 0) {
        snap_drop(s);
        unlink(s->snap_path);
    }
    fs_msg_clear(&m);
}

static void announce(struct part *s)
{
    struct fs_msg m = {.type = FS_ANNOUNCE,
                       .session = s->snap_session,
                       .samples = s->n,
                       .d = s->d,
                       .names = s->names};
    snprintf(m.id, sizeof(m.id), "%s", s->o->id);
    fs_msg_encode(&m, &s->out);
    if (fs_link_send(&s->link, s->t_up, s->o->id, s->out.p, s->out.n) != CORE_OK)
        CORE_WARN("participant %s: announcement not sent", s->o->id);
}

static void publish_progress(struct part *s)
{
    struct lrn_fedsvc_participant_progress *p = s->prog;
    char lbl[128];

    atomic_store(&p->samples, s->n);
    atomic_store(&p->skipped, s->skipped);
    atomic_store(&p->other, s->other);
    atomic_store(&p->duplicates, s->duplicates);
    if (!s->o->metrics)
        return;
    snprintf(lbl, sizeof(lbl), "participant=\"%s\"", s->o->id);
    core_metric_set(core_metrics_get(s->o->metrics, CORE_METRIC_GAUGE,
                                     "gcdp_learner_participant_samples", lbl,
                                     "sample rows held (ring)"),
                    (int64_t)s->n);
    core_metric_set(core_metrics_get(s->o->metrics, CORE_METRIC_GAUGE,
                                     "gcdp_learner_participant_skipped", lbl,
                                     "records of the site skipped (missing node, bad record)"),
                    (int64_t)s->skipped);
    core_metric_set(core_metrics_get(s->o->metrics, CORE_METRIC_GAUGE,
                                     "gcdp_learner_participant_replies", lbl,
                                     "local-step replies sent"),
                    (int64_t)atomic_load(&p->replies));
}

static core_err part_open(struct part *s, char *eb, size_t ebn)
{
    const struct core_config *cfg = s->o->cfg;
    const char *topics[2] = {core_config_str(cfg, "topics.released"), s->t_glob};
    const char *reset[2] = {"earliest", "latest"};
    char dbuf[4096];
    const char *dir = fs_dir(cfg, "learner.service.state_dir", dbuf, sizeof(dbuf), eb, ebn);
    static atomic_uint seq;
    char prefix[200];

    if (!dir)
        return CORE_EIO;
    snprintf(s->snap_path, sizeof(s->snap_path), "%s/participant-%s.snap", dir, s->o->id);
    snprintf(prefix, sizeof(prefix), "gcdp-learner-participant-%s-%u", s->o->id,
             atomic_fetch_add(&seq, 1));
    for (int k = 0; k < 2; k++)
        snprintf(s->prog->subscribed[k], sizeof(s->prog->subscribed[k]), "%s", topics[k]);
    return fs_link_open(&s->link, cfg, prefix, topics, reset, 2, on_msg, s, eb, ebn);
}

static void part_free(struct part *s)
{
    for (size_t i = 0; s->names && i < s->d; i++)
        free(s->names[i]);
    free(s->names);
    free(s->ring);
    free(s->row);
    free(s->ring_ids);
    free(s->ids.slot);
    free(s->globs);
    snap_drop(s);
    for (int k = 0; k < 2; k++)
        fs_wbuf_free(&s->cache[k].b);
    fs_wbuf_free(&s->out);
}

core_err lrn_fedsvc_participant_run(const struct lrn_fedsvc_participant_opts *o,
                                    const atomic_bool *stop,
                                    struct lrn_fedsvc_participant_progress *prog, char *eb,
                                    size_t ebn)
{
    struct part s;
    core_err rc = lrn_fedsvc_check(o->cfg, o->id, o->devices, eb, ebn);

    memset(prog, 0, sizeof(*prog));
    if (rc != CORE_OK)
        return rc;
    memset(&s, 0, sizeof(s));
    s.o = o;
    s.prog = prog;
    s.t_up = core_config_str(o->cfg, "topics.learner_updates");
    s.t_glob = core_config_str(o->cfg, "topics.learner_global");
    s.globs =
        core_xstrdup(o->devices ? o->devices : core_config_str(o->cfg, "learner.service.devices"));
    s.horizon = (size_t)core_config_int(o->cfg, "learner.service.horizon");
    s.announce_ms = (uint64_t)core_config_int(o->cfg, "learner.service.announce_ms");
    rc = part_open(&s, eb, ebn);
    if (rc == CORE_OK) {
        atomic_store(&prog->running, true);
        CORE_INFO("participant %s: devices '%s', horizon %zu, reading %s", o->id, s.globs,
                  s.horizon, prog->subscribed[0]);
    }
    while (rc == CORE_OK && !atomic_load(stop) && !s.link.fatal) {
        fs_link_pump(&s.link, 100);
        if (s.d > 0 && fs_now_ms() - s.last_announce >= s.announce_ms && fs_link_ready(&s.link)) {
            announce(&s);
            s.last_announce = fs_now_ms();
        }
        publish_progress(&s);
    }
    if (rc == CORE_OK && s.link.fatal) {
        snprintf(eb, ebn, "kafka: %s", s.link.fatal_why);
        rc = CORE_EKAFKA;
    }
    if (rc == CORE_OK || s.link.loop_ok)
        fs_link_close(&s.link);
    atomic_store(&prog->running, false);
    part_free(&s);
    return rc;
}
