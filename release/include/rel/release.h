/* rel/release.h - Algorithm 4 on window records: parse a window (gcdp.window/2 JSON, with
 * its provenance),
 * project, refuse what the plan does not cover, charge the write-ahead ledger, draw secure
 * noise, encode the gcdp.released/1 record, and hand it out only once it is durable.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Release id = "<window id>@<θ version>": published at most once. A window whose release
 * id is already in the ledger is republished byte-for-byte from the ledger (replay),
 * never resampled. Records are emitted in input order, each only after the ledger row
 * that covers it is fsync'd (group commit of up to `batch` releases per fsync).
 *
 * Error messages name window ids, node names, units and budget totals; never window
 * values or noise (DESIGN §7.4).
 *
 * Thread-safety: a releaser is single-threaded. The plan is shared read-only.
 */
#ifndef REL_RELEASE_H
#define REL_RELEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dp_ledger.h"
#include "core/dp_rng.h"
#include "core/err.h"
#include "core/jalloc.h"
#include "core/window_bin.h"
#include "rel/plan.h"

#define REL_SCHEMA_RELEASED "gcdp.released/1"
#define REL_SCHEMA_WINDOW   "gcdp.window/2"
#define REL_MAX_ID          200u       /* window id bytes */
#define REL_MAX_DEVICE      64u        /* device id bytes */
#define REL_MAX_LINE        (1u << 22) /* one input record (JSONL line / CSV row) */
/* Parse arena of a window buffer (core/jalloc.h): a 100-node record's tree takes ~170 KiB;
 * a bigger record parses too, its excess blocks from malloc. */
#define REL_JALLOC_BYTES ((size_t)1 << 20)

/* One window, values indexed by θ node (caller storage; see rel_window_init). */
struct rel_window {
    const struct cal_theta *theta; /* borrowed */
    char id[REL_MAX_ID + 1];
    char device[REL_MAX_DEVICE + 1];
    int64_t start, end;       /* epoch ms, [start, end) */
    bool excluded;            /* ingest excluded it: nothing to release */
    uint32_t n_slots;         /* slots in the window (record's "n_slots"); 0 if not given */
    double *x;                /* θ n_nodes values (NAN where unused) */
    struct rel_node_obs *obs; /* θ n_nodes: real samples, series points, longest imputed run */
    uint8_t *used;            /* θ n_nodes: 1 if some coordinate reads the node */
    struct rel_profile prof;  /* the record's provenance (prof.from_record once parsed) */
    struct core_jalloc *ja;   /* owned: the parse arena of rel_window_from_json (NULL: malloc) */
    /* owned scratch of the readers: the decoded gcdp.window/3 record, imputed lists, the
     * node-name index */
    struct core_wrec rec;
    int64_t *imp;
    size_t imp_cap;
    uint32_t *hidx;
    size_t hidx_cap, hidx_mask;
    uint8_t *named;   /* θ n_nodes: 1 if the θ node's name carries its statistic */
    uint32_t *name_h; /* θ n_nodes: hash of the θ node's name */
};

/* Allocate the per-node arrays and the parse arena for θ (borrowed; must outlive w).
 * rel_window_cleanup frees. */
void rel_window_init(struct rel_window *w, const struct cal_theta *theta);
void rel_window_cleanup(struct rel_window *w);

/* Parse one gcdp.window/2 JSON record (one JSONL line) into w (initialized for θ).
 *   Every θ node used by a coordinate is bound to a window node (its own name when it
 *   carries a statistic, else the one node of that channel) that must be present in
 *   "nodes" (finite), "n_node" (>= 1), "imputed" and "prov.nodes", with the record's
 *   provenance consistent with itself (name = channel.stat, n_imputed and max_run equal to
 *   what the imputed list shows, max_run <= prov.interp_gap, known normalization).
 *   gcdp.window/1 records carry no provenance and are refused by name.
 * Returns CORE_OK, CORE_EPARSE (shape), CORE_EINVAL (values, inconsistent provenance),
 * CORE_ETOOBIG; errbuf names the field. */
CORE_MUST_CHECK core_err rel_window_from_json(const char *text, size_t len, struct rel_window *w,
                                              char *errbuf, size_t errbuf_size);

/* Parse one window record in either encoding, told apart by the first byte: a
 * gcdp.window/3 record (core/window_bin.h, first byte CORE_WBIN_MAGIC0) or else a
 * gcdp.window/2 JSON text (rel_window_from_json). Both fill w the same way and are checked
 * by the same code, so a record refused in one encoding is refused in the other with the
 * same reason (window/3's own structural refusals aside: truncation, magic, version, a node
 * name given twice). Returns as rel_window_from_json. */
CORE_MUST_CHECK core_err rel_window_from_bytes(const char *p, size_t len, struct rel_window *w,
                                               char *errbuf, size_t errbuf_size);

