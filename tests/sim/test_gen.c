/* test_gen.c - the pure generator: determinism, SEM ground truth, diurnal and spatial terms. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "core/prng.h"
#include "sim/gen.h"

static struct sim_gen *make(size_t devices, uint64_t seed, double ar, double coupling, unsigned lag)
{
    struct sim_gen_params p;
    struct sim_gen *g = NULL;
    sim_gen_params_default(&p);
    p.devices = devices;
    p.seed = seed;
    p.ar = ar;
    p.spatial_coupling = coupling;
    p.spatial_lag = lag;
    cr_assert_eq(sim_gen_new(&p, &g), CORE_OK);
    return g;
}

Test(sim_rng, same_seed_same_stream_and_normal_moments)
{
    struct core_prng a, b, c;
    double sum = 0.0, sq = 0.0;
    const int n = 200000;
    core_prng_seed(&a, 42);
    core_prng_seed(&b, 42);
    core_prng_seed(&c, 43);
    int differ = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = core_prng_next(&a);
        cr_assert_eq(x, core_prng_next(&b));
        differ += x != core_prng_next(&c);
    }
    cr_assert_gt(differ, 990);
    /* N = 200000 normals: |mean| < 5/sqrt(N) = 0.0112, |var - 1| < 5*sqrt(2/N) = 0.0158 */
    for (int i = 0; i < n; i++) {
        double z = core_prng_normal(&a);
        sum += z;
        sq += z * z;
    }
    cr_assert_lt(fabs(sum / n), 5.0 / sqrt(n));
    cr_assert_lt(fabs(sq / n - 1.0), 5.0 * sqrt(2.0 / n));
}

Test(sim_gen, same_seed_gives_identical_readings_other_seed_differs)
{
    struct sim_gen *a = make(6, 7, 0.8, 0.5, 2), *b = make(6, 7, 0.8, 0.5, 2);
    struct sim_gen *c = make(6, 8, 0.8, 0.5, 2);
    double va[6 * SIM_NCH], vb[6 * SIM_NCH], vc[6 * SIM_NCH];
    int differ = 0;
    for (int k = 0; k < 500; k++) {
        int64_t ts = 1793491200000LL + k * 60000LL;
        sim_gen_tick(a, ts, k / 1440.0, k >= 250, va);
        sim_gen_tick(b, ts, k / 1440.0, k >= 250, vb);
        sim_gen_tick(c, ts, k / 1440.0, k >= 250, vc);
        cr_assert_eq(memcmp(va, vb, sizeof(va)), 0, "tick %d differs for the same seed", k);
        differ += memcmp(va, vc, sizeof(va)) != 0;
    }
    cr_assert_eq(differ, 500);
    sim_gen_free(a);
    sim_gen_free(b);
    sim_gen_free(c);
}

Test(sim_gen, device_weights_do_not_depend_on_device_count)
{
    struct sim_gen *a = make(5, 99, 0.8, 0.5, 2), *b = make(50, 99, 0.8, 0.5, 2);
    double wa[SIM_NCH * SIM_NCH], wb[SIM_NCH * SIM_NCH], w0[SIM_NCH * SIM_NCH];
    for (unsigned r = 0; r < SIM_NREGIMES; r++) {
        sim_gen_weights(a, r, 3, wa);
        sim_gen_weights(b, r, 3, wb);
        cr_assert_eq(memcmp(wa, wb, sizeof(wa)), 0);
        /* heterogeneity lives on the shared DAG's edges only */
        sim_gen_weights(a, r, SIZE_MAX, w0);
        for (size_t i = 0; i < SIM_NCH * SIM_NCH; i++)
            cr_assert_eq(w0[i] == 0.0, wa[i] == 0.0);
    }
    sim_gen_free(a);
    sim_gen_free(b);
}

