/* config_keys.c - the release stage's configuration keys (see rel/config.h). */
#include "rel/config.h"

#include <stdio.h>
#include <string.h>

#include "core/cfg_keys.h"
#include "rel/drift.h"
#include "rel/mech.h"
#include "rel/plan.h"

/* release.policy.edges: [[chanA, chanB], ...] with non-empty channel names. Whether the
 * names exist is checked against θ when a plan is built. */
static core_err check_edges(const json_t *v, char *eb, size_t ebn)
{
    size_t i;
    json_t *e;

    if (!json_is_array(v)) {
        snprintf(eb, ebn, "must be an array of [channel, channel] pairs");
        return CORE_ECONFIG;
    }
    if (json_array_size(v) > 65536) {
        snprintf(eb, ebn, "more than 65536 edges");
        return CORE_ECONFIG;
    }
    json_array_foreach(v, i, e)
    {
        if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_string(json_array_get(e, 0)) ||
            !json_is_string(json_array_get(e, 1)) ||
            json_string_length(json_array_get(e, 0)) == 0 ||
            json_string_length(json_array_get(e, 1)) == 0) {
            snprintf(eb, ebn, "edge %zu is not a pair of non-empty channel names", i);
            return CORE_ECONFIG;
        }
    }
    return CORE_OK;
}

