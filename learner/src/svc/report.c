/* report.c - a learner run's options and result as JSON (lrn/report.h): the metrics file of
 * `gcdp learn`. */
#include "lrn/report.h"

#include <math.h>
#include <stdlib.h>

#include "core/mem.h"
#include "lrn/admm.h"
#include "lrn/baselines.h"
#include "lrn/dppgcd.h"
#include "lrn/graphout.h"
#include "lrn/metrics.h"

json_t *lrn_runner_opts_json(const struct lrn_runner_opts *o)
{
    return json_pack(
        "{s:s,s:I,s:f,s:f,s:s,s:f,s:f,s:f,s:I,s:f,s:f,s:f,s:f,s:f}", "method",
        lrn_method_name(o->method), "rounds", (json_int_t)o->admm.max_rounds, "rho1", o->admm.rho1,
        "rho2", o->admm.rho2, "wire", o->admm.wire == LRN_WIRE_DENSE ? "dense" : "sparse", "lambda",
        lrn_method_is_dppgcd(o->method) ? o->dppgcd.lambda : o->pgcd.lambda, "gamma",
        lrn_method_is_dppgcd(o->method) ? o->dppgcd.gamma : o->pgcd.gamma, "threshold",
        o->admm.w_threshold, "steps",
        (json_int_t)(lrn_method_is_dppgcd(o->method) ? o->dppgcd.steps : o->pgcd.max_steps), "eps",
        o->dppgcd.eps, "clip", o->dppgcd.clip, "cov_bound", o->cov_bound, "notears_lambda",
        o->notears.lambda, "delta", o->dppgcd.delta);
}

static const char *m_source_name(enum lrn_m_source m)
{
    return m == LRN_M_PRIVATE ? "private" : m == LRN_M_PUBLIC ? "public" : "exact";
}

const char *lrn_runner_stop_reason(const struct lrn_runner_opts *o,
                                   const struct lrn_runner_result *r)
{
    if (r->admm.status == LRN_ADMM_CONVERGED)
        return "primal and dual residuals and h under tolerance, support stable";
    if (r->admm.status == LRN_ADMM_STOPPED)
        return "stopped by the caller";
    if (!(o->admm.primal_tol > 0.0))
        return "max_rounds (no stopping rule: learner.primal_tol = 0)";
    return "max_rounds reached before the stopping rule held: NOT converged";
}

json_t *lrn_runner_result_json(const struct lrn_runner_opts *o, const struct lrn_runner_result *r,
                               double secs)
{
    json_t *j = json_pack("{s:f,s:I,s:I,s:f,s:f,s:I}", "wall_seconds", secs, "rounds",
                          (json_int_t)r->admm.rounds, "pruned", (json_int_t)r->admm.pruned, "h_raw",
                          !lrn_method_is_federated(o->method) ? r->notears.h_raw : r->admm.h_raw,
                          "bytes_model_mb", (double)r->admm.bytes_model / 1e6, "bytes_wire",
                          (json_int_t)r->admm.bytes_wire);
    json_object_set_new(j, "bytes_model", json_integer((json_int_t)r->admm.bytes_model));
    json_object_set_new(j, "centered", json_boolean(r->centered));
    json_object_set_new(j, "standardized", json_boolean(r->standardized));
    /* edges the final search removed, reversed or added (docs/learner.md "Final search") */
    json_object_set_new(j, "search_moves", json_integer((json_int_t)r->admm.search_moves));
    if (lrn_method_is_federated(o->method)) {
        json_t *c = json_object();
        json_object_set_new(c, "converged", json_boolean(r->admm.status == LRN_ADMM_CONVERGED));
        json_object_set_new(c, "stop_reason", json_string(lrn_runner_stop_reason(o, r)));
        json_object_set_new(c, "rounds", json_integer((json_int_t)r->admm.rounds));
        json_object_set_new(c, "max_rounds", json_integer((json_int_t)o->admm.max_rounds));
        json_object_set_new(c, "primal_residual", json_real(r->admm.primal_residual));
        json_object_set_new(c, "dual_residual", json_real(r->admm.dual_residual));
        json_object_set_new(c, "h_server", json_real(r->admm.h_server));
        json_object_set_new(c, "stable_rounds", json_integer((json_int_t)r->admm.stable_rounds));
        json_object_set_new(c, "primal_tol", json_real(o->admm.primal_tol));
        json_object_set_new(c, "dual_tol", json_real(o->admm.dual_tol));
        json_object_set_new(c, "h_tol", json_real(o->admm.h_tol));
        json_object_set_new(c, "stable_rounds_needed",
                            json_integer((json_int_t)o->admm.stable_rounds));
        json_object_set_new(j, "convergence", c);
    }
    if (lrn_method_is_dppgcd(o->method) || o->method == LRN_METHOD_DP_FED_BNSL) {
        bool priv = o->method == LRN_METHOD_DP_FED_BNSL || r->m_private;
        /* never a finite ε alone for a run that is not end-to-end private */
        json_object_set_new(j, "private", json_boolean(priv));
        json_object_set_new(j, "eps_spent",
                            priv && isfinite(r->eps_spent) ? json_real(r->eps_spent) : json_null());
        json_object_set_new(j, "m_private", json_boolean(priv));
        if (lrn_method_is_dppgcd(o->method)) {
            json_object_set_new(j, "m_source", json_string(m_source_name(o->dppgcd.m_source)));
            json_object_set_new(j, "eps_m",
                                r->m_private && o->dppgcd.m_source == LRN_M_PRIVATE
                                    ? json_real(o->dppgcd.eps_m)
                                : r->m_private ? json_real(0.0)
                                               : json_null());
            json_object_set_new(j, "eps_optimisation_and_m", json_real(r->eps_opt));
        }
    }
    return j;
}

