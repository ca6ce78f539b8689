/* config_keys.c - the learner stage's configuration keys (see lrn/config.h). */
#include "lrn/config.h"

const struct core_cfg_key lrn_config_keys[] = {
    {NULL, 0, NULL, 0, 0, NULL, NULL, NULL},
};
