/* engine.c - device state, watermarks, window closing, dead letters (ing/engine.h). */
#include "ing/engine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alg/decode.h"
#include "alg/window.h"
#include "core/mem.h"

#define NO_K        INT64_MIN /* "no window closed yet" */
#define KEY_MAX     256       /* key bytes copied into a dead letter */
#define TAB_INITIAL 1024

static const char *const reason_codes[] = {
#define X(name, code, desc) code,
    ING_REASON_MAP(X)
#undef X
};
static const char *const reason_descs[] = {
#define X(name, code, desc) desc,
    ING_REASON_MAP(X)
#undef X
};
static const char *const excl_codes[] = {
#define X(name, code) code,
    ING_EXCL_MAP(X)
#undef X
};

const char *ing_reason_code(enum ing_reason r)
{
    return (unsigned)r < ING_REASON_COUNT ? reason_codes[r] : "unknown";
}

const char *ing_reason_desc(enum ing_reason r)
{
    return (unsigned)r < ING_REASON_COUNT ? reason_descs[r] : "unknown";
}

const char *ing_excl_code(enum ing_excl x)
{
    return (unsigned)x < ING_EXCL_COUNT ? excl_codes[x] : "unknown";
}

/* ---- device table: open addressing, linear probing, FNV-1a ---- */

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* The slot holding the device id[0..n) of hash h, or the empty slot where it belongs. */
static struct ing__tslot *tab_slot(struct ing_engine *e, const char *id, size_t n, uint64_t h)
{
    size_t mask = e->tab_size - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        struct ing__tslot *t = &e->tab[i];
        if (!t->dev || (t->hash == h && t->dev->id_len == n && memcmp(t->dev->id, id, n) == 0))
            return t;
    }
}

static void tab_put(struct ing_engine *e, struct ing__dev *d)
{
    struct ing__tslot *t = tab_slot(e, d->id, d->id_len, d->hash);
    t->hash = d->hash;
    t->dev = d;
}

static void tab_grow(struct ing_engine *e)
{
    struct ing__tslot *old = e->tab;
    size_t old_size = e->tab_size;

    e->tab_size = old_size ? old_size * 2 : TAB_INITIAL;
    e->tab = core_xcalloc(e->tab_size, sizeof(*e->tab));
    for (size_t i = 0; i < old_size; i++)
        if (old[i].dev)
            tab_put(e, old[i].dev);
    free(old);
}

/* ---- cache hints (ing_engine_prefetch) ---- */

#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)(p))
#endif

/* The device of hash h if it sits in its home slot (the common case; else no hint). */
static const struct ing__dev *home_dev(const struct ing_engine *e, uint64_t h)
{
    const struct ing__tslot *t = &e->tab[(size_t)h & (e->tab_size - 1)];
    return t->dev && t->hash == h ? t->dev : NULL;
}

void ing_engine_prefetch(struct ing_engine *e, const char *payload, size_t len, const char *key,
                         size_t key_len)
{
    const struct ing__dev *d;

    for (size_t off = 0; payload && off < len && off < 256; off += 64)
        PREFETCH(payload + off);

    if (e->pf_valid[1] && (d = home_dev(e, e->pf_hash[1])) != NULL && d->rd) {
        PREFETCH(d->rd + d->n); /* where an in-order reading goes */
        PREFETCH(d->val + d->n * e->p.n_channels);
    }
    if (e->pf_valid[0] && (d = home_dev(e, e->pf_hash[0])) != NULL) {
        for (size_t off = 0; off < sizeof(*d); off += 64)
            PREFETCH((const char *)d + off);
    }
    e->pf_hash[1] = e->pf_hash[0];
    e->pf_valid[1] = e->pf_valid[0];
    e->pf_valid[0] = key != NULL && key_len <= ING_DEVICE_MAX;
    if (e->pf_valid[0]) {
        e->pf_hash[0] = fnv1a(key, key_len);
        PREFETCH(&e->tab[(size_t)e->pf_hash[0] & (e->tab_size - 1)]);
    }
}

