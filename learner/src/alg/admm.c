/* admm.c - the Fed-Sparse-BNSL ADMM driver (paper Algorithm 1; DESIGN.md §6) and the
 * sparse/dense wire encodings (paper B.2.1). See lrn/admm.h for the contract.
 *
 * Choices where the paper is silent (our reading, documented in docs/learner.md):
 *  - ρ₁ grows ×rho1_growth only when h(W) failed to fall below h_stall·h(W_prev) (the
 *    NOTEARS rule applied per round), ρ₂ stays fixed: the paper tunes fixed ρ₁ = 1000,
 *    ρ₂ = 1 (B.3.2) and says nothing about growth; the notears-admm per-round growth is
 *    available as LRN_RHO_EVERY_ROUND for the Fed-BNSL baseline.
 *  - The growth factor is 2, not NOTEARS' 10. NOTEARS multiplies ρ by 10 after a FULL
 *    solve of its subproblem; here one ADMM round is one inexact server step (≤ 100
 *    L-BFGS iterations) after one inexact local step (K PGCD steps), so h stalls for
 *    reasons unrelated to ρ₁ (the B_p are not fitted yet). With ×10, ρ₁ reached 1e14 by
 *    round 21 at d = 200 (seeds 7, 10): the server problem became so stiff that L-BFGS
 *    stopped after 3 iterations every round, W froze with h = 0 while the duals β_p kept
 *    growing, and true edges (e.g. weight 2.0) that the local solvers had not fitted in
 *    the first rounds could never enter W (SHD 66 on both seeds; centralized NOTEARS: 12
 *    on seed 7). With ×2 both seeds end at SHD 45 / 33 and the 10-seed mean drops from
 *    33.3 to 19.4 (docs/learner.md). The dual α ← α + ρ₁h still drives h to 0.
 *  - Issue 9 (docs/learner.md "Convergence"): with w_sparsify the sent W is an exact DAG, so
 *    h of the sent W is 0 and α/ρ₁ stopped acting while the server's own W̃ still had
 *    cycles; entries in the gap b_sparsify ≤ |B| < w_sparsify accumulated duals against a
 *    zeroed W until the server jumped to another orientation (a cycle of ~30 rounds). Hence:
 *    α and the ρ₁ rule use h(W̃); ρ₁ grows only while h(W̃) > rho1_h_floor; participants
 *    receive W̃ on the entries they uploaded (exact duals there); the server solves to
 *    wtol 1e-6; and a stopping rule on residuals, h and support stability ends the run.
 *  - The server's support is the union of the off-diagonal nonzeros of every B_p, every β_p
 *    and the previous W̃ (the last one keeps entries whose dual happens to be exactly 0).
 *  - The server minimises to liblbfgs's relative gradient tolerance; a line-search
 *    failure keeps the last accepted point (liblbfgs reverts to it), which is a valid,
 *    lower-objective warm start for the next round.
 */
#include "lrn/admm.h"

#include <lbfgs.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "core/mem.h"
#include "lrn/acyclic.h"
#include "lrn/baselines.h"
#include "lrn/config.h"
#include "lrn/pgcd.h"

/* ---- options ---- */

struct lrn_admm_opts lrn_admm_opts_default(void)
{
    struct lrn_admm_opts o = {
        .schedule = LRN_RHO_ON_STALL,
        .acyc_on_server = true,
        .wire = LRN_WIRE_SPARSE,
    };
    char eb[160];

    /* The tuned defaults (rounds, rho1/rho2 and their growth, h_stall, the stopping rule's
     * tolerances, w_keep, thresholds and sparsification, L-BFGS) are the learner.* rows of
     * lrn_config_keys, stated once there (chosen on tuning seeds, docs/learner.md);
     * core_config_new and tests/learner check them. Were one not to fit, its field stays 0
     * and lrn_admm_opts_check refuses the options. */
    if (core_cfg_defaults(lrn_config_keys, LRN_KEYS_ADMM, &o, eb, sizeof(eb)) != CORE_OK)
        o.max_rounds = 0;
    return o;
}

/* Name the option out of range and return CORE_EINVAL. */
static core_err bad_option(char *errbuf, size_t errbuf_size, const char *field)
{
    if (errbuf && errbuf_size)
        snprintf(errbuf, errbuf_size, "admm option %s out of range", field);
    return CORE_EINVAL;
}

/* The first of the penalty schedule's options out of range, or NULL. */
static const char *bad_schedule_option(const struct lrn_admm_opts *o)
{
    if (o->max_rounds == 0 || o->max_rounds > LRN_ADMM_MAX_ROUNDS)
        return "max_rounds";
    if (!(o->rho1 > 0.0) || !isfinite(o->rho1))
        return "rho1";
    if (!(o->rho2 > 0.0) || !isfinite(o->rho2))
        return "rho2";
    if (!(o->rho1_growth >= 1.0) || !isfinite(o->rho1_growth))
        return "rho1_growth";
    if (!(o->rho2_growth >= 1.0) || !isfinite(o->rho2_growth))
        return "rho2_growth";
    if (!(o->rho_max >= o->rho1) || !(o->rho_max >= o->rho2) || !isfinite(o->rho_max))
        return "rho_max";
    if (o->schedule != LRN_RHO_ON_STALL && o->schedule != LRN_RHO_EVERY_ROUND)
        return "schedule";
    if (!(o->rho1_h_floor >= 0.0) || !isfinite(o->rho1_h_floor))
        return "rho1_h_floor";
    if (!(o->h_stall > 0.0) || !(o->h_stall <= 1.0))
        return "h_stall";
    if (!(o->rho2_balance >= 0.0) || !isfinite(o->rho2_balance) ||
        (o->rho2_balance > 0.0 &&
         (!(o->rho2_balance_factor > 1.0) || !isfinite(o->rho2_balance_factor))))
        return "rho2_balance";
    if (o->rho2_balance > 0.0 && o->schedule == LRN_RHO_ON_STALL &&
        (!(o->rho2_max >= o->rho2) || !isfinite(o->rho2_max)))
        return "rho2_max";
    return NULL;
}

/* The first of the stopping, sparsification, wire and L-BFGS options out of range, or NULL. */
static const char *bad_run_option(const struct lrn_admm_opts *o)
{
    if (!(o->h_tol >= 0.0) || !isfinite(o->h_tol))
        return "h_tol";
    if (isnan(o->primal_tol) || isinf(o->primal_tol))
        return "primal_tol";
    if (!(o->w_keep > 0.0) || !(o->w_keep <= 1.0))
        return "w_keep";
    if (!(o->dual_tol >= 0.0) || !isfinite(o->dual_tol))
        return "dual_tol";
    if (o->stable_rounds > LRN_ADMM_MAX_ROUNDS)
        return "stable_rounds";
    if (!(o->w_threshold >= 0.0) || !isfinite(o->w_threshold))
        return "w_threshold";
    if (!(o->w_sparsify >= 0.0) || !(o->w_sparsify <= o->w_threshold))
        return "w_sparsify";
    if (!(o->b_sparsify >= 0.0) || !(o->b_sparsify <= o->w_threshold))
        return "b_sparsify";
    if (!(o->refit_threshold >= 0.0) || !isfinite(o->refit_threshold))
        return "refit_threshold";
    if (o->wire != LRN_WIRE_SPARSE && o->wire != LRN_WIRE_DENSE)
        return "wire";
    if (o->lbfgs_max_iter == 0 || o->lbfgs_max_iter > 100000)
        return "lbfgs_max_iter";
    if (!(o->lbfgs_epsilon > 0.0) || !(o->lbfgs_epsilon < 1.0))
        return "lbfgs_epsilon";
    if (!(o->lbfgs_wtol >= 0.0) || !isfinite(o->lbfgs_wtol))
        return "lbfgs_wtol";
    return NULL;
}

core_err lrn_admm_opts_check(const struct lrn_admm_opts *o, char *errbuf, size_t errbuf_size)
{
    const char *bad = bad_schedule_option(o);

    if (!bad)
        bad = bad_run_option(o);
    return bad ? bad_option(errbuf, errbuf_size, bad) : CORE_OK;
}

/* ---- wire (paper B.2.1) ---- */

size_t lrn_wire_index_bytes(size_t d)
{
    /* ⌈log₂(d²)/8⌉ computed exactly: bits needed for d² (as the paper), at least 1 byte. */
    size_t d2 = d * d, bits = 0;
    while (bits < 64 && ((size_t)1 << bits) < d2)
        bits++;
    return bits == 0 ? 1 : (bits + 7) / 8;
}

size_t lrn_wire_max_len(size_t d, enum lrn_wire wire)
{
    if (wire == LRN_WIRE_DENSE)
        return 8 * d * d;
    return 4 + d * d * (8 + lrn_wire_index_bytes(d));
}

static void put_le(uint8_t *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static uint64_t dbits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof(u));
    return u;
}

static double bitsd(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof(x));
    return x;
}

/* The (index, value) pairs of M's nonzero entries not in skip (NULL: none skipped), in index
 * order, from buf + *pos on; *n pairs written. CORE_ETOOBIG when they do not fit in cap. */
