/* acyclic.c - exp(A) by Padé scaling-and-squaring, h(W) = tr(exp(W∘W)) − d, ∇h.
 *
 * Layout trick: the public matrices are row-major; BLAS/LAPACK below run column-major on
 * the same memory, i.e. on Aᵀ. Since r(Aᵀ) = r(A)ᵀ for every rational function r with
 * commuting numerator and denominator (as the Padé approximant is), computing exp of the
 * column-major view yields exp(A)ᵀ column-major = exp(A) row-major. No transposes needed.
 *
 * Degree and scaling (issue 9, speed): Al-Mohy & Higham (2009) choose m and s from
 * d_p = ‖A^p‖₁^(1/p) (p = 4, 6, 8, 10) instead of ‖A‖₁. For A = W∘W of a nearly acyclic W
 * these are far smaller than ‖A‖₁ (d = 20 run, seed 3: ‖A‖₁ ≈ 8.6, d_4 ≈ 0.6, d_6 ≈ 0.29):
 * the 2005 rule took degree 13 with one squaring (7 products), this one degree 7 with none
 * (4 products), with the same bound on the backward error. For A ≥ 0, which every call from
 * h(W) is, the norms of the powers are exact and cheap (1ᵀA^p by vector–matrix products).
 *
 * h(W) by strongly connected components: after permuting the nodes into a topological
 * order of the SCC condensation, A = W∘W is block upper-triangular, so exp(A) has the
 * diagonal blocks exp(A_C) and tr(exp(A)) − d = Σ_C (tr(exp(A_C)) − |C|). For the
 * gradient, (∇h)_ij = exp(A)_ji·2W_ij is nonzero only if W_ij ≠ 0 and a path j ⇝ i exists,
 * i.e. i and j share an SCC, and then every node on the path is in that SCC, so
 * exp(A)_ji = exp(A_C)_ji. This is exact (not an approximation) and makes h cheap once
 * the iterate is nearly acyclic, which is where ADMM spends most of its rounds.
 */
#include "lrn/acyclic.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <lapacke.h>

#include "core/mem.h"

struct lrn_acyclic_ws {
    size_t d;
    double *a, *a2, *a4, *a6, *u, *v, *t;               /* d² each; sub-blocks use leading dim k */
    double *e;                                          /* d², Padé scratch */
    double *eb;                                         /* d², exp of one SCC block */
    double *vec;                                        /* 2d: row vectors of the norm chains */
    lapack_int *ipiv;                                   /* d */
    size_t *comp, *order, *stk, *call, *idx, *low, *it; /* Tarjan, d each */
    unsigned char *onst;                                /* d */
    size_t *start;                                      /* d + 1: component offsets into order */
};

core_err lrn_acyclic_ws_new(size_t d, struct lrn_acyclic_ws **out)
{
    struct lrn_acyclic_ws *ws;
    size_t d2;

    *out = NULL;
    if (d == 0)
        return CORE_EINVAL;
    if (d > LRN_ACYCLIC_MAX_D)
        return CORE_ETOOBIG;
    d2 = d * d;
    ws = core_xcalloc(1, sizeof(*ws));
    ws->d = d;
    ws->a = core_xcalloc(9 * d2 + 2 * d, sizeof(double));
    ws->a2 = ws->a + d2;
    ws->a4 = ws->a2 + d2;
    ws->a6 = ws->a4 + d2;
    ws->u = ws->a6 + d2;
    ws->v = ws->u + d2;
    ws->t = ws->v + d2;
    ws->e = ws->t + d2;
    ws->eb = ws->e + d2;
    ws->vec = ws->eb + d2;
    ws->ipiv = core_xcalloc(d, sizeof(lapack_int));
    ws->comp = core_xcalloc(8 * d + 1, sizeof(size_t));
    ws->order = ws->comp + d;
    ws->stk = ws->order + d;
    ws->call = ws->stk + d;
    ws->idx = ws->call + d;
    ws->low = ws->idx + d;
    ws->it = ws->low + d;
    ws->start = ws->it + d;
    ws->onst = core_xcalloc(d, 1);
    *out = ws;
    return CORE_OK;
}

