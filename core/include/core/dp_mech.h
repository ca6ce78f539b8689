/* core/dp_mech.h - DP mechanisms on a public power-of-two grid with exact integer noise:
 * Laplace (NOISE.md §4.5), discrete Gaussian (§4.6), exponential mechanism and
 * permute-and-flip (§4.8).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Invariants (NOISE.md §4.1): the grid g = 2^k, the integer scale t or variance S depend
 * only on the public parameters passed to the *_params functions, never on data; every
 * output is ldexp(n_x + Z, k) with n_x the input rounded to the grid and Z an exact integer
 * draw; inputs are clamped to the public bound [-bound, bound] (part of the sensitivity
 * argument); parameters are never clamped. Fail closed: on any error the output array is
 * zeroed (explicit_bzero) and must not be published; NaN/Inf inputs are rejected before any
 * noise is drawn; -0.0 is canonicalised to +0.0.
 * Timing (§4.12): sampling time depends on the noise, not on x; callers that need it can
 * draw early and do only the adds on the release path (documented residual risk).
 *
 * Thread-safety: all functions are thread-safe if the rng is; params structs are plain
 * values, immutable after *_params returns.
 */
#ifndef CORE_DP_MECH_H
#define CORE_DP_MECH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dp_rng.h"
#include "core/err.h"

/* Accepted public parameter ranges (NOISE.md §4.11). */
#define CORE_DP_EPS_MIN   0x1p-40
#define CORE_DP_EPS_MAX   0x1p10
#define CORE_DP_DELTA_MIN 1e-300
#define CORE_DP_DELTA_MAX 0.5
/* Grid resolution: g = 2^(ceil(log2 b) - K) for Laplace (K lowered automatically, but never
 * below CORE_DP_LAP_K_MIN, when the bound needs it so that bound/g < 2^62). */
#define CORE_DP_LAP_K     40
#define CORE_DP_LAP_K_MIN 20

/* ---- Laplace on a grid (NOISE.md §4.5; SNG = Google "secure noise generation") ---- */

struct core_dp_lap {
    int k;        /* grid exponent, g = 2^k */
    uint64_t t;   /* integer scale in grid units: t = ceil((s/g + m)/eps), rounded up */
    double bound; /* public clamp |x| <= bound */
    double eps;   /* privacy parameter satisfied (t is rounded up, so the true eps <= this) */
};

/* Public calibration for noise of scale b = l1/eps on a vector whose L1 sensitivity is l1.
 *   l1        > 0, finite: sensitivity of the whole vector (a scalar: its sensitivity s).
 *   eps       in [CORE_DP_EPS_MIN, CORE_DP_EPS_MAX].
 *   bound     > 0, finite: public clamp bound B applied to every coordinate.
 *   n_coords  >= 1: how many coordinates may change between neighbours (the rounding slack
 *             of one grid step per changed coordinate is paid in t; 1 for a scalar).
 *   out       written on CORE_OK.
 * Returns CORE_OK, CORE_EINVAL (a parameter out of range or NaN; bound too large for the
 * grid, i.e. bound >= 2^62 * g with K = CORE_DP_LAP_K_MIN; grid exponent outside
 * [-1022, 960], i.e. l1/eps below ~2^-982 or above ~2^1000, where outputs could be
 * subnormal-gridded or overflow). */
CORE_MUST_CHECK core_err core_dp_lap_params(double l1, double eps, double bound, uint64_t n_coords,
                                            struct core_dp_lap *out);

/* y[i] = grid(clamp(x[i])) + g * dlap(t), independently for i < n (p from core_dp_lap_params).
 *   x  borrowed, n finite values (NaN/Inf -> CORE_EINVAL before any draw).
 *   y  caller-allocated n doubles; may alias x.
 * Returns CORE_OK, CORE_EINVAL, CORE_ERNG, CORE_ENUMERIC (noise overflow; not data dependent). */
CORE_MUST_CHECK core_err core_dp_lap_release(const struct core_rng *rng,
                                             const struct core_dp_lap *p, size_t n, const double *x,
                                             double *y);

/* The paper's release (gc-dp Sec. 4.5, Theorem 1): y_k = x_k + Lap(s_k/eps_k) with a
 * per-coordinate calibration core_dp_lap_params(s[k], eps[k], bound, 1). Coordinate k is
 * eps_k-DP for |x_k - x'_k| <= s_k; the caller checks and charges sum_k eps_k.
 * Arrays are borrowed and hold n values. Returns as core_dp_lap_release. */
CORE_MUST_CHECK core_err core_dp_lap_release_coords(const struct core_rng *rng, size_t n,
                                                    const double *x, const double *s,
                                                    const double *eps, double bound, double *y);

/* ---- Discrete Gaussian on a fine grid (NOISE.md §4.6, CKS20) ---- */

