/* mech.c - one mechanism's release plan (gc-dp Algorithms 2-4, Table 4, Table 11) built from
 * the release stage's pure functions (rel_policy_counts, rel_coord_bound, rel_scale_compute,
 * rel_alloc / rel_alloc_uniform, rel_release_check), and the privatized release of a window
 * matrix through the core samplers. The Gau-DP calibration mirrors release/src/svc/plan.c
 * (analytic Gaussian on z_k = y_k / s_k, whose l2 sensitivity is <= sqrt(d')). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cal/graph.h"
#include "core/mem.h"
#include "eval/eval.h"
#include "rel/alloc.h"

static const struct {
    const char *name, *key, *rel;
} mtab[EVAL_M_N_] = {
    {"NonPrivate", "nonprivate", NULL},
    {"Lap-DP", "lap", "lap"},
    {"Gau-DP", "gauss", "gauss"},
    {"Ada-DP", "ada", "ada"},
    {"Risk-DP", "risk", "risk"},
    {"GC-DP", "gcdp", "gcdp"},
    {"w/o Lag", "gcdp-nolag", "gcdp-nolag"},
    {"w/o Comp.", "gcdp-nocomp", "gcdp-nocomp"},
    {"w/o Utility", "gcdp-noutility", "gcdp-noutility"},
    {"w/o Risk", "gcdp-norisk", "gcdp-norisk"},
};

const char *eval_mech_name(enum eval_mech m)
{
    return (unsigned)m < EVAL_M_N_ ? mtab[m].name : "?";
}

const char *eval_mech_key(enum eval_mech m)
{
    return (unsigned)m < EVAL_M_N_ ? mtab[m].key : "?";
}

const struct rel_mech *eval_mech_rel(enum eval_mech m)
{
    return (unsigned)m < EVAL_M_N_ && mtab[m].rel ? rel_mech_find(mtab[m].rel) : NULL;
}

/* Algorithm 1 steps 5-8 with step 8 read either as min-max (Sec. 4.1, θ's stored value) or
 * as r / max r. */
void eval_exposure(const struct cal_theta *t, enum eval_expo expo, double *out)
{
    size_t m = t->n_nodes;
    double deg[EVAL_MAX_NODES] = {0}, r[EVAL_MAX_NODES] = {0}, mx = 0.0;

    if (expo == EVAL_EXPO_MINMAX || m > EVAL_MAX_NODES) {
        memcpy(out, t->exposure, m * sizeof(double));
        return;
    }
    for (size_t e = 0; e < t->n_edges; e++) { /* step 6: d_m = Σ_j w_mj */
        deg[t->edges[e].i] += t->edges[e].w;
        deg[t->edges[e].j] += t->edges[e].w;
    }
    for (size_t i = 0; i < m; i++)
        r[i] = t->alpha * deg[i];
    for (size_t e = 0; e < t->n_edges; e++) { /* step 7: + (1-α) Σ_j W~_mj d_j */
        double wt = cal_wtilde(deg, &t->edges[e]);
        r[t->edges[e].i] += (1.0 - t->alpha) * wt * deg[t->edges[e].j];
        r[t->edges[e].j] += (1.0 - t->alpha) * wt * deg[t->edges[e].i];
    }
    for (size_t i = 0; i < m; i++)
        mx = r[i] > mx ? r[i] : mx;
    for (size_t i = 0; i < m; i++) /* step 8: "normalize into [0,1]" as r / max r */
        out[i] = mx > 0.0 ? fmin(1.0, r[i] / mx) : 0.0;
}

/* Algorithm 2 step 2: G0 = component occurrence only (hops 0, time radius 0), one count per
 * node; the coordinate is the node's window mean (stat mean, coef 1). Certified B_k into p->B. */
static core_err plan_bounds(struct eval_plan *p, enum rel_stat stat,
                            const struct rel_query_params *qp, char *eb, size_t ebn)
{
    uint32_t counts[1], work[2];
    core_err rc;

    if ((rc = rel_policy_counts(1, NULL, 0, 0, 0, 1, counts, work)) != CORE_OK)
        return rc;
    for (size_t k = 0; k < p->d; k++) {
        struct rel_term term = {0, stat, 1.0};
        double lo, hi;
        int analytic;
        if ((rc = rel_coord_bound(1, counts, 1, &term, qp, &lo, &hi, &p->B[k], &analytic)) !=
            CORE_OK) {
            snprintf(eb, ebn, "eval: no certified bound (query parameters)");
            return rc;
        }
    }
    return CORE_OK;
}