Test(sim_gen, dag_has_edges_along_its_order_and_regimes_differ)
{
    struct sim_gen *g = make(1, 3, 0.8, 0.5, 2);
    double w[SIM_NREGIMES][SIM_NCH * SIM_NCH];
    size_t order[SIM_NCH], pos[SIM_NCH];
    for (unsigned r = 0; r < SIM_NREGIMES; r++) {
        int edges = 0;
        sim_gen_weights(g, r, SIZE_MAX, w[r]);
        sim_gen_order(g, r, order);
        for (size_t k = 0; k < SIM_NCH; k++)
            pos[order[k]] = k;
        for (size_t i = 0; i < SIM_NCH; i++)
            for (size_t j = 0; j < SIM_NCH; j++)
                if (w[r][i * SIM_NCH + j] != 0.0) {
                    edges++;
                    cr_assert_lt(pos[i], pos[j], "edge against the topological order");
                    cr_assert_geq(fabs(w[r][i * SIM_NCH + j]), 0.3);
                    cr_assert_leq(fabs(w[r][i * SIM_NCH + j]), 0.8);
                }
        cr_assert_geq(edges, 2);
    }
    cr_assert_neq(memcmp(w[0], w[1], sizeof(w[0])), 0);
    sim_gen_free(g);
}

/* Sample covariance of device m's latent over n ticks in regime r vs (I-W)^-T (I-W)^-1.
 * Tolerance per entry: k_sd * sqrt(vif * (S_ii S_jj + S_ij^2) / n), the large-sample sd of
 * a Gaussian sample covariance, inflated by vif for autocorrelated samples. */
static void check_cov(struct sim_gen *g, size_t m, unsigned r, int n, double vif, double k_sd)
{
    size_t nd = sim_gen_devices(g);
    double *v = calloc(nd * SIM_NCH, sizeof(double));
    double sum[SIM_NCH] = {0}, cross[SIM_NCH * SIM_NCH] = {0}, w[SIM_NCH * SIM_NCH],
           implied[SIM_NCH * SIM_NCH];
    for (int k = 0; k < n; k++) {
        const double *x;
        sim_gen_tick(g, 1793491200000LL + (int64_t)k * 60000, 0.0, r, v);
        x = sim_gen_latent(g) + m * SIM_NCH;
        for (size_t i = 0; i < SIM_NCH; i++) {
            sum[i] += x[i];
            for (size_t j = 0; j < SIM_NCH; j++)
                cross[i * SIM_NCH + j] += x[i] * x[j];
        }
    }
    sim_gen_weights(g, r, m, w);
    sim_gen_implied_cov(w, implied);
    for (size_t i = 0; i < SIM_NCH; i++)
        for (size_t j = 0; j < SIM_NCH; j++) {
            double s = cross[i * SIM_NCH + j] / n - (sum[i] / n) * (sum[j] / n);
            double e = implied[i * SIM_NCH + j];
            double tol =
                k_sd *
                sqrt(vif * (implied[i * SIM_NCH + i] * implied[j * SIM_NCH + j] + e * e) / n);
            cr_assert_leq(fabs(s - e), tol, "cov[%zu][%zu] = %g, implied %g, tol %g", i, j, s, e,
                          tol);
        }
    free(v);
}

Test(sim_gen, sample_covariance_matches_sem_implied_covariance_iid)
{
    /* N = 200000 independent ticks (ar = 0, no coupling), 5 sd per entry */
    struct sim_gen *g = make(1, 11, 0.0, 0.0, 0);
    check_cov(g, 0, 0, 200000, 1.0, 5.0);
    sim_gen_free(g);
}

Test(sim_gen, sample_covariance_matches_implied_with_ar_and_spatial_coupling)
{
    /* N = 200000 ticks, phi = 0.8: variance inflation (1 + phi^2)/(1 - phi^2) = 4.56;
     * device 2 is coupled to device 1 (a = 0.5, lag 2); 5 sd per entry. */
    struct sim_gen *g = make(3, 12, 0.8, 0.5, 2);
    check_cov(g, 2, 0, 200000, (1 + 0.64) / (1 - 0.64), 5.0);
    sim_gen_free(g);
}

Test(sim_gen, regime_change_switches_to_the_second_sem)
{
    struct sim_gen *g = make(1, 13, 0.0, 0.0, 0);
    check_cov(g, 0, 1, 200000, 1.0, 5.0);
    sim_gen_free(g);
}

