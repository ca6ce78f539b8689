/* lrn/report.h - a learner run's options and result as JSON objects (the "options" and
 * "result" members of the gcdp.learn-metrics/1 file `gcdp learn` writes), its summary lines,
 * and the per-participant personalisation (the "personalization" member).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Thread-safety: pure functions of their arguments.
 */
#ifndef LRN_REPORT_H
#define LRN_REPORT_H

#include <stdio.h>

#include <jansson.h>

#include "core/err.h"
#include "lrn/runner.h"

/* The options that shaped the run (method, rounds, rho1/rho2, wire, lambda, gamma, threshold,
 * steps, eps, clip, cov_bound, notears_lambda, delta). New reference. */
json_t *lrn_runner_opts_json(const struct lrn_runner_opts *o);

/* Why the ADMM run ended, in words (for the summary and the metrics); static string. */
const char *lrn_runner_stop_reason(const struct lrn_runner_opts *o,
                                   const struct lrn_runner_result *r);

/* The result: wall seconds (secs), rounds, pruned, h, bytes on the wire and in the paper's
 * model, centring; convergence (federated methods); privacy accounting (never a finite eps
 * for a run that is not end-to-end private). New reference. */
json_t *lrn_runner_result_json(const struct lrn_runner_opts *o, const struct lrn_runner_result *r,
                               double secs);

/* The summary lines of a finished run, to f: convergence (federated methods), the data's
 * centring, and the privacy claim (never an end-to-end eps for a run that is not private). */
void lrn_runner_summary_print(FILE *f, const struct lrn_runner_opts *o,
                              const struct lrn_runner_result *r);

/* Personalisation of one participant (Appendix B.2.2): the OLS refit of the learned DAG's
 * edges on the participant's own data (lrn_covariance with scale 1, lrn_personalize_ols).
 *   x   n x d row-major data of the participant, borrowed.
 *   w   the learned DAG, d x d, borrowed.
 *   bp  out: the refitted d x d weights, caller-allocated.
 * Returns CORE_OK, or CORE_EINVAL / CORE_ENUMERIC (singular parent covariance). */
CORE_MUST_CHECK core_err lrn_personalize_refit(size_t n, size_t d, const double *x, const double *w,
                                               double *bp);

/* One "personalization" row of the metrics file: {"nmse_global": NMSE(w, truth),
 * "nmse_personal": NMSE(bp, truth)}, truth read from truth_path (lrn_graph_read, d x d).
 *   w, bp  d x d, borrowed.
 *   row    out: a new reference on CORE_OK (caller json_decref()s or steals it).
 * Returns CORE_OK, or lrn_graph_read's CORE_EIO / CORE_EPARSE / CORE_EINVAL (eb). */
CORE_MUST_CHECK core_err lrn_personal_nmse_json(const char *truth_path, const double *w,
                                                const double *bp, size_t d, json_t **row, char *eb,
                                                size_t ebn);

#endif /* LRN_REPORT_H */