static core_err put_pairs(const double *M, const double *skip, size_t d2, size_t bi, uint8_t *buf,
                          size_t cap, size_t *pos, size_t *n)
{
    for (size_t x = 0; x < d2; x++) {
        if (M[x] == 0.0 || (skip && skip[x] != 0.0))
            continue;
        if (cap - *pos < bi + 8)
            return CORE_ETOOBIG;
        put_le(buf + *pos, x, bi);
        put_le(buf + *pos + bi, dbits(M[x]), 8);
        *pos += bi + 8;
        (*n)++;
    }
    return CORE_OK;
}

/* The inverse for n pairs at buf + pos: increasing indices below d2, none in skip, finite
 * nonzero values, stored into M. */
static core_err get_pairs(const uint8_t *buf, size_t pos, size_t n, size_t bi, size_t d2,
                          const double *skip, double *M)
{
    uint64_t prev = 0;
    for (size_t k = 0; k < n; k++, pos += bi + 8) {
        uint64_t idx = get_le(buf + pos, bi);
        double v = bitsd(get_le(buf + pos + bi, 8));
        if (idx >= d2 || (skip && skip[idx] != 0.0) || (k > 0 && idx <= prev) || !isfinite(v) ||
            v == 0.0)
            return CORE_EPARSE;
        M[idx] = v;
        prev = idx;
    }
    return CORE_OK;
}

core_err lrn_wire_encode(size_t d, const double *M, enum lrn_wire wire, uint8_t *buf, size_t cap,
                         size_t *len, size_t *nnz)
{
    size_t d2 = d * d, bi = lrn_wire_index_bytes(d), pos = 0, cnt = 0;

    for (size_t x = 0; x < d2; x++)
        if (!isfinite(M[x]))
            return CORE_EINVAL;
    if (wire == LRN_WIRE_DENSE) {
        if (cap < 8 * d2)
            return CORE_ETOOBIG;
        for (size_t x = 0; x < d2; x++)
            put_le(buf + 8 * x, dbits(M[x] == 0.0 ? 0.0 : M[x]), 8);
        *len = 8 * d2;
        if (nnz)
            *nnz = d2;
        return CORE_OK;
    }
    if (cap < 4)
        return CORE_ETOOBIG;
    pos = 4;
    if (put_pairs(M, NULL, d2, bi, buf, cap, &pos, &cnt) != CORE_OK)
        return CORE_ETOOBIG;
    put_le(buf, cnt, 4);
    *len = pos;
    if (nnz)
        *nnz = cnt;
    return CORE_OK;
}

core_err lrn_wire_decode(size_t d, const uint8_t *buf, size_t len, enum lrn_wire wire, double *M)
{
    size_t d2 = d * d, bi = lrn_wire_index_bytes(d), cnt, pos = 4;

    memset(M, 0, d2 * sizeof(double));
    if (wire == LRN_WIRE_DENSE) {
        if (len != 8 * d2)
            return CORE_EPARSE;
        for (size_t x = 0; x < d2; x++) {
            M[x] = bitsd(get_le(buf + 8 * x, 8));
            if (!isfinite(M[x]))
                return CORE_EPARSE;
        }
        return CORE_OK;
    }
    if (len < 4)
        return CORE_EPARSE;
    cnt = (size_t)get_le(buf, 4);
    if (cnt > d2 || len - 4 != cnt * (bi + 8))
        return CORE_EPARSE;
    return get_pairs(buf, pos, cnt, bi, d2, NULL, M);
}

core_err lrn_wire_encode_known(size_t d, const double *M, const double *known, uint8_t *buf,
                               size_t cap, size_t *len, size_t *n_known, size_t *n_pairs)
{
    size_t d2 = d * d, bi = lrn_wire_index_bytes(d), pos = 4, nk = 0, np = 0;

    for (size_t x = 0; x < d2; x++) {
        if (!isfinite(M[x]))
            return CORE_EINVAL;
        nk += known[x] != 0.0;
    }
    if (cap < 4 || (cap - 4) / 8 < nk)
        return CORE_ETOOBIG;
    for (size_t x = 0; x < d2; x++)
        if (known[x] != 0.0) {
            put_le(buf + pos, dbits(M[x] == 0.0 ? 0.0 : M[x]), 8);
            pos += 8;
        }
    if (put_pairs(M, known, d2, bi, buf, cap, &pos, &np) != CORE_OK)
        return CORE_ETOOBIG;
    put_le(buf, np, 4);
    *len = pos;
    *n_known = nk;
    *n_pairs = np;
    return CORE_OK;
}

core_err lrn_wire_decode_known(size_t d, const double *known, const uint8_t *buf, size_t len,
                               double *M)
{
    size_t d2 = d * d, bi = lrn_wire_index_bytes(d), nk = 0, np, pos = 4;

    memset(M, 0, d2 * sizeof(double));
    for (size_t x = 0; x < d2; x++)
        nk += known[x] != 0.0;
    if (len < 4)
        return CORE_EPARSE;
    np = (size_t)get_le(buf, 4);
    if (np > d2 || (len - 4) / 8 < nk || len - 4 - 8 * nk != np * (bi + 8))
        return CORE_EPARSE;
    for (size_t x = 0; x < d2; x++)
        if (known[x] != 0.0) {
            M[x] = bitsd(get_le(buf + pos, 8));
            pos += 8;
            if (!isfinite(M[x]))
                return CORE_EPARSE;
        }
    return get_pairs(buf, pos, np, bi, d2, known, M);
}

/* Bit k (LSB first) of the mask: the k-th entry of K (index order) changed. */
static size_t mask_bytes(size_t nk)
{
    return (nk + 7) / 8;
}

core_err lrn_wire_encode_delta(size_t d, const double *M, const double *known, uint8_t *buf,
                               size_t cap, size_t *len, size_t *n_known, size_t *n_changed,
                               size_t *n_pairs)
{
    size_t d2 = d * d, bi = lrn_wire_index_bytes(d), nk = 0, nc = 0, np = 0, pos, k = 0;

    for (size_t x = 0; x < d2; x++) {
        if (!isfinite(M[x]))
            return CORE_EINVAL;
        nk += known[x] != 0.0;
        nc += known[x] != 0.0 && M[x] != known[x];
    }
    if (cap < 4 || cap - 4 < mask_bytes(nk) || (cap - 4 - mask_bytes(nk)) / 8 < nc)
        return CORE_ETOOBIG;
    pos = 4 + mask_bytes(nk);
    memset(buf + 4, 0, mask_bytes(nk));
    for (size_t x = 0; x < d2; x++) {
        if (known[x] == 0.0)
            continue;
        if (M[x] != known[x]) { /* both finite and known[x] ≠ 0: equal means the same bits */
            buf[4 + k / 8] |= (uint8_t)(1u << (k % 8));
            put_le(buf + pos, dbits(M[x] == 0.0 ? 0.0 : M[x]), 8);
            pos += 8;
        }
        k++;
    }
    if (put_pairs(M, known, d2, bi, buf, cap, &pos, &np) != CORE_OK)
        return CORE_ETOOBIG;
    put_le(buf, np, 4);
    *len = pos;
    *n_known = nk;
    *n_changed = nc;
    *n_pairs = np;
    return CORE_OK;
}

core_err lrn_wire_decode_delta(size_t d, const double *known, const uint8_t *buf, size_t len,
                               double *M)
{
    size_t d2 = d * d, bi = lrn_wire_index_bytes(d), nk = 0, nc = 0, np, pos, k = 0;

    memset(M, 0, d2 * sizeof(double));
    for (size_t x = 0; x < d2; x++)
        nk += known[x] != 0.0;
    if (len < 4 || len - 4 < mask_bytes(nk))
        return CORE_EPARSE;
    for (size_t b = 0; b < mask_bytes(nk); b++)
        nc += (size_t)__builtin_popcount(buf[4 + b]);
    if (nk % 8 != 0 && (buf[4 + nk / 8] >> (nk % 8)) != 0)
        return CORE_EPARSE; /* bits past |K| */
    np = (size_t)get_le(buf, 4);
    pos = 4 + mask_bytes(nk);
    if (np > d2 || (len - pos) / 8 < nc || len - pos - 8 * nc != np * (bi + 8))
        return CORE_EPARSE;
    for (size_t x = 0; x < d2; x++) {
        if (known[x] == 0.0)
            continue;
        if (buf[4 + k / 8] & (1u << (k % 8))) {
            M[x] = bitsd(get_le(buf + pos, 8));
            pos += 8;
            if (!isfinite(M[x]))
                return CORE_EPARSE;
        } else {
            M[x] = known[x];
        }
        k++;
    }
    return get_pairs(buf, pos, np, bi, d2, known, M);
}

/* ---- covariance ---- */

