/* audit_mirror.c - the ledger's audit log mirrored to a topic (core/audit_mirror.h).
 * SPDX-License-Identifier: Apache-2.0
 */
#include "core/audit_mirror.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>

#include "core/fsutil.h"
#include "core/kafka.h"
#include "core/kconf.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/metrics.h"

enum { CHUNK = 2u << 20, MAX_ROW = (1u << 20) - 4096 /* under message.max.bytes */ };
enum { SLOT_SENT = 0, SLOT_ACKED = 1, SLOT_FAILED = 2 };

struct core_audit_mirror {
    uv_loop_t *loop;
    uv_timer_t timer;
    struct core_kproducer *p;
    int fd;
    char *audit, *state, *topic;
    uint8_t head_hash[crypto_generichash_BYTES]; /* of the audit log's header line */
    int interval_ms;
    core_audit_durable_fn *durable;
    void *arg;
    /* in flight: seq in [done_seq, next_seq); slot seq % cap holds the row's end offset */
    uint64_t *ends;
    uint8_t *acked; /* SLOT_* */
    size_t cap, outstanding;
    uint64_t done_seq, next_seq;
    uint64_t next_off;  /* where the next row to send starts */
    uint64_t acked_off; /* every row before it acknowledged */
    uint64_t saved_off; /* what the state file holds */
    uint64_t last_save_ms;
    int rewind; /* a delivery failed: resend from acked_off once in flight settles */
    char *buf;
    struct core_audit_mirror_stats st;
    struct core_metric *m_rows, *m_errors, *m_lag, *m_skipped;
    /* stop */
    int stopping, closed_handles;
    uint64_t stop_deadline_ms;
    void (*done)(void *);
    void *done_arg;
};

static uint64_t now_ms(const struct core_audit_mirror *m)
{
    return uv_now(m->loop);
}

/* Hash of the audit log's first line (its header); 0 when it has none yet. */
static int header_hash(int fd, uint8_t out[crypto_generichash_BYTES])
{
    char line[4096];
    ssize_t n = pread(fd, line, sizeof(line), 0);
    char *nl = n > 0 ? memchr(line, '\n', (size_t)n) : NULL;
    if (!nl)
        return 0;
    crypto_generichash(out, crypto_generichash_BYTES, (const unsigned char *)line,
                       (size_t)(nl - line), NULL, 0);
    return 1;
}

/* The state file: {"offset":N,"header":"<hex>"}; a missing or foreign one gives 0. */
static uint64_t state_load(const struct core_audit_mirror *m)
{
    char hex[2 * crypto_generichash_BYTES + 1];
    json_t *j = json_load_file(m->state, 0, NULL);
    const char *h = json_string_value(json_object_get(j, "header"));
    json_int_t off = json_integer_value(json_object_get(j, "offset"));
    struct stat st;
    uint64_t ret = 0;

    sodium_bin2hex(hex, sizeof(hex), m->head_hash, sizeof(m->head_hash));
    if (j && h && strcmp(h, hex) == 0 && off >= 0 && fstat(m->fd, &st) == 0 && off <= st.st_size)
        ret = (uint64_t)off;
    else if (j)
        CORE_WARN("audit mirror: state file %s is for another audit log or beyond the end of "
                  "%s: mirroring it from the beginning",
                  m->state, m->audit);
    json_decref(j);
    return ret;
}

static void state_save(struct core_audit_mirror *m)
{
    char hex[2 * crypto_generichash_BYTES + 1], eb[256];
    struct core_outfile o;
    if (m->acked_off == m->saved_off)
        return;
    sodium_bin2hex(hex, sizeof(hex), m->head_hash, sizeof(m->head_hash));
    if (core_outfile_open(&o, m->state, eb, sizeof(eb)) != CORE_OK) {
        CORE_WARN("audit mirror: %s", eb);
        return;
    }
    fprintf(o.f, "{\"offset\":%" PRIu64 ",\"header\":\"%s\"}\n", m->acked_off, hex);
    if (core_outfile_commit(&o) != CORE_OK) {
        CORE_WARN("audit mirror: cannot write %s", m->state);
        return;
    }
    (void)chmod(m->state, 0600);
    m->saved_off = m->acked_off;
    m->last_save_ms = now_ms(m);
}

