/* rel/config.h - configuration keys owned by the release stage.
 * SPDX-License-Identifier: Apache-2.0
 *
 * The table is handed to core_config_new() by the app; keys are "<section>.<name>".
 * Thread-safety: immutable data.
 */
#ifndef REL_CONFIG_H
#define REL_CONFIG_H

#include "core/config.h"

/* Terminated by a {0} row. */
extern const struct core_cfg_key rel_config_keys[];

/* Binding groups of rel_config_keys (core_cfg_defaults / core_cfg_read): the options structs
 * whose keys, defaults, ranges and help are stated only in the table. */
enum rel_keys_group {
    REL_KEYS_DRIFT = 1, /* struct rel_drift_opts (release.drift.*) */
    REL_KEYS_OPTS = 2   /* struct rel_opts (rel/plan.h): its numeric fields */
};

#endif /* REL_CONFIG_H */