/* Algorithm 3 (or the uniform split) of eps_rel over the coordinates into p->eps. */
static core_err plan_alloc(const struct rel_mech *rm, const struct cal_theta *theta,
                           enum eval_expo expo, struct eval_plan *p)
{
    struct rel_alloc_params ap = {REL_BETA_R_DEFAULT, REL_BETA_G_DEFAULT, REL_BETA_U_DEFAULT,
                                  REL_ETA_DEFAULT, 0.0};
    double r[EVAL_MAX_NODES];

    if (rm->uniform)
        return rel_alloc_uniform(p->d, p->eps_rel, p->s, p->eps);
    if (rm->zero_beta_r)
        ap.beta_r = 0.0;
    if (rm->zero_beta_u)
        ap.beta_u = 0.0;
    eval_exposure(theta, expo, r); /* identity map: r̄_k^(q) = r̄_k */
    return rel_alloc(p->d, p->eps_rel, r, p->s, theta->mu, &ap, p->eps, NULL);
}

/* Analytic Gaussian parameters over the dn coordinates with s_k > 0. */
static core_err plan_gauss(struct eval_plan *p, size_t dn, char *eb, size_t ebn)
{
    double zb = 0.0;
    core_err rc;

    for (size_t k = 0; k < p->d; k++)
        if (p->s[k] > 0.0)
            zb = fmax(zb, 1.0 / p->s[k]);
    rc = core_dp_gauss_params_agm(p->eps_rel, p->delta, sqrt((double)dn), dn, zb > 0 ? zb : 1.0,
                                  &p->gauss);
    if (rc != CORE_OK)
        snprintf(eb, ebn, "eval: analytic Gaussian refused eps %g delta %g", p->eps_rel, p->delta);
    return rc;
}

core_err eval_plan_make(enum eval_mech mech, const struct cal_theta *theta, size_t d,
                        enum rel_stat stat, const struct rel_query_params *qp, double eps_rel,
                        double delta, enum eval_expo expo, struct eval_plan *p, char *eb,
                        size_t ebn)
{
    const struct rel_mech *rm = eval_mech_rel(mech);
    size_t bad = 0, dn = 0;
    enum rel_refusal why = REL_REFUSE_NONE;
    core_err rc;

    memset(p, 0, sizeof(*p));
    p->mech = mech;
    p->d = d;
    p->eps_rel = eps_rel;
    p->delta = delta;
    p->bound = 1.0;
    if (d == 0 || d > EVAL_MAX_NODES) {
        snprintf(eb, ebn, "eval: %zu nodes (1..%d supported)", d, EVAL_MAX_NODES);
        return CORE_EINVAL;
    }
    if (mech == EVAL_M_NONPRIVATE)
        return CORE_OK;
    if (!rm || (!rm->uniform && !theta) || (theta && theta->d != d)) {
        snprintf(eb, ebn, "eval: mechanism %s needs a theta with d = %zu", eval_mech_key(mech), d);
        return CORE_EINVAL;
    }
    if ((rc = plan_bounds(p, stat, qp, eb, ebn)) != CORE_OK)
        return rc;
    /* Algorithm 2 step 5 */
    if ((rc = rel_scale_compute(d, p->B, rm->use_xi ? theta->xi_hat : NULL, p->s)) != CORE_OK) {
        snprintf(eb, ebn, "eval: xi_hat negative or not finite");
        return rc;
    }
    for (size_t k = 0; k < d; k++)
        dn += p->s[k] > 0.0;
    if ((rc = plan_alloc(rm, theta, expo, p)) != CORE_OK) {
        snprintf(eb, ebn, "eval: allocation refused (Algorithm 3) for %s at eps %g",
                 eval_mech_key(mech), eps_rel);
        return rc;
    }
    /* Algorithm 4 step 1 */
    if ((rc = rel_release_check(d, p->B, p->B, p->s, p->eps, eps_rel, &bad, &why)) != CORE_OK) {
        snprintf(eb, ebn, "eval: release refused (Algorithm 4) coordinate %zu: %s", bad,
                 rel_refusal_str(why));
        return rc;
    }
    return rm->gaussian ? plan_gauss(p, dn, eb, ebn) : CORE_OK;
}

