/* lrn/config.h - configuration keys owned by the learner stage.
 * SPDX-License-Identifier: Apache-2.0
 *
 * The table is handed to core_config_new() by the app; keys are "<section>.<name>".
 * Thread-safety: immutable data.
 */
#ifndef LRN_CONFIG_H
#define LRN_CONFIG_H

#include <stddef.h>

#include "core/config.h"

/* Terminated by a {NULL} row. */
extern const struct core_cfg_key lrn_config_keys[];

/* Binding groups of lrn_config_keys (core_cfg_defaults / core_cfg_read): the options structs
 * whose keys, defaults, ranges and help are stated only in the table. */
enum lrn_keys_group {
    LRN_KEYS_ADMM = 1 /* struct lrn_admm_opts (lrn/admm.h): its numeric and bool fields */
};

struct lrn_admm_opts;
struct lrn_pgcd_opts;
struct lrn_dppgcd_opts;

/* Options from the learner.* keys (defaults: the paper's tuned values, docs/learner.md).
 *   cfg         borrowed, built with lrn_config_keys.
 *   d           dimension (to check learner.dp.m_public's length).
 *   admm, pgcd, dp  out (caller storage), fully written. dp->rounds = learner.rounds.
 *   m_public    caller storage of d doubles receiving learner.dp.m_public when
 *               learner.dp.m_source = "public" (dp->m_public then points to it); may be
 *               NULL otherwise.
 *   dp_enabled, cov_by_p  out: learner.dp.enabled; learner.cov_scale == "nP".
 *   errbuf      names the key on failure.
 * Returns CORE_OK or CORE_ECONFIG. */
CORE_MUST_CHECK core_err lrn_config_opts(const struct core_config *cfg, size_t d,
                                         struct lrn_admm_opts *admm, struct lrn_pgcd_opts *pgcd,
                                         struct lrn_dppgcd_opts *dp, double *m_public,
                                         bool *dp_enabled, bool *cov_by_p, char *errbuf,
                                         size_t errbuf_size);

struct lrn_runner_opts;

/* The learner.* keys an operator set explicitly (file, env, --set: core_config_is_explicit)
 * onto o, which holds the method's defaults (lrn_runner_opts_default); keys left at their
 * defaults do not replace the per-method ones. learner.blas_threads, when set, is applied.
 *   d, m_public, errbuf  as lrn_config_opts (m_public: d doubles, caller storage; o may
 *                        point into it afterwards).
 * Returns CORE_OK or CORE_ECONFIG (errbuf names the key; o partly written). */
CORE_MUST_CHECK core_err lrn_runner_opts_from_config(const struct core_config *cfg, size_t d,
                                                     struct lrn_runner_opts *o, double *m_public,
                                                     char *errbuf, size_t errbuf_size);

/* One learner.* key that, set explicitly, replaces the field at offset dst of struct
 * lrn_runner_opts (size bytes) with the value lrn_config_opts read for it. The keys bound in
 * LRN_KEYS_ADMM of lrn_config_keys need no row: they fill o->admm from the key table itself
 * (core_cfg_read_explicit). A key may have several rows (one per method that uses it). */
struct lrn_take {
    const char *key;
    size_t dst, src, size;
};

/* The rows lrn_runner_opts_from_config applies, in order; terminated by a {NULL} row. Every
 * key must be declared in lrn_config_keys (tests/learner/test_config_opts.c). */
extern const struct lrn_take lrn_runner_takes[];

/* Per-run overrides of a method's options (`gcdp learn` flags); NAN: not given. One value
 * reaches every method's field that means it (as the learner.* keys of lrn_runner_takes do):
 * rounds (ADMM and DP-PGCD), lambda (PGCD, DP-PGCD, NOTEARS), gamma, steps (PGCD and DP-PGCD
 * steps), w_threshold (ADMM and NOTEARS), eps and delta (DP-PGCD and DP-Fed-BNSL). */
struct lrn_runner_overrides {
    double rounds, rho1, rho2, lambda, gamma, steps, w_threshold, eps, delta, clip, cov_bound,
        server_iters, pgcd_tol;
};

/* Every field NAN (nothing given). */
struct lrn_runner_overrides lrn_runner_overrides_none(void);

/* Apply the given overrides onto o. Integer options above 1e9 become 1e9 (then refused by
 * the option checks with a message) instead of an out-of-range conversion. */
void lrn_runner_opts_override(struct lrn_runner_opts *o, const struct lrn_runner_overrides *v);

/* Set OpenBLAS's thread count for the whole process (learner.blas_threads, default 1).
 * The learner's matrices are small (d ≤ a few hundred) and OpenBLAS worker threads
 * busy-wait: measured on the shared 2-core machine, `gcdp learn` at d = 200 took 265 s
 * wall / 95 s CPU with the default threads and 44 s wall / 28 s CPU with one thread (same
 * result). n = 1 also stops the workers OpenBLAS started at load time (they spin for
 * ~0.1 s otherwise). Call at startup, before any learner work; not thread-safe.
 *   n  ≥ 1 (values < 1 are treated as 1). */
void lrn_blas_set_threads(int n);

/* lrn_blas_set_threads(learner.blas_threads). */
void lrn_config_apply_blas(const struct core_config *cfg);

#endif /* LRN_CONFIG_H */
