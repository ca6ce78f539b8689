/* lrn/config.h - configuration keys owned by the learner stage.
 * SPDX-License-Identifier: Apache-2.0
 *
 * The table is handed to core_config_new() by the app; keys are "<section>.<name>".
 * Thread-safety: immutable data.
 */
#ifndef LRN_CONFIG_H
#define LRN_CONFIG_H

#include "core/config.h"

/* Terminated by a {NULL} row. */
extern const struct core_cfg_key lrn_config_keys[];

#endif /* LRN_CONFIG_H */
