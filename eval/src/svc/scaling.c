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

core_err eval_scaling_report(const char *dir, char *eb, size_t ebn)
{
    char path[4200], line[512];
    struct pt *P = NULL;
    size_t np = 0, ln = 0, ms[64], nm = 0;
    FILE *f, *csv = NULL, *md = NULL, *dat = NULL;
    core_err rc = CORE_OK;

    snprintf(path, sizeof(path), "%s/runs.csv", dir);
    if (!(f = fopen(path, "r"))) {
        snprintf(eb, ebn, "%s: %s", path, strerror(errno));
        return CORE_EIO;
    }
    while (fgets(line, sizeof(line), f)) {
        char v[64];
        size_t m, nc, nr;
        int rep, var;
        double s, kb;
        ln++;
        if (ln == 1) {
            if (strncmp(line, RUNS_HEADER, strlen(RUNS_HEADER)) != 0) {
                snprintf(eb, ebn, "%s:1: not a Figure 7 runs.csv header", path);
                rc = CORE_EPARSE;
                break;
            }
            continue;
        }
        /* Our own runs.csv (written by this program); a short row is refused by the count. */
        if (sscanf(line, "%zu,%zu,%zu,%63[^,],%d,%lf,%lf", &m, &nc, &nr, v, &rep, &s, &kb) != 7 || // NOLINT(cert-err34-c)
            (var = variant_of(v)) < -1) {
            snprintf(eb, ebn, "%s:%zu: malformed run", path, ln);
            rc = CORE_EPARSE;
            break;
        }
        struct pt *p = pt_get(&P, &np, m, var);
        if (p->n == p->cap) {
            p->cap = p->cap ? 2 * p->cap : 8;
            p->t = core_xrealloc(p->t, p->cap * sizeof(double));
            p->kb = core_xrealloc(p->kb, p->cap * sizeof(double));
        }
        p->n_cal = nc;
        p->n_rel = nr;
        p->t[p->n] = s;
        p->kb[p->n++] = kb;
        int seen = 0;
        for (size_t i = 0; i < nm; i++)
            seen |= ms[i] == m;
        if (!seen && nm < 64)
            ms[nm++] = m;
    }
    fclose(f);
    if (rc == CORE_OK && np == 0) {
        snprintf(eb, ebn, "%s: no runs", path);
        rc = CORE_EPARSE;
    }
    for (size_t a = 1; a < nm; a++) /* M ascending */
        for (size_t b = a; b > 0 && ms[b] < ms[b - 1]; b--) {
            size_t x = ms[b];
            ms[b] = ms[b - 1];
            ms[b - 1] = x;
        }
    snprintf(path, sizeof(path), "%s/figure7.csv", dir);
    if (rc == CORE_OK && !(csv = fopen(path, "w")))
        rc = CORE_EIO;
    snprintf(path, sizeof(path), "%s/figure7.md", dir);
    if (rc == CORE_OK && !(md = fopen(path, "w")))
        rc = CORE_EIO;
    snprintf(path, sizeof(path), "%s/figure7.dat", dir);
    if (rc == CORE_OK && !(dat = fopen(path, "w")))
        rc = CORE_EIO;
    if (rc == CORE_EIO)
        snprintf(eb, ebn, "%s: %s", path, strerror(errno));
    if (rc == CORE_OK) {
        fprintf(csv, "M,n_cal,n_release,variant,runs,median_ms,fastest_ms,slowest_ms,"
                     "median_over_lap,peak_rss_above_idle_mb\n");
        fprintf(
            md,
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
        fprintf(dat, "# M then per variant (Lap Ada Risk GC-DP GC-DP-Cache): median_ms "
                     "fastest_ms slowest_ms\n");
    }
    for (size_t i = 0; rc == CORE_OK && i < nm; i++) {
        struct eval_rt_stats st[EVAL_N_PASS + 1];
        size_t nc = 0;
        for (int v = -1; v < EVAL_N_PASS; v++) {
            struct pt *p = pt_get(&P, &np, ms[i], v);
            eval_rt_stats(p->n, p->t, p->kb, &st[v + 1]);
            if (p->n)
                nc = p->n_cal;
        }
        fprintf(md, "| %zu | %zu |", ms[i], nc);
        fprintf(dat, "%zu", ms[i]);
        for (int v = 0; v < EVAL_N_PASS; v++) {
            const struct eval_rt_stats *s = &st[v + 1];
            struct pt *p = pt_get(&P, &np, ms[i], v);
            fprintf(csv, "%zu,%zu,%zu,%s,%zu,%.4f,%.4f,%.4f,%.3f,%.3f\n", ms[i], p->n_cal, p->n_rel,
                    eval_pass_label(v), s->n, 1e3 * s->median_s, 1e3 * s->fastest_s,
                    1e3 * s->slowest_s, s->median_s / st[1].median_s,
                    (s->median_kb - st[0].median_kb) / 1024.0);
            fprintf(md, " %.2f [%.2f–%.2f] |", 1e3 * s->median_s, 1e3 * s->fastest_s,
                    1e3 * s->slowest_s);
            fprintf(dat, " %g %g %g", 1e3 * s->median_s, 1e3 * s->fastest_s, 1e3 * s->slowest_s);
        }
        fprintf(md, " %.1f | %.1f | %.2f |\n", st[4].median_s / st[5].median_s,
                st[4].median_s / st[1].median_s, (st[4].median_kb - st[0].median_kb) / 1024.0);
        fprintf(dat, "\n");
    }
    if (csv && fclose(csv) != 0)
        rc = CORE_EIO;
    if (md && fclose(md) != 0)
        rc = CORE_EIO;
    if (dat && fclose(dat) != 0)
        rc = CORE_EIO;
    for (size_t i = 0; i < np; i++) {
        free(P[i].t);
        free(P[i].kb);
    }
    free(P);
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

core_err eval_run_scaling(const struct eval_opts *o, char *eb, size_t ebn)
{
    char dir[4096], path[4200], la0[128], la1[128];
    struct cal_opts co;
    struct eval_pass_run *runs;
    double t0 = eval_now(), work_done = 0.0, work_total = 0.0;
    FILE *f;
    core_err rc = CORE_OK;

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
        work_total += pass_weight(o->scale_m[i]);
    }
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
    runs = core_xmalloc((size_t)o->scale_reps * (EVAL_N_PASS + 1) * sizeof(*runs));
    for (size_t i = 0; i < o->n_scale_m && rc == CORE_OK; i++) {
        struct eval_data ds;
        size_t n = 0, ntr = 0, nte = 0;
        size_t m = o->scale_m[i];
        rc = eval_load_synth(m, o->scale_windows, o->seed + m, &ds, eb, ebn);
        if (rc != CORE_OK)
            break;
        free(eval_split_rows(&ds, EVAL_TRAIN, &ntr));
        free(eval_split_rows(&ds, EVAL_TEST, &nte));
        rc = eval_runtime_passes(o, &ds, co.tau, o->scale_reps, runs, &n, eb, ebn);
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
    if (fclose(f) != 0 && rc == CORE_OK) {
        snprintf(eb, ebn, "%s: write failed", path);
        rc = CORE_EIO;
    }
    if (rc != CORE_OK)
        return rc;
    loadavg(la1, sizeof(la1));
    rc = eval_scaling_report(dir, eb, ebn);
    if (rc != CORE_OK)
        return rc;
    snprintf(path, sizeof(path), "%s/run.txt", dir);
    if ((f = fopen(path, "w"))) {
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
                o->scale_reps, co.tau);
        fprintf(f, "load average at start: %s\nload average at end: %s\n", la0, la1);
        fprintf(f, "wall time: %.1f s\n", eval_now() - t0);
        fclose(f);
    }
    if (o->plots) {
        char cmd[8600];
        write_gp(dir);
        snprintf(cmd, sizeof(cmd), "cd '%s' && gnuplot figure7.gp 2>gnuplot.log", dir);
        if (system("command -v gnuplot >/dev/null 2>&1") == 0 && system(cmd) != 0 && !o->quiet)
            fprintf(stderr, "eval: gnuplot failed (see %s/gnuplot.log); tables are written\n", dir);
    }
    if (!o->quiet)
        fprintf(stderr, "eval figure7: done in %.1f s; results in %s\n", eval_now() - t0, dir);
    return CORE_OK;
}