Test(sim_gen, neighbour_coupling_shows_at_the_configured_lag)
{
    /* The first channel of the topological order has no parents, so its latent is the
     * innovation z itself: corr(z_1(k), z_0(k - lag)) = a = 0.5, and 0 at other lags.
     * N = 100000 ticks, ar = 0: sd of a sample correlation <= 1/sqrt(N) = 0.0032; tol 0.02. */
    enum { N = 100000, LAG = 3 };
    struct sim_gen *g = make(2, 21, 0.0, 0.5, LAG);
    size_t order[SIM_NCH], c;
    double v[2 * SIM_NCH], *z0 = calloc(N, sizeof(double)), *z1 = calloc(N, sizeof(double));
    double s_lag = 0, s_off = 0, s00 = 0, s11 = 0;
    sim_gen_order(g, 0, order);
    c = order[0];
    for (int k = 0; k < N; k++) {
        sim_gen_tick(g, 0, 0.0, 0, v);
        z0[k] = sim_gen_latent(g)[c];
        z1[k] = sim_gen_latent(g)[SIM_NCH + c];
    }
    for (int k = LAG + 1; k < N; k++) {
        s_lag += z1[k] * z0[k - LAG];
        s_off += z1[k] * z0[k - LAG - 1];
        s00 += z0[k] * z0[k];
        s11 += z1[k] * z1[k];
    }
    cr_assert_float_eq(s_lag / sqrt(s00 * s11), 0.5, 0.02);
    cr_assert_float_eq(s_off / sqrt(s00 * s11), 0.0, 0.02);
    free(z0);
    free(z1);
    sim_gen_free(g);
}

Test(sim_gen, diurnal_trend_in_temperature_and_light)
{
    /* 10 simulated days at 1 reading/min, one device: afternoon (14-16 h UTC) minus night
     * (2-4 h) mean temperature is 2 * 3 C * ~0.97 = 5.8 C in expectation; require > 4 C.
     * Light at night is the base level only; at noon it adds up to 400 lux; require > 250. */
    struct sim_gen *g = make(1, 5, 0.8, 0.0, 0);
    double v[SIM_NCH], t_day = 0, t_night = 0, l_day = 0, l_night = 0;
    int n_day = 0, n_night = 0;
    for (int k = 0; k < 14400; k++) {
        int64_t ts = 1793491200000LL + (int64_t)k * 60000;
        int hour = (int)((ts / 3600000) % 24);
        sim_gen_tick(g, ts, k / 1440.0, 0, v);
        if (hour >= 14 && hour < 16) {
            t_day += v[SIM_CH_TEMPERATURE];
            n_day++;
        } else if (hour >= 2 && hour < 4) {
            t_night += v[SIM_CH_TEMPERATURE];
            l_night += v[SIM_CH_LIGHT];
            n_night++;
        }
        if (hour >= 11 && hour < 13)
            l_day += v[SIM_CH_LIGHT] / 1200.0; /* 10 days x 120 readings */
    }
    cr_assert_gt(t_day / n_day - t_night / n_night, 4.0);
    cr_assert_gt(l_day - l_night / n_night, 250.0);
    sim_gen_free(g);
}

Test(sim_gen, values_stay_inside_the_clamp_ranges)
{
    struct sim_gen *g = make(8, 6, 0.8, 0.5, 2);
    double v[8 * SIM_NCH];
    for (int k = 0; k < 5000; k++) {
        sim_gen_tick(g, 1793491200000LL + (int64_t)k * 60000, k / 1440.0, k > 2500, v);
        for (size_t i = 0; i < 8 * SIM_NCH; i++) {
            const struct sim_channel_info *ci = sim_gen_channel_info(i % SIM_NCH);
            cr_assert(isfinite(v[i]) && v[i] >= ci->lo && v[i] <= ci->hi);
        }
    }
    sim_gen_free(g);
}

