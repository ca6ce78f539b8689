/* jalloc.c - bump arena for jansson's parse allocations (core/jalloc.h). */
#include "core/jalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <threads.h>

#include "core/mem.h"

#if defined(__SANITIZE_ADDRESS__)
#define JA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define JA_ASAN 1
#endif
#endif

#ifdef JA_ASAN
#include <sanitizer/asan_interface.h>
#define JA_POISON(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define JA_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#define JA_REDZONE        16u
#else
#define JA_POISON(p, n)   ((void)(p), (void)(n))
#define JA_UNPOISON(p, n) ((void)(p), (void)(n))
#define JA_REDZONE        0u
#endif

#define JA_ALIGN 16u /* >= alignof(max_align_t) on the targets we build for */

struct core_jalloc {
    unsigned char *base;
    size_t cap, off;
    bool routing;                /* inside json_loadb of this arena's scope */
    bool open;                   /* between core_jalloc_parse and core_jalloc_release */
    struct core_jalloc *outer;   /* scope of this thread when ours opened (nesting) */
    struct core_jalloc_stats st; /* current / last scope */
};

static json_malloc_t prev_malloc = malloc;
static json_free_t prev_free = free;
static once_flag install_once = ONCE_FLAG_INIT;
static _Thread_local struct core_jalloc *tl_scope; /* this thread's open scope, or NULL */

static void *hook_malloc(size_t n)
{
    struct core_jalloc *a = tl_scope;

    if (a && a->routing) {
        if (n <= a->cap) { /* n + padding cannot overflow then */
            size_t need = (n + JA_REDZONE + JA_ALIGN - 1) & ~(size_t)(JA_ALIGN - 1);
            if (need == 0) /* n == 0: a block must never start at base + cap */
                need = JA_ALIGN;
            if (need <= a->cap - a->off) {
                void *p = a->base + a->off;
                a->off += need;
                a->st.blocks++;
                JA_UNPOISON(p, n);
                return p;
            }
        }
        a->st.fallbacks++;
    }
    return prev_malloc(n);
}

static void hook_free(void *p)
{
    const struct core_jalloc *a = tl_scope;

    if (a && (uintptr_t)p >= (uintptr_t)a->base && (uintptr_t)p < (uintptr_t)(a->base + a->cap))
        return; /* arena block: released with the whole arena */
    prev_free(p);
}

static void install(void)
{
    json_get_alloc_funcs(&prev_malloc, &prev_free);
    if (prev_malloc == hook_malloc) /* cannot happen (call_once), but never chain to self */
        return;
    json_set_alloc_funcs(hook_malloc, hook_free);
}

void core_jalloc_install(void)
{
    call_once(&install_once, install);
}

static bool hooks_active(void)
{
    json_malloc_t m;
    json_free_t f;

    json_get_alloc_funcs(&m, &f);
    return m == hook_malloc && f == hook_free;
}

struct core_jalloc *core_jalloc_new(size_t cap)
{
    struct core_jalloc *a = core_xcalloc(1, sizeof(*a));

    core_jalloc_install();
    a->cap = (cap + JA_ALIGN - 1) & ~(size_t)(JA_ALIGN - 1);
    a->base = core_xmalloc(a->cap);
    JA_POISON(a->base, a->cap);
    return a;
}

void core_jalloc_free(struct core_jalloc *a)
{
    if (!a)
        return;
    JA_UNPOISON(a->base, a->cap);
    free(a->base);
    free(a);
}

json_t *core_jalloc_parse(struct core_jalloc *a, const char *buf, size_t len, size_t flags,
                          json_error_t *err)
{
    json_t *root;

    if (a->open) /* contract violation; keep the arena consistent anyway */
        core_jalloc_release(a, NULL);
    a->outer = tl_scope;
    tl_scope = a;
    a->open = true;
    a->off = 0;
    a->st = (struct core_jalloc_stats){0, 0, 0, hooks_active()};
    a->routing = true;
    root = json_loadb(buf, len, flags, err);
    a->routing = false;
    return root;
}

void core_jalloc_release(struct core_jalloc *a, json_t *root)
{
    if (!a->open) { /* no scope (nothing was parsed): root cannot be ours */
        json_decref(root);
        return;
    }
    /* Every block of the tree is in the arena when our hooks served the whole parse and
     * none fell back to malloc: then json_decref would only make ignored free calls. */
    if (root && (!a->st.hooks_active || a->st.fallbacks > 0))
        json_decref(root);
    a->st.used = a->off;
    JA_POISON(a->base, a->off);
    a->off = 0;
    tl_scope = a->outer;
    a->outer = NULL;
    a->open = false;
}

bool core_jalloc_owns(const struct core_jalloc *a, const void *p)
{
    return (uintptr_t)p >= (uintptr_t)a->base && (uintptr_t)p < (uintptr_t)(a->base + a->cap);
}

void core_jalloc_stats(const struct core_jalloc *a, struct core_jalloc_stats *out)
{
    *out = a->st;
    if (a->open)
        out->used = a->off;
}