core_err lrn_covariance(size_t n, size_t d, const double *X, double scale, double *sigma)
{
    if (n == 0 || d == 0 || !(scale > 0.0) || !isfinite(scale))
        return CORE_EINVAL;
    if (n > (size_t)INT32_MAX || d > (size_t)INT32_MAX)
        return CORE_ETOOBIG;
    for (size_t x = 0; x < n * d; x++)
        if (!isfinite(X[x]))
            return CORE_EINVAL;
    /* Row-major X (n×d): Σ = XᵀX/(n·scale), upper triangle by dsyrk, then mirrored. */
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)d, (int)n, 1.0 / ((double)n * scale), X,
                (int)d, 0.0, sigma, (int)d);
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < i; j++)
            sigma[i * d + j] = sigma[j * d + i];
    return CORE_OK;
}

/* Xc = X − μ (n × d), μ by a two-pass mean: μ = Σx/n, then μ += Σ(x − μ)/n (removes the
 * first pass's error). mu: 2d scratch. */
static void cov_center(size_t n, size_t d, const double *X, double *Xc, double *mu)
{
    for (size_t k = 0; k < n; k++)
        for (size_t j = 0; j < d; j++)
            mu[j] += X[k * d + j];
    for (size_t j = 0; j < d; j++)
        mu[j] /= (double)n;
    for (size_t k = 0; k < n; k++)
        for (size_t j = 0; j < d; j++)
            mu[d + j] += X[k * d + j] - mu[j];
    for (size_t j = 0; j < d; j++)
        mu[j] += mu[d + j] / (double)n;
    for (size_t k = 0; k < n; k++)
        for (size_t j = 0; j < d; j++)
            Xc[k * d + j] = X[k * d + j] - mu[j];
}

/* Each centred column of Xc scaled to unit variance (/n); inv: d scratch. CORE_EINVAL for a
 * constant column, which cannot be standardized. */
static core_err cov_standardize(size_t n, size_t d, double *Xc, double *inv)
{
    core_err rc = CORE_OK;

    memset(inv, 0, d * sizeof(double));
    for (size_t k = 0; k < n; k++)
        for (size_t j = 0; j < d; j++)
            inv[j] += Xc[k * d + j] * Xc[k * d + j];
    for (size_t j = 0; j < d && rc == CORE_OK; j++) {
        double sd = sqrt(inv[j] / (double)n);
        if (!(sd > 0.0) || !isfinite(sd))
            rc = CORE_EINVAL;
        inv[j] = 1.0 / sd;
    }
    for (size_t k = 0; rc == CORE_OK && k < n; k++)
        for (size_t j = 0; j < d; j++)
            Xc[k * d + j] *= inv[j];
    return rc;
}

/* Σ divided by its mean diagonal (the mean column variance, /scale). */
static core_err cov_rescale(size_t d, double *sigma)
{
    double m = 0.0;

    for (size_t j = 0; j < d; j++)
        m += sigma[j * d + j] / (double)d;
    if (!(m > 0.0) || !isfinite(m))
        return CORE_EINVAL;
    for (size_t x = 0; x < d * d; x++)
        sigma[x] /= m;
    return CORE_OK;
}

core_err lrn_covariance_ex(size_t n, size_t d, const double *X, double scale, unsigned flags,
                           double *sigma)
{
    double *Xc, *mu;
    core_err rc = CORE_OK;

    if (!(flags & (LRN_COV_CENTER | LRN_COV_STANDARDIZE | LRN_COV_RESCALE)))
        return lrn_covariance(n, d, X, scale, sigma);
    if (n == 0 || d == 0)
        return CORE_EINVAL;
    if (n > (size_t)INT32_MAX || d > (size_t)INT32_MAX)
        return CORE_ETOOBIG;
    for (size_t x = 0; x < n * d; x++)
        if (!isfinite(X[x]))
            return CORE_EINVAL;
    Xc = core_xmalloc(n * d * sizeof(double));
    mu = core_xcalloc(2 * d, sizeof(double));
    cov_center(n, d, X, Xc, mu);
    if (flags & LRN_COV_STANDARDIZE)
        rc = cov_standardize(n, d, Xc, mu + d);
    if (rc == CORE_OK)
        rc = lrn_covariance(n, d, Xc, scale, sigma);
    if (rc == CORE_OK && (flags & LRN_COV_RESCALE) && !(flags & LRN_COV_STANDARDIZE))
        rc = cov_rescale(d, sigma);
    free(Xc);
    free(mu);
    return rc;
}

/* ---- the driver ---- */

struct run {
    size_t d, P, d2;
    const struct lrn_admm_opts *o;
    double *W, *B, *beta;   /* W: the server's minimiser W̃, d²; B, beta: P·d² */
    double *sumB, *sumBeta; /* d² */
    double *grad;           /* d² */
    double *Ws;             /* d²: W̃ sparsified at w_sparsify (the sent support, the result) */
    double *Wp;             /* P·d²: what participant p received this round (= Ws unless
                             * down_own_support) */
    uint8_t *sent;          /* d²: entry sent to at least one participant this round */
    uint8_t *sprev_ws;      /* d²: entry in Ws last round (w_keep hysteresis) */
    double *Wprev;          /* d²: the W sent in the previous round */
    uint8_t *sprev;         /* d²: support (|W| ≥ w_threshold) of the previous round */
    double h_srv;           /* h(W̃) */
    size_t *supp, nsupp;    /* server variables (indices into d²) */
    double const_b;         /* Σ_p ‖B_p‖² (objective constant, for meaningful f) */
    double alpha, rho1, rho2, h;
    struct lrn_acyclic_ws *ws;
    uint8_t *buf;
    size_t bufcap;
    lbfgsfloatval_t *x;
    size_t evals, iters, calm;
    double *xprev;
    uint64_t bytes_model, bytes_wire, bytes_up_model;
    size_t nnz_up, nnz_up_known, nnz_up_same, nnz_down, nnz_down_known;
    uint64_t up_mask_bytes; /* this round's change masks (lrn_wire_encode_delta) */
    double *Kup;     /* P·d²: participant p's previous upload (both sides know its support) */
    uint8_t *absent; /* P: participant absent this round (solve returned ENOTFOUND) */
    core_err *rc;    /* P: solve()'s answers of this round (par_run only) */
    size_t present;  /* participants present this round */
};

static void run_free(struct run *r)
{
    free(r->B);
    free(r->beta);
    free(r->W);
    free(r->sprev);
    free(r->sent);
    free(r->sprev_ws);
    free(r->Wp);
    free(r->supp);
    free(r->buf);
    free(r->xprev);
    free(r->absent);
    free(r->Kup);
    free(r->rc);
    if (r->x)
        lbfgs_free(r->x);
    lrn_acyclic_ws_free(r->ws);
}

static core_err run_init(struct run *r, size_t d, size_t P, const struct lrn_admm_opts *o)
{
    core_err rc;

    memset(r, 0, sizeof(*r));
    r->d = d;
    r->P = P;
    r->d2 = d * d;
    r->o = o;
    r->B = core_xcalloc(P * r->d2, sizeof(double));
    r->beta = core_xcalloc(P * r->d2, sizeof(double));
    r->W = core_xcalloc(6 * r->d2, sizeof(double));
    r->sumB = r->W + r->d2;
    r->sumBeta = r->sumB + r->d2;
    r->grad = r->sumBeta + r->d2;
    r->Ws = r->grad + r->d2;
    r->Wprev = r->Ws + r->d2;
    r->sprev = core_xcalloc(r->d2, 1);
    r->sent = core_xcalloc(r->d2, 1);
    r->sprev_ws = core_xcalloc(r->d2, 1);
    r->Wp = core_xcalloc(P * r->d2, sizeof(double));
    r->supp = core_xcalloc(r->d2, sizeof(size_t));
    r->bufcap = lrn_wire_max_len(d, o->wire);
    r->buf = core_xmalloc(r->bufcap);
    r->x = lbfgs_malloc((int)r->d2);
    r->xprev = core_xcalloc(r->d2, sizeof(double));
    r->absent = core_xcalloc(P, 1);
    r->Kup = core_xcalloc(P * r->d2, sizeof(double));
    r->rc = core_xcalloc(P, sizeof(*r->rc));
    r->present = P;
    if (!r->x)
        return CORE_ENOMEM;
    r->rho1 = o->rho1;
    r->rho2 = o->rho2;
    rc = lrn_acyclic_ws_new(d, &r->ws);
    return rc;
}

/* Encode M, decode it back in place (so what is used downstream is what crossed the wire),
 * and account for `copies` transmissions. */
static core_err transmit(struct run *r, double *M, size_t copies, size_t *nnz_out)
{
    size_t len = 0, nnz = 0, entry = 8 + lrn_wire_index_bytes(r->d);
    core_err rc = lrn_wire_encode(r->d, M, r->o->wire, r->buf, r->bufcap, &len, &nnz);

    if (rc != CORE_OK)
        return rc == CORE_EINVAL ? CORE_ENUMERIC : rc;
    rc = lrn_wire_decode(r->d, r->buf, len, r->o->wire, M);
    if (rc != CORE_OK)
        return CORE_ENUMERIC;
    r->bytes_wire += (uint64_t)len * copies;
    r->bytes_model += (uint64_t)(r->o->wire == LRN_WIRE_DENSE ? 8 * r->d2 : nnz * entry) * copies;
    *nnz_out = nnz;
    return CORE_OK;
}

