/* config_keys.c - the sim stage's configuration keys (see sim/config.h). They configure the
 * simulator when it runs inside `gcdp run` (or as defaults of `gcdp simulate`, whose flags
 * win); sim_options_from_config() reads them. */
#include "sim/config.h"

#include "core/cfg_keys.h"
#include "sim/sim.h"

/* A row of this table: the general core_cfg_key row without choices or check. */
#define K(name, type, def, lo, hi, help) CORE_KEY(name, type, def, lo, hi, NULL, help, NULL)
#define MAXINT                           9007199254740991.0 /* 2^53 - 1: exact in JSON numbers */

const struct core_cfg_key sim_config_keys[] = {
    K_INT_AT("sim.devices", "16", 1, 100000, "number of simulated motes mote-0..", SIM_KEYS_OPTIONS,
             SIZE, sim_options, devices),
    K_INT_AT("sim.seed", "1", 0, MAXINT, "simulator PRNG seed (synthetic data only)",
             SIM_KEYS_OPTIONS, U64, sim_options, seed),
    K_DBL_AT("sim.rate", "5000", 0, 1e7,
             "messages per second (token bucket); 0 = bounded only by sim.max_inflight",
             SIM_KEYS_OPTIONS, sim_options, rate),
    K_INT_AT("sim.ticks", "0", 0, MAXINT, "readings per device, then stop; 0 = unbounded",
             SIM_KEYS_OPTIONS, U64, sim_options, ticks),
    K_DBL_AT("sim.duration_s", "0", 0, 1e9, "wall-clock cap in seconds; 0 = none", SIM_KEYS_OPTIONS,
             sim_options, duration_s),
    K_INT_AT("sim.start_ms", "1793491200000", 0, 253402300799999.0,
             "simulated clock start, epoch ms (default 2026-11-01T00:00:00Z)", SIM_KEYS_OPTIONS,
             I64, sim_options, start_ms),
    K("sim.period_ms", CORE_CFG_INT, NULL, 1, 86400000,
      "ms between a device's readings; unset: ingest.period_ms"),
    K_BOOL_AT("sim.wall_clock", "false",
              "true: ts = wall-clock time, one tick per period in real time", SIM_KEYS_OPTIONS,
              sim_options, wall_clock),
    K("sim.regime_change_at_s", CORE_CFG_DOUBLE, NULL, 0, 1e12,
      "switch to the second SEM after this many seconds of run time; unset: never"),
    K_DBL_AT("sim.hetero_sd", "0.1", 0, 10, "per-device edge weight sd", SIM_KEYS_OPTIONS,
             sim_options, hetero_sd),
    K_DBL_AT("sim.spatial_coupling", "0.5", 0, 0.99, "coupling to the neighbour mote",
             SIM_KEYS_OPTIONS, sim_options, spatial_coupling),
    K_INT_AT("sim.spatial_lag", "2", 0, 64, "spatial lag in ticks", SIM_KEYS_OPTIONS, UINT,
             sim_options, spatial_lag),
    K_DBL_AT("sim.ar", "0.8", 0, 0.99, "temporal AR(1) coefficient of the innovations",
             SIM_KEYS_OPTIONS, sim_options, ar),
    K("sim.channel_params", CORE_CFG_JSON, "null", 1, 0,
      "{channel: {base, scale, amp, offset_sd}} over the built-in physical mapping "
      "(docs/simulator.md); null: built-in"),
    K("sim.faults", CORE_CFG_STRING, "\"\"", 1, 0,
      "fault spec kind=rate,... (see gcdp simulate --help); empty: none"),
    K_INT_AT("sim.gap_ticks", "20", 0, 1000000, "readings skipped by one gap fault",
             SIM_KEYS_OPTIONS, UINT, sim_options, gap_ticks),
    K_DBL_AT("sim.late_s", "3600", 0, 1e9, "how far back a late reading goes, s", SIM_KEYS_OPTIONS,
             sim_options, late_s),
    K("sim.oversize_bytes", CORE_CFG_INT, NULL, 64, 67108864,
      "an oversize fault message has this many bytes + 1; unset: ingest.max_message_bytes"),
    K("sim.truth_path", CORE_CFG_STRING, NULL, 1, 0, "write the ground-truth SEM JSON here"),
    K_INT_AT("sim.max_inflight", "20000", 1, 10000000, "cap on unacknowledged messages",
             SIM_KEYS_PRODUCER, SIZE, sim_producer_opts, max_inflight),
    K("sim.lag_group", CORE_CFG_STRING, NULL, 1, 0,
      "consumer group whose lag bounds the producers (e.g. gcdp-ingest); unset: none"),
    K_INT_AT("sim.max_lag_bytes", "2097152", 65536, 5242880,
             "per-partition lag (estimated bytes) allowed for sim.lag_group", SIM_KEYS_PRODUCER,
             SIZE, sim_producer_opts, max_lag_bytes),
    {0},
};
