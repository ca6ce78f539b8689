/* test_runner_defaults.c - issue 9 (centred data by default) and issue 8 defect 4 ("private"
 * means private) at the runner level: lrn_covariance_ex, per-participant offsets, and the
 * dp-fed-sparse default privatising M with its ε included in the reported ε. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "lrn/admm.h"
#include "lrn/runner.h"
#include "lrn/sem.h"
#include "seeded_rng.h"

enum { D = 4, P = 4, N = 3000 };

static const double chain[D * D] = {0, 1.5, 0, 0, 0, 0, -1.2, 0, 0, 0, 0, 0.8, 0, 0, 0, 0};

/* P participants of the chain's data; participant p's column j shifted by offset(p, j). */
static double *make_data(double scale_offset, const double **xs, size_t *ns)
{
    struct core_prng rng;
    size_t *scratch = malloc(LRN_SEM_SCRATCH(D) * sizeof(size_t));
    double *X = malloc((size_t)P * N * D * sizeof(double));

    core_prng_seed(&rng, 17);
    for (size_t p = 0; p < P; p++) {
        double *Xp = X + p * N * D;
        cr_assert_eq(lrn_sem_sample(chain, D, N, 1.0, &rng, Xp, scratch), CORE_OK);
        for (size_t k = 0; k < N; k++)
            for (size_t j = 0; j < D; j++) /* large, different per participant and column */
                Xp[k * D + j] +=
                    scale_offset * (double)((p + 1) * 37 + (j + 1) * 11) * (p % 2 ? -1.0 : 1.0);
        xs[p] = Xp;
        ns[p] = N;
    }
    free(scratch);
    return X;
}

Test(runner, centred_covariance_ignores_offsets_and_standardize_gives_unit_diagonal)
{
    const double *xs[P], *xo[P];
    size_t ns[P];
    double *X0 = make_data(0.0, xs, ns), *X1 = make_data(100.0, xo, ns);
    double S0[D * D], S1[D * D], R[D * D];

    cr_assert_eq(lrn_covariance_ex(N, D, xs[1], 1.0, LRN_COV_CENTER, S0), CORE_OK);
    cr_assert_eq(lrn_covariance_ex(N, D, xo[1], 1.0, LRN_COV_CENTER, S1), CORE_OK);
    for (size_t x = 0; x < D * D; x++)
        cr_assert_float_eq(S0[x], S1[x], 1e-9 * (1.0 + fabs(S0[x])), "entry %zu", x);
    /* uncentred, the offsets dominate */
    cr_assert_eq(lrn_covariance(N, D, xo[1], 1.0, S1), CORE_OK);
    cr_assert_gt(fabs(S1[0] - S0[0]), 1e6);
    cr_assert_eq(lrn_covariance_ex(N, D, xo[1], 1.0, LRN_COV_STANDARDIZE, R), CORE_OK);
    for (size_t j = 0; j < D; j++)
        cr_assert_float_eq(R[j * D + j], 1.0, 1e-12);
    cr_assert_float_eq(R[1], S0[1] / sqrt(S0[0] * S0[5]), 1e-9);
    /* rescale: one factor for every column, mean variance 1, relative variances kept */
    cr_assert_eq(lrn_covariance_ex(N, D, xo[1], 1.0, LRN_COV_RESCALE, R), CORE_OK);
    double m = 0.0, mr = 0.0;
    for (size_t j = 0; j < D; j++) {
        m += S0[j * D + j] / (double)D;
        mr += R[j * D + j] / (double)D;
    }
    cr_assert_float_eq(mr, 1.0, 1e-12);
    for (size_t x = 0; x < D * D; x++)
        cr_assert_float_eq(R[x], S0[x] / m, 1e-9 * (1.0 + fabs(S0[x] / m)), "entry %zu", x);
    cr_assert_neq(R[0], R[D + 1], "the variances still differ between columns");
    free(X0);
    free(X1);
}

static void learn(const struct lrn_runner_opts *o, const double *const *xs, const size_t *ns,
                  double *W, struct lrn_runner_result *res)
{
    char eb[256] = "";
    cr_assert_eq(lrn_runner_run(o, D, P, xs, ns, NULL, NULL, NULL, W, res, eb, sizeof(eb)), CORE_OK,
                 "%s", eb);
}

/* Participants whose sensors have different offsets: with the default centring the learned
 * graph equals the zero-mean one; without it, it does not. */
