/* run_live.c - `gcdp run`'s live privacy path (run_int.h): the files of a run (state
 * directory, control key, ledger, public calibration rows), the calibrate service (public θ
 * versions on topics.calibration) and the release service (topics.windows -> topics.released,
 * charging the run's ledger), on the run's loop. Wiring only: the services are the libraries'
 * (cal/service.h, rel/service.h), the same ones `gcdp calibrate --serve` and
 * `gcdp release --serve` run. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cal/service.h"
#include "cal/theta.h"
#include "core/ctl.h"
#include "core/fsutil.h"
#include "core/log.h"
#include "ing/engine.h"
#include "rel/ledger.h"
#include "rel/service.h"
#include "run_int.h"

/* The run's own defaults, applied to every key the user did not set (flag, file or
 * environment), chosen so that the DAG learned from the privatized stream in 60-120 s is
 * clearly better than chance (docs/operations.md "gcdp run"; tuned on simulator seeds 1-3,
 * reported on others): a simulator whose SEM signal dominates its per-device offsets, without
 * the diurnal terms (they add one shared trend to three channels) and with slowly varying
 * innovations (the signal survives the window mean); complete windows only (no
 * interpolation, n_min = the 15 readings of a window), which makes the certified mean
 * sensitivity 1/15 instead of (1+2G)/n_min = 0.5;
 * eps_rel 8 per window with at least 1.9 per coordinate (GC-DP would otherwise give almost
 * all of it to one node); the learner rescales each site's columns by one common factor
 * (released values are in [0, 1] units; one factor keeps the relative variances that orient
 * edges) with a smaller l1 weight and pruning threshold. */
static const struct {
    const char *key, *json;
} run_defaults[] = {
    {"sim.channel_params", "{\"temperature\":{\"base\":25,\"amp\":0,\"scale\":6,\"offset_sd\":0.2},"
                           "\"humidity\":{\"base\":50,\"amp\":0,\"scale\":20,\"offset_sd\":0.5},"
                           "\"light\":{\"base\":1000,\"amp\":0,\"scale\":400,\"offset_sd\":5},"
                           "\"voltage\":{\"base\":2.5,\"scale\":0.2,\"offset_sd\":0.005}}"},
    {"sim.ar", "0.9"},
    {"ingest.max_interp_gap", "0"},
    {"ingest.min_coverage", "1"},
    {"release.query.min_samples", "15"},
    {"release.eps_rel", "8"},
    {"release.eps_min", "1.9"},
    {"learner.service.min_samples", "500"},
    {"learner.service.session_interval_s", "15"},
    {"learner.rescale", "true"},
    {"learner.lambda", "0.01"},
    {"learner.w_threshold", "0.1"},
};

/* The pilot covers the run's own devices (same ids, offsets and weights; noise of its own):
 * θ's summary pools rows over devices as the drift monitor pools released windows, and a
 * pilot of other devices (it had 8 of the run's 100) scored 0.046-0.11 against the
 * privatized stream with no regime change, above the 0.04 threshold (docs/release.md,
 * "Drift through the services"). PILOT_ROWS rows in all: 250 windows per device up to 100
 * devices, never fewer than PILOT_MIN_WINDOWS per device. */
#define PILOT_ROWS        25000
#define PILOT_MAX_WINDOWS 250
#define PILOT_MIN_WINDOWS 16
#define PILOT_NOISE_SALT  0x9e3779b97f4a7c15ULL

core_err run_config_set_str(struct run_ctx *c, const char *key, const char *value, char *eb,
                            size_t ebn)
{
    json_t *v = json_string(value);
    core_err rc;

    if (!v) {
        snprintf(eb, ebn, "%s: the path is not valid UTF-8", key);
        return CORE_ECONFIG;
    }
    rc = core_config_set_json(c->cfg, key, v, "gcdp run", eb, ebn);
    json_decref(v);
    return rc;
}

