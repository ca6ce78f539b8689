/* run.c - the evaluation harness (gc-dp Sec. 5): calibration on the training portion
 * (public-calibration mode), τ selection by validation F1 at ε = 1, the mechanism x ε x draw
 * sweep, Table 11 ablations, Table 12 runtime/memory; per-draw CSV, then tables and figures
 * recomputed from that CSV (report.c). Progress on stderr. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>
#include <jansson.h>

#include "cal/calibrate.h"
#include "cal/matrix.h"
#include "core/mem.h"
#include "core/prng.h"
#include "eval/eval.h"
#include "eval_int.h"

void eval_opts_default(struct eval_opts *o)
{
    static const double eps[] = {0.2, 0.5, 1.0, 2.0, 4.0};
    static const double tau[] = {0.10, 0.15, 0.20, 0.25, 0.30};
    memset(o, 0, sizeof(*o));
    o->dataset = "occupancy";
    o->data_dir = NULL;
    o->out_dir = "bench/results/eval";
    o->n_eps = 5;
    memcpy(o->eps, eps, sizeof(eps));
    o->draws = 10;
    o->tune_draws = 5;
    o->seed = 20261201;
    o->delta = 1e-6;
    o->n_tau = 5;
    memcpy(o->tau_grid, tau, sizeof(tau));
    o->ablations = o->runtime = o->plots = o->tau_sweep = true;
    o->expo = EVAL_EXPO_MINMAX;
    o->window_ms = 900000;
    o->sensor = "accel";
    {
        static const size_t ms[] = {8, 16, 32, 64, 128, 256, 512};
        o->n_scale_m = sizeof(ms) / sizeof(ms[0]);
        memcpy(o->scale_m, ms, sizeof(ms));
    }
    o->scale_windows = 2000;
    o->scale_reps = 9; /* as Table 12 */
}

double eval_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seed of one draw: disjoint streams per phase (tuning draws never share a seed with a
 * reported draw). */
uint64_t eval_draw_seed(uint64_t base, int phase, int mech, size_t eps_i, size_t tau_i, int draw)
{
    uint64_t st = base ^ ((uint64_t)phase << 56) ^ ((uint64_t)mech << 48) ^
                  ((uint64_t)eps_i << 40) ^ ((uint64_t)tau_i << 32) ^ (uint64_t)draw;
    return core_splitmix64(&st);
}

struct progress {
    const char *name;
    size_t done, total;
    double t0, last;
    bool quiet;
};

static void progress_tick(struct progress *p, size_t add)
{
    double now = eval_now();
    p->done += add;
    if (p->quiet || (now - p->last < 1.0 && p->done < p->total))
        return;
    p->last = now;
    double el = now - p->t0;
    double rem = p->done ? el * (double)(p->total - p->done) / (double)p->done : 0.0;
    fprintf(stderr, "eval %s: settings %zu/%zu, elapsed %.1f s, remaining ~%.1f s\n", p->name,
            p->done, p->total, el, rem);
}

/* Calibration on the training windows (public calibration: calibration data = training
 * portion). */
/* o->eps_cal > 0: private calibration (Sec. 4.2) with ε_G = ε_μ = ε_ξ = ε_cal / 3, τ fixed
 * (ε_τ = 0), calibration noise from a ChaCha20 stream of its own (phase tag 7). */
