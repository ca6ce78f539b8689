/* parse_batch.c - window records parsed together on worker threads, released in order
 * (svc/parse_batch.h). */
#include "svc/parse_batch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"

struct slot {
    struct rel__prec r;
    char *buf; /* the payload copy (reused) */
    size_t cap;
    char key[REL_MAX_DEVICE + 1];
    bool parsed, w_init;
};

struct worker_arg {
    struct rel__pbatch *b;
    unsigned me; /* share index (1..n_workers; the owner parses share 0) */
};

struct rel__pbatch {
    struct slot s[REL_PBATCH_MAX];
    size_t n;
    const struct cal_theta *theta;
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    pthread_t tid[REL_MAX_THREADS];
    struct worker_arg args[REL_MAX_THREADS];
    unsigned n_workers, running;
    uint64_t gen;
    bool stop, sync_ok;
};

static void parse_one(struct slot *sl)
{
    struct rel__prec *r = &sl->r;

    r->w.id[0] = '\0';
    r->eb[0] = '\0';
    r->rc = r->m.payload ? rel_window_from_json(r->m.payload, r->m.len, &r->w, r->eb,
                                                sizeof(r->eb))
                         : CORE_EPARSE;
    sl->parsed = true;
}

/* Share me of nshares: records [n*me/nshares, n*(me+1)/nshares). */
static void parse_share(struct rel__pbatch *b, unsigned me, unsigned nshares)
{
    for (size_t i = b->n * me / nshares; i < b->n * (me + 1) / nshares; i++)
        if (!b->s[i].parsed)
            parse_one(&b->s[i]);
}

static void *worker(void *arg)
{
    const struct worker_arg *a = arg;
    struct rel__pbatch *b = a->b;
    uint64_t seen = 0;

    pthread_mutex_lock(&b->mu);
    for (;;) {
        while (!b->stop && b->gen == seen)
            pthread_cond_wait(&b->go, &b->mu);
        if (b->stop)
            break;
        seen = b->gen;
        pthread_mutex_unlock(&b->mu);
        parse_share(b, a->me, b->n_workers + 1);
        pthread_mutex_lock(&b->mu);
        if (--b->running == 0)
            pthread_cond_signal(&b->done);
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

static bool sync_init(struct rel__pbatch *b)
{
    if (pthread_mutex_init(&b->mu, NULL) != 0)
        return false;
    if (pthread_cond_init(&b->go, NULL) != 0) {
        pthread_mutex_destroy(&b->mu);
        return false;
    }
    if (pthread_cond_init(&b->done, NULL) != 0) {
        pthread_cond_destroy(&b->go);
        pthread_mutex_destroy(&b->mu);
        return false;
    }
    return true;
}

struct rel__pbatch *rel__pbatch_new(unsigned nthreads)
{
    struct rel__pbatch *b = core_xcalloc(1, sizeof(*b));

    if (nthreads > REL_MAX_THREADS)
        nthreads = REL_MAX_THREADS;
    b->sync_ok = nthreads > 1 && sync_init(b);
    for (unsigned t = 1; b->sync_ok && t < nthreads; t++) {
        b->args[t] = (struct worker_arg){b, t};
        if (pthread_create(&b->tid[t], NULL, worker, &b->args[t]) != 0)
            break; /* fewer workers: the owner parses more */
        b->n_workers++;
    }
    return b;
}

void rel__pbatch_free(struct rel__pbatch *b)
{
    if (!b)
        return;
    if (b->sync_ok) {
        pthread_mutex_lock(&b->mu);
        b->stop = true;
        pthread_cond_broadcast(&b->go);
        pthread_mutex_unlock(&b->mu);
        for (unsigned t = 1; t <= b->n_workers; t++)
            pthread_join(b->tid[t], NULL);
        pthread_cond_destroy(&b->done);
        pthread_cond_destroy(&b->go);
        pthread_mutex_destroy(&b->mu);
    }
    for (size_t i = 0; i < REL_PBATCH_MAX; i++) {
        if (b->s[i].w_init)
            rel_window_cleanup(&b->s[i].r.w);
        free(b->s[i].buf);
    }
    free(b);
}

void rel__pbatch_theta(struct rel__pbatch *b, const struct cal_theta *t)
{
    b->n = 0;
    b->theta = t;
    for (size_t i = 0; i < REL_PBATCH_MAX; i++) { /* windows are made on first use */
        if (b->s[i].w_init)
            rel_window_cleanup(&b->s[i].r.w);
        b->s[i].w_init = false;
    }
}

bool rel__pbatch_add(struct rel__pbatch *b, const rd_kafka_message_t *m)
{
    struct slot *sl = &b->s[b->n++];
    rd_kafka_message_t *c = &sl->r.m;

    if (!sl->w_init) {
        rel_window_init(&sl->r.w, b->theta);
        sl->w_init = true;
    }
    memset(c, 0, sizeof(*c));
    c->partition = m->partition;
    c->offset = m->offset;
    c->len = m->len;
    if (m->payload) {
        if (sl->cap < m->len + 1) {
            sl->cap = m->len + 1;
            sl->buf = core_xrealloc(sl->buf, sl->cap);
        }
        memcpy(sl->buf, m->payload, m->len);
        c->payload = sl->buf;
    }
    if (m->key && m->key_len <= REL_MAX_DEVICE) { /* what a dead letter keys by */
        memcpy(sl->key, m->key, m->key_len);
        c->key = sl->key;
        c->key_len = m->key_len;
    }
    sl->parsed = false;
    return b->n == REL_PBATCH_MAX;
}

size_t rel__pbatch_count(const struct rel__pbatch *b)
{
    return b->n;
}

void rel__pbatch_parse(struct rel__pbatch *b)
{
    bool pooled = b->n_workers > 0 && b->n > 1;

    if (pooled) {
        pthread_mutex_lock(&b->mu);
        b->running = b->n_workers;
        b->gen++;
        pthread_cond_broadcast(&b->go);
        pthread_mutex_unlock(&b->mu);
    }
    parse_share(b, 0, pooled ? b->n_workers + 1 : 1);
    if (pooled) {
        pthread_mutex_lock(&b->mu);
        while (b->running > 0)
            pthread_cond_wait(&b->done, &b->mu);
        pthread_mutex_unlock(&b->mu);
    }
}

struct rel__prec *rel__pbatch_rec(struct rel__pbatch *b, size_t i)
{
    return &b->s[i].r;
}

void rel__pbatch_clear(struct rel__pbatch *b)
{
    b->n = 0;
}
