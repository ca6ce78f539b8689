/* pool.c - fork-join thread pool (see core/pool.h).
 *
 * One job at a time: core_pool_run() publishes (fn, arg, n) under the mutex with a new
 * generation number and wakes the workers; every thread, the caller's included, takes the
 * next index under the mutex until none is left; the caller then waits until no worker is
 * still inside a task. Tasks are coarse (a local solve, a CSV file), so one mutex is cheap.
 */
#include "core/pool.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/mem.h"

struct core_pool {
    size_t threads;
    pthread_t *tid; /* threads − 1 workers */
    pthread_mutex_t mu;
    pthread_cond_t work; /* a new job or stop */
    pthread_cond_t done; /* busy fell to 0 */
    unsigned long gen;   /* job generation */
    core_pool_task_fn *fn;
    void *arg;
    size_t n, next, busy; /* tasks, next index to hand out, workers inside a task */
    bool stop;
};

/* Run tasks of the current job until none is left; called with mu held, returns with it. */
static void drain(struct core_pool *p)
{
    while (p->next < p->n) {
        size_t i = p->next++;
        pthread_mutex_unlock(&p->mu);
        p->fn(p->arg, i);
        pthread_mutex_lock(&p->mu);
    }
}

static void *worker(void *arg)
{
    struct core_pool *p = arg;
    unsigned long seen = 0;

    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->gen == seen)
            pthread_cond_wait(&p->work, &p->mu);
        if (p->stop)
            break;
        seen = p->gen;
        p->busy++;
        drain(p);
        if (--p->busy == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void stop_workers(struct core_pool *p, size_t started)
{
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (size_t k = 0; k < started; k++)
        pthread_join(p->tid[k], NULL);
}

static void destroy(struct core_pool *p)
{
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->mu);
    free(p->tid);
    free(p);
}

core_err core_pool_new(size_t threads, struct core_pool **out)
{
    struct core_pool *p;

    *out = NULL;
    if (threads < 1 || threads > CORE_POOL_MAX_THREADS)
        return CORE_EINVAL;
    p = core_xcalloc(1, sizeof(*p));
    p->threads = threads;
    p->tid = core_xcalloc(threads, sizeof(*p->tid));
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    for (size_t k = 0; k + 1 < threads; k++)
        if (pthread_create(&p->tid[k], NULL, worker, p) != 0) {
            stop_workers(p, k);
            destroy(p);
            return CORE_EAGAIN;
        }
    *out = p;
    return CORE_OK;
}

void core_pool_run(struct core_pool *p, size_t n, core_pool_task_fn *fn, void *arg)
{
    if (!p || p->threads == 1 || n <= 1) {
        for (size_t i = 0; i < n; i++)
            fn(arg, i);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    p->next = 0;
    p->gen++;
    pthread_cond_broadcast(&p->work);
    drain(p);
    while (p->busy > 0)
        pthread_cond_wait(&p->done, &p->mu);
    p->fn = NULL;
    pthread_mutex_unlock(&p->mu);
}

size_t core_pool_threads(const struct core_pool *p)
{
    return p ? p->threads : 1;
}

size_t core_pool_cpu_count(size_t cap)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    size_t k = n > 0 ? (size_t)n : 1;
    return k < cap ? k : cap;
}

void core_pool_free(struct core_pool *p)
{
    if (!p)
        return;
    stop_workers(p, p->threads - 1);
    destroy(p);
}
