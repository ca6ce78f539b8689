/* cal/theta.h - the GC-DP parameter object θ (paper Sec. 4.2), versioned, JSON round-trip.
 * SPDX-License-Identifier: Apache-2.0
 *
 * θ = (W, r̄, μ, ξ̂, τ, ε) plus everything needed to audit how it was made: the mode
 * (public: ε_cal = 0; private: ε_cal = ε_G + ε_τ + ε_μ + ε_ξ > 0), Algorithm 1's
 * parameters, the sensitivity choice, the fixed normalization bounds and the fixed
 * coordinate→node map a(k) (Sec. 4.3). Calibrate fills the calibration part; release
 * fills the release part (B, s, ε, eps_rel, mechanism; Algorithms 2–3) after calling
 * cal_theta_release_alloc().
 *
 * struct cal_theta is a documented plain struct (not opaque) so release can read and fill
 * it directly. Every array is owned by the struct and freed by cal_theta_free(); replace
 * arrays only through the setters here. JSON schema: schemas/theta.schema.json
 * ("schema": "gcdp.theta/1").
 *
 * Thread-safety: a cal_theta is immutable once published; share it read-only. Building
 * one is single-threaded.
 */
#ifndef CAL_THETA_H
#define CAL_THETA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/err.h"

#define CAL_THETA_SCHEMA    "gcdp.theta/1"
#define CAL_MAX_NODES       4096u       /* M cap (inputs with more nodes: CORE_ETOOBIG) */
#define CAL_MAX_COORDS      65536u      /* d cap */
#define CAL_MAX_COORD_NNZ   4096u       /* |a(k)| cap */
#define CAL_MAX_NAME        128u        /* node / coordinate name length cap, bytes incl. NUL */
#define CAL_MAX_LAG         64          /* L cap */
#define CAL_MAX_THETA_BYTES (64u << 20) /* θ JSON document cap for cal_theta_load_file */

enum cal_mode { CAL_MODE_PUBLIC = 0, CAL_MODE_PRIVATE = 1 };

/* Private-mode Δ₁S choice (Sec. 4.2 / DESIGN §5). */
enum cal_sens {
    CAL_SENS_UNIVERSAL = 0, /* Δ₁S ≤ P = M(M−1)/2 */
    CAL_SENS_EXPANSION = 1 /* Δ₁S ≤ |A|(M−1) − |A|(|A|−1)/2, A = nodes an expansion set touches */
};

/* Utility task for μ (Sec. 4.4). */
enum cal_task { CAL_TASK_AGGREGATE = 0, CAL_TASK_CLASSIFY = 1 };

/* One accepted undirected edge {i, j}, i < j, with w_ij = S_ij (Algorithm 1 step 4). */
struct cal_edge {
    uint32_t i, j;
    double w;
};

/* One released coordinate q_k = Σ_t coef[t] · (aggregate of node nodes[t]); a(k) = nodes. */
struct cal_coord {
    char *name;      /* owned */
    size_t n;        /* |a(k)| >= 1 */
    uint32_t *nodes; /* owned, n distinct node indices, ascending */
    double *coef;    /* owned, n finite coefficients (1.0 for d = M identity map) */
};

/* ε_cal parts (Sec. 4.2); all 0 in public mode. */
struct cal_eps_cal {
    double G, tau, mu, xi;
};

struct cal_theta {
    /* identity / audit */
    uint64_t version; /* >= 1; monotone per deployment (calibrate picks it) */
    enum cal_mode mode;
    char created_at[40];       /* RFC 3339 UTC, e.g. "2026-11-29T18:40:00Z" */
    char software[32];         /* "gcdp <version>" */
    char config_version[24];   /* core_config_version(cfg, "calibrate.") of the run; may be "" */
    char source[CAL_MAX_NAME]; /* short description of the calibration input (no values) */
    char reason[16];           /* why this version was made (the calibrate service):
                                  initial | drift | command | periodic; "" = not stated
                                  (offline runs) */
    uint64_t n_cal;            /* calibration rows N_cal used */
    struct cal_eps_cal eps_cal;

    /* Algorithm 1 parameters */
    int L;             /* lags −L..L, 0 <= L <= CAL_MAX_LAG */
    double lambda;     /* [0,1] */
    double tau;        /* [0,1], the selected threshold */
    int K;             /* degree cap >= 1 */
    double alpha;      /* [0,1] */
    size_t n_tau_grid; /* private mode: grid the exponential mechanism chose from */
    double *tau_grid;  /* owned, may be NULL when n_tau_grid == 0 */

    /* Sec. 4.3 parameters (recorded for audit; release may re-use them) */
    double gamma, tau_c, kappa, g_max;

    /* private-mode sensitivities actually used (0 in public mode) */
    enum cal_sens sens;
    double delta_S, delta_mu, delta_xi, delta_U;

    enum cal_task task;

    /* graph (M nodes) */
    size_t n_nodes;            /* M */
    char **nodes;              /* owned, M names */
    double *norm_lo, *norm_hi; /* owned, M fixed public normalization bounds (lo < hi) */
    double *exposure;          /* owned, M values r̄_m ∈ [0,1] (Algorithm 1 step 8) */
    size_t n_edges;
    struct cal_edge *edges; /* owned, n_edges, sorted by (i, j) */

    /* coordinates (d) */
    size_t d;
    struct cal_coord *coords; /* owned, d entries */
    double *mu;               /* owned, d values μ_k ∈ [0,1] */
    double *xi_hat;           /* owned, d values ξ̂_k ∈ [0, g_max] */

