/* test_admm_config.c - learner.* keys map onto the algorithm options with paper defaults. */
#include <math.h>
#include <string.h>

#include <cblas.h>
#include <criterion/criterion.h>

#include "lrn/admm.h"
#include "lrn/config.h"
#include "lrn/dppgcd.h"
#include "lrn/pgcd.h"
#include "lrn/runner.h"

static struct core_config *cfg_new(void)
{
    static const struct core_cfg_key *const tables[] = {lrn_config_keys}; /* must outlive cfg */
    struct core_config *cfg = core_config_new(tables, 1);
    cr_assert_not_null(cfg);
    return cfg;
}

Test(admm_config, defaults_are_the_paper_tuned_values)
{
    struct core_config *cfg = cfg_new();
    struct lrn_admm_opts a;
    struct lrn_pgcd_opts p;
    struct lrn_dppgcd_opts dp;
    bool dpe = true, byp = true;
    char eb[256] = "";

    cr_assert_eq(lrn_config_opts(cfg, 20, &a, &p, &dp, NULL, &dpe, &byp, eb, sizeof(eb)), CORE_OK,
                 "%s", eb);
    /* Appendix B.3.2 (homogeneous): rho1 1000, rho2 1, lambda 0.1, gamma 0.5, threshold 0.3 */
    cr_assert_float_eq(a.rho1, 1000.0, 0.0);
    cr_assert_float_eq(a.rho2, 1.0, 0.0);
    cr_assert_float_eq(p.lambda, 0.1, 0.0);
    cr_assert_float_eq(p.gamma, 0.5, 0.0);
    cr_assert_float_eq(a.w_threshold, 0.3, 0.0);
    cr_assert_eq(a.max_rounds, 100);
    cr_assert_eq(a.wire, LRN_WIRE_SPARSE);
    /* our schedule choice (docs/learner.md): the key's default agrees with the driver's */
    cr_assert_eq(a.schedule, LRN_RHO_ON_STALL);
    cr_assert_float_eq(a.rho1_growth, lrn_admm_opts_default().rho1_growth, 0.0);
    cr_assert_float_eq(a.rho_max, lrn_admm_opts_default().rho_max, 0.0);
    /* the tuned defaults (docs/learner.md, seeds 100-109), stated once in the key rows */
    struct lrn_admm_opts d = lrn_admm_opts_default();
    cr_assert_eq(d.max_rounds, 100);
    cr_assert_eq(d.rho1, 1000.0);
    cr_assert_eq(d.rho1_growth, 2.0);
    cr_assert_eq(d.h_stall, 0.9);
    cr_assert_eq(d.h_tol, 1e-5);
    cr_assert_eq(d.primal_tol, 0.03);
    cr_assert_eq(d.dual_tol, 0.01);
    cr_assert_eq(d.stable_rounds, 10);
    cr_assert_eq(d.rho1_h_floor, 1e-5);
    cr_assert_eq(d.w_keep, 1.0);
    cr_assert(d.down_own_support && d.enforce_dag && d.acyc_on_server);
    cr_assert_eq(d.w_sparsify, 0.1);
    cr_assert_eq(d.b_sparsify, 0.02);
    cr_assert_eq(d.lbfgs_max_iter, 100);
    cr_assert_eq(d.lbfgs_epsilon, 1e-6);
    cr_assert_eq(d.lbfgs_wtol, 1e-6);
    cr_assert_eq(d.refit_threshold, 0.1);
    cr_assert_eq(d.rho2_balance, 10.0);
    cr_assert_eq(d.rho2_balance_factor, 2.0);
    cr_assert_eq(d.rho2_max, 1e4);
    /* Table 5, eps = 5: K = 20; C = 50 is our measured choice (docs/learner.md) */
    cr_assert_float_eq(dp.clip, 50.0, 0.0);
    cr_assert_eq(dp.steps, 20);
    cr_assert_eq(dp.rounds, 100);
    cr_assert_eq(dp.m_source, LRN_M_PRIVATE);
    cr_assert_not(dpe);
    cr_assert_not(byp);
    core_config_free(cfg);
}

