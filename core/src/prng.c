/* prng.c - xoshiro256** (Blackman & Vigna 2018) seeded by splitmix64; Box-Muller normals. */
#include "core/prng.h"

#include <math.h>

uint64_t core_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void core_prng_seed(struct core_prng *r, uint64_t seed)
{
    uint64_t st = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = core_splitmix64(&st);
    r->has_spare = false;
    r->spare = 0.0;
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t core_prng_next(struct core_prng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;

    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double core_prng_uniform(struct core_prng *r)
{
    return (double)(core_prng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t core_prng_below(struct core_prng *r, uint64_t n)
{
    /* Rejection: discard the top partial bucket so every residue is equally likely. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do {
        x = core_prng_next(r);
    } while (x >= limit);
    return x % n;
}

double core_prng_normal(struct core_prng *r)
{
    double u1, u2, rad;

    if (r->has_spare) {
        r->has_spare = false;
        return r->spare;
    }
    do {
        u1 = core_prng_uniform(r);
    } while (u1 <= 0.0); /* log(0) guard */
    u2 = core_prng_uniform(r);
    rad = sqrt(-2.0 * log(u1));
    r->spare = rad * sin(2.0 * M_PI * u2);
    r->has_spare = true;
    return rad * cos(2.0 * M_PI * u2);
}
