/* report.c - Markdown tables shaped like gc-dp Tables 6-12 and gnuplot figures shaped like
 * Figures 2 and 4-6, recomputed from the per-draw CSV (so every table can be rebuilt from
 * the preserved draws: `gcdp eval --tables-from DIR/draws.csv`). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/mem.h"
#include "eval_int.h"

int eval_mkdirs(const char *dir)
{
    char tmp[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof(tmp))
        return -1;
    memcpy(tmp, dir, n + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0777) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    }
    if (mkdir(tmp, 0777) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

/* ------------------------------------------------------------ aggregation */

struct agg {
    char phase[16], mech[24];
    double eps, tau;
    size_t n;
    double s[5], ss[5]; /* task_f1, attack_auc, attack_auc_raw, attack_f1, mae */
};

struct aggs {
    char dataset[64];
    struct agg *a;
    size_t n, cap;
};

static struct agg *agg_get(struct aggs *A, const char *phase, const char *mech, double eps,
                           double tau, int create)
{
    for (size_t i = 0; i < A->n; i++) {
        struct agg *g = &A->a[i];
        if (strcmp(g->phase, phase) == 0 && strcmp(g->mech, mech) == 0 &&
            fabs(g->eps - eps) < 1e-9 && fabs(g->tau - tau) < 1e-9)
            return g;
    }
    if (!create)
        return NULL;
    if (A->n == A->cap) {
        A->cap = A->cap ? 2 * A->cap : 64;
        A->a = core_xrealloc(A->a, A->cap * sizeof(*A->a));
    }
    struct agg *g = &A->a[A->n++];
    memset(g, 0, sizeof(*g));
    snprintf(g->phase, sizeof(g->phase), "%s", phase);
    snprintf(g->mech, sizeof(g->mech), "%s", mech);
    g->eps = eps;
    g->tau = tau;
    return g;
}

/* any τ (phase main/ablation use one τ) */
static struct agg *agg_find(struct aggs *A, const char *phase, const char *mech, double eps)
{
    for (size_t i = 0; i < A->n; i++) {
        struct agg *g = &A->a[i];
        if (strcmp(g->phase, phase) == 0 && strcmp(g->mech, mech) == 0 &&
            (eps < 0 || fabs(g->eps - eps) < 1e-9))
            return g;
    }
    return NULL;
}

static double mean(const struct agg *g, int k)
{
    return g && g->n ? g->s[k] / (double)g->n : NAN;
}

static double sd(const struct agg *g, int k)
{
    if (!g || g->n < 2)
        return 0.0;
    double m = g->s[k] / (double)g->n, v = (g->ss[k] - (double)g->n * m * m) / (double)(g->n - 1);
    return v > 0.0 ? sqrt(v) : 0.0;
}

static core_err read_csv(const char *path, struct aggs *A, char *eb, size_t ebn)
{
    FILE *f = fopen(path, "r");
    char line[1024];
    size_t ln = 0;

    if (!f) {
        snprintf(eb, ebn, "%s: %s", path, strerror(errno));
        return CORE_EIO;
    }
    while (fgets(line, sizeof(line), f)) {
        char *fld[16], *save = NULL, *tok;
        int nf = 0;
        ln++;
        if (ln == 1) {
            if (strncmp(line, EVAL_CSV_HEADER, strlen(EVAL_CSV_HEADER)) != 0) {
                snprintf(eb, ebn, "%s:1: not an eval draws.csv header", path);
                fclose(f);
                return CORE_EPARSE;
            }
            continue;
        }
        line[strcspn(line, "\r\n")] = '\0';
        for (tok = strtok_r(line, ",", &save); tok && nf < 16; tok = strtok_r(NULL, ",", &save))
            fld[nf++] = tok;
        if (nf != 14) {
            snprintf(eb, ebn, "%s:%zu: %d fields (14 expected)", path, ln, nf);
            fclose(f);
            return CORE_EPARSE;
        }
        snprintf(A->dataset, sizeof(A->dataset), "%s", fld[0]);
        struct agg *g = agg_get(A, fld[1], fld[2], strtod(fld[3], NULL), strtod(fld[4], NULL), 1);
        for (int k = 0; k < 5; k++) {
            double v = strtod(fld[9 + k], NULL);
            g->s[k] += v;
            g->ss[k] += v * v;
        }
        g->n++;
    }
    fclose(f);
    if (ln < 2) {
        snprintf(eb, ebn, "%s: no draws", path);
        return CORE_EPARSE;
    }
    return CORE_OK;
}