/* The four clip intervals of the simulated channels and the window length in ticks. */
static core_err pilot_shape(const struct core_config *cfg, double *lo, double *hi, size_t *ticks,
                            char *eb, size_t ebn)
{
    struct ing_params p;

    if (ing_params_from_config(cfg, &p, eb, ebn) != CORE_OK)
        return CORE_ECONFIG;
    for (size_t ch = 0; ch < SIM_NCH; ch++) {
        const char *nm = sim_gen_channel_info(ch)->name;
        size_t i = 0;
        while (i < p.n_channels && strcmp(p.channels[i].name, nm) != 0)
            i++;
        if (i == p.n_channels) {
            snprintf(eb, ebn,
                     "ingest.channels has no '%s' (the simulator's channel): give "
                     "--calibration FILE",
                     nm);
            return CORE_ECONFIG;
        }
        lo[ch] = p.channels[i].clip_lo;
        hi[ch] = p.channels[i].clip_hi;
    }
    *ticks = p.period_ms > 0 ? (size_t)(p.window_ms / p.period_ms) : 0;
    return *ticks >= 1 ? CORE_OK : CORE_ECONFIG;
}

/* Public calibration rows: a pilot run of the simulator's model (same seed: same DAG and
 * device parameters) over the run's devices with noise of its own (sim_calibration_csv). */
static core_err make_calibration(struct run_ctx *c, char *eb, size_t ebn)
{
    struct sim_options so;
    double lo[SIM_NCH], hi[SIM_NCH];
    size_t ticks = 0, windows;
    core_err rc;

    if ((rc = sim_options_from_config(c->cfg, &so, eb, ebn)) != CORE_OK)
        return rc;
    if ((rc = pilot_shape(c->cfg, lo, hi, &ticks, eb, ebn)) != CORE_OK)
        return rc;
    so.seed = c->o.seed;
    so.devices = c->o.devices;
    windows = PILOT_ROWS / (so.devices ? so.devices : 1);
    windows = windows > PILOT_MAX_WINDOWS   ? PILOT_MAX_WINDOWS
              : windows < PILOT_MIN_WINDOWS ? PILOT_MIN_WINDOWS
                                            : windows;
    snprintf(c->calib_path, sizeof(c->calib_path), "%s/calibration.csv", c->o.dir);
    return sim_calibration_csv(&so, (c->o.seed ^ PILOT_NOISE_SALT) | 1u, lo, hi, windows, ticks,
                               c->calib_path, eb, ebn);
}

/* The learner's run-scoped settings: as many participants as sites, its checkpoints and
 * pictures in a directory of this run (a checkpoint of an earlier run's session must never
 * be resumed: the embedded broker starts empty), and the simulator's true DAG beside them. */
static core_err learner_files(struct run_ctx *c, char *eb, size_t ebn)
{
    char v[RUN_PATH_MAX + 64];
    core_err rc = CORE_OK;

    snprintf(v, sizeof(v), "%zu", c->o.no_sim ? (size_t)1 : c->o.sites);
    if (!core_config_is_explicit(c->cfg, "learner.service.participants"))
        rc = core_config_set(c->cfg, "learner.service.participants", v, "gcdp run", eb, ebn);
    /* absolute: relative learner directories would live under state.dir */
    snprintf(v, sizeof(v), "%s/learner-%s/state", c->absdir, c->stamp);
    if (rc == CORE_OK && !core_config_is_explicit(c->cfg, "learner.service.state_dir"))
        rc = run_config_set_str(c, "learner.service.state_dir", v, eb, ebn);
    snprintf(v, sizeof(v), "%s/learner-%s", c->absdir, c->stamp);
    if (rc == CORE_OK && !core_config_is_explicit(c->cfg, "learner.service.out_dir"))
        rc = run_config_set_str(c, "learner.service.out_dir", v, eb, ebn);
    if (rc == CORE_OK && !c->o.no_sim) {
        if (core_config_is_explicit(c->cfg, "sim.truth_path")) {
            snprintf(c->truth_path, sizeof(c->truth_path), "%s",
                     core_config_str(c->cfg, "sim.truth_path"));
        } else {
            snprintf(c->truth_path, sizeof(c->truth_path), "%s/truth.json", c->o.dir);
            rc = run_config_set_str(c, "sim.truth_path", c->truth_path, eb, ebn);
        }
    }
    return rc;
}

