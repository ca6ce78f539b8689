/* publish.c - θ to topics.calibration with core's synchronous producer (core/ksync.h). */
#include "cal/publish.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ksync.h"

core_err cal_theta_publish(const struct core_config *cfg, const struct cal_theta *t, int timeout_ms,
                           char *eb, size_t ebn)
{
    struct core_ksync_opts po = {.topic = core_config_str(cfg, "topics.calibration")};
    struct core_ksync *p = NULL;
    json_t *j = NULL;
    char *val = NULL, key[32];
    core_err rc;

    if (!core_config_str(cfg, "broker.bootstrap")) {
        snprintf(eb, ebn,
                 "broker.bootstrap: needed to publish theta (e.g. --set "
                 "broker.bootstrap=@FILE written by `gcdp broker`)");
        return CORE_ECONFIG;
    }
    if ((rc = cal_theta_to_json(t, &j, eb, ebn)) != CORE_OK)
        return rc;
    val = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(j);
    if (!val) {
        snprintf(eb, ebn, "theta: JSON encoding failed");
        return CORE_ENOMEM;
    }
    snprintf(key, sizeof(key), "%" PRIu64, t->version);
    po.max_message_bytes = strlen(val);
    rc = core_ksync_new(cfg, &po, &p, eb, ebn);
    if (rc == CORE_OK)
        rc = core_ksync_send(p, key, strlen(key), val, strlen(val), NULL, NULL, 0, eb, ebn);
    if (rc == CORE_OK)
        rc = core_ksync_flush(p, timeout_ms, NULL, eb, ebn); /* theta acknowledged, or not */
    core_ksync_free(p);
    free(val);
    return rc;
}