static core_err calibrate_train(const struct eval_opts *eo, const struct eval_data *ds,
                                const size_t *tr, size_t ntr, double tau, int L, double tau_c,
                                struct cal_theta **out, struct cal_report *rep, char *eb,
                                size_t ebn)
{
    enum eval_xi xr = eo->xi;
    struct eval_rng *crng = NULL;
    struct cal_matrix *mx = NULL;
    struct cal_opts o;
    double *x = core_xmalloc(ntr * ds->d * sizeof(double));
    int *y = core_xmalloc(ntr * sizeof(int));
    json_t *nd = json_pack("[ff]", 0.0, 1.0); /* windows are already normalized to [0,1] */
    core_err rc;

    for (size_t i = 0; i < ntr; i++) {
        memcpy(x + i * ds->d, ds->x + tr[i] * ds->d, ds->d * sizeof(double));
        y[i] = ds->y[tr[i]];
    }
    rc = cal_matrix_from_arrays(ntr, ds->d, x, (const char *const *)ds->names, y, ds->n_classes,
                                &mx);
    cal_opts_default(&o);
    o.task = CAL_TASK_CLASSIFY;
    o.tau = tau;
    o.tau_from_grid = false;
    o.L = L;
    o.tau_c = tau_c;
    o.threads = 1;
    o.norm_default = nd;
    o.version = 1;
    snprintf(o.config_version, sizeof(o.config_version), "eval");
    if (eo->eps_cal > 0.0) {
        o.mode = CAL_MODE_PRIVATE;
        o.eps.G = o.eps.mu = o.eps.xi = eo->eps_cal / 3.0;
        o.eps.tau = 0.0;
        crng = eval_rng_new(
            eval_draw_seed(eo->seed, 7, L, (size_t)(tau_c * 100.0), (size_t)(tau * 100.0), 0));
    }
    if (rc == CORE_OK)
        rc = cal_calibrate(mx, &o, crng ? eval_rng_iface(crng) : NULL, out, rep, eb, ebn);
    eval_rng_free(crng);
    if (rc == CORE_OK && xr == EVAL_XI_NEIGHBOUR) {
        rc = eval_xi_neighbour(*out, ntr, x, o.mask_value, (*out)->xi_hat);
        if (rc != CORE_OK) {
            snprintf(eb, ebn, "eval: neighbour-reading xi failed");
            cal_theta_free(*out);
            *out = NULL;
        }
    }
    cal_matrix_free(mx);
    json_decref(nd);
    free(x);
    free(y);
    return rc;
}

struct ctx {
    const struct eval_opts *o;
    const struct eval_data *ds;
    size_t *rows[3], nrows[3];
    double *xr;
    FILE *csv, *alloc_csv;
    struct progress pg;
};

/* One draw: release every window, score (train -> eval split). */
static core_err one_draw(struct ctx *c, const struct eval_plan *pl, uint64_t seed,
                         enum eval_split on, struct eval_scores *sc, char *eb, size_t ebn)
{
    struct eval_rng *r = eval_rng_new(seed);
    core_err rc;
    if (!r) {
        snprintf(eb, ebn, "libsodium init failed");
        return CORE_ERNG;
    }
    rc = eval_release_rows(pl, eval_rng_iface(r), c->ds->n, c->ds->x, c->xr);
    eval_rng_free(r);
    if (rc != CORE_OK) {
        snprintf(eb, ebn, "release failed: %s", core_strerror(rc));
        return rc;
    }
    rc = eval_score(c->ds, c->xr, c->rows[EVAL_TRAIN], c->nrows[EVAL_TRAIN], c->rows[on],
                    c->nrows[on], sc);
    if (rc != CORE_OK)
        snprintf(eb, ebn, "classifier failed: %s", core_strerror(rc));
    return rc;
}

static void csv_row(struct ctx *c, const char *phase, enum eval_mech m, double eps, double tau,
                    int draw, uint64_t seed, enum eval_split on, const struct eval_scores *s)
{
    fprintf(c->csv, "%s,%s,%s,%.3g,%.2f,%s,%d,%llu,%s,%.6f,%.6f,%.6f,%.6f,%.6f\n", c->ds->name,
            phase, eval_mech_key(m), eps, tau,
            c->o->expo == EVAL_EXPO_MINMAX
                ? (c->o->xi == EVAL_XI_LITERAL ? "minmax/literal" : "minmax/neighbour")
                : (c->o->xi == EVAL_XI_LITERAL ? "maxnorm/literal" : "maxnorm/neighbour"),
            draw, (unsigned long long)seed, on == EVAL_VAL ? "val" : "test", s->task_f1,
            s->attack_auc, s->attack_auc_raw, s->attack_f1, s->mae);
}

