/* alloc_preload.c - counts malloc/calloc/realloc calls process-wide while alloc_count_on is
 * set (used by engine_allocs.c; linked before libc so libsimdjson, libjansson and libstdc++
 * allocate through it too). Not for sanitizer builds. */
#include <stddef.h>

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t a, size_t b);
void *__libc_realloc(void *p, size_t n);
void *malloc(size_t n);
void *calloc(size_t a, size_t b);
void *realloc(void *p, size_t n);

long alloc_count;
int alloc_count_on;

void *malloc(size_t n)
{
    alloc_count += alloc_count_on;
    return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
    alloc_count += alloc_count_on;
    return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
    alloc_count += alloc_count_on;
    return __libc_realloc(p, n);
}
