/* core/mem.h - allocation wrappers that abort on out-of-memory (STYLE P6 tier 3).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Use only for fixed-size or already-capped allocations; sizes that come from input
 * are checked against a named limit first (STYLE P8).
 * Thread-safety: thread-safe (libc malloc).
 */
#ifndef CORE_MEM_H
#define CORE_MEM_H

#include <stddef.h>

/* New memory; caller frees with free(). Aborts with a message on failure. */
void *core_xmalloc(size_t size);
void *core_xcalloc(size_t n, size_t size);
void *core_xrealloc(void *p, size_t size);
char *core_xstrdup(const char *s);

/* For a long-running Kafka service process (call once at start, before its threads): glibc
 * malloc keeps freed memory for reuse instead of returning it to the kernel and faulting it
 * in again. librdkafka allocates and frees a buffer per fetch response and per produce batch
 * (hundreds of KB to MBs); with glibc's defaults such blocks are mmap'ed and unmapped, or
 * trimmed from the heap top, each time, and the page faults cost CPU on every thread
 * (docs/release.md "Service throughput"). Sets M_MMAP_THRESHOLD 32 MiB (glibc's own dynamic
 * ceiling), M_TRIM_THRESHOLD 128 MiB and M_TOP_PAD 16 MiB: up to 128 MiB of freed memory per
 * arena may stay resident. Does nothing when the environment already tunes malloc
 * (MALLOC_*_ or GLIBC_TUNABLES). Not thread-safe with concurrent allocation. */
void core_mem_tune_service(void);

#endif /* CORE_MEM_H */