struct core_dp_gauss {
    int k;        /* grid exponent, g = 2^k, so sigma/g in [2^20, 2^21) */
    uint64_t S;   /* integer variance in grid units, S = ceil((sigma/g)^2) */
    double bound; /* public clamp |x| <= bound per coordinate */
    double sigma; /* effective standard deviation parameter sqrt(S) * g (informational) */
    double rho;   /* zCDP charge for the whole vector: Delta_int^2 / (2S), rounded up, with
                   * Delta_int = l2/g + sqrt(d) (rounded up) */
};

/* Calibration from a given sigma (DP-PGCD updates): computes the grid and the rho it costs.
 *   sigma > 0 finite; l2 > 0 finite: L2 sensitivity of the d-coordinate vector; d >= 1;
 *   bound > 0 finite with bound < 2^62 * g; grid exponent k in [-1022, 960].
 * Returns CORE_OK, CORE_EINVAL. */
CORE_MUST_CHECK core_err core_dp_gauss_params_sigma(double sigma, double l2, uint64_t d,
                                                    double bound, struct core_dp_gauss *out);

/* Calibration for a zCDP budget rho > 0: sigma_g = Delta_int / sqrt(2 rho), S = ceil(sigma_g^2);
 * out->rho <= rho. Returns CORE_OK, CORE_EINVAL. */
CORE_MUST_CHECK core_err core_dp_gauss_params_rho(double rho, double l2, uint64_t d, double bound,
                                                  struct core_dp_gauss *out);

/* (eps, delta) calibration by the analytic Gaussian mechanism (core/dp_calib.h) on the
 * rounded sensitivity l2 + g*sqrt(d), times a margin (1 + 2^-10) for the lattice effect
 * (NOISE.md §4.6 option ii). out->rho is also valid (zCDP route). eps in
 * [CORE_DP_EPS_MIN, CORE_DP_EPS_MAX], delta in [CORE_DP_DELTA_MIN, CORE_DP_DELTA_MAX].
 * Returns CORE_OK, CORE_EINVAL, CORE_ENUMERIC (calibration failed its post-check). */
CORE_MUST_CHECK core_err core_dp_gauss_params_agm(double eps, double delta, double l2, uint64_t d,
                                                  double bound, struct core_dp_gauss *out);

/* y[i] = grid(clamp(x[i])) + g * dgauss(S), i < n (n may be < d; it is the number of values
 * passed now). Same contract as core_dp_lap_release. */
CORE_MUST_CHECK core_err core_dp_gauss_release(const struct core_rng *rng,
                                               const struct core_dp_gauss *p, size_t n,
                                               const double *x, double *y);

/* ---- Selection: exponential mechanism / Gumbel-max, permute-and-flip (NOISE.md §4.8) ---- */

/* Largest n accepted by the selection functions. */
#define CORE_DP_SELECT_MAX_N ((size_t)1 << 24)

/* Exact exponential mechanism (= Gumbel-max argmax_i(q_i/scale + Gumbel)):
 * returns i with probability proportional to exp(q_i / scale'), where
 * q_i = nearbyint(score_i * 2^frac_bits) * 2^-frac_bits is the quantised score and
 * scale' >= scale is scale rounded up to a multiple of 2^-(32+frac_bits).
 * Exact: rejection with uniform proposals and exact Bernoulli(exp(-x)).
 *   n in [1, CORE_DP_SELECT_MAX_N]; score borrowed, finite, |score_i| * 2^frac_bits <= 2^40
 *   (clamp scores to public bounds first; out-of-range -> CORE_EINVAL, nothing drawn);
 *   scale > 0 finite; frac_bits in [0, 40]; out written on CORE_OK only.
 * Privacy: charge core_dp_em_eps(); argmin = pass negated scores.
 * Returns CORE_OK, CORE_EINVAL, CORE_ERNG, CORE_ENUMERIC. */
CORE_MUST_CHECK core_err core_dp_em_select(const struct core_rng *rng, size_t n,
                                           const double *score, double scale, int frac_bits,
                                           size_t *out);

/* Permute-and-flip (McKenna & Sheldon 2020): same quantisation and arguments; candidates are
 * visited in a uniformly random order without replacement and i is accepted with probability
 * exp((q_i - q_max)/scale'). eps-DP at the same eps as the EM but NOT bounded-range: under
 * zCDP charge eps^2/2. work: caller-allocated n size_t. Returns as core_dp_em_select. */
CORE_MUST_CHECK core_err core_dp_pf_select(const struct core_rng *rng, size_t n,
                                           const double *score, double scale, int frac_bits,
                                           size_t *work, size_t *out);

/* Pure-DP epsilon of core_dp_em_select / core_dp_pf_select, rounded up:
 * with quantised L-inf sensitivity u = ceil(sens * 2^f) + 1 units, range distance
 * r = u (monotone scores) or 2u, eps = r * 2^-f / scale. zCDP: core_dp_rho_em().
 *   sens >= 0 finite (L-inf sensitivity of the real scores). Returns CORE_OK, CORE_EINVAL. */
CORE_MUST_CHECK core_err core_dp_em_eps(double sens, double scale, int frac_bits, bool monotone,
                                        double *eps);

#endif /* CORE_DP_MECH_H */
