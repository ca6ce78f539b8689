/* service_ledger.c - the calibrate service's process-level parts (cal/service.h): private
 * mode's own ledger, and the one-line summary at exit. */
#include "cal/service.h"

#include <errno.h>
#include <string.h>

#include "cal/calibrate.h"
#include "core/dp_ledger_cfg.h"
#include "core/dp_rng.h"
#include "core/fsutil.h"

void cal_service_summary_print(FILE *f, const struct cal_service *s, core_err status)
{
    struct cal_service_stats st;

    cal_service_stats(s, &st);
    fprintf(f,
            "{\"status\":\"%s\",\"theta_version\":%llu,\"made\":%llu,\"published\":%llu,"
            "\"by_reason\":{",
            core_errname(status), (unsigned long long)st.version, (unsigned long long)st.made,
            (unsigned long long)st.published);
    for (int i = 0; i < CAL_N_REASONS; i++)
        fprintf(f, "%s\"%s\":%llu", i ? "," : "", cal_reason_name(i),
                (unsigned long long)st.by_reason[i]);
    fprintf(f, "},\"rate_limited\":%llu,\"failures\":%llu}\n", (unsigned long long)st.rate_limited,
            (unsigned long long)st.failures);
    fflush(f);
}

/* calibrate.ledger.path (relative: under state.dir, created) into buf. */
static core_err ledger_path(const struct core_config *cfg, char *buf, size_t n, char *eb,
                            size_t ebn)
{
    const char *p = core_config_str(cfg, "calibrate.ledger.path");
    const char *dir = core_config_str(cfg, "state.dir");
    bool fits;

    if (!p || !p[0]) {
        snprintf(eb, ebn, "calibrate.ledger.path: empty");
        return CORE_ECONFIG;
    }
    if (p[0] != '/' && (!dir || !dir[0] || core_mkdir_p(dir, 0) != 0)) {
        snprintf(eb, ebn, "state.dir '%s': cannot create: %s", dir ? dir : "", strerror(errno));
        return CORE_ECONFIG;
    }
    fits = p[0] == '/' ? (size_t)snprintf(buf, n, "%s", p) < n
                       : (size_t)snprintf(buf, n, "%s/%s", dir, p) < n;
    if (!fits) {
        snprintf(eb, ebn, "calibrate.ledger.path: longer than %zu bytes", n - 1);
        return CORE_ECONFIG;
    }
    return CORE_OK;
}

core_err cal_service_ledger_open(const struct core_config *cfg, struct cal_service_opts *o,
                                 char *path, size_t n, struct core_dp_ledger **led, char *eb,
                                 size_t ebn)
{
    struct core_dp_ledger_opts lop = {.path = path};
    char why[1024] = "";
    core_err rc = ledger_path(cfg, path, n, eb, ebn);

    if (rc != CORE_OK)
        return rc;
    core_dp_scheme_from_config(cfg, &lop.scheme);
    core_dp_cap_from_config(cfg, &lop.cap);
    rc = core_dp_ledger_open(&lop, led, why, sizeof(why));
    if (rc != CORE_OK) {
        snprintf(eb, ebn, "ledger '%s': %s (%s)", path, why[0] ? why : "cannot open",
                 core_errname(rc));
        return rc == CORE_ECONFIG ? CORE_EINVAL : rc;
    }
    o->ledger = *led;
    o->ledger_path = path;
    o->scheme = lop.scheme;
    o->cap = lop.cap;
    o->rng = core_rng_os();
    return CORE_OK;
}