Test(admm_config, public_m_and_overrides_are_read_and_checked)
{
    struct core_config *cfg = cfg_new();
    struct lrn_admm_opts a;
    struct lrn_pgcd_opts p;
    struct lrn_dppgcd_opts dp;
    double m[3];
    bool dpe, byp;
    char eb[256] = "";

    cr_assert_eq(core_config_set(cfg, "learner.dp.m_source", "\"public\"", "flag", eb, sizeof(eb)),
                 CORE_OK);
    cr_assert_eq(core_config_set(cfg, "learner.dp.m_public", "[1, 2, 3]", "flag", eb, sizeof(eb)),
                 CORE_OK);
    cr_assert_eq(core_config_set(cfg, "learner.wire", "\"dense\"", "flag", eb, sizeof(eb)),
                 CORE_OK);
    cr_assert_eq(core_config_set(cfg, "learner.rounds", "7", "flag", eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(lrn_config_opts(cfg, 3, &a, &p, &dp, m, &dpe, &byp, eb, sizeof(eb)), CORE_OK, "%s",
                 eb);
    cr_assert_eq(a.wire, LRN_WIRE_DENSE);
    cr_assert_eq(a.max_rounds, 7);
    cr_assert_eq(dp.rounds, 7);
    cr_assert_eq(dp.m_public, m);
    cr_assert_float_eq(m[2], 3.0, 0.0);
    /* wrong length names the key */
    cr_assert_eq(lrn_config_opts(cfg, 4, &a, &p, &dp, m, &dpe, &byp, eb, sizeof(eb)), CORE_ECONFIG);
    cr_assert(strstr(eb, "learner.dp.m_public") != NULL, "%s", eb);
    /* an inconsistent pair is refused with the option named */
    cr_assert_eq(core_config_set(cfg, "learner.w_sparsify", "0.5", "flag", eb, sizeof(eb)),
                 CORE_OK);
    cr_assert_eq(lrn_config_opts(cfg, 3, &a, &p, &dp, m, &dpe, &byp, eb, sizeof(eb)), CORE_ECONFIG);
    cr_assert(strstr(eb, "w_sparsify") != NULL, "%s", eb);
    core_config_free(cfg);
}

Test(admm_config, blas_threads_key_sets_openblas_threads)
{
    struct core_config *cfg = cfg_new();

    cr_assert_eq(core_config_int(cfg, "learner.blas_threads"), 1);
    lrn_blas_set_threads(2);
    cr_assert_eq(openblas_get_num_threads(), 2);
    lrn_config_apply_blas(cfg);
    cr_assert_eq(openblas_get_num_threads(), 1);
    core_config_free(cfg);
}

/* lrn_runner_opts_from_config: only keys an operator set replace the method's defaults; one
 * key reaches every method that reads it. */
Test(admm_config, runner_options_take_only_the_keys_set)
{
    struct core_config *cfg = cfg_new();
    struct lrn_runner_opts o = lrn_runner_opts_default(LRN_METHOD_FED_SPARSE, 3);
    const struct lrn_runner_opts d = o;
    double m[3];
    char eb[256] = "";

    cr_assert_eq(lrn_runner_opts_from_config(cfg, 3, &o, m, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert(o.admm.max_rounds == d.admm.max_rounds && o.admm.rho1 == d.admm.rho1 &&
                  o.pgcd.lambda == d.pgcd.lambda && o.notears.lambda == d.notears.lambda &&
                  o.center == d.center,
              "no key set: the method's defaults stay");
    cr_assert_eq(core_config_set(cfg, "learner.lambda", "0.25", "flag", eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(core_config_set(cfg, "learner.rounds", "9", "flag", eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(lrn_runner_opts_from_config(cfg, 3, &o, m, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_float_eq(o.pgcd.lambda, 0.25, 0.0);
    cr_assert_float_eq(o.dppgcd.lambda, 0.25, 0.0);
    cr_assert_float_eq(o.notears.lambda, 0.25, 0.0);
    cr_assert_eq(o.admm.max_rounds, 9);
    cr_assert_eq(o.dppgcd.rounds, 9);
    cr_assert_float_eq(o.admm.rho1, d.admm.rho1, 0.0, "a key left alone stays the method's");
    cr_assert_eq(core_config_set(cfg, "learner.w_sparsify", "0.5", "flag", eb, sizeof(eb)),
                 CORE_OK);
    cr_assert_eq(lrn_runner_opts_from_config(cfg, 3, &o, m, eb, sizeof(eb)), CORE_ECONFIG);
    cr_assert(strstr(eb, "w_sparsify") != NULL, "%s", eb);
    core_config_free(cfg);
}

static bool declared(const char *key, const struct core_cfg_key **row)
{
    for (const struct core_cfg_key *k = lrn_config_keys; k->name; k++)
        if (strcmp(k->name, key) == 0) {
            *row = k;
            return true;
        }
    return false;
}

/* lrn_runner_takes: every row names a key of lrn_config_keys (a misspelt key fails here, not
 * as a fatal error at run time) and a field inside struct lrn_runner_opts. */
Test(admm_config, every_runner_take_names_a_declared_key)
{
    size_t n = 0;

    for (const struct lrn_take *t = lrn_runner_takes; t->key; t++, n++) {
        const struct core_cfg_key *row = NULL;
        cr_assert(declared(t->key, &row), "lrn_runner_takes: '%s' is not a declared key", t->key);
        cr_assert(t->size > 0 && t->dst + t->size <= sizeof(struct lrn_runner_opts), "%s", t->key);
    }
    cr_assert_geq(n, 20, "the table is there");
}

/* Every learner.* option key maps onto a field of lrn_runner_opts: bound in LRN_KEYS_ADMM or
 * a row of lrn_runner_takes. Only the keys read elsewhere are exempt (the services', the
 * thread counts applied directly, learner.dp.enabled which selects a method). */
Test(admm_config, every_learner_option_key_maps_to_a_field)
{
    static const char *const elsewhere[] = {"learner.workers", "learner.blas_threads",
                                            "learner.dp.enabled"};

    for (const struct core_cfg_key *k = lrn_config_keys; k->name; k++) {
        bool mapped = k->group == LRN_KEYS_ADMM && k->field != CORE_FIELD_NONE;
        if (strncmp(k->name, "learner.service.", 16) == 0)
            continue;
        for (size_t i = 0; i < sizeof(elsewhere) / sizeof(*elsewhere); i++)
            mapped = mapped || strcmp(k->name, elsewhere[i]) == 0;
        for (const struct lrn_take *t = lrn_runner_takes; !mapped && t->key; t++)
            mapped = strcmp(t->key, k->name) == 0;
        cr_assert(mapped, "learner key '%s' maps to no field of lrn_runner_opts", k->name);
    }
}

/* An explicit enum, bool and pointer key reach their fields through the table. */
Test(admm_config, table_rows_of_every_type_apply)
{
    struct core_config *cfg = cfg_new();
    struct lrn_runner_opts o = lrn_runner_opts_default(LRN_METHOD_FED_SPARSE, 3);
    double m[3];
    char eb[256] = "";

    cr_assert_eq(core_config_set(cfg, "learner.wire", "dense", "flag", eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(core_config_set(cfg, "learner.center", "false", "flag", eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(core_config_set(cfg, "learner.dp.m_source", "public", "flag", eb, sizeof(eb)),
                 CORE_OK);
    cr_assert_eq(core_config_set(cfg, "learner.dp.m_public", "[1,2,3]", "flag", eb, sizeof(eb)),
                 CORE_OK);
    cr_assert_eq(core_config_set(cfg, "learner.dp.eps", "2.5", "flag", eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(core_config_set(cfg, "learner.h_tol", "0.001", "flag", eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(lrn_runner_opts_from_config(cfg, 3, &o, m, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(o.admm.wire, LRN_WIRE_DENSE);
    cr_assert(!o.center);
    cr_assert_eq(o.dppgcd.m_source, LRN_M_PUBLIC);
    cr_assert(o.dppgcd.m_public == m && m[2] == 3.0);
    cr_assert_float_eq(o.dppgcd.eps, 2.5, 0.0);
    cr_assert_float_eq(o.cov_eps, 2.5, 0.0);
    cr_assert_float_eq(o.admm.h_tol, 0.001, 0.0, "an LRN_KEYS_ADMM row, from the key table");
    core_config_free(cfg);
}

/* lrn_runner_opts_override: NAN leaves a field; one value reaches every method's field. */
Test(admm_config, overrides_reach_every_method)
{
    struct lrn_runner_opts o = lrn_runner_opts_default(LRN_METHOD_FED_SPARSE, 3);
    const struct lrn_runner_opts d = o;
    struct lrn_runner_overrides v = lrn_runner_overrides_none();

    lrn_runner_opts_override(&o, &v);
    cr_assert(memcmp(&o, &d, sizeof(o)) == 0, "nothing given: nothing changed");
    v.rounds = 1e12;
    v.lambda = 0.7;
    v.eps = 3.0;
    lrn_runner_opts_override(&o, &v);
    cr_assert_eq(o.admm.max_rounds, (size_t)1e9, "clamped, refused later by the checks");
    cr_assert_eq(o.dppgcd.rounds, (size_t)1e9);
    cr_assert(o.pgcd.lambda == 0.7 && o.dppgcd.lambda == 0.7 && o.notears.lambda == 0.7);
    cr_assert(o.dppgcd.eps == 3.0 && o.cov_eps == 3.0);
    cr_assert_float_eq(o.admm.rho1, d.admm.rho1, 0.0);
}
