/* seeded_rng.h - deterministic and fault-injecting randomness for tests ONLY.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Lives in tests/support (library gcdp_test_support), which is never linked into gcdp:
 * product code can only obtain core_rng_os() (DESIGN §7.6, STYLE P10).
 * Thread-safety: one ts_rng per thread.
 */
#ifndef GCDP_SEEDED_RNG_H
#define GCDP_SEEDED_RNG_H

#include <stddef.h>
#include <stdint.h>

#include "core/dp_rng.h"

struct ts_rng;

/* ChaCha20 (RFC 8439, libsodium) keystream keyed by a fixed public test key derived from
 * seed: a deterministic, statistically perfect stream (NOISE.md §6: CI runs are
 * deterministic). New object; free with ts_rng_free(). */
struct ts_rng *ts_rng_seeded_new(uint64_t seed);

/* Serves exactly the given bytes (copied), then fails with CORE_ERNG. */
struct ts_rng *ts_rng_script_new(const uint8_t *bytes, size_t len);

/* Seeded stream that fails with CORE_ERNG once ok_bytes bytes have been served. */
struct ts_rng *ts_rng_failing_new(uint64_t seed, size_t ok_bytes);

/* The core_rng interface of r (valid until ts_rng_free(r)). */
const struct core_rng *ts_rng_iface(struct ts_rng *r);

/* Bytes served so far. */
uint64_t ts_rng_served(const struct ts_rng *r);

void ts_rng_free(struct ts_rng *r);

#endif /* GCDP_SEEDED_RNG_H */