/* The control key the services verify (and the release signs drift reports with):
 * control.key_file when set, else <dir>/control.key, made once (0600) and reused. */
static core_err control_key(struct run_ctx *c, char *eb, size_t ebn)
{
    char path[RUN_PATH_MAX];
    core_err rc;
    const char *kf = core_config_str(c->cfg, "control.key_file");

    if (kf && kf[0])
        return CORE_OK;
    snprintf(path, sizeof(path), "%s/control.key", c->o.dir);
    if (access(path, F_OK) != 0) {
        char why[512] = "";
        if (core_ctl_keygen(path, NULL, why, sizeof(why)) != CORE_OK) {
            snprintf(eb, ebn, "control key %s: %s", path, why);
            return CORE_EIO;
        }
    }
    rc = run_config_set_str(c, "control.key_file", path, eb, ebn);
    return rc;
}

core_err run_files_prepare(struct run_ctx *c, char *eb, size_t ebn)
{
    char state[RUN_PATH_MAX];
    core_err rc;

    time_t now = time(NULL);
    struct tm tm;

    gmtime_r(&now, &tm);
    strftime(c->stamp, sizeof(c->stamp), "%Y%m%dT%H%M%SZ", &tm);
    for (size_t i = 0; i < sizeof(run_defaults) / sizeof(run_defaults[0]); i++)
        if (!core_config_is_explicit(c->cfg, run_defaults[i].key) &&
            (rc = core_config_set(c->cfg, run_defaults[i].key, run_defaults[i].json,
                                  "gcdp run default", eb, ebn)) != CORE_OK)
            return rc;
    if (core_mkdir_p(c->o.dir, 0) != 0 || !realpath(c->o.dir, c->absdir)) {
        snprintf(eb, ebn, "cannot create %s: %s", c->o.dir, strerror(errno));
        return CORE_EIO;
    }
    if ((rc = learner_files(c, eb, ebn)) != CORE_OK)
        return rc;
    if (!core_config_is_explicit(c->cfg, "state.dir")) {
        snprintf(state, sizeof(state), "%s/state", c->o.dir);
        if ((rc = run_config_set_str(c, "state.dir", state, eb, ebn)) != CORE_OK)
            return rc;
    }
    if ((rc = control_key(c, eb, ebn)) != CORE_OK)
        return rc;
    if (c->o.ledger) /* else a new ledger per run: the simulated devices and times repeat */
        snprintf(c->ledger_path, sizeof(c->ledger_path), "%s", c->o.ledger);
    else
        snprintf(c->ledger_path, sizeof(c->ledger_path), "%s/ledger-%s.jsonl", c->o.dir, c->stamp);
    c->ledger_new = access(c->ledger_path, F_OK) != 0;
    if (c->o.calibration) {
        snprintf(c->calib_path, sizeof(c->calib_path), "%s", c->o.calibration);
        return CORE_OK;
    }
    return make_calibration(c, eb, ebn);
}

/* ---- calibrate ---- */

void run_service_done(struct run_ctx *c, const char *name, bool *done, core_err *st,
                      core_err status)
{
    *done = true;
    *st = status;
    if (!c->stopping) {
        CORE_ERROR("%s stopped unexpectedly: %s", name, core_strerror(status));
        c->status = CORE_ESTATE;
    }
}

static void cal_on_done(void *arg, core_err status)
{
    struct run_ctx *c = arg;
    run_service_done(c, "calibrate", &c->cal_done, &c->cal_status, status);
}