/* The downlink to a participant that knows the support `known` (its own upload): encoded
 * with lrn_wire_encode_known, decoded back in place, accounted once. */
static core_err transmit_known(struct run *r, double *M, const double *known)
{
    size_t len = 0, nk = 0, np = 0, entry = 8 + lrn_wire_index_bytes(r->d);
    core_err rc = lrn_wire_encode_known(r->d, M, known, r->buf, r->bufcap, &len, &nk, &np);

    if (rc != CORE_OK)
        return rc == CORE_EINVAL ? CORE_ENUMERIC : rc;
    if (lrn_wire_decode_known(r->d, known, r->buf, len, M) != CORE_OK)
        return CORE_ENUMERIC;
    r->bytes_wire += len;
    r->bytes_model += nk * 8 + np * entry;
    r->nnz_down += nk + np;
    r->nnz_down_known += nk;
    return CORE_OK;
}

/* Participant p's upload against K, p's previous upload (the server has it): with the change
 * mask (lrn_wire_encode_delta: unchanged entries of K are not re-sent) or without it
 * (lrn_wire_encode_known: every value on K, when nearly all changed the mask costs more). */
static core_err transmit_up_known(struct run *r, double *Bp, double *K, int delta, size_t *nnz)
{
    size_t entry = 8 + lrn_wire_index_bytes(r->d), nk = 0, nc = 0, np = 0, len = 0;
    core_err rc;

    if (delta)
        rc = lrn_wire_encode_delta(r->d, Bp, K, r->buf, r->bufcap, &len, &nk, &nc, &np);
    else
        rc = lrn_wire_encode_known(r->d, Bp, K, r->buf, r->bufcap, &len, &nk, &np);
    if (rc != CORE_OK)
        return rc == CORE_EINVAL ? CORE_ENUMERIC : rc;
    rc = delta ? lrn_wire_decode_delta(r->d, K, r->buf, len, Bp)
               : lrn_wire_decode_known(r->d, K, r->buf, len, Bp);
    if (rc != CORE_OK)
        return CORE_ENUMERIC;
    if (!delta)
        nc = nk;
    r->bytes_wire += len;
    r->bytes_model += (delta ? mask_bytes(nk) : 0) + nc * 8 + np * entry;
    r->up_mask_bytes += delta ? mask_bytes(nk) : 0;
    r->nnz_up_known += nk;
    r->nnz_up_same += nk - nc;
    *nnz = nk + np;
    return CORE_OK;
}

/* Participant p's upload (sparse wire): one flag byte, then the shortest of the plain sparse
 * message and the two encodings against p's previous upload K (transmit_up_known: values on
 * K in index order, zeros included, with or without a change mask, then the new entries as
 * pairs). The values are the same either way; K becomes this upload. */
static core_err transmit_up(struct run *r, double *Bp, double *K, size_t *nnz)
{
    size_t entry = 8 + lrn_wire_index_bytes(r->d), nk = 0, nc = 0, np = 0, nz = 0;
    size_t plain, known, delta;
    core_err rc;

    if (r->o->wire != LRN_WIRE_SPARSE)
        return transmit(r, Bp, 1, nnz);
    for (size_t x = 0; x < r->d2; x++) {
        nk += K[x] != 0.0;
        nc += K[x] != 0.0 && Bp[x] != K[x];
        np += K[x] == 0.0 && Bp[x] != 0.0;
        nz += Bp[x] != 0.0;
    }
    r->bytes_wire += 1; /* which of the three encodings */
    plain = entry * nz;
    known = 8 * nk + entry * np;
    delta = mask_bytes(nk) + 8 * nc + entry * np;
    if (delta < plain || known < plain) {
        rc = transmit_up_known(r, Bp, K, delta < known, nnz);
        if (rc != CORE_OK)
            return rc;
    } else {
        rc = transmit(r, Bp, 1, nnz);
        if (rc != CORE_OK)
            return rc;
    }
    memcpy(K, Bp, r->d2 * sizeof(double));
    return CORE_OK;
}

/* The P solve() calls of one round through ops->par_run: each writes only B_p and rc[p]. */
struct par_round {
    struct run *r;
    const struct lrn_local_ops *ops;
    size_t t;
};

static void par_solve(void *arg, size_t p)
{
    struct par_round *j = arg;
    struct run *r = j->r;
    r->rc[p] = j->ops->solve(j->ops->self, p, j->t, r->Wp + p * r->d2, r->beta + p * r->d2, r->rho2,
                             r->B + p * r->d2);
}

static core_err local_round(struct run *r, const struct lrn_local_ops *ops, size_t t)
{
    size_t nnz;
    core_err rc;

    r->nnz_up = 0;
    r->nnz_up_known = 0;
    r->nnz_up_same = 0;
    r->up_mask_bytes = 0;
    r->present = 0;
    if (ops->par_run) {
        struct par_round job = {r, ops, t};
        ops->par_run(ops->par, r->P, par_solve, &job);
    }
    for (size_t p = 0; p < r->P; p++) {
        double *Bp = r->B + p * r->d2;
        uint64_t before = r->bytes_model;
        rc = ops->par_run
                 ? r->rc[p]
                 : ops->solve(ops->self, p, t, r->Wp + p * r->d2, r->beta + p * r->d2, r->rho2, Bp);
        r->absent[p] = rc == CORE_ENOTFOUND; /* absent this round: B_p, β_p, W_p kept */
        if (r->absent[p])
            continue;
        if (rc != CORE_OK)
            return rc;
        r->present++;
        for (size_t i = 0; i < r->d; i++)
            Bp[i * r->d + i] = 0.0;
        /* Upload sparsification (our choice, docs/learner.md): entries below b_sparsify
         * are not sent and are zero in the participant's own B_p as well, so the duals
         * β_p += ρ₂(B_p − W) of both sides stay equal and do not drift on entries that W
         * (sparsified at w_sparsify) never carries. PGCD then gets a warm start that
         * differs from its cached B and recomputes its gradient (one dgemm, see pgcd.c). */
        if (r->o->b_sparsify > 0.0)
            for (size_t x = 0; x < r->d2; x++)
                if (fabs(Bp[x]) < r->o->b_sparsify)
                    Bp[x] = 0.0;
        rc = transmit_up(r, Bp, r->Kup + p * r->d2, &nnz);
        if (rc != CORE_OK)
            return rc;
        r->bytes_up_model += r->bytes_model - before;
        r->nnz_up += nnz;
    }
    return r->present == 0 ? CORE_ENOTFOUND : CORE_OK;
}

/* Sums over participants and the union support (DESIGN §6 step 2). */
static void server_prepare(struct run *r)
{
    size_t d = r->d;

    memset(r->sumB, 0, 2 * r->d2 * sizeof(double));
    r->const_b = 0.0;
    for (size_t p = 0; p < r->P; p++) {
        const double *Bp = r->B + p * r->d2, *bp = r->beta + p * r->d2;
        if (r->absent[p])
            continue;
        for (size_t x = 0; x < r->d2; x++) {
            r->sumB[x] += Bp[x];
            r->sumBeta[x] += bp[x];
            r->const_b += Bp[x] * Bp[x];
        }
    }
    r->nsupp = 0;
    for (size_t x = 0; x < r->d2; x++) {
        int in = 0;
        if (x / d == x % d) {
            r->W[x] = 0.0;
            continue;
        }
        in = r->W[x] != 0.0 || r->sumB[x] != 0.0 || r->sumBeta[x] != 0.0;
        for (size_t p = 0; p < r->P && !in; p++)
            in = !r->absent[p] && (r->B[p * r->d2 + x] != 0.0 || r->beta[p * r->d2 + x] != 0.0);
        if (in)
            r->supp[r->nsupp++] = x;
        else
            r->W[x] = 0.0;
    }
}

/* Server objective (DESIGN §6 step 2) and its gradient on the support variables. */
static lbfgsfloatval_t server_eval(void *inst, const lbfgsfloatval_t *x, lbfgsfloatval_t *g,
                                   const int n, const lbfgsfloatval_t step)
{
    struct run *r = inst;
    double h = 0.0, f, c, P = (double)r->present;
    (void)step;

    r->evals++;
    for (int k = 0; k < n; k++)
        r->W[r->supp[k]] = x[k];
    if (lrn_acyclic_h(r->ws, r->W, &h, r->grad) != CORE_OK) {
        /* Overflow at a trial point: report +inf so the line search backs off. */
        for (int k = 0; k < n; k++)
            g[k] = 0.0;
        return INFINITY;
    }
    f = r->alpha * h + 0.5 * r->rho1 * h * h + 0.5 * r->rho2 * r->const_b;
    c = r->alpha + r->rho1 * h;
    for (int k = 0; k < n; k++) {
        size_t s = r->supp[k];
        double w = x[k];
        f += -r->sumBeta[s] * w + 0.5 * r->rho2 * (P * w * w - 2.0 * r->sumB[s] * w);
        g[k] = c * r->grad[s] - r->sumBeta[s] + r->rho2 * (P * w - r->sumB[s]);
    }
    return f;
}

