/* sim/gen.h - pure generator of Intel-Lab-like mote readings (no I/O, no clock).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Model (all choices are ours; the issue text only names the ingredients):
 *   Channels c in {temperature, humidity, light, voltage}. For device m at tick k:
 *     latent  x_m(k) = x_m(k) W_m^r + z_m(k)                 (linear Gaussian SEM, row vector,
 *                                                             edge i->j has weight W[i][j],
 *                                                             as DESIGN §6 "X = XW + Z")
 *     z_m(k)  = a z_{m-1}(k - lag) + sqrt(1 - a^2) u_m(k)    (spatial: mote m-1 is m's
 *                                                             neighbour; mote 0 has a = 0)
 *     u_m(k)  = phi u_m(k-1) + sqrt(1 - phi^2) e_m(k),  e ~ N(0, I)   (temporal AR(1))
 *   so every z_m(k) is N(0, I) and Cov(x_m) = (I - W_m)^-T (I - W_m)^-1 exactly.
 *   W^r (regime r = 0 before the regime change, 1 after) is a random DAG over the four
 *   channels: a random topological order, each ordered pair an edge with probability
 *   edge_prob (at least two edges), weight magnitude U[0.3, 0.8], random sign.
 *   W_m^r = W^r + N(0, hetero_sd^2) on W^r's edges only (like Fed-Sparse-BNSL B.1.2).
 *   Physical value = base_c + offset_{m,c} + amp_c * diurnal_c(ts) + scale_c * x_c,
 *   clamped to a plausible range (sim_gen_channel_info); see docs/simulator.md.
 *
 * Memory is allocated once in sim_gen_new; sim_gen_tick allocates nothing.
 * Thread-safety: a struct sim_gen is used by one thread at a time.
 */
#ifndef SIM_GEN_H
#define SIM_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

#define SIM_NCH      4
#define SIM_NREGIMES 2

enum sim_channel { SIM_CH_TEMPERATURE, SIM_CH_HUMIDITY, SIM_CH_LIGHT, SIM_CH_VOLTAGE };

/* Fixed per-channel constants of the physical mapping (public, documented). */
struct sim_channel_info {
    const char *name; /* "temperature" ... */
    double base;      /* mean level */
    double offset_sd; /* sd of the per-device offset */
    double amp;       /* diurnal amplitude */
    double scale;     /* multiplies the SEM latent */
    double lo, hi;    /* clamp range */
};
/* The built-in info for channel c < SIM_NCH; NULL otherwise. Static storage. */
const struct sim_channel_info *sim_gen_channel_info(size_t c);
/* Index of the channel named name, or -1. */
int sim_gen_channel_index(const char *name);

struct sim_gen_params {
    size_t devices; /* >= 1 */
    uint64_t seed;
    double edge_prob;        /* (0, 1]; default 0.6 */
    double hetero_sd;        /* >= 0; default 0.1 */
    double spatial_coupling; /* a in [0, 1) */
    unsigned spatial_lag;    /* 0..SIM_GEN_MAX_LAG ticks */
    double ar;               /* phi in [0, 1) */
    uint64_t noise_seed;     /* 0: the noise stream follows seed; else it is seeded from this,
                              * so the same model (DAG, device weights and offsets) yields
                              * independent readings (public pilot data) */
    /* Per-channel physical mapping; sim_gen_params_default() copies the built-in table
     * (sim_gen_channel_info()). base, amp finite; offset_sd, scale >= 0; lo < hi; the
     * name is not read (channels keep their built-in names and order). */
    struct sim_channel_info ch[SIM_NCH];
};
#define SIM_GEN_MAX_LAG 64
void sim_gen_params_default(struct sim_gen_params *p);

struct sim_gen;

/* New generator. out: new; caller frees with sim_gen_free(). CORE_EINVAL on bad params. */
CORE_MUST_CHECK core_err sim_gen_new(const struct sim_gen_params *p, struct sim_gen **out);
void sim_gen_free(struct sim_gen *g); /* NULL-safe */

/* Generate one tick for every device.
 *   ts_ms   the tick's timestamp (epoch ms; drives the diurnal terms)
 *   days    days since the start of the run (drives the battery discharge)
 *   regime  0 or 1
 *   values  out: devices x SIM_NCH physical values, row-major, caller-allocated.
 * The latent x of this tick is then available from sim_gen_latent(). */
void sim_gen_tick(struct sim_gen *g, int64_t ts_ms, double days, unsigned regime, double *values);

/* Latent x of the last tick: devices x SIM_NCH, row-major; borrowed, valid until the next
 * tick or free. */
const double *sim_gen_latent(const struct sim_gen *g);

size_t sim_gen_devices(const struct sim_gen *g);
/* The channel mapping g uses (SIM_NCH entries, sim_gen_params.ch); borrowed from g. */
const struct sim_channel_info *sim_gen_channels(const struct sim_gen *g);

/* Weights of regime r: device == SIZE_MAX gives the shared W^r, else W_device^r.
 *   w  out: SIM_NCH x SIM_NCH row-major, w[i*SIM_NCH+j] = weight of edge i -> j. */
void sim_gen_weights(const struct sim_gen *g, unsigned r, size_t device, double *w);

/* Topological order of regime r's DAG (a permutation of 0..SIM_NCH-1). */
void sim_gen_order(const struct sim_gen *g, unsigned r, size_t order[SIM_NCH]);

/* Per-device offsets (SIM_NCH values) added to the base levels. */
void sim_gen_offsets(const struct sim_gen *g, size_t device, double off[SIM_NCH]);

/* Covariance implied by weights w (SIM_NCH x SIM_NCH): (I-W)^-T (I-W)^-1, into cov.
 * Pure; w must be a DAG (nilpotent), which makes (I-W)^-1 = sum_{k<SIM_NCH} W^k. */
void sim_gen_implied_cov(const double *w, double *cov);

/* Diurnal shape in [-1, 1] for channel c at ts_ms (UTC). Temperature peaks at 15:00,
 * humidity is its mirror, light is max(0, sin) peaking at 12:00, voltage has none. */
double sim_gen_diurnal(size_t c, int64_t ts_ms);

#endif /* SIM_GEN_H */
