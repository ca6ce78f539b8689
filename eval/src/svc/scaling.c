/* scaling.c - gc-dp Figure 7: runtime of one calibration-and-release pass versus the number
 * of nodes M (§5.4: "Figure 7 shows the measured scaling trend as M increases ...
 * calibration dominates cost and cached release reduces it across all tested graph sizes").
 * The passes are measured by the Table 12 code (eval_runtime_passes, run.c) on synthetic
 * windows of each M (eval_load_synth); the summary is recomputed from the raw runs. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "cal/calibrate.h"
#include "core/mem.h"
#include "eval_int.h"

#define RUNS_HEADER "M,n_cal,n_release,variant,rep,seconds,peak_rss_kb"

static void loadavg(char *out, size_t n)
{
    FILE *f = fopen("/proc/loadavg", "r");
    out[0] = '\0';
    if (f) {
        if (fgets(out, (int)n, f))
            out[strcspn(out, "\n")] = '\0';
        fclose(f);
    }
    if (!out[0])
        snprintf(out, n, "unknown");
}

/* One measured point: runs of one (M, variant). */
struct pt {
    size_t m, n_cal, n_rel;
    int variant; /* -1 idle child */
    size_t n, cap;
    double *t, *kb;
};

static struct pt *pt_get(struct pt **P, size_t *np, size_t m, int v)
{
    for (size_t i = 0; i < *np; i++)
        if ((*P)[i].m == m && (*P)[i].variant == v)
            return &(*P)[i];
    *P = core_xrealloc(*P, (*np + 1) * sizeof(**P));
    struct pt *p = &(*P)[(*np)++];
    memset(p, 0, sizeof(*p));
    p->m = m;
    p->variant = v;
    return p;
}

static int variant_of(const char *s)
{
    for (int v = -1; v < EVAL_N_PASS; v++)
        if (strcmp(s, eval_pass_label(v)) == 0)
            return v;
    return -2;
}

/* The runs of runs.csv grouped by (M, variant), and the sizes M seen (up to 64). */
struct points {
    struct pt *P;
    size_t np;
    size_t ms[64], nm;
};

/* Add one run of size m, variant var to its point. */
static void add_run(struct points *R, size_t m, size_t nc, size_t nr, int var, double s, double kb)
{
    struct pt *p = pt_get(&R->P, &R->np, m, var);
    int seen = 0;

    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 8;
        p->t = core_xrealloc(p->t, p->cap * sizeof(double));
        p->kb = core_xrealloc(p->kb, p->cap * sizeof(double));
    }
    p->n_cal = nc;
    p->n_rel = nr;
    p->t[p->n] = s;
    p->kb[p->n++] = kb;
    for (size_t i = 0; i < R->nm; i++)
        seen |= R->ms[i] == m;
    if (!seen && R->nm < 64)
        R->ms[R->nm++] = m;
}

/* Read runs.csv (path, open as f): the header line, then one run per line. */
static core_err read_runs(FILE *f, const char *path, struct points *R, char *eb, size_t ebn)
{
    char line[512];
    size_t ln = 0;

    while (fgets(line, sizeof(line), f)) {
        char v[64];
        size_t m, nc, nr;
        int rep, var;
        double s, kb;
        ln++;
        if (ln == 1) {
            if (strncmp(line, RUNS_HEADER, strlen(RUNS_HEADER)) != 0) {
                snprintf(eb, ebn, "%s:1: not a Figure 7 runs.csv header", path);
                return CORE_EPARSE;
            }
            continue;
        }
        /* Our own runs.csv (written by this program); a short row is refused by the count. */
        // NOLINTNEXTLINE(cert-err34-c)
        if (sscanf(line, "%zu,%zu,%zu,%63[^,],%d,%lf,%lf", &m, &nc, &nr, v, &rep, &s, &kb) != 7 ||
            (var = variant_of(v)) < -1) {
            snprintf(eb, ebn, "%s:%zu: malformed run", path, ln);
            return CORE_EPARSE;
        }
        add_run(R, m, nc, nr, var, s, kb);
    }
    return CORE_OK;
}

/* The three summaries of a Figure 7 folder. */
struct fig7_out {
    FILE *csv, *md, *dat;
};

