/* fedsvc_link.c - the learner services' Kafka link (a libuv loop served by a blocking
 * caller), their message codec and the startup checks (see fedsvc_int.h, lrn/fedsvc.h). */
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/fsutil.h"
#include "core/kconf.h"
#include "core/log.h"
#include "core/mem.h"
#include "fedsvc_int.h"
#include "lrn/admm.h"
#include "lrn/config.h"
#include "lrn/dppgcd.h"
#include "lrn/pgcd.h"

#define FS_MAGIC0  'L'
#define FS_MAGIC1  'F'
#define FS_VERSION 1

/* ---- byte buffers ---- */

void fs_wbuf_free(struct fs_wbuf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

static void put(struct fs_wbuf *b, const void *src, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = core_xrealloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void put_u(struct fs_wbuf *b, uint64_t v, size_t n)
{
    uint8_t t[8];
    for (size_t i = 0; i < n; i++)
        t[i] = (uint8_t)(v >> (8 * i));
    put(b, t, n);
}

static void put_d(struct fs_wbuf *b, double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof(u));
    put_u(b, u, 8);
}

static void put_blob(struct fs_wbuf *b, const uint8_t *p, uint32_t n)
{
    put_u(b, n, 4);
    if (n)
        put(b, p, n);
}

struct rbuf {
    const uint8_t *p;
    size_t n, pos;
    bool bad;
};

static uint64_t get_u(struct rbuf *r, size_t n)
{
    uint64_t v = 0;
    if (r->bad || r->n - r->pos < n) {
        r->bad = true;
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)r->p[r->pos + i] << (8 * i);
    r->pos += n;
    return v;
}

static double get_d(struct rbuf *r)
{
    uint64_t u = get_u(r, 8);
    double x;
    memcpy(&x, &u, sizeof(x));
    return x;
}

static const uint8_t *get_bytes(struct rbuf *r, size_t n)
{
    const uint8_t *p = r->p + r->pos;
    if (r->bad || r->n - r->pos < n) {
        r->bad = true;
        return NULL;
    }
    r->pos += n;
    return p;
}

/* ---- messages ---- */

uint64_t fs_nodes_hash(const char *const *names, size_t d)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < d; i++)
        for (const char *c = names[i];; c++) {
            h = (h ^ (uint8_t)*c) * 1099511628211ULL;
            if (!*c)
                break;
        }
    return h;
}

void fs_msg_encode(const struct fs_msg *m, struct fs_wbuf *b)
{
    size_t idl = strlen(m->id);
    uint8_t hdr[4] = {FS_MAGIC0, FS_MAGIC1, FS_VERSION, (uint8_t)m->type};

    b->n = 0;
    put(b, hdr, 4);
    put_u(b, m->session, 8);
    put_u(b, m->round, 4);
    put_u(b, idl, 1);
    put(b, m->id, idl);
    if (m->type == FS_ANNOUNCE) {
        put_u(b, m->samples, 8);
        put_u(b, m->d, 4);
        for (size_t i = 0; i < m->d; i++) {
            size_t l = strlen(m->names[i]);
            put_u(b, l, 2);
            put(b, m->names[i], l);
        }
    } else if (m->type == FS_SOLVE) {
        put_u(b, m->d, 4);
        put_u(b, m->nodes_hash, 8);
        put_d(b, m->rho2);
        put_d(b, m->lambda);
        put_d(b, m->gamma);
        put_d(b, m->tol);
        put_u(b, m->max_steps, 8);
        put_u(b, m->wire, 1);
        put_u(b, m->center, 1);
        put_u(b, m->method, 1);
        put_d(b, m->cov_scale);
        for (int k = 0; k < 3; k++)
            put_blob(b, m->blob[k], m->blen[k]);
    } else if (m->type == FS_REPLY) {
        put_u(b, m->status, 1);
        put_u(b, m->samples, 8);
        put_blob(b, m->blob[0], m->blen[0]);
    }
}

