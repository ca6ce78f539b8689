/* config_keys.c - the calibrate stage's configuration keys (see cal/config.h).
 * Defaults are the paper's Table 5 constants. */
#include "cal/config.h"

#include <math.h>
#include <stdio.h>

#include "cal/calibrate.h"
#include "core/cfg_keys.h"

/* [lo, hi] with finite lo < hi. */
static core_err check_pair(const json_t *v, char *eb, size_t ebn)
{
    if (!json_is_array(v) || json_array_size(v) != 2 || !json_is_number(json_array_get(v, 0)) ||
        !json_is_number(json_array_get(v, 1)) ||
        !(json_number_value(json_array_get(v, 0)) < json_number_value(json_array_get(v, 1))) ||
        !isfinite(json_number_value(json_array_get(v, 1))) ||
        !isfinite(json_number_value(json_array_get(v, 0)))) {
        snprintf(eb, ebn, "expected [lo, hi] with finite lo < hi");
        return CORE_ECONFIG;
    }
    return CORE_OK;
}

static core_err check_norm(const json_t *v, char *eb, size_t ebn)
{
    const char *k;
    json_t *p;
    if (json_is_null(v))
        return CORE_OK;
    if (!json_is_object(v)) {
        snprintf(eb, ebn, "expected an object {node: [lo, hi]}");
        return CORE_ECONFIG;
    }
    json_object_foreach((json_t *)v, k, p)
    {
        if (check_pair(p, eb, ebn) != CORE_OK) {
            snprintf(eb, ebn, "node \"%s\": expected [lo, hi] with finite lo < hi", k);
            return CORE_ECONFIG;
        }
    }
    return CORE_OK;
}

static core_err check_grid(const json_t *v, char *eb, size_t ebn)
{
    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > 64) {
        snprintf(eb, ebn, "expected a non-empty array of at most 64 thresholds in [0,1]");
        return CORE_ECONFIG;
    }
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *x = json_array_get(v, i);
        if (!json_is_number(x) || !(json_number_value(x) >= 0.0 && json_number_value(x) <= 1.0)) {
            snprintf(eb, ebn, "entry %zu: not a number in [0,1]", i);
            return CORE_ECONFIG;
        }
    }
    return CORE_OK;
}

static core_err check_weights(const json_t *v, char *eb, size_t ebn)
{
    const char *k;
    json_t *x;
    size_t i;
    if (json_is_null(v))
        return CORE_OK;
    if (json_is_array(v)) {
        json_array_foreach(v, i, x)
        {
            if (!json_is_number(x) || !(json_number_value(x) >= 0.0) ||
                !isfinite(json_number_value(x))) {
                snprintf(eb, ebn, "entry %zu: not a finite number >= 0", i);
                return CORE_ECONFIG;
            }
        }
        return CORE_OK;
    }
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, k, x)
        {
            if (!json_is_number(x) || !(json_number_value(x) >= 0.0) ||
                !isfinite(json_number_value(x))) {
                snprintf(eb, ebn, "coordinate \"%s\": not a finite number >= 0", k);
                return CORE_ECONFIG;
            }
        }
        return CORE_OK;
    }
    snprintf(eb, ebn, "expected null, an array of d weights or {coordinate: weight}");
    return CORE_ECONFIG;
}

static core_err check_coords(const json_t *v, char *eb, size_t ebn)
{
    size_t i;
    json_t *c;
    if (json_is_null(v))
        return CORE_OK;
    if (!json_is_array(v) || json_array_size(v) == 0) {
        snprintf(eb, ebn, "expected null or a non-empty array of {name, nodes, coef?}");
        return CORE_ECONFIG;
    }
    json_array_foreach(v, i, c)
    {
        const json_t *nodes = json_object_get(c, "nodes"), *coef = json_object_get(c, "coef");
        if (!json_is_object(c) || !json_is_string(json_object_get(c, "name")) ||
            !json_is_array(nodes) || json_array_size(nodes) == 0 ||
            (coef && (!json_is_array(coef) || json_array_size(coef) != json_array_size(nodes)))) {
            snprintf(eb, ebn,
                     "entry %zu: expected {\"name\": s, \"nodes\": [node names], \"coef\": "
                     "[numbers, same length] (optional)}",
                     i);
            return CORE_ECONFIG;
        }
    }
    return CORE_OK;
}

/* ["dev", ...]: at most 64 non-empty device ids of at most 200 bytes. */
static core_err check_devices(const json_t *v, char *eb, size_t ebn)
{
    if (!json_is_array(v) || json_array_size(v) > 64) {
        snprintf(eb, ebn, "expected an array of at most 64 device ids");
        return CORE_ECONFIG;
    }
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *x = json_array_get(v, i);
        if (!json_is_string(x) || json_string_length(x) == 0 || json_string_length(x) > 200) {
            snprintf(eb, ebn, "entry %zu: expected a device id (1..200 bytes)", i);
            return CORE_ECONFIG;
        }
    }
    return CORE_OK;
}

