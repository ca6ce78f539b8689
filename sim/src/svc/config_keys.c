/* config_keys.c - the sim stage's configuration keys (see sim/config.h). They configure the
 * simulator when it runs inside `gcdp run` (or as defaults of `gcdp simulate`, whose flags
 * win); sim_options_from_config() reads them. */
#include "sim/config.h"

/* A row of this table: the general core_cfg_key row without choices or check. */
#define K(name, type, def, lo, hi, help) CORE_KEY(name, type, def, lo, hi, NULL, help, NULL)
#define MAXINT 9007199254740991.0 /* 2^53 - 1: exact in JSON numbers */

const struct core_cfg_key sim_config_keys[] = {
    K("sim.devices", CORE_CFG_INT, "16", 1, 100000, "number of simulated motes mote-0.."),
    K("sim.seed", CORE_CFG_INT, "1", 0, MAXINT, "simulator PRNG seed (synthetic data only)"),
    K("sim.rate", CORE_CFG_DOUBLE, "5000", 0, 1e7,
      "messages per second (token bucket); 0 = bounded only by sim.max_inflight"),
    K("sim.ticks", CORE_CFG_INT, "0", 0, MAXINT, "readings per device, then stop; 0 = unbounded"),
    K("sim.duration_s", CORE_CFG_DOUBLE, "0", 0, 1e9, "wall-clock cap in seconds; 0 = none"),
    K("sim.start_ms", CORE_CFG_INT, "1793491200000", 0, 253402300799999.0,
      "simulated clock start, epoch ms (default 2026-11-01T00:00:00Z)"),
    K("sim.period_ms", CORE_CFG_INT, NULL, 1, 86400000,
      "ms between a device's readings; unset: ingest.period_ms"),
    CORE_KEY("sim.wall_clock", CORE_CFG_BOOL, "false", 1, 0, NULL,
     "true: ts = wall-clock time, one tick per period in real time", NULL),
    K("sim.regime_change_at_s", CORE_CFG_DOUBLE, NULL, 0, 1e12,
      "switch to the second SEM after this many seconds of run time; unset: never"),
    K("sim.hetero_sd", CORE_CFG_DOUBLE, "0.1", 0, 10, "per-device edge weight sd"),
    K("sim.spatial_coupling", CORE_CFG_DOUBLE, "0.5", 0, 0.99, "coupling to the neighbour mote"),
    K("sim.spatial_lag", CORE_CFG_INT, "2", 0, 64, "spatial lag in ticks"),
    K("sim.ar", CORE_CFG_DOUBLE, "0.8", 0, 0.99, "temporal AR(1) coefficient of the innovations"),
    K("sim.channel_params", CORE_CFG_JSON, "null", 1, 0,
      "{channel: {base, scale, amp, offset_sd}} over the built-in physical mapping "
      "(docs/simulator.md); null: built-in"),
    K("sim.faults", CORE_CFG_STRING, "\"\"", 1, 0,
      "fault spec kind=rate,... (see gcdp simulate --help); empty: none"),
    K("sim.gap_ticks", CORE_CFG_INT, "20", 0, 1000000, "readings skipped by one gap fault"),
    K("sim.late_s", CORE_CFG_DOUBLE, "3600", 0, 1e9, "how far back a late reading goes, s"),
    K("sim.oversize_bytes", CORE_CFG_INT, NULL, 64, 67108864,
      "an oversize fault message has this many bytes + 1; unset: ingest.max_message_bytes"),
    K("sim.truth_path", CORE_CFG_STRING, NULL, 1, 0, "write the ground-truth SEM JSON here"),
    K("sim.max_inflight", CORE_CFG_INT, "20000", 1, 10000000, "cap on unacknowledged messages"),
    K("sim.lag_group", CORE_CFG_STRING, NULL, 1, 0,
      "consumer group whose lag bounds the producers (e.g. gcdp-ingest); unset: none"),
    K("sim.max_lag_bytes", CORE_CFG_INT, "2097152", 65536, 5242880,
      "per-partition lag (estimated bytes) allowed for sim.lag_group"),
    {0},
};