static core_err decode_names(struct rbuf *r, struct fs_msg *m)
{
    m->d = (size_t)get_u(r, 4);
    if (r->bad || m->d < 1 || m->d > LRN_FEDSVC_MAX_NODES)
        return CORE_EPARSE;
    m->names = core_xcalloc(m->d, sizeof(char *));
    for (size_t i = 0; i < m->d; i++) {
        size_t l = (size_t)get_u(r, 2);
        const uint8_t *s = get_bytes(r, l);
        if (!s || l == 0 || memchr(s, 0, l))
            return CORE_EPARSE;
        m->names[i] = core_xmalloc(l + 1);
        memcpy(m->names[i], s, l);
        m->names[i][l] = 0;
    }
    return CORE_OK;
}

static core_err decode_blobs(struct rbuf *r, struct fs_msg *m, int n)
{
    for (int k = 0; k < n; k++) {
        m->blen[k] = (uint32_t)get_u(r, 4);
        m->blob[k] = get_bytes(r, m->blen[k]);
        if (r->bad)
            return CORE_EPARSE;
    }
    return CORE_OK;
}

static core_err decode_body(struct rbuf *r, struct fs_msg *m)
{
    if (m->type == FS_ANNOUNCE) {
        m->samples = get_u(r, 8);
        return decode_names(r, m);
    }
    if (m->type == FS_SOLVE) {
        m->d = (size_t)get_u(r, 4);
        m->nodes_hash = get_u(r, 8);
        m->rho2 = get_d(r);
        m->lambda = get_d(r);
        m->gamma = get_d(r);
        m->tol = get_d(r);
        m->max_steps = get_u(r, 8);
        m->wire = (uint8_t)get_u(r, 1);
        m->center = (uint8_t)get_u(r, 1);
        m->method = (uint8_t)get_u(r, 1);
        m->cov_scale = get_d(r);
        if (r->bad || m->d < 2 || m->d > LRN_FEDSVC_MAX_NODES || m->wire > 1 ||
            m->method > FS_METHOD_FED_BNSL || !(m->cov_scale >= 1.0) || !isfinite(m->cov_scale))
            return CORE_EPARSE;
        return decode_blobs(r, m, 3);
    }
    if (m->type == FS_REPLY) {
        m->status = (uint8_t)get_u(r, 1);
        m->samples = get_u(r, 8);
        return decode_blobs(r, m, 1);
    }
    return m->type == FS_END ? CORE_OK : CORE_EPARSE;
}

core_err fs_msg_decode(const uint8_t *buf, size_t len, struct fs_msg *m)
{
    struct rbuf r = {buf, len, 0, false};
    const uint8_t *h = get_bytes(&r, 4), *id;
    size_t idl;
    core_err rc;

    memset(m, 0, sizeof(*m));
    if (!h || h[0] != FS_MAGIC0 || h[1] != FS_MAGIC1 || h[2] != FS_VERSION)
        return CORE_EPARSE;
    m->type = h[3];
    m->session = get_u(&r, 8);
    m->round = (uint32_t)get_u(&r, 4);
    idl = (size_t)get_u(&r, 1);
    id = get_bytes(&r, idl);
    if (!id || idl > LRN_FEDSVC_MAX_ID)
        return CORE_EPARSE;
    memcpy(m->id, id, idl);
    m->id[idl] = 0;
    rc = decode_body(&r, m);
    if (rc == CORE_OK && (r.bad || r.pos != r.n))
        rc = CORE_EPARSE;
    if (rc != CORE_OK)
        fs_msg_clear(m);
    return rc;
}

void fs_msg_clear(struct fs_msg *m)
{
    for (size_t i = 0; m->names && i < m->d; i++)
        free(m->names[i]);
    free(m->names);
    m->names = NULL;
}

/* ---- the link ---- */

