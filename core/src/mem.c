/* mem.c - allocation that aborts on out-of-memory. */
#include "core/mem.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(size_t size)
{
    fprintf(stderr, "{\"level\":\"fatal\",\"msg\":\"out of memory allocating %zu bytes\"}\n", size);
    abort();
}

void *core_xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p)
        oom(size);
    return p;
}

void *core_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        oom(n * size);
    return p;
}

void *core_xrealloc(void *p, size_t size)
{
    void *q = realloc(p, size ? size : 1);
    if (!q)
        oom(size);
    return q;
}

char *core_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = core_xmalloc(n);
    memcpy(p, s, n);
    return p;
}

void core_mem_tune_service(void)
{
    if (getenv("GLIBC_TUNABLES") || getenv("MALLOC_MMAP_THRESHOLD_") ||
        getenv("MALLOC_TRIM_THRESHOLD_") || getenv("MALLOC_TOP_PAD_"))
        return; /* the operator's setting wins */
    (void)mallopt(M_MMAP_THRESHOLD, 32 << 20);
    (void)mallopt(M_TRIM_THRESHOLD, 128 << 20);
    (void)mallopt(M_TOP_PAD, 16 << 20);
}
