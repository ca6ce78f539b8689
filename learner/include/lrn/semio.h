/* lrn/semio.h - a generated linear Gaussian SEM problem (lrn/sem.h) written as the files
 * `gcdp sem-gen` produces and `gcdp learn` reads.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Thread-safety: reentrant (distinct directories).
 */
#ifndef LRN_SEMIO_H
#define LRN_SEMIO_H

#include <stddef.h>

#include "core/err.h"
#include "lrn/sem.h"

/* Into the existing directory dir: p1.csv .. pP.csv (header x0..x{d-1}, one sample per row),
 * truth.json + truth.csv (the true weighted DAG), with o->hetero_var > 0 also truth_p<k>.json
 * (participant weights), and manifest.json (gcdp.semgen/1: the options o).
 * Returns CORE_OK, or the first write's error with eb naming the file. */
CORE_MUST_CHECK core_err lrn_sem_problem_write(const char *dir, const struct lrn_sem_opts *o,
                                               const struct lrn_sem_problem *pb, char *eb,
                                               size_t ebn);

#endif /* LRN_SEMIO_H */