/* ------------------------------------------------------------ paper values */

/* gc-dp Tables 6-11 for the two real datasets we run (ε = 0.2, 0.5, 1, 2, 4;
 * Lap, Gau, Ada, Risk, GC-DP). */
struct paper {
    const char *ds;
    double f1[5][5], auc[5][5];
    double attack_f1_eps1[5];
    double abl_f1[5], abl_auc[5]; /* w/o Lag, w/o Comp., w/o Utility, w/o Risk, GC-DP */
    double tau_f1[5], tau_auc[5];
};
static const struct paper papers[] = {
    {"occupancy",
     {{83.6, 84.4, 88.1, 89.0, 91.7},
      {89.2, 89.9, 92.3, 92.8, 94.2},
      {93.4, 93.8, 95.1, 95.5, 96.4},
      {95.2, 95.6, 96.3, 96.6, 97.2},
      {96.4, 96.7, 97.1, 97.3, 97.8}},
     {{0.704, 0.697, 0.673, 0.629, 0.591},
      {0.747, 0.739, 0.707, 0.659, 0.614},
      {0.783, 0.775, 0.742, 0.691, 0.637},
      {0.821, 0.812, 0.776, 0.724, 0.671},
      {0.856, 0.848, 0.812, 0.761, 0.713}},
     {0.729, 0.721, 0.697, 0.646, 0.596},
     {95.8, 95.4, 94.1, 94.9, 96.4},
     {0.655, 0.628, 0.614, 0.682, 0.637},
     {96.0, 96.4, 96.2, 95.9, 95.4},
     {0.631, 0.637, 0.646, 0.661, 0.683}},
    {"wisdm",
     {{54.9, 55.6, 59.8, 60.7, 65.2},
      {63.7, 64.1, 68.6, 69.4, 72.9},
      {68.4, 69.2, 72.6, 73.5, 75.8},
      {72.1, 72.8, 74.9, 75.4, 77.1},
      {74.8, 75.1, 76.4, 76.8, 78.2}},
     {{0.672, 0.664, 0.648, 0.617, 0.582},
      {0.713, 0.705, 0.681, 0.644, 0.604},
      {0.748, 0.739, 0.711, 0.674, 0.621},
      {0.782, 0.773, 0.744, 0.703, 0.653},
      {0.817, 0.808, 0.779, 0.738, 0.692}},
     {0.701, 0.693, 0.666, 0.629, 0.581},
     {74.2, 73.6, 72.1, 73.0, 75.8},
     {0.648, 0.613, 0.602, 0.671, 0.621},
     {75.0, 75.4, 75.8, 75.5, 74.9},
     {0.614, 0.618, 0.621, 0.637, 0.651}},
    {"intel-sim",
     {{68.7, 69.5, 73.8, 75.1, 79.6},
      {76.4, 77.2, 80.9, 81.8, 84.5},
      {81.2, 81.9, 84.4, 85.1, 86.7},
      {84.8, 85.2, 87.0, 87.5, 89.1},
      {87.6, 88.0, 89.5, 89.9, 91.3}},
     {{0.719, 0.711, 0.684, 0.641, 0.603},
      {0.763, 0.754, 0.721, 0.674, 0.628},
      {0.801, 0.792, 0.756, 0.704, 0.652},
      {0.838, 0.829, 0.793, 0.741, 0.689},
      {0.872, 0.864, 0.828, 0.779, 0.731}},
     {0.744, 0.736, 0.708, 0.661, 0.612},
     {85.3, 84.8, 83.6, 84.2, 86.7},
     {0.681, 0.642, 0.631, 0.699, 0.652},
     {86.1, 86.7, 86.4, 85.9, 85.2},
     {0.646, 0.652, 0.664, 0.681, 0.706}},
};
static const double paper_eps[5] = {0.2, 0.5, 1.0, 2.0, 4.0};

