/* lrn/report.h - a learner run's options and result as JSON objects (the "options" and
 * "result" members of the gcdp.learn-metrics/1 file `gcdp learn` writes).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Thread-safety: pure functions of their arguments.
 */
#ifndef LRN_REPORT_H
#define LRN_REPORT_H

#include <jansson.h>

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

#endif /* LRN_REPORT_H */
