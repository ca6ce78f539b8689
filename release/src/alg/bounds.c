/* bounds.c - certified bounds B_k and scales s_k (paper Algorithm 2, Proposition 1). */
#include "rel/bounds.h"

#include <math.h>
#include <string.h>

static const char *const stat_names[REL_STAT_N_] = {"mean", "sum", "count", "min", "max", "std"};

core_err rel_stat_parse(const char *name, enum rel_stat *out)
{
    for (int i = 0; i < REL_STAT_N_; i++) {
        if (strcmp(name, stat_names[i]) == 0) {
            *out = (enum rel_stat)i;
            return CORE_OK;
        }
    }
    return CORE_ENOTFOUND;
}

const char *rel_stat_name(enum rel_stat s)
{
    return (unsigned)s < REL_STAT_N_ ? stat_names[s] : "?";
}

core_err rel_query_params_check(const struct rel_query_params *qp)
{
    if (qp->min_samples < 2 || qp->max_samples < qp->min_samples ||
        qp->max_samples > REL_MAX_SAMPLES || qp->interp_gap > REL_MAX_SAMPLES)
        return CORE_EINVAL;
    return CORE_OK;
}

/* reach's step: the unmarked neighbours of v marked and appended to queue at tail; returns
 * the new tail. */
static size_t enqueue_neighbours(uint32_t v, const uint32_t *edges, size_t n_edges, uint32_t *mark,
                                 uint32_t *queue, size_t tail)
{
    for (size_t e = 0; e < n_edges; e++) {
        uint32_t a = edges[2 * e], b = edges[2 * e + 1];
        uint32_t w = a == v ? b : b == v ? a : UINT32_MAX; /* the other end, or none */
        if (w != UINT32_MAX && !mark[w]) {
            mark[w] = 1;
            queue[tail++] = w;
        }
    }
    return tail;
}

/* Breadth-first search from `src` up to `hops` edges over the edge list; marks reached
 * channels in `mark` (n_chan entries, 1 = reached). `queue` holds n_chan entries.
 * O(hops * n_edges) without adjacency lists: fine for the policy graph sizes we allow. */
static void reach(size_t n_chan, const uint32_t *edges, size_t n_edges, uint32_t hops, uint32_t src,
                  uint32_t *mark, uint32_t *queue)
{
    size_t head = 0, tail = 0, level_end;

    memset(mark, 0, n_chan * sizeof(*mark));
    mark[src] = 1;
    queue[tail++] = src;
    for (uint32_t h = 0; h < hops && head < tail; h++) {
        level_end = tail;
        for (; head < level_end; head++)
            tail = enqueue_neighbours(queue[head], edges, n_edges, mark, queue, tail);
    }
}

/* Γ_G0(u) of paper Sec. 3.1, instantiated as (G0 neighbourhood) x (time radius). */
core_err rel_policy_counts(size_t n_chan, const uint32_t *edges, size_t n_edges, uint32_t hops,
                           uint32_t time_radius, uint32_t per_slot, uint32_t *counts,
                           uint32_t *work)
{
    uint32_t per;

    if (n_chan == 0 || n_chan > REL_MAX_CHANNELS || time_radius > 1000000 || per_slot == 0 ||
        per_slot > 1000)
        return CORE_EINVAL;
    for (size_t e = 0; e < 2 * n_edges; e++)
        if (edges[e] >= n_chan)
            return CORE_EINVAL;
    /* one reading holds one value per channel; a slot holds <= per_slot readings */
    per = time_radius == 0 ? 1 : (2 * time_radius + 1) * per_slot;
    for (size_t i = 0; i < n_chan; i++) {
        reach(n_chan, edges, n_edges, hops, (uint32_t)i, work, work + n_chan);
        for (size_t j = 0; j < n_chan; j++)
            counts[i * n_chan + j] = work[j] ? per : 0;
    }
    return CORE_OK;
}

double rel_stat_sensitivity(enum rel_stat s, uint64_t c, const struct rel_query_params *qp)
{
    /* c changed real samples touch at most c(1+2G) points of the completed series. */
    double pts = (double)c * (1.0 + 2.0 * (double)qp->interp_gap);
    double lo, hi;

    if (c == 0)
        return 0.0;
    rel_stat_range(s, qp, &lo, &hi);
    switch (s) {
    case REL_STAT_MEAN: /* Σ changes by <= pts, divided by >= n_min points */
        return fmin(pts / (double)qp->min_samples, hi - lo);
    case REL_STAT_SUM:
        return fmin(pts, hi - lo);
    case REL_STAT_COUNT: /* value replacement never changes which samples exist */
        return 0.0;
    case REL_STAT_STD:
        /* std(x) = ||P x|| / sqrt(m or m-1), P the centering projection (1-Lipschitz in l2);
         * ||x - x'||_2 <= sqrt(pts) for pts coordinates each moving <= 1. */
        return fmin(sqrt(pts / (double)(qp->min_samples - 1)), hi - lo);
    case REL_STAT_MIN:
    case REL_STAT_MAX:
    default: /* one sample can move an extreme across the whole clipped range */
        return hi - lo;
    }
}

