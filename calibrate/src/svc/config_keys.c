/* config_keys.c - the calibrate stage's configuration keys (see cal/config.h). */
#include "cal/config.h"

const struct core_cfg_key cal_config_keys[] = {
    {NULL, 0, NULL, 0, 0, NULL, NULL, NULL},
};