static const struct paper *paper_for(const char *ds)
{
    for (size_t i = 0; i < sizeof(papers) / sizeof(papers[0]); i++)
        if (strcmp(papers[i].ds, ds) == 0)
            return &papers[i];
    return NULL;
}

static int paper_eps_index(double e)
{
    for (int i = 0; i < 5; i++)
        if (fabs(paper_eps[i] - e) < 1e-9)
            return i;
    return -1;
}

static const char *mk[] = {"lap", "gauss", "ada", "risk", "gcdp"};
static const char *mn[] = {"Lap-DP", "Gau-DP", "Ada-DP", "Risk-DP", "GC-DP"};

/* distinct sorted eps of phase main */
static size_t eps_list(const struct aggs *A, double *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < A->n; i++) {
        if (strcmp(A->a[i].phase, "main") != 0 || strcmp(A->a[i].mech, "nonprivate") == 0)
            continue;
        int seen = 0;
        for (size_t j = 0; j < n; j++)
            seen |= fabs(out[j] - A->a[i].eps) < 1e-9;
        if (!seen && n < cap)
            out[n++] = A->a[i].eps;
    }
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && out[j] < out[j - 1]; j--) {
            double t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return n;
}

static void cell(FILE *f, const struct agg *g, int k, double scale, int prec)
{
    if (!g || !g->n)
        fprintf(f, " – |");
    else
        fprintf(f, " %.*f ± %.*f |", prec, scale * mean(g, k), prec, scale * sd(g, k));
}

/* What every table of tables.md reads: the aggregates, the paper's values for this dataset
 * (NULL when the paper has none) and the release budgets of the main phase. */
struct tables {
    FILE *f;
    struct aggs *A;
    const struct paper *P;
    double eps[16];
    size_t ne;
};

/* The τ of the largest mean validation F1; an equal mean keeps the smaller τ. */
static double selected_tau(const struct aggs *A)
{
    double best = -1.0, bt = -1.0;
    for (size_t i = 0; i < A->n; i++) {
        struct agg *g = &A->a[i];
        if (strcmp(g->phase, "tau_val") == 0 &&
            (mean(g, 0) > best || (mean(g, 0) == best && g->tau < bt))) {
            best = mean(g, 0);
            bt = g->tau;
        }
    }
    return bt;
}

/* Table 6: the τ sweep at ε = 1. */
static void write_table6(const struct tables *T)
{
    FILE *f = T->f;
    const struct paper *P = T->P;
    double bt = selected_tau(T->A);

    fprintf(
        f,
        "## Table 6 — τ sweep at ε = 1 (GC-DP); selection by validation F1, ties to the "
        "smaller τ\n\n| τ | val F1 (selection) | test F1 | attack AUC |%s\n|---|---|---|---|%s\n",
        P ? " paper F1 | paper AUC |" : "", P ? "---|---|" : "");
    for (size_t i = 0; i < T->A->n; i++) {
        struct agg *g = &T->A->a[i];
        if (strcmp(g->phase, "tau_val") != 0)
            continue;
        struct agg *t = agg_get(T->A, "tau_test", "gcdp", 1.0, g->tau, 0);
        fprintf(f, "| %.2f%s |", g->tau, fabs(g->tau - bt) < 1e-9 ? " (selected)" : "");
        cell(f, g, 0, 100.0, 1);
        cell(f, t, 0, 100.0, 1);
        cell(f, t, 1, 1.0, 3);
        if (P) {
            int ti = (int)lround((g->tau - 0.10) / 0.05);
            if (ti >= 0 && ti < 5)
                fprintf(f, " %.1f | %.3f |", P->tau_f1[ti], P->tau_auc[ti]);
            else
                fprintf(f, " – | – |");
        }
        fprintf(f, "\n");
    }
}