void lrn_acyclic_ws_free(struct lrn_acyclic_ws *ws)
{
    if (!ws)
        return;
    free(ws->a);
    free(ws->ipiv);
    free(ws->comp);
    free(ws->onst);
    free(ws);
}

size_t lrn_acyclic_ws_dim(const struct lrn_acyclic_ws *ws)
{
    return ws->d;
}

/* ---- Padé approximants (Higham 2005, "The scaling and squaring method for the matrix
 * exponential revisited", Table 2.3 θ_m and the coefficients b_j of r_m; the choice of m and
 * of the scaling s is Al-Mohy & Higham 2009, "A new scaling and squaring algorithm for the
 * matrix exponential", SIAM J. Matrix Anal. Appl. 31(3), Algorithm 5.1) ---- */

enum { NDEG = 5 };
static const double theta[NDEG] = {1.495585217958292e-2, 2.539398330063230e-1, 9.504178996162932e-1,
                                   2.097847961257068e0, 5.371920351148152e0};
static const int degree[NDEG] = {3, 5, 7, 9, 13};
/* θ13 of the 2009 algorithm (its tests use ‖A^p‖^(1/p) and the ℓ term instead of ‖A‖₁). */
#define THETA13_2009 4.25
/* 1/|c_{2m+1}|, c_{2m+1} the leading coefficient of the backward-error series of r_m
 * (Al-Mohy & Higham 2009, eq. 5.1; the values scipy.linalg.expm uses). */
static const double cinv[NDEG] = {100800.0, 10059033600.0, 4487938430976000.0,
                                  5914384781877411840000.0, 113250775606021113483283660800000000.0};

static const double b3[4] = {120.0, 60.0, 12.0, 1.0};
static const double b5[6] = {30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0};
static const double b7[8] = {17297280.0, 8648640.0, 1995840.0, 277200.0,
                             25200.0,    1512.0,    56.0,      1.0};
static const double b9[10] = {17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0,
                              2162160.0,     110880.0,     3960.0,       90.0,        1.0};
static const double b13[14] = {64764752532480000.0,
                               32382376266240000.0,
                               7771770303897600.0,
                               1187353796428800.0,
                               129060195264000.0,
                               10559470521600.0,
                               670442572800.0,
                               33522128640.0,
                               1323241920.0,
                               40840800.0,
                               960960.0,
                               16380.0,
                               182.0,
                               1.0};

/* C = A·B for k×k column-major matrices (ld k). */
static void mm(int k, const double *A, const double *B, double *C)
{
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, k, k, k, 1.0, A, k, B, k, 0.0, C, k);
}

static double norm1(size_t k, const double *A)
{
    double best = 0.0;
    for (size_t j = 0; j < k; j++) {
        double s = 0.0;
        for (size_t i = 0; i < k; i++)
            s += fabs(A[j * k + i]);
        if (s > best)
            best = s;
    }
    return best;
}

static void add_identity(size_t k, double *M, double c)
{
    for (size_t i = 0; i < k; i++)
        M[i * k + i] += c;
}

/* A2, A4, A6 of the k×k column-major matrix in ws->a. */
static void powers(struct lrn_acyclic_ws *ws, int k)
{
    mm(k, ws->a, ws->a, ws->a2);
    mm(k, ws->a2, ws->a2, ws->a4);
    mm(k, ws->a4, ws->a2, ws->a6);
}

/* Two doubles per step (SSE2 on x86-64): elementwise IEEE operations, so the result is that
 * of the scalar loop. */
typedef double v2d __attribute__((vector_size(2 * sizeof(double))));

/* V = Σ_{i=0..n} b_{2i} A^{2i} and S = Σ_{i=0..n} b_{2i+1} A^{2i} (A^0 = I, pw[i−1] = A^{2i})
 * in one pass over the entries. */