/* Open dir/figure7.{csv,md,dat} for writing and write their headers. */
static core_err open_fig7(const char *dir, struct fig7_out *out, char *eb, size_t ebn)
{
    static const char *const ext[] = {"csv", "md", "dat"};
    FILE **fp[] = {&out->csv, &out->md, &out->dat};
    char path[4200];

    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s/figure7.%s", dir, ext[i]);
        if (!(*fp[i] = fopen(path, "w"))) {
            snprintf(eb, ebn, "%s: %s", path, strerror(errno));
            return CORE_EIO;
        }
    }
    fprintf(out->csv, "M,n_cal,n_release,variant,runs,median_ms,fastest_ms,slowest_ms,"
                      "median_over_lap,peak_rss_above_idle_mb\n");
    fprintf(out->md,
            "# Figure 7 — runtime of one calibration-and-release pass at ε = 1 versus the "
            "number of nodes M\n\n"
            "Synthetic windows (`eval_load_synth`, AR(1) factor model), measured by the "
            "Table 12 code: every run in a forked child, variants interleaved round-robin; "
            "median [fastest–slowest] wall time in ms; memory = the child's peak RSS minus an "
            "idle child's (median, MB). Recomputed from `runs.csv`. The machine was shared "
            "with other agents' builds and tests: compare ratios within one M.\n\n"
            "| M | N_cal | Lap-DP | Ada-DP | Risk-DP | GC-DP | GC-DP-Cache | GC-DP / "
            "GC-DP-Cache (median) | GC-DP / Lap-DP (median) | GC-DP peak RSS above idle (MB) |\n"
            "|---|---|---|---|---|---|---|---|---|---|\n");
    fprintf(out->dat, "# M then per variant (Lap Ada Risk GC-DP GC-DP-Cache): median_ms "
                      "fastest_ms slowest_ms\n");
    return CORE_OK;
}

/* One size m: a row per variant in figure7.csv, one row in figure7.md and figure7.dat. */
static void write_size(struct points *R, size_t m, const struct fig7_out *out)
{
    struct eval_rt_stats st[EVAL_N_PASS + 1];
    size_t nc = 0;

    for (int v = -1; v < EVAL_N_PASS; v++) {
        struct pt *p = pt_get(&R->P, &R->np, m, v);
        eval_rt_stats(p->n, p->t, p->kb, &st[v + 1]);
        if (p->n)
            nc = p->n_cal;
    }
    fprintf(out->md, "| %zu | %zu |", m, nc);
    fprintf(out->dat, "%zu", m);
    for (int v = 0; v < EVAL_N_PASS; v++) {
        const struct eval_rt_stats *s = &st[v + 1];
        struct pt *p = pt_get(&R->P, &R->np, m, v);
        fprintf(out->csv, "%zu,%zu,%zu,%s,%zu,%.4f,%.4f,%.4f,%.3f,%.3f\n", m, p->n_cal, p->n_rel,
                eval_pass_label(v), s->n, 1e3 * s->median_s, 1e3 * s->fastest_s, 1e3 * s->slowest_s,
                s->median_s / st[1].median_s, (s->median_kb - st[0].median_kb) / 1024.0);
        fprintf(out->md, " %.2f [%.2f–%.2f] |", 1e3 * s->median_s, 1e3 * s->fastest_s,
                1e3 * s->slowest_s);
        fprintf(out->dat, " %g %g %g", 1e3 * s->median_s, 1e3 * s->fastest_s, 1e3 * s->slowest_s);
    }
    fprintf(out->md, " %.1f | %.1f | %.2f |\n", st[4].median_s / st[5].median_s,
            st[4].median_s / st[1].median_s, (st[4].median_kb - st[0].median_kb) / 1024.0);
    fprintf(out->dat, "\n");
}

/* Write figure7.csv/.md/.dat for the sizes of R in ascending M; a failed close is CORE_EIO. */
static core_err write_fig7(const char *dir, struct points *R, char *eb, size_t ebn)
{
    struct fig7_out out = {0};
    core_err rc;

    for (size_t a = 1; a < R->nm; a++) /* M ascending */
        for (size_t b = a; b > 0 && R->ms[b] < R->ms[b - 1]; b--) {
            size_t x = R->ms[b];
            R->ms[b] = R->ms[b - 1];
            R->ms[b - 1] = x;
        }
    rc = open_fig7(dir, &out, eb, ebn);
    for (size_t i = 0; rc == CORE_OK && i < R->nm; i++)
        write_size(R, R->ms[i], &out);
    if (out.csv && fclose(out.csv) != 0)
        rc = CORE_EIO;
    if (out.md && fclose(out.md) != 0)
        rc = CORE_EIO;
    if (out.dat && fclose(out.dat) != 0)
        rc = CORE_EIO;
    return rc;
}

core_err eval_scaling_report(const char *dir, char *eb, size_t ebn)
{
    char path[4200];
    struct points R = {0};
    FILE *f;
    core_err rc;

    snprintf(path, sizeof(path), "%s/runs.csv", dir);
    if (!(f = fopen(path, "r"))) {
        snprintf(eb, ebn, "%s: %s", path, strerror(errno));
        return CORE_EIO;
    }
    rc = read_runs(f, path, &R, eb, ebn);
    fclose(f);
    if (rc == CORE_OK && R.np == 0) {
        snprintf(eb, ebn, "%s: no runs", path);
        rc = CORE_EPARSE;
    }
    if (rc == CORE_OK)
        rc = write_fig7(dir, &R, eb, ebn);
    for (size_t i = 0; i < R.np; i++) {
        free(R.P[i].t);
        free(R.P[i].kb);
    }
    free(R.P);
    return rc;
}