static void alloc_rows(struct ctx *c, const struct eval_plan *pl, const struct cal_theta *t)
{
    double r[EVAL_MAX_NODES] = {0};
    if (t)
        eval_exposure(t, c->o->expo, r);
    for (size_t k = 0; k < pl->d; k++)
        fprintf(c->alloc_csv, "%s,%s,%.3g,%.2f,%s,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g\n", c->ds->name,
                eval_mech_key(pl->mech), pl->eps_rel, t ? t->tau : 0.0, c->ds->names[k], pl->B[k],
                pl->s[k], pl->eps[k], t ? t->xi_hat[k] : 0.0, t ? t->mu[k] : 0.0, r[k]);
}

/* Draws of one (mechanism, θ, ε) setting. */
static core_err run_setting(struct ctx *c, const char *phase, int phase_id, enum eval_mech m,
                            const struct cal_theta *t, size_t eps_i, double eps, size_t tau_i,
                            int draws, enum eval_split on, double *mean_f1, char *eb, size_t ebn)
{
    struct eval_plan pl;
    double sum = 0.0;
    core_err rc = eval_plan_make(m, t, c->ds->d, c->ds->stat, &c->ds->query, eps, c->o->delta,
                                 c->o->expo, &pl, eb, ebn);
    if (rc != CORE_OK)
        return rc;
    if (strcmp(phase, "main") == 0 || strcmp(phase, "ablation") == 0)
        alloc_rows(c, &pl, t);
    for (int dr = 0; dr < draws && rc == CORE_OK; dr++) {
        struct eval_scores sc;
        uint64_t seed = eval_draw_seed(c->o->seed, phase_id, (int)m, eps_i, tau_i, dr);
        rc = one_draw(c, &pl, seed, on, &sc, eb, ebn);
        if (rc == CORE_OK) {
            csv_row(c, phase, m, eps, t ? t->tau : 0.0, dr, seed, on, &sc);
            sum += sc.task_f1;
            progress_tick(&c->pg, 1);
        }
    }
    if (mean_f1)
        *mean_f1 = sum / (double)(draws > 0 ? draws : 1);
    return rc;
}

static size_t eps_index_of(const struct eval_opts *o, double e)
{
    for (size_t i = 0; i < o->n_eps; i++)
        if (fabs(o->eps[i] - e) < 1e-12)
            return i;
    return o->n_eps;
}

/* Table 12 variants of one calibration-and-release pass, index v of eval_pass_label. */
static const enum eval_mech pass_mech[EVAL_N_PASS] = {EVAL_M_LAP, EVAL_M_ADA, EVAL_M_RISK,
                                                      EVAL_M_GCDP, EVAL_M_GCDP};

const char *eval_pass_label(int v)
{
    static const char *labels[EVAL_N_PASS] = {"Lap-DP", "Ada-DP", "Risk-DP", "GC-DP",
                                              "GC-DP-Cache"};
    return v >= 0 && v < EVAL_N_PASS ? labels[v] : "baseline";
}

/* One pass of variant v (-1: an idle child, the memory baseline) in a forked child:
 * calibration on the training rows when the mechanism needs θ (not Lap-DP, not the cached
 * variant, which reuses `cached`), plan, release of the test rows. out = {wall seconds,
 * child peak RSS kB}. Returns 0 on success. */
