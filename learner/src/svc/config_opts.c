/* config_opts.c - learner.* configuration keys → algorithm options (see lrn/config.h). */
#include "lrn/config.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cblas.h>

#include "lrn/admm.h"
#include "lrn/dppgcd.h"
#include "lrn/pgcd.h"
#include "lrn/runner.h"

static void read_admm(const struct core_config *cfg, struct lrn_admm_opts *o)
{
    *o = lrn_admm_opts_default();
    core_cfg_read(cfg, lrn_config_keys, LRN_KEYS_ADMM, o); /* the table's bound rows */
    o->schedule = strcmp(core_config_str(cfg, "learner.rho_schedule"), "every_round") == 0
                      ? LRN_RHO_EVERY_ROUND
                      : LRN_RHO_ON_STALL;
    o->wire = strcmp(core_config_str(cfg, "learner.wire"), "dense") == 0 ? LRN_WIRE_DENSE
                                                                         : LRN_WIRE_SPARSE;
}

static core_err read_m_public(const struct core_config *cfg, size_t d, double *m, char *eb,
                              size_t ebn)
{
    const json_t *a = core_config_json(cfg, "learner.dp.m_public");

    if (!m || !a || !json_is_array(a) || json_array_size(a) != d) {
        snprintf(eb, ebn, "learner.dp.m_public: need an array of %zu positive numbers", d);
        return CORE_ECONFIG;
    }
    for (size_t i = 0; i < d; i++) {
        const json_t *v = json_array_get(a, i);
        m[i] = json_is_number(v) ? json_number_value(v) : NAN;
        if (!(m[i] > 0.0) || !isfinite(m[i])) {
            snprintf(eb, ebn, "learner.dp.m_public[%zu]: not a positive finite number", i);
            return CORE_ECONFIG;
        }
    }
    return CORE_OK;
}

core_err lrn_config_opts(const struct core_config *cfg, size_t d, struct lrn_admm_opts *admm,
                         struct lrn_pgcd_opts *pgcd, struct lrn_dppgcd_opts *dp, double *m_public,
                         bool *dp_enabled, bool *cov_by_p, char *errbuf, size_t errbuf_size)
{
    const char *ms = core_config_str(cfg, "learner.dp.m_source");
    char why[128];

    read_admm(cfg, admm);
    if (lrn_admm_opts_check(admm, why, sizeof(why)) != CORE_OK) {
        snprintf(errbuf, errbuf_size, "learner.*: %s", why);
        return CORE_ECONFIG;
    }
    pgcd->lambda = core_config_double(cfg, "learner.lambda");
    pgcd->gamma = core_config_double(cfg, "learner.pgcd.gamma");
    pgcd->max_steps = (size_t)core_config_int(cfg, "learner.pgcd.max_steps");
    pgcd->tol = core_config_double(cfg, "learner.pgcd.tol");
    memset(dp, 0, sizeof(*dp));
    dp->lambda = pgcd->lambda;
    dp->gamma = pgcd->gamma;
    dp->steps = (size_t)core_config_int(cfg, "learner.dp.steps");
    dp->rounds = admm->max_rounds;
    dp->clip = core_config_double(cfg, "learner.dp.clip");
    dp->eps = core_config_double(cfg, "learner.dp.eps");
    dp->delta = core_config_double(cfg, "learner.dp.delta");
    dp->eps_m = core_config_double(cfg, "learner.dp.eps_m");
    dp->m_bound = core_config_double(cfg, "learner.dp.m_bound");
    dp->m_source = strcmp(ms, "public") == 0  ? LRN_M_PUBLIC
                   : strcmp(ms, "exact") == 0 ? LRN_M_EXACT
                                              : LRN_M_PRIVATE;
    *dp_enabled = core_config_bool(cfg, "learner.dp.enabled");
    *cov_by_p = strcmp(core_config_str(cfg, "learner.cov_scale"), "nP") == 0;
    if (dp->m_source == LRN_M_PUBLIC) {
        if (read_m_public(cfg, d, m_public, errbuf, errbuf_size) != CORE_OK)
            return CORE_ECONFIG;
        dp->m_public = m_public;
    }
    return CORE_OK;
}

