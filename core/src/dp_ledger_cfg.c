/* dp_ledger_cfg.c - the ledger from configuration (core/dp_ledger_cfg.h). */
#include "core/dp_ledger_cfg.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/fsutil.h"

void core_dp_scheme_from_config(const struct core_config *cfg, struct core_dp_scheme *out)
{
    out->slot_ms = core_config_int(cfg, "release.ledger.slot_ms");
    out->time_radius = core_config_int(cfg, "release.policy.time_radius");
    out->period_ms = core_config_int(cfg, "ingest.period_ms");
}

void core_dp_cap_from_config(const struct core_config *cfg, struct core_dp_cost *out)
{
    out->eps = core_config_double(cfg, "release.ledger.cap_eps");
    out->delta = core_config_double(cfg, "release.ledger.cap_delta");
    out->rho = 0.0;
}

core_err core_dp_ledger_path(const struct core_config *cfg, const char *flag, bool create,
                             char *buf, size_t n, char *eb, size_t ebn)
{
    const char *p = flag ? flag : core_config_str(cfg, "release.ledger.path");
    const char *dir = core_config_str(cfg, "state.dir");

    if (!p || !p[0]) {
        snprintf(eb, ebn, "configuration error: release.ledger.path: empty");
        return CORE_ECONFIG;
    }
    if (flag || p[0] == '/') {
        snprintf(buf, n, "%s", p);
        return CORE_OK;
    }
    if (!dir || !dir[0]) {
        snprintf(eb, ebn,
                 "configuration error: state.dir: empty (the ledger needs an explicit "
                 "state directory)");
        return CORE_ECONFIG;
    }
    if (create && core_mkdir_p(dir, 0) != 0) {
        snprintf(eb, ebn, "state.dir '%s': cannot create: %s", dir, strerror(errno));
        return CORE_EIO;
    }
    if ((size_t)snprintf(buf, n, "%s/%s", dir, p) >= n) {
        snprintf(eb, ebn, "release.ledger.path: too long");
        return CORE_ECONFIG;
    }
    return CORE_OK;
}

int core_dp_ledger_store_path(const struct core_config *cfg, char *buf, size_t n)
{
    const char *store = core_config_str(cfg, "release.ledger.store");
    const char *dir = core_config_str(cfg, "state.dir");
    int w;

    buf[0] = '\0';
    if (!store || !store[0])
        return 0;
    if (store[0] == '/')
        w = snprintf(buf, n, "%s", store);
    else if (!dir || !dir[0])
        return -1; /* as core_dp_ledger_path: never under whatever the working directory is */
    else
        w = snprintf(buf, n, "%s/%s", dir, store);
    return w >= 0 && (size_t)w < n ? 0 : -1;
}

core_err core_dp_ledger_open_config(const struct core_config *cfg,
                                    const struct core_dp_ledger_opts *opts,
                                    struct core_dp_ledger **out, char *eb, size_t ebn)
{
    char path[4096];
    int64_t horizon = core_config_int(cfg, "release.ledger.replay_horizon_ms");
    struct core_dp_store_opts so = {
        .path = path, .replay_horizon_ms = horizon, .compact_step_ms = horizon / 4};

    if (core_dp_ledger_store_path(cfg, path, sizeof(path)) != 0) {
        snprintf(eb, ebn,
                 "configuration error: release.ledger.store: a relative path needs state.dir, "
                 "and the path must fit in %zu bytes",
                 sizeof(path));
        return CORE_ECONFIG;
    }
    if (!path[0])
        return core_dp_ledger_open(opts, out, eb, ebn);
    return core_dp_ledger_open_store(opts, &so, out, eb, ebn);
}
