/* core/cfg_keys.h - short row macros for a stage's configuration key table (struct
 * core_cfg_key[], core/config.h), defined here once for every table. Include it only from a
 * key-table .c file (ingest/src/svc/config_keys.c, core/src/kconf.c, ...): the short names
 * are the table's notation, aliases of core/config.h's CORE_KEY_* macros.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Thread-safety: declarations only.
 */
#ifndef CORE_CFG_KEYS_H
#define CORE_CFG_KEYS_H

#include "core/config.h"

#define K_INT     CORE_KEY_INT
#define K_DBL     CORE_KEY_DBL
#define K_BOOL    CORE_KEY_BOOL
#define K_STR     CORE_KEY_STR
#define K_ENUM    CORE_KEY_ENUM
#define K_JSON    CORE_KEY_JSON
#define K_INT_AT  CORE_KEY_INT_AT
#define K_DBL_AT  CORE_KEY_DBL_AT
#define K_BOOL_AT CORE_KEY_BOOL_AT

#endif /* CORE_CFG_KEYS_H */
