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

#endif /* CORE_MEM_H */