/* ---- device lists: open (buffered readings) and idle (entries only), oldest first ---- */

static struct ing__dlist *list_of(struct ing_engine *e, int which)
{
    return which == ING__LIST_OPEN ? &e->open : &e->idle;
}

static void list_remove(struct ing_engine *e, struct ing__dev *d)
{
    struct ing__dlist *l;

    if (d->list == ING__LIST_NONE)
        return;
    l = list_of(e, d->list);
    if (d->prev)
        d->prev->next = d->next;
    else
        l->head = d->next;
    if (d->next)
        d->next->prev = d->prev;
    else
        l->tail = d->prev;
    if (d->list == ING__LIST_OPEN)
        e->c.open_devices--;
    d->prev = d->next = NULL;
    d->list = ING__LIST_NONE;
}

static void list_append(struct ing_engine *e, struct ing__dev *d, int which)
{
    struct ing__dlist *l = list_of(e, which);

    list_remove(e, d);
    d->prev = l->tail;
    d->next = NULL;
    if (l->tail)
        l->tail->next = d;
    else
        l->head = d;
    l->tail = d;
    d->list = which;
    if (which == ING__LIST_OPEN)
        e->c.open_devices++;
}

/* Remove d from the table (linear probing: backward-shift deletion, no tombstones). */
static void tab_delete(struct ing_engine *e, const struct ing__dev *d)
{
    size_t mask = e->tab_size - 1, i = (size_t)d->hash & mask, j;

    while (e->tab[i].dev != d)
        i = (i + 1) & mask;
    e->tab[i].dev = NULL;
    for (j = (i + 1) & mask; e->tab[j].dev; j = (j + 1) & mask) {
        size_t home = (size_t)e->tab[j].hash & mask;
        /* e->tab[j] may move into the hole at i unless its home lies cyclically in (i, j] */
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (stays)
            continue;
        e->tab[i] = e->tab[j];
        e->tab[j].dev = NULL;
        i = j;
    }
}

static void dev_release_buffers(struct ing__dev *d)
{
    free(d->rd);
    free(d->val);
    d->rd = NULL;
    d->val = NULL;
    d->n = d->cap = 0;
}

/* ---- lifecycle ---- */

struct ing_engine *ing_engine_new(const struct ing_params *p, char *errbuf, size_t errbuf_size)
{
    struct ing_engine *eng;

    if (!p || ing_params_validate(p, errbuf, errbuf_size) != CORE_OK)
        return NULL;
    eng = core_xcalloc(1, sizeof(*eng));
    core_buf_init(&eng->out, CORE_BUF_NO_CAP); /* records are bounded by the params' caps */
    eng->p = *p;
    eng->n_slots = p->window_ms / p->period_ms;
    eng->half = p->period_ms / 2;
    ing__window_scratch_init(&eng->ws, p);
    eng->ja = core_jalloc_new(ING_JALLOC_BYTES);
    if (p->decoder == ING_DECODER_SIMDJSON && !(eng->fj = ing__fj_new(p->max_message_bytes))) {
        snprintf(errbuf, errbuf_size,
                 "ingest.decoder: the simdjson scanner could not allocate "
                 "its buffers for ingest.max_message_bytes %zu",
                 p->max_message_bytes);
        core_jalloc_free(eng->ja);
        ing__window_scratch_cleanup(&eng->ws);
        free(eng);
        return NULL;
    }
    tab_grow(eng);
    return eng;
}

void ing_engine_free(struct ing_engine *eng)
{
    if (!eng)
        return;
    for (size_t i = 0; i < eng->tab_size; i++) {
        if (eng->tab[i].dev) {
            dev_release_buffers(eng->tab[i].dev);
            free(eng->tab[i].dev);
        }
    }
    free(eng->tab);
    ing__window_scratch_cleanup(&eng->ws);
    core_jalloc_free(eng->ja);
    ing__fj_free(eng->fj);
    core_buf_cleanup(&eng->out);
    free(eng);
}

