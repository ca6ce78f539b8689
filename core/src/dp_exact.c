/* dp_exact.c - exact integer samplers of Canonne, Kamath & Steinke (2020), "The Discrete
 * Gaussian for Differential Privacy" (CKS20), as specified in NOISE.md §4.4. No floating
 * point: every probability is an exact rational of 128-bit integers.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "core/dp_exact.h"

#include <string.h>

#include "dp_exact_internal.h"

#define U128_MAX  (~(core_u128)0)
#define DEN_LIMIT ((core_u128)1 << 100)

/* Random bits for one sampler call ("keep the bit position per release", NOISE.md §4.3):
 * one 64-bit draw serves 64 fair bits; the word is wiped when the call ends. */
struct bitpool {
    const struct core_rng *rng;
    uint64_t w;
    unsigned left;
};

static inline __attribute__((always_inline)) core_err pool_bit(struct bitpool *p, unsigned *bit)
{
    if (p->left == 0) {
        core_err rc = core_rng_u64(p->rng, &p->w);
        if (rc != CORE_OK)
            return rc;
        p->left = 64;
    }
    *bit = (unsigned)(p->w & 1);
    p->w >>= 1;
    p->left--;
    return CORE_OK;
}

static void pool_wipe(struct bitpool *p)
{
    p->w = 0;
    p->left = 0;
    __asm__ __volatile__("" : : "r"(&p->w) : "memory"); /* the store is not elided */
}

/* Bernoulli(num/den) exactly, by comparing the bits of a uniform U in [0,1) with the binary
 * expansion of num/den (long division, exact in 128 bits since den < 2^100): the first
 * differing bit decides U < num/den. Expected 2 random bits instead of a 64/128-bit
 * uniform; P(U == num/den) = 0, so stopping when the expansion ends is exact.
 * Performance: when den < 2^63 (every Laplace draw: den = t <= 2^42, and k t in
 * bern_exp1) the same long division runs in 64-bit registers; it consumes exactly the same
 * random bits and returns exactly the same result as the 128-bit loop. */
static inline __attribute__((always_inline)) core_err pool_bern_rat(void *ctx, core_u128 num,
                                                                    core_u128 den, bool *out)
{
    struct bitpool *p = ctx;

    if ((uint64_t)(den >> 63) == 0) { /* den < 2^63: same checks and loop in 64 bits */
        uint64_t rem = (uint64_t)num, d = (uint64_t)den;
        if (d == 0 || num > den)
            return CORE_EINVAL;
        if (rem == d) {
            *out = true;
            return CORE_OK;
        }
        /* rem < d < 2^63: rem << 1 fits */
        for (;;) {
            unsigned ub;
            if (rem == 0) {
                *out = false;
                return CORE_OK;
            }
            rem <<= 1;
            unsigned pb = rem >= d;
            if (pb)
                rem -= d;
            core_err rc = pool_bit(p, &ub);
            if (rc != CORE_OK)
                return rc;
            if (ub != pb) {
                *out = ub < pb;
                return CORE_OK;
            }
        }
    }
    if (num > den || den >= DEN_LIMIT)
        return CORE_EINVAL;
    if (num == den) {
        *out = true;
        return CORE_OK;
    }
    core_u128 rem = num;
    for (;;) {
        unsigned ub;
        if (rem == 0) {
            *out = false;
            return CORE_OK;
        }
        rem <<= 1;
        unsigned pb = rem >= den;
        if (pb)
            rem -= den;
        core_err rc = pool_bit(p, &ub);
        if (rc != CORE_OK)
            return rc;
        if (ub != pb) {
            *out = ub < pb;
            return CORE_OK;
        }
    }
}

core_err core_dp_bern_rat(const struct core_rng *rng, core_u128 num, core_u128 den, bool *out)
{
    struct bitpool p = {.rng = rng};

    if (!rng || den == 0 || num > den || den >= DEN_LIMIT || !out)
        return CORE_EINVAL;
    core_err rc = pool_bern_rat(&p, num, den, out);
    pool_wipe(&p);
    return rc;
}

