/* ledger.c - the release service's ledger from configuration (rel/ledger.h). */
#include "rel/ledger.h"

#include <stdio.h>
#include <string.h>

#include "core/dp_ledger_cfg.h"
#include "rel/plan.h"

core_err rel_ledger_open(const struct core_config *cfg, const char *path,
                         struct core_dp_ledger_opts *lo, struct core_dp_ledger **out, char *eb,
                         size_t ebn)
{
    struct rel_opts ro;
    char why[1024] = "";
    core_err err;

    if (rel_opts_from_config(cfg, &ro, why, sizeof(why)) != CORE_OK) {
        snprintf(eb, ebn, "configuration error: %s", why);
        return CORE_ECONFIG;
    }
    memset(lo, 0, sizeof(*lo));
    lo->path = path;
    lo->cap = ro.cap;
    core_dp_scheme_from_config(cfg, &lo->scheme);
    err = core_dp_ledger_open_config(cfg, lo, out, why, sizeof(why));
    if (err == CORE_OK)
        return CORE_OK;
    snprintf(eb, ebn, "ledger '%s': %s (%s)", path,
             err == CORE_EAGAIN ? "held by another process (one release instance per ledger)"
             : why[0]           ? why
                                : "cannot open",
             core_errname(err));
    return err;
}
