/* gen.c - mote reading generator (model in sim/gen.h). Pure: allocation only in _new. */
#include "sim/gen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "core/prng.h"

/* Levels loosely after the Intel Berkeley Lab deployment (indoor office, Mica2Dot motes):
 * ~18-26 C, 30-50 %RH, 0-600 lux, 2.3-2.8 V batteries discharging over days. */
static const struct sim_channel_info channels[SIM_NCH] = {
    {"temperature", 21.0, 1.0, 3.0, 0.8, -10.0, 50.0},
    {"humidity", 40.0, 3.0, -6.0, 3.0, 0.0, 100.0},
    {"light", 60.0, 20.0, 400.0, 40.0, 0.0, 2000.0},
    {"voltage", 2.70, 0.03, 0.0, 0.01, 1.5, 3.5},
};
#define VOLTAGE_DROP_PER_DAY 0.02

struct sim_gen {
    size_t n;                  /* devices */
    double a, a_c, phi, phi_c; /* couplings and their complements */
    unsigned lag;
    size_t order[SIM_NREGIMES][SIM_NCH];
    double w[SIM_NREGIMES][SIM_NCH * SIM_NCH]; /* shared weights */
    double *wdev;                              /* n x SIM_NREGIMES x SIM_NCH^2 per-device weights */
    double *offset;                            /* n x SIM_NCH */
    double *u;                                 /* n x SIM_NCH AR(1) state */
    double *zhist;                             /* n x (lag+1) x SIM_NCH ring of innovations z */
    double *x;                                 /* n x SIM_NCH latent of the last tick */
    uint64_t tick;
    struct core_prng noise;
    struct sim_channel_info ch[SIM_NCH]; /* the physical mapping in use */
};

const struct sim_channel_info *sim_gen_channel_info(size_t c)
{
    return c < SIM_NCH ? &channels[c] : NULL;
}

int sim_gen_channel_index(const char *name)
{
    for (int c = 0; c < SIM_NCH; c++)
        if (name && strcmp(channels[c].name, name) == 0)
            return c;
    return -1;
}

const struct sim_channel_info *sim_gen_channels(const struct sim_gen *g)
{
    return g->ch;
}

void sim_gen_params_default(struct sim_gen_params *p)
{
    p->devices = 16;
    p->seed = 1;
    p->edge_prob = 0.6;
    p->hetero_sd = 0.1;
    p->spatial_coupling = 0.5;
    p->spatial_lag = 2;
    p->ar = 0.8;
    p->noise_seed = 0;
    memcpy(p->ch, channels, sizeof(p->ch));
}

/* One random DAG: random order (Fisher-Yates), Bernoulli(edge_prob) edges along it,
 * weights +-U[0.3, 0.8]; redrawn until it has at least two edges (bounded). */
