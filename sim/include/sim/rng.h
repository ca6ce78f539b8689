/* sim/rng.h - seeded pseudo-random generator for SYNTHETIC data only (xoshiro256**).
 * SPDX-License-Identifier: Apache-2.0
 *
 * This is not a privacy noise source: DP noise comes from the CSPRNG in core (DESIGN §7.6).
 * The simulator needs reproducibility from --seed, which is exactly what a CSPRNG must
 * not give. State is seeded with splitmix64 (Vigna's recommended seeding); normals by
 * Box-Muller (both outputs used).
 * Thread-safety: a struct sim_rng is plain caller-owned state; one per thread.
 */
#ifndef SIM_RNG_H
#define SIM_RNG_H

#include <stdbool.h>
#include <stdint.h>

struct sim_rng {
    uint64_t s[4];
    double spare; /* second Box-Muller output */
    bool has_spare;
};

/* Seed from a 64-bit value (any value, including 0). */
void sim_rng_seed(struct sim_rng *r, uint64_t seed);
/* Next 64 uniformly distributed bits. */
uint64_t sim_rng_next(struct sim_rng *r);
/* Uniform double in [0, 1) with 53 random bits. */
double sim_rng_uniform(struct sim_rng *r);
/* Uniform integer in [0, n) (n >= 1), without modulo bias. */
uint64_t sim_rng_below(struct sim_rng *r, uint64_t n);
/* Standard normal N(0, 1). */
double sim_rng_normal(struct sim_rng *r);
/* splitmix64 step: derive independent sub-seeds (e.g. one stream per device). */
uint64_t sim_splitmix64(uint64_t *state);

#endif /* SIM_RNG_H */
