/* ledger.c - `gcdp ledger`'s work on a ledger file (pipe/ledger.h): the units' totals, the
 * carry to a new scheme, the import into the store. */
#include "pipe/ledger.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include <jansson.h>

#include "core/dp_acct.h"
#include "core/dp_ledger.h"
#include "core/dp_ledger_cfg.h"
#include "core/dp_tally.h"

core_err pipe_ledger_import(const char *old, const char *nw, FILE *log, const char *prog, char *eb,
                            size_t ebn)
{
    struct core_dp_ledger_opts o;
    char why[1024] = "";
    uint64_t rows = 0;
    core_err rc;

    memset(&o, 0, sizeof(o));
    o.path = old;
    rc = core_dp_ledger_read_header(old, &o.scheme, &o.cap, why, sizeof(why));
    if (rc == CORE_OK)
        rc = core_dp_ledger_import(&o, nw, &rows, why, sizeof(why));
    if (rc != CORE_OK) {
        snprintf(eb, ebn, "--import %s --to %s: %s (%s)", old, nw, why[0] ? why : core_strerror(rc),
                 core_errname(rc));
        return rc == CORE_ECONFIG ? CORE_EINVAL : rc;
    }
    fprintf(log,
            "%s: imported %" PRIu64 " releases from %s into the store %s; "
            "every unit's total and every release's bytes verified equal. %s stays in place "
            "as the store's audit log\n",
            prog, rows, old, nw, old);
    return CORE_OK;
}

/* The units printed (a line or a JSON object each); the worst total and the count kept. */
struct units_out {
    const struct pipe_ledger_view *v;
    struct core_dp_cost cap, worst;
    size_t n_units;
};

static void print_unit(void *arg, const char *unit, size_t releases, const struct core_dp_cost *tot)
{
    struct units_out *o = arg;

    if (o->v->as_json) {
        json_t *j = json_pack("{s:s,s:I,s:f,s:f,s:f,s:f,s:f}", "unit", unit, "releases",
                              (json_int_t)releases, "eps", tot->eps, "delta", tot->delta, "rho",
                              tot->rho, "eps_cap", o->cap.eps, "delta_cap", o->cap.delta);
        json_dumpf(j, o->v->out, JSON_COMPACT | JSON_REAL_PRECISION(17));
        fputc('\n', o->v->out);
        json_decref(j);
    } else
        fprintf(o->v->out, "%-40s %9zu %14.6g %12.4g %12.4g %14.6g\n", unit, releases, tot->eps,
                tot->delta, tot->rho, o->cap.eps - tot->eps);
    if (core_dp_cost_max(&o->worst, tot) != CORE_OK)
        o->worst.eps = INFINITY;
    o->n_units++;
}

static void print_units(struct core_dp_tally *t, const struct pipe_ledger_view *v)
{
    struct units_out o = {v, {0, 0, 0}, {0, 0, 0}, 0};
    struct core_dp_scheme sc;
    uint64_t rows, torn;

    core_dp_tally_header(t, &sc, &o.cap, &rows, &torn);
    if (!v->as_json)
        fprintf(v->out, "%-40s %9s %14s %12s %12s %14s\n", "unit", "releases", "eps", "delta",
                "rho", "eps_remaining");
    core_dp_tally_foreach(t, print_unit, &o);
    fprintf(v->log,
            "%s: %" PRIu64 " releases, %zu units, max per unit eps=%.6g "
            "delta=%.4g (cap eps=%.6g delta=%.4g)%s\n",
            v->prog, rows, o.n_units, o.worst.eps, o.worst.delta, o.cap.eps, o.cap.delta,
            torn ? "; torn last line ignored (never published)" : "");
}

/* The carry: a new ledger (this configuration's scheme and caps) holding what the old one
 * spent, per new unit, and its releases for replay. */
static core_err carry_to(struct core_dp_tally *t, const char *old_path,
                         const struct core_dp_scheme *old, const struct core_config *cfg,
                         const struct pipe_ledger_view *v, char *eb, size_t ebn)
{
    struct core_dp_scheme nw;
    struct core_dp_cost cap = {0, 0, 0};
    size_t units = 0, releases = 0;
    core_err rc;

    core_dp_scheme_from_config(cfg, &nw);
    core_dp_cap_from_config(cfg, &cap);
    rc = core_dp_tally_carry_to(t, old_path, &nw, &cap, v->carry, &units, &releases, eb, ebn);
    if (rc != CORE_OK)
        return rc == CORE_EEXIST ? CORE_ECONFIG : rc == CORE_ECONFIG ? CORE_EINVAL : rc;
    fprintf(v->log,
            "%s: %zu units and %zu releases carried to %s (slot_ms %lld -> "
            "%lld); use it from now on and keep %s as the record of what was "
            "spent\n",
            v->prog, units, releases, v->carry, (long long)old->slot_ms, (long long)nw.slot_ms,
            old_path);
    return CORE_OK;
}

core_err pipe_ledger_view(const char *path, const struct pipe_ledger_view *v,
                          const struct core_config *cfg, char *eb, size_t ebn)
{
    struct core_dp_tally *t = NULL;
    struct core_dp_cost cap;
    struct core_dp_scheme sc;
    uint64_t rows, torn;
    core_err rc = CORE_OK;

    if (v->carry && v->prefix) {
        snprintf(eb, ebn, "--carry-to carries every unit; --unit does not apply");
        return CORE_ECONFIG;
    }
    rc = core_dp_tally_new(path, v->prefix, &t, eb, ebn);
    if (rc != CORE_OK)
        return rc == CORE_ECONFIG ? CORE_EINVAL : rc;
    core_dp_tally_header(t, &sc, &cap, &rows, &torn);
    fprintf(v->log,
            "%s: %s: units " CORE_DP_UNIT_FORMAT ", slot_ms %lld, time radius "
            "%lld x period %lld ms; cap eps=%.6g delta=%.4g\n",
            v->prog, path, (long long)sc.slot_ms, (long long)sc.time_radius,
            (long long)sc.period_ms, cap.eps, cap.delta);
    if (v->carry)
        rc = carry_to(t, path, &sc, cfg, v, eb, ebn);
    else
        print_units(t, v);
    core_dp_tally_free(t);
    return rc;
}