core_err eval_release_rows(const struct eval_plan *p, const struct core_rng *rng, size_t n,
                           const double *x, double *out)
{
    const struct rel_mech *rm = eval_mech_rel(p->mech);
    size_t d = p->d;
    double z[EVAL_MAX_NODES];
    core_err rc = CORE_OK;

    if (!rm) {
        memmove(out, x, n * d * sizeof(double));
        return CORE_OK;
    }
    for (size_t t = 0; t < n && rc == CORE_OK; t++) {
        const double *xr = x + t * d;
        double *yr = out + t * d;
        if (rm->gaussian) {
            for (size_t k = 0; k < d; k++)
                z[k] = p->s[k] > 0.0 ? xr[k] / p->s[k] : 0.0;
            rc = core_dp_gauss_release(rng, &p->gauss, d, z, z);
            for (size_t k = 0; k < d; k++)
                yr[k] = p->s[k] > 0.0 ? p->s[k] * z[k] : xr[k];
        } else {
            /* Algorithm 4 steps 3-4: y_k + Laplace(s_k / ε_k) */
            rc = core_dp_lap_release_coords(rng, d, xr, p->s, p->eps, p->bound, yr);
        }
    }
    return rc;
}

/* gather rows idx of x (ld d) into a contiguous matrix */
static double *gather(const double *x, size_t d, const size_t *idx, size_t k)
{
    double *o = core_xmalloc((k ? k : 1) * d * sizeof(double));
    for (size_t i = 0; i < k; i++)
        memcpy(o + i * d, x + idx[i] * d, d * sizeof(double));
    return o;
}

static int *gather_int(const int *v, const size_t *idx, size_t k)
{
    int *o = core_xmalloc((k ? k : 1) * sizeof(int));
    for (size_t i = 0; i < k; i++)
        o[i] = v[idx[i]];
    return o;
}

core_err eval_score(const struct eval_data *ds, const double *xr, const size_t *tr, size_t ntr,
                    const size_t *te, size_t nte, struct eval_scores *out)
{
    size_t d = ds->d;
    double *xtr = gather(xr, d, tr, ntr), *xte = gather(xr, d, te, nte);
    int *ytr = gather_int(ds->y, tr, ntr), *yte = gather_int(ds->y, te, nte);
    int *atr = gather_int(ds->attr, tr, ntr), *ate = gather_int(ds->attr, te, nte);
    int *pred = core_xmalloc((nte ? nte : 1) * sizeof(int));
    double *proba = core_xmalloc((nte ? nte : 1) * 2 * sizeof(double));
    double *score = core_xmalloc((nte ? nte : 1) * sizeof(double));
    struct eval_lr m;
    core_err rc;

    out->mae = 0.0; /* normalized MAE of the released coordinates (Sec. 5.1, Intel Lab) */
    for (size_t i = 0; i < nte; i++)
        for (size_t k = 0; k < d; k++)
            out->mae += fabs(xte[i * d + k] - ds->x[te[i] * d + k]);
    out->mae /= (double)(nte ? nte * d : 1);
    rc = eval_lr_fit(ntr, d, xtr, d, ytr, ds->n_classes, &cal_lr_default, &m);
    if (rc == CORE_OK) {
        eval_lr_predict(&m, nte, xte, d, pred);
        out->task_f1 = ds->positive_f1 ? eval_f1_class(nte, yte, pred, 1)
                                       : cal_macro_f1(nte, yte, pred, ds->n_classes);
        eval_lr_free(&m);
        rc = eval_lr_fit(ntr, d, xtr, d, atr, 2, &cal_lr_default, &m);
    }
    if (rc == CORE_OK) { /* the fixed attacker: same model on the protected attribute */
        eval_lr_proba(&m, nte, xte, d, proba);
        for (size_t t = 0; t < nte; t++) {
            score[t] = proba[2 * t + 1];
            pred[t] = proba[2 * t + 1] > proba[2 * t] ? 1 : 0;
        }
        out->attack_auc_raw = eval_auc(nte, score, ate);
        out->attack_auc = eval_auc_oriented(out->attack_auc_raw);
        out->attack_f1 = eval_f1_class(nte, ate, pred, 1);
        eval_lr_free(&m);
    }
    free(xtr);
    free(xte);
    free(ytr);
    free(yte);
    free(atr);
    free(ate);
    free(pred);
    free(proba);
    free(score);
    return rc;
}