static void pade_sums(size_t k, int n, const double *const *pw, const double *b, double *v,
                      double *su)
{
    size_t kk = k * k, x = 0;

    for (; x + 2 <= kk; x += 2) {
        v2d sv = {0.0, 0.0}, sa = {0.0, 0.0}, p;
        for (int i = 0; i < n; i++) {
            memcpy(&p, pw[i] + x, sizeof(p));
            sv += b[2 * i + 2] * p;
            sa += b[2 * i + 3] * p;
        }
        memcpy(v + x, &sv, sizeof(sv));
        memcpy(su + x, &sa, sizeof(sa));
    }
    for (; x < kk; x++) {
        double sv = 0.0, sa = 0.0;
        for (int i = 0; i < n; i++) {
            sv += b[2 * i + 2] * pw[i][x];
            sa += b[2 * i + 3] * pw[i][x];
        }
        v[x] = sv;
        su[x] = sa;
    }
    add_identity(k, v, b[0]);
    add_identity(k, su, b[1]);
}

/* U and V of r_m for m ≤ 9 from A, A2, A4, A6 (and A8 = A4² for m = 9, built in e):
 * V = Σ b_{2i} A^{2i}, U = A·Σ b_{2i+1} A^{2i}. */
static void pade_low(struct lrn_acyclic_ws *ws, int k, int m, const double *b)
{
    const double *pw[4] = {ws->a2, ws->a4, ws->a6, ws->e};

    if (m >= 9)
        mm(k, ws->a4, ws->a4, ws->e);
    pade_sums((size_t)k, (m - 1) / 2, pw, b, ws->v, ws->t); /* t: the odd sum */
    mm(k, ws->a, ws->t, ws->u);
}

/* Degree 13 (Higham 2005, eq. 2.13 / Algorithm 2.3 step 10) from A, A2, A4, A6. */
static void pade13(struct lrn_acyclic_ws *ws, int k)
{
    size_t kk = (size_t)k * (size_t)k;
    const double *b = b13;
    double *w = ws->e; /* scratch */

    /* U = A [A6 (b13 A6 + b11 A4 + b9 A2) + b7 A6 + b5 A4 + b3 A2 + b1 I] */
    for (size_t x = 0; x < kk; x++)
        w[x] = b[13] * ws->a6[x] + b[11] * ws->a4[x] + b[9] * ws->a2[x];
    mm(k, ws->a6, w, ws->t);
    for (size_t x = 0; x < kk; x++)
        ws->t[x] += b[7] * ws->a6[x] + b[5] * ws->a4[x] + b[3] * ws->a2[x];
    add_identity((size_t)k, ws->t, b[1]);
    mm(k, ws->a, ws->t, ws->u);
    /* V = A6 (b12 A6 + b10 A4 + b8 A2) + b6 A6 + b4 A4 + b2 A2 + b0 I */
    for (size_t x = 0; x < kk; x++)
        w[x] = b[12] * ws->a6[x] + b[10] * ws->a4[x] + b[8] * ws->a2[x];
    mm(k, ws->a6, w, ws->v);
    for (size_t x = 0; x < kk; x++)
        ws->v[x] += b[6] * ws->a6[x] + b[4] * ws->a4[x] + b[2] * ws->a2[x];
    add_identity((size_t)k, ws->v, b[0]);
}

/* ---- choice of m and s (Al-Mohy & Higham 2009, Algorithm 5.1) ---- */

static double dmax(double a, double b)
{
    return a > b ? a : b;
}

/* Norms of powers of the k×k matrix A in ws->a: n[p] = ‖A^p‖₁ for p = 4, 6, 8, 10. Exact for
 * A ≥ 0 (every call from h(W)): ‖A^p‖₁ = max_j (1ᵀA^p)_j, with 1ᵀA^8 = (1ᵀA4)·A4 and
 * 1ᵀA^10 = (1ᵀA4)·A6 (vector–matrix products, no further matrix product); for other A the
 * submultiplicative bounds ‖A4‖², ‖A4‖‖A6‖ (an upper bound only makes the choice more
 * conservative: a higher degree or more squarings). */
struct pnorms {
    double n1, n4, n6, n8, n10;
    int nonneg;
};

