/* lrn/notears.h - centralized NOTEARS (Zheng et al. 2018) on a covariance matrix: the
 * pooled-data reference of the Fed-Sparse-BNSL paper and its "local NOTEARS" baseline.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Solves  min_W  1/2 tr((I-W)^T Sigma (I-W)) + lambda ||W||_1  s.t. h(W) = 0
 * (= ||X - XW||_F^2 / (2n) + lambda ||W||_1 with Sigma = X^T X / n) by the augmented
 * Lagrangian of Zheng et al. (2018), Algorithm 1: inner problems
 *   F(W) + (rho/2) h(W)^2 + alpha h(W)
 * by OWL-QN (liblbfgs orthant-wise L-BFGS, which handles the l1 term exactly, in place of
 * the reference's W+/W- split with L-BFGS-B bounds), rho x10 while h does not fall below
 * h_shrink * previous h, alpha += rho h; stop at h <= h_tol or rho >= rho_max.
 * h and grad h come from lrn/acyclic.h. Finally |W| < w_threshold -> 0 and cycles broken.
 *
 * Pure: no I/O; allocation only at the start of lrn_notears_run().
 * Thread-safety: reentrant.
 */
#ifndef LRN_NOTEARS_H
#define LRN_NOTEARS_H

#include <stddef.h>

#include "core/err.h"

struct lrn_notears_opts {
    double lambda;         /* l1 weight (notears default 0.1) */
    double w_threshold;    /* final pruning (0.3) */
    double h_tol;          /* 1e-8 */
    double rho_max;        /* 1e16 */
    double h_shrink;       /* 0.25 */
    size_t max_outer;      /* dual ascent steps (100) */
    size_t lbfgs_max_iter; /* per inner solve, 0 = until convergence (default 0) */
};

struct lrn_notears_result {
    size_t outer;        /* dual steps done */
    size_t inner_solves; /* OWL-QN solves */
    size_t evals;        /* objective evaluations */
    double h_raw;        /* h before thresholding */
    size_t edges;        /* of the returned W */
};

struct lrn_notears_opts lrn_notears_opts_default(void);

/* Run NOTEARS.
 *   sigma  d x d symmetric (X^T X / n), borrowed.
 *   W      in: ignored (starts at 0); out: d x d learned, thresholded DAG.
 *   res    out (optional).
 * Returns CORE_OK, CORE_EINVAL (d = 0, bad options, non-finite sigma), CORE_ETOOBIG,
 * CORE_ENUMERIC (h or the objective became non-finite). */
CORE_MUST_CHECK core_err lrn_notears_run(size_t d, const double *sigma,
                                         const struct lrn_notears_opts *o, double *W,
                                         struct lrn_notears_result *res);

#endif /* LRN_NOTEARS_H */