/* Tables 7/8: task F1 per release budget. */
static void write_table_f1(const struct tables *T)
{
    FILE *f = T->f;
    const struct paper *P = T->P;
    const char *ds = T->A->dataset;

    fprintf(f, "\n## Table %s — task F1 (%%) under different release budgets (test split)\n\n",
            strcmp(ds, "wisdm") == 0 || strcmp(ds, "wisdm-gyro") == 0 ? "7" : "8");
    fprintf(f, "| ε | NonPrivate | Lap-DP | Gau-DP | Ada-DP | Risk-DP | GC-DP |\n"
               "|---|---|---|---|---|---|---|\n");
    for (size_t e = 0; e < T->ne; e++) {
        double eps = T->eps[e];
        fprintf(f, "| %.1f |", eps);
        cell(f, agg_find(T->A, "main", "nonprivate", eps), 0, 100.0, 1);
        for (int m = 0; m < 5; m++)
            cell(f, agg_find(T->A, "main", mk[m], eps), 0, 100.0, 1);
        fprintf(f, "\n");
        int pe = P ? paper_eps_index(eps) : -1;
        if (pe >= 0)
            fprintf(f, "| %.1f (paper) | – | %.1f | %.1f | %.1f | %.1f | %.1f |\n", eps,
                    P->f1[pe][0], P->f1[pe][1], P->f1[pe][2], P->f1[pe][3], P->f1[pe][4]);
    }
}

/* Table 9: attribute inference at ε = 1. */
static void write_table9(const struct tables *T)
{
    FILE *f = T->f;
    const struct paper *P = T->P;

    fprintf(f, "\n## Table 9 — attribute inference at ε = 1 (fixed attacker, test split)\n\n"
               "| metric | NonPrivate | Lap-DP | Gau-DP | Ada-DP | Risk-DP | GC-DP |\n"
               "|---|---|---|---|---|---|---|\n");
    for (int k = 0; k < 2; k++) {
        int col = k == 0 ? 1 : 3;
        fprintf(f, "| attack %s |", k == 0 ? "AUC" : "F1");
        cell(f, agg_find(T->A, "main", "nonprivate", 1.0), col, 1.0, 3);
        for (int m = 0; m < 5; m++)
            cell(f, agg_find(T->A, "main", mk[m], 1.0), col, 1.0, 3);
        fprintf(f, "\n");
        if (P) {
            fprintf(f, "| attack %s (paper) | – |", k == 0 ? "AUC" : "F1");
            for (int m = 0; m < 5; m++)
                fprintf(f, " %.3f |", k == 0 ? P->auc[2][m] : P->attack_f1_eps1[m]);
            fprintf(f, "\n");
        }
    }
}

/* Table 10: oriented attack AUC per release budget. */
static void write_table10(const struct tables *T)
{
    FILE *f = T->f;
    const struct paper *P = T->P;

    fprintf(f, "\n## Table 10 — oriented attack AUC under different release budgets\n\n"
               "| ε | NonPrivate | Lap-DP | Gau-DP | Ada-DP | Risk-DP | GC-DP |\n"
               "|---|---|---|---|---|---|---|\n");
    for (size_t e = 0; e < T->ne; e++) {
        double eps = T->eps[e];
        fprintf(f, "| %.1f |", eps);
        cell(f, agg_find(T->A, "main", "nonprivate", eps), 1, 1.0, 3);
        for (int m = 0; m < 5; m++)
            cell(f, agg_find(T->A, "main", mk[m], eps), 1, 1.0, 3);
        fprintf(f, "\n");
        int pe = P ? paper_eps_index(eps) : -1;
        if (pe >= 0)
            fprintf(f, "| %.1f (paper) | – | %.3f | %.3f | %.3f | %.3f | %.3f |\n", eps,
                    P->auc[pe][0], P->auc[pe][1], P->auc[pe][2], P->auc[pe][3], P->auc[pe][4]);
    }
}

