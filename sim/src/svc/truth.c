/* truth.c - ground-truth SEM JSON (see truth.h). */
#include "truth.h"

#include <stdio.h>
#include <string.h>

#include "core/mem.h"

static json_t *edges_json(const double *w)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < SIM_NCH; i++)
        for (size_t j = 0; j < SIM_NCH; j++) {
            if (w[i * SIM_NCH + j] == 0.0)
                continue;
            json_array_append_new(
                arr, json_pack("{s:s, s:s, s:f}", "from", sim_gen_channel_info(i)->name, "to",
                               sim_gen_channel_info(j)->name, "weight", w[i * SIM_NCH + j]));
        }
    return arr;
}

static json_t *matrix_json(const double *m)
{
    json_t *rows = json_array();
    for (size_t i = 0; i < SIM_NCH; i++) {
        json_t *row = json_array();
        for (size_t j = 0; j < SIM_NCH; j++)
            json_array_append_new(row, json_real(m[i * SIM_NCH + j]));
        json_array_append_new(rows, row);
    }
    return rows;
}

static json_t *regimes_json(const struct sim_gen *g, const struct sim_options *o)
{
    json_t *arr = json_array();
    for (unsigned r = 0; r < SIM_NREGIMES; r++) {
        double w[SIM_NCH * SIM_NCH], cov[SIM_NCH * SIM_NCH];
        size_t order[SIM_NCH];
        json_t *ord = json_array();
        sim_gen_weights(g, r, SIZE_MAX, w);
        sim_gen_order(g, r, order);
        sim_gen_implied_cov(w, cov);
        for (size_t k = 0; k < SIM_NCH; k++)
            json_array_append_new(ord, json_string(sim_gen_channel_info(order[k])->name));
        json_array_append_new(
            arr, json_pack("{s:i, s:o, s:o, s:o, s:o, s:o}", "regime", (json_int_t)r, "from_s",
                           r == 0 ? json_real(0.0)
                                  : (o->regime_change_at_s >= 0.0 ? json_real(o->regime_change_at_s)
                                                                  : json_null()),
                           "order", ord, "edges", edges_json(w), "weights", matrix_json(w),
                           "implied_cov", matrix_json(cov)));
    }
    return arr;
}

static json_t *devices_json(const struct sim_gen *g)
{
    json_t *arr = json_array();
    char id[32];
    for (size_t m = 0; m < sim_gen_devices(g); m++) {
        double off[SIM_NCH];
        json_t *offs = json_object(), *regs = json_array();
        sim_gen_offsets(g, m, off);
        for (size_t c = 0; c < SIM_NCH; c++)
            json_object_set_new(offs, sim_gen_channel_info(c)->name, json_real(off[c]));
        for (unsigned r = 0; r < SIM_NREGIMES; r++) {
            double w[SIM_NCH * SIM_NCH];
            sim_gen_weights(g, r, m, w);
            json_array_append_new(regs, edges_json(w));
        }
        snprintf(id, sizeof(id), "mote-%zu", m);
        json_array_append_new(arr, json_pack("{s:s, s:o, s:o}", "device", id, "offsets", offs,
                                             "edges_by_regime", regs));
    }
    return arr;
}

json_t *sim_truth_json(const struct sim_gen *g, const struct sim_options *o)
{
    json_t *chans = json_array();
    for (size_t c = 0; c < SIM_NCH; c++) {
        const struct sim_channel_info *ci = &sim_gen_channels(g)[c];
        json_array_append_new(chans,
                              json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:f}", "name", ci->name,
                                        "base", ci->base, "offset_sd", ci->offset_sd, "diurnal_amp",
                                        ci->amp, "scale", ci->scale, "lo", ci->lo, "hi", ci->hi));
    }
    return json_pack(
        "{s:s, s:I, s:I, s:s, s:o, s:{s:s, s:f, s:i}, s:f, s:f, s:o, s:o}", "schema",
        "gcdp.sim-truth/1", "seed", (json_int_t)o->seed, "devices", (json_int_t)o->devices, "model",
        "latent x = x W + z (edge from->to: x_to += weight * x_from); z_m(k) = a z_(m-1)(k-lag) "
        "+ sqrt(1-a^2) u_m(k); u_m(k) = phi u_m(k-1) + sqrt(1-phi^2) e, e ~ N(0,I); "
        "value = base + offset + diurnal_amp * diurnal(ts) + scale * x, clamped to [lo,hi]; "
        "voltage also drops 0.02 V/day",
        "channels", chans, "spatial", "neighbour", "mote-m is driven by mote-(m-1)", "coupling",
        o->spatial_coupling, "lag_ticks", (int)o->spatial_lag, "ar_phi", o->ar, "hetero_sd",
        o->hetero_sd, "regimes", regimes_json(g, o), "device_weights", devices_json(g));
}

core_err sim_truth_write(const struct sim_gen *g, const struct sim_options *o, const char *path,
                         char *eb, size_t ebn)
{
    json_t *doc = sim_truth_json(g, o);
    size_t n = strlen(path) + 5;
    char *tmp = core_xmalloc(n);
    core_err rc = CORE_OK;

    snprintf(tmp, n, "%s.tmp", path);
    if (!doc || json_dump_file(doc, tmp, JSON_INDENT(1) | JSON_REAL_PRECISION(17)) != 0 ||
        rename(tmp, path) != 0) {
        snprintf(eb, ebn, "cannot write truth file '%s'", path);
        remove(tmp);
        rc = CORE_EIO;
    }
    json_decref(doc);
    free(tmp);
    return rc;
}