/* Acknowledged prefix: advance over the acknowledged slots (a failed one stops it). After a
 * failure, once every message in flight has reported, everything after the prefix is sent
 * again (at least once). */
static void settle(struct core_audit_mirror *m)
{
    while (m->done_seq < m->next_seq && m->acked[m->done_seq % m->cap] == SLOT_ACKED) {
        m->acked_off = m->ends[m->done_seq % m->cap];
        m->done_seq++;
    }
    if (m->rewind && m->outstanding == 0) {
        m->next_seq = m->done_seq;
        m->next_off = m->acked_off;
        m->rewind = 0;
    }
}

static void on_delivery(void *arg, void *opaque, rd_kafka_resp_err_t err)
{
    struct core_audit_mirror *m = arg;
    uint64_t seq = (uint64_t)(uintptr_t)opaque;
    m->outstanding--;
    if (err) {
        m->st.errors++;
        core_metric_add(m->m_errors, 1);
        m->rewind = 1;
        m->acked[seq % m->cap] = SLOT_FAILED;
        CORE_WARN("audit mirror: delivery to %s failed (%s): the rows from byte %" PRIu64
                  " on are sent again",
                  m->topic, rd_kafka_err2str(err), m->acked_off);
    } else {
        m->st.rows++;
        core_metric_add(m->m_rows, 1);
        m->acked[seq % m->cap] = SLOT_ACKED;
    }
    settle(m);
}

/* Key of a row: its "id" ("header" for the header line, "" for neither). */
static size_t row_key(const char *line, size_t n, char *key, size_t keyn)
{
    json_t *j = json_loadb(line, n, 0, NULL);
    const char *id = json_string_value(json_object_get(j, "id"));
    size_t k = 0;
    if (id)
        k = (size_t)snprintf(key, keyn, "%s", id);
    else if (json_object_get(j, "gcdp_ledger"))
        k = (size_t)snprintf(key, keyn, "header");
    json_decref(j);
    return k < keyn ? k : keyn - 1;
}

/* Send the complete rows of buf[0..n) that start at off; returns the bytes consumed. */
static size_t send_rows(struct core_audit_mirror *m, const char *buf, size_t n, uint64_t off)
{
    size_t pos = 0;
    char key[512];
    while (pos < n && m->next_seq - m->done_seq < m->cap && !m->rewind) {
        const char *nl = memchr(buf + pos, '\n', n - pos);
        if (!nl)
            break;
        size_t len = (size_t)(nl - (buf + pos));
        uint64_t seq = m->next_seq;
        if (len > MAX_ROW) {
            m->st.skipped++;
            core_metric_add(m->m_skipped, 1);
            CORE_WARN("audit mirror: row at byte %" PRIu64 " of %s has %zu bytes, more than a "
                      "message may hold: not mirrored (it stays in the audit log)",
                      off + pos, m->audit, len);
            m->ends[seq % m->cap] = off + pos + len + 1;
            m->acked[seq % m->cap] = SLOT_ACKED;
            m->next_seq++;
        } else {
            size_t kl = row_key(buf + pos, len, key, sizeof(key));
            m->ends[seq % m->cap] = off + pos + len + 1;
            m->acked[seq % m->cap] = SLOT_SENT;
            if (core_kproducer_send(m->p, m->topic, 0, key, kl, buf + pos, /* one ordered log */
                                    len, (void *)(uintptr_t)seq) != CORE_OK)
                break; /* queue full or the like: try again at the next look */
            m->outstanding++;
            m->next_seq++;
        }
        pos += len + 1;
    }
    settle(m);
    return pos;
}