static int server_progress(void *inst, const lbfgsfloatval_t *x, const lbfgsfloatval_t *g,
                           const lbfgsfloatval_t fx, const lbfgsfloatval_t xnorm,
                           const lbfgsfloatval_t gnorm, const lbfgsfloatval_t step, int n, int k,
                           int ls)
{
    struct run *r = inst;
    double dmax = 0.0;
    (void)g, (void)fx, (void)xnorm, (void)gnorm, (void)step, (void)ls;

    r->iters = (size_t)k;
    /* Stop once no entry of W moved by more than wtol in 3 consecutive iterations: the
     * gradient norm is a poor test here because the ρ₁h² directions are very stiff. */
    for (int i = 0; i < n; i++) {
        double a = fabs(x[i] - r->xprev[i]);
        dmax = a > dmax ? a : dmax; /* fmax's result (a NaN is skipped), without the libm call */
        r->xprev[i] = x[i];
    }
    r->calm = dmax <= r->o->lbfgs_wtol ? r->calm + 1 : 0;
    return r->calm >= 3 ? 1 : 0;
}

static core_err server_solve(struct run *r, size_t *iters)
{
    lbfgs_parameter_t prm;
    lbfgsfloatval_t fx = 0.0;
    int st;

    server_prepare(r);
    *iters = 0;
    if (r->nsupp == 0)
        return CORE_OK;
    for (size_t k = 0; k < r->nsupp; k++)
        r->x[k] = r->xprev[k] = r->W[r->supp[k]];
    r->calm = 0;
    lbfgs_parameter_init(&prm);
    prm.max_iterations = (int)r->o->lbfgs_max_iter;
    prm.epsilon = r->o->lbfgs_epsilon;
    prm.linesearch = LBFGS_LINESEARCH_BACKTRACKING_WOLFE;

    r->iters = 0;
    r->evals = 0;
    st = lbfgs((int)r->nsupp, r->x, &fx, server_eval, server_progress, r, &prm);
    if (st == LBFGSERR_OUTOFMEMORY)
        return CORE_ENOMEM;
    if (st == LBFGSERR_INVALID_N || st == LBFGSERR_INVALIDPARAMETERS ||
        st == LBFGSERR_INVALID_EPSILON)
        return CORE_EINVAL;
    /* Any other status leaves x at the last accepted (finite-objective) point. */
    for (size_t k = 0; k < r->nsupp; k++) {
        if (!isfinite(r->x[k]))
            return CORE_ENUMERIC;
        r->W[r->supp[k]] = r->x[k];
    }
    *iters = r->iters;
    return CORE_OK;
}

static double dual_update(struct run *r)
{
    double res = 0.0;

    for (size_t p = 0; p < r->P; p++) {
        const double *Bp = r->B + p * r->d2;
        double *bp = r->beta + p * r->d2;
        if (r->absent[p])
            continue;
        for (size_t x = 0; x < r->d2; x++) {
            double diff = Bp[x] - r->Wp[p * r->d2 + x];
            bp[x] += r->rho2 * diff;
            if (fabs(diff) > res)
                res = fabs(diff);
        }
    }
    r->alpha += r->rho1 * (r->o->acyc_on_server ? r->h_srv : r->h);
    return res;
}

/* The h that drives α and ρ₁: h(W̃) of the server's own minimiser when acyc_on_server (the
 * default), else h of the sparsified W that was sent (the pre-issue-9 behaviour). */
static double h_control(const struct run *r)
{
    return r->o->acyc_on_server ? r->h_srv : r->h;
}

/* Residual balancing (Boyd et al. 2011, §3.4.1, Eq. 3.13; He et al. 2000): keep the primal
 * residual max|B_p − W_p| and the dual residual ρ₂·max|ΔW| within a factor rho2_balance of
 * each other. β_p is the unscaled dual here, so it needs no rescaling when ρ₂ changes. With
 * ρ₂ fixed at 1 a participant whose data want an entry that acyclicity forbids closes
 * max|B_p − W_p| by ρ₂·|B_p − W_p| of dual per round: measured on tuning seed 122 it sat at
 * 0.07–0.10 for 60 rounds (never under primal_tol) while the dual residual was 0.003–0.02. */
static void rho2_balance(struct run *r, const struct lrn_admm_progress *pr)
{
    const struct lrn_admm_opts *o = r->o;

    if (!(o->rho2_balance > 0.0))
        return;
    if (pr->primal_residual > o->rho2_balance * pr->dual_residual)
        r->rho2 = fmin(r->rho2 * o->rho2_balance_factor, o->rho2_max);
    else if (pr->dual_residual > o->rho2_balance * pr->primal_residual)
        r->rho2 = fmax(r->rho2 / o->rho2_balance_factor, o->rho2);
}

static void rho_schedule(struct run *r, const struct lrn_admm_progress *pr, double h_prev, size_t t)
{
    const struct lrn_admm_opts *o = r->o;

    if (o->schedule == LRN_RHO_EVERY_ROUND) {
        r->rho1 = fmin(r->rho1 * o->rho1_growth, o->rho_max);
        r->rho2 = fmin(r->rho2 * o->rho2_growth, o->rho_max);
        return;
    }
    if (t > 0 && h_control(r) > o->h_stall * h_prev &&
        (!o->acyc_on_server || h_control(r) > o->rho1_h_floor))
        r->rho1 = fmin(r->rho1 * o->rho1_growth, o->rho_max);
    if (t > 0)
        rho2_balance(r, pr);
}

static size_t count_edges(const double *W, size_t d, double thr)
{
    size_t e = 0;
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < d; j++)
            e += i != j && fabs(W[i * d + j]) >= thr && W[i * d + j] != 0.0;
    return e;
}

static core_err finish(struct run *r, double *W, double *W_raw, struct lrn_admm_result *res)
{
    void *work = NULL;
    core_err rc = CORE_OK;

    res->h_raw = r->h;
    if (W_raw)
        memcpy(W_raw, r->Ws, r->d2 * sizeof(double));
    memcpy(W, r->Ws, r->d2 * sizeof(double));
    res->pruned = 0;
    if (r->o->enforce_dag) {
        work = core_xmalloc(lrn_dag_prune_work_len(r->d));
        rc = lrn_dag_prune(r->d, W, r->o->w_threshold, work, &res->pruned);
        free(work);
    } else {
        for (size_t x = 0; x < r->d2; x++)
            if (!(fabs(W[x]) >= r->o->w_threshold) || x / r->d == x % r->d)
                W[x] = 0.0;
    }
    if (rc == CORE_OK)
        rc = lrn_acyclic_h(r->ws, W, &res->h, NULL);
    res->edges = count_edges(W, r->d, 0.0);
    res->bytes_model = r->bytes_model;
    res->bytes_wire = r->bytes_wire;
    res->bytes_up_model = r->bytes_up_model;
    return rc;
}

/* Support bookkeeping after the server step: how many entries entered or left the support
 * {|W_ij| ≥ w_threshold} of the sent W, the dual residual ρ₂·max|Wᵗ − Wᵗ⁻¹| (Boyd et al.
 * 2011, §3.3: s = ρ(zᵗ − zᵗ⁻¹), max norm here), and the largest |β_p,ij| on entries that W
 * does not carry (what the w_sparsify gap lets accumulate). */
static void round_stats(struct run *r, struct lrn_admm_progress *pr)
{
    size_t changes = 0;
    double dres = 0.0, bdrop = 0.0;

    for (size_t x = 0; x < r->d2; x++) {
        uint8_t in = fabs(r->Ws[x]) >= r->o->w_threshold && r->Ws[x] != 0.0;
        changes += in != r->sprev[x];
        r->sprev[x] = in;
        if (r->sent[x] || r->Wprev[x] != 0.0)
            dres = fmax(dres, fabs((r->sent[x] ? r->W[x] : 0.0) - r->Wprev[x]));
        r->Wprev[x] = r->sent[x] ? r->W[x] : 0.0;
        for (size_t p = 0; p < r->P; p++)
            if (!r->absent[p] && r->Wp[p * r->d2 + x] == 0.0)
                bdrop = fmax(bdrop, fabs(r->beta[p * r->d2 + x]));
    }
    pr->support_changes = changes;
    pr->dual_residual = r->rho2 * dres;
    pr->beta_dropped = bdrop;
}

/* What each participant receives (docs/learner.md "Convergence"): W̃ on the sent support
 * {|W̃| ≥ w_sparsify} and, with down_own_support, also on every entry participant p itself
 * uploaded (B_p,ij ≠ 0). There the dual update β_p += ρ₂(B_p − W̃) is exact ADMM, so an
 * entry dropped from W cannot accumulate a dual from the gap between B_p and a zeroed W.
 * On entries neither sent nor uploaded B_p = W = 0 and β_p does not move. */