static void on_message(void *arg, const rd_kafka_message_t *m)
{
    struct fs_link *l = arg;
    l->bytes_in += m->len;
    if (l->on_msg)
        l->on_msg(l->arg, m);
}

static void on_error(void *arg, rd_kafka_resp_err_t err, const char *reason, bool fatal)
{
    struct fs_link *l = arg;
    CORE_WARN("learner kafka %s: %s (%s)", fatal ? "fatal error" : "error", rd_kafka_err2str(err),
              reason ? reason : "");
    if (fatal) {
        l->fatal = true;
        snprintf(l->fatal_why, sizeof(l->fatal_why), "%s", rd_kafka_err2str(err));
    }
}

static void on_closed(void *arg)
{
    struct fs_link *l = arg;
    l->closed++;
}

static void on_delivery(void *arg, void *opaque, rd_kafka_resp_err_t err)
{
    (void)arg, (void)opaque;
    if (err)
        CORE_WARN("learner message not delivered: %s", rd_kafka_err2str(err));
}

static void on_timer(uv_timer_t *t)
{
    (void)t; /* only wakes uv_run(ONCE) up */
}

core_err fs_link_open(struct fs_link *l, const struct core_config *cfg, const char *prefix,
                      const char *const *topics, const char *const *reset, size_t n,
                      fs_msg_fn *on_msg, void *arg, char *eb, size_t ebn)
{
    struct core_kconsumer_ops ops = {
        .on_message = on_message, .on_error = on_error, .on_closed = on_closed, .arg = l};
    rd_kafka_conf_t *pc = NULL;
    char grp[256];
    core_err rc = CORE_OK;

    memset(l, 0, sizeof(*l));
    l->on_msg = on_msg;
    l->arg = arg;
    if (uv_loop_init(&l->loop) != 0) {
        snprintf(eb, ebn, "cannot create an event loop");
        return CORE_EIO;
    }
    l->loop_ok = true;
    uv_timer_init(&l->loop, &l->timer);
    l->timer_on = true;
    for (size_t k = 0; k < n && k < 2 && rc == CORE_OK; k++) {
        snprintf(grp, sizeof(grp), "%s.%zu", prefix, k);
        rc = core_kconsumer_new_own(&l->loop, cfg, grp, topics[k], reset[k], &ops, &l->cons[k], eb,
                                    ebn);
        if (rc == CORE_OK)
            l->ncons++;
    }
    if (rc == CORE_OK)
        rc = core_kafka_conf_new(cfg, CORE_KAFKA_PRODUCER, NULL, &pc, eb, ebn);
    if (rc == CORE_OK)
        rc = core_kproducer_new(&l->loop, pc, on_delivery, l, &l->prod, eb, ebn); /* takes pc */
    if (rc != CORE_OK)
        fs_link_close(l);
    return rc;
}

bool fs_link_ready(struct fs_link *l)
{
    for (size_t k = 0; k < l->ncons; k++)
        if (core_kconsumer_assigned(l->cons[k]) == 0)
            return false;
    return true;
}

void fs_link_pump(struct fs_link *l, int ms)
{
    uv_timer_start(&l->timer, on_timer, (uint64_t)(ms > 0 ? ms : 1), 0);
    uv_run(&l->loop, UV_RUN_ONCE);
    uv_timer_stop(&l->timer);
}

core_err fs_link_send(struct fs_link *l, const char *topic, const char *key, const void *buf,
                      size_t len)
{
    core_err rc;
    for (int tries = 0; tries < 100; tries++) {
        rc = core_kproducer_send(l->prod, topic, RD_KAFKA_PARTITION_UA, key, key ? strlen(key) : 0,
                                 buf, len, NULL);
        if (rc != CORE_EAGAIN)
            break;
        fs_link_pump(l, 10);
    }
    if (rc == CORE_OK)
        l->bytes_out += len;
    return rc;
}

