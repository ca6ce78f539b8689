/* dp_getrandom.h - core-internal: the getrandom(2) fill loop, parameterised by the syscall
 * so the tests can inject EINTR, short reads and ENOSYS (NOISE.md §4.3, T5) without any
 * seam existing in the production object: production code instantiates it with
 * getrandom() only, and no production function accepts another source.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef CORE_DP_GETRANDOM_H
#define CORE_DP_GETRANDOM_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/err.h"

typedef ssize_t (*core__getrandom_fn)(void *buf, size_t len, unsigned int flags);

/* Fill buf[0..len) completely: loop on short reads and EINTR; any other error (ENOSYS,
 * EFAULT, EAGAIN, a zero-length read) is CORE_ERNG. Requests are split in <= chunk-byte
 * pieces (1 <= chunk). */
static inline core_err core__getrandom_fill_chunked(core__getrandom_fn sys, uint8_t *buf,
                                                    size_t len, size_t chunk)
{
    size_t done = 0;
    unsigned spins = 0;

    if (chunk == 0)
        return CORE_ERNG;
    while (done < len) {
        size_t want = len - done;
        if (want > chunk)
            want = chunk;
        ssize_t got = sys(buf + done, want, 0);
        if (got < 0) {
            if (errno == EINTR && ++spins < 1000)
                continue;
            return CORE_ERNG;
        }
        if (got == 0 || (size_t)got > want)
            return CORE_ERNG;
        done += (size_t)got;
        spins = 0;
    }
    return CORE_OK;
}

/* The same with <= 256-byte requests, which the kernel never interrupts once the pool is
 * initialised (NOISE.md §4.3). */
static inline core_err core__getrandom_fill(core__getrandom_fn sys, uint8_t *buf, size_t len)
{
    return core__getrandom_fill_chunked(sys, buf, len, 256);
}

#endif /* CORE_DP_GETRANDOM_H */