/* The privacy line of the DP-PGCD methods. */
static void print_dppgcd_privacy(FILE *f, const struct lrn_runner_opts *o,
                                 const struct lrn_runner_result *r)
{
    if (r->m_private && o->dppgcd.m_source == LRN_M_PRIVATE)
        fprintf(f,
                "privacy: end-to-end eps = %.4g per participant (optimisation eps %g and private "
                "smoothness constants M eps_m %g, composed), delta %s\n",
                r->eps_spent, o->dppgcd.eps, o->dppgcd.eps_m,
                o->dppgcd.delta > 0.0 ? "as given" : "1/n_p^2");
    else if (r->m_private)
        fprintf(f,
                "privacy: end-to-end eps = %.4g per participant (optimisation eps %g; public "
                "smoothness constants M), delta %s\n",
                r->eps_spent, o->dppgcd.eps, o->dppgcd.delta > 0.0 ? "as given" : "1/n_p^2");
    else
        fprintf(f,
                "privacy: NOT end-to-end private: smoothness constants M exact from the data "
                "(eps for M = inf, private: false); the optimisation's mechanisms alone "
                "spent eps %.4g\n",
                r->eps_opt);
}

void lrn_runner_summary_print(FILE *f, const struct lrn_runner_opts *o,
                              const struct lrn_runner_result *r)
{
    if (lrn_method_is_federated(o->method))
        fprintf(f,
                "%s after %zu of %zu rounds (%s); primal %.2e (tol %g), dual %.2e (tol %g), "
                "h(W~) %.2e (tol %g), support stable %zu rounds (need %zu)\n",
                r->admm.status == LRN_ADMM_CONVERGED ? "converged" : "NOT converged",
                r->admm.rounds, o->admm.max_rounds, lrn_runner_stop_reason(o, r),
                r->admm.primal_residual, o->admm.primal_tol, r->admm.dual_residual,
                o->admm.dual_tol, r->admm.h_server, o->admm.h_tol, r->admm.stable_rounds,
                o->admm.stable_rounds);
    fprintf(f, "data: %s\n",
            r->standardized ? "each participant centred and standardized"
            : r->centered   ? "each participant centred"
                            : "raw (not centred)");
    if (o->method == LRN_METHOD_DP_FED_BNSL)
        fprintf(f, "privacy: eps = %.4g per participant (Gaussian covariance)\n", r->eps_spent);
    if (lrn_method_is_dppgcd(o->method))
        print_dppgcd_privacy(f, o, r);
}

core_err lrn_personalize_refit(size_t n, size_t d, const double *x, const double *w, double *bp)
{
    double *sig = core_xmalloc(d * d * sizeof(double));
    double *work = core_xmalloc((d * d + d) * sizeof(double));
    core_err rc = lrn_covariance(n, d, x, 1.0, sig);

    if (rc == CORE_OK)
        rc = lrn_personalize_ols(d, sig, w, bp, work);
    free(sig);
    free(work);
    return rc;
}

core_err lrn_personal_nmse_json(const char *truth_path, const double *w, const double *bp, size_t d,
                                json_t **row, char *eb, size_t ebn)
{
    double *tp = NULL;
    size_t dt = 0;
    core_err rc = lrn_graph_read(truth_path, d, &tp, &dt, eb, ebn);

    if (rc == CORE_OK) { /* json_real() of a non-finite NMSE is NULL: that member is left out */
        *row = json_object();
        json_object_set_new(*row, "nmse_global", json_real(lrn_metrics_nmse(w, tp, d * d)));
        json_object_set_new(*row, "nmse_personal", json_real(lrn_metrics_nmse(bp, tp, d * d)));
    }
    free(tp);
    return rc;
}