static core_err send_down(struct run *r)
{
    size_t nnz = 0;
    core_err rc = CORE_OK;

    memset(r->sent, 0, r->d2);
    r->nnz_down = 0;
    r->nnz_down_known = 0;
    if (!r->o->down_own_support) {
        rc = transmit(r, r->Ws, r->present, &nnz);
        for (size_t p = 0; rc == CORE_OK && p < r->P; p++)
            if (!r->absent[p])
                memcpy(r->Wp + p * r->d2, r->Ws, r->d2 * sizeof(double));
        for (size_t x = 0; x < r->d2; x++)
            r->sent[x] = r->Ws[x] != 0.0;
        r->nnz_down = nnz * r->present;
        return rc;
    }
    for (size_t p = 0; rc == CORE_OK && p < r->P; p++) {
        double *Wp = r->Wp + p * r->d2;
        const double *Bp = r->B + p * r->d2;
        if (r->absent[p])
            continue;
        for (size_t x = 0; x < r->d2; x++) {
            Wp[x] = r->Ws[x] != 0.0 || Bp[x] != 0.0 ? r->W[x] : 0.0;
            r->sent[x] |= Wp[x] != 0.0;
        }
        if (r->o->wire == LRN_WIRE_SPARSE) {
            rc = transmit_known(r, Wp, Bp); /* p knows what it uploaded: no indices there */
            continue;
        }
        rc = transmit(r, Wp, 1, &nnz);
        r->nnz_down += nnz;
    }
    return rc;
}

static core_err run_round(struct run *r, const struct lrn_local_ops *ops, size_t t,
                          struct lrn_admm_progress *pr)
{
    core_err rc;
    size_t iters = 0;

    rc = local_round(r, ops, t);
    if (rc == CORE_OK) {
        if (!r->o->acyc_on_server) /* old behaviour: warm start at the sparsified W */
            memcpy(r->W, r->Ws, r->d2 * sizeof(double));
        rc = server_solve(r, &iters);
    }
    if (rc == CORE_OK)
        rc = lrn_acyclic_h(r->ws, r->W, &r->h_srv, NULL);
    if (rc == CORE_OK) {
        /* w_sparsify with hysteresis (docs/learner.md "Convergence"): an entry enters the
         * sent W at |W̃| ≥ w_sparsify and leaves it only below w_keep·w_sparsify, so an
         * entry whose consensus value lies just under w_sparsify is not switched on and
         * off every round (a limit cycle of the duals, measured: ρ₂·|ΔW| ≈ 0.1 forever). */
        double keep = r->o->w_sparsify * r->o->w_keep;
        for (size_t x = 0; x < r->d2; x++) {
            double a = fabs(r->W[x]);
            int in = a >= r->o->w_sparsify || (r->sprev_ws[x] && a >= keep);
            r->Ws[x] = in ? r->W[x] : 0.0;
            r->sprev_ws[x] = (uint8_t)in;
        }
        rc = send_down(r);
    }
    if (rc == CORE_OK)
        rc = lrn_acyclic_h(r->ws, r->Ws, &r->h, NULL);
    if (rc != CORE_OK)
        return rc == CORE_EINVAL ? CORE_ENUMERIC : rc;
    memset(pr, 0, sizeof(*pr));
    pr->round = t;
    pr->h = r->h;
    pr->h_server = r->h_srv;
    pr->rho1 = r->rho1;
    pr->rho2 = r->rho2;
    pr->primal_residual = dual_update(r);
    round_stats(r, pr);
    pr->alpha = r->alpha;
    pr->edges = count_edges(r->Ws, r->d, r->o->w_threshold);
    pr->nnz_up = r->nnz_up;
    pr->nnz_up_known = r->nnz_up_known;
    pr->nnz_up_same = r->nnz_up_same;
    pr->up_mask_bytes = r->up_mask_bytes;
    pr->nnz_down = r->nnz_down;
    pr->nnz_down_known = r->nnz_down_known;
    pr->bytes_model = r->bytes_model;
    pr->bytes_wire = r->bytes_wire;
    pr->lbfgs_iters = iters;
    pr->lbfgs_evals = r->evals;
    pr->server_vars = r->nsupp;
    return CORE_OK;
}

/* The stopping rule (docs/learner.md, "Convergence"): primal and dual residuals and h(W̃)
 * under their tolerances and the support unchanged for stable_rounds rounds. */
static bool converged(const struct lrn_admm_opts *o, const struct lrn_admm_progress *pr)
{
    if (!(o->primal_tol > 0.0))
        return false;
    return pr->primal_residual <= o->primal_tol && pr->dual_residual <= o->dual_tol &&
           (o->acyc_on_server ? pr->h_server : pr->h) <= o->h_tol &&
           pr->stable_rounds >= o->stable_rounds;
}

/* Final refit (docs/learner.md "Final refit"): the ADMM's W̃ is biased towards 0 twice, by
 * the ℓ₁ penalty (λ/Σ_jj per entry) and by α∇h, whose weight α has grown to 1e3–1e5 while
 * W̃ keeps entries of 1e-3–1e-1 that close near-cycles: true edges of weight 0.5–1 ended at
 * 0.1–0.3, under the 0.3 threshold (tuning seeds 100–139). Relaxed lasso (Meinshausen
 * 2007): the ADMM selects the support, an unpenalised fit sets the weights. The server
 * sends the DAG {|W̃| ≥ refit_threshold} (cycles broken as lrn_dag_prune), each
 * participant returns its OLS weights on it (lrn_personalize_ols on its Σ_p), and W is
 * their mean, the consensus of the refit; the usual threshold and pruning follow. One more
 * message each way, on that support only; absent participants stay out. */
static core_err refit_mean(struct run *r, const struct lrn_local_ops *ops, double *dag);

static core_err final_refit(struct run *r, const struct lrn_local_ops *ops)
{
    double *dag = r->grad; /* the server's scratch, free after the last round */
    size_t pruned = 0;
    void *work = core_xmalloc(lrn_dag_prune_work_len(r->d));
    core_err rc;

    if (r->present == 0) { /* nobody to refit with: W̃ stays the answer */
        free(work);
        return CORE_OK;
    }
    memcpy(dag, r->W, r->d2 * sizeof(double));
    rc = lrn_dag_prune(r->d, dag, r->o->refit_threshold, work, &pruned);
    free(work);
    return rc == CORE_OK ? refit_mean(r, ops, dag) : rc;
}

/* The server sends `dag` (transmitted, so decoded in place), each present participant
 * returns its OLS weights on it, and r->Ws becomes their mean on the DAG. */
static core_err refit_mean(struct run *r, const struct lrn_local_ops *ops, double *dag)
{
    double n = 0.0;
    size_t nnz;
    core_err rc = transmit(r, dag, r->present, &nnz);

    memset(r->Ws, 0, r->d2 * sizeof(double));
    for (size_t p = 0; rc == CORE_OK && p < r->P; p++) {
        double *Bp = r->B + p * r->d2;
        uint64_t before = r->bytes_model;
        if (r->absent[p])
            continue;
        rc = ops->refit(ops->self, p, dag, Bp);
        if (rc == CORE_OK)
            rc = transmit(r, Bp, 1, &nnz);
        r->bytes_up_model += r->bytes_model - before;
        for (size_t x = 0; rc == CORE_OK && x < r->d2; x++)
            r->Ws[x] += Bp[x];
        n += 1.0;
    }
    for (size_t x = 0; rc == CORE_OK && x < r->d2; x++)
        r->Ws[x] = dag[x] != 0.0 ? r->Ws[x] / n : 0.0;
    if (rc == CORE_OK)
        rc = lrn_acyclic_h(r->ws, r->Ws, &r->h, NULL);
    return rc;
}

/* ---- final search (docs/learner.md "Final search") ----
 * The ADMM path is not a continuous function of the input: its server step ends at the
 * L-BFGS iteration cap in most rounds, so last-bit differences (BLAS kernel, a 1e-12
 * perturbation) grow round by round, and near a bifurcation two runs settle in different
 * orientation optima (evaluation seed 3: SHD 0 on one kernel, 8 on another, one reversed
 * edge and compensating extras). A greedy search on a discrete score maps such neighbouring
 * optima to the same DAG: the BIC of the participants' own OLS fits under the SEM's equal
 * noise variances, Σ_p (n_p·d/2)·log(Σ_j rv_p(j | Pa_j)) + |E|·Σ_p log(n_p)/2, where
 * rv_p is participant p's residual variance (lrn_node_rss on its Σ_p). Moves: remove or
 * reverse an edge, or add one of the candidate pairs {W̃_ij ≠ 0} (either orientation: the
 * pairs the server's last step optimised over, the union of what the participants
 * uploaded; chosen on tuning seeds 100–139 over {|W̃| ≥ b_sparsify}: 40 vs 39 of 40 seeds
 * with the same DAG on every kernel and perturbation), acyclic results only. The best
 * move is taken while it improves the score by more than `tie`; candidates within `tie` of
 * the best so far keep the lowest index (removal, reversal, addition in that order), so the
 * choice does not depend on rounding. */