Test(sim_gen, rejects_bad_parameters)
{
    struct sim_gen_params p;
    struct sim_gen *g = NULL;
    sim_gen_params_default(&p);
    p.spatial_coupling = 1.0;
    cr_assert_eq(sim_gen_new(&p, &g), CORE_EINVAL);
    sim_gen_params_default(&p);
    p.ar = NAN;
    cr_assert_eq(sim_gen_new(&p, &g), CORE_EINVAL);
    sim_gen_params_default(&p);
    p.devices = 0;
    cr_assert_eq(sim_gen_new(&p, &g), CORE_EINVAL);
    cr_assert_null(g);
}

/* sim_gen_params.ch replaces the physical mapping: with every scale, amplitude and offset sd
 * set to 0 a device reads exactly its channel's base; a bad entry is refused. */
Test(sim_gen, channel_params_replace_the_physical_mapping)
{
    struct sim_gen_params p;
    struct sim_gen *g = NULL;
    double v[3 * SIM_NCH];

    sim_gen_params_default(&p);
    p.devices = 3;
    for (size_t c = 0; c < SIM_NCH; c++) {
        cr_assert_eq(memcmp(&p.ch[c], sim_gen_channel_info(c), sizeof(p.ch[c])), 0);
        p.ch[c].scale = p.ch[c].amp = p.ch[c].offset_sd = 0.0;
        p.ch[c].base = 1.0 + (double)c;
    }
    p.ch[SIM_CH_VOLTAGE].base = 2.5;
    cr_assert_eq(sim_gen_new(&p, &g), CORE_OK);
    sim_gen_tick(g, 1793491200000LL + 13 * 3600000LL, 0.0, 0, v);
    for (size_t m = 0; m < 3; m++)
        for (size_t c = 0; c < SIM_NCH; c++)
            cr_assert_eq(v[m * SIM_NCH + c], c == SIM_CH_VOLTAGE ? 2.5 : 1.0 + (double)c);
    cr_assert_str_eq(sim_gen_channels(g)[SIM_CH_LIGHT].name, "light");
    sim_gen_free(g);
    p.ch[SIM_CH_LIGHT].scale = -1.0;
    cr_assert_eq(sim_gen_new(&p, &g), CORE_EINVAL);
    p.ch[SIM_CH_LIGHT].scale = 1.0;
    p.ch[SIM_CH_LIGHT].lo = p.ch[SIM_CH_LIGHT].hi;
    cr_assert_eq(sim_gen_new(&p, &g), CORE_EINVAL);
    cr_assert_eq(sim_gen_channel_index("humidity"), SIM_CH_HUMIDITY);
    cr_assert_eq(sim_gen_channel_index("co2"), -1);
}

/* noise_seed: the same model (DAG and device weights) with readings of its own. */
Test(sim_gen, noise_seed_keeps_the_model_and_changes_the_readings)
{
    struct sim_gen_params p;
    struct sim_gen *a = NULL, *b = NULL;
    double wa[SIM_NCH * SIM_NCH], wb[SIM_NCH * SIM_NCH], va[4 * SIM_NCH], vb[4 * SIM_NCH];
    int same = 0;

    sim_gen_params_default(&p);
    p.devices = 4;
    p.seed = 11;
    cr_assert_eq(sim_gen_new(&p, &a), CORE_OK);
    p.noise_seed = 99;
    cr_assert_eq(sim_gen_new(&p, &b), CORE_OK);
    for (size_t m = 0; m < 4; m++) {
        sim_gen_weights(a, 0, m, wa);
        sim_gen_weights(b, 0, m, wb);
        cr_assert_eq(memcmp(wa, wb, sizeof(wa)), 0, "device %zu: another model", m);
    }
    for (int k = 0; k < 50; k++) {
        sim_gen_tick(a, 1793491200000LL + k * 60000LL, 0.0, 0, va);
        sim_gen_tick(b, 1793491200000LL + k * 60000LL, 0.0, 0, vb);
        same += memcmp(va, vb, sizeof(va)) == 0;
    }
    cr_assert_eq(same, 0);
    sim_gen_free(a);
    sim_gen_free(b);
}
