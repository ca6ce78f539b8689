/* mech.c - mechanism table (paper Table 4, Table 11) and Algorithm 4 step 1 checks. */
#include "rel/mech.h"

#include <math.h>
#include <string.h>

/* Choices where the paper is vague (docs/release.md): Table 4 says Ada-DP "omits graph-risk
 * calibration" and Risk-DP "omits graph-compressed expanded influence", so neither uses ξ̂
 * (s_k = B_k); Sec. 4.4 gives their exponents (β_r = 0, β_u = 0). The Table 11 ablations
 * keep s_k = max(B_k, ξ̂_k) ("all variants retain the certified sensitivity floor"). */
static const struct rel_mech mechs[REL_MECH_N_] = {
    {REL_MECH_LAP, "lap", 0, 1, 0, 0, 0, 0, 0, "Lap-DP: certified bounds, uniform budgets"},
    {REL_MECH_GAUSS, "gauss", 1, 1, 0, 0, 0, 0, 0,
     "Gau-DP: analytic Gaussian (eps_rel, delta), l2 certificate sqrt(d') on B-normalized data"},
    {REL_MECH_ADA, "ada", 0, 0, 0, 1, 0, 0, 0, "Ada-DP: Algorithm 3 with beta_r = 0, s = B"},
    {REL_MECH_RISK, "risk", 0, 0, 0, 0, 1, 0, 0, "Risk-DP: Algorithm 3 with beta_u = 0, s = B"},
    {REL_MECH_GCDP, "gcdp", 0, 0, 1, 0, 0, 0, 0, "GC-DP: s = max(B, xi), Algorithm 3"},
    {REL_MECH_GCDP_NOLAG, "gcdp-nolag", 0, 0, 1, 0, 0, 1, 0,
     "Table 11 w/o Lag: GC-DP; theta must be calibrated with L = 0"},
    {REL_MECH_GCDP_NOCOMP, "gcdp-nocomp", 0, 0, 1, 0, 0, 0, 1,
     "Table 11 w/o Comp.: GC-DP; theta must be calibrated with tau_c >= 1"},
    {REL_MECH_GCDP_NOUTILITY, "gcdp-noutility", 0, 0, 1, 0, 1, 0, 0,
     "Table 11 w/o Utility: GC-DP with beta_u = 0"},
    {REL_MECH_GCDP_NORISK, "gcdp-norisk", 0, 0, 1, 1, 0, 0, 0,
     "Table 11 w/o Risk: GC-DP with beta_r = 0"},
};

const struct rel_mech *rel_mech_find(const char *name)
{
    for (int i = 0; i < REL_MECH_N_; i++)
        if (strcmp(mechs[i].name, name) == 0)
            return &mechs[i];
    return NULL;
}

const struct rel_mech *rel_mech_get(enum rel_mech_id id)
{
    return (unsigned)id < REL_MECH_N_ ? &mechs[id] : NULL;
}

const char *rel_refusal_str(enum rel_refusal r)
{
    switch (r) {
    case REL_REFUSE_NONE:
        return "none";
    case REL_REFUSE_EPS_REL:
        return "eps_rel is not a finite positive number";
    case REL_REFUSE_BOUND:
        return "B_k is negative, not finite, or below the certified bound";
    case REL_REFUSE_SCALE:
        return "s_k < B_k (or not finite)";
    case REL_REFUSE_EPS:
        return "eps_k <= 0 (or not finite) on a noisy coordinate";
    case REL_REFUSE_EPS_CONSTANT:
        return "eps_k != 0 on a zero-sensitivity coordinate";
    case REL_REFUSE_NOISE_SCALE:
        return "noise scale s_k/eps_k is not finite";
    case REL_REFUSE_BUDGET:
        return "sum of eps_k exceeds eps_rel";
    }
    return "?";
}

static enum rel_refusal check_one(double B, const double *B_cert, double s, double eps)
{
    if (!(B >= 0.0) || !isfinite(B) || (B_cert && !(B >= *B_cert)))
        return REL_REFUSE_BOUND;
    if (!(s >= B) || !isfinite(s))
        return REL_REFUSE_SCALE;
    if (s > 0.0) {
        if (!(eps > 0.0) || !isfinite(eps))
            return REL_REFUSE_EPS;
        if (!isfinite(s / eps))
            return REL_REFUSE_NOISE_SCALE;
    } else if (!(eps == 0.0)) {
        return REL_REFUSE_EPS_CONSTANT;
    }
    return REL_REFUSE_NONE;
}

/* Algorithm 4 step 1 (and Theorem 1's hypotheses), before any noise is drawn. */
core_err rel_release_check(size_t d, const double *B, const double *B_cert, const double *s,
                           const double *eps, double eps_rel, size_t *bad_k, enum rel_refusal *why)
{
    enum rel_refusal r = REL_REFUSE_NONE;
    size_t k = d;
    double sum = 0.0;

    if (d == 0)
        return CORE_EINVAL;
    if (!(eps_rel > 0.0) || !isfinite(eps_rel)) {
        r = REL_REFUSE_EPS_REL;
        goto out;
    }
    for (k = 0; k < d; k++) {
        r = check_one(B[k], B_cert ? &B_cert[k] : NULL, s[k], eps[k]);
        if (r != REL_REFUSE_NONE)
            goto out;
        sum += eps[k];
    }
    if (!(sum <= eps_rel))
        r = REL_REFUSE_BUDGET;
out:
    if (bad_k)
        *bad_k = k;
    if (why)
        *why = r;
    return r == REL_REFUSE_NONE ? CORE_OK : CORE_EINVARIANT;
}