const struct core_cfg_key rel_config_keys[] = {
    CORE_KEY("release.mechanism", CORE_CFG_ENUM, "\"gcdp\"", 1, 0, REL_MECH_CHOICES,
             "release mechanism (paper Table 4) or Table 11 ablation", NULL),
    K_DBL_AT("release.eps_rel", "1.0", 0x1p-40, 1024.0, "release budget eps_rel per window",
             REL_KEYS_OPTS, rel_opts, eps_rel),
    K_DBL_AT("release.delta", "1e-6", 1e-300, 0.5, "gauss only: delta of (eps_rel, delta)-DP",
             REL_KEYS_OPTS, rel_opts, delta),
    K_DBL_AT("release.beta_r", "1.0", 0.0, 64.0, "Algorithm 3 exposure exponent (Table 5: 1)",
             REL_KEYS_OPTS, rel_opts, alloc.beta_r),
    K_DBL_AT("release.beta_g", "1.0", 0.0, 64.0, "Algorithm 3 scale exponent (Table 5: 1)",
             REL_KEYS_OPTS, rel_opts, alloc.beta_g),
    K_DBL_AT("release.beta_u", "0.7", 0.0, 64.0, "Algorithm 3 utility exponent (Table 5: 0.7)",
             REL_KEYS_OPTS, rel_opts, alloc.beta_u),
    K_DBL_AT("release.eta", "1e-8", 1e-300, 1.0, "Algorithm 3 stabilizer eta (Table 5: 1e-8)",
             REL_KEYS_OPTS, rel_opts, alloc.eta),
    K_DBL_AT("release.eps_min", "0", 0.0, 1024.0,
             "per-coordinate floor; 0: eps_rel/(100 d'); refused unless < eps_rel/d'",
             REL_KEYS_OPTS, rel_opts, alloc.eps_min),
    CORE_KEY("release.policy.edges", CORE_CFG_JSON, "[]", 1, 0, NULL,
             "policy graph G0: [[chanA, chanB], ...] channel pairs whose occurrences are protected "
             "together (fixed before data is seen)",
             check_edges),
    K_INT_AT("release.policy.hops", "1", 0, 64, "G0 neighbourhood radius of an expansion set",
             REL_KEYS_OPTS, UINT, rel_opts, policy_hops),
    K_INT_AT("release.policy.time_radius", "0", 0, 10000,
             "expansion set spans samples t-h..t+h (h, in sampling periods)", REL_KEYS_OPTS, UINT,
             rel_opts, policy_time_radius),
    K_INT_AT("release.policy.max_per_slot", "2", 1, 1000,
             "time_radius > 0: real readings of one channel that may share a slot; windows with "
             "n_node > max_per_slot * n_slots are refused",
             REL_KEYS_OPTS, UINT, rel_opts, policy_per_slot),
    K_INT_AT("release.query.min_samples", "10", 2, 1 << 30,
             "n_min: windows with fewer real samples of a released node are refused", REL_KEYS_OPTS,
             UINT, rel_opts, query.min_samples),
    K_INT_AT("release.query.max_samples", "10000", 2, 1 << 30,
             "n_max: range of a .sum node; windows with more samples are refused", REL_KEYS_OPTS,
             UINT, rel_opts, query.max_samples),
    CORE_KEY(
        "release.ledger.path", CORE_CFG_STRING, "\"ledger.jsonl\"", 1, 0, NULL,
        "write-ahead privacy ledger file (append-only JSONL, fsync'd); relative: under state.dir",
        NULL),
    CORE_KEY(
        "release.ledger.store", CORE_CFG_STRING, "\"\"", 1, 0, NULL,
        "embedded ledger store (SQLite; docs/operations.md, \"Ledger store\"); \"\": the JSONL "
        "file is the ledger; set: the store holds totals and replays and release.ledger.path is "
        "its audit log; relative: under state.dir",
        NULL),
    K_INT("release.ledger.replay_horizon_ms", "0", 0, 31536000000.0,
          "store: releases and units whose slots ended this long before the watermark are "
          "deleted; their replays are refused (never re-noised); >= input topic retention; "
          "0: keep all"),
    K_INT_AT("release.ledger.slot_ms", "60000", 1, 86400000,
             "privacy-unit time grain: units are <device>|<floor(t/slot_ms)>", REL_KEYS_OPTS, I64,
             rel_opts, slot_ms),
    K_DBL_AT("release.ledger.cap_eps", "10", 0.0, 1e6, "lifetime epsilon cap per unit",
             REL_KEYS_OPTS, rel_opts, cap.eps),
    K_DBL_AT("release.ledger.cap_delta", "1e-5", 0.0, 1.0, "lifetime delta cap per unit (gauss)",
             REL_KEYS_OPTS, rel_opts, cap.delta),
    K_INT("release.ledger.batch", "256", 1, 65536, "releases per fsync (group commit)"),
    K_INT("release.threads", "2", 1, 16, "noise worker threads per window (>= 256 coords each)"),
    K_INT("release.service.ledger_lateness_ms", "3600000", 1, 31536000000LL,
          "--serve: ledger units whose slot ended this long before the newest window end "
          "are evicted from memory (store back end; a charge reads them back)"),
    CORE_KEY("release.service.changelog", CORE_CFG_BOOL, "false", 1, 0, NULL,
             "--serve: write every ledger row to topics.ledger_changelog (acknowledged before the "
             "output is published) and restore a partition's rows from it when it is assigned, so "
             "several instances can share one consumer group (docs/release.md, \"Several "
             "instances\"); set it on EVERY instance of the group, before the second one starts; "
             "false: one instance per group",
             NULL),
    K_INT("release.service.linger_ms", "20", 0, 10000,
          "--serve: a release waits at most this long for a full group commit "
          "(release.ledger.batch) before its fsync; latency vs fsyncs per window"),
    CORE_KEY(
        "release.audit.mirror", CORE_CFG_BOOL, "true", 1, 0, NULL,
        "--serve: mirror the ledger's audit log to topics.audit, at least once, from the offset "
        "kept in <ledger>.mirror (core/audit_mirror.h)",
        NULL),
    CORE_KEY(
        "release.drift.enabled", CORE_CFG_BOOL, "true", 1, 0, NULL,
        "run the GC-DP-Cache drift monitor on the released stream (post-processing, no budget)",
        NULL),
    /* struct rel_drift_opts: its defaults and ranges are these rows (rel_drift_opts_default);
     * the ranges are those rel_drift_opts_check enforces */
    K_INT_AT("release.drift.horizon", "9216", 8, 65536,
             "drift monitor: released windows (all devices) a horizon holds when complete; "
             "one span of every device (devices x windows per span; default: 64 devices x "
             "144 ten-minute windows)",
             REL_KEYS_DRIFT, SIZE, rel_drift_opts, horizon),
    K_INT_AT("release.drift.span_ms", "86400000", 0, 2592000000.0,
             "drift monitor: window time per horizon (aligned on multiples of it since the "
             "epoch, UTC days at the default), whatever order windows arrive in; 0: horizons "
             "of release.drift.horizon consecutive arrivals (skewed by a backlog)",
             REL_KEYS_DRIFT, I64, rel_drift_opts, span_ms),
    K_DBL_AT("release.drift.min_fill", "0.9", 0x1p-20, 1.0,
             "drift monitor: fraction of release.drift.horizon a horizon needs when it closes "
             "to be evaluated (fewer rows: skipped as partial, no decision)",
             REL_KEYS_DRIFT, rel_drift_opts, min_fill),
    K_DBL_AT("release.drift.threshold", "0.04", 0x1p-20, 1.0,
             "drift monitor: sup distance of the released summary to theta that counts as "
             "drift",
             REL_KEYS_DRIFT, rel_drift_opts, threshold),
    K_INT_AT("release.drift.patience", "1", 1, 1000,
             "drift monitor: consecutive horizons above threshold before a drift report",
             REL_KEYS_DRIFT, UINT, rel_drift_opts, patience),
    K_INT("release.drift.report_retry_s", "60", 1, 86400,
          "--serve: a drift report is signed again this often until a newer theta arrives "
          "(a command published while the calibrate service restarts is not seen by it)"),
    K_INT_AT("release.drift.min_samples", "8", 2, 65536,
             "drift monitor: windows a device needs in a horizon to enter the summary",
             REL_KEYS_DRIFT, SIZE, rel_drift_opts, min_samples),
    {0},
};
