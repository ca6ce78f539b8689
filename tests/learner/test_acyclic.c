/* test_acyclic.c - expm (Padé scaling-and-squaring), h(W), ∇h, DAG pruning. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "lrn/acyclic.h"
#include "lrn/sem.h"

static struct lrn_acyclic_ws *ws_for(size_t d)
{
    struct lrn_acyclic_ws *ws = NULL;
    cr_assert_eq(lrn_acyclic_ws_new(d, &ws), CORE_OK);
    return ws;
}

/* exp([[a, b], [0, c]]) = [[e^a, b (e^c − e^a)/(c − a)], [0, e^c]]; scaled by s this hits
 * every Padé degree (θ3 .. θ13) and the squaring path. */
Test(acyclic, expm_matches_upper_triangular_closed_form_at_every_degree)
{
    const double scales[] = {0.001, 0.05, 0.3, 0.8, 2.0, 9.0, 40.0};
    struct lrn_acyclic_ws *ws = ws_for(2);

    for (size_t t = 0; t < sizeof(scales) / sizeof(scales[0]); t++) {
        double s = scales[t], a = 0.25 * s, b = 0.5 * s, c = -0.2 * s;
        double A[4] = {a, b, 0.0, c}, E[4];
        double e01 = b * (exp(c) - exp(a)) / (c - a);
        /* Scaling and squaring is accurate normwise (Higham 2005): error ≤ ~u·‖exp(A)‖. */
        double tol = 1e-13 * fmax(fmax(exp(a), fabs(e01)), fmax(exp(c), 1.0));
        cr_assert_eq(lrn_expm(ws, A, E), CORE_OK);
        cr_assert_float_eq(E[0], exp(a), tol, "scale %g", s);
        cr_assert_float_eq(E[1], e01, tol, "scale %g", s);
        cr_assert_float_eq(E[2], 0.0, tol, "scale %g", s);
        cr_assert_float_eq(E[3], exp(c), tol, "scale %g", s);
    }
    lrn_acyclic_ws_free(ws);
}

Test(acyclic, expm_of_rotation_generator_is_rotation)
{
    struct lrn_acyclic_ws *ws = ws_for(2);
    double t = 3.0, A[4] = {0.0, -t, t, 0.0}, E[4];

    cr_assert_eq(lrn_expm(ws, A, E), CORE_OK);
    cr_assert_float_eq(E[0], cos(t), 1e-13);
    cr_assert_float_eq(E[1], -sin(t), 1e-13);
    cr_assert_float_eq(E[2], sin(t), 1e-13);
    cr_assert_float_eq(E[3], cos(t), 1e-13);
    lrn_acyclic_ws_free(ws);
}

Test(acyclic, expm_of_nilpotent_shift_is_finite_taylor_series)
{
    /* N = shift (N_{i,i+1} = 1), N^4 = 0: exp(N)_{i,j} = 1/(j−i)! for j ≥ i. */
    const double fact[4] = {1.0, 1.0, 2.0, 6.0};
    struct lrn_acyclic_ws *ws = ws_for(4);
    double A[16] = {0}, E[16];

    for (int i = 0; i < 3; i++)
        A[i * 4 + i + 1] = 1.0;
    cr_assert_eq(lrn_expm(ws, A, E), CORE_OK);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            cr_assert_float_eq(E[i * 4 + j], j >= i ? 1.0 / fact[j - i] : 0.0, 1e-14);
    lrn_acyclic_ws_free(ws);
}

Test(acyclic, expm_times_expm_of_negative_is_identity)
{
    enum { D = 30 };
    struct lrn_acyclic_ws *ws = ws_for(D);
    struct core_prng rng;
    static double A[D * D], N[D * D], E1[D * D], E2[D * D];

    core_prng_seed(&rng, 7);
    for (int x = 0; x < D * D; x++) {
        A[x] = 0.6 * core_prng_normal(&rng); /* ‖A‖₁ ≈ 14: exercises squaring */
        N[x] = -A[x];
    }
    cr_assert_eq(lrn_expm(ws, A, E1), CORE_OK);
    cr_assert_eq(lrn_expm(ws, N, E2), CORE_OK);
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {
            double acc = 0.0;
            for (int k = 0; k < D; k++)
                acc += E1[i * D + k] * E2[k * D + j];
            cr_assert_float_eq(acc, i == j ? 1.0 : 0.0, 1e-8, "(%d,%d)", i, j);
        }
    lrn_acyclic_ws_free(ws);
}

/* exp(A) of a nonnegative d×d A by its Taylor series summed in long double (P = A^n / n!,
 * T = Σ P; no cancellation since A ≥ 0): a reference good to far below 1e-13. P and Q are
 * d×d scratch. Returns the largest entry of T. */