/* Figure 3 data: normalized MAE of the released coordinates. */
static void write_figure3(const struct tables *T)
{
    FILE *f = T->f;

    fprintf(f,
            "\n## Figure 3 data — normalized MAE of the released window coordinates "
            "(test split; clip range = 1)%s\n\n"
            "| ε | Lap-DP | Gau-DP | Ada-DP | Risk-DP | GC-DP |\n|---|---|---|---|---|---|\n",
            strcmp(T->A->dataset, "intel-sim") == 0
                ? "; paper Fig. 3 at ε = 1: Lap-DP 0.114, GC-DP 0.063"
                : "");
    for (size_t e = 0; e < T->ne; e++) {
        fprintf(f, "| %.1f |", T->eps[e]);
        for (int m = 0; m < 5; m++)
            cell(f, agg_find(T->A, "main", mk[m], T->eps[e]), 4, 1.0, 3);
        fprintf(f, "\n");
    }
}

/* Table 11: the ablations at ε = 1 (only when the run had them). */
static void write_table11(const struct tables *T)
{
    static const char *ak[] = {"gcdp-nolag", "gcdp-nocomp", "gcdp-noutility", "gcdp-norisk"};
    FILE *f = T->f;
    const struct paper *P = T->P;

    if (!agg_find(T->A, "ablation", "gcdp-nolag", 1.0))
        return;
    fprintf(f, "\n## Table 11 — ablations at ε = 1\n\n"
               "| metric | w/o Lag | w/o Comp. | w/o Utility | w/o Risk | GC-DP |\n"
               "|---|---|---|---|---|---|\n");
    for (int k = 0; k < 2; k++) {
        int col = k == 0 ? 0 : 1;
        fprintf(f, "| %s |", k == 0 ? "F1 (%)" : "attack AUC");
        for (int a = 0; a < 4; a++)
            cell(f, agg_find(T->A, "ablation", ak[a], 1.0), col, k == 0 ? 100.0 : 1.0,
                 k == 0 ? 1 : 3);
        cell(f, agg_find(T->A, "main", "gcdp", 1.0), col, k == 0 ? 100.0 : 1.0, k == 0 ? 1 : 3);
        fprintf(f, "\n");
        if (P) {
            fprintf(f, "| %s (paper) |", k == 0 ? "F1 (%)" : "attack AUC");
            for (int a = 0; a < 5; a++)
                fprintf(f, k == 0 ? " %.1f |" : " %.3f |", k == 0 ? P->abl_f1[a] : P->abl_auc[a]);
            fprintf(f, "\n");
        }
    }
}

/* Runtime rows of one pass variant (index 0: the idle child, i: eval_pass_label(i - 1)). */
struct rt_runs {
    double t[6][16], m[6][16];
    size_t cnt[6];
};

/* Read runtime.csv (our own file; a short row is refused by the count), up to 16 runs per
 * variant. */
static void read_runtime(FILE *r, struct rt_runs *R)
{
    char line[512];

    while (fgets(line, sizeof(line), r)) {
        char v[64];
        int rep;
        double s, kb;
        // NOLINTNEXTLINE(cert-err34-c)
        if (sscanf(line, "%*[^,],%63[^,],%d,%lf,%lf", v, &rep, &s, &kb) != 4)
            continue;
        for (int i = 0; i < 6; i++)
            if (strcmp(v, eval_pass_label(i - 1)) == 0 && R->cnt[i] < 16) {
                R->t[i][R->cnt[i]] = s;
                R->m[i][R->cnt[i]++] = kb;
            }
    }
}