void fs_link_close(struct fs_link *l)
{
    uint64_t t0 = fs_now_ms();

    if (!l->loop_ok)
        return;
    for (size_t k = 0; k < l->ncons; k++)
        core_kconsumer_close(l->cons[k]);
    while (fs_now_ms() - t0 < 3000 &&
           (l->closed < l->ncons ||
            (l->prod && core_kproducer_outq(l->prod) > 0 && fs_now_ms() - t0 < 1000)))
        fs_link_pump(l, 20);
    for (size_t k = 0; k < l->ncons; k++)
        core_kconsumer_detach(l->cons[k]);
    if (l->prod)
        core_kproducer_detach(l->prod);
    if (l->timer_on)
        uv_close((uv_handle_t *)&l->timer, NULL);
    uv_run(&l->loop, UV_RUN_DEFAULT);
    for (size_t k = 0; k < l->ncons; k++)
        core_kconsumer_free(l->cons[k]);
    core_kproducer_free(l->prod);
    uv_run(&l->loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&l->loop) != 0)
        CORE_WARN("learner event loop closed with handles still open");
    l->loop_ok = false;
}

/* ---- helpers ---- */

uint64_t fs_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

bool fs_id_valid(const char *id)
{
    size_t n = id ? strlen(id) : 0;
    if (n == 0 || n > LRN_FEDSVC_MAX_ID)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

const char *fs_dir(const struct core_config *cfg, const char *key, char *buf, size_t n, char *eb,
                   size_t ebn)
{
    const char *v = core_config_str(cfg, key), *base = core_config_str(cfg, "state.dir");
    int len = v && v[0] == '/' ? snprintf(buf, n, "%s", v)
                               : snprintf(buf, n, "%s/%s", base ? base : ".", v ? v : "");
    if (len < 0 || (size_t)len >= n || fs_mkdir_p(buf) != CORE_OK) {
        snprintf(eb, ebn, "%s %s: cannot create it", key, len >= 0 && (size_t)len < n ? buf : v);
        return NULL;
    }
    return buf;
}

core_err fs_mkdir_p(const char *dir)
{
    char buf[4096];
    size_t n = strlen(dir);

    if (n == 0 || n >= sizeof(buf))
        return CORE_EIO;
    memcpy(buf, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != 0)
            continue;
        char c = buf[i];
        buf[i] = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return CORE_EIO;
        buf[i] = c;
    }
    return CORE_OK;
}

core_err fs_write_atomic(const char *path, const void *buf, size_t len, char *eb, size_t ebn)
{
    struct core_outfile o;
    core_err rc = core_outfile_open(&o, path, eb, ebn);

    if (rc != CORE_OK)
        return rc;
    if (len && fwrite(buf, 1, len, o.f) != len) {
        core_outfile_abort(&o);
        snprintf(eb, ebn, "cannot write %s", path);
        return CORE_EIO;
    }
    rc = core_outfile_commit(&o);
    if (rc != CORE_OK)
        snprintf(eb, ebn, "cannot commit %s", path);
    return rc;
}