static int pass_in_child(const struct eval_opts *o, const struct eval_data *ds, const size_t *tr,
                         size_t ntr, const size_t *te, size_t nte, double tau,
                         const struct cal_theta *cached, int v, int rep, double out[2])
{
    int pfd[2], st = 0;
    ssize_t got;
    pid_t pid;

    if (pipe(pfd) != 0)
        return -1;
    pid = fork();
    if (pid == 0) {
        double t0 = eval_now(), res[2] = {0, 0};
        struct rusage ru;
        char eb[256];
        close(pfd[0]);
        if (v >= 0) {
            struct cal_theta *t = NULL;
            struct eval_plan pl;
            struct eval_rng *r = eval_rng_new(o->seed + (uint64_t)rep);
            double *xt = core_xmalloc(nte * ds->d * sizeof(double));
            int needs = pass_mech[v] != EVAL_M_LAP && v != EVAL_N_PASS - 1;
            for (size_t i = 0; i < nte; i++)
                memcpy(xt + i * ds->d, ds->x + te[i] * ds->d, ds->d * sizeof(double));
            if (needs &&
                calibrate_train(o, ds, tr, ntr, tau, 3, 0.85, &t, NULL, eb, sizeof(eb)) != CORE_OK)
                _exit(3);
            if (eval_plan_make(pass_mech[v], v == EVAL_N_PASS - 1 ? cached : t, ds->d, ds->stat,
                               &ds->query, 1.0, o->delta, o->expo, &pl, eb,
                               sizeof(eb)) != CORE_OK ||
                eval_release_rows(&pl, eval_rng_iface(r), nte, xt, xt) != CORE_OK)
                _exit(4);
            cal_theta_free(t);
            eval_rng_free(r);
            free(xt);
        }
        res[0] = eval_now() - t0;
        getrusage(RUSAGE_SELF, &ru);
        res[1] = (double)ru.ru_maxrss;
        if (write(pfd[1], res, sizeof(res)) != (ssize_t)sizeof(res))
            _exit(5);
        _exit(0);
    }
    close(pfd[1]);
    if (pid < 0) {
        close(pfd[0]);
        return -1;
    }
    got = read(pfd[0], out, 2 * sizeof(double));
    waitpid(pid, &st, 0);
    close(pfd[0]);
    return got == (ssize_t)(2 * sizeof(double)) && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Table 12 (and Figure 7): `reps` rounds of the idle child and the five pass variants,
 * interleaved (round-robin) so that load changes on a shared machine hit every variant
 * alike. θ for the cached variant is calibrated once here, outside the timed children. */
core_err eval_runtime_passes(const struct eval_opts *o, const struct eval_data *ds, double tau,
                             int reps, struct eval_pass_run *runs, size_t *n_runs, char *eb,
                             size_t ebn)
{
    size_t ntr = 0, nte = 0;
    size_t *tr = eval_split_rows(ds, EVAL_TRAIN, &ntr), *te = eval_split_rows(ds, EVAL_TEST, &nte);
    struct cal_theta *cached = NULL;
    core_err rc = CORE_OK;

    *n_runs = 0;
    if (ntr < 4 || nte < 1) {
        snprintf(eb, ebn, "eval: runtime passes need >= 4 training and >= 1 test windows");
        rc = CORE_EINVAL;
    }
    if (rc == CORE_OK)
        rc = calibrate_train(o, ds, tr, ntr, tau, 3, 0.85, &cached, NULL, eb, ebn);
    for (int rep = 0; rep < reps && rc == CORE_OK; rep++)
        for (int v = -1; v < EVAL_N_PASS; v++) {
            double out[2];
            if (pass_in_child(o, ds, tr, ntr, te, nte, tau, cached, v, rep, out) != 0)
                continue; /* a failed child is left out, not counted */
            runs[*n_runs] = (struct eval_pass_run){v, rep, out[0], out[1]};
            (*n_runs)++;
        }
    if (rc == CORE_OK && *n_runs == 0) {
        snprintf(eb, ebn, "eval: every runtime pass failed");
        rc = CORE_EINVARIANT;
    }
    cal_theta_free(cached);
    free(tr);
    free(te);
    return rc;
}

/* Table 12 raw runs -> path (runtime.csv). */
static void runtime_table(struct ctx *c, double tau, const char *path)
{
    int reps = 9;
    struct eval_pass_run *runs = core_xmalloc((size_t)reps * (EVAL_N_PASS + 1) * sizeof(*runs));
    size_t n = 0;
    char eb[256];
    FILE *f;

    if (eval_runtime_passes(c->o, c->ds, tau, reps, runs, &n, eb, sizeof(eb)) == CORE_OK &&
        (f = fopen(path, "w"))) {
        fprintf(f, "dataset,variant,rep,seconds,peak_rss_kb,baseline_rss_kb\n");
        for (size_t i = 0; i < n; i++)
            fprintf(f, "%s,%s,%d,%.6f,%.0f,\n", c->ds->name, eval_pass_label(runs[i].variant),
                    runs[i].rep, runs[i].seconds, runs[i].peak_rss_kb);
        fclose(f);
    }
    free(runs);
}

core_err eval_run(const struct eval_opts *o, char *eb, size_t ebn)
{
    struct eval_data ds;
    char **dropped = NULL;
    size_t n_dropped = 0;
    core_err rc;

    if (strcmp(o->dataset, "occupancy") == 0)
        rc = eval_load_occupancy(o->data_dir, o->window_ms, &ds, eb, ebn);
    else if (strcmp(o->dataset, "wisdm") == 0)
        rc = eval_load_wisdm(o->data_dir, o->sensor ? o->sensor : "accel", &ds, &dropped,
                             &n_dropped, eb, ebn);
    else if (strcmp(o->dataset, "smoke") == 0)
        rc = eval_load_smoke(o->seed, &ds, eb, ebn);
    else if (strcmp(o->dataset, "sim") == 0)
        rc = eval_load_sim(&ds, eb, ebn);
    else if (strcmp(o->dataset, "csv") == 0)
        rc = eval_load_csv(o->data_dir, &ds, eb, ebn);
    else {
        snprintf(eb, ebn, "eval: unknown dataset '%s' (occupancy|wisdm|sim|csv|smoke)", o->dataset);
        return CORE_ECONFIG;
    }
    if (rc != CORE_OK)
        return rc;
    rc = eval_run_data(o, &ds, (const char *const *)dropped, n_dropped, eb, ebn);
    for (size_t i = 0; i < n_dropped; i++)
        free(dropped[i]);
    free(dropped);
    eval_data_free(&ds);
    return rc;
}

/* The calibrations of one run and the τ chosen among them. */
struct sweep {
    struct cal_theta *theta[8];             /* θ per τ of the grid */
    struct cal_theta *th_nolag, *th_nocomp; /* Table 11 ablations */
    size_t sel;                             /* index of the selected τ */
    double best;                            /* its mean validation F1 */
    size_t e1;                              /* index of ε = 1 in the eps list */
};

/* Refuse options the protocol cannot run; one BLAS thread. */
static core_err check_run_opts(const struct eval_opts *o, char *eb, size_t ebn)
{
    if (o->eps_cal > 0.0 && (o->xi != EVAL_XI_LITERAL || o->n_tau != 1)) {
        snprintf(eb, ebn,
                 "eval: --eps-cal (private calibration) needs --xi literal and a "
                 "single fixed tau (--tau-grid T): the tau search and the neighbour reading "
                 "would read the protected records again");
        return CORE_ECONFIG;
    }
    /* small dense products: one BLAS thread is faster than two on a shared 2-core machine
     * (measured: docs/evaluation.md) */
    openblas_set_num_threads(1);
    if (o->n_tau == 0 || o->n_tau > 8 || o->n_eps == 0 || o->draws < 1 || o->tune_draws < 1) {
        snprintf(eb, ebn, "eval: empty tau grid, eps list or draws");
        return CORE_ECONFIG;
    }
    return CORE_OK;
}

/* Split rows, the release buffer, the results folder dir with draws.csv and alloc.csv (headers
 * written) and the progress meter. */
static core_err setup_ctx(struct ctx *c, const char *dir, double t_start, char *eb, size_t ebn)
{
    const struct eval_opts *o = c->o;
    const struct eval_data *ds = c->ds;
    char path[4200];

    for (int s = 0; s < 3; s++)
        c->rows[s] = eval_split_rows(ds, (enum eval_split)s, &c->nrows[s]);
    if (c->nrows[0] < 4 || c->nrows[1] < 2 || c->nrows[2] < 2) {
        snprintf(eb, ebn, "eval: too few windows (train %zu, val %zu, test %zu)", c->nrows[0],
                 c->nrows[1], c->nrows[2]);
        return CORE_EINVAL;
    }
    c->xr = core_xmalloc(ds->n * ds->d * sizeof(double));
    if (eval_mkdirs(dir) != 0) {
        snprintf(eb, ebn, "eval: cannot create %s: %s", dir, strerror(errno));
        return CORE_EIO;
    }
    snprintf(path, sizeof(path), "%s/draws.csv", dir);
    c->csv = fopen(path, "w");
    snprintf(path, sizeof(path), "%s/alloc.csv", dir);
    c->alloc_csv = fopen(path, "w");
    if (!c->csv || !c->alloc_csv) {
        snprintf(eb, ebn, "eval: cannot write in %s", dir);
        return CORE_EIO;
    }
    fprintf(c->csv, "%s\n", EVAL_CSV_HEADER);
    fprintf(c->alloc_csv, "dataset,mechanism,eps,tau,node,B,s,eps_k,xi_hat,mu,exposure\n");
    c->pg.name = ds->name;
    c->pg.quiet = o->quiet;
    c->pg.t0 = t_start;
    c->pg.total = o->n_tau * (size_t)(o->tune_draws + (o->tau_sweep ? o->draws : 0)) +
                  o->n_eps * (size_t)(5 * o->draws + 1) +
                  (o->ablations ? (size_t)(4 * o->draws) : 0);
    return CORE_OK;
}

/* θ per τ of the grid (public calibration on the training windows), then τ selection (Table 6
 * rule): mean validation F1 of GC-DP at ε = 1 over tuning draws; ties to the smaller τ (grid
 * is ascending, strict > keeps the first). */
static core_err tune_tau(struct ctx *c, struct sweep *S, char *eb, size_t ebn)
{
    const struct eval_opts *o = c->o;
    core_err rc = CORE_OK;

    for (size_t i = 0; i < o->n_tau && rc == CORE_OK; i++)
        rc = calibrate_train(o, c->ds, c->rows[EVAL_TRAIN], c->nrows[EVAL_TRAIN], o->tau_grid[i], 3,
                             0.85, &S->theta[i], NULL, eb, ebn);
    for (size_t i = 0; i < o->n_tau && rc == CORE_OK; i++) {
        double f1 = 0.0;
        rc = run_setting(c, "tau_val", 1, EVAL_M_GCDP, S->theta[i], S->e1, 1.0, i, o->tune_draws,
                         EVAL_VAL, &f1, eb, ebn);
        if (rc == CORE_OK && f1 > S->best) {
            S->best = f1;
            S->sel = i;
        }
    }
    return rc;
}

/* The τ sweep on the test split (Table 6) and the main sweep: every mechanism at every ε
 * with the selected θ. */
static core_err test_sweeps(struct ctx *c, const struct sweep *S, char *eb, size_t ebn)
{
    const struct eval_opts *o = c->o;
    core_err rc = CORE_OK;

    for (size_t i = 0; o->tau_sweep && i < o->n_tau && rc == CORE_OK; i++)
        rc = run_setting(c, "tau_test", 2, EVAL_M_GCDP, S->theta[i], S->e1, 1.0, i, o->draws,
                         EVAL_TEST, NULL, eb, ebn);
    for (size_t ei = 0; ei < o->n_eps && rc == CORE_OK; ei++) {
        for (int m = EVAL_M_NONPRIVATE; m <= EVAL_M_GCDP && rc == CORE_OK; m++)
            rc = run_setting(c, "main", 3, (enum eval_mech)m, S->theta[S->sel], ei, o->eps[ei],
                             S->sel, m == EVAL_M_NONPRIVATE ? 1 : o->draws, EVAL_TEST, NULL, eb,
                             ebn);
    }
    return rc;
}

/* Table 11 ablations at ε = 1 (GC-DP itself is the main sweep's ε = 1 row). */
static core_err run_ablations(struct ctx *c, struct sweep *S, char *eb, size_t ebn)
{
    const struct eval_opts *o = c->o;
    double tau = o->tau_grid[S->sel];
    size_t sel = S->sel, e1 = S->e1;
    core_err rc;

    rc = calibrate_train(o, c->ds, c->rows[EVAL_TRAIN], c->nrows[EVAL_TRAIN], tau, 0, 0.85,
                         &S->th_nolag, NULL, eb, ebn);
    if (rc == CORE_OK)
        rc = calibrate_train(o, c->ds, c->rows[EVAL_TRAIN], c->nrows[EVAL_TRAIN], tau, 3, 1.0,
                             &S->th_nocomp, NULL, eb, ebn);
    if (rc == CORE_OK)
        rc = run_setting(c, "ablation", 4, EVAL_M_NOLAG, S->th_nolag, e1, 1.0, sel, o->draws,
                         EVAL_TEST, NULL, eb, ebn);
    if (rc == CORE_OK)
        rc = run_setting(c, "ablation", 4, EVAL_M_NOCOMP, S->th_nocomp, e1, 1.0, sel, o->draws,
                         EVAL_TEST, NULL, eb, ebn);
    if (rc == CORE_OK)
        rc = run_setting(c, "ablation", 4, EVAL_M_NOUTILITY, S->theta[sel], e1, 1.0, sel, o->draws,
                         EVAL_TEST, NULL, eb, ebn);
    if (rc == CORE_OK)
        rc = run_setting(c, "ablation", 4, EVAL_M_NORISK, S->theta[sel], e1, 1.0, sel, o->draws,
                         EVAL_TEST, NULL, eb, ebn);
    return rc;
}

/* run.txt: the dataset's splits and descriptions, the selected τ, the readings and seeds. */
static void write_run_txt(FILE *f, const struct ctx *c, const struct sweep *S,
                          const char *const *dropped, size_t n_dropped, double t_start)
{
    const struct eval_opts *o = c->o;
    const struct eval_data *ds = c->ds;

    fprintf(f, "dataset: %s\nwindows: train %zu, validation %zu, test %zu; nodes %zu\n", ds->name,
            c->nrows[0], c->nrows[1], c->nrows[2], ds->d);
    for (int sp = 0; sp < 3; sp++) {
        size_t pos = 0, att = 0;
        for (size_t i = 0; i < c->nrows[sp]; i++) {
            pos += ds->y[c->rows[sp][i]] == 1;
            att += ds->attr[c->rows[sp][i]] == 1;
        }
        fprintf(f, "%s: %zu windows, task class 1: %zu, protected attribute 1: %zu\n",
                sp == 0   ? "train"
                : sp == 1 ? "validation"
                          : "test",
                c->nrows[sp], pos, att);
    }
    fprintf(f, "task: %s\nprotected attribute: %s\nprotected unit: %s\n", ds->task_desc,
            ds->attr_desc, ds->unit_desc);
    fprintf(f, "selected tau: %.2f (validation F1 %.4f over %d tuning draws)\n",
            o->tau_grid[S->sel], S->best, o->tune_draws);
    if (o->eps_cal > 0.0)
        fprintf(f,
                "calibration: PRIVATE (gc-dp Sec. 4.2), eps_cal = %g (eps_G = eps_mu = "
                "eps_xi = %g, tau fixed); total cost per window eps_cal + eps_rel\n",
                o->eps_cal, o->eps_cal / 3.0);
    else
        fprintf(f, "calibration: public (training split assumed public; eps_cal = 0)\n");
    fprintf(f, "xi reading: %s\n", eval_xi_name(o->xi));
    fprintf(f, "exposure reading: %s\nGau-DP delta: %g\nbase seed: %llu\n", eval_expo_name(o->expo),
            o->delta, (unsigned long long)o->seed);
    for (size_t i = 0; i < n_dropped; i++)
        fprintf(f, "dropped duplicate file: %s\n", dropped[i]);
    fprintf(f, "protocol wall time: %.1f s\n", eval_now() - t_start);
}

/* After the sweeps: theta.json of the selected τ, runtime.csv (--runtime), run.txt and the
 * report. */
static core_err write_results(struct ctx *c, const struct sweep *S, const char *dir,
                              const char *const *dropped, size_t n_dropped, double t_start,
                              char *eb, size_t ebn)
{
    const struct eval_opts *o = c->o;
    char path[4200];
    FILE *f;

    snprintf(path, sizeof(path), "%s/theta.json", dir);
    if (cal_theta_save_file(S->theta[S->sel], path, eb, ebn) != CORE_OK)
        eb[0] = '\0';
    if (o->runtime) {
        snprintf(path, sizeof(path), "%s/runtime.csv", dir);
        runtime_table(c, o->tau_grid[S->sel], path);
    }
    snprintf(path, sizeof(path), "%s/run.txt", dir);
    if ((f = fopen(path, "w"))) {
        write_run_txt(f, c, S, dropped, n_dropped, t_start);
        fclose(f);
    }
    return eval_write_report(dir, o, eb, ebn);
}

/* Closes the CSV files (NULL-safe); frees rows, buffer and every θ. */
static void run_cleanup(struct ctx *c, struct sweep *S)
{
    if (c->csv)
        fclose(c->csv);
    if (c->alloc_csv)
        fclose(c->alloc_csv);
    c->csv = c->alloc_csv = NULL;
    for (size_t i = 0; i < 8; i++)
        cal_theta_free(S->theta[i]);
    cal_theta_free(S->th_nolag);
    cal_theta_free(S->th_nocomp);
    for (int s = 0; s < 3; s++)
        free(c->rows[s]);
    free(c->xr);
}

core_err eval_run_data(const struct eval_opts *o, const struct eval_data *dsp,
                       const char *const *dropped, size_t n_dropped, char *eb, size_t ebn)
{
    const struct eval_data ds = *dsp;
    struct ctx c;
    struct sweep S = {.best = -1.0};
    char dir[4096];
    double t_start = eval_now();
    core_err rc;

    memset(&c, 0, sizeof(c));
    if ((rc = check_run_opts(o, eb, ebn)) != CORE_OK)
        return rc;
    c.o = o;
    c.ds = &ds;
    snprintf(dir, sizeof(dir), "%s/%s", o->out_dir, ds.name);
    if ((rc = setup_ctx(&c, dir, t_start, eb, ebn)) != CORE_OK)
        goto out;
    S.e1 = eps_index_of(o, 1.0);
    rc = tune_tau(&c, &S, eb, ebn);
    if (rc == CORE_OK)
        rc = test_sweeps(&c, &S, eb, ebn);
    if (rc == CORE_OK && o->ablations)
        rc = run_ablations(&c, &S, eb, ebn);
    fclose(c.csv);
    fclose(c.alloc_csv);
    c.csv = c.alloc_csv = NULL;
    if (rc == CORE_OK)
        rc = write_results(&c, &S, dir, dropped, n_dropped, t_start, eb, ebn);
    if (!o->quiet)
        fprintf(stderr, "eval %s: done in %.1f s; results in %s\n", ds.name, eval_now() - t_start,
                dir);
out:
    run_cleanup(&c, &S);
    return rc;
}