/* Send what became durable since the last look (as much as the in-flight window allows). */
/* The row at next_off is longer than CHUNK: skip it whole (counted, logged, its slot acked).
 * false on a read error (pump stops and tries again later). */
static bool skip_long_row(struct core_audit_mirror *m, uint64_t durable)
{
    const char *nl = NULL;
    uint64_t o = m->next_off + CHUNK;

    while (!nl && o < durable) {
        ssize_t g = pread(m->fd, m->buf, CHUNK, (off_t)o);
        if (g <= 0)
            return false;
        nl = memchr(m->buf, '\n', (size_t)g);
        o += nl ? (uint64_t)(nl - m->buf + 1) : (uint64_t)g;
    }
    m->st.skipped++;
    core_metric_add(m->m_skipped, 1);
    CORE_WARN("audit mirror: row at byte %" PRIu64 " of %s is longer than %u bytes: not mirrored",
              m->next_off, m->audit, CHUNK);
    m->ends[m->next_seq % m->cap] = o;
    m->acked[m->next_seq % m->cap] = SLOT_ACKED;
    m->next_seq++;
    m->next_off = o;
    settle(m);
    return true;
}

static void pump(struct core_audit_mirror *m)
{
    uint64_t durable = m->durable(m->arg);
    while (!m->rewind && m->next_off < durable && m->next_seq - m->done_seq < m->cap) {
        size_t want = durable - m->next_off < CHUNK ? (size_t)(durable - m->next_off) : CHUNK;
        ssize_t got = pread(m->fd, m->buf, want, (off_t)m->next_off);
        if (got <= 0)
            break;
        size_t used = send_rows(m, m->buf, (size_t)got, m->next_off);
        if (used == 0) {
            if ((size_t)got == CHUNK && skip_long_row(m, durable))
                continue;
            break;
        }
        m->next_off += used;
    }
    m->st.lag_bytes = durable > m->acked_off ? durable - m->acked_off : 0;
    core_metric_set(m->m_lag, (int64_t)m->st.lag_bytes);
}

static void finish(struct core_audit_mirror *m);

static void on_timer(uv_timer_t *t)
{
    struct core_audit_mirror *m = t->data;
    if (!m->stopping) {
        pump(m);
        if (now_ms(m) - m->last_save_ms >= 1000)
            state_save(m);
        return;
    }
    pump(m); /* the owner stopped: what is durable now is final */
    if ((m->outstanding == 0 && m->done_seq == m->next_seq && m->next_off >= m->durable(m->arg)) ||
        now_ms(m) >= m->stop_deadline_ms)
        finish(m);
}

static void timer_closed(uv_handle_t *h)
{
    struct core_audit_mirror *m = h->data;
    m->closed_handles = 1;
    if (m->done)
        m->done(m->done_arg);
}

static void finish(struct core_audit_mirror *m)
{
    uv_timer_stop(&m->timer);
    if (m->done_seq != m->next_seq)
        CORE_WARN("audit mirror: stopped with %" PRIu64 " rows unacknowledged; they are sent "
                  "again at the next start",
                  m->next_seq - m->done_seq);
    state_save(m);
    core_kproducer_detach(m->p);
    uv_close((uv_handle_t *)&m->timer, timer_closed);
}

