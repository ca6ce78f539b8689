/* lrn/sem.h - synthetic linear Gaussian SEM data (Fed-Sparse-BNSL paper, Appendix B.1).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Matrices are dense row-major doubles. A weighted adjacency W (d x d) has W[i*d+j] != 0
 * for an edge i -> j; a data matrix X (n x d) holds one sample per row.
 * The generator uses its own seeded PRNG (xoshiro256** seeded by splitmix64, normals by
 * Box-Muller): this is synthetic benchmark data, not privacy noise, so reproducibility
 * from a seed is the requirement (privacy noise comes from core's CSPRNG instead).
 * Thread-safety: functions are reentrant; one lrn_rng must not be shared between threads.
 */
#ifndef LRN_SEM_H
#define LRN_SEM_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/prng.h"

/* Largest d and n accepted by the generator (caps on caller-supplied sizes). */
#define LRN_SEM_MAX_D 4096
#define LRN_SEM_MAX_N 10000000

/* The generator's randomness is core/prng.h (seeded xoshiro256**; synthetic data only). */

/* Options of one synthetic problem. Fill with lrn_sem_opts_default() then override. */
struct lrn_sem_opts {
    size_t d;              /* nodes */
    size_t participants;   /* P */
    size_t n_per;          /* samples per participant (n_p) */
    double expected_edges; /* expected edge count of the Erdos-Renyi graph (paper: d) */
    double w_lo, w_hi;     /* |weight| ~ U[w_lo, w_hi], sign +-1 (paper: 0.5, 2) */
    double hetero_var;     /* 0: homogeneous; else per-participant weight ~ N(w, hetero_var) */
    double noise_sd;       /* sd of the additive Gaussian noise (paper: 1) */
    uint64_t seed;
};

/* Paper defaults: d = 20, P = 8, n_p = 5000, expected d edges, U([-2,-.5] u [.5,2]),
 * homogeneous, N(0,1) noise, seed 1. */
struct lrn_sem_opts lrn_sem_opts_default(void);

/* Erdos-Renyi DAG (Appendix B.1.1): each of the d(d-1)/2 unordered pairs is an edge with
 * probability p = expected_edges / (d(d-1)/2), oriented along a uniformly random
 * topological order; weights as in opts.
 *   W  out, d*d doubles (caller storage), fully overwritten.
 * Returns CORE_OK, CORE_EINVAL (bad options, d < 2 or > LRN_SEM_MAX_D). */
CORE_MUST_CHECK core_err lrn_sem_dag(const struct lrn_sem_opts *opts, struct core_prng *rng,
                                     double *w);

/* Participant weights (Appendix B.1.2): w_p[e] = w[e] + N(0, var) on the edges of w only
 * (zeros stay zero). var = 0 copies w.
 *   w_p  out, d*d doubles (caller storage; may not alias w). */
void lrn_sem_perturb(const double *w, size_t d, double var, struct core_prng *rng, double *w_p);

#define LRN_SEM_SCRATCH(d) ((d) * (d) + 2 * (d) + 1)

/* n samples of X = X W + Z, Z ~ N(0, noise_sd^2 I) (paper Section 2, eq. 1), generated
 * along a topological order of w.
 *   w        borrowed d*d weighted DAG.
 *   x        out, n*d doubles (caller storage).
 *   scratch  caller storage of at least LRN_SEM_SCRATCH(d) size_t.
 * Returns CORE_OK, CORE_EINVAL (w has a cycle, n or d out of range). */
CORE_MUST_CHECK core_err lrn_sem_sample(const double *w, size_t d, size_t n, double noise_sd,
                                        struct core_prng *rng, double *x, size_t *scratch);

/* Topological order of the graph {(i,j): w[i*d+j] != 0} by Kahn's algorithm.
 *   order    out, d indices; scratch: caller storage of 2*d size_t.
 * Returns CORE_OK, or CORE_EINVAL when the graph has a cycle (or a self-loop). */
CORE_MUST_CHECK core_err lrn_sem_topo_order(const double *w, size_t d, size_t *order,
                                            size_t *scratch);

/* A whole synthetic federated problem held in memory. */
struct lrn_sem_problem {
    size_t d, participants, n_per;
    double *w;   /* d*d global weighted DAG */
    double *w_p; /* participants * d*d participant weights (= w when homogeneous) */
    double *x;   /* participants * n_per * d samples; participant p at x + p*n_per*d */
};

/* Generate DAG, participant weights and data from opts (one seeded stream, in that order:
 * DAG, then for each participant its weights then its samples).
 *   out  on CORE_OK new; caller frees with lrn_sem_problem_free().
 * Returns CORE_OK, CORE_EINVAL (bad options), CORE_ETOOBIG (participants*n_per*d over
 * LRN_SEM_MAX_CELLS). */
#define LRN_SEM_MAX_CELLS ((size_t)1 << 31)
CORE_MUST_CHECK core_err lrn_sem_problem_new(const struct lrn_sem_opts *opts,
                                             struct lrn_sem_problem **out);
void lrn_sem_problem_free(struct lrn_sem_problem *pb); /* NULL-safe */

#endif /* LRN_SEM_H */
