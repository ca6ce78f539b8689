/* core/jalloc.h - bump arena for jansson's parse allocations: one document parsed, read and
 * dropped at a time (ingest's readings, release's window records).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Why: a jansson parse is mostly malloc/free (one block per value, per object member, per
 * hashtable, per lexer buffer) plus json_decref's walk: about a third of the parse of a
 * ~200-byte reading, a fifth of a 13 KB gcdp.window/2 record of 100 nodes (~3500 blocks).
 * A caller that parses one document at a time and drops the tree before the next gets the
 * same job from a bump arena reset after every document, for a few instructions per block.
 *
 * How (jansson has ONE process-global pair of hooks, json_set_alloc_funcs):
 *   core_jalloc_install() installs our hooks once per process (call_once). They chain to
 *   the pair installed before (normally malloc/free), so other jansson users are unaffected:
 *   - malloc hook: bump-allocates from the arena only while THIS thread is inside
 *     json_loadb called by core_jalloc_parse() (thread-local scope pointer + flag) and the
 *     block fits in what is left; every other request goes to the previous malloc. A
 *     document larger than the arena therefore still parses: the blocks that do not fit
 *     come from malloc (counted as fallbacks) and are freed by json_decref.
 *   - free hook: a pointer inside the address range of the arena of this thread's current
 *     scope is ignored (the arena is reset as a whole); any other pointer goes to the
 *     previous free. Arena blocks never leave a scope (the caller releases the tree before
 *     it keeps anything: strings it needs are copied out), so no arena pointer is ever freed
 *     outside its scope.
 *   A scope runs from core_jalloc_parse() to core_jalloc_release(). Code running inside it
 *   (ingest's sink callbacks): jansson calls it makes allocate from malloc (the flag is off
 *   outside json_loadb), and what it frees is its own (never in the arena's range). Scopes
 *   nest (an engine pushing from inside another engine's callback): the previous scope
 *   pointer is saved and restored.
 *   core_jalloc_release(): when every block of the tree came from the arena it just resets
 *   the arena (json_decref would only walk the tree to make ignored free calls); otherwise
 *   (fallbacks, or the hooks were replaced by someone else since) it calls json_decref
 *   first, which frees the malloc'd blocks, so nothing leaks.
 * Under AddressSanitizer the unused part of the arena is poisoned and every block is
 * followed by a poisoned red zone, so overflows and use after release are reported.
 *
 * Thread-safety: one arena per owner (an ingest engine, a release window buffer), used by
 * one thread at a time; arenas on distinct threads are independent. The install itself
 * writes jansson's two hook pointers (plain globals in jansson): install before other
 * threads start using jansson (core_jalloc_new does; ing_engine_global_init and main() call
 * core_jalloc_install first). Any interleaving is still correct (each of our hooks falls
 * back to the previous function), but it is formally a data race.
 */
#ifndef CORE_JALLOC_H
#define CORE_JALLOC_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

struct core_jalloc;

/* Statistics of the current/last scope (tests, benchmarks). */
struct core_jalloc_stats {
    size_t used;       /* arena bytes handed out in the scope (incl. alignment/red zones) */
    size_t blocks;     /* blocks bump-allocated */
    size_t fallbacks;  /* blocks that did not fit and came from the previous malloc */
    bool hooks_active; /* our hooks are jansson's current ones */
};

/* Install the hooks (idempotent, thread-safe). */
void core_jalloc_install(void);

/* New arena of cap bytes (rounded up to 16; caller frees with core_jalloc_free). */
struct core_jalloc *core_jalloc_new(size_t cap);
void core_jalloc_free(struct core_jalloc *a); /* NULL-safe; not inside a scope */

/* Open a scope and parse buf with json_loadb(flags); returns the tree (or NULL with err
 * filled). The caller MUST call core_jalloc_release(a, result) on the same thread, even
 * when the result is NULL, before another parse with the same arena. */
json_t *core_jalloc_parse(struct core_jalloc *a, const char *buf, size_t len, size_t flags,
                          json_error_t *err);

/* Release root (may be NULL) and close the scope: the arena is reset. */
void core_jalloc_release(struct core_jalloc *a, json_t *root);

/* True when p lies inside the arena's memory. */
bool core_jalloc_owns(const struct core_jalloc *a, const void *p);

void core_jalloc_stats(const struct core_jalloc *a, struct core_jalloc_stats *out);

#endif /* CORE_JALLOC_H */
