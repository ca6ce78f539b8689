/* lrn/learn.h - one offline learning run over participant CSV files (`gcdp learn`): read the
 * files, run one of the learner's methods (lrn/runner.h) and report it: the DAG files
 * (lrn/graphout.h), the metrics file PREFIX.metrics.json (gcdp.learn-metrics/1, members from
 * lrn/report.h), per-round progress lines and the summary lines.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Thread-safety: one run per object, driven from one thread (the pool given to
 * lrn_learn_load() and the options' pool run their own workers).
 */
#ifndef LRN_LEARN_H
#define LRN_LEARN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "core/config.h"
#include "core/err.h"
#include "core/pool.h"
#include "lrn/runner.h"

/* The most participant files one run reads. */
#define LRN_LEARN_MAX_P 1024

/* What one run asks for. Every pointer is borrowed and must stay valid until
 * lrn_learn_free(). */
struct lrn_learn_job {
    const char *const *files;  /* the P participant CSV files (lrn/csvio.h format) */
    size_t P;                  /* 1..LRN_LEARN_MAX_P */
    size_t min_rows;           /* minimum data rows per file */
    const char *out;           /* output prefix: PREFIX.{json,csv,dot,png,metrics.json} */
    const char *truth;         /* NULL, or the true DAG (lrn_graph_read): metrics, colours */
    const char *const *ptruth; /* n_ptruth (0 or P) true weights per participant: NMSE */
    size_t n_ptruth;
    bool personalize; /* write PREFIX.p<k>.personal.* (OLS refit per participant) */
    bool png;         /* render PREFIX.png with graphviz (a failure only warns) */
    bool quiet;       /* no per-round progress lines */
    bool trace;       /* a diagnostic line per round instead of the progress line */
    FILE *out_f;      /* summary lines (the first metrics line, "wrote ...") */
    FILE *log_f;      /* progress lines and warnings */
    const char *prog; /* prefix of the warnings on log_f, e.g. "gcdp learn" */
};

struct lrn_learn;

/* Read the job's files (spread over pool's threads; NULL: one after another).
 *   job  borrowed; retained until lrn_learn_free().
 *   out  on CORE_OK a new object (caller frees with lrn_learn_free()); NULL on failure.
 *   eb   on failure the reason, naming the file.
 * Returns CORE_OK, lrn_csv_read_all's failure, or CORE_EINVAL (fewer than 2 columns). */
CORE_MUST_CHECK core_err lrn_learn_load(const struct lrn_learn_job *job, struct core_pool *pool,
                                        struct lrn_learn **out, char *eb, size_t ebn);

/* The number of variables (columns) of the loaded data. */
size_t lrn_learn_d(const struct lrn_learn *l);

/* The learner.* keys set explicitly onto o (lrn_runner_opts_from_config over the method's
 * defaults); the public smoothness constants live in l, so o is valid until
 * lrn_learn_free(l). Returns CORE_OK or CORE_ECONFIG (eb names the key). */
CORE_MUST_CHECK core_err lrn_learn_configure(struct lrn_learn *l, const struct core_config *cfg,
                                             struct lrn_runner_opts *o, char *eb, size_t ebn);

/* Read the truth, create the directory of the output prefix, run the method with options o
 * (noise from the OS CSPRNG) and write the outputs and the summary. Call once.
 *   o  borrowed.
 * Returns CORE_OK, or the failure with eb holding the reason: the truth file's error, CORE_EIO
 * (directory, outputs, metrics file), the run's error, CORE_ENUMERIC (singular OLS refit). */
CORE_MUST_CHECK core_err lrn_learn_run(struct lrn_learn *l, const struct lrn_runner_opts *o,
                                       char *eb, size_t ebn);

/* Free l and everything it holds. NULL-safe. */
void lrn_learn_free(struct lrn_learn *l);

#endif /* LRN_LEARN_H */
