/* influence.c - graph adjacency, compression sets C_k and empirical influence ξ̂ (gc-dp
 * Sec. 4.3), aggregate-task utility μ (Sec. 4.4). */
#include "cal/influence.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cal/graph.h"

core_err cal_adj_build(size_t m, const struct cal_edge *edges, size_t n_edges, const double *deg,
                       size_t *ptr, uint32_t *nbr, double *wt)
{
    memset(ptr, 0, (m + 1) * sizeof(*ptr));
    for (size_t e = 0; e < n_edges; e++) {
        if (edges[e].i >= m || edges[e].j >= m || edges[e].i == edges[e].j)
            return CORE_EINVAL;
        ptr[edges[e].i + 1]++;
        ptr[edges[e].j + 1]++;
    }
    for (size_t i = 0; i < m; i++)
        ptr[i + 1] += ptr[i];
    /* fill using ptr[i] as a cursor, then shift back */
    for (size_t e = 0; e < n_edges; e++) {
        double w = cal_wtilde(deg, &edges[e]);
        size_t a = ptr[edges[e].i]++, b = ptr[edges[e].j]++;
        nbr[a] = edges[e].j;
        wt[a] = w;
        nbr[b] = edges[e].i;
        wt[b] = w;
    }
    for (size_t i = m; i > 0; i--)
        ptr[i] = ptr[i - 1];
    ptr[0] = 0;
    return CORE_OK;
}

void cal_node_means(size_t n, size_t m, const double *x, size_t ld, double *agg)
{
    memset(agg, 0, m * sizeof(*agg));
    for (size_t t = 0; t < n; t++)
        for (size_t j = 0; j < m; j++)
            agg[j] += x[t * ld + j];
    for (size_t j = 0; j < m; j++)
        agg[j] /= (double)(n ? n : 1);
}

/* ---------------------------------------------------------------- compression C_k */

struct ranked {
    double r;
    uint32_t node;
};

/* Greater exposure first, then smaller node index (the fixed tie break of Sec. 4.3). */
static int ranked_cmp(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    if (x->r != y->r)
        return x->r > y->r ? -1 : 1;
    return (x->node > y->node) - (x->node < y->node);
}

size_t cal_xi_work_len(size_t m)
{
    return m * sizeof(struct ranked) + m * sizeof(uint32_t) + m;
}

core_err cal_compress_set(const struct cal_adj *adj, const double *s, const double *r_bar,
                          double tau_c, const struct cal_coord *c, uint32_t *out, size_t *n_out,
                          void *work)
{
    size_t m = adj->m, nr = 0, nk = 0;
    struct ranked *rk = work;
    unsigned char *seen = (unsigned char *)(rk + m) + m * sizeof(uint32_t);

    *n_out = 0;
    if (!(tau_c >= 0.0 && tau_c <= 1.0))
        return CORE_EINVAL;
    memset(seen, 0, m);
    for (size_t a = 0; a < c->n; a++) {
        uint32_t i = c->nodes[a];
        if (i >= m)
            return CORE_EINVAL;
        for (size_t p = adj->ptr[i]; p < adj->ptr[i + 1]; p++) {
            uint32_t j = adj->nbr[p];
            if (!seen[j]) {
                seen[j] = 1;
                rk[nr++] = (struct ranked){r_bar[j], j};
            }
        }
    }
    qsort(rk, nr, sizeof(*rk), ranked_cmp);
    for (size_t q = 0; q < nr; q++) {
        uint32_t j = rk[q].node;
        int redundant = 0;
        for (size_t u = 0; u < nk && !redundant; u++)
            redundant = s[(size_t)j * m + out[u]] >= tau_c;
        if (!redundant)
            out[nk++] = j;
    }
    *n_out = nk;
    return CORE_OK;
}

/* ---------------------------------------------------------------- ξ̂ */

/* Π_k(q_k) with node a's aggregate replaced by `repl` (when a < m), else unmasked. */
static double coord_value(const struct cal_coord *c, const double *agg, size_t masked, double repl)
{
    double q = 0.0, lo = 0.0, hi = 0.0;
    for (size_t a = 0; a < c->n; a++) {
        double v = c->nodes[a] == masked ? repl : agg[c->nodes[a]];
        q += c->coef[a] * v;
        lo += c->coef[a] < 0.0 ? c->coef[a] : 0.0;
        hi += c->coef[a] > 0.0 ? c->coef[a] : 0.0;
    }
    return q < lo ? lo : (q > hi ? hi : q);
}