/* OpenBLAS's own (not in cblas.h): join its worker threads; a later multi-threaded call
 * starts them again. Weak, so that another OpenBLAS build without it still links. */
// NOLINTNEXTLINE(readability-identifier-naming): OpenBLAS's name
extern void blas_thread_shutdown_(void) __attribute__((weak));

void lrn_blas_set_threads(int n)
{
    openblas_set_num_threads(n < 1 ? 1 : n);
    /* With one thread, also stop the workers OpenBLAS started when it was loaded: each
     * spins on sched_yield for ~2^28 cycles before it sleeps (measured: 22 % of the CPU of
     * a d = 20 `gcdp learn`, taken from the threads doing the work on a 2-core machine). */
    if (n <= 1 && blas_thread_shutdown_)
        blas_thread_shutdown_();
}

void lrn_config_apply_blas(const struct core_config *cfg)
{
    int64_t n = core_config_int(cfg, "learner.blas_threads");
    lrn_blas_set_threads(n > 256 ? 256 : (int)n);
}

/* What lrn_config_opts read: the source of every learner.* key's value below. */
struct lrn_read {
    struct lrn_admm_opts admm;
    struct lrn_pgcd_opts pgcd;
    struct lrn_dppgcd_opts dp;
    bool cov_by_p, center, standardize, rescale;
};

/* One row of lrn_runner_takes: field dst of lrn_runner_opts gets the value read at src of
 * struct lrn_read (equal sizes, checked at compile time). */
#define TAKE(k, d, s)                                                                              \
    {                                                                                              \
        .key = (k), .dst = offsetof(struct lrn_runner_opts, d),                                    \
        .src = offsetof(struct lrn_read, s),                                                       \
        .size = sizeof(((struct lrn_runner_opts *)0)->d) +                                         \
                0 * sizeof(char[sizeof(((struct lrn_runner_opts *)0)->d) ==                        \
                                        sizeof(((struct lrn_read *)0)->s)                          \
                                    ? 1                                                            \
                                    : -1])                                                         \
    }

const struct lrn_take lrn_runner_takes[] = {
    TAKE("learner.rho_schedule", admm.schedule, admm.schedule),
    TAKE("learner.wire", admm.wire, admm.wire),
    TAKE("learner.rounds", dppgcd.rounds, dp.rounds),
    TAKE("learner.lambda", pgcd.lambda, pgcd.lambda),
    TAKE("learner.lambda", dppgcd.lambda, dp.lambda),
    TAKE("learner.lambda", notears.lambda, pgcd.lambda),
    TAKE("learner.w_threshold", notears.w_threshold, admm.w_threshold),
    TAKE("learner.pgcd.gamma", pgcd.gamma, pgcd.gamma),
    TAKE("learner.pgcd.gamma", dppgcd.gamma, dp.gamma),
    TAKE("learner.pgcd.max_steps", pgcd.max_steps, pgcd.max_steps),
    TAKE("learner.pgcd.tol", pgcd.tol, pgcd.tol),
    TAKE("learner.dp.steps", dppgcd.steps, dp.steps),
    TAKE("learner.dp.clip", dppgcd.clip, dp.clip),
    TAKE("learner.dp.eps", dppgcd.eps, dp.eps),
    TAKE("learner.dp.eps", cov_eps, dp.eps),
    TAKE("learner.dp.delta", dppgcd.delta, dp.delta),
    TAKE("learner.dp.delta", cov_delta, dp.delta),
    TAKE("learner.dp.eps_m", dppgcd.eps_m, dp.eps_m),
    TAKE("learner.dp.m_bound", dppgcd.m_bound, dp.m_bound),
    TAKE("learner.dp.m_source", dppgcd.m_source, dp.m_source),
    TAKE("learner.dp.m_public", dppgcd.m_public, dp.m_public),
    TAKE("learner.cov_scale", fs_cov_by_p, cov_by_p),
    TAKE("learner.center", center, center),
    TAKE("learner.standardize", standardize, standardize),
    TAKE("learner.rescale", rescale, rescale),
    {.key = NULL},
};

