/* core/prng.h - seeded pseudo-random generator for SYNTHETIC data only (xoshiro256**).
 * SPDX-License-Identifier: Apache-2.0
 *
 * This is not a privacy noise source: DP noise comes from the CSPRNG in core (DESIGN §7.6).
 * The simulator and the SEM generator (gcdp sem-gen) need reproducibility from --seed, which is
 * exactly what a CSPRNG must not give. State is seeded with splitmix64 (Vigna's recommended
 * seeding); normals by Box-Muller (both outputs used). Thread-safety: a struct core_prng is plain
 * caller-owned state; one per thread.
 */
#ifndef CORE_PRNG_H
#define CORE_PRNG_H

#include <stdbool.h>
#include <stdint.h>

struct core_prng {
    uint64_t s[4];
    double spare; /* second Box-Muller output */
    bool has_spare;
};

/* Seed from a 64-bit value (any value, including 0). */
void core_prng_seed(struct core_prng *r, uint64_t seed);
/* Next 64 uniformly distributed bits. */
uint64_t core_prng_next(struct core_prng *r);
/* Uniform double in [0, 1) with 53 random bits. */
double core_prng_uniform(struct core_prng *r);
/* Uniform integer in [0, n) (n >= 1), without modulo bias. */
uint64_t core_prng_below(struct core_prng *r, uint64_t n);
/* Standard normal N(0, 1). */
double core_prng_normal(struct core_prng *r);
/* splitmix64 step: derive independent sub-seeds (e.g. one stream per device). */
uint64_t core_splitmix64(uint64_t *state);

#endif /* CORE_PRNG_H */
