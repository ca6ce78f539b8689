/* lrn/acyclic.h - matrix exponential and the NOTEARS acyclicity function h(W).
 * SPDX-License-Identifier: Apache-2.0
 *
 * h(W) = tr(exp(W∘W)) − d, ∇h(W) = exp(W∘W)ᵀ ∘ 2W (DESIGN.md §6; Zheng et al. 2018).
 * exp(A) by Padé scaling-and-squaring (the approximants of Higham 2005; degree 3..13 and the
 * scaling chosen from the norms of A's powers as in Al-Mohy & Higham 2009, Algorithm 5.1),
 * dense BLAS-3 products (OpenBLAS) and one LU solve (LAPACK dgesv) per call.
 *
 * Layout: every matrix is d×d, row-major, leading dimension d. W[i*d + j] is the weight
 * of the edge i → j.
 *
 * Pure: no I/O, no allocation after lrn_acyclic_ws_new().
 * Thread-safety: a workspace is used by one thread at a time; distinct workspaces are
 * independent. (OpenBLAS may use its own threads inside one call.)
 */
#ifndef LRN_ACYCLIC_H
#define LRN_ACYCLIC_H

#include <stddef.h>

#include "core/err.h"

/* Largest d accepted (caps the d×d workspaces: 16 doubles·d² ≈ 2 GB at this size). */
#define LRN_ACYCLIC_MAX_D 4096

struct lrn_acyclic_ws;

/* New workspace for matrices of order d (1 ≤ d ≤ LRN_ACYCLIC_MAX_D).
 *   out  on CORE_OK, new; caller frees with lrn_acyclic_ws_free().
 * Returns CORE_OK, CORE_EINVAL (d == 0), CORE_ETOOBIG (d > LRN_ACYCLIC_MAX_D). */
CORE_MUST_CHECK core_err lrn_acyclic_ws_new(size_t d, struct lrn_acyclic_ws **out);
void lrn_acyclic_ws_free(struct lrn_acyclic_ws *ws); /* NULL-safe */

/* Order the workspace was made for. */
size_t lrn_acyclic_ws_dim(const struct lrn_acyclic_ws *ws);

/* E = exp(A).
 *   A   in, d×d row-major, borrowed; must be finite.
 *   E   out, d×d row-major; may NOT alias A.
 * Returns CORE_OK, CORE_EINVAL (non-finite input), CORE_ENUMERIC (singular Padé
 * denominator or non-finite result, e.g. overflow). */
CORE_MUST_CHECK core_err lrn_expm(struct lrn_acyclic_ws *ws, const double *A, double *E);

/* h(W) = tr(exp(W∘W)) − d and, when grad != NULL, ∇h(W) = exp(W∘W)ᵀ ∘ 2W.
 *   W     in, d×d row-major, borrowed.
 *   h     out, ≥ 0 up to rounding (exactly 0 iff the support of W is acyclic).
 *   grad  out (optional), d×d row-major; may not alias W.
 * Returns as lrn_expm(). */
CORE_MUST_CHECK core_err lrn_acyclic_h(struct lrn_acyclic_ws *ws, const double *W, double *h,
                                       double *grad);

/* Is the directed graph {i → j : W[i*d+j] != 0, i != j} acyclic? (Kahn's algorithm.)
 *   work  caller-allocated, 2·d size_t. */
int lrn_graph_is_dag(size_t d, const double *W, size_t *work);

/* Post-processing used after ADMM (DESIGN §6, notears-admm): zero every |W_ij| < thr
 * (and the diagonal); then, while the graph has a cycle, zero the nonzero entry of
 * smallest |W_ij| (ties: lowest index). Result is a DAG.
 *   W     in/out, d×d row-major.
 *   work  caller-allocated, lrn_dag_prune_work_len(d) bytes.
 *   dropped  out (optional): number of edges removed by the cycle-breaking step.
 * Returns CORE_OK, CORE_EINVAL (thr not finite or < 0). */
size_t lrn_dag_prune_work_len(size_t d);
CORE_MUST_CHECK core_err lrn_dag_prune(size_t d, double *W, double thr, void *work,
                                       size_t *dropped);

#endif /* LRN_ACYCLIC_H */
