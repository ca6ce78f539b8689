/* core/dp_rng.h - the secure randomness interface for all DP noise (NOISE.md §4.3, STYLE P10).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Every sampler in core/dp_exact.h and core/dp_mech.h takes a `const struct core_rng *`.
 * Production code gets its source from core_rng_os() (getrandom(2)); there is NO seed
 * parameter anywhere in product code. Deterministic sources for tests live only in
 * tests/support/seeded_rng.h, which is never linked into gcdp (DESIGN §7.6).
 *
 * Thread-safety: core_rng_os() returns a process-wide object that is safe to use from
 * any number of threads (its buffer is thread_local and wiped in a fork child).
 * The uniform helpers are thread-safe if rng->fill is.
 */
#ifndef CORE_DP_RNG_H
#define CORE_DP_RNG_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* 128-bit unsigned integer (GCC/Clang extension, NOISE.md §4.2). */
__extension__ typedef unsigned __int128 core_u128;

/* A source of uniformly random bytes.
 *   fill  fills buf[0..len) with independent uniform bytes; on any failure it returns
 *         CORE_ERNG and the caller must discard buf (fail closed).
 *   self  opaque state passed to fill; borrowed. */
struct core_rng {
    core_err (*fill)(void *self, uint8_t *buf, size_t len);
    void *self;
};

/* The production source: getrandom(2) with flags 0, looping on short reads and EINTR,
 * CORE_ERNG on any other error (never a fallback to rand() or a time seed). Bytes are
 * served from a thread_local buffer of at most 4 KiB that is wiped in a fork child
 * (pthread_atfork) and by core_rng_os_wipe().
 * Returns a pointer to a static object (valid for the life of the process); never NULL. */
const struct core_rng *core_rng_os(void);

/* Wipe the calling thread's buffered OS random bytes (explicit_bzero). Call after each
 * release so no future noise stays in memory. Always succeeds. */
void core_rng_os_wipe(void);

/* Fill buf[0..len) from rng. Returns CORE_OK, CORE_EINVAL (rng/buf NULL with len > 0),
 * CORE_ERNG (source failed; buf contents are unspecified and must not be used). */
CORE_MUST_CHECK core_err core_rng_bytes(const struct core_rng *rng, void *buf, size_t len);

/* One uniform 64-bit word. Returns CORE_OK, CORE_EINVAL, CORE_ERNG (no output). */
CORE_MUST_CHECK core_err core_rng_u64(const struct core_rng *rng, uint64_t *out);

/* Exactly uniform integer in [0, n) by rejection (thr = (2^64 - n) mod n; draw r until
 * r >= thr; return r mod n). n >= 1. Returns CORE_OK, CORE_EINVAL (n == 0 or NULL),
 * CORE_ERNG. */
CORE_MUST_CHECK core_err core_rng_u64_below(const struct core_rng *rng, uint64_t n, uint64_t *out);

/* core_rng_u64_below with its threshold thr = (0 - n) % n computed once by the caller (for
 * loops drawing many values below the same n): the same rejection loop, the same words
 * drawn, one 64-bit division less per call. n >= 1 and thr exactly that value (unchecked:
 * a wrong thr breaks uniformity); rng and out non-NULL. Returns CORE_OK or CORE_ERNG. */
static inline CORE_MUST_CHECK core_err core_rng_u64_below_thr(const struct core_rng *rng,
                                                              uint64_t n, uint64_t thr,
                                                              uint64_t *out)
{
    for (;;) {
        uint64_t r;
        core_err rc = core_rng_u64(rng, &r);
        if (rc != CORE_OK)
            return rc;
        if (r >= thr) {
            *out = r % n;
            return CORE_OK;
        }
    }
}

/* Same for 128-bit n >= 1 (uses one 64-bit draw when n < 2^64). */
CORE_MUST_CHECK core_err core_rng_u128_below(const struct core_rng *rng, core_u128 n,
                                             core_u128 *out);

#endif /* CORE_DP_RNG_H */
