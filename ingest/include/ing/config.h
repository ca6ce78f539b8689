/* ing/config.h - configuration keys owned by the ingest stage.
 * SPDX-License-Identifier: Apache-2.0
 *
 * The table is handed to core_config_new() by the app; keys are "<section>.<name>".
 * Thread-safety: immutable data.
 */
#ifndef ING_CONFIG_H
#define ING_CONFIG_H

#include "core/config.h"

/* Terminated by a {0} row. */
extern const struct core_cfg_key ing_config_keys[];

/* Binding groups of ing_config_keys (core_cfg_defaults / core_cfg_read): the options structs
 * whose keys, defaults, ranges and help are stated only in the table. */
enum ing_keys_group {
    ING_KEYS_PARAMS = 1 /* struct ing_params (ing/engine.h): its numeric and bool fields */
};

#endif /* ING_CONFIG_H */