static void pnorms_get(struct lrn_acyclic_ws *ws, size_t k, double nrm, int nonneg,
                       struct pnorms *pn)
{
    double *c4 = ws->vec, n8 = 0.0, n10 = 0.0;

    pn->n1 = nrm;
    pn->nonneg = nonneg;
    pn->n4 = 0.0;
    for (size_t j = 0; j < k; j++) {
        double c = 0.0;
        for (size_t i = 0; i < k; i++)
            c += fabs(ws->a4[j * k + i]);
        c4[j] = c;
        pn->n4 = dmax(pn->n4, c);
    }
    pn->n6 = norm1(k, ws->a6);
    pn->n8 = pn->n4 * pn->n4;
    pn->n10 = pn->n4 * pn->n6;
    if (!nonneg)
        return;
    for (size_t j = 0; j < k; j++) {
        double s8 = 0.0, s10 = 0.0;
        for (size_t i = 0; i < k; i++) {
            s8 += c4[i] * ws->a4[j * k + i];
            s10 += c4[i] * ws->a6[j * k + i];
        }
        n8 = dmax(n8, s8);
        n10 = dmax(n10, s10);
    }
    pn->n8 = n8;
    pn->n10 = n10;
}

/* log2 of an upper bound on ‖|A|^(2m+1)‖₁ for degree index i: for A ≥ 0 (|A| = A) a product
 * of the norms above (2m + 1 = 7 = 6+1, 11 = 10+1, 15 = 8+6+1, 19 = 10+8+1, 27 = 10+10+6+1);
 * otherwise ‖A‖₁^(2m+1). */
static double pow_bound_log2(const struct pnorms *pn, int i)
{
    double l1 = log2(pn->n1), l6 = log2(pn->n6), l8 = log2(pn->n8), l10 = log2(pn->n10);

    if (!pn->nonneg)
        return (2.0 * degree[i] + 1.0) * l1;
    switch (i) {
    case 0:
        return l6 + l1;
    case 1:
        return l10 + l1;
    case 2:
        return l8 + l6 + l1;
    case 3:
        return l10 + l8 + l1;
    default:
        return 2.0 * l10 + l6 + l1;
    }
}

/* ℓ_m = max(⌈log2(α/u)/(2m)⌉, 0), α = |c_{2m+1}|·‖|A|^(2m+1)‖₁/‖A‖₁ (eq. 5.2), from
 * lp = log2 ‖|A|^(2m+1)‖₁ (a bound: ℓ can only come out larger) and l1 = log2 ‖A‖₁;
 * u = 2^-53. The extra squarings keep the rounding error of r_m's evaluation near u. */
static int ell(double lp, double l1, int i)
{
    double v;

    if (isinf(lp) && lp < 0.0)
        return 0;
    v = ceil((lp - l1 - log2(cinv[i]) + 53.0) / (2.0 * degree[i]));
    if (isnan(v))
        return 2000;
    return v > 0.0 ? (int)fmin(v, 2000.0) : 0;
}

/* Degree index (into degree[]) and scaling s for the k×k matrix in ws->a with A2, A4, A6
 * computed, or −1 when a norm of a power is not finite (the caller then scales first). */
static int choose(struct lrn_acyclic_ws *ws, size_t k, double nrm, int nonneg, int *s)
{
    struct pnorms pn;
    double d4, d6, d8, d10, eta, l1 = log2(nrm);

    pnorms_get(ws, k, nrm, nonneg, &pn);
    d4 = pow(pn.n4, 0.25);
    d6 = pow(pn.n6, 1.0 / 6.0);
    d8 = pow(pn.n8, 0.125);
    d10 = pow(pn.n10, 0.1);
    if (!isfinite(d4) || !isfinite(d6) || !isfinite(d8) || !isfinite(d10))
        return -1;
    *s = 0;
    for (int i = 0; i < 4; i++) {
        eta = i < 2 ? dmax(d4, d6) : dmax(d6, d8);
        if (eta <= theta[i] && ell(pow_bound_log2(&pn, i), l1, i) == 0)
            return i;
    }
    eta = dmax(d8, d10);
    eta = dmax(d6, d8) < eta ? dmax(d6, d8) : eta;
    *s = eta > THETA13_2009 ? (int)ceil(log2(eta / THETA13_2009)) : 0;
    *s += ell(pow_bound_log2(&pn, 4) - 27.0 * *s, l1 - *s, 4);
    return 4;
}

