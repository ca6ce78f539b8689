/* sem.c - synthetic linear Gaussian SEM (paper Appendix B.1). Pure: no I/O, no malloc. */
#include "lrn/sem.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"

struct lrn_sem_opts lrn_sem_opts_default(void)
{
    struct lrn_sem_opts o = {
        .d = 20,
        .participants = 8,
        .n_per = 5000,
        .expected_edges = 20.0,
        .w_lo = 0.5,
        .w_hi = 2.0,
        .hetero_var = 0.0,
        .noise_sd = 1.0,
        .seed = 1,
    };
    return o;
}

/* Uniform index in [0, n) without modulo bias (Lemire's multiply-shift with rejection). */
static size_t uniform_index(struct core_prng *rng, size_t n)
{
    uint64_t bound = (uint64_t)n, threshold = (0 - bound) % bound, r;
    do {
        r = core_prng_next(rng);
    } while (r < threshold);
    return (size_t)(r % bound);
}

core_err lrn_sem_dag(const struct lrn_sem_opts *o, struct core_prng *rng, double *w)
{
    size_t d = o->d, perm[LRN_SEM_MAX_D];
    double pairs, p;

    /* NaN-safe checks: every comparison is written so NaN fails. */
    if (d < 2 || d > LRN_SEM_MAX_D || !(o->expected_edges >= 0.0) || !(o->w_lo > 0.0) ||
        !(o->w_hi >= o->w_lo) || !(o->w_hi < 1e6))
        return CORE_EINVAL;
    pairs = 0.5 * (double)d * (double)(d - 1);
    p = o->expected_edges / pairs;
    if (!(p <= 1.0))
        return CORE_EINVAL;
    /* Random topological order: Fisher-Yates shuffle of 0..d-1. */
    for (size_t i = 0; i < d; i++)
        perm[i] = i;
    for (size_t i = d - 1; i > 0; i--) {
        size_t j = uniform_index(rng, i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    memset(w, 0, d * d * sizeof(*w));
    /* Pair (a, b), a < b in the order: edge perm[a] -> perm[b] with probability p (G(n,p)).
     * Choice: the paper asks for an *expected* d edges, so this is G(n, p) rather than
     * notears' G(n, m) with exactly m edges; the edge count varies around d. */
    for (size_t a = 0; a < d; a++) {
        for (size_t b = a + 1; b < d; b++) {
            double mag, sign;
            if (!(core_prng_uniform(rng) < p))
                continue;
            mag = o->w_lo + (o->w_hi - o->w_lo) * core_prng_uniform(rng);
            sign = (core_prng_next(rng) >> 63) ? -1.0 : 1.0;
            w[perm[a] * d + perm[b]] = sign * mag;
        }
    }
    return CORE_OK;
}

void lrn_sem_perturb(const double *w, size_t d, double var, struct core_prng *rng, double *w_p)
{
    double sd = var > 0.0 ? sqrt(var) : 0.0;
    for (size_t k = 0; k < d * d; k++)
        w_p[k] = (w[k] != 0.0 && sd > 0.0) ? w[k] + sd * core_prng_normal(rng) : w[k];
}

core_err lrn_sem_topo_order(const double *w, size_t d, size_t *order, size_t *scratch)
{
    size_t *indeg = scratch, *queue = scratch + d, head = 0, tail = 0;

    for (size_t j = 0; j < d; j++) {
        indeg[j] = 0;
        for (size_t i = 0; i < d; i++)
            if (w[i * d + j] != 0.0)
                indeg[j]++;
    }
    for (size_t j = 0; j < d; j++)
        if (indeg[j] == 0)
            queue[tail++] = j;
    while (head < tail) {
        size_t i = queue[head];
        order[head++] = i;
        for (size_t j = 0; j < d; j++)
            if (w[i * d + j] != 0.0 && --indeg[j] == 0)
                queue[tail++] = j;
    }
    return head == d ? CORE_OK : CORE_EINVAL;
}

/* Paper Section 2, eq. (1): X_j = sum_{i in Pa(j)} W_ij X_i + Z_j, evaluated in
 * topological order so every parent is set before its children. Parents are gathered once
 * into a CSR list in scratch so a sample costs O(d + edges), not O(d^2). */
core_err lrn_sem_sample(const double *w, size_t d, size_t n, double noise_sd, struct core_prng *rng,
                        double *x, size_t *scratch)
{
    size_t *order = scratch, *pstart = scratch + d, *pidx = scratch + 2 * d + 1, e = 0;
    core_err rc;

    if (d < 1 || d > LRN_SEM_MAX_D || n < 1 || n > LRN_SEM_MAX_N || !(noise_sd >= 0.0))
        return CORE_EINVAL;
    rc = lrn_sem_topo_order(w, d, order, pidx); /* pidx doubles as Kahn scratch here */
    if (rc != CORE_OK)
        return rc;
    for (size_t j = 0; j < d; j++) {
        pstart[j] = e;
        for (size_t i = 0; i < d; i++)
            if (w[i * d + j] != 0.0)
                pidx[e++] = i;
    }
    pstart[d] = e;
    for (size_t r = 0; r < n; r++) {
        double *row = x + r * d;
        for (size_t k = 0; k < d; k++) {
            size_t j = order[k];
            double v = noise_sd * core_prng_normal(rng);
            for (size_t q = pstart[j]; q < pstart[j + 1]; q++)
                v += w[pidx[q] * d + j] * row[pidx[q]];
            row[j] = v;
        }
    }
    return CORE_OK;
}

void lrn_sem_problem_free(struct lrn_sem_problem *pb)
{
    if (!pb)
        return;
    free(pb->w);
    free(pb->w_p);
    free(pb->x);
    free(pb);
}

core_err lrn_sem_problem_new(const struct lrn_sem_opts *o, struct lrn_sem_problem **out)
{
    struct lrn_sem_problem *pb = NULL;
    struct core_prng rng;
    size_t d = o->d, *scratch = NULL;
    core_err rc;

    *out = NULL;
    if (d < 2 || d > LRN_SEM_MAX_D || o->participants == 0 || o->n_per == 0 ||
        o->n_per > LRN_SEM_MAX_N || o->participants > LRN_SEM_MAX_N || !(o->hetero_var >= 0.0))
        return CORE_EINVAL;
    if (o->participants * o->n_per > LRN_SEM_MAX_CELLS / d)
        return CORE_ETOOBIG;
    core_prng_seed(&rng, o->seed);
    pb = core_xcalloc(1, sizeof(*pb));
    pb->d = d;
    pb->participants = o->participants;
    pb->n_per = o->n_per;
    pb->w = core_xmalloc(d * d * sizeof(double));
    pb->w_p = core_xmalloc(o->participants * d * d * sizeof(double));
    pb->x = core_xmalloc(o->participants * o->n_per * d * sizeof(double));
    scratch = core_xmalloc(LRN_SEM_SCRATCH(d) * sizeof(size_t));
    rc = lrn_sem_dag(o, &rng, pb->w);
    for (size_t p = 0; rc == CORE_OK && p < o->participants; p++) {
        double *wp = pb->w_p + p * d * d;
        lrn_sem_perturb(pb->w, d, o->hetero_var, &rng, wp);
        rc = lrn_sem_sample(wp, d, o->n_per, o->noise_sd, &rng, pb->x + p * o->n_per * d, scratch);
    }
    free(scratch);
    if (rc != CORE_OK) {
        lrn_sem_problem_free(pb);
        return rc;
    }
    *out = pb;
    return CORE_OK;
}