Test(runner, per_participant_offsets_give_the_same_graph_when_centred)
{
    const double *xs[P], *xo[P];
    size_t ns[P];
    double *X0 = make_data(0.0, xs, ns), *X1 = make_data(100.0, xo, ns);
    double W0[D * D], W1[D * D];
    struct lrn_runner_opts o = lrn_runner_opts_default(LRN_METHOD_FED_SPARSE, D);
    struct lrn_runner_result r0, r1;
    int differs = 0;

    cr_assert(o.center, "centring is the default");
    cr_assert_not(o.standardize);
    learn(&o, xs, ns, W0, &r0);
    learn(&o, xo, ns, W1, &r1);
    cr_assert(r0.centered && r1.centered);
    cr_assert_eq(r1.admm.status, LRN_ADMM_CONVERGED);
    for (size_t x = 0; x < D * D; x++) {
        cr_assert_eq(W0[x] != 0.0, W1[x] != 0.0, "entry %zu: %g vs %g", x, W0[x], W1[x]);
        cr_assert_float_eq(W0[x], W1[x], 1e-3, "entry %zu", x);
        cr_assert_eq(W0[x] != 0.0, chain[x] != 0.0, "entry %zu", x);
    }
    o.center = false; /* the test can fail: raw offsets ruin the local statistic */
    learn(&o, xo, ns, W1, &r1);
    cr_assert_not(r1.centered);
    for (size_t x = 0; x < D * D; x++)
        differs |= (W1[x] != 0.0) != (chain[x] != 0.0) || fabs(W1[x] - W0[x]) > 0.25;
    cr_assert(differs, "uncentred data with offsets gave the centred answer");
    free(X0);
    free(X1);
}

/* Issue 8 defect 4: dp-fed-sparse (and the Mangold variant) privatise M by default, with
 * documented default ε_M and bound, and the reported ε includes ε_M; exact M must be asked
 * for and then no finite end-to-end ε is reported. */
static void dp_run(enum lrn_method m, enum lrn_m_source src, struct lrn_runner_result *res)
{
    const double *xs[P];
    size_t ns[P];
    double *X = make_data(0.0, xs, ns), W[D * D];
    struct lrn_runner_opts o = lrn_runner_opts_default(m, D);
    struct ts_rng *rng = ts_rng_seeded_new(5);
    char eb[256] = "";

    cr_assert_eq(o.dppgcd.m_source, LRN_M_PRIVATE, "private M is the default");
    cr_assert_float_eq(o.dppgcd.eps_m, LRN_DPPGCD_EPS_M_DEFAULT, 0.0);
    cr_assert_float_eq(o.dppgcd.m_bound, LRN_DPPGCD_M_BOUND_DEFAULT, 0.0);
    o.dppgcd.m_source = src;
    o.admm.max_rounds = o.dppgcd.rounds = 3;
    o.dppgcd.steps = 4;
    o.admm.primal_tol = 0.0; /* the same number of mechanisms in both runs */
    cr_assert_eq(
        lrn_runner_run(&o, D, P, xs, ns, ts_rng_iface(rng), NULL, NULL, W, res, eb, sizeof(eb)),
        CORE_OK, "%s", eb);
    ts_rng_free(rng);
    free(X);
}

static void private_by_default(enum lrn_method m)
{
    struct lrn_runner_result priv, exact;

    dp_run(m, LRN_M_PRIVATE, &priv);
    dp_run(m, LRN_M_EXACT, &exact);
    cr_assert(priv.m_private);
    cr_assert(isfinite(priv.eps_spent));
    cr_assert_not(exact.m_private);
    cr_assert(isinf(exact.eps_spent), "exact M must not report a finite ε: %g", exact.eps_spent);
    cr_assert(isfinite(exact.eps_opt));
    /* the private run's ε includes ε_M on top of the same optimisation mechanisms */
    cr_assert_gt(priv.eps_spent, exact.eps_opt + 0.1, "%g vs %g", priv.eps_spent, exact.eps_opt);
}

Test(runner, dp_fed_sparse_defaults_to_private_m_and_reports_its_eps)
{
    private_by_default(LRN_METHOD_DP_FED_SPARSE);
}

Test(runner, dp_fed_sparse_mangold_defaults_to_private_m_and_reports_its_eps)
{
    private_by_default(LRN_METHOD_DP_FED_SPARSE_MANGOLD);
}
