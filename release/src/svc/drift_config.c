/* drift_config.c - the release.drift.* keys (rel/config.h) -> struct rel_drift_opts. */
#include "rel/drift.h"

#include <stdio.h>

#include "rel/config.h"

core_err rel_drift_opts_from_config(const struct core_config *cfg, struct rel_drift_opts *o,
                                    bool *enabled, char *eb, size_t ebn)
{
    rel_drift_opts_default(o);
    *enabled = core_config_bool(cfg, "release.drift.enabled");
    core_cfg_read(cfg, rel_config_keys, REL_KEYS_DRIFT, o); /* the table's bound rows */
    if (o->min_samples > o->horizon) { /* the one cross-key rule; ranges are the table's */
        snprintf(eb, ebn,
                 "config key 'release.drift.min_samples': %zu is more than "
                 "release.drift.horizon (%zu)",
                 o->min_samples, o->horizon);
        return CORE_ECONFIG;
    }
    if (rel_drift_opts_check(o, eb, ebn) != CORE_OK)
        return CORE_ECONFIG; /* the message names the release.drift.* key */
    return CORE_OK;
}
