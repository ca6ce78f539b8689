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
 * EFAULT, EAGAIN, a zero-length read) is CORE_ERNG. Requests are split in <= 256-byte
 * chunks, which the kernel never interrupts once the pool is initialised. */
static inline core_err core__getrandom_fill(core__getrandom_fn sys, uint8_t *buf, size_t len)
{
    size_t done = 0;
    unsigned spins = 0;

    while (done < len) {
        size_t want = len - done;
        if (want > 256)
            want = 256;
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

#endif /* CORE_DP_GETRANDOM_H */