void ing_engine_global_init(void)
{
    core_jalloc_install();
}

const struct ing_params *ing_engine_params(const struct ing_engine *eng)
{
    return &eng->p;
}

void ing_engine_counters(const struct ing_engine *eng, struct ing_counters *out)
{
    *out = eng->c;
}

/* ---- window indexes (docs/ingest.md "Time model") ---- */

int64_t ing__slot_time(const struct ing_engine *e, int64_t ts)
{
    return e->p.origin_ms +
           ing__floor_div(ts - e->p.origin_ms + e->half, e->p.period_ms) * e->p.period_ms;
}

/* Last window containing slot time tau: start_k <= tau. */
static int64_t k_last(const struct ing_engine *e, int64_t tau)
{
    return ing__floor_div(tau - e->p.origin_ms, e->p.hop_ms);
}

/* First window containing tau: start_k + size > tau. */
static int64_t k_first(const struct ing_engine *e, int64_t tau)
{
    return ing__floor_div(tau - e->p.origin_ms - e->p.window_ms, e->p.hop_ms) + 1;
}

static bool straddles_split(const struct ing_engine *e, int64_t start, int64_t end)
{
    return e->p.has_split && start < e->p.split_at_ms && e->p.split_at_ms < end;
}

/* Drop the prefix of readings none of whose windows is still open. */
static void drop_closed(struct ing_engine *e, struct ing__dev *d)
{
    size_t m = 0, nch = e->p.n_channels;

    while (m < d->n && k_last(e, d->rd[m].tau) < d->next_k)
        m++;
    if (m == 0)
        return;
    memmove(d->rd, d->rd + m, (d->n - m) * sizeof(*d->rd));
    memmove(d->val, d->val + m * nch, (d->n - m) * nch * sizeof(*d->val));
    d->n -= m;
    e->c.buffered -= m;
}

/* Close windows next_k..hi of d, emitting those that hold readings. */
static void close_upto(struct ing_engine *e, struct ing__dev *d, int64_t hi,
                       const struct ing_sink *sink)
{
    size_t i = 0;
    int64_t k;

    if (d->next_k != NO_K && hi < d->next_k)
        return;
    k = d->n ? k_first(e, d->rd[0].tau) : hi + 1;
    if (d->next_k != NO_K && k < d->next_k)
        k = d->next_k;
    while (k <= hi && i < d->n) {
        int64_t start = e->p.origin_ms + k * e->p.hop_ms, end = start + e->p.window_ms;
        size_t j;
        while (i < d->n && d->rd[i].tau < start)
            i++;
        for (j = i; j < d->n && d->rd[j].tau < end; j++)
            ;
        if (j == i) { /* empty window: jump to the first window of the next reading */
            int64_t kn = i < d->n ? k_first(e, d->rd[i].tau) : hi + 1;
            k = kn > k ? kn : k + 1;
            continue;
        }
        if (straddles_split(e, start, end))
            e->c.windows_split_skipped++;
        else
            ing__window_emit(e, d, start, i, j, sink);
        k++;
    }
    if (d->next_k == NO_K || hi + 1 > d->next_k)
        d->next_k = hi + 1;
    drop_closed(e, d);
}

/* Close every window holding buffered readings, then free the buffers. */
/* Close every window of d now, before the watermark passes them (why: the record's
 * "closed_early", since late readings of those windows can no longer join them). */
static void force_close(struct ing_engine *e, struct ing__dev *d, const struct ing_sink *sink,
                        const char *why)
{
    e->closed_early = why;
    if (d->n)
        close_upto(e, d, k_last(e, d->rd[d->n - 1].tau), sink);
    e->closed_early = NULL;
    e->c.buffered -= d->n;
    dev_release_buffers(d);
    list_append(e, d, ING__LIST_IDLE);
}