/* The Bernoulli(num/den) oracle of the algebra below. The algebra is written once, as
 * always-inline functions taking the oracle as a parameter: core__dp_bern_exp_src (the
 * tests' entry point, T1.5) passes src->bern_rat, and the samplers pass pool_bern_rat
 * directly, which the compiler then calls without an indirect jump. Same code, same
 * random bits either way. */
typedef core_err bern_rat_fn(void *ctx, core_u128 num, core_u128 den, bool *out);

/* CKS20 Alg. 1 (first half), NOISE.md §4.4 item 2: Bernoulli(exp(-a/b)) for 0 <= a <= b.
 * Von Neumann's series: the loop stops at the first k with not Bernoulli(a/(b k)); the
 * probability that it stops at an odd k is exp(-a/b). */
static inline __attribute__((always_inline)) core_err bern_exp1(bern_rat_fn *bern_rat, void *ctx,
                                                                core_u128 a, core_u128 b, bool *out)
{
    core_u128 k = 1;

    for (;;) {
        bool more;
        core_u128 bk;
        if (__builtin_mul_overflow(b, k, &bk))
            return CORE_ENUMERIC; /* b k overflow: probability < 1/(2^27)! for b < 2^100 */
        core_err rc = bern_rat(ctx, a, bk, &more);
        if (rc != CORE_OK)
            return rc;
        if (!more) {
            *out = (k & 1) != 0;
            return CORE_OK;
        }
        k++;
    }
}

/* CKS20 Alg. 1 (second half), NOISE.md §4.4 item 3: exp(-num/den) = exp(-1)^q exp(-r/den)
 * with q = num / den, r = num % den; stops at the first failing factor. */
static inline __attribute__((always_inline)) core_err
bern_exp(bern_rat_fn *bern_rat, void *ctx, core_u128 num, core_u128 den, bool *out)
{
    bool ok = true;
    core_u128 q, r;

    if (den == 0 || den >= DEN_LIMIT || !out)
        return CORE_EINVAL;
    if (num < den) { /* the Laplace case (num = u < t = den): no 128-bit division */
        q = 0;
        r = num;
    } else if (num <= UINT64_MAX) {
        q = (uint64_t)num / (uint64_t)den;
        r = (uint64_t)num % (uint64_t)den;
    } else {
        q = num / den;
        r = num % den;
    }
    for (core_u128 i = 0; i < q; i++) {
        core_err rc = bern_exp1(bern_rat, ctx, 1, 1, &ok);
        if (rc != CORE_OK)
            return rc;
        if (!ok) {
            *out = false;
            return CORE_OK;
        }
    }
    core_err rc = bern_exp1(bern_rat, ctx, r, den, &ok);
    if (rc == CORE_OK)
        *out = ok;
    return rc;
}

core_err core__dp_bern_exp_src(const struct core__bern_src *src, core_u128 num, core_u128 den,
                               bool *out)
{
    if (!src)
        return CORE_EINVAL;
    return bern_exp(src->bern_rat, src->ctx, num, den, out);
}

core_err core_dp_bern_exp(const struct core_rng *rng, core_u128 num, core_u128 den, bool *out)
{
    struct bitpool p = {.rng = rng};
    if (!rng)
        return CORE_EINVAL;
    core_err rc = bern_exp(pool_bern_rat, &p, num, den, out);
    pool_wipe(&p);
    return rc;
}

/* NOISE.md §4.4 item 4: V counts the successes of Bernoulli(exp(-1)) before the first
 * failure, so P(V = v) = (1 - e^-1) e^-v. */
static core_err geom_e1(struct bitpool *p, uint64_t *out)
{
    uint64_t v = 0;

    for (;;) {
        bool ok;
        core_err rc = bern_exp(pool_bern_rat, p, 1, 1, &ok);
        if (rc != CORE_OK)
            return rc;
        if (!ok)
            break;
        if (++v > (uint64_t)CORE_DP_MAX_NOISE)
            return CORE_ENUMERIC;
    }
    *out = v;
    return CORE_OK;
}