/* Table 12: runtime and memory of one calibration-and-release pass, from runtime_csv. */
static void write_table12(FILE *f, const char *runtime_csv)
{
    struct rt_runs R = {.cnt = {0}};
    double med_t[6], med_m[6], min_t[6];
    FILE *r = fopen(runtime_csv, "r");

    if (!r)
        return;
    read_runtime(r, &R);
    fclose(r);
    fprintf(f, "\n## Table 12 — one calibration-and-release pass at ε = 1 (median of "
               "runs in forked children; memory = child peak RSS minus an idle "
               "child's, same run; shared 2-core machine)\n\n"
               "| metric | Lap-DP | Ada-DP | Risk-DP | GC-DP | GC-DP-Cache |\n"
               "|---|---|---|---|---|---|\n");
    for (int i = 0; i < 6; i++) {
        struct eval_rt_stats st;
        eval_rt_stats(R.cnt[i], R.t[i], R.m[i], &st);
        med_t[i] = st.median_s;
        min_t[i] = st.fastest_s;
        med_m[i] = st.median_kb;
    }
    fprintf(f, "| runtime, median (ms) |");
    for (int i = 1; i < 6; i++)
        fprintf(f, " %.2f |", 1e3 * med_t[i]);
    fprintf(f, "\n| runtime, fastest run (ms) |");
    for (int i = 1; i < 6; i++)
        fprintf(f, " %.2f |", 1e3 * min_t[i]);
    fprintf(f, "\n| median runtime / Lap-DP |");
    for (int i = 1; i < 6; i++)
        fprintf(f, " %.1f |", med_t[i] / med_t[1]);
    fprintf(f, "\n| peak RSS above idle child (MB) |");
    for (int i = 1; i < 6; i++)
        fprintf(f, " %.2f |", (med_m[i] - med_m[0]) / 1024.0);
    fprintf(f, "\n");
}

/* tables.md: Tables 6-12 and the Figure 3 data (Table 12 only with runtime_csv). */
static void write_tables(FILE *f, struct aggs *A, const char *runtime_csv)
{
    struct tables T = {.f = f, .A = A, .P = paper_for(A->dataset)};

    T.ne = eps_list(A, T.eps, 16);
    fprintf(f, "# gcdp eval: %s\n\n", A->dataset);
    fprintf(f, "Means ± sample standard deviations over the preserved per-draw outputs "
               "(`draws.csv`); n = draws per cell. F1 in %%, attack AUC oriented "
               "(max{AUC, 1 − AUC}). Paper values from gc-dp Tables 6–11 where the paper has "
               "this dataset.\n\n");
    write_table6(&T);
    write_table_f1(&T);
    write_table9(&T);
    write_table10(&T);
    write_figure3(&T);
    write_table11(&T);
    if (runtime_csv)
        write_table12(f, runtime_csv);
}

/* Median (upper median for even n, as Table 12 has always used) and fastest of n runs. */
void eval_rt_stats(size_t n, const double *seconds, const double *kb, struct eval_rt_stats *out)
{
    double *t = core_xmalloc((n ? n : 1) * sizeof(double));
    double *m = core_xmalloc((n ? n : 1) * sizeof(double));
    memcpy(t, seconds, n * sizeof(double));
    memcpy(m, kb, n * sizeof(double));
    for (size_t a = 1; a < n; a++)
        for (size_t b = a; b > 0 && t[b] < t[b - 1]; b--) {
            double x = t[b];
            t[b] = t[b - 1];
            t[b - 1] = x;
        }
    for (size_t a = 1; a < n; a++)
        for (size_t b = a; b > 0 && m[b] < m[b - 1]; b--) {
            double x = m[b];
            m[b] = m[b - 1];
            m[b - 1] = x;
        }
    out->n = n;
    out->median_s = n ? t[n / 2] : NAN;
    out->fastest_s = n ? t[0] : NAN;
    out->slowest_s = n ? t[n - 1] : NAN;
    out->median_kb = n ? m[n / 2] : NAN;
    free(t);
    free(m);
}

