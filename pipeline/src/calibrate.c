/* calibrate.c - the offline `gcdp calibrate` (pipe/calibrate.h): θ from a calibration matrix,
 * public or charged to the ledger, written and published. */
#include "pipe/calibrate.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cal/calibrate.h"
#include "cal/ledger.h"
#include "cal/matrix.h"
#include "cal/publish.h"
#include "cal/theta.h"
#include "core/dp_ledger.h"
#include "core/dp_ledger_cfg.h"
#include "core/dp_rng.h"
#include "core/log.h"
#include "pipe/calpolicy.h"

/* A step whose failure is a runtime failure: its CORE_ECONFIG (none is known) must not read
 * as a usage error. */
static core_err runtime(core_err rc)
{
    return rc == CORE_ECONFIG ? CORE_EINVAL : rc;
}

core_err pipe_calibrate_check_file(const char *path, FILE *out, char *eb, size_t ebn)
{
    struct cal_theta *t = NULL;
    char why[512] = "";
    core_err rc = cal_theta_load_file(path, &t, why, sizeof(why));

    if (rc != CORE_OK) {
        snprintf(eb, ebn, "invalid theta: %s", why);
        return runtime(rc);
    }
    fprintf(out,
            "%s: valid %s version %llu, mode %s, %zu nodes, %zu edges, %zu coordinates, "
            "eps_cal %.17g%s\n",
            path, CAL_THETA_SCHEMA, (unsigned long long)t->version, cal_mode_name(t->mode),
            t->n_nodes, t->n_edges, t->d, cal_theta_eps_cal_total(t),
            t->B ? " (release part present)" : "");
    cal_theta_free(t);
    return CORE_OK;
}

/* Write θ's bytes to out (atomic rename, fsync) or stdout (with a newline). */
static core_err emit(const char *bytes, size_t len, const char *out, char *eb, size_t ebn)
{
    if (out)
        return runtime(cal_bytes_save_file(bytes, len, out, eb, ebn));
    if (fwrite(bytes, 1, len, stdout) != len || putchar('\n') == EOF || fflush(stdout) != 0) {
        snprintf(eb, ebn, "writing stdout failed");
        return CORE_EIO;
    }
    return CORE_OK;
}

/* Publish the θ bytes that were written (parsed back: the topic gets the same θ). */
static core_err publish_bytes(const struct core_config *cfg, const char *bytes, size_t len,
                              char *eb, size_t ebn)
{
    struct cal_theta *t = NULL;
    char why[1024] = "";
    json_t *j = json_loadb(bytes, len, JSON_REJECT_DUPLICATES, NULL);
    core_err rc = j ? cal_theta_from_json(j, &t, why, sizeof(why)) : CORE_EPARSE;

    json_decref(j);
    if (rc == CORE_OK)
        rc = cal_theta_publish(cfg, t, 15000, why, sizeof(why));
    if (rc != CORE_OK)
        snprintf(eb, ebn, "publish: %s", why[0] ? why : "theta does not parse");
    else
        CORE_INFO("theta version=%llu published to %s", (unsigned long long)t->version,
                  core_config_str(cfg, "topics.calibration"));
    cal_theta_free(t);
    return rc;
}

/* Devices: the request's, else calibrate.ledger.devices (borrowed strings). */
static size_t devices_of(const struct core_config *cfg, const struct pipe_cal_offline *req,
                         const char **out)
{
    const json_t *v = core_config_json(cfg, "calibrate.ledger.devices");
    size_t n = 0;

    if (req->n_devices > 0) {
        memcpy(out, req->devices, req->n_devices * sizeof(*out));
        return req->n_devices;
    }
    for (; n < json_array_size(v) && n < CAL_LEDGER_MAX_DEVICES; n++)
        out[n] = json_string_value(json_array_get(v, n));
    return n;
}

/* The log lines of a charged run: replayed, replayed with other inputs, or charged. */
static void log_charged(const struct cal_charged *res, const char *path)
{
    if (res->replayed)
        CORE_INFO("theta version=%llu replayed from ledger %s: stored bytes, no noise drawn, "
                  "nothing charged",
                  (unsigned long long)res->version, path);
    if (res->replayed_other)
        CORE_WARN("theta version=%llu: the stored theta was calibrated with another input or "
                  "configuration (n_cal / config_version differ); republished unchanged (set "
                  "a new calibrate.version to recalibrate, which is charged again)",
                  (unsigned long long)res->version);
    if (!res->replayed)
        CORE_INFO("theta version=%llu charged eps_cal=%.17g to %zu ledger units in %zu row(s) "
                  "of %s (release id calibrate|%llu), committed before output",
                  (unsigned long long)res->version, res->eps_charged, res->n_units, res->n_parts,
                  path, (unsigned long long)res->version);
}

/* Private mode: open the ledger, charge and calibrate. */
static core_err run_private(struct core_config *cfg, const struct cal_opts *o,
                            const struct cal_matrix *mx, const char *const *devices, size_t n_dev,
                            const char *source, const char *ledger_flag, struct cal_charged *res,
                            char *eb, size_t ebn)
{
    struct core_dp_ledger_opts lop = {.path = NULL};
    struct core_dp_ledger *led = NULL;
    struct cal_ledger_opts lo;
    char why[1024] = "", path[4096];
    core_err rc = core_dp_ledger_path(cfg, ledger_flag, true, path, sizeof(path), eb, ebn);

    if (rc != CORE_OK)
        return CORE_ECONFIG;
    lop.path = path;
    cal_ledger_opts_from_config(cfg, devices, n_dev, &lo, &lop.scheme);
    lop.cap = lo.cap;
    rc = core_dp_ledger_open_config(cfg, &lop, &led, why, sizeof(why));
    if (rc != CORE_OK) {
        snprintf(eb, ebn, "ledger '%s': %s (%s); nothing charged, no noise drawn, no theta written",
                 lop.path, why[0] ? why : "cannot open", core_errname(rc));
        return runtime(rc);
    }
    rc = cal_calibrate_charged(led, mx, o, &lo, source, core_rng_os(), res, eb, ebn);
    core_rng_os_wipe();
    core_dp_ledger_free(led);
    if (rc == CORE_OK)
        log_charged(res, lop.path);
    return rc;
}

