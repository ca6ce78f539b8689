/* test_scaling.c - gc-dp Figure 7 mode of the harness (`gcdp eval --figure7`,
 * eval_run_scaling): the synthetic input, a run on tiny sizes, and the summary table's
 * consistency with the raw runs it is computed from. Timing values are never compared with
 * each other (no timed assertions); only counts, order statistics and arithmetic. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <criterion/criterion.h>

#include "eval/eval.h"
#include "svc/eval_int.h"
#include "test_support.h"

Test(eval_scaling, synthetic_data_deterministic_in_range_split_by_time)
{
    struct eval_data a, b;
    char eb[256];
    size_t k[3] = {0};
    cr_assert_eq(eval_load_synth(16, 200, 7, &a, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(eval_load_synth(16, 200, 7, &b, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(a.n, 200);
    cr_assert_eq(a.d, 16);
    cr_expect(memcmp(a.x, b.x, a.n * a.d * sizeof(double)) == 0, "same seed, same data");
    for (size_t i = 0; i < a.n * a.d; i++)
        cr_assert(a.x[i] >= 0.0 && a.x[i] <= 1.0);
    for (size_t i = 0; i < a.n; i++) {
        cr_assert(a.split[i] >= 0 && a.split[i] <= 2);
        k[a.split[i]]++;
        if (i > 0)
            cr_assert(a.split[i] >= a.split[i - 1], "splits are contiguous in time");
    }
    cr_expect_eq(k[EVAL_TRAIN], 120);
    cr_expect_eq(k[EVAL_VAL], 40);
    cr_expect_eq(k[EVAL_TEST], 40);
    eval_data_free(&b);
    cr_assert_eq(eval_load_synth(16, 200, 8, &b, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_expect(memcmp(a.x, b.x, a.n * a.d * sizeof(double)) != 0, "another seed, other data");
    eval_data_free(&a);
    eval_data_free(&b);
    cr_expect_eq(eval_load_synth(1, 200, 7, &a, eb, sizeof(eb)), CORE_ECONFIG);
    cr_expect_eq(eval_load_synth(EVAL_MAX_NODES + 1, 200, 7, &a, eb, sizeof(eb)), CORE_ECONFIG);
}

/* runs of one (M, variant) from runs.csv */
static size_t runs_of(const char *csv, size_t m, const char *variant, double *t, size_t cap,
                      size_t *n_cal, size_t *n_rel)
{
    size_t n = 0;
    const char *l = strchr(csv, '\n');
    while (l && l[1]) {
        size_t mm, nc, nr;
        int rep;
        char v[64];
        double s, kb;
        l++;
        cr_assert_eq(sscanf(l, "%zu,%zu,%zu,%63[^,],%d,%lf,%lf", &mm, &nc, &nr, v, &rep, &s, &kb),
                     7, "runs.csv line '%.60s'", l);
        cr_assert(s > 0.0 && kb > 0.0);
        if (mm == m && strcmp(v, variant) == 0 && n < cap) {
            t[n++] = s;
            *n_cal = nc;
            *n_rel = nr;
        }
        l = strchr(l, '\n');
    }
    return n;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

Test(eval_scaling, tiny_sizes_write_a_consistent_table, .timeout = 120)
{
    static const char *vs[] = {"Lap-DP", "Ada-DP", "Risk-DP", "GC-DP", "GC-DP-Cache"};
    char *dir = ts_tmpdir(), p[4200], eb[512] = "";
    struct eval_opts o;
    eval_opts_default(&o);
    o.out_dir = dir;
    o.n_scale_m = 2;
    o.scale_m[0] = 8;
    o.scale_m[1] = 4; /* given out of order: the table is sorted by M */
    o.scale_windows = 100;
    o.scale_reps = 3;
    o.plots = false;
    o.quiet = true;
    cr_assert_eq(eval_run_scaling(&o, eb, sizeof(eb)), CORE_OK, "%s", eb);

    snprintf(p, sizeof(p), "%s/figure7/runs.csv", dir);
    char *runs = ts_read_file(p, NULL);
    cr_assert(runs);
    cr_assert(strncmp(runs, "M,n_cal,n_release,variant,rep,seconds,peak_rss_kb\n", 50) == 0);
    snprintf(p, sizeof(p), "%s/figure7/figure7.csv", dir);
    char *sum = ts_read_file(p, NULL);
    cr_assert(sum);
    snprintf(p, sizeof(p), "%s/figure7/figure7.md", dir);
    char *md = ts_read_file(p, NULL);
    cr_assert(md);
    snprintf(p, sizeof(p), "%s/figure7/run.txt", dir);
    char *txt = ts_read_file(p, NULL);
    cr_assert(txt);
    cr_expect(strstr(txt, "M: 8 4\n"), "run.txt states the sizes");
    cr_expect(strstr(txt, "100 windows per M"));

    /* one summary line per (M, variant), M ascending, every statistic from the raw runs */
    const char *line = strchr(sum, '\n') + 1;
    const size_t ms[2] = {4, 8};
    for (int i = 0; i < 2; i++) {
        double med[5];
        for (int v = 0; v < 5; v++) {
            double t[16], med_ms, fast_ms, slow_ms, ratio, mb;
            size_t nc = 0, nr = 0, m, c2, r2, runs_n;
            char name[64];
            size_t n = runs_of(runs, ms[i], vs[v], t, 16, &nc, &nr);
            cr_assert_eq(n, 3, "M %zu %s: %zu runs", ms[i], vs[v], n);
            cr_expect_eq(nc, 60);
            cr_expect_eq(nr, 20);
            qsort(t, n, sizeof(double), cmp_d);
            cr_assert_eq(sscanf(line, "%zu,%zu,%zu,%63[^,],%zu,%lf,%lf,%lf,%lf,%lf", &m, &c2, &r2,
                                name, &runs_n, &med_ms, &fast_ms, &slow_ms, &ratio, &mb),
                         10, "figure7.csv line '%.60s'", line);
            cr_expect_eq(m, ms[i]);
            cr_expect_str_eq(name, vs[v]);
            cr_expect_eq(runs_n, 3);
            cr_expect_eq(c2, 60);
            cr_expect(fabs(med_ms - 1e3 * t[1]) < 1e-3, "%s median %g vs %g", vs[v], med_ms,
                      1e3 * t[1]);
            cr_expect(fabs(fast_ms - 1e3 * t[0]) < 1e-3);
            cr_expect(fabs(slow_ms - 1e3 * t[2]) < 1e-3);
            if (v == 0)
                cr_expect(fabs(ratio - 1.0) < 1e-9, "Lap-DP is the ratio's baseline");
            med[v] = t[1];
            line = strchr(line, '\n') + 1;
        }
        /* the Markdown row agrees with the same numbers */
        char row[64], *r;
        snprintf(row, sizeof(row), "\n| %zu | 60 |", ms[i]);
        r = strstr(md, row);
        cr_assert(r, "figure7.md row for M = %zu", ms[i]);
        const char *cell = r + strlen(row);
        for (int c = 0; c < 3; c++)
            cell = strchr(cell, '|') + 1;
        cr_expect(strncmp(cell, " ", 1) == 0);
        char g[32];
        snprintf(g, sizeof(g), " %.2f [", 1e3 * med[3]);
        cr_expect(strncmp(cell, g, strlen(g)) == 0, "GC-DP cell '%.30s' vs '%s'", cell, g);
        for (int c = 0; c < 2; c++)
            cell = strchr(cell, '|') + 1;
        snprintf(g, sizeof(g), " %.1f |", med[3] / med[4]);
        cr_expect(strncmp(cell, g, strlen(g)) == 0, "GC-DP / cache '%.20s' vs '%s'", cell, g);
    }
    cr_expect_eq(*line, '\0', "no further summary lines");

    /* the summary is recomputable from the preserved runs */
    snprintf(p, sizeof(p), "%s/figure7", dir);
    cr_assert_eq(eval_scaling_report(p, eb, sizeof(eb)), CORE_OK, "%s", eb);
    snprintf(p, sizeof(p), "%s/figure7/figure7.csv", dir);
    char *again = ts_read_file(p, NULL);
    cr_expect_str_eq(again, sum);
    free(again);
    free(txt);
    free(md);
    free(sum);
    free(runs);
    ts_rmtree(dir);
    free(dir);
}

Test(eval_scaling, malformed_runs_csv_is_refused)
{
    char *dir = ts_tmpdir(), p[4200], eb[256] = "";
    FILE *f;
    snprintf(p, sizeof(p), "%s/runs.csv", dir);
    f = fopen(p, "w");
    cr_assert(f);
    fprintf(f, "M,n_cal,n_release,variant,rep,seconds,peak_rss_kb\n4,60,20,No-Such-DP,0,0.1,100\n");
    fclose(f);
    cr_expect_eq(eval_scaling_report(dir, eb, sizeof(eb)), CORE_EPARSE);
    cr_expect(strstr(eb, "runs.csv:2"), "names the line: %s", eb);
    ts_rmtree(dir);
    free(dir);
}

static int run_cmd(const char *args)
{
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "'%s' eval %s >/dev/null 2>&1", GCDP_BIN, args);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(eval_scaling, cli_usage_errors_exit_2, .timeout = 60)
{
    cr_expect_eq(run_cmd("--figure7 --m-list 3.5"), 2);
    cr_expect_eq(run_cmd("--figure7 --m-list 1"), 2);
    cr_expect_eq(run_cmd("--figure7 --m-list 4,100000"), 2);
    cr_expect_eq(run_cmd("--figure7 --reps 0"), 2);
    cr_expect_eq(run_cmd("--figure7 --windows 5"), 2);
    cr_expect_eq(run_cmd("--rebuild-figure7 /nonexistent-dir"), 1);
}