static void draw_dag(struct core_prng *r, double edge_prob, size_t order[SIM_NCH], double *w)
{
    for (int attempt = 0; attempt < 1000; attempt++) {
        int edges = 0;
        for (size_t i = 0; i < SIM_NCH; i++)
            order[i] = i;
        for (size_t i = SIM_NCH - 1; i > 0; i--) {
            size_t j = (size_t)core_prng_below(r, i + 1), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        memset(w, 0, sizeof(double) * SIM_NCH * SIM_NCH);
        for (size_t a = 0; a < SIM_NCH; a++) {
            for (size_t b = a + 1; b < SIM_NCH; b++) {
                double mag, sign;
                if (!(core_prng_uniform(r) < edge_prob))
                    continue;
                mag = 0.3 + 0.5 * core_prng_uniform(r);
                sign = core_prng_uniform(r) < 0.5 ? -1.0 : 1.0;
                w[order[a] * SIM_NCH + order[b]] = sign * mag;
                edges++;
            }
        }
        if (edges >= 2)
            return;
    }
}

static core_err check_params(const struct sim_gen_params *p)
{
    if (p->devices < 1 || p->devices > 1000000)
        return CORE_EINVAL;
    if (!(p->edge_prob > 0.0 && p->edge_prob <= 1.0) || !(p->hetero_sd >= 0.0) ||
        !(p->spatial_coupling >= 0.0 && p->spatial_coupling < 1.0) ||
        !(p->ar >= 0.0 && p->ar < 1.0) || p->spatial_lag > SIM_GEN_MAX_LAG)
        return CORE_EINVAL;
    for (size_t c = 0; c < SIM_NCH; c++) {
        const struct sim_channel_info *ci = &p->ch[c];
        if (!isfinite(ci->base) || !isfinite(ci->amp) || !(ci->offset_sd >= 0.0) ||
            !isfinite(ci->offset_sd) || !(ci->scale >= 0.0) || !isfinite(ci->scale) ||
            !isfinite(ci->lo) || !isfinite(ci->hi) || !(ci->lo < ci->hi))
            return CORE_EINVAL;
    }
    return CORE_OK;
}

/* Per-device heterogeneity and offsets come from a stream derived from (seed, device), so
 * mote-7's weights do not depend on how many motes there are. */
static void init_device(struct sim_gen *g, const struct sim_gen_params *p, size_t m)
{
    uint64_t st = p->seed ^ (0xd1b54a32d192ed03ULL * (uint64_t)(m + 1));
    struct core_prng r;

    core_prng_seed(&r, core_splitmix64(&st));
    for (unsigned reg = 0; reg < SIM_NREGIMES; reg++) {
        double *wd = g->wdev + (m * SIM_NREGIMES + reg) * SIM_NCH * SIM_NCH;
        for (size_t k = 0; k < (size_t)SIM_NCH * SIM_NCH; k++)
            wd[k] = g->w[reg][k] != 0.0 ? g->w[reg][k] + p->hetero_sd * core_prng_normal(&r) : 0.0;
    }
    for (size_t c = 0; c < SIM_NCH; c++)
        g->offset[m * SIM_NCH + c] = g->ch[c].offset_sd * core_prng_normal(&r);
}

core_err sim_gen_new(const struct sim_gen_params *p, struct sim_gen **out)
{
    struct sim_gen *g;
    struct core_prng sr;
    uint64_t st = p->seed;
    size_t hist;

    if (check_params(p) != CORE_OK)
        return CORE_EINVAL;
    g = core_xcalloc(1, sizeof(*g));
    g->n = p->devices;
    memcpy(g->ch, p->ch, sizeof(g->ch));
    for (size_t c = 0; c < SIM_NCH; c++)
        g->ch[c].name = channels[c].name;
    g->a = p->spatial_coupling;
    g->a_c = sqrt(1.0 - g->a * g->a);
    g->phi = p->ar;
    g->phi_c = sqrt(1.0 - g->phi * g->phi);
    g->lag = p->spatial_lag;
    core_prng_seed(&sr, core_splitmix64(&st));
    for (unsigned reg = 0; reg < SIM_NREGIMES; reg++)
        draw_dag(&sr, p->edge_prob, g->order[reg], g->w[reg]);
    core_prng_seed(&g->noise, core_splitmix64(&st));
    if (p->noise_seed != 0) {
        uint64_t ns = p->noise_seed;
        core_prng_seed(&g->noise, core_splitmix64(&ns));
    }
    hist = (size_t)g->lag + 1;
    g->wdev = core_xcalloc(g->n * SIM_NREGIMES * SIM_NCH * SIM_NCH, sizeof(double));
    g->offset = core_xcalloc(g->n * SIM_NCH, sizeof(double));
    g->u = core_xcalloc(g->n * SIM_NCH, sizeof(double));
    g->zhist = core_xcalloc(g->n * hist * SIM_NCH, sizeof(double));
    g->x = core_xcalloc(g->n * SIM_NCH, sizeof(double));
    for (size_t m = 0; m < g->n; m++)
        init_device(g, p, m);
    /* Start every state in its stationary law N(0, 1) so there is no burn-in. */
    for (size_t i = 0; i < g->n * SIM_NCH; i++)
        g->u[i] = core_prng_normal(&g->noise);
    for (size_t i = 0; i < g->n * hist * SIM_NCH; i++)
        g->zhist[i] = core_prng_normal(&g->noise);
    *out = g;
    return CORE_OK;
}

void sim_gen_free(struct sim_gen *g)
{
    if (!g)
        return;
    free(g->wdev);
    free(g->offset);
    free(g->u);
    free(g->zhist);
    free(g->x);
    free(g);
}

double sim_gen_diurnal(size_t c, int64_t ts_ms)
{
    int64_t day_ms = 86400000;
    double h = (double)(((ts_ms % day_ms) + day_ms) % day_ms) / 3600000.0;
    switch (c) {
    case SIM_CH_TEMPERATURE:
    case SIM_CH_HUMIDITY: /* amp < 0 mirrors it */
        return sin(2.0 * M_PI * (h - 9.0) / 24.0);
    case SIM_CH_LIGHT:
        return fmax(0.0, sin(2.0 * M_PI * (h - 6.0) / 24.0));
    default:
        return 0.0;
    }
}

/* Innovation z_m(k) for all channels of device m, written into the ring slot of tick k. */
static void innovations(struct sim_gen *g, size_t m, double *z)
{
    size_t hist = (size_t)g->lag + 1;
    size_t slot_lag = (size_t)((g->tick + hist - g->lag) % hist);
    for (size_t c = 0; c < SIM_NCH; c++) {
        double *u = &g->u[m * SIM_NCH + c];
        *u = g->phi * *u + g->phi_c * core_prng_normal(&g->noise);
        if (m == 0) {
            z[c] = *u;
        } else {
            /* the neighbour's slot of tick k-lag; with lag 0 that is this tick, already
             * written because devices are generated in order */
            double nb = g->zhist[((m - 1) * hist + slot_lag) * SIM_NCH + c];
            z[c] = g->a * nb + g->a_c * *u;
        }
    }
}

void sim_gen_tick(struct sim_gen *g, int64_t ts_ms, double days, unsigned regime, double *values)
{
    size_t hist = (size_t)g->lag + 1, slot = (size_t)(g->tick % hist);
    unsigned reg = regime < SIM_NREGIMES ? regime : SIM_NREGIMES - 1;
    double shape[SIM_NCH];

    for (size_t c = 0; c < SIM_NCH; c++)
        shape[c] = sim_gen_diurnal(c, ts_ms);
    for (size_t m = 0; m < g->n; m++) {
        double *z = &g->zhist[(m * hist + slot) * SIM_NCH], *x = &g->x[m * SIM_NCH];
        const double *w = g->wdev + (m * SIM_NREGIMES + reg) * SIM_NCH * SIM_NCH;
        /* The neighbour's lagged slot must be read before this tick overwrites it when
         * lag > 0: innovations() reads slot (k-lag) of device m-1, a different row. */
        innovations(g, m, z);
        /* SEM in topological order: x_j = z_j + sum_i x_i W_ij (DESIGN §6, X = XW + Z). */
        for (size_t a = 0; a < SIM_NCH; a++) {
            size_t j = g->order[reg][a];
            double s = z[j];
            for (size_t b = 0; b < a; b++) {
                size_t i = g->order[reg][b];
                s += x[i] * w[i * SIM_NCH + j];
            }
            x[j] = s;
        }
        for (size_t c = 0; c < SIM_NCH; c++) {
            const struct sim_channel_info *ci = &g->ch[c];
            double v =
                ci->base + g->offset[m * SIM_NCH + c] + ci->amp * shape[c] + ci->scale * x[c];
            if (c == SIM_CH_VOLTAGE)
                v -= VOLTAGE_DROP_PER_DAY * days;
            values[m * SIM_NCH + c] = fmin(ci->hi, fmax(ci->lo, v));
        }
    }
    g->tick++;
}

const double *sim_gen_latent(const struct sim_gen *g)
{
    return g->x;
}

size_t sim_gen_devices(const struct sim_gen *g)
{
    return g->n;
}

void sim_gen_weights(const struct sim_gen *g, unsigned r, size_t device, double *w)
{
    unsigned reg = r < SIM_NREGIMES ? r : SIM_NREGIMES - 1;
    const double *src = device == SIZE_MAX || device >= g->n
                            ? g->w[reg]
                            : g->wdev + (device * SIM_NREGIMES + reg) * SIM_NCH * SIM_NCH;
    memcpy(w, src, sizeof(double) * SIM_NCH * SIM_NCH);
}

void sim_gen_order(const struct sim_gen *g, unsigned r, size_t order[SIM_NCH])
{
    unsigned reg = r < SIM_NREGIMES ? r : SIM_NREGIMES - 1;
    memcpy(order, g->order[reg], sizeof(size_t) * SIM_NCH);
}

void sim_gen_offsets(const struct sim_gen *g, size_t device, double off[SIM_NCH])
{
    memcpy(off, &g->offset[device * SIM_NCH], sizeof(double) * SIM_NCH);
}

void sim_gen_implied_cov(const double *w, double *cov)
{
    enum { D = SIM_NCH };
    double inv[D * D], pw[D * D], tmp[D * D];

    /* (I - W)^-1 = I + W + W^2 + ... + W^(D-1) for nilpotent W. */
    memset(inv, 0, sizeof(inv));
    memset(pw, 0, sizeof(pw));
    for (size_t i = 0; i < D; i++)
        inv[i * D + i] = pw[i * D + i] = 1.0;
    for (size_t k = 1; k < D; k++) {
        for (size_t i = 0; i < D; i++)
            for (size_t j = 0; j < D; j++) {
                double s = 0.0;
                for (size_t l = 0; l < D; l++)
                    s += pw[i * D + l] * w[l * D + j];
                tmp[i * D + j] = s;
            }
        memcpy(pw, tmp, sizeof(pw));
        for (size_t i = 0; i < (size_t)D * D; i++)
            inv[i] += pw[i];
    }
    /* Row-vector SEM x = z (I-W)^-1 with Cov(z) = I: Cov(x) = (I-W)^-T (I-W)^-1. */
    for (size_t i = 0; i < D; i++)
        for (size_t j = 0; j < D; j++) {
            double s = 0.0;
            for (size_t l = 0; l < D; l++)
                s += inv[l * D + i] * inv[l * D + j];
            cov[i * D + j] = s;
        }
}
