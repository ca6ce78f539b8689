/* config_keys.c - the ingest stage's configuration keys (see ing/config.h). */
#include "ing/config.h"

const struct core_cfg_key ing_config_keys[] = {
    {NULL, 0, NULL, 0, 0, NULL, NULL, NULL},
};