double rel_stat_sensitivity_obs(enum rel_stat s, uint64_t c, const struct rel_node_obs *o,
                                const struct rel_query_params *qp)
{
    uint64_t changed = c < o->n_real ? c : o->n_real;
    double pts = (double)changed * (1.0 + 2.0 * (double)o->max_run);

    if (changed == 0)
        return 0.0;
    pts = fmin(pts, (double)o->n_points);
    switch (s) {
    case REL_STAT_MEAN:
        return fmin(pts / (double)o->n_points, 1.0);
    case REL_STAT_SUM:
        return fmin(pts, (double)qp->max_samples);
    case REL_STAT_COUNT:
        return 0.0;
    case REL_STAT_STD:
        return fmin(sqrt(pts / (double)o->n_points), 0.5);
    case REL_STAT_MIN:
    case REL_STAT_MAX:
    default:
        return 1.0;
    }
}

core_err rel_coord_bound_obs(size_t n_chan, const uint32_t *counts, size_t n_terms,
                             const struct rel_term *terms, const struct rel_node_obs *obs,
                             const struct rel_query_params *qp, double *B)
{
    double worst = 0.0;

    if (n_terms == 0 || n_chan == 0 || rel_query_params_check(qp) != CORE_OK)
        return CORE_EINVAL;
    for (size_t t = 0; t < n_terms; t++)
        if (terms[t].chan >= n_chan || !isfinite(terms[t].coef) ||
            (unsigned)terms[t].stat >= REL_STAT_N_ || obs[t].n_points == 0 ||
            obs[t].n_points < obs[t].n_real)
            return CORE_EINVAL;
    for (size_t i = 0; i < n_chan; i++) { /* worst protected occurrence u over channels */
        double sum = 0.0;
        for (size_t t = 0; t < n_terms; t++)
            sum += fabs(terms[t].coef) *
                   rel_stat_sensitivity_obs(terms[t].stat, counts[i * n_chan + terms[t].chan],
                                            &obs[t], qp);
        worst = fmax(worst, sum);
    }
    if (!isfinite(worst))
        return CORE_EINVAL;
    *B = worst > 0.0 ? nextafter(worst, INFINITY) : 0.0;
    return CORE_OK;
}

void rel_stat_range(enum rel_stat s, const struct rel_query_params *qp, double *lo, double *hi)
{
    double n = (double)qp->min_samples;

    *lo = 0.0;
    switch (s) {
    case REL_STAT_SUM:
        *hi = (double)qp->max_samples;
        break;
    case REL_STAT_STD: /* max sample std of m values in [0,1], decreasing in m */
        *hi = sqrt(n / (4.0 * (n - 1.0)));
        break;
    default:
        *hi = 1.0;
        break;
    }
}

/* Algorithm 2 step 2: analytic bound from the query algebra, else the clipped range. */
core_err rel_coord_bound(size_t n_chan, const uint32_t *counts, size_t n_terms,
                         const struct rel_term *terms, const struct rel_query_params *qp,
                         double *lo, double *hi, double *B, int *analytic)
{
    double range_lo = 0.0, range_hi = 0.0, worst = 0.0, range;

    if (n_terms == 0 || n_chan == 0 || rel_query_params_check(qp) != CORE_OK)
        return CORE_EINVAL;
    for (size_t t = 0; t < n_terms; t++) {
        double a = terms[t].coef, slo, shi;
        if (terms[t].chan >= n_chan || !isfinite(a) || (unsigned)terms[t].stat >= REL_STAT_N_)
            return CORE_EINVAL;
        rel_stat_range(terms[t].stat, qp, &slo, &shi);
        range_lo += fmin(a * slo, a * shi);
        range_hi += fmax(a * slo, a * shi);
    }
    for (size_t i = 0; i < n_chan; i++) { /* worst protected occurrence u over channels */
        double sum = 0.0;
        for (size_t t = 0; t < n_terms; t++) {
            uint64_t c = counts[i * n_chan + terms[t].chan];
            sum += fabs(terms[t].coef) * rel_stat_sensitivity(terms[t].stat, c, qp);
        }
        worst = fmax(worst, sum);
    }
    if (!isfinite(range_lo) || !isfinite(range_hi) || !isfinite(worst))
        return CORE_EINVAL;
    /* round the analytic bound up by one ulp: summation order must never shave it */
    worst = worst > 0.0 ? nextafter(worst, INFINITY) : 0.0;
    *lo = range_lo;
    *hi = range_hi;
    range = nextafter(range_hi - range_lo, INFINITY); /* Π_k keeps values in [lo, hi] */
    *B = fmin(worst, range);
    if (analytic)
        *analytic = worst < range;
    return CORE_OK;
}

core_err rel_scale_compute(size_t d, const double *B, const double *xi, double *s)
{
    for (size_t k = 0; k < d; k++) {
        double x = xi ? xi[k] : 0.0;
        if (!(B[k] >= 0.0) || !isfinite(B[k]) || !(x >= 0.0) || !isfinite(x))
            return CORE_EINVAL;
        s[k] = B[k] >= x ? B[k] : x; /* Proposition 1: never below B_k */
    }
    return CORE_OK;
}