core_err core_dp_geom_e1(const struct core_rng *rng, uint64_t *out)
{
    struct bitpool p = {.rng = rng};
    if (!rng || !out)
        return CORE_EINVAL;
    core_err rc = geom_e1(&p, out);
    pool_wipe(&p);
    return rc;
}

/* CKS20 Alg. 2 with integer scale t (NOISE.md §4.4 item 5): the magnitude m = u + t v has
 * P(m) proportional to exp(-u/t) exp(-v) = exp(-m/t); a random sign, rejecting (-, 0) so
 * that zero is not counted twice. */
static core_err dlap(struct bitpool *p, uint64_t t, int64_t *out)
{
    const uint64_t thr = (0 - t) % t; /* core_rng_u64_below's threshold, once per call */
    for (;;) {
        uint64_t u, v;
        unsigned sign;
        bool keep;
        core_err rc = core_rng_u64_below_thr(p->rng, t, thr, &u);
        if (rc == CORE_OK)
            rc = bern_exp(pool_bern_rat, p, u, t, &keep);
        if (rc != CORE_OK)
            return rc;
        if (!keep)
            continue;
        rc = geom_e1(p, &v);
        if (rc == CORE_OK)
            rc = pool_bit(p, &sign);
        if (rc != CORE_OK)
            return rc;
        core_u128 m = (core_u128)u + (core_u128)t * v;
        if (m > (core_u128)CORE_DP_MAX_NOISE)
            return CORE_ENUMERIC;
        if (sign && m == 0)
            continue;
        *out = sign ? -(int64_t)m : (int64_t)m;
        return CORE_OK;
    }
}

core_err core_dp_dlap(const struct core_rng *rng, uint64_t t, int64_t *out)
{
    struct bitpool p = {.rng = rng};
    if (!rng || !out || t == 0 || t > ((uint64_t)1 << 42))
        return CORE_EINVAL;
    core_err rc = dlap(&p, t, out);
    pool_wipe(&p);
    return rc;
}

/* floor(sqrt(s)) exactly, by the bitwise integer method (no floating point). */
static uint64_t isqrt_u64(uint64_t s)
{
    uint64_t r = 0;
    uint64_t bit = (uint64_t)1 << 62;

    while (bit > s)
        bit >>= 2;
    while (bit != 0) {
        if (s >= r + bit) {
            s -= r + bit;
            r = (r >> 1) + bit;
        } else {
            r >>= 1;
        }
        bit >>= 2;
    }
    return r;
}

/* CKS20 Alg. 3 (NOISE.md §4.4 item 6): propose c ~ DLap(t), t = floor(sigma) + 1, accept with
 * probability exp(-(|c| - sigma^2/t)^2 / (2 sigma^2)) = exp(-(|c| t - S)^2 / (2 S t^2)). */
static core_err dgauss(struct bitpool *p, uint64_t S, int64_t *out)
{
    uint64_t t = isqrt_u64(S) + 1;
    core_u128 den = (core_u128)2 * S * t * t;
    for (;;) {
        int64_t c;
        bool keep;
        core_err rc = dlap(p, t, &c);
        if (rc != CORE_OK)
            return rc;
        uint64_t mag = c < 0 ? (uint64_t)0 - (uint64_t)c : (uint64_t)c;
        if (mag > ((uint64_t)1 << 40))
            return CORE_ENUMERIC;
        core_u128 ct = (core_u128)mag * t;
        core_u128 diff = ct >= S ? ct - S : (core_u128)S - ct;
        rc = bern_exp(pool_bern_rat, p, diff * diff, den, &keep);
        if (rc != CORE_OK)
            return rc;
        if (keep) {
            *out = c;
            return CORE_OK;
        }
    }
}

core_err core_dp_dgauss(const struct core_rng *rng, uint64_t S, int64_t *out)
{
    struct bitpool p = {.rng = rng};
    if (!rng || !out || S == 0 || S > ((uint64_t)1 << 44))
        return CORE_EINVAL;
    core_err rc = dgauss(&p, S, out);
    pool_wipe(&p);
    return rc;
}