static core_err mirror_init(struct core_audit_mirror *m, const struct core_audit_mirror_opts *o,
                            char *eb, size_t ebn)
{
    m->fd = open(o->audit_path, O_RDONLY | O_CLOEXEC);
    if (m->fd < 0) {
        snprintf(eb, ebn, "audit mirror: cannot open %s: %s", o->audit_path, strerror(errno));
        return CORE_EIO;
    }
    m->audit = core_xstrdup(o->audit_path);
    m->state = core_xstrdup(o->state_path);
    m->topic = core_xstrdup(o->topic);
    m->interval_ms = o->interval_ms > 0 ? o->interval_ms : 200;
    m->cap = o->max_inflight > 0 ? o->max_inflight : 4096;
    m->ends = core_xcalloc(m->cap, sizeof(*m->ends));
    m->acked = core_xcalloc(m->cap, 1);
    m->buf = core_xmalloc(CHUNK);
    m->durable = o->durable;
    m->arg = o->arg;
    if (o->metrics) {
        m->m_rows =
            core_metrics_get(o->metrics, CORE_METRIC_COUNTER, "gcdp_audit_mirror_rows_total", NULL,
                             "ledger audit rows acknowledged on topics.audit");
        m->m_errors =
            core_metrics_get(o->metrics, CORE_METRIC_COUNTER, "gcdp_audit_mirror_errors_total",
                             NULL, "failed deliveries to topics.audit (each resends)");
        m->m_lag = core_metrics_get(o->metrics, CORE_METRIC_GAUGE, "gcdp_audit_mirror_lag_bytes",
                                    NULL, "committed audit log bytes not yet acknowledged");
        m->m_skipped = core_metrics_get(o->metrics, CORE_METRIC_COUNTER,
                                        "gcdp_audit_mirror_skipped_total", NULL,
                                        "audit rows too large for a message: not mirrored "
                                        "(they stay in the audit log)");
    }
    if (!header_hash(m->fd, m->head_hash)) {
        snprintf(eb, ebn, "audit mirror: %s has no header line", o->audit_path);
        return CORE_EIO;
    }
    m->acked_off = m->saved_off = m->next_off = state_load(m);
    return CORE_OK;
}

core_err core_audit_mirror_new(uv_loop_t *loop, rd_kafka_conf_t *conf,
                               const struct core_audit_mirror_opts *o,
                               struct core_audit_mirror **out, char *eb, size_t ebn)
{
    struct core_audit_mirror *m;
    core_err rc;

    *out = NULL;
    if (!loop || !conf || !o || !o->audit_path || !o->state_path || !o->topic || !o->durable)
        return CORE_EINVAL;
    m = core_xcalloc(1, sizeof(*m));
    m->fd = -1;
    m->loop = loop;
    rc = mirror_init(m, o, eb, ebn);
    /* one request in flight: a retried batch can never overtake a later one (the mirror is
     * the log's order; batches of many rows keep it fast) */
    if (rc == CORE_OK)
        rc = core_kafka_conf_set(conf, "max.in.flight.requests.per.connection", "1", eb, ebn);
    if (rc == CORE_OK)
        rc = core_kproducer_new(loop, conf, on_delivery, m, &m->p, eb, ebn);
    if (rc != CORE_OK) {
        core_audit_mirror_free(m);
        return rc;
    }
    uv_timer_init(loop, &m->timer);
    m->timer.data = m;
    m->last_save_ms = now_ms(m);
    uv_timer_start(&m->timer, on_timer, 0, (uint64_t)m->interval_ms);
    CORE_INFO("audit mirror: %s -> %s from byte %" PRIu64, m->audit, m->topic, m->acked_off);
    *out = m;
    return CORE_OK;
}

void core_audit_mirror_stop(struct core_audit_mirror *m, int timeout_ms, void (*done)(void *),
                            void *arg)
{
    m->stopping = 1;
    m->done = done;
    m->done_arg = arg;
    m->stop_deadline_ms = now_ms(m) + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
    uv_timer_start(&m->timer, on_timer, 0, 20);
}

void core_audit_mirror_stats(const struct core_audit_mirror *m, struct core_audit_mirror_stats *out)
{
    *out = m->st;
    out->acked_bytes = m->acked_off; /* kept once, in acked_off */
}

void core_audit_mirror_free(struct core_audit_mirror *m)
{
    if (!m)
        return;
    core_kproducer_free(m->p);
    if (m->fd >= 0)
        close(m->fd);
    free(m->ends);
    free(m->acked);
    free(m->buf);
    free(m->audit);
    free(m->state);
    free(m->topic);
    free(m);
}