/* δ_ik; 0 when i ∉ a(k) (masking i leaves q_k unchanged). */
static double delta_ik(const struct cal_coord *c, const double *agg, uint32_t i, double mask)
{
    int member = 0;
    for (size_t a = 0; a < c->n; a++)
        member = member || c->nodes[a] == i;
    if (!member)
        return 0.0;
    return fabs(coord_value(c, agg, (size_t)-1, 0.0) - coord_value(c, agg, i, mask));
}

/* W~_ij from the CSR (0 when {i, j} is not an edge). */
static double adj_weight(const struct cal_adj *adj, uint32_t i, uint32_t j)
{
    for (size_t p = adj->ptr[i]; p < adj->ptr[i + 1]; p++)
        if (adj->nbr[p] == j)
            return adj->wt[p];
    return 0.0;
}

static core_err check_xi_params(const struct cal_xi_params *p)
{
    if (!(p->gamma >= 0.0) || !isfinite(p->gamma) || !(p->tau_c >= 0.0 && p->tau_c <= 1.0) ||
        !(p->kappa >= 1.0) || !isfinite(p->kappa) || !(p->g_max > 0.0) || !isfinite(p->g_max) ||
        !(p->mask_value >= 0.0 && p->mask_value <= 1.0))
        return CORE_EINVAL;
    return CORE_OK;
}

/* Sec. 4.3, the displayed formula for ξ̂_k. */
core_err cal_xi_hat(size_t d, const struct cal_coord *coords, const double *agg,
                    const struct cal_adj *adj, const double *s, const double *r_bar,
                    const struct cal_xi_params *p, double *xi, void *work)
{
    size_t m = adj->m;
    uint32_t *ck = (uint32_t *)(void *)((struct ranked *)work + m);
    core_err rc = check_xi_params(p);

    if (rc != CORE_OK)
        return rc;
    for (size_t k = 0; k < d; k++) {
        const struct cal_coord *c = &coords[k];
        size_t nck = 0;
        double best = 0.0;
        if ((rc = cal_compress_set(adj, s, r_bar, p->tau_c, c, ck, &nck, work)) != CORE_OK)
            return rc;
        for (size_t a = 0; a < c->n; a++) {
            uint32_t i = c->nodes[a];
            double inner = 0.0, v;
            for (size_t q = 0; q < nck; q++)
                inner += adj_weight(adj, i, ck[q]) * delta_ik(c, agg, ck[q], p->mask_value);
            v = delta_ik(c, agg, i, p->mask_value) + p->gamma * r_bar[i] * inner;
            best = v > best ? v : best;
        }
        best *= p->kappa;
        if (!isfinite(best))
            return CORE_ENUMERIC;
        xi[k] = best < p->g_max ? best : p->g_max;
    }
    return CORE_OK;
}

/* ---------------------------------------------------------------- μ, aggregate task */

core_err cal_mu_aggregate(size_t d, const double *weights, double *mu)
{
    double mx = 0.0;
    for (size_t k = 0; k < d; k++) {
        if (!(weights[k] >= 0.0) || !isfinite(weights[k]))
            return CORE_EINVAL;
        mx = weights[k] > mx ? weights[k] : mx;
    }
    for (size_t k = 0; k < d; k++)
        mu[k] = mx > 0.0 ? weights[k] / mx : 0.0;
    return CORE_OK;
}

/* ---------------------------------------------------------------- τ utility */

core_err cal_tau_utility(size_t n, size_t m, const double *x, size_t ld,
                         const struct cal_edge *edges, size_t n_edges, double mask_value, double *u,
                         double *work)
{
    double *num = work, *den = work + m, err = 0.0;

    if (n == 0 || m == 0 || ld < m || !(mask_value >= 0.0 && mask_value <= 1.0))
        return CORE_EINVAL;
    memset(den, 0, m * sizeof(*den));
    for (size_t e = 0; e < n_edges; e++) {
        if (edges[e].i >= m || edges[e].j >= m)
            return CORE_EINVAL;
        den[edges[e].i] += edges[e].w;
        den[edges[e].j] += edges[e].w;
    }
    for (size_t t = 0; t < n; t++) {
        const double *row = x + t * ld;
        memset(num, 0, m * sizeof(*num));
        for (size_t e = 0; e < n_edges; e++) {
            num[edges[e].i] += edges[e].w * row[edges[e].j];
            num[edges[e].j] += edges[e].w * row[edges[e].i];
        }
        for (size_t j = 0; j < m; j++) {
            double pred = den[j] > 0.0 ? num[j] / den[j] : mask_value;
            err += fabs(row[j] - pred);
        }
    }
    err /= (double)n * (double)m;
    if (!isfinite(err))
        return CORE_ENUMERIC;
    *u = err >= 1.0 ? 0.0 : 1.0 - err;
    return CORE_OK;
}