core_err run_cal_start(struct run_ctx *c, char *eb, size_t ebn)
{
    struct cal_service_opts so;

    cal_service_opts_init(c->cfg, c->calib_path, &so);
    so.on_done = cal_on_done;
    so.arg = c;
    return cal_service_new(&c->loop, c->cfg, &so, c->metrics, &c->cal, eb, ebn);
}

void run_cal_stop(struct run_ctx *c)
{
    if (c->cal && !c->cal_done)
        cal_service_stop(c->cal);
}

bool run_cal_done(struct run_ctx *c)
{
    return !c->cal || c->cal_done;
}

/* ---- release ---- */

static void rel_on_done(void *arg, core_err status)
{
    struct run_ctx *c = arg;
    run_service_done(c, "release", &c->rel_done, &c->rel_status, status);
}

core_err run_rel_start(struct run_ctx *c, char *eb, size_t ebn)
{
    struct rel_service_opts so;

    core_err rc = rel_ledger_open(c->cfg, c->ledger_path, &c->lo, &c->ledger, eb, ebn);

    if (rc != CORE_OK) /* another scheme or caps than the ledger's: a usage error */
        return rc == CORE_ESTATE || rc == CORE_ECONFIG ? CORE_ECONFIG : CORE_EIO;
    rel_service_opts_init(c->cfg, "gcdp-release", c->ledger, &c->lo.scheme, &so);
    so.on_done = rel_on_done;
    so.arg = c;
    return rel_service_new(&c->loop, c->cfg, &so, c->metrics, &c->rel, eb, ebn);
}

/* Stopping release after ingest lets it release what ingest emitted (bounded by
 * CATCH_UP_MS; a second signal skips it). */
void run_rel_stop(struct run_ctx *c)
{
    if (!c->rel_stop_requested) {
        c->rel_stop_requested = true;
        c->rel_stop_deadline = uv_now(&c->loop) + CATCH_UP_MS;
    }
}

bool run_rel_done(struct run_ctx *c)
{
    struct rel_service_stats rs;
    struct ing_service_stats is = {0};

    if (!c->rel || c->rel_done)
        return true;
    if (c->rel_stop_requested && !c->rel_stop_sent) {
        rel_service_stats(c->rel, &rs);
        if (c->ingest)
            ing_service_stats(c->ingest, &is);
        if ((rs.lag == 0 && rs.consumed >= is.windows_out) || c->signals > 1 ||
            uv_now(&c->loop) >= c->rel_stop_deadline) {
            c->rel_stop_sent = true;
            rel_service_stop(c->rel);
        }
    }
    return false;
}

/* ---- progress and summary ---- */

void run_live_progress(struct run_ctx *c, char *buf, size_t n)
{
    struct rel_service_stats rs = {0};
    struct core_dp_ledger_stats ls = {0};
    char drift[32] = "-";

    if (c->rel)
        rel_service_stats(c->rel, &rs);
    else
        rs.drift_ppm = -1;
    if (c->ledger)
        core_dp_ledger_stats(c->ledger, &ls);
    if (rs.drift_ppm >= 0)
        snprintf(drift, sizeof(drift), "%.3f", (double)rs.drift_ppm / 1e6);
    snprintf(buf, n,
             " | released %" PRIu64 " | refused %" PRIu64 " | theta v%" PRIu64
             " | eps max %.3g | drift %s",
             rs.released + rs.replayed, rs.dead_letters, rs.theta_version, ls.max_eps, drift);
}

static void cal_summary(struct run_ctx *c, FILE *human, FILE *json)
{
    struct cal_service_stats cs = {0};

    if (c->cal)
        cal_service_stats(c->cal, &cs);
    fprintf(human, "theta: %" PRIu64 " version(s) made (", cs.made);
    fprintf(json, ",\"theta\":{\"made\":%" PRIu64 ",\"newest\":%" PRIu64 ",\"by_reason\":{",
            cs.made, cs.version);
    for (int i = 0; i < CAL_N_REASONS; i++) {
        fprintf(human, "%s%s %" PRIu64, i ? ", " : "", cal_reason_name(i), cs.by_reason[i]);
        fprintf(json, "%s\"%s\":%" PRIu64, i ? "," : "", cal_reason_name(i), cs.by_reason[i]);
    }
    fprintf(human, "), rate-limited requests %" PRIu64 ", newest v%" PRIu64 "\n", cs.rate_limited,
            cs.version);
    fprintf(json, "},\"rate_limited\":%" PRIu64 ",\"failures\":%" PRIu64 "}", cs.rate_limited,
            cs.failures);
}

