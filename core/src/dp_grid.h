/* dp_grid.h - core-internal: the public power-of-two grid of NOISE.md §4.5 (exact
 * ceil/floor log2, rounding an input to the grid), shared by dp_mech.c and its tests (T1.1,
 * T1.2).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef CORE_DP_GRID_H
#define CORE_DP_GRID_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define TWO62 0x1p62

/* ---- grid helpers (NOISE.md §4.5 steps 2 and 4) ---- */

/* ceil(log2(b)) exactly for finite b > 0: b = m 2^E with m in [0.5, 1). */
static inline int ceil_log2(double b)
{
    int e;
    double m = frexp(b, &e);
    return m == 0.5 ? e - 1 : e;
}

/* floor(log2(b)) exactly for finite b > 0. */
static inline int floor_log2(double b)
{
    int e;
    (void)frexp(b, &e);
    return e - 1;
}

/* The grid must hold every clamped input: |x| / g < 2^62 (checked on public bound only),
 * and every output (n_x + z) g with |n_x + z| < 2^63 must be a finite double: k <= 960. */
#define K_MAX 960

/* 2^e as a double, for -1022 <= e <= 1023 (a normal number), built from its bits.
 * x * pow2(e) is the correctly rounded value of the exact product x 2^e, i.e. exactly
 * ldexp(x, e) (the same real number, rounded once), without the libm call. */
static inline double pow2(int e)
{
    uint64_t bits = (uint64_t)(e + 1023) << 52;
    double d;
    memcpy(&d, &bits, sizeof(d));
    return d;
}

/* ldexp(x, e) for -1022 <= e <= 1022 (what the grid uses: k in [-1022, 960]). */
static inline double ldexp_grid(double x, int e)
{
    return x * pow2(e);
}

static inline int bound_fits(double bound, int k)
{
    return k <= K_MAX && (k >= -1022 ? ldexp_grid(bound, -k) : ldexp(bound, -k)) < TWO62;
}

/* Rounded grid index of a clamped input; |result| < 2^62 by bound_fits. */
static inline int64_t grid_index(double x, double bound, int k)
{
    double xc = x < -bound ? -bound : (x > bound ? bound : x);
    return (int64_t)nearbyint(ldexp_grid(xc, -k));
}

#endif /* CORE_DP_GRID_H */