    /* release part: NULL / 0 / "" until release fills it (cal_theta_release_alloc) */
    double *B, *s, *eps; /* owned, d each, or all NULL */
    double eps_rel;
    char mechanism[32];
};

/* New θ with n_nodes nodes and d coordinates; all numbers zero, names NULL, coordinate
 * maps empty, version 1, mode public, Table 5 defaults for L, λ, K, α, γ, τ_c, κ, g_max, τ.
 *   out  on CORE_OK a new object; caller frees with cal_theta_free().
 * Returns CORE_OK, CORE_EINVAL (n_nodes or d zero), CORE_ETOOBIG (over the caps). */
CORE_MUST_CHECK core_err cal_theta_new(size_t n_nodes, size_t d, struct cal_theta **out);

/* NULL-safe. */
void cal_theta_free(struct cal_theta *t);

/* Set node m's name (copied). CORE_EINVAL on bad index / empty name, CORE_ETOOBIG past
 * CAL_MAX_NAME. */
CORE_MUST_CHECK core_err cal_theta_set_node(struct cal_theta *t, size_t m, const char *name);

/* Set coordinate k: name (copied) and a(k) with coefficients (copied; coef NULL = all 1).
 * nodes need not be sorted; stored ascending. CORE_EINVAL on duplicates / out-of-range
 * nodes / non-finite coefficients, CORE_ETOOBIG over the caps. */
CORE_MUST_CHECK core_err cal_theta_set_coord(struct cal_theta *t, size_t k, const char *name,
                                             size_t n, const uint32_t *nodes, const double *coef);

/* Identity map a(k) = {v_k}, coordinate names = node names (requires d == n_nodes and
 * every node named). */
CORE_MUST_CHECK core_err cal_theta_set_identity_coords(struct cal_theta *t);

/* Replace the edge list (copied, then sorted by (i, j)). */
CORE_MUST_CHECK core_err cal_theta_set_edges(struct cal_theta *t, const struct cal_edge *edges,
                                             size_t n_edges);

/* Set the τ grid (copied). */
CORE_MUST_CHECK core_err cal_theta_set_tau_grid(struct cal_theta *t, const double *grid, size_t n);

/* Allocate zeroed B, s, eps (d each) if not present; release fills them. */
void cal_theta_release_alloc(struct cal_theta *t);

/* ε_cal = ε_G + ε_τ + ε_μ + ε_ξ. */
double cal_theta_eps_cal_total(const struct cal_theta *t);

/* Coordinate exposure r̄_k^(q) = mean of r̄_i over i ∈ a(k) (Sec. 4.4). k < d. */
double cal_theta_coord_exposure(const struct cal_theta *t, size_t k);

/* Index of node `name`, or CORE_ENOTFOUND. */
CORE_MUST_CHECK core_err cal_theta_node_index(const struct cal_theta *t, const char *name,
                                              size_t *out);

/* Check every structural rule and range of θ (the same rules cal_theta_from_json enforces):
 * names set and unique, ranges of every parameter, exposure/μ ∈ [0,1], ξ̂ ∈ [0, g_max],
 * edges i < j < M unique with w ∈ [τ, 1] and deg ≤ K, public ⇒ ε_cal parts all 0,
 * private ⇒ parts >= 0 and total > 0; when the release part is present: B_k >= 0,
 * s_k >= B_k, ε_k > 0, Σε_k <= eps_rel (NaN fails every check).
 *   errbuf  receives the first failing field and why (no data values beyond parameters).
 * Returns CORE_OK or CORE_EINVAL. */
CORE_MUST_CHECK core_err cal_theta_validate(const struct cal_theta *t, char *errbuf,
                                            size_t errbuf_size);

/* Serialize θ (validated first).
 *   out  on CORE_OK a new JSON object reference; caller json_decref()s it.
 * Returns CORE_OK or CORE_EINVAL (θ fails cal_theta_validate; reason in errbuf). */
CORE_MUST_CHECK core_err cal_theta_to_json(const struct cal_theta *t, json_t **out, char *errbuf,
                                           size_t errbuf_size);

/* Parse θ strictly: unknown fields, wrong types, wrong lengths, out-of-range values and
 * a wrong "schema" are errors naming the field (e.g. "mu[3]: not in [0,1]").
 *   json  borrowed; not retained.
 *   out   on CORE_OK a new object; caller frees with cal_theta_free().
 * Returns CORE_OK, CORE_EPARSE (shape/type), CORE_EINVAL (range/invariant), CORE_ETOOBIG. */
CORE_MUST_CHECK core_err cal_theta_from_json(const json_t *json, struct cal_theta **out,
                                             char *errbuf, size_t errbuf_size);

/* Read / write a θ JSON file (pretty-printed, atomic rename on save).
 * Returns as above plus CORE_EIO. */
CORE_MUST_CHECK core_err cal_theta_load_file(const char *path, struct cal_theta **out, char *errbuf,
                                             size_t errbuf_size);
CORE_MUST_CHECK core_err cal_theta_save_file(const struct cal_theta *t, const char *path,
                                             char *errbuf, size_t errbuf_size);

/* Names for enums ("public", "universal", "classify", ...); never NULL. */
const char *cal_mode_name(enum cal_mode m);
/* θ's reason codes (why a version was made): index 0..CAL_N_REASONS-1 <-> name
 * (initial, drift, command, periodic). cal_reason_name: "?" out of range;
 * cal_reason_index: -1 for an unknown name. */
#define CAL_N_REASONS 4
const char *cal_reason_name(int i);
int cal_reason_index(const char *r);
const char *cal_sens_name(enum cal_sens s);
const char *cal_task_name(enum cal_task t);

#endif /* CAL_THETA_H */