/* Scale A, A2, A4, A6 by 2^-s, 2^-2s, 2^-4s, 2^-6s (exact: powers of two). */
static void scale_powers(struct lrn_acyclic_ws *ws, size_t kk, int s)
{
    for (size_t x = 0; x < kk; x++) {
        ws->a[x] = ldexp(ws->a[x], -s);
        ws->a2[x] = ldexp(ws->a2[x], -2 * s);
        ws->a4[x] = ldexp(ws->a4[x], -4 * s);
        ws->a6[x] = ldexp(ws->a6[x], -6 * s);
    }
}

/* Degree index and s, A scaled by 2^-s, and A2, A4, A6 of the scaled A. When the powers of
 * the unscaled A overflow, Higham 2005 (Algorithm 2.3): s from ‖A‖₁ against θ13. */
static core_err prepare(struct lrn_acyclic_ws *ws, size_t k, double nrm, int nonneg, int *ideg,
                        int *s)
{
    size_t kk = k * k;

    powers(ws, (int)k);
    *ideg = choose(ws, k, nrm, nonneg, s);
    if (*ideg >= 0) {
        if (*s > 1000)
            return CORE_ENUMERIC;
        if (*s > 0)
            scale_powers(ws, kk, *s);
        return CORE_OK;
    }
    *ideg = 4;
    *s = nrm > theta[4] ? (int)ceil(log2(nrm / theta[4])) : 0;
    if (*s > 1000)
        return CORE_ENUMERIC;
    for (size_t x = 0; x < kk; x++)
        ws->a[x] = ldexp(ws->a[x], -*s);
    powers(ws, (int)k);
    return CORE_OK;
}

/* exp of the k×k column-major matrix in ws->a (overwritten) into E (ld k); nonneg: every
 * entry of A is ≥ 0 (then the norms of its powers are exact). */
static core_err expm_block(struct lrn_acyclic_ws *ws, size_t k, double *E, int nonneg)
{
    static const double *const bs[4] = {b3, b5, b7, b9};
    size_t kk = k * k;
    double nrm = norm1(k, ws->a);
    int s = 0, i = 4, ik = (int)k;
    lapack_int info;
    core_err rc;

    if (!isfinite(nrm))
        return CORE_EINVAL;
    rc = prepare(ws, k, nrm, nonneg, &i, &s);
    if (rc != CORE_OK)
        return rc;
    if (i == 4)
        pade13(ws, ik);
    else
        pade_low(ws, ik, degree[i], bs[i]);
    /* Solve (V − U) X = (V + U); X goes to E. */
    for (size_t x = 0; x < kk; x++) {
        double u = ws->u[x], v = ws->v[x];
        ws->t[x] = v - u;
        E[x] = v + u;
    }
    info = LAPACKE_dgesv_work(LAPACK_COL_MAJOR, ik, ik, ws->t, ik, ws->ipiv, E, ik);
    if (info != 0)
        return CORE_ENUMERIC;
    for (int q = 0; q < s; q++) {
        mm(ik, E, E, ws->t);
        memcpy(E, ws->t, kk * sizeof(double));
    }
    for (size_t x = 0; x < kk; x++)
        if (!isfinite(E[x]))
            return CORE_ENUMERIC;
    return CORE_OK;
}

core_err lrn_expm(struct lrn_acyclic_ws *ws, const double *A, double *E)
{
    size_t d2 = ws->d * ws->d;
    int nonneg = 1;

    if (ws->d > INT_MAX)
        return CORE_ETOOBIG;
    for (size_t x = 0; x < d2; x++) {
        if (!isfinite(A[x]))
            return CORE_EINVAL;
    }
    memcpy(ws->a, A, d2 * sizeof(double));
    for (size_t x = 0; x < d2; x++)
        nonneg &= A[x] >= 0.0;
    return expm_block(ws, ws->d, E, nonneg);
}