/* Private mode from the loaded matrix: |A| from the policy graph, row timestamps required,
 * then run_private. */
static core_err calibrate_private(struct core_config *cfg, struct cal_opts *o,
                                  const struct cal_matrix *mx, const char *const *devices,
                                  size_t n_dev, const char *source, const char *ledger_flag,
                                  struct cal_charged *res, char *eb, size_t ebn)
{
    if (pipe_cal_expansion_nodes(cfg, (const char *const *)mx->names, mx->m, &o->expansion_nodes,
                                 eb, ebn) != CORE_OK)
        return CORE_ECONFIG;
    if (!mx->ts) {
        snprintf(eb, ebn, "private mode needs row timestamps to charge the ledger: %s",
                 o->format == CAL_FORMAT_OCCUPANCY
                     ? "the occupancy file has no date column"
                     : "add a timestamp column to the CSV (calibrate.input.ts_column)");
        return CORE_ECONFIG;
    }
    return run_private(cfg, o, mx, devices, n_dev, source, ledger_flag, res, eb, ebn);
}

/* Public mode: calibrate, stamp the source and serialise θ into res (*t keeps θ). */
static core_err calibrate_public(const struct cal_matrix *mx, const struct cal_opts *o,
                                 const char *source, struct cal_theta **t, struct cal_charged *res,
                                 char *eb, size_t ebn)
{
    struct cal_report rep;
    core_err rc = cal_calibrate(mx, o, NULL, t, &rep, eb, ebn);

    if (rc == CORE_OK) {
        snprintf((*t)->source, sizeof((*t)->source), "%s", source);
        rc = cal_theta_to_bytes(*t, &res->bytes, &res->len, eb, ebn);
        res->rep = rep;
        res->version = (*t)->version;
    }
    return rc;
}

/* The options (CORE_ECONFIG when invalid) and, in private mode, at least one device id. */
static core_err opts_of(const struct core_config *cfg, size_t n_dev, struct cal_opts *o, char *eb,
                        size_t ebn)
{
    if (cal_opts_from_config(cfg, o, eb, ebn) != CORE_OK || cal_opts_check(o, eb, ebn) != CORE_OK)
        return CORE_ECONFIG;
    if (o->mode == CAL_MODE_PRIVATE && n_dev == 0) {
        snprintf(eb, ebn,
                 "private mode charges eps_cal to the ledger units '<device>|<slot>' of "
                 "the calibration rows: give the device id(s) with --device ID (or "
                 "calibrate.ledger.devices)");
        return CORE_ECONFIG;
    }
    return CORE_OK;
}

core_err pipe_calibrate_offline(struct core_config *cfg, const struct pipe_cal_offline *req,
                                char *eb, size_t ebn)
{
    struct cal_opts o;
    struct cal_matrix *mx = NULL;
    struct cal_theta *t = NULL;
    struct cal_charged res = {0};
    const char *devices[CAL_LEDGER_MAX_DEVICES];
    size_t n_dev = devices_of(cfg, req, devices);
    char source[CAL_MAX_NAME];
    const char *base = strrchr(req->input, '/');
    core_err rc = opts_of(cfg, n_dev, &o, eb, ebn);

    if (rc != CORE_OK)
        return rc;
    snprintf(source, sizeof(source), "%s:%s",
             o.format == CAL_FORMAT_OCCUPANCY ? "occupancy" : "csv", base ? base + 1 : req->input);
    rc = runtime(cal_matrix_load_ts(req->input, o.format, o.label_column,
                                    o.ts_column[0] ? o.ts_column : NULL, o.max_rows, &mx, eb, ebn));
    if (rc == CORE_OK)
        rc = o.mode == CAL_MODE_PRIVATE ? calibrate_private(cfg, &o, mx, devices, n_dev, source,
                                                            req->ledger, &res, eb, ebn)
                                        : calibrate_public(mx, &o, source, &t, &res, eb, ebn);
    if (rc == CORE_OK) {
        /* identifiers, counts and timings only (DESIGN §7.4) */
        CORE_INFO("theta version=%llu mode=%s rows=%zu edges=%zu alg1_s=%.4f xi_s=%.4f "
                  "mu_s=%.4f total_s=%.4f%s",
                  (unsigned long long)res.version, cal_mode_name(o.mode), mx->n, res.rep.n_edges,
                  res.rep.t_alg1, res.rep.t_xi, res.rep.t_mu, res.rep.t_total,
                  res.replayed ? " (replayed)" : "");
        rc = emit(res.bytes, res.len, req->output, eb, ebn);
    }
    if (rc == CORE_OK && req->publish)
        rc = publish_bytes(cfg, res.bytes, res.len, eb, ebn);
    cal_charged_cleanup(&res);
    cal_theta_free(t);
    cal_matrix_free(mx);
    return rc;
}