/* ------------------------------------------------------------ figures */

static void write_dat(const char *dir, struct aggs *A)
{
    char p[4200];
    double eps[16];
    size_t ne = eps_list(A, eps, 16);
    FILE *f;

    snprintf(p, sizeof(p), "%s/fig_eps.dat", dir);
    if ((f = fopen(p, "w"))) {
        fprintf(f, "# eps then per mechanism (Lap Gau Ada Risk GC-DP): f1 f1_sd auc auc_sd\n");
        for (size_t e = 0; e < ne; e++) {
            fprintf(f, "%g", eps[e]);
            for (int m = 0; m < 5; m++) {
                struct agg *g = agg_find(A, "main", mk[m], eps[e]);
                fprintf(f, " %g %g %g %g", 100 * mean(g, 0), 100 * sd(g, 0), mean(g, 1), sd(g, 1));
            }
            fprintf(f, "\n");
        }
        fclose(f);
    }
    snprintf(p, sizeof(p), "%s/fig_tau.dat", dir);
    if ((f = fopen(p, "w"))) {
        fprintf(f, "# tau test_f1 sd attack_auc sd val_f1\n");
        for (size_t i = 0; i < A->n; i++) {
            struct agg *g = &A->a[i];
            if (strcmp(g->phase, "tau_test") != 0)
                continue;
            struct agg *v = agg_get(A, "tau_val", "gcdp", 1.0, g->tau, 0);
            fprintf(f, "%g %g %g %g %g %g\n", g->tau, 100 * mean(g, 0), 100 * sd(g, 0), mean(g, 1),
                    sd(g, 1), 100 * mean(v, 0));
        }
        fclose(f);
    }
    snprintf(p, sizeof(p), "%s/fig_pareto.dat", dir);
    if ((f = fopen(p, "w"))) {
        static const char *ak[] = {"gcdp-nolag", "gcdp-nocomp", "gcdp-noutility", "gcdp-norisk"};
        static const char *an[] = {"w/o-Lag", "w/o-Comp.", "w/o-Utility", "w/o-Risk"};
        fprintf(f, "# variant f1 auc (eps = 1)\n");
        for (int a = 0; a < 4; a++) {
            struct agg *g = agg_find(A, "ablation", ak[a], 1.0);
            if (g)
                fprintf(f, "\"%s\" %g %g\n", an[a], 100 * mean(g, 0), mean(g, 1));
        }
        for (int m = 0; m < 5; m++) {
            struct agg *g = agg_find(A, "main", mk[m], 1.0);
            if (g)
                fprintf(f, "\"%s\" %g %g\n", mn[m], 100 * mean(g, 0), mean(g, 1));
        }
        fclose(f);
    }
}

