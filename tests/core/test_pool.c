/* test_pool.c - the fork-join pool (core/pool.h): every task runs exactly once for any
 * thread count, the pool is reusable job after job, and a NULL pool runs in order. */
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "core/pool.h"

struct job {
    unsigned calls[257];
    size_t order[257], k;
};

static void task(void *arg, size_t i)
{
    struct job *j = arg;
    j->calls[i]++; /* slot i is written by task i only */
}

static void in_order(void *arg, size_t i)
{
    struct job *j = arg;
    j->order[j->k++] = i;
}

Test(pool, every_task_runs_once_for_any_thread_count)
{
    for (size_t threads = 1; threads <= 4; threads++) {
        struct core_pool *p = NULL;
        cr_assert_eq(core_pool_new(threads, &p), CORE_OK);
        cr_assert_eq(core_pool_threads(p), threads);
        for (size_t rep = 0; rep < 300; rep++) { /* many short jobs: wake-up races */
            struct job j;
            size_t n = rep % 258;
            memset(&j, 0, sizeof(j));
            core_pool_run(p, n, task, &j);
            for (size_t i = 0; i < 257; i++)
                cr_assert_eq(j.calls[i], i < n ? 1u : 0u, "threads %zu n %zu task %zu", threads, n,
                             i);
        }
        core_pool_free(p);
    }
}

Test(pool, a_null_pool_runs_in_index_order_and_bad_sizes_are_refused)
{
    struct job j;
    struct core_pool *p = (struct core_pool *)1;

    memset(&j, 0, sizeof(j));
    core_pool_run(NULL, 5, in_order, &j);
    cr_assert_eq(j.k, 5);
    for (size_t i = 0; i < 5; i++)
        cr_assert_eq(j.order[i], i);
    cr_assert_eq(core_pool_threads(NULL), 1);
    cr_assert_eq(core_pool_new(0, &p), CORE_EINVAL);
    cr_assert_null(p);
    cr_assert_eq(core_pool_new(CORE_POOL_MAX_THREADS + 1, &p), CORE_EINVAL);
    cr_assert_geq(core_pool_cpu_count(64), 1);
    cr_assert_eq(core_pool_cpu_count(1), 1);
    core_pool_free(NULL);
}