static long double expm_series(int d, const double *A, long double *T, long double *P,
                               long double *Q)
{
    long double tmax = 0.0L;

    for (int x = 0; x < d * d; x++)
        T[x] = P[x] = (x / d == x % d) ? 1.0L : 0.0L;
    for (int n = 1; n < 400; n++) {
        long double mx = 0.0L;
        for (int i = 0; i < d; i++)
            for (int j = 0; j < d; j++) {
                long double acc = 0.0L;
                for (int k = 0; k < d; k++)
                    acc += P[i * d + k] * (long double)A[k * d + j];
                Q[i * d + j] = acc / n;
            }
        for (int x = 0; x < d * d; x++) {
            P[x] = Q[x];
            T[x] += P[x];
            mx = P[x] > mx ? P[x] : mx;
        }
        if (n > 10 && mx < 1e-40L)
            break;
    }
    for (int x = 0; x < d * d; x++)
        tmax = T[x] > tmax ? T[x] : tmax;
    return tmax;
}

/* A = W∘W of a nearly acyclic W (strong forward edges, weak back edges), the matrices h(W)
 * sees: ‖A‖₁ is large but the powers are small, so the degree comes from ‖A^p‖^(1/p)
 * (Al-Mohy & Higham 2009) with little or no scaling; checked against expm_series. */
Test(acyclic, expm_of_nonnegative_near_dag_matches_taylor_series)
{
    enum { D = 20 };
    struct lrn_acyclic_ws *ws = ws_for(D);
    struct core_prng rng;
    static double A[D * D], E[D * D];
    static long double T[D * D], P[D * D], Q[D * D];

    core_prng_seed(&rng, 11);
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {
            double u = core_prng_uniform(&rng), w = 0.0;
            if (j > i && u < 0.25)
                w = 0.5 + 1.5 * core_prng_uniform(&rng); /* forward edge, |w| in [0.5, 2] */
            else if (j < i && u < 0.3)
                w = 1e-2 * core_prng_uniform(&rng); /* weak back edge: A is cyclic */
            A[i * D + j] = w * w;
        }
    long double tmax = expm_series(D, A, T, P, Q);
    cr_assert_eq(lrn_expm(ws, A, E), CORE_OK);
    for (int x = 0; x < D * D; x++)
        cr_assert(fabsl((long double)E[x] - T[x]) <= 1e-13L * tmax, "entry %d: %g vs %Lg", x, E[x],
                  T[x]);
    lrn_acyclic_ws_free(ws);
}

/* Nonnegative A at scales from tiny to ‖A‖₁ ≈ 40: the Padé degree and the scaling chosen from
 * the norms of A's powers must give exp(A) to 1e-13 of the series at each scale. */
Test(acyclic, expm_of_nonnegative_matrices_matches_the_series_at_every_scale)
{
    enum { D = 12 };
    const double scales[] = {1e-4, 0.02, 0.1, 0.3, 0.6, 1.0, 3.0, 10.0};
    struct lrn_acyclic_ws *ws = ws_for(D);
    struct core_prng rng;
    static double A0[D * D], A[D * D], E[D * D];
    static long double T[D * D], P[D * D], Q[D * D];

    core_prng_seed(&rng, 5);
    for (int x = 0; x < D * D; x++)
        A0[x] = core_prng_uniform(&rng) < 0.3 ? core_prng_uniform(&rng) : 0.0;
    for (size_t t = 0; t < sizeof(scales) / sizeof(scales[0]); t++) {
        for (int x = 0; x < D * D; x++)
            A[x] = scales[t] * A0[x];
        long double tmax = expm_series(D, A, T, P, Q);
        cr_assert_eq(lrn_expm(ws, A, E), CORE_OK);
        for (int x = 0; x < D * D; x++)
            cr_assert(fabsl((long double)E[x] - T[x]) <= 1e-13L * tmax,
                      "scale %g entry %d: %g vs %Lg", scales[t], x, E[x], T[x]);
    }
    lrn_acyclic_ws_free(ws);
}

Test(acyclic, expm_rejects_non_finite_input)
{
    struct lrn_acyclic_ws *ws = ws_for(2);
    double A[4] = {0.0, NAN, 0.0, 0.0}, E[4];

    cr_assert_eq(lrn_expm(ws, A, E), CORE_EINVAL);
    A[1] = INFINITY;
    cr_assert_eq(lrn_expm(ws, A, E), CORE_EINVAL);
    lrn_acyclic_ws_free(ws);
}

Test(acyclic, ws_new_checks_size)
{
    struct lrn_acyclic_ws *ws = NULL;
    cr_assert_eq(lrn_acyclic_ws_new(0, &ws), CORE_EINVAL);
    cr_assert_eq(lrn_acyclic_ws_new(LRN_ACYCLIC_MAX_D + 1, &ws), CORE_ETOOBIG);
    cr_assert_null(ws);
}

Test(acyclic, h_is_zero_on_dag_and_matches_two_cycle_formula)
{
    struct lrn_acyclic_ws *ws = ws_for(3);
    double W[9] = {0, 1.5, 0, 0, 0, -0.7, 0, 0, 0}, h = -1.0, G[9];

    cr_assert_eq(lrn_acyclic_h(ws, W, &h, G), CORE_OK);
    cr_assert_float_eq(h, 0.0, 1e-15);
    for (int x = 0; x < 9; x++)
        cr_assert_float_eq(G[x], 0.0, 1e-15);
    /* 2-cycle 0 ⇄ 1 with weights a, b: tr exp([[0,a²],[b²,0]]) = 2 cosh(ab). */
    W[3] = 0.8;
    cr_assert_eq(lrn_acyclic_h(ws, W, &h, NULL), CORE_OK);
    cr_assert_float_eq(h, 2.0 * cosh(1.5 * 0.8) - 2.0, 1e-13);
    lrn_acyclic_ws_free(ws);
}