/* Unlink and return the oldest idle device (the list must not be empty). */
static struct ing__dev *idle_pop(struct ing_engine *e)
{
    struct ing__dev *d = e->idle.head;

    e->idle.head = d->next;
    if (d->next)
        d->next->prev = NULL;
    else
        e->idle.tail = NULL;
    d->next = NULL;
    d->list = ING__LIST_NONE;
    return d;
}

static void dev_evict(struct ing_engine *e, struct ing__dev *d)
{
    tab_delete(e, d);
    list_remove(e, d);
    dev_release_buffers(d);
    free(d);
    e->n_dev--;
    e->c.devices = e->n_dev;
    e->c.devices_evicted++;
}

void ing_engine_tick(struct ing_engine *eng, int64_t now_ms, const struct ing_sink *sink)
{
    while (eng->p.idle_timeout_ms > 0 && eng->open.head &&
           now_ms - eng->open.head->last_seen_ms >= eng->p.idle_timeout_ms) {
        eng->c.idle_closes++;
        force_close(eng, eng->open.head, sink, "idle_timeout");
    }
    while (eng->p.device_ttl_ms > 0 && eng->idle.head &&
           now_ms - eng->idle.head->last_seen_ms >= eng->p.device_ttl_ms)
        dev_evict(eng, idle_pop(eng));
}

void ing_engine_flush(struct ing_engine *eng, const struct ing_sink *sink)
{
    while (eng->open.head)
        force_close(eng, eng->open.head, sink, "flush");
}

bool ing_engine_low_watermark(const struct ing_engine *eng, int32_t partition, int64_t *out)
{
    bool found = false;
    int64_t lo = INT64_MAX;

    for (const struct ing__dev *d = eng->open.head; d; d = d->next)
        for (size_t i = 0; i < d->n; i++)
            if (d->rd[i].partition == partition && d->rd[i].offset < lo) {
                lo = d->rd[i].offset;
                found = true;
            }
    if (found)
        *out = lo;
    return found;
}

static bool dev_uses_partition(const struct ing__dev *d, int32_t partition)
{
    if (d->last_partition == partition)
        return true;
    for (size_t i = 0; i < d->n; i++)
        if (d->rd[i].partition == partition)
            return true;
    return false;
}

size_t ing_engine_forget_partition(struct ing_engine *eng, int32_t partition)
{
    size_t dropped = 0, size = eng->tab_size;
    struct ing__tslot *old = eng->tab;

    eng->tab = core_xcalloc(size, sizeof(*eng->tab));
    for (size_t i = 0; i < size; i++) {
        struct ing__dev *d = old[i].dev;
        if (!d)
            continue;
        if (!dev_uses_partition(d, partition)) {
            tab_put(eng, d);
            continue;
        }
        dropped += d->n;
        eng->c.buffered -= d->n;
        list_remove(eng, d);
        dev_release_buffers(d);
        free(d);
        eng->n_dev--;
    }
    free(old);
    eng->c.devices = eng->n_dev;
    eng->c.forgotten += dropped;
    return dropped;
}

/* ---- accepting a reading ---- */