core_err fs_read_file(const char *path, uint8_t **buf, size_t *len)
{
    FILE *f = fopen(path, "rb");
    long sz;

    *buf = NULL;
    *len = 0;
    if (!f)
        return errno == ENOENT ? CORE_ENOTFOUND : CORE_EIO;
    if (fseek(f, 0, SEEK_END) != 0 || (sz = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return CORE_EIO;
    }
    *buf = core_xmalloc((size_t)sz + 1);
    if (sz > 0 && fread(*buf, 1, (size_t)sz, f) != (size_t)sz) {
        fclose(f);
        free(*buf);
        *buf = NULL;
        return CORE_EIO;
    }
    fclose(f);
    *len = (size_t)sz;
    return CORE_OK;
}

/* ---- startup checks ---- */

/* topics.released must be the public released stream: never a protected topic (by the
 * configured names or their defaults), never one of the learner's own topics. */
static core_err check_topics(const struct core_config *cfg, char *eb, size_t ebn)
{
    static const char *const protected_keys[] = {"topics.raw",
                                                 "topics.windows",
                                                 "topics.rejected",
                                                 "topics.release_rejected",
                                                 "topics.learner_updates",
                                                 "topics.learner_global",
                                                 "topics.learner_dag",
                                                 "topics.control",
                                                 "topics.audit",
                                                 "topics.calibration",
                                                 "topics.status",
                                                 "topics.ledger_changelog"};
    static const char *const protected_names[] = {"sensors.raw", "gcdp.windows", "sensors.rejected",
                                                  "gcdp.windows.rejected", "gcdp.ledger.changelog"};
    const char *rel = core_config_str(cfg, "topics.released");

    if (!rel || !*rel) {
        snprintf(eb, ebn, "topics.released: unset");
        return CORE_ECONFIG;
    }
    for (size_t k = 0; k < sizeof(protected_keys) / sizeof(*protected_keys); k++) {
        const char *t = core_config_str(cfg, protected_keys[k]);
        if (t && strcmp(t, rel) == 0) {
            snprintf(eb, ebn,
                     "topics.released = %s is %s: the learner reads only the "
                     "privatized released stream",
                     rel, protected_keys[k]);
            return CORE_ECONFIG;
        }
    }
    for (size_t k = 0; k < sizeof(protected_names) / sizeof(*protected_names); k++)
        if (strcmp(protected_names[k], rel) == 0) {
            snprintf(eb, ebn,
                     "topics.released = %s names a protected topic: the learner "
                     "reads only the privatized released stream",
                     rel);
            return CORE_ECONFIG;
        }
    return CORE_OK;
}

static core_err check_devices(const char *devices, char *eb, size_t ebn)
{
    size_t n = devices ? strlen(devices) : 0;
    if (n == 0 || n > 4096) {
        snprintf(eb, ebn, "devices: give 1..4096 characters of comma-separated globs");
        return CORE_ECONFIG;
    }
    for (const char *c = devices; *c; c++)
        if (*c == ',' && (c == devices || c[1] == ',' || c[1] == 0)) {
            snprintf(eb, ebn, "devices '%s': empty glob", devices);
            return CORE_ECONFIG;
        }
    return CORE_OK;
}

core_err lrn_fedsvc_check(const struct core_config *cfg, const char *id, const char *devices,
                          char *eb, size_t ebn)
{
    struct lrn_admm_opts admm;
    struct lrn_pgcd_opts pgcd;
    struct lrn_dppgcd_opts dp;
    bool dp_on = false, by_p = false;
    core_err rc = check_topics(cfg, eb, ebn);

    if (rc == CORE_OK)
        rc = lrn_config_opts(cfg, 2, &admm, &pgcd, &dp, NULL, &dp_on, &by_p, eb, ebn);
    if (rc == CORE_OK && dp_on) {
        snprintf(eb, ebn,
                 "learner.dp.enabled: the learner services run fed-sparse only "
                 "(dp-fed-sparse over the topics is not built yet)");
        rc = CORE_ECONFIG;
    }
    if (rc == CORE_OK && core_config_int(cfg, "learner.service.min_samples") >
                             core_config_int(cfg, "learner.service.horizon")) {
        snprintf(eb, ebn, "learner.service.min_samples > learner.service.horizon");
        rc = CORE_ECONFIG;
    }
    if (rc == CORE_OK && id && !fs_id_valid(id)) {
        snprintf(eb, ebn, "participant id '%s': want 1..%d of [A-Za-z0-9._-]", id,
                 LRN_FEDSVC_MAX_ID);
        rc = CORE_ECONFIG;
    }
    if (rc == CORE_OK && id)
        rc = check_devices(devices ? devices : core_config_str(cfg, "learner.service.devices"), eb,
                           ebn);
    return rc;
}
