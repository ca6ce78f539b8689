/* config_opts.c - learner.* configuration keys → algorithm options (see lrn/config.h). */
#include "lrn/config.h"

#include <math.h>
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

/* A learner.* key an operator set (file, env, --set) replaces the method's default. */
#define TAKE(key, dst, src)                                                                        \
    do {                                                                                           \
        if (core_config_is_explicit(cfg, key))                                                     \
            (dst) = (src);                                                                         \
    } while (0)

// A flat list, one TAKE per key (each a statement with its own branch): read as one table.
// NOLINTNEXTLINE(readability-function-size)
static void take_admm(const struct core_config *cfg, struct lrn_admm_opts *o,
                      const struct lrn_admm_opts *k)
{
    TAKE("learner.rounds", o->max_rounds, k->max_rounds);
    TAKE("learner.rho1", o->rho1, k->rho1);
    TAKE("learner.rho2", o->rho2, k->rho2);
    TAKE("learner.rho_schedule", o->schedule, k->schedule);
    TAKE("learner.rho1_growth", o->rho1_growth, k->rho1_growth);
    TAKE("learner.rho2_growth", o->rho2_growth, k->rho2_growth);
    TAKE("learner.rho_max", o->rho_max, k->rho_max);
    TAKE("learner.h_stall", o->h_stall, k->h_stall);
    TAKE("learner.rho2_balance", o->rho2_balance, k->rho2_balance);
    TAKE("learner.rho2_balance_factor", o->rho2_balance_factor, k->rho2_balance_factor);
    TAKE("learner.rho2_max", o->rho2_max, k->rho2_max);
    TAKE("learner.h_tol", o->h_tol, k->h_tol);
    TAKE("learner.primal_tol", o->primal_tol, k->primal_tol);
    TAKE("learner.dual_tol", o->dual_tol, k->dual_tol);
    TAKE("learner.stable_rounds", o->stable_rounds, k->stable_rounds);
    TAKE("learner.rho1_h_floor", o->rho1_h_floor, k->rho1_h_floor);
    TAKE("learner.w_keep", o->w_keep, k->w_keep);
    TAKE("learner.down_own_support", o->down_own_support, k->down_own_support);
    TAKE("learner.w_threshold", o->w_threshold, k->w_threshold);
    TAKE("learner.w_sparsify", o->w_sparsify, k->w_sparsify);
    TAKE("learner.b_sparsify", o->b_sparsify, k->b_sparsify);
    TAKE("learner.enforce_dag", o->enforce_dag, k->enforce_dag);
    TAKE("learner.refit_threshold", o->refit_threshold, k->refit_threshold);
    TAKE("learner.search", o->search, k->search);
    TAKE("learner.wire", o->wire, k->wire);
    TAKE("learner.lbfgs.max_iter", o->lbfgs_max_iter, k->lbfgs_max_iter);
    TAKE("learner.lbfgs.epsilon", o->lbfgs_epsilon, k->lbfgs_epsilon);
    TAKE("learner.lbfgs.wtol", o->lbfgs_wtol, k->lbfgs_wtol);
}

// A flat list, one TAKE per key (each a statement with its own branch): read as one table.
// NOLINTNEXTLINE(readability-function-size)
core_err lrn_runner_opts_from_config(const struct core_config *cfg, size_t d,
                                     struct lrn_runner_opts *o, double *m_public, char *errbuf,
                                     size_t errbuf_size)
{
    struct lrn_admm_opts admm;
    struct lrn_pgcd_opts pgcd;
    struct lrn_dppgcd_opts dp;
    bool dp_enabled, cov_by_p;
    core_err rc = lrn_config_opts(cfg, d, &admm, &pgcd, &dp, m_public, &dp_enabled, &cov_by_p,
                                  errbuf, errbuf_size);

    if (rc != CORE_OK)
        return rc;
    take_admm(cfg, &o->admm, &admm);
    TAKE("learner.rounds", o->dppgcd.rounds, dp.rounds);
    TAKE("learner.lambda", o->pgcd.lambda, pgcd.lambda);
    TAKE("learner.lambda", o->dppgcd.lambda, dp.lambda);
    TAKE("learner.lambda", o->notears.lambda, pgcd.lambda);
    TAKE("learner.w_threshold", o->notears.w_threshold, admm.w_threshold);
    TAKE("learner.pgcd.gamma", o->pgcd.gamma, pgcd.gamma);
    TAKE("learner.pgcd.gamma", o->dppgcd.gamma, dp.gamma);
    TAKE("learner.pgcd.max_steps", o->pgcd.max_steps, pgcd.max_steps);
    TAKE("learner.pgcd.tol", o->pgcd.tol, pgcd.tol);
    TAKE("learner.dp.steps", o->dppgcd.steps, dp.steps);
    TAKE("learner.dp.clip", o->dppgcd.clip, dp.clip);
    TAKE("learner.dp.eps", o->dppgcd.eps, dp.eps);
    TAKE("learner.dp.eps", o->cov_eps, dp.eps);
    TAKE("learner.dp.delta", o->dppgcd.delta, dp.delta);
    TAKE("learner.dp.delta", o->cov_delta, dp.delta);
    TAKE("learner.dp.eps_m", o->dppgcd.eps_m, dp.eps_m);
    TAKE("learner.dp.m_bound", o->dppgcd.m_bound, dp.m_bound);
    TAKE("learner.dp.m_source", o->dppgcd.m_source, dp.m_source);
    TAKE("learner.dp.m_public", o->dppgcd.m_public, dp.m_public);
    TAKE("learner.cov_scale", o->fs_cov_by_p, cov_by_p);
    if (core_config_is_explicit(cfg, "learner.center"))
        o->center = core_config_bool(cfg, "learner.center");
    if (core_config_is_explicit(cfg, "learner.standardize"))
        o->standardize = core_config_bool(cfg, "learner.standardize");
    if (core_config_is_explicit(cfg, "learner.rescale"))
        o->rescale = core_config_bool(cfg, "learner.rescale");
    if (core_config_is_explicit(cfg, "learner.blas_threads"))
        lrn_config_apply_blas(cfg);
    return CORE_OK;
}
#undef TAKE