static void rel_summary(struct run_ctx *c, FILE *human, FILE *json)
{
    struct rel_service_stats rs = {0};
    struct core_dp_ledger_stats ls = {0};

    if (c->rel)
        rel_service_stats(c->rel, &rs);
    if (c->ledger)
        core_dp_ledger_stats(c->ledger, &ls);
    fprintf(human,
            "release: consumed %" PRIu64 " windows; released %" PRIu64 " (replayed %" PRIu64
            "), excluded %" PRIu64 ", refused %" PRIu64 " (",
            rs.consumed, rs.released, rs.replayed, rs.excluded, rs.dead_letters);
    fprintf(json,
            ",\"release\":{\"consumed\":%" PRIu64 ",\"released\":%" PRIu64 ",\"replayed\":%" PRIu64
            ",\"excluded\":%" PRIu64 ",\"refused\":{",
            rs.consumed, rs.released, rs.replayed, rs.excluded);
    for (int i = 0; i < REL_DLQ_COUNT; i++) {
        const char *r = rel_dlq_reason_code((enum rel_dlq_reason)i);
        fprintf(human, "%s%s %" PRIu64, i ? ", " : "", r, rs.by_reason[i]);
        fprintf(json, "%s\"%s\":%" PRIu64, i ? "," : "", r, rs.by_reason[i]);
    }
    fprintf(human, "); theta swaps %" PRIu64 "\n", rs.theta_swaps);
    if (c->ledger)
        fprintf(human,
                "privacy: %" PRIu64 " units charged, max eps per unit %.6g of the cap "
                "%.6g; ledger %s (%s)\n",
                ls.units, ls.max_eps, c->lo.cap.eps, c->ledger_path,
                c->ledger_new ? "new, made by this run" : "existing, reopened");
    else
        fprintf(human, "privacy: nothing charged; the ledger was not opened\n");
    json_t *path = json_string(c->ledger_path);
    char *quoted = path ? json_dumps(path, JSON_ENCODE_ANY) : NULL;
    fprintf(json,
            "},\"theta_swaps\":%" PRIu64 ",\"status\":\"%s\"},\"privacy\":{\"units\":%" PRIu64
            ",\"max_eps\":%.17g,\"cap_eps\":%.17g,\"ledger\":%s,\"ledger_new\":%s}",
            rs.theta_swaps, core_errname(c->rel_status), ls.units, ls.max_eps, c->lo.cap.eps,
            c->ledger && quoted ? quoted : "null", c->ledger_new ? "true" : "false");
    free(quoted);
    json_decref(path);
}

void run_live_summary(struct run_ctx *c, FILE *human, FILE *json)
{
    cal_summary(c, human, json);
    rel_summary(c, human, json);
}

bool run_live_failed(const struct run_ctx *c)
{
    struct rel_service_stats rs = {0};

    if ((c->cal && c->cal_status != CORE_OK) || (c->rel && c->rel_status != CORE_OK))
        return true;
    if (c->rel)
        rel_service_stats(c->rel, &rs);
    if (rs.consumed > rs.excluded && rs.released + rs.replayed == 0) {
        fprintf(stderr,
                "gcdp run: no window was released (%" PRIu64 " refused): see the "
                "release line above\n",
                rs.dead_letters);
        return true;
    }
    return false;
}

void run_live_free(struct run_ctx *c)
{
    rel_service_free(c->rel);
    cal_service_free(c->cal);
    c->rel = NULL;
    c->cal = NULL;
}
