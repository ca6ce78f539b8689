/* core/pool.h - a small fork-join thread pool: run n independent tasks, wait for all.
 * SPDX-License-Identifier: Apache-2.0
 *
 * For coarse, independent tasks that each write only their own output slot (a participant's
 * local solve, one CSV file). The pool decides only WHERE a task runs, never what it
 * computes: with tasks that share no mutable state the results are the same for any thread
 * count and any scheduling, so callers keep bit-identical answers (issue 9).
 *
 * Thread-safety: core_pool_run() is called by one thread at a time (the pool's owner);
 * tasks run concurrently on the owner's thread and threads − 1 workers.
 */
#ifndef CORE_POOL_H
#define CORE_POOL_H

#include <stddef.h>

#include "core/err.h"

#define CORE_POOL_MAX_THREADS 64

struct core_pool;

/* A task: index i of the current core_pool_run(); arg as given there. */
typedef void core_pool_task_fn(void *arg, size_t i);

/* New pool of `threads` threads in all, the caller's included (1 ≤ threads ≤
 * CORE_POOL_MAX_THREADS; 1 starts no thread and runs every task on the caller).
 *   out  new; caller frees with core_pool_free().
 * Returns CORE_OK, CORE_EINVAL (threads out of range), CORE_EAGAIN (a thread could not
 * be started; nothing is left running). */
CORE_MUST_CHECK core_err core_pool_new(size_t threads, struct core_pool **out);

/* Call fn(arg, i) once for every i in [0, n), spread over the pool's threads; return when
 * all calls have returned. pool NULL: the calls run in index order on the caller. */
void core_pool_run(struct core_pool *pool, size_t n, core_pool_task_fn *fn, void *arg);

/* Threads in all (1 for NULL). */
size_t core_pool_threads(const struct core_pool *pool);

/* Online CPUs, at least 1 and at most cap. */
size_t core_pool_cpu_count(size_t cap);

/* Stop and join the workers; NULL-safe. */
void core_pool_free(struct core_pool *pool);

#endif /* CORE_POOL_H */