struct srch {
    size_t d, P, ne, queries, cands;
    double *dag, *rv, *n, *ca, *cb, *ba, *bb; /* d², P·d, then P each */
    double *tog;    /* P·d²: rv_p(j | Pa_j xor {i}) at p·d² + i·d + j (the run's β storage) */
    uint8_t *have;  /* d²: tog entry i·d+j valid for the current Pa_j */
    uint8_t *cand;  /* d²: pair i → j may be added */
    uint8_t *reach; /* d²: a path i ⇝ j in the current DAG (i ≠ j), this sweep */
    double *L;      /* P: Σ_j rv_p(j) of the current DAG */
    size_t *pa, *gw; /* d, 2d */
    double score, tie, pen;
};

/* Every present participant's rv of node j on its parents in s->dag with i toggled
 * (i = j: the parents as they are) into out[p], asked once per parent set. */
static core_err srch_query(struct run *r, const struct lrn_local_ops *ops, struct srch *s, size_t i,
                           size_t j, double *out)
{
    size_t k = 0, d = s->d, x = i * d + j;
    core_err rc = CORE_OK;

    if (!s->have[x]) {
        for (size_t q = 0; q < d; q++)
            if ((s->dag[q * d + j] != 0.0) != (q == i && i != j))
                s->pa[k++] = q;
        for (size_t p = 0; rc == CORE_OK && p < s->P; p++)
            if (!r->absent[p])
                rc = ops->node_rss(ops->self, p, j, s->pa, k, s->tog + p * d * d + x, &s->n[p]);
        s->have[x] = rc == CORE_OK;
        s->queries++;
    }
    for (size_t p = 0; p < s->P; p++)
        out[p] = s->tog[p * d * d + x];
    return rc;
}

/* The score with node b's rv replaced by nb and (a < d) node a's by na, ne edges. */
static double srch_score(const struct run *r, const struct srch *s, size_t a, const double *na,
                         size_t b, const double *nb, size_t ne)
{
    double f = (double)ne * s->pen;

    for (size_t p = 0; p < s->P; p++) {
        double L = s->L[p];
        if (r->absent[p])
            continue;
        if (b < s->d)
            L += nb[p] - s->rv[p * s->d + b];
        if (a < s->d)
            L += na[p] - s->rv[p * s->d + a];
        if (!(L > 0.0) || !isfinite(L))
            return INFINITY;
        f += s->n[p] * (double)s->d / 2.0 * log(L);
    }
    return f;
}

/* L_p of the current DAG (after a move: summed afresh, not updated, so no drift). */
static void srch_sums(struct srch *s)
{
    for (size_t p = 0; p < s->P; p++) {
        s->L[p] = 0.0;
        for (size_t j = 0; j < s->d; j++)
            s->L[p] += s->rv[p * s->d + j];
    }
}

/* reach[i·d+j]: a directed path i ⇝ j of length ≥ 1 (DFS from every node, O(d·(d+E))). */
static void srch_reach(struct srch *s)
{
    size_t d = s->d, *st = s->gw, top;

    memset(s->reach, 0, d * d);
    for (size_t i = 0; i < d; i++) {
        top = 0;
        st[top++] = i;
        while (top > 0) {
            size_t u = st[--top];
            for (size_t v = 0; v < d; v++)
                if (s->dag[u * d + v] != 0.0 && !s->reach[i * d + v]) {
                    s->reach[i * d + v] = 1;
                    st[top++] = v;
                }
        }
    }
}

/* Reversing a → b keeps a DAG unless another path a ⇝ b exists (via a child c ≠ b). */
static bool srch_rev_ok(const struct srch *s, size_t a, size_t b)
{
    for (size_t c = 0; c < s->d; c++)
        if (c != b && s->dag[a * s->d + c] != 0.0 && (s->reach[c * s->d + b]))
            return false;
    return true;
}

enum { SRCH_RM, SRCH_REV, SRCH_ADD };

/* Keep candidate (f, x, kind) if it beats the best so far (by tie once there is one). */
static void srch_take(struct srch *s, double f, size_t x, int kind, double *best, size_t *bx,
                      int *bk)
{
    if (!(f < *best - (*bx == SIZE_MAX ? 0.0 : s->tie)))
        return;
    *best = f, *bx = x, *bk = kind;
    memcpy(s->bb, s->cb, s->P * sizeof(double));
    if (kind == SRCH_REV)
        memcpy(s->ba, s->ca, s->P * sizeof(double));
}

/* One sweep: the best move into *bx (x = a·d+b), *bk, its rv in s->ba / s->bb; *bx =
 * SIZE_MAX when no move improves the score by more than tie. */
static core_err srch_sweep(struct run *r, const struct lrn_local_ops *ops, struct srch *s,
                           size_t *bx, int *bk)
{
    size_t d = s->d;
    double best = s->score - s->tie;
    core_err rc = CORE_OK;

    *bx = SIZE_MAX;
    srch_reach(s);
    for (size_t x = 0; rc == CORE_OK && x < d * d; x++) {
        size_t a = x / d, b = x % d;
        if (s->dag[x] != 0.0) {
            rc = srch_query(r, ops, s, a, b, s->cb); /* b without a */
            if (rc == CORE_OK)
                srch_take(s, srch_score(r, s, d, NULL, b, s->cb, s->ne - 1), x, SRCH_RM, &best, bx,
                          bk);
            if (rc != CORE_OK || !srch_rev_ok(s, a, b))
                continue;
            rc = srch_query(r, ops, s, b, a, s->ca); /* a with b */
            if (rc == CORE_OK)
                srch_take(s, srch_score(r, s, a, s->ca, b, s->cb, s->ne), x, SRCH_REV, &best, bx,
                          bk);
        } else if (s->cand[x] && s->dag[b * d + a] == 0.0 && !s->reach[b * d + a]) {
            rc = srch_query(r, ops, s, a, b, s->cb); /* b with a */
            if (rc == CORE_OK)
                srch_take(s, srch_score(r, s, d, NULL, b, s->cb, s->ne + 1), x, SRCH_ADD, &best, bx,
                          bk);
        }
    }
    if (*bx != SIZE_MAX)
        s->score = best;
    return rc;
}

static void srch_apply(struct srch *s, size_t x, int kind)
{
    size_t d = s->d, a = x / d, b = x % d;

    s->dag[x] = kind == SRCH_ADD ? 1.0 : 0.0;
    if (kind == SRCH_REV)
        s->dag[b * d + a] = 1.0;
    s->ne += kind == SRCH_ADD ? 1 : 0;
    s->ne -= kind == SRCH_RM ? 1 : 0;
    for (size_t p = 0; p < s->P; p++) {
        s->rv[p * d + b] = s->bb[p];
        if (kind == SRCH_REV)
            s->rv[p * d + a] = s->ba[p];
    }
    srch_sums(s);
    for (size_t i = 0; i < d; i++) { /* Pa_b (and Pa_a) changed: their answers are stale */
        s->have[i * d + b] = 0;
        if (kind == SRCH_REV)
            s->have[i * d + a] = 0;
    }
}

/* Communication of the search in the paper's model: the starting DAG and the candidate
 * pairs' indices to every participant, one move (index + kind byte) per sweep, 8 bytes per
 * answered query. */
static void srch_account(struct run *r, const struct srch *s, size_t sweeps, size_t ne0)
{
    uint64_t bi = lrn_wire_index_bytes(r->d), pr = r->present;
    uint64_t down = pr * ((ne0 + s->cands) * bi + sweeps * (bi + 1)), up = pr * s->queries * 8;

    r->bytes_model += down + up;
    r->bytes_wire += down + up;
    r->bytes_up_model += up;
}

static core_err srch_run(struct run *r, const struct lrn_local_ops *ops, struct srch *s,
                         size_t *moves)
{
    size_t d = s->d, bx = 0, sweeps = 0, ne0 = s->ne;
    int kind = SRCH_RM;
    core_err rc = CORE_OK;

    for (size_t j = 0; rc == CORE_OK && j < d; j++) {
        rc = srch_query(r, ops, s, j, j, s->cb);
        for (size_t p = 0; p < s->P; p++)
            s->rv[p * d + j] = s->cb[p];
    }
    s->pen = 0.0;
    s->tie = 0.0;
    for (size_t p = 0; p < s->P; p++)
        if (!r->absent[p]) {
            s->pen += log(s->n[p]) / 2.0;
            s->tie += 1e-8 * s->n[p] * (double)d / 2.0;
        }
    srch_sums(s);
    s->score = srch_score(r, s, d, NULL, d, NULL, s->ne);
    *moves = 0;
    while (rc == CORE_OK && *moves < d * d) {
        rc = srch_sweep(r, ops, s, &bx, &kind);
        sweeps++;
        if (rc != CORE_OK || bx == SIZE_MAX)
            break;
        srch_apply(s, bx, kind);
        (*moves)++;
    }
    srch_account(r, s, sweeps, ne0);
    return rc;
}