const struct core_cfg_key cal_config_keys[] = {
    K_ENUM("calibrate.mode", "\"public\"", "public|private",
           "public: eps_cal = 0 from public data; private: Sec. 4.2 with eps_cal parts"),
    K_ENUM("calibrate.input.format", "\"csv\"", "csv|occupancy",
           "calibration file format (csv: header of node names)"),
    K_STR("calibrate.input.label_column", "\"label\"",
          "csv: label column for the classify task (absent from the header: no labels)"),
    K_INT_AT("calibrate.input.max_rows", "1000000", 2, 4000000, "cap on calibration rows",
             CAL_KEYS_OPTS, SIZE, cal_opts, max_rows),
    K_STR("calibrate.input.ts_column", "\"ts\"",
          "csv: row timestamp column (ms since the epoch or a UTC date; not a node); "
          "occupancy: the date column"),
    K_JSON("calibrate.ledger.devices", "[]",
           "private: device ids of the calibration rows; eps_cal is charged to the ledger "
           "units '<device>|<slot>' they cover (release.ledger.*)",
           check_devices),
    K_JSON("calibrate.norm", "null",
           "fixed public normalization bounds {node: [lo, hi]} (never learned from data)",
           check_norm),
    K_JSON("calibrate.norm_default", "[0, 1]",
           "bounds for nodes not in calibrate.norm (occupancy: built-in physical ranges)",
           check_pair),
    K_INT_AT("calibrate.L", "3", 0, 64, "max lag L of Algorithm 1", CAL_KEYS_OPTS, INT, cal_opts,
             L),
    K_DBL_AT("calibrate.lambda", "0.6", 0, 1, "synchronous weight lambda", CAL_KEYS_OPTS, cal_opts,
             lambda),
    K_DBL_AT("calibrate.tau", "0.2", 0, 1, "graph threshold tau (tau_select = fixed)",
             CAL_KEYS_OPTS, cal_opts, tau),
    K_ENUM("calibrate.tau_select", "\"fixed\"", "fixed|grid",
           "fixed: calibrate.tau; grid: validation utility over tau_grid (private: exp. mech.)"),
    K_JSON("calibrate.tau_grid", "[0.10, 0.15, 0.20, 0.25, 0.30]", "threshold grid (Table 5)",
           check_grid),
    K_INT_AT("calibrate.K", "5", 1, 4096, "degree cap K", CAL_KEYS_OPTS, INT, cal_opts, K),
    K_DBL_AT("calibrate.alpha", "0.7", 0, 1, "exposure smoothing alpha", CAL_KEYS_OPTS, cal_opts,
             alpha),
    K_DBL_AT("calibrate.gamma", "1.2", 0, 1e6, "empirical expansion gamma (Sec. 4.3)",
             CAL_KEYS_OPTS, cal_opts, gamma),
    K_DBL_AT("calibrate.tau_c", "0.85", 0, 1, "compression threshold tau_c", CAL_KEYS_OPTS,
             cal_opts, tau_c),
    K_DBL_AT("calibrate.kappa", "1", 1, 1e6, "inflation kappa >= 1", CAL_KEYS_OPTS, cal_opts,
             kappa),
    K_DBL_AT("calibrate.g_max", "1", 1e-12, 1e12, "empirical-score cap g_max", CAL_KEYS_OPTS,
             cal_opts, g_max),
    K_DBL_AT("calibrate.mask_value", "0.5", 0, 1,
             "fixed mask value (normalized units) for leave-one-node masking", CAL_KEYS_OPTS,
             cal_opts, mask_value),
    K_JSON("calibrate.coords", "null",
           "released coordinates [{name, nodes: [node names], coef?}]; null: one per node",
           check_coords),
    K_ENUM("calibrate.task", "\"aggregate\"", "aggregate|classify", "utility task for mu"),
    K_JSON("calibrate.task_weights", "null",
           "aggregate task: public weights (array of d or {coord: w}); null: all 1", check_weights),
    K_DBL_AT("calibrate.classify.train_frac", "0.7", 0.1, 0.95,
             "classify: leading fraction of rows that trains; the rest validates", CAL_KEYS_OPTS,
             cal_opts, train_frac),
    K_DBL_AT("calibrate.eps_G", "0", 0, 1024, "private: budget for the score vector S",
             CAL_KEYS_OPTS, cal_opts, eps.G),
    K_DBL_AT("calibrate.eps_tau", "0", 0, 1024, "private: budget for selecting tau (grid)",
             CAL_KEYS_OPTS, cal_opts, eps.tau),
    K_DBL_AT("calibrate.eps_mu", "0", 0, 1024, "private: budget for mu (classify task)",
             CAL_KEYS_OPTS, cal_opts, eps.mu),
    K_DBL_AT("calibrate.eps_xi", "0", 0, 1024, "private: budget for xi_hat", CAL_KEYS_OPTS,
             cal_opts, eps.xi),
    K_ENUM("calibrate.private.sensitivity", "\"universal\"", "universal|expansion",
           "Delta_1 S: universal P = M(M-1)/2, or pairs touching the expansion set"),
    K_INT_AT("calibrate.version", "0", 0, 9007199254740991.0,
             "theta version; 0: milliseconds since the epoch at calibration", CAL_KEYS_OPTS, U64,
             cal_opts, version),
    K_INT_AT("calibrate.threads", "0", 0, 256, "OpenBLAS threads; 0: library default",
             CAL_KEYS_OPTS, INT, cal_opts, threads),
    K_INT("calibrate.service.min_interval_s", "60", 0, 31536000,
          "--serve: least time between two theta versions (recalibration rate limit)"),
    K_INT("calibrate.service.refresh_s", "86400", 0, 31536000,
          "--serve: periodic fallback recalibration (0 = off)"),
    K_INT("calibrate.service.private_span_s", "86400", 60, 31536000,
          "--serve, private: length of the declared span of protected windows a version is "
          "built from (ending release.service.ledger_lateness_ms + widening before the newest "
          "window)"),
    K_STR("calibrate.service.release_group", "\"gcdp-release\"",
          "--serve, private: consumer group of the release service, which must have committed "
          "past the span before it is charged"),
    K_STR("calibrate.ledger.path", "\"calibrate-ledger.jsonl\"",
          "--serve, private: the service's own privacy ledger (relative: under state.dir); "
          "same scheme and caps as release.ledger.*"),
    {0},
};
