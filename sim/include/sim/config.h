/* sim/config.h - configuration keys owned by the sim stage.
 * SPDX-License-Identifier: Apache-2.0
 *
 * The table is handed to core_config_new() by the app; keys are "<section>.<name>".
 * Thread-safety: immutable data.
 */
#ifndef SIM_CONFIG_H
#define SIM_CONFIG_H

#include "core/config.h"

/* Terminated by a {0} row. */
extern const struct core_cfg_key sim_config_keys[];

/* Binding groups of sim_config_keys (core_cfg_defaults / core_cfg_read): the options structs
 * whose keys, defaults, ranges and help are stated only in the table. */
enum sim_keys_group {
    SIM_KEYS_OPTIONS = 1, /* struct sim_options (sim/sim.h), its own fields */
    SIM_KEYS_PRODUCER = 2 /* struct sim_producer_opts: sim.max_inflight, sim.max_lag_bytes */
};

#endif /* SIM_CONFIG_H */