/* Starting DAG (the refit's W thresholded and pruned as finish() would) and candidates. */
static core_err srch_init(struct run *r, struct srch *s)
{
    size_t d = r->d;
    void *work = core_xmalloc(lrn_dag_prune_work_len(d));
    core_err rc;

    memcpy(s->dag, r->Ws, r->d2 * sizeof(double));
    rc = lrn_dag_prune(d, s->dag, r->o->w_threshold, work, NULL);
    free(work);
    for (size_t x = 0; x < r->d2; x++) {
        size_t t = (x % d) * d + x / d;
        s->dag[x] = s->dag[x] != 0.0 ? 1.0 : 0.0;
        s->ne += s->dag[x] != 0.0;
        s->cand[x] = x / d != x % d && (r->W[x] != 0.0 || r->W[t] != 0.0);
        s->cands += s->cand[x] && s->dag[x] == 0.0;
    }
    return rc;
}

static core_err final_search(struct run *r, const struct lrn_local_ops *ops, size_t *moves)
{
    size_t d = r->d, P = r->P;
    struct srch s = {.d = d, .P = P};
    core_err rc;

    *moves = 0;
    if (r->present == 0)
        return CORE_OK;
    s.dag = r->grad; /* scratch, free after the last round */
    s.tog = r->beta; /* the duals are not needed after the last round */
    s.rv = core_xcalloc(P * d + 6 * P, sizeof(double));
    s.n = s.rv + P * d;
    s.ca = s.n + P;
    s.cb = s.ca + P;
    s.ba = s.cb + P;
    s.bb = s.ba + P;
    s.L = s.bb + P;
    s.pa = core_xcalloc(3 * d, sizeof(size_t));
    s.gw = s.pa + d;
    s.have = core_xcalloc(3 * r->d2, 1);
    s.cand = s.have + r->d2;
    s.reach = s.cand + r->d2;
    rc = srch_init(r, &s);
    if (rc == CORE_OK)
        rc = srch_run(r, ops, &s, moves);
    if (rc == CORE_OK && *moves > 0)
        rc = refit_mean(r, ops, s.dag);
    free(s.rv);
    free(s.pa);
    free(s.have);
    return rc;
}

core_err lrn_admm_run(size_t d, size_t P, const struct lrn_local_ops *ops,
                      const struct lrn_admm_opts *o, lrn_admm_progress_fn *cb, void *cb_arg,
                      double *W, double *W_raw, struct lrn_admm_result *res)
{
    struct run r;
    struct lrn_admm_progress pr;
    double h_prev = INFINITY;
    size_t stable = 0;
    core_err rc;
    size_t t;

    memset(res, 0, sizeof(*res));
    memset(&pr, 0, sizeof(pr));
    if (d < 2 || P == 0 || !ops || !ops->solve || !o || !W)
        return CORE_EINVAL;
    if (d > LRN_ADMM_MAX_D || P > LRN_ADMM_MAX_P)
        return CORE_ETOOBIG;
    rc = lrn_admm_opts_check(o, NULL, 0);
    if (rc != CORE_OK)
        return rc;
    rc = run_init(&r, d, P, o);
    res->status = LRN_ADMM_MAX_ROUNDS_REACHED;
    for (t = 0; rc == CORE_OK && t < o->max_rounds; t++) {
        rc = run_round(&r, ops, t, &pr);
        if (rc != CORE_OK)
            break;
        stable = t > 0 && pr.support_changes == 0 ? stable + 1 : 0;
        pr.stable_rounds = stable;
        if (cb && !cb(cb_arg, &pr)) {
            res->status = LRN_ADMM_STOPPED;
            t++;
            break;
        }
        if (converged(o, &pr)) {
            res->status = LRN_ADMM_CONVERGED;
            t++;
            break;
        }
        rho_schedule(&r, &pr, h_prev, t);
        h_prev = h_control(&r);
    }
    res->rounds = t;
    res->primal_residual = pr.primal_residual;
    res->dual_residual = pr.dual_residual;
    res->h_server = pr.h_server;
    res->stable_rounds = pr.stable_rounds;
    if (rc == CORE_OK && o->refit_threshold > 0.0 && ops->refit) {
        rc = final_refit(&r, ops);
        if (rc == CORE_OK && o->search && ops->node_rss)
            rc = final_search(&r, ops, &res->search_moves);
    }
    if (rc == CORE_OK)
        rc = finish(&r, W, W_raw, res);
    run_free(&r);
    return rc;
}

/* ---- PGCD as local ops ---- */

struct lrn_pgcd_local {
    size_t d, P;
    double *rows;         /* P: n_p for the final search's BIC (NULL: not set, no search) */
    const double **sigma; /* P: the borrowed Σ_p (the final refit's OLS); array copied */
    double *work;         /* d² + d: lrn_personalize_ols's workspace */
    struct lrn_pgcd **s;
    struct lrn_pgcd_opts o;
    uint64_t *steps; /* P: per participant, so that solves of one round may run at once */
};

static core_err pgcd_local_solve(void *self, size_t p, size_t t, const double *W,
                                 const double *beta_p, double rho2, double *B_p)
{
    struct lrn_pgcd_local *l = self;
    struct lrn_pgcd_stats st;
    core_err rc;
    (void)t;

    if (p >= l->P)
        return CORE_EINVAL;
    rc = lrn_pgcd_solve(l->s[p], &l->o, W, beta_p, rho2, B_p, &st);
    if (rc == CORE_OK)
        l->steps[p] += st.steps;
    return rc;
}

core_err lrn_pgcd_local_new(size_t d, size_t P, const double *const *sigma,
                            const struct lrn_pgcd_opts *o, struct lrn_pgcd_local **out)
{
    struct lrn_pgcd_local *l;
    core_err rc = CORE_OK;

    *out = NULL;
    if (P == 0 || !sigma || !o)
        return CORE_EINVAL;
    if (P > LRN_ADMM_MAX_P)
        return CORE_ETOOBIG;
    l = core_xcalloc(1, sizeof(*l));
    l->d = d;
    l->P = P;
    l->o = *o;
    // NOLINTNEXTLINE(bugprone-sizeof-expression): array of pointers
    l->sigma = core_xcalloc(P, sizeof(*l->sigma));
    memcpy(l->sigma, sigma, P * sizeof(*l->sigma));
    l->work = core_xcalloc(d * d + d, sizeof(double));
    // NOLINTNEXTLINE(bugprone-sizeof-expression): array of pointers
    l->s = core_xcalloc(P, sizeof(*l->s));
    l->steps = core_xcalloc(P, sizeof(*l->steps));
    for (size_t p = 0; p < P && rc == CORE_OK; p++)
        rc = lrn_pgcd_new(d, sigma[p], &l->s[p]);
    if (rc != CORE_OK) {
        lrn_pgcd_local_free(l);
        return rc;
    }
    *out = l;
    return CORE_OK;
}

void lrn_pgcd_local_free(struct lrn_pgcd_local *l)
{
    if (!l)
        return;
    for (size_t p = 0; p < l->P; p++)
        lrn_pgcd_free(l->s[p]);
    free(l->s);
    free(l->steps);
    free(l->rows);
    free(l->work);
    free(l->sigma);
    free(l);
}

/* The final refit: participant p's OLS on the DAG, from its own Σ_p (the statistic PGCD
 * uses), unpenalised: the relaxed-lasso step (docs/learner.md "Final refit"). */
static core_err pgcd_local_refit(void *self, size_t p, const double *dag, double *B_p)
{
    struct lrn_pgcd_local *l = self;

    if (p >= l->P)
        return CORE_EINVAL;
    return lrn_personalize_ols(l->d, l->sigma[p], dag, B_p, l->work);
}

/* The final search's query: participant p's residual variance of node j on parents pa. */
static core_err pgcd_local_node_rss(void *self, size_t p, size_t j, const size_t *pa, size_t k,
                                    double *rv, double *n)
{
    struct lrn_pgcd_local *l = self;

    if (p >= l->P || !l->rows)
        return CORE_EINVAL;
    *n = l->rows[p];
    return lrn_node_rss(l->d, l->sigma[p], j, pa, k, l->work, rv);
}

void lrn_pgcd_local_set_rows(struct lrn_pgcd_local *l, const size_t *n)
{
    if (!l->rows)
        l->rows = core_xcalloc(l->P, sizeof(double));
    for (size_t p = 0; p < l->P; p++)
        l->rows[p] = (double)n[p];
}

struct lrn_local_ops lrn_pgcd_local_ops(struct lrn_pgcd_local *l)
{
    struct lrn_local_ops ops = {
        pgcd_local_solve, l, NULL, NULL, pgcd_local_refit, l->rows ? pgcd_local_node_rss : NULL};
    return ops; /* the participants' solvers share nothing: par_run may be set by the caller */
}

uint64_t lrn_pgcd_local_steps(const struct lrn_pgcd_local *l)
{
    uint64_t n = 0;
    for (size_t p = 0; p < l->P; p++)
        n += l->steps[p];
    return n;
}
