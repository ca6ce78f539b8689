/* dp_rng.c - getrandom(2) source with a fork-safe thread_local buffer, exact uniform
 * integers below n (NOISE.md §4.3).
 * SPDX-License-Identifier: Apache-2.0
 */
#include "core/dp_rng.h"

#include <pthread.h>
#include <string.h>
#include <sys/random.h>

#include "dp_getrandom.h"

/* At most 4 KiB of future randomness per thread (NOISE.md §4.3). */
#define OS_BUF_LEN 4096

/* The buffer is refilled with ONE getrandom(2) call of 4 KiB rather than 16 calls of 256
 * bytes: measured 10.7 us against 16 us of CPU per 4 KiB on the build VM (the kernel's
 * per-call cost dominates). Since Linux 5.18 a request is only checked for pending signals
 * after each full page, so a <= 4096-byte request is not interrupted either; older kernels
 * may return EINTR or a short count, which the fill loop retries (bounded). */
#define OS_FILL_CHUNK 4096

/* Zero n bytes so that the stores cannot be optimised away (what explicit_bzero does),
 * inline for the 8-byte draws of the samplers. */
static inline void wipe(void *p, size_t n)
{
    memset(p, 0, n);
    __asm__ __volatile__("" : : "r"(p) : "memory");
}

struct os_buf {
    uint8_t b[OS_BUF_LEN];
    size_t pos; /* next unread byte; bytes before pos are already wiped */
};

static _Thread_local struct os_buf tl_buf = {.pos = OS_BUF_LEN};
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static int atfork_ok; /* set once under atfork_once */

static ssize_t sys_getrandom(void *buf, size_t len, unsigned int flags)
{
    return getrandom(buf, len, flags);
}

/* A fork child must never replay the parent's buffered bytes: the only thread that exists
 * in the child is the one that called fork(), so wiping its buffer is enough. */
static void atfork_child(void)
{
    core_rng_os_wipe();
}

static void atfork_register(void)
{
    /* Without the child handler a fork child could repeat the parent's buffered bytes, so
     * a failed registration makes every draw fail closed (os_fill checks the flag). */
    atfork_ok = pthread_atfork(NULL, NULL, atfork_child) == 0;
}

void core_rng_os_wipe(void)
{
    explicit_bzero(tl_buf.b, sizeof(tl_buf.b));
    tl_buf.pos = OS_BUF_LEN;
}

static core_err os_fill(void *self, uint8_t *buf, size_t len)
{
    (void)self;
    if (!atfork_ok)
        return CORE_ERNG;
    while (len > 0) {
        if (tl_buf.pos == OS_BUF_LEN) {
            if (core__getrandom_fill_chunked(sys_getrandom, tl_buf.b, OS_BUF_LEN, OS_FILL_CHUNK) !=
                CORE_OK) {
                core_rng_os_wipe();
                return CORE_ERNG;
            }
            tl_buf.pos = 0;
        }
        size_t take = OS_BUF_LEN - tl_buf.pos;
        if (take > len)
            take = len;
        memcpy(buf, tl_buf.b + tl_buf.pos, take);
        wipe(tl_buf.b + tl_buf.pos, take); /* consumed bytes never linger */
        tl_buf.pos += take;
        buf += take;
        len -= take;
    }
    return CORE_OK;
}

static const struct core_rng os_rng = {.fill = os_fill, .self = NULL};

const struct core_rng *core_rng_os(void)
{
    (void)pthread_once(&atfork_once, atfork_register);
    return &os_rng;
}

core_err core_rng_bytes(const struct core_rng *rng, void *buf, size_t len)
{
    if (len == 0)
        return CORE_OK;
    if (!rng || !rng->fill || !buf)
        return CORE_EINVAL;
    return rng->fill(rng->self, buf, len) == CORE_OK ? CORE_OK : CORE_ERNG;
}

core_err core_rng_u64(const struct core_rng *rng, uint64_t *out)
{
    uint64_t v;

    if (!out)
        return CORE_EINVAL;
    if (rng == &os_rng && atfork_ok && tl_buf.pos <= OS_BUF_LEN - sizeof(v)) {
        /* the samplers' hot path: exactly the bytes os_fill would hand out, without the
         * indirect call and the loop */
        memcpy(&v, tl_buf.b + tl_buf.pos, sizeof(v));
        wipe(tl_buf.b + tl_buf.pos, sizeof(v));
        tl_buf.pos += sizeof(v);
        *out = v;
        return CORE_OK;
    }
    core_err rc = core_rng_bytes(rng, &v, sizeof(v));
    if (rc != CORE_OK)
        return rc;
    *out = v;
    return CORE_OK;
}

/* Exact rejection (NOISE.md §4.3): thr = 2^64 mod n; the accepted range [thr, 2^64) has a
 * size that is a multiple of n, so r mod n is exactly uniform. */
core_err core_rng_u64_below(const struct core_rng *rng, uint64_t n, uint64_t *out)
{
    if (n == 0 || !out)
        return CORE_EINVAL;
    return core_rng_u64_below_thr(rng, n, (0 - n) % n, out);
}

core_err core_rng_u128_below(const struct core_rng *rng, core_u128 n, core_u128 *out)
{
    if (n == 0 || !out)
        return CORE_EINVAL;
    if (n <= UINT64_MAX) {
        uint64_t r;
        core_err rc = core_rng_u64_below(rng, (uint64_t)n, &r);
        if (rc == CORE_OK)
            *out = r;
        return rc;
    }
    core_u128 thr = (0 - n) % n;
    for (;;) {
        uint64_t hi, lo;
        core_err rc = core_rng_u64(rng, &hi);
        if (rc == CORE_OK)
            rc = core_rng_u64(rng, &lo);
        if (rc != CORE_OK)
            return rc;
        core_u128 r = ((core_u128)hi << 64) | lo;
        if (r >= thr) {
            *out = r % n;
            return CORE_OK;
        }
    }
}