/* ---- strongly connected components (Tarjan, iterative, dense adjacency) ---- */

#define UNSEEN ((size_t)-1)

static void tarjan_visit(struct lrn_acyclic_ws *ws, const double *W, size_t root, size_t *next,
                         size_t *ncomp, size_t *sp)
{
    size_t d = ws->d, cp = 0;

    ws->call[cp++] = root;
    ws->idx[root] = ws->low[root] = (*next)++;
    ws->stk[(*sp)++] = root;
    ws->onst[root] = 1;
    ws->it[root] = 0;
    while (cp > 0) {
        size_t v = ws->call[cp - 1], j;
        int descended = 0;
        for (j = ws->it[v]; j < d; j++) {
            if (j == v || W[v * d + j] == 0.0)
                continue;
            if (ws->idx[j] == UNSEEN) {
                ws->it[v] = j + 1;
                ws->idx[j] = ws->low[j] = (*next)++;
                ws->stk[(*sp)++] = j;
                ws->onst[j] = 1;
                ws->it[j] = 0;
                ws->call[cp++] = j;
                descended = 1;
                break;
            }
            if (ws->onst[j] && ws->idx[j] < ws->low[v])
                ws->low[v] = ws->idx[j];
        }
        if (descended)
            continue;
        ws->it[v] = d;
        if (ws->low[v] == ws->idx[v]) {
            size_t w;
            do {
                w = ws->stk[--(*sp)];
                ws->onst[w] = 0;
                ws->comp[w] = *ncomp;
            } while (w != v);
            (*ncomp)++;
        }
        cp--;
        if (cp > 0) {
            size_t u = ws->call[cp - 1];
            if (ws->low[v] < ws->low[u])
                ws->low[u] = ws->low[v];
        }
    }
}

/* Fill comp[], and order[] grouped by component with start[c]..start[c+1]. */
static size_t scc(struct lrn_acyclic_ws *ws, const double *W)
{
    size_t d = ws->d, next = 0, ncomp = 0, sp = 0;

    for (size_t v = 0; v < d; v++) {
        ws->idx[v] = UNSEEN;
        ws->onst[v] = 0;
    }
    for (size_t v = 0; v < d; v++)
        if (ws->idx[v] == UNSEEN)
            tarjan_visit(ws, W, v, &next, &ncomp, &sp);
    memset(ws->start, 0, (ncomp + 1) * sizeof(size_t));
    for (size_t v = 0; v < d; v++)
        ws->start[ws->comp[v] + 1]++;
    for (size_t c = 0; c < ncomp; c++)
        ws->start[c + 1] += ws->start[c];
    for (size_t c = 0; c <= ncomp; c++)
        ws->low[c] = ws->start[c]; /* low reused as fill cursor */
    for (size_t v = 0; v < d; v++)
        ws->order[ws->low[ws->comp[v]]++] = v;
    return ncomp;
}

/* h and gradient contribution of one component with members m[0..k). */
static core_err h_block(struct lrn_acyclic_ws *ws, const double *W, const size_t *m, size_t k,
                        double *h, double *grad)
{
    size_t d = ws->d;
    double tr = 0.0;
    core_err rc;

    if (k == 1) {
        double w = W[m[0] * d + m[0]];
        if (w == 0.0)
            return CORE_OK; /* exp(0) − 1 = 0, gradient 0 */
        double e = exp(w * w);
        *h += expm1(w * w);
        if (grad)
            grad[m[0] * d + m[0]] = e * 2.0 * w;
        return isfinite(e) ? CORE_OK : CORE_ENUMERIC;
    }
    /* Row-major sub-block A_C[a][b] = W[m_a][m_b]²; see the layout note at the top. */
    for (size_t a = 0; a < k; a++)
        for (size_t b = 0; b < k; b++) {
            double w = W[m[a] * d + m[b]];
            ws->a[a * k + b] = w * w;
        }
    rc = expm_block(ws, k, ws->eb, 1); /* eb = exp(A_C), row-major k×k; A_C ≥ 0 */
    if (rc != CORE_OK)
        return rc;
    for (size_t a = 0; a < k; a++)
        tr += ws->eb[a * k + a];
    *h += tr - (double)k;
    if (grad) {
        /* (∇h)_ij = exp(A)_ji · 2 W_ij */
        for (size_t a = 0; a < k; a++)
            for (size_t b = 0; b < k; b++)
                grad[m[a] * d + m[b]] = ws->eb[b * k + a] * 2.0 * W[m[a] * d + m[b]];
    }
    return CORE_OK;
}

