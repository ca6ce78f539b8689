/* alg/jalloc.h - per-engine bump arena for jansson's parse allocations (private to ingest).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Why: about a third of a jansson parse of a ~200-byte reading is malloc/free (one block per
 * value, per object member, per hashtable, per lexer buffer) plus json_decref's walk. The
 * engine parses one message at a time and drops the tree before the next, so a bump arena
 * reset after every message does the same job for a few instructions per block.
 *
 * How (jansson has ONE process-global pair of hooks, json_set_alloc_funcs):
 *   ing__jalloc_install() installs our hooks once per process (call_once). They chain to
 *   the pair installed before (normally malloc/free), so other jansson users are unaffected:
 *   - malloc hook: bump-allocates from the arena only while THIS thread is inside
 *     json_loadb called by ing__jalloc_parse() (thread-local scope pointer + flag) and the
 *     block fits in what is left; every other request goes to the previous malloc. A
 *     document larger than the arena therefore still parses: the blocks that do not fit
 *     come from malloc (counted as fallbacks) and are freed by json_decref.
 *   - free hook: a pointer inside the address range of the arena of this thread's current
 *     scope is ignored (the arena is reset as a whole); any other pointer goes to the
 *     previous free. Arena blocks never leave a scope (the tree is released before
 *     ing_engine_push returns), so no arena pointer is ever freed outside its scope.
 *   A scope runs from ing__jalloc_parse() to ing__jalloc_release(). Sink callbacks run
 *   inside it: jansson calls they make allocate from malloc (the flag is off outside
 *   json_loadb), and what they free is theirs (never in the arena's range). Scopes nest
 *   (an engine pushing from inside another engine's callback): the previous scope pointer
 *   is saved and restored.
 *   ing__jalloc_release(): when every block of the tree came from the arena it just resets
 *   the arena (json_decref would only walk the tree to make ignored free calls); otherwise
 *   (fallbacks, or the hooks were replaced by someone else since) it calls json_decref
 *   first, which frees the malloc'd blocks, so nothing leaks.
 * Under AddressSanitizer the unused part of the arena is poisoned and every block is
 * followed by a poisoned red zone, so overflows and use after release are reported.
 *
 * Thread-safety: one arena per engine, used by one thread at a time; arenas on distinct
 * threads are independent. The install itself writes jansson's two hook pointers (plain
 * globals in jansson): call ing_engine_new (or ing_engine_global_init) before other threads
 * start using jansson. Any interleaving is still correct (each of our hooks falls back to
 * the previous function), but it is formally a data race.
 */
#ifndef ING_ALG_JALLOC_H
#define ING_ALG_JALLOC_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#define ING_JALLOC_BYTES ((size_t)64 * 1024) /* per engine; a 200-byte reading uses ~2 KiB */

struct ing__jalloc;

/* Statistics of the current/last scope (tests, benchmarks). */
struct ing__jalloc_stats {
    size_t used;       /* arena bytes handed out in the scope (incl. alignment/red zones) */
    size_t blocks;     /* blocks bump-allocated */
    size_t fallbacks;  /* blocks that did not fit and came from the previous malloc */
    bool hooks_active; /* our hooks are jansson's current ones */
};

/* Install the hooks (idempotent, thread-safe). */
void ing__jalloc_install(void);

/* New arena of cap bytes (rounded up to 16; caller frees with ing__jalloc_free). */
struct ing__jalloc *ing__jalloc_new(size_t cap);
void ing__jalloc_free(struct ing__jalloc *a); /* NULL-safe; not inside a scope */

/* Open a scope and parse buf with json_loadb(flags); returns the tree (or NULL with err
 * filled). The caller MUST call ing__jalloc_release(a, result) on the same thread, even
 * when the result is NULL, before another parse with the same arena. */
json_t *ing__jalloc_parse(struct ing__jalloc *a, const char *buf, size_t len, size_t flags,
                          json_error_t *err);

/* Release root (may be NULL) and close the scope: the arena is reset. */
void ing__jalloc_release(struct ing__jalloc *a, json_t *root);

/* True when p lies inside the arena's memory. */
bool ing__jalloc_owns(const struct ing__jalloc *a, const void *p);

void ing__jalloc_stats(const struct ing__jalloc *a, struct ing__jalloc_stats *out);

#endif /* ING_ALG_JALLOC_H */
