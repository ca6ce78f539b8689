/* config_keys.c - the sim stage's configuration keys (see sim/config.h). */
#include "sim/config.h"

const struct core_cfg_key sim_config_keys[] = {
    {NULL, 0, NULL, 0, 0, NULL, NULL, NULL},
};