static void write_gp(const char *dir)
{
    char p[4200];
    FILE *f;
    snprintf(p, sizeof(p), "%s/figure7.gp", dir);
    if (!(f = fopen(p, "w")))
        return;
    /* log-log: a pass dominated by Algorithm 1's O(M^2 (2L+1) N_cal) products is a line of
     * slope 2; the guide goes through GC-DP's median at the largest M */
    fprintf(f, "# gnuplot figure7.gp (run in this folder) -- made by gcdp eval --figure7\n"
               "set terminal pngcairo size 800,560 noenhanced\nset key bottom right\nset grid\n"
               "set xlabel 'number of nodes M'\n"
               "set ylabel 'runtime of one calibration-and-release pass (ms)'\n"
               "set title 'Runtime vs M at eps = 1, synthetic windows (median, bars: fastest-"
               "slowest; cf. gc-dp Fig. 7)'\n"
               "stats 'figure7.dat' using 1:11 nooutput\n"
               "mmax = STATS_max_x\nmmin = STATS_min_x\nstats 'figure7.dat' using 1:($1 == mmax ? "
               "$11 : 0) nooutput\n"
               "gmax = STATS_max_y\nset logscale xy\nset xrange [mmin / 1.25 : mmax * 1.25]\n"
               "set output 'fig7_runtime_vs_m.png'\n"
               "plot for [v=0:4] 'figure7.dat' using 1:(column(2+3*v)):(column(3+3*v)):"
               "(column(4+3*v)) with yerrorlines title word('Lap-DP Ada-DP Risk-DP GC-DP "
               "GC-DP-Cache', v+1), gmax * (x / mmax)**2 with lines dt 2 lc rgb 'gray' "
               "title 'slope 2 (M^2) through GC-DP at the largest M'\n");
    fclose(f);
}

/* Rough relative cost of one size for the progress estimate: a + bM + cM^2 read off this
 * machine's measurements at N_cal = 1200 (fixed costs dominate small M, Algorithm 1's
 * products large M). Only the "remaining" estimate uses it. */
static double pass_weight(size_t m)
{
    return 16.0 + (double)m + (double)m * (double)m / 512.0;
}

/* 1..16 sizes M in [2, EVAL_MAX_NODES], reps in 1..1000, >= 20 windows; *work_total: the
 * summed pass_weight of the sizes. */
static core_err check_scaling_opts(const struct eval_opts *o, double *work_total, char *eb,
                                   size_t ebn)
{
    if (o->n_scale_m == 0 || o->n_scale_m > 16 || o->scale_reps < 1 || o->scale_reps > 1000 ||
        o->scale_windows < 20) {
        snprintf(eb, ebn, "eval --figure7: 1..16 sizes M, reps in 1..1000, >= 20 windows");
        return CORE_ECONFIG;
    }
    for (size_t i = 0; i < o->n_scale_m; i++) {
        if (o->scale_m[i] < 2 || o->scale_m[i] > EVAL_MAX_NODES) {
            snprintf(eb, ebn, "eval --figure7: M = %zu outside [2, %d]", o->scale_m[i],
                     EVAL_MAX_NODES);
            return CORE_ECONFIG;
        }
        *work_total += pass_weight(o->scale_m[i]);
    }
    return CORE_OK;
}

/* Measure every size of o on synthetic windows at tau; one line per run to f (runs.csv),
 * progress on stderr unless quiet. */
static core_err measure_sizes(const struct eval_opts *o, double tau, FILE *f, double t0,
                              double work_total, char *eb, size_t ebn)
{
    struct eval_pass_run *runs =
        core_xmalloc((size_t)o->scale_reps * (EVAL_N_PASS + 1) * sizeof(*runs));
    double work_done = 0.0;
    core_err rc = CORE_OK;

    for (size_t i = 0; i < o->n_scale_m && rc == CORE_OK; i++) {
        struct eval_data ds;
        size_t n = 0, ntr = 0, nte = 0;
        size_t m = o->scale_m[i];
        rc = eval_load_synth(m, o->scale_windows, o->seed + m, &ds, eb, ebn);
        if (rc != CORE_OK)
            break;
        free(eval_split_rows(&ds, EVAL_TRAIN, &ntr));
        free(eval_split_rows(&ds, EVAL_TEST, &nte));
        rc = eval_runtime_passes(o, &ds, tau, o->scale_reps, runs, &n, eb, ebn);
        for (size_t k = 0; rc == CORE_OK && k < n; k++)
            fprintf(f, "%zu,%zu,%zu,%s,%d,%.6f,%.0f\n", m, ntr, nte,
                    eval_pass_label(runs[k].variant), runs[k].rep, runs[k].seconds,
                    runs[k].peak_rss_kb);
        fflush(f);
        eval_data_free(&ds);
        work_done += pass_weight(m);
        if (!o->quiet) {
            double el = eval_now() - t0;
            fprintf(stderr,
                    "eval figure7: M = %zu done (%zu/%zu sizes), elapsed %.1f s, remaining "
                    "~%.1f s\n",
                    m, i + 1, o->n_scale_m, el, el * (work_total - work_done) / work_done);
        }
    }
    free(runs);
    return rc;
}

