/* Diagnostic driver used for bench/results/d200-rho-x2/NOTES.md (not product code, not built
 * by CMake). Build: see the gcc line at the end of NOTES.md. Environment knobs: K, TOL, LAMBDA,
 * RHO1, RHO2, G1 (rho1_growth), SPARS (w_sparsify), T, LIT (server L-BFGS cap), HSTALL, RHOMAX,
 * WTOL, TRACE="i,j;k,l" (edges to trace), DUMP=file (raw W). */
/* diagnostic driver (not product code) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/prng.h"
#include "lrn/acyclic.h"
#include "lrn/admm.h"
#include "lrn/metrics.h"
#include "lrn/pgcd.h"
#include "lrn/sem.h"

struct wrap {
    struct lrn_local_ops in;
    size_t d, P;
    double *Bs, *betas;
    const double *truth;
    int ntr;
    int tr[64][2];
    double *tmp;
    void *work;
};
static core_err wsolve(void *self, size_t p, size_t t, const double *W, const double *beta_p,
                       double rho2, double *B_p)
{
    struct wrap *w = self;
    size_t d = w->d, d2 = d * d;
    if (p == 0 && t > 0) {
        struct lrn_metrics m;
        memcpy(w->tmp, W, d2 * sizeof(double));
        size_t dr = 0;
        (void)!lrn_dag_prune(d, w->tmp, 0.3, w->work, &dr);
        (void)!lrn_metrics_compute(w->truth, w->tmp, d, 0.0, &m);
        fprintf(stderr, "W after round %zu: SHD %zu rev %zu fp %zu miss %zu edges %zu\n", t, m.shd,
                m.reversed, m.false_pos, m.missing_skel, m.pred_edges);
    }
    core_err rc = w->in.solve(w->in.self, p, t, W, beta_p, rho2, B_p);
    memcpy(w->Bs + p * d2, B_p, d2 * sizeof(double));
    memcpy(w->betas + p * d2, beta_p, d2 * sizeof(double));
    if (p == w->P - 1 && w->ntr) {
        for (int k = 0; k < w->ntr; k++) {
            size_t i = (size_t)w->tr[k][0], j = (size_t)w->tr[k][1];
            double bij = 0, bji = 0, eij = 0, eji = 0;
            for (size_t q = 0; q < w->P; q++) {
                bij += w->Bs[q * d2 + i * d + j];
                bji += w->Bs[q * d2 + j * d + i];
                eij += w->betas[q * d2 + i * d + j];
                eji += w->betas[q * d2 + j * d + i];
            }
            fprintf(stderr,
                    "  t%3zu %zu->%zu true %+.2f/%+.2f  W %+.3f/%+.3f  meanB %+.3f/%+.3f  meanBeta "
                    "%+.3f/%+.3f\n",
                    t, i, j, w->truth[i * d + j], w->truth[j * d + i], W[i * d + j], W[j * d + i],
                    bij / (double)w->P, bji / (double)w->P, eij / (double)w->P, eji / (double)w->P);
        }
    }
    return rc;
}
struct cbarg {
    struct lrn_pgcd_local *loc;
    unsigned long long last;
};
static bool cbf(void *a, const struct lrn_admm_progress *pr)
{
    struct cbarg *c = a;
    unsigned long long st = lrn_pgcd_local_steps(c->loc);
    fprintf(stderr,
            "R %zu h %.3g rho1 %.3g alpha %.3g it %zu ev %zu vars %zu nnzup %zu nnzdown %zu steps "
            "%llu res %.3g\n",
            pr->round, pr->h, pr->rho1, pr->alpha, pr->lbfgs_iters, pr->lbfgs_evals,
            pr->server_vars, pr->nnz_up, pr->nnz_down, st - c->last, pr->primal_residual);
    c->last = st;
    return true;
}
static double envd(const char *k, double def)
{
    const char *v = getenv(k);
    return v ? atof(v) : def;
}
int main(int argc, char **argv)
{
    size_t d = argc > 1 ? (size_t)atoi(argv[1]) : 200;
    unsigned long long seed = argc > 2 ? strtoull(argv[2], 0, 10) : 7;
    struct lrn_sem_opts so = lrn_sem_opts_default();
    so.d = d;
    so.seed = seed;
    so.expected_edges = (double)d;
    struct lrn_sem_problem *pb;
    if (lrn_sem_problem_new(&so, &pb))
        return 1;
    size_t P = pb->participants, n = pb->n_per, d2 = d * d;
    double *sig = malloc(P * d2 * sizeof(double));
    const double *sp[64];
    for (size_t p = 0; p < P; p++) {
        if (lrn_covariance(n, d, pb->x + p * n * d, 1.0, sig + p * d2))
            return 1;
        sp[p] = sig + p * d2;
    }
    struct lrn_pgcd_opts po = {envd("LAMBDA", 0.1), 0.5, (size_t)envd("K", 1000),
                               envd("TOL", 1e-6)};
    struct lrn_pgcd_local *loc;
    if (lrn_pgcd_local_new(d, P, sp, &po, &loc))
        return 1;
    struct wrap w = {0};
    w.in = lrn_pgcd_local_ops(loc);
    w.d = d;
    w.P = P;
    w.Bs = calloc(P * d2, 8);
    w.betas = calloc(P * d2, 8);
    w.truth = pb->w;
    w.tmp = malloc(d2 * 8);
    w.work = malloc(lrn_dag_prune_work_len(d));
    const char *tr = getenv("TRACE");
    while (tr && *tr && w.ntr < 64) {
        int a, b, c;
        if (sscanf(tr, "%d,%d%n", &a, &b, &c) != 2)
            break;
        w.tr[w.ntr][0] = a;
        w.tr[w.ntr][1] = b;
        w.ntr++;
        tr += c;
        if (*tr == ';')
            tr++;
    }
    struct lrn_local_ops ops = {wsolve, &w};
    struct lrn_admm_opts ao = lrn_admm_opts_default();
    ao.rho1 = envd("RHO1", ao.rho1);
    ao.rho1_growth = envd("G1", ao.rho1_growth);
    ao.w_sparsify = envd("SPARS", ao.w_sparsify);
    ao.max_rounds = (size_t)envd("T", 100);
    ao.lbfgs_max_iter = (size_t)envd("LIT", 100);
    ao.h_stall = envd("HSTALL", ao.h_stall);
    ao.rho2 = envd("RHO2", ao.rho2);
    ao.rho_max = envd("RHOMAX", ao.rho_max);
    ao.lbfgs_wtol = envd("WTOL", ao.lbfgs_wtol);
    core_err rc;
    double *W = malloc(d2 * 8), *Wr = malloc(d2 * 8);
    struct lrn_admm_result res;
    struct cbarg cba = {loc, 0};
    rc = lrn_admm_run(d, P, &ops, &ao, cbf, &cba, W, Wr, &res);
    if (rc) {
        fprintf(stderr, "rc %d\n", rc);
        return 1;
    }
    struct lrn_metrics m;
    (void)!lrn_metrics_compute(pb->w, W, d, 0.0, &m);
    printf("seed %llu SHD %zu TPR %.3f FDR %.3f rev %zu fp %zu miss %zu MB %.2f rounds %zu pruned "
           "%zu\n",
           seed, m.shd, m.tpr, m.fdr, m.reversed, m.false_pos, m.missing_skel,
           (double)res.bytes_model / 1e6, res.rounds, res.pruned);
    if (getenv("DUMP")) {
        FILE *f = fopen(getenv("DUMP"), "w");
        for (size_t i = 0; i < d; i++) {
            for (size_t j = 0; j < d; j++)
                fprintf(f, "%s%.17g", j ? "," : "", Wr[i * d + j]);
            fprintf(f, "\n");
        }
        fclose(f);
        f = fopen("/tmp/d200w/truth.csv", "w");
        for (size_t i = 0; i < d; i++) {
            for (size_t j = 0; j < d; j++)
                fprintf(f, "%s%.17g", j ? "," : "", pb->w[i * d + j]);
            fprintf(f, "\n");
        }
        fclose(f);
    }
    return 0;
}
