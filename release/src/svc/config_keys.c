/* config_keys.c - the release stage's configuration keys (see rel/config.h). */
#include "rel/config.h"

const struct core_cfg_key rel_config_keys[] = {
    {NULL, 0, NULL, 0, 0, NULL, NULL, NULL},
};
