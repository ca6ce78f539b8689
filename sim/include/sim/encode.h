/* sim/encode.h - pure text helpers: gcdp.reading/1 JSON encoding with fault transforms. No I/O, no
 * clock (times: core/timefmt.h). SPDX-License-Identifier: Apache-2.0
 *
 * Thread-safety: reentrant.
 */
#ifndef SIM_ENCODE_H
#define SIM_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/prng.h"
#include "sim/gen.h"
#include "sim/sim.h"

/* Longest device id we generate or accept from a replay flag. */
#define SIM_MAX_DEVICE_ID 128

/* What a reading looks like before encoding. */
struct sim_reading {
    const char *device; /* borrowed */
    int64_t ts_ms;
    uint64_t seq;
    const char *const *names; /* channel names, n of them; borrowed */
    const double *values;     /* n values */
    size_t n;
};

/* Encode r as one gcdp.reading/1 JSON object (no newline), applying the message-level
 * fault (SIM_FAULT_OUT_OF_DOMAIN, _NONFINITE, _WRONG_TYPE, _UNKNOWN_CHANNEL,
 * _MALFORMED_JSON, _TRUNCATED, _OVERSIZE; any other value encodes the reading unchanged).
 *   rng             picks the channel / direction / cut point of a fault.
 *   oversize_bytes  an _OVERSIZE message is padded to oversize_bytes + 1 bytes.
 *   buf, cap        caller buffer; needs cap > oversize_bytes + 1 for _OVERSIZE.
 *   len             out: bytes written (a NUL follows them).
 * Returns CORE_OK, or CORE_ETOOBIG when cap is too small. */
CORE_MUST_CHECK core_err sim_encode_reading(const struct sim_reading *r, enum sim_fault fault,
                                            struct core_prng *rng, size_t oversize_bytes, char *buf,
                                            size_t cap, size_t *len);

/* Pick a fault kind for one reading: returns a kind with probability rates[kind], or
 * SIM_FAULT_COUNT (no fault) with probability 1 - sum(rates). Requires sum(rates) <= 1. */
enum sim_fault sim_fault_pick(struct core_prng *rng, const double rates[SIM_FAULT_COUNT]);

#endif /* SIM_ENCODE_H */