/* The plan for θ and w's provenance (Algorithm 2-3 via rel_plan_new with o->profile set to
 * w's for the call), checked against the ledger's unit scheme: a window whose sampling
 * period is not the ledger's would charge units the ledger does not name.
 *   ledger_period_ms  the ledger scheme's period; 0 = no ledger (no check, e.g. --plan).
 * Returns as rel_plan_new (*out NULL on error), or CORE_ESTATE (periods differ; errbuf names
 * the window and both periods). */
CORE_MUST_CHECK core_err rel_plan_for_window(const struct cal_theta *theta, struct rel_opts *o,
                                             const struct rel_window *w, int64_t ledger_period_ms,
                                             struct rel_plan **out, char *errbuf,
                                             size_t errbuf_size);

/* Output callback: one released record (JSON, no newline), durable in the ledger.
 *   replayed  true when the bytes came from the ledger (an earlier identical release). */
typedef core_err rel_emit_fn(void *arg, const char *bytes, size_t len, bool replayed);

struct rel_release_stats {
    uint64_t released;       /* new releases committed */
    uint64_t replayed;       /* republished from the ledger */
    uint64_t excluded;       /* excluded windows skipped (nothing to release) */
    uint64_t coords_noisy;   /* coordinates released with noise */
    uint64_t coords_exact;   /* zero-sensitivity coordinates released deterministically */
    uint64_t cancel_failed;  /* reservations that could not be cancelled (stay charged) */
    uint64_t replayed_other; /* replays first published with another mechanism / eps_rel */
};

struct rel_releaser;

/* New releaser. plan, ledger and rng are borrowed and must outlive it.
 *   batch     releases per fsync (>= 1).
 *   nthreads  noise workers per window (1..REL_MAX_THREADS); > 1 requires a thread-safe
 *             rng (core_rng_os() is; the seeded test sources are not). When the plan has
 *             d >= 256 * nthreads, nthreads - 1 persistent worker threads are started here
 *             (fewer if pthread_create fails) and joined by rel_releaser_free; each wipes
 *             its buffered OS randomness when it exits.
 * Returns CORE_OK or CORE_EINVAL. */
CORE_MUST_CHECK core_err rel_releaser_new(const struct rel_plan *plan,
                                          struct core_dp_ledger *ledger, const struct core_rng *rng,
                                          size_t batch, unsigned nthreads,
                                          struct rel_releaser **out);

#define REL_MAX_THREADS 16u

/* Algorithm 4 steps 2-5 on projected values: out_k = y_k + noise with the plan's
 * per-coordinate parameters (Laplace b_k = s_k/ε_k, or Gaussian s_k σ), out_k = y_k
 * exactly for zero-sensitivity coordinates (Theorem 1). All noise comes from core's exact
 * samplers. The coordinates are split over nthreads workers (1: the calling thread only).
 *   y, out  d values each (may not alias); work: d doubles (Gaussian path).
 * Fails closed: on error out is zeroed. Returns CORE_OK, CORE_EINVAL, CORE_ERNG,
 * CORE_ENUMERIC. */
CORE_MUST_CHECK core_err rel_noise_apply(const struct rel_plan *p, const struct core_rng *rng,
                                         unsigned nthreads, const double *y, double *out,
                                         double *work);

/* Free; charges of a batch that was never committed are cancelled (nothing was emitted
 * for them). NULL-safe. */
void rel_releaser_free(struct rel_releaser *r);

/* Release one window (Algorithm 4). Emits earlier records when a batch completes. The window's
 * provenance must be what the plan was built for (rel_plan_covers), and its own certificate
 * (rel_coord_bound_obs from its provenance) must not exceed any B_k (hence s_k).
 * Returns CORE_OK; CORE_EINVAL (window not covered: too few / too many samples, provenance
 * not the plan's, certificate above the plan's bound, non-finite value; nothing charged),
 * CORE_EBUDGET (a unit's lifetime cap; errbuf names the unit and its totals; nothing charged),
 * CORE_ERNG / CORE_ENUMERIC (noise failed; the charge is cancelled), CORE_EIO (ledger), or the emit
 * callback's error. */
CORE_MUST_CHECK core_err rel_releaser_push(struct rel_releaser *r, const struct rel_window *w,
                                           rel_emit_fn *emit, void *arg, char *errbuf,
                                           size_t errbuf_size);

/* Commit the pending batch (one fsync) and emit it. */
CORE_MUST_CHECK core_err rel_releaser_flush(struct rel_releaser *r, rel_emit_fn *emit, void *arg,
                                            char *errbuf, size_t errbuf_size);

void rel_releaser_stats(const struct rel_releaser *r, struct rel_release_stats *out);

#endif /* REL_RELEASE_H */
