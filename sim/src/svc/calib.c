/* calib.c - public calibration rows from the simulator (sim/sim.h, sim_calibration_csv).
 *
 * A GC-DP public calibration (paper Sec. 4.1; DESIGN §5) needs data of the same kind as the
 * protected records but independent of them. For the simulator that is another run of the
 * same model with independent noise (a "pilot deployment"): the caller gives the protected
 * run's model seed (same DAG, device weights and offsets: parameters, not records) and a
 * noise seed of its own, so no reading depends on a protected one. Each row is one device's
 * window: the mean of its readings over window_ticks ticks, each reading clipped to the
 * node's public interval and mapped to [0, 1] exactly as ingest normalizes (clip_minmax),
 * so the matrix is in the units
 * of the window records' nodes <channel>.mean. Rows are device-major (each device's windows in
 * time order) so lagged correlations mostly compare consecutive windows of one device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fsutil.h"
#include "core/mem.h"
#include "sim/gen.h"
#include "sim/sim.h"

static core_err generate(const struct sim_options *o, uint64_t noise_seed, size_t windows,
                         size_t window_ticks, const double *lo, const double *hi, double *acc)
{
    struct sim_gen_params gp;
    struct sim_gen *g;
    size_t n = o->devices;
    double *val = core_xcalloc(n * SIM_NCH, sizeof(double));
    int64_t period_ms = (int64_t)(o->period_s * 1000.0);

    sim_gen_params_from_options(o, &gp);
    gp.noise_seed = noise_seed;
    if (sim_gen_new(&gp, &g) != CORE_OK) {
        free(val);
        return CORE_EINVAL;
    }
    for (size_t w = 0; w < windows; w++) {
        for (size_t k = 0; k < window_ticks; k++) {
            uint64_t tick = (uint64_t)(w * window_ticks + k);
            int64_t ts = o->start_ms + (int64_t)tick * period_ms;
            sim_gen_tick(g, ts, (double)tick * o->period_s / 86400.0, 0, val);
            for (size_t i = 0; i < n * SIM_NCH; i++) {
                size_t c = i % SIM_NCH;
                double v = val[i] < lo[c] ? lo[c] : val[i] > hi[c] ? hi[c] : val[i];
                acc[((i / SIM_NCH) * windows + w) * SIM_NCH + c] +=
                    (v - lo[c]) / (hi[c] - lo[c]) / (double)window_ticks;
            }
        }
    }
    sim_gen_free(g);
    free(val);
    return CORE_OK;
}

core_err sim_calibration_csv(const struct sim_options *o, uint64_t noise_seed,
                             const double clip_lo[SIM_NCH], const double clip_hi[SIM_NCH],
                             size_t windows, size_t window_ticks, const char *path, char *eb,
                             size_t ebn)
{
    struct core_outfile out;
    double *acc;
    int64_t win_ms = (int64_t)(o->period_s * 1000.0) * (int64_t)window_ticks;
    core_err rc;

    for (size_t c = 0; c < SIM_NCH; c++)
        if (!(clip_lo[c] < clip_hi[c])) {
            snprintf(eb, ebn, "channel %s: empty clip interval", sim_gen_channel_info(c)->name);
            return CORE_EINVAL;
        }
    if (windows < 1 || window_ticks < 1 || o->devices < 1 || o->period_s <= 0) {
        snprintf(eb, ebn, "calibration rows: devices, windows and ticks must be >= 1");
        return CORE_EINVAL;
    }
    acc = core_xcalloc(o->devices * windows * SIM_NCH, sizeof(double));
    if ((rc = generate(o, noise_seed, windows, window_ticks, clip_lo, clip_hi, acc)) != CORE_OK) {
        snprintf(eb, ebn, "invalid simulator parameters for the calibration rows");
        free(acc);
        return rc;
    }
    if ((rc = core_outfile_open(&out, path, eb, ebn)) != CORE_OK) {
        free(acc);
        return rc;
    }
    fprintf(out.f, "ts");
    for (size_t c = 0; c < SIM_NCH; c++)
        fprintf(out.f, ",%s.mean", sim_gen_channel_info(c)->name);
    fputc('\n', out.f);
    for (size_t m = 0; m < o->devices; m++)
        for (size_t w = 0; w < windows; w++) {
            const double *r = &acc[(m * windows + w) * SIM_NCH];
            fprintf(out.f, "%lld", (long long)o->start_ms + (long long)w * win_ms);
            for (size_t c = 0; c < SIM_NCH; c++)
                fprintf(out.f, ",%.17g", r[c]);
            fputc('\n', out.f);
        }
    free(acc);
    if ((rc = core_outfile_commit(&out)) != CORE_OK)
        snprintf(eb, ebn, "%s: cannot write the calibration rows", path);
    return rc;
}