/* Full-matrix reference: h = tr(exp(W∘W)) − d, ∇h = exp(W∘W)ᵀ ∘ 2W. */
static void h_reference(struct lrn_acyclic_ws *ws, size_t d, const double *W, double *h, double *G)
{
    double *A = calloc(d * d, sizeof(double)), *E = calloc(d * d, sizeof(double));
    double tr = 0.0;
    for (size_t x = 0; x < d * d; x++)
        A[x] = W[x] * W[x];
    cr_assert_eq(lrn_expm(ws, A, E), CORE_OK);
    for (size_t i = 0; i < d; i++) {
        tr += E[i * d + i];
        for (size_t j = 0; j < d; j++)
            G[i * d + j] = E[j * d + i] * 2.0 * W[i * d + j];
    }
    *h = tr - (double)d;
    free(A);
    free(E);
}

Test(acyclic, scc_decomposition_equals_full_matrix_exponential)
{
    enum { D = 24 };
    struct lrn_acyclic_ws *ws = ws_for(D);
    struct core_prng rng;
    static double W[D * D], G[D * D], Gr[D * D];
    double h, hr;

    core_prng_seed(&rng, 11);
    for (int trial = 0; trial < 20; trial++) {
        /* sparse random graph with cycles, a few self-loops, several SCCs */
        for (int x = 0; x < D * D; x++)
            W[x] = core_prng_uniform(&rng) < 0.07 ? 1.5 * core_prng_normal(&rng) : 0.0;
        cr_assert_eq(lrn_acyclic_h(ws, W, &h, G), CORE_OK);
        h_reference(ws, D, W, &hr, Gr);
        cr_assert_float_eq(h, hr, 1e-9 * (1.0 + fabs(hr)), "trial %d", trial);
        for (int x = 0; x < D * D; x++)
            cr_assert_float_eq(G[x], Gr[x], 1e-9 * (1.0 + fabs(Gr[x])), "trial %d x %d", trial, x);
    }
    lrn_acyclic_ws_free(ws);
}

Test(acyclic, gradient_matches_central_finite_differences)
{
    enum { D = 8 };
    struct lrn_acyclic_ws *ws = ws_for(D);
    struct core_prng rng;
    double W[D * D], G[D * D], h, hp, hm, eps = 1e-6;

    core_prng_seed(&rng, 3);
    for (int x = 0; x < D * D; x++)
        W[x] = 0.4 * core_prng_normal(&rng);
    cr_assert_eq(lrn_acyclic_h(ws, W, &h, G), CORE_OK);
    cr_assert(h > 0.0);
    for (int x = 0; x < D * D; x++) {
        double w0 = W[x], fd;
        W[x] = w0 + eps;
        cr_assert_eq(lrn_acyclic_h(ws, W, &hp, NULL), CORE_OK);
        W[x] = w0 - eps;
        cr_assert_eq(lrn_acyclic_h(ws, W, &hm, NULL), CORE_OK);
        W[x] = w0;
        fd = (hp - hm) / (2.0 * eps);
        cr_assert_float_eq(G[x], fd, 1e-6 * (1.0 + fabs(fd)), "entry %d: %g vs %g", x, G[x], fd);
    }
    lrn_acyclic_ws_free(ws);
}

Test(acyclic, graph_is_dag_detects_cycles)
{
    size_t work[6];
    double W[9] = {0, 1, 0, 0, 0, 1, 0, 0, 0};

    cr_assert(lrn_graph_is_dag(3, W, work));
    W[6] = 0.1; /* 2 → 0 closes the cycle */
    cr_assert_not(lrn_graph_is_dag(3, W, work));
}

Test(acyclic, prune_thresholds_and_drops_weakest_cycle_edge)
{
    double W[9] = {0.9, 1.0, 0.2, 0, 0, -0.8, 0.5, 0, 0};
    void *work = malloc(lrn_dag_prune_work_len(3));
    size_t dropped = 9;

    cr_assert_eq(lrn_dag_prune(3, W, 0.3, work, &dropped), CORE_OK);
    /* diagonal and |0.2| gone by threshold; cycle 0→1→2→0 broken at its weakest, 2→0 */
    cr_assert_float_eq(W[0], 0.0, 0.0);
    cr_assert_float_eq(W[2], 0.0, 0.0);
    cr_assert_float_eq(W[6], 0.0, 0.0);
    cr_assert_float_eq(W[1], 1.0, 0.0);
    cr_assert_float_eq(W[5], -0.8, 0.0);
    cr_assert_eq(dropped, 1);
    cr_assert_eq(lrn_dag_prune(3, W, NAN, work, &dropped), CORE_EINVAL);
    free(work);
}