/* dir/run.txt: data, sizes, rounds, load averages at start (la0) and end (la1), wall time. */
static void write_scaling_run_txt(const char *dir, const struct eval_opts *o, double tau,
                                  const char *la0, const char *la1, double t0)
{
    char path[4200];
    FILE *f;

    snprintf(path, sizeof(path), "%s/run.txt", dir);
    if (!(f = fopen(path, "w")))
        return;
    fprintf(f, "figure 7: runtime of one calibration-and-release pass at eps = 1 vs M\n");
    fprintf(f,
            "data: eval_load_synth (8 AR(1) factors, lags 0..3), %zu windows per M "
            "(60 %% calibration, 20 %% released test windows), seed base %llu + M\n",
            o->scale_windows, (unsigned long long)o->seed);
    fprintf(f, "M:");
    for (size_t i = 0; i < o->n_scale_m; i++)
        fprintf(f, " %zu", o->scale_m[i]);
    fprintf(f,
            "\nrounds per variant: %d (interleaved, forked children); tau %.2f, L 3, "
            "tau_c 0.85, one OpenBLAS thread\n",
            o->scale_reps, tau);
    fprintf(f, "load average at start: %s\nload average at end: %s\n", la0, la1);
    fprintf(f, "wall time: %.1f s\n", eval_now() - t0);
    fclose(f);
}

/* figure7.gp and, when gnuplot is installed, fig7_runtime_vs_m.png. */
static void plot_figure7(const char *dir, const struct eval_opts *o)
{
    char cmd[8600];

    write_gp(dir);
    snprintf(cmd, sizeof(cmd), "cd '%s' && gnuplot figure7.gp 2>gnuplot.log", dir);
    if (system("command -v gnuplot >/dev/null 2>&1") == 0 && system(cmd) != 0 && !o->quiet)
        fprintf(stderr, "eval: gnuplot failed (see %s/gnuplot.log); tables are written\n", dir);
}

core_err eval_run_scaling(const struct eval_opts *o, char *eb, size_t ebn)
{
    char dir[4096], path[4200], la0[128], la1[128];
    struct cal_opts co;
    double t0 = eval_now(), work_total = 0.0;
    FILE *f;
    core_err rc;

    if ((rc = check_scaling_opts(o, &work_total, eb, ebn)) != CORE_OK)
        return rc;
    openblas_set_num_threads(1); /* as the protocol run (run.c) */
    cal_opts_default(&co);       /* τ: the calibrate stage's default (Table 5) */
    snprintf(dir, sizeof(dir), "%s/figure7", o->out_dir);
    if (eval_mkdirs(dir) != 0) {
        snprintf(eb, ebn, "eval: cannot create %s: %s", dir, strerror(errno));
        return CORE_EIO;
    }
    snprintf(path, sizeof(path), "%s/runs.csv", dir);
    if (!(f = fopen(path, "w"))) {
        snprintf(eb, ebn, "%s: %s", path, strerror(errno));
        return CORE_EIO;
    }
    fprintf(f, "%s\n", RUNS_HEADER);
    loadavg(la0, sizeof(la0));
    rc = measure_sizes(o, co.tau, f, t0, work_total, eb, ebn);
    if (fclose(f) != 0 && rc == CORE_OK) {
        snprintf(eb, ebn, "%s: write failed", path);
        rc = CORE_EIO;
    }
    if (rc != CORE_OK)
        return rc;
    loadavg(la1, sizeof(la1));
    if ((rc = eval_scaling_report(dir, eb, ebn)) != CORE_OK)
        return rc;
    write_scaling_run_txt(dir, o, co.tau, la0, la1, t0);
    if (o->plots)
        plot_figure7(dir, o);
    if (!o->quiet)
        fprintf(stderr, "eval figure7: done in %.1f s; results in %s\n", eval_now() - t0, dir);
    return CORE_OK;
}
