/* cal/config.h - configuration keys owned by the calibrate stage.
 * SPDX-License-Identifier: Apache-2.0
 *
 * The table is handed to core_config_new() by the app; keys are "<section>.<name>".
 * Thread-safety: immutable data.
 */
#ifndef CAL_CONFIG_H
#define CAL_CONFIG_H

#include "core/config.h"

/* Terminated by a {0} row. */
extern const struct core_cfg_key cal_config_keys[];

/* Binding groups of cal_config_keys (core_cfg_defaults / core_cfg_read): the options structs
 * whose keys, defaults (Table 5), ranges and help are stated only in the table. */
enum cal_keys_group {
    CAL_KEYS_OPTS = 1 /* struct cal_opts (cal/calibrate.h): its numeric fields */
};

#endif /* CAL_CONFIG_H */
