/* acyclic.c - exp(A) by Padé scaling-and-squaring, h(W) = tr(exp(W∘W)) − d, ∇h.
 *
 * Layout trick: the public matrices are row-major; BLAS/LAPACK below run column-major on
 * the same memory, i.e. on Aᵀ. Since r(Aᵀ) = r(A)ᵀ for every rational function r with
 * commuting numerator and denominator (as the Padé approximant is), computing exp of the
 * column-major view yields exp(A)ᵀ column-major = exp(A) row-major. No transposes needed.
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
    ws->a = core_xcalloc(9 * d2, sizeof(double));
    ws->a2 = ws->a + d2;
    ws->a4 = ws->a2 + d2;
    ws->a6 = ws->a4 + d2;
    ws->u = ws->a6 + d2;
    ws->v = ws->u + d2;
    ws->t = ws->v + d2;
    ws->e = ws->t + d2;
    ws->eb = ws->e + d2;
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
 * exponential revisited", Table 2.3 θ_m and the coefficients b_j of r_m) ---- */

static const double theta[5] = {1.495585217958292e-2, 2.539398330063230e-1, 9.504178996162932e-1,
                                2.097847961257068e0, 5.371920351148152e0};
static const int degree[5] = {3, 5, 7, 9, 13};

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

/* U and V of r_m for m ≤ 9: V = Σ b_{2i} A^{2i}, U = A·Σ b_{2i+1} A^{2i}. Powers A^2..A^8 are
 * built in a2/a4/a6/t as needed. */
static void pade_low(struct lrn_acyclic_ws *ws, int k, int m, const double *b)
{
    size_t kk = (size_t)k * (size_t)k;
    const double *pw[5];
    double *usum = ws->t + 0; /* reuse t as the odd sum before the final product */
    double *a8 = ws->e;       /* e is free until the end */

    mm(k, ws->a, ws->a, ws->a2);
    pw[0] = NULL;
    pw[1] = ws->a2;
    if (m >= 5)
        mm(k, ws->a2, ws->a2, ws->a4);
    pw[2] = ws->a4;
    if (m >= 7)
        mm(k, ws->a4, ws->a2, ws->a6);
    pw[3] = ws->a6;
    if (m >= 9)
        mm(k, ws->a4, ws->a4, a8);
    pw[4] = a8;
    memset(usum, 0, kk * sizeof(double));
    memset(ws->v, 0, kk * sizeof(double));
    add_identity((size_t)k, usum, b[1]);
    add_identity((size_t)k, ws->v, b[0]);
    for (int i = 1; 2 * i <= m; i++) {
        for (size_t x = 0; x < kk; x++) {
            ws->v[x] += b[(size_t)2 * i] * pw[i][x];
            usum[x] += b[(size_t)2 * i + 1] * pw[i][x];
        }
    }
    mm(k, ws->a, usum, ws->u);
}

/* Degree 13 (Higham 2005, eq. 2.13 / Algorithm 2.3 step 10). */
static void pade13(struct lrn_acyclic_ws *ws, int k)
{
    size_t kk = (size_t)k * (size_t)k;
    const double *b = b13;
    double *w = ws->e; /* scratch */

    mm(k, ws->a, ws->a, ws->a2);
    mm(k, ws->a2, ws->a2, ws->a4);
    mm(k, ws->a4, ws->a2, ws->a6);
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

/* exp of the k×k column-major matrix in ws->a (overwritten) into E (ld k).
 * Higham 2005 Algorithm 2.3: smallest m with ‖A‖₁ ≤ θ_m, else scale by 2^-s and m = 13. */
static core_err expm_block(struct lrn_acyclic_ws *ws, size_t k, double *E)
{
    size_t kk = k * k;
    double nrm = norm1(k, ws->a);
    int s = 0, m = 13, ik = (int)k;
    lapack_int info;

    if (!isfinite(nrm))
        return CORE_EINVAL;
    for (int i = 0; i < 4; i++) {
        if (nrm <= theta[i]) {
            m = degree[i];
            break;
        }
    }
    if (m == 13 && nrm > theta[4]) {
        s = (int)ceil(log2(nrm / theta[4]));
        if (s > 1000)
            return CORE_ENUMERIC;
        double f = ldexp(1.0, -s);
        for (size_t x = 0; x < kk; x++)
            ws->a[x] *= f;
    }
    if (m == 13)
        pade13(ws, ik);
    else
        pade_low(ws, ik, m, m == 3 ? b3 : m == 5 ? b5 : m == 7 ? b7 : b9);
    /* Solve (V − U) X = (V + U); X goes to E. */
    for (size_t x = 0; x < kk; x++) {
        double u = ws->u[x], v = ws->v[x];
        ws->t[x] = v - u;
        E[x] = v + u;
    }
    info = LAPACKE_dgesv_work(LAPACK_COL_MAJOR, ik, ik, ws->t, ik, ws->ipiv, E, ik);
    if (info != 0)
        return CORE_ENUMERIC;
    for (int i = 0; i < s; i++) {
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

    if (ws->d > INT_MAX)
        return CORE_ETOOBIG;
    for (size_t x = 0; x < d2; x++) {
        if (!isfinite(A[x]))
            return CORE_EINVAL;
    }
    memcpy(ws->a, A, d2 * sizeof(double));
    return expm_block(ws, ws->d, E);
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
    rc = expm_block(ws, k, ws->eb); /* eb = exp(A_C), row-major k×k */
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