core_err lrn_acyclic_h(struct lrn_acyclic_ws *ws, const double *W, double *h, double *grad)
{
    size_t d = ws->d, d2 = d * d, ncomp;
    double acc = 0.0;
    core_err rc = CORE_OK;

    if (d > INT_MAX)
        return CORE_ETOOBIG;
    for (size_t x = 0; x < d2; x++)
        if (!isfinite(W[x]))
            return CORE_EINVAL;
    if (grad)
        memset(grad, 0, d2 * sizeof(double));
    ncomp = scc(ws, W);
    for (size_t c = 0; c < ncomp && rc == CORE_OK; c++)
        rc = h_block(ws, W, ws->order + ws->start[c], ws->start[c + 1] - ws->start[c], &acc, grad);
    if (rc != CORE_OK)
        return rc;
    if (!isfinite(acc))
        return CORE_ENUMERIC;
    *h = acc;
    return CORE_OK;
}

/* ---- DAG test and pruning ---- */

int lrn_graph_is_dag(size_t d, const double *W, size_t *work)
{
    size_t *indeg = work, *queue = work + d, head = 0, tail = 0, seen = 0;

    for (size_t j = 0; j < d; j++)
        indeg[j] = 0;
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < d; j++)
            if (i != j && W[i * d + j] != 0.0)
                indeg[j]++;
    for (size_t j = 0; j < d; j++)
        if (indeg[j] == 0)
            queue[tail++] = j;
    while (head < tail) {
        size_t i = queue[head++];
        seen++;
        for (size_t j = 0; j < d; j++)
            if (i != j && W[i * d + j] != 0.0 && --indeg[j] == 0)
                queue[tail++] = j;
    }
    return seen == d;
}

struct wedge {
    double a; /* |w| */
    size_t idx;
};

size_t lrn_dag_prune_work_len(size_t d)
{
    return 2 * d * sizeof(size_t) + d * d * sizeof(struct wedge);
}

static int cmp_wedge(const void *x, const void *y)
{
    const struct wedge *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return (p->idx > q->idx) - (p->idx < q->idx);
}

/* notears-admm post-processing (DESIGN §6): threshold, then drop weakest edges while
 * cyclic. The cycle check after each removal is O(d²); graphs here have few edges left
 * after thresholding, and removal stops at the first acyclic graph. */
core_err lrn_dag_prune(size_t d, double *W, double thr, void *work, size_t *dropped)
{
    size_t *kahn = work, ne = 0, k = 0, nd = 0;
    struct wedge *edges = (struct wedge *)(kahn + 2 * d);

    if (!(thr >= 0.0) || !isfinite(thr))
        return CORE_EINVAL;
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < d; j++) {
            double *w = &W[i * d + j];
            if (i == j || !(fabs(*w) >= thr) || *w == 0.0) {
                *w = 0.0;
            } else {
                edges[ne].a = fabs(*w);
                edges[ne++].idx = i * d + j;
            }
        }
    qsort(edges, ne, sizeof(*edges), cmp_wedge);
    while (!lrn_graph_is_dag(d, W, kahn) && k < ne) {
        W[edges[k++].idx] = 0.0;
        nd++;
    }
    if (dropped)
        *dropped = nd;
    return CORE_OK;
}