static size_t lower_bound_ts(const struct ing__dev *d, int64_t ts)
{
    size_t lo = 0, hi = d->n;
    if (d->n && d->rd[d->n - 1].ts < ts) /* in-order arrival: O(1) */
        return d->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->rd[mid].ts < ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A device's first buffer holds what an in-order device keeps in steady state: the slots of
 * its open window(s) (window_ms / period_ms) plus those within ingest.lateness_ms, plus 2
 * (19 with the defaults; it was a fixed 32). A device that needs more grows by doubling, up
 * to ingest.max_buffer_per_device. */
static size_t first_cap(const struct ing_engine *e)
{
    int64_t c = e->n_slots + e->p.lateness_ms / e->p.period_ms + 2;
    return c < 4 ? 4 : c > 4096 ? 4096 : (size_t)c;
}

static void dev_reserve(const struct ing_engine *e, struct ing__dev *d)
{
    size_t cap;
    if (d->n < d->cap)
        return;
    cap = d->cap ? d->cap * 2 : first_cap(e);
    if (cap > e->p.max_buffer)
        cap = e->p.max_buffer;
    d->rd = core_xrealloc(d->rd, cap * sizeof(*d->rd));
    d->val = core_xrealloc(d->val, cap * e->p.n_channels * sizeof(*d->val));
    d->cap = cap;
}

static struct ing__dev *dev_get(struct ing_engine *e, const struct ing__reading *r,
                                enum ing_reason *why)
{
    uint64_t h = fnv1a(r->device, r->device_len);
    struct ing__tslot *slot = tab_slot(e, r->device, r->device_len, h);
    struct ing__dev *d = slot->dev;

    if (d)
        return d;
    if (e->n_dev >= e->p.max_devices) {
        *why = ING_R_TOO_MANY_DEVICES;
        return NULL;
    }
    d = core_xcalloc(1, sizeof(*d));
    memcpy(d->id, r->device, r->device_len);
    d->id_len = r->device_len;
    d->hash = h;
    d->next_k = NO_K;
    slot->hash = h;
    slot->dev = d;
    e->n_dev++;
    e->c.devices = e->n_dev;
    if (e->n_dev * 2 > e->tab_size)
        tab_grow(e);
    return d;
}

/* ingest.max_jump_ms / jump_confirm (docs/ingest.md "Time guards"). True when the reading
 * at slot time tau must be rejected as ts_jump; when it completes a run of jump_confirm
 * agreeing jumps, closes the device's windows instead (its stream restarts at tau). */
static bool jump_guard(struct ing_engine *e, struct ing__dev *d, int64_t tau,
                       const struct ing_sink *sink)
{
    if (e->p.max_jump_ms <= 0 || d->n == 0 || tau - d->max_tau <= e->p.max_jump_ms) {
        d->jump_run = 0; /* only consecutive jumps count */
        return false;
    }
    if (d->jump_run > 0 && tau - d->jump_tau <= e->p.max_jump_ms &&
        d->jump_tau - tau <= e->p.max_jump_ms)
        d->jump_run++;
    else
        d->jump_run = 1;
    d->jump_tau = tau;
    if (e->p.jump_confirm == 0 || d->jump_run < e->p.jump_confirm)
        return true;
    d->jump_run = 0;
    e->c.jump_restarts++;
    force_close(e, d, sink, "stream_restart"); /* emits its windows; starts afresh at tau */
    return false;
}

static enum ing_reason admit(struct ing_engine *e, const struct ing__reading *r,
                             const struct ing_source *src, int64_t now_ms,
                             const struct ing_sink *sink, struct ing__dev **out, char *detail,
                             size_t dn)
{
    enum ing_reason why = ING_R_NONE;
    int64_t tau = ing__slot_time(e, r->ts);
    struct ing__dev *d = dev_get(e, r, &why);
    size_t pos, nch = e->p.n_channels;

    if (!d)
        return snprintf(detail, dn, "device table full (ingest.max_devices %zu)", e->p.max_devices),
               why;
    /* A reading far ahead of the device's buffered stream would move its watermark and
     * close its open windows, making its next normal readings "late" (docs/ingest.md). */
    if (jump_guard(e, d, tau, sink))
        return snprintf(detail, dn,
                        "ts more than ingest.max_jump_ms %lld ahead of this device's latest "
                        "buffered reading",
                        (long long)e->p.max_jump_ms),
               ING_R_TS_JUMP;
    if (d->next_k != NO_K && k_last(e, tau) < d->next_k)
        return snprintf(detail, dn,
                        "all windows of this reading have closed "
                        "(ingest.lateness_ms %lld)",
                        (long long)e->p.lateness_ms),
               ING_R_LATE;
    pos = lower_bound_ts(d, r->ts);
    if (pos < d->n && d->rd[pos].ts == r->ts)
        return snprintf(detail, dn, "a reading with this device and ts is buffered"),
               ING_R_DUPLICATE;
    if (d->n >= e->p.max_buffer)
        return snprintf(detail, dn, "device buffer full (ingest.max_buffer_per_device %zu)",
                        e->p.max_buffer),
               ING_R_BUFFER_FULL;
    dev_reserve(e, d);
    memmove(d->rd + pos + 1, d->rd + pos, (d->n - pos) * sizeof(*d->rd));
    memmove(d->val + (pos + 1) * nch, d->val + pos * nch, (d->n - pos) * nch * sizeof(*d->val));
    d->rd[pos] = (struct ing__rd){r->ts, tau, src->offset, src->partition};
    memcpy(d->val + pos * nch, r->val, nch * sizeof(*d->val));
    d->n++;
    e->c.buffered++;
    if (d->n == 1 || tau > d->max_tau)
        d->max_tau = tau;
    d->last_seen_ms = now_ms;
    d->last_partition = src->partition;
    list_append(e, d, ING__LIST_OPEN);
    *out = d;
    return ING_R_NONE;
}

/* ---- dead letters ---- */

/* base64 of s[0..n) as a JSON string */
static void put_base64(struct core_buf *b, const char *s, size_t n)
{
    core_buf_putc(b, '"');
    core_buf_base64(b, s, n);
    core_buf_putc(b, '"');
}

static void put_key(struct core_buf *b, const char *key, size_t key_len)
{
    size_t n = key_len > KEY_MAX ? KEY_MAX : key_len;

    core_buf_puts(b, ",\"key\":");
    if (!key) {
        core_buf_puts(b, "null");
        return;
    }
    if (ing__utf8_valid(key, n) && !memchr(key, '\0', n)) { /* as the payload */
        core_buf_json_str(b, key, n);
    } else {
        put_base64(b, key, n);
        core_buf_puts(b, ",\"key_encoding\":\"base64\"");
    }
    if (n < key_len)
        core_buf_puts(b, ",\"key_truncated\":true");
}

static void put_payload(struct core_buf *b, const char *payload, size_t len, size_t cap)
{
    size_t n = len > cap ? cap : len;
    /* A NUL byte is valid UTF-8 but becomes "\u0000", which many JSON readers (jansson by
     * default) refuse: such payloads go out as base64 too. */
    bool utf8 = ing__utf8_valid(payload, n) && !memchr(payload, '\0', n);

    core_buf_puts(b, ",\"payload_encoding\":");
    core_buf_puts(b, utf8 ? "\"utf8\"" : "\"base64\"");
    core_buf_puts(b, ",\"payload_bytes\":");
    core_buf_int(b, (int64_t)len);
    core_buf_puts(b, n < len ? ",\"payload_truncated\":true" : ",\"payload_truncated\":false");
    core_buf_puts(b, ",\"payload\":");
    if (utf8)
        core_buf_json_str(b, payload, n);
    else
        put_base64(b, payload, n);
}

static void reject(struct ing_engine *e, enum ing_reason reason, const char *detail,
                   const char *payload, size_t len, const char *key, size_t key_len,
                   const struct ing__reading *r, const struct ing_source *src, int64_t now_ms,
                   const struct ing_sink *sink)
{
    struct core_buf *b = &e->out;
    struct ing_reject_info info = {reason, src};

    e->c.rejected++;
    e->c.rejected_by_reason[reason]++;
    if (reason == ING_R_DUPLICATE)
        e->c.duplicates++;
    if (reason == ING_R_LATE)
        e->c.late++;
    if (!sink || !sink->on_reject)
        return;
    core_buf_reset(b);
    core_buf_puts(b, "{\"schema\":\"" ING_SCHEMA_REJECTED "\",\"reason\":\"");
    core_buf_puts(b, ing_reason_code(reason));
    core_buf_puts(b, "\",\"detail\":");
    core_buf_json_str(b, detail, strlen(detail));
    core_buf_puts(b, ",\"source\":{\"topic\":");
    core_buf_json_str(b, src->topic ? src->topic : "", src->topic ? strlen(src->topic) : 0);
    core_buf_puts(b, ",\"partition\":");
    core_buf_int(b, src->partition);
    core_buf_puts(b, ",\"offset\":");
    core_buf_int(b, src->offset);
    core_buf_puts(b, "},\"received_at_ms\":");
    core_buf_int(b, now_ms);
    if (r->device) {
        core_buf_puts(b, ",\"device\":");
        core_buf_json_str(b, r->device, r->device_len);
    }
    put_key(b, key, key_len);
    put_payload(b, payload, len, e->p.max_message_bytes);
    core_buf_puts(b, "}");
    sink->on_reject(sink->arg, key, key_len, b->p, b->len, &info);
}

bool ing_engine_parse_only(struct ing_engine *eng, const char *payload, size_t len)
{
    json_error_t err;
    json_t *root;

    if (!eng || !payload)
        return false;
    root = core_jalloc_parse(eng->ja, payload, len, ING__JSON_FLAGS, &err);
    core_jalloc_release(eng->ja, root);
    return root != NULL;
}

enum ing_reason ing_engine_decode_only(struct ing_engine *eng, const char *payload, size_t len,
                                       const char *key, size_t key_len, bool reference)
{
    json_t *root = NULL;
    struct ing__reading r;
    enum ing_reason reason;
    char detail[256];

    reason = eng->fj && !reference ? ing__decode_fast(&eng->p, eng->fj, eng->ja, payload, len, key,
                                                      key_len, 0, &root, &r, detail, sizeof(detail))
                                   : ing__decode(&eng->p, eng->ja, payload, len, key, key_len, 0,
                                                 &root, &r, detail, sizeof(detail));
    core_jalloc_release(eng->ja, root);
    return reason;
}

core_err ing_engine_push(struct ing_engine *eng, const char *payload, size_t len, const char *key,
                         size_t key_len, const struct ing_source *src, int64_t now_ms,
                         const struct ing_sink *sink, enum ing_reason *out_reason)
{
    json_t *root = NULL;
    struct ing__reading r;
    struct ing__dev *d = NULL;
    enum ing_reason reason;
    char detail[256];

    if (!eng || !src || (!payload && len > 0))
        return CORE_EINVAL;
    if (!payload)
        payload = "";
    eng->c.consumed++;
    reason = eng->fj ? ing__decode_fast(&eng->p, eng->fj, eng->ja, payload, len, key, key_len,
                                        now_ms, &root, &r, detail, sizeof(detail))
                     : ing__decode(&eng->p, eng->ja, payload, len, key, key_len, now_ms, &root, &r,
                                   detail, sizeof(detail));
    if (reason == ING_R_NONE)
        reason = admit(eng, &r, src, now_ms, sink, &d, detail, sizeof(detail));
    if (reason != ING_R_NONE) {
        ing__utf8_sanitize(detail); /* a name cut by "%.40s" may end mid-character */
        reject(eng, reason, detail, payload, len, key, key_len, &r, src, now_ms, sink);
    } else {
        eng->c.accepted++;
        /* Watermark = max slot time - lateness; close windows whose end it has reached. */
        close_upto(
            eng, d,
            ing__floor_div(d->max_tau - eng->p.lateness_ms - eng->p.origin_ms - eng->p.window_ms,
                           eng->p.hop_ms),
            sink);
    }
    core_jalloc_release(eng->ja, root); /* r.device points into root: last use above */
    if (out_reason)
        *out_reason = reason;
    return CORE_OK;
}