#undef TAKE

core_err lrn_runner_opts_from_config(const struct core_config *cfg, size_t d,
                                     struct lrn_runner_opts *o, double *m_public, char *errbuf,
                                     size_t errbuf_size)
{
    struct lrn_read r;
    bool dp_enabled;
    core_err rc = lrn_config_opts(cfg, d, &r.admm, &r.pgcd, &r.dp, m_public, &dp_enabled,
                                  &r.cov_by_p, errbuf, errbuf_size);

    if (rc != CORE_OK)
        return rc;
    r.center = core_config_bool(cfg, "learner.center");
    r.standardize = core_config_bool(cfg, "learner.standardize");
    r.rescale = core_config_bool(cfg, "learner.rescale");
    core_cfg_read_explicit(cfg, lrn_config_keys, LRN_KEYS_ADMM, &o->admm);
    for (const struct lrn_take *t = lrn_runner_takes; t->key; t++)
        if (core_config_is_explicit(cfg, t->key))
            memcpy((char *)o + t->dst, (const char *)&r + t->src, t->size);
    if (core_config_is_explicit(cfg, "learner.blas_threads"))
        lrn_config_apply_blas(cfg);
    return CORE_OK;
}

struct lrn_runner_overrides lrn_runner_overrides_none(void)
{
    return (struct lrn_runner_overrides){.rounds = NAN,
                                         .rho1 = NAN,
                                         .rho2 = NAN,
                                         .lambda = NAN,
                                         .gamma = NAN,
                                         .steps = NAN,
                                         .w_threshold = NAN,
                                         .eps = NAN,
                                         .delta = NAN,
                                         .clip = NAN,
                                         .cov_bound = NAN,
                                         .server_iters = NAN,
                                         .pgcd_tol = NAN};
}

static size_t to_size(double x)
{
    return (size_t)(x > 1e9 ? 1e9 : x);
}

void lrn_runner_opts_override(struct lrn_runner_opts *o, const struct lrn_runner_overrides *v)
{
    if (!isnan(v->rounds))
        o->admm.max_rounds = o->dppgcd.rounds = to_size(v->rounds);
    if (!isnan(v->rho1))
        o->admm.rho1 = v->rho1;
    if (!isnan(v->rho2))
        o->admm.rho2 = v->rho2;
    if (!isnan(v->lambda))
        o->pgcd.lambda = o->dppgcd.lambda = o->notears.lambda = v->lambda;
    if (!isnan(v->gamma))
        o->pgcd.gamma = o->dppgcd.gamma = v->gamma;
    if (!isnan(v->steps))
        o->pgcd.max_steps = o->dppgcd.steps = to_size(v->steps);
    if (!isnan(v->w_threshold))
        o->admm.w_threshold = o->notears.w_threshold = v->w_threshold;
    if (!isnan(v->eps))
        o->dppgcd.eps = o->cov_eps = v->eps;
    if (!isnan(v->delta))
        o->dppgcd.delta = o->cov_delta = v->delta;
    if (!isnan(v->clip))
        o->dppgcd.clip = v->clip;
    if (!isnan(v->cov_bound))
        o->cov_bound = v->cov_bound;
    if (!isnan(v->server_iters))
        o->admm.lbfgs_max_iter = to_size(v->server_iters);
    if (!isnan(v->pgcd_tol))
        o->pgcd.tol = v->pgcd_tol;
}