static void write_gp(const char *dir, const char *ds)
{
    char p[4200];
    FILE *f;
    snprintf(p, sizeof(p), "%s/figures.gp", dir);
    if (!(f = fopen(p, "w")))
        return;
    fprintf(f,
            "# gnuplot figures.gp (run in this folder) -- made by gcdp eval\n"
            "set terminal pngcairo size 800,560 noenhanced\nset key outside right\nset grid\n"
            "set logscale x 2\nset xlabel 'epsilon_rel'\n"
            "set output 'fig2_f1_vs_eps.png'\nset ylabel 'task F1 (%%)'\n"
            "set title '%s: task F1 vs release budget (mean +- sd over draws; cf. gc-dp Fig. 2)'\n"
            "plot for [m=0:4] 'fig_eps.dat' using 1:(column(2+4*m)):(column(3+4*m)) "
            "with yerrorlines title word('Lap-DP Gau-DP Ada-DP Risk-DP GC-DP', m+1)\n"
            "set output 'fig4_auc_vs_eps.png'\nset ylabel 'oriented attack AUC'\n"
            "set title '%s: attack AUC vs release budget (cf. gc-dp Fig. 4)'\n"
            "plot for [m=0:4] 'fig_eps.dat' using 1:(column(4+4*m)):(column(5+4*m)) "
            "with yerrorlines title word('Lap-DP Gau-DP Ada-DP Risk-DP GC-DP', m+1)\n"
            "unset logscale x\nset xlabel 'tau'\n"
            "set output 'fig5_tau.png'\nset ylabel 'F1 (%%)'\nset y2label 'oriented attack AUC'\n"
            "set ytics nomirror\nset y2tics\n"
            "set title '%s: GC-DP at eps = 1 vs tau (cf. gc-dp Fig. 5)'\n"
            "plot 'fig_tau.dat' using 1:2:3 with yerrorlines title 'test F1', "
            "'fig_tau.dat' using 1:6 with linespoints title 'validation F1 (selection)', "
            "'fig_tau.dat' using 1:4:5 axes x1y2 with yerrorlines title 'attack AUC'\n"
            "unset y2tics\nunset y2label\nset ytics mirror\n"
            "set output 'fig6_pareto.png'\nset xlabel 'oriented attack AUC'\n"
            "set ylabel 'task F1 (%%)'\n"
            "set title '%s: F1 vs attack AUC at eps = 1 (cf. gc-dp Fig. 6)'\n"
            "plot 'fig_pareto.dat' using 3:2 with points pt 7 notitle, "
            "'' using 3:2:1 with labels offset 1,0.6 left notitle\n",
            ds, ds, ds, ds);
    fclose(f);
}

core_err eval_tables_from_csv(const char *csv_path, const char *md_path, char *eb, size_t ebn)
{
    struct aggs A = {0};
    char rt[4200];
    const char *slash = strrchr(csv_path, '/');
    FILE *f;
    core_err rc = read_csv(csv_path, &A, eb, ebn);

    if (rc != CORE_OK) {
        free(A.a);
        return rc;
    }
    if (slash)
        snprintf(rt, sizeof(rt), "%.*s/runtime.csv", (int)(slash - csv_path), csv_path);
    else
        snprintf(rt, sizeof(rt), "runtime.csv");
    if (!(f = fopen(md_path, "w"))) {
        snprintf(eb, ebn, "%s: %s", md_path, strerror(errno));
        free(A.a);
        return CORE_EIO;
    }
    write_tables(f, &A, rt);
    if (fclose(f) != 0)
        rc = CORE_EIO;
    free(A.a);
    return rc;
}

core_err eval_write_report(const char *dir, const struct eval_opts *o, char *eb, size_t ebn)
{
    char csv[4200], md[4200], cmd[8600];
    struct aggs A = {0};
    core_err rc;

    snprintf(csv, sizeof(csv), "%s/draws.csv", dir);
    snprintf(md, sizeof(md), "%s/tables.md", dir);
    if ((rc = eval_tables_from_csv(csv, md, eb, ebn)) != CORE_OK)
        return rc;
    if (!o->plots)
        return CORE_OK;
    if ((rc = read_csv(csv, &A, eb, ebn)) != CORE_OK) {
        free(A.a);
        return rc;
    }
    write_dat(dir, &A);
    write_gp(dir, A.dataset);
    free(A.a);
    snprintf(cmd, sizeof(cmd), "cd '%s' && gnuplot figures.gp 2>gnuplot.log", dir);
    if (system("command -v gnuplot >/dev/null 2>&1") == 0 && system(cmd) != 0 && !o->quiet)
        fprintf(stderr, "eval: gnuplot failed (see %s/gnuplot.log); tables are written\n", dir);
    return CORE_OK;
}
