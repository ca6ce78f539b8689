/* test_eval.c - the evaluation harness (eval/eval.h): classifier, metrics, split
 * discipline (planted markers), dataset readers, and a smoke run of the whole protocol. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "cal/calibrate.h"
#include "cal/matrix.h"
#include "cal/theta.h"
#include "eval/eval.h"
#include "svc/eval_int.h"
#include "test_support.h"

/* ------------------------------------------------------------ metrics */

Test(eval_metrics, auc_hand_cases)
{
    double s1[] = {0.1, 0.4, 0.35, 0.8};
    int l1[] = {0, 0, 1, 1};
    cr_expect_float_eq(eval_auc(4, s1, l1), 0.75, 1e-12); /* the textbook ROC example */
    double s2[] = {0.5, 0.5, 0.5, 0.5};
    cr_expect_float_eq(eval_auc(4, s2, l1), 0.5, 1e-12); /* ties count 1/2 */
    double s3[] = {0.9, 0.8, 0.1, 0.2};
    cr_expect_float_eq(eval_auc(4, s3, l1), 0.0, 1e-12);
    double s4[] = {0.2, 0.6, 0.6, 0.9, 0.1};
    int l4[] = {0, 0, 1, 1, 1}; /* pairs (pos,neg): 0.6v0.2 1, 0.6v0.6 .5, 0.9 2, 0.1 0 -> 3.5/6 */
    cr_expect_float_eq(eval_auc(5, s4, l4), 3.5 / 6.0, 1e-12);
    int one[] = {1, 1, 1, 1};
    cr_expect(isnan(eval_auc(4, s1, one)), "one class only: AUC undefined");
}

Test(eval_metrics, orientation_rule)
{
    double s3[] = {0.9, 0.8, 0.1, 0.2};
    int l[] = {0, 0, 1, 1};
    cr_expect_float_eq(eval_auc_oriented(eval_auc(4, s3, l)), 1.0, 1e-12);
    cr_expect_float_eq(eval_auc_oriented(0.3), 0.7, 1e-12);
    cr_expect_float_eq(eval_auc_oriented(0.6), 0.6, 1e-12);
    cr_expect_float_eq(eval_auc_oriented(0.5), 0.5, 1e-12);
    cr_expect(isnan(eval_auc_oriented(NAN)));
}

Test(eval_metrics, f1_hand_cases)
{
    int t[] = {1, 1, 0, 0, 1}, p[] = {1, 0, 1, 0, 1}; /* tp 2, fp 1, fn 1 */
    cr_expect_float_eq(eval_f1_class(5, t, p, 1), 4.0 / 6.0, 1e-12);
    cr_expect_float_eq(eval_f1_class(5, t, p, 0), 2.0 / 4.0, 1e-12); /* tp 1, fp 1, fn 1 */
    int z[] = {0, 0, 0};
    cr_expect_float_eq(eval_f1_class(3, z, z, 1), 0.0, 1e-12);
}

/* ------------------------------------------------------------ classifier */

Test(eval_lr, separable_data_separated)
{
    /* three classes on a 2-D grid, separated by x0 < 0.3, 0.3..0.7, > 0.7 with gaps */
    double x[90 * 2];
    int y[90], pred[90];
    struct eval_lr m;
    for (int i = 0; i < 90; i++) {
        int c = i % 3;
        x[2 * i] = (c == 0 ? 0.0 : c == 1 ? 0.45 : 0.9) + 0.1 * (double)((i / 3) % 5) / 4.0;
        x[2 * i + 1] = (double)(i / 3) / 30.0;
        y[i] = c;
    }
    cr_assert_eq(eval_lr_fit(90, 2, x, 2, y, 3, &cal_lr_default, &m), CORE_OK);
    eval_lr_predict(&m, 90, x, 2, pred);
    for (int i = 0; i < 90; i++)
        cr_expect_eq(pred[i], y[i], "row %d", i);
    eval_lr_free(&m);
}

Test(eval_lr, known_small_solution)
{
    /* x = +1: labels 1,1,1,0; x = -1: 0,0,0,1. Unregularized MLE: P(1|x) = σ(ln3 · x),
     * i.e. 0.75 at x = +1 and 0.25 at x = -1 (balanced weights are 1: 4 rows per class). */
    double x[8] = {1, 1, 1, 1, -1, -1, -1, -1}, pr[4];
    int y[8] = {1, 1, 1, 0, 0, 0, 0, 1};
    struct cal_lr_params p = {5000, 0.5, 0.0};
    struct eval_lr m;
    cr_assert_eq(eval_lr_fit(8, 1, x, 1, y, 2, &p, &m), CORE_OK);
    cr_expect_float_eq(m.mean[0], 0.0, 1e-12);
    cr_expect_float_eq(m.sd[0], 1.0, 1e-12);
    cr_expect_float_eq(m.w[1] - m.w[0], log(3.0), 1e-4);
    cr_expect_float_eq(m.b[1] - m.b[0], 0.0, 1e-9);
    double probe[2] = {1.0, -1.0};
    eval_lr_proba(&m, 2, probe, 1, pr);
    cr_expect_float_eq(pr[1], 0.75, 1e-5);
    cr_expect_float_eq(pr[3], 0.25, 1e-5);
    eval_lr_free(&m);
    /* bad inputs refused */
    cr_expect_eq(eval_lr_fit(1, 1, x, 1, y, 2, &p, &m), CORE_EINVAL);
    int bad[8] = {0, 1, 2, 0, 0, 0, 0, 0};
    cr_expect_eq(eval_lr_fit(8, 1, x, 1, bad, 2, &p, &m), CORE_EINVAL);
}

/* ------------------------------------------------------------ split discipline */

Test(eval_split, groups_disjoint)
{
    struct eval_data ds = {0};
    int64_t g[6] = {1600, 1600, 1601, 1603, 1604, 1604};
    size_t bad = 99;
    eval_data_alloc(&ds, 6, 1);
    int sp[6] = {0, 0, 0, 1, 2, 2};
    memcpy(ds.split, sp, sizeof(sp));
    cr_expect_eq(eval_split_check(&ds, g, &bad), CORE_OK);
    ds.split[1] = EVAL_TEST; /* subject 1600 now in train and test */
    cr_expect_eq(eval_split_check(&ds, g, &bad), CORE_EINVARIANT);
    cr_expect(bad == 0 || bad == 1);
    ds.split[1] = 7;
    cr_expect_eq(eval_split_check(&ds, NULL, &bad), CORE_EINVARIANT);
    cr_expect_eq(bad, 1);
    eval_data_free(&ds);
}

/* Rows outside the training and scoring index sets (planted with extreme markers and flipped
 * labels) must not change anything eval_score computes. */
Test(eval_split, planted_rows_do_not_reach_the_classifier)
{
    struct eval_data ds;
    struct eval_scores a, b;
    size_t ntr, nte, nva;
    cr_assert_eq(eval_load_smoke(7, &ds, NULL, 0), CORE_OK);
    size_t *tr = eval_split_rows(&ds, EVAL_TRAIN, &ntr);
    size_t *te = eval_split_rows(&ds, EVAL_TEST, &nte);
    size_t *va = eval_split_rows(&ds, EVAL_VAL, &nva);
    cr_assert_eq(eval_score(&ds, ds.x, tr, ntr, te, nte, &a), CORE_OK);
    for (size_t i = 0; i < nva; i++) { /* plant markers in the validation rows */
        for (size_t k = 0; k < ds.d; k++)
            ds.x[va[i] * ds.d + k] = 1e6;
        ds.y[va[i]] = 1 - ds.y[va[i]];
        ds.attr[va[i]] = 1 - ds.attr[va[i]];
    }
    cr_assert_eq(eval_score(&ds, ds.x, tr, ntr, te, nte, &b), CORE_OK);
    cr_expect(a.task_f1 == b.task_f1 && a.attack_auc_raw == b.attack_auc_raw &&
              a.attack_f1 == b.attack_f1);
    free(tr);
    free(te);
    free(va);
    eval_data_free(&ds);
}

static void write_occ(const char *path, const char *day, double temp_marker)
{
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fprintf(f, "\"date\",\"Temperature\",\"Humidity\",\"Light\",\"CO2\",\"HumidityRatio\","
               "\"Occupancy\"\n");
    for (int i = 0; i < 180; i++) {
        double t = 20.0 + 2.0 * sin(i / 20.0);
        if (temp_marker > 0.0 && i >= 60 && i < 75)
            t = temp_marker; /* one whole window of marker values */
        int occ = (i / 30) % 2;
        fprintf(f, "\"%d\",\"%s %02d:%02d:00\",%.4f,%.3f,%.2f,%.2f,%.6f,%d\n", i + 1, day,
                8 + i / 60, i % 60, t, 25.0 + 5.0 * cos(i / 15.0), occ ? 450.0 : 10.0,
                500.0 + 3.0 * i, 0.004 + 0.0001 * sin(i / 9.0), occ);
    }
    fclose(f);
}

/* Planted-marker test of the Occupancy reader: extreme values in the validation and test
 * files change neither the training windows (clip fitted on training only, frozen) nor
 * anything calibrated from them; the marker window is clipped to 1. */
Test(eval_split, planted_marker_occupancy_no_leak)
{
    char *dir = ts_tmpdir(), p[4096];
    struct eval_data a, b;
    char eb[512];
    snprintf(p, sizeof(p), "%s/datatraining.txt", dir);
    write_occ(p, "2015-02-04", 0.0);
    snprintf(p, sizeof(p), "%s/datatest.txt", dir);
    write_occ(p, "2015-02-07", 0.0);
    snprintf(p, sizeof(p), "%s/datatest2.txt", dir);
    write_occ(p, "2015-02-08", 0.0);
    cr_assert_eq(eval_load_occupancy(dir, 900000, &a, eb, sizeof(eb)), CORE_OK, "%s", eb);
    snprintf(p, sizeof(p), "%s/datatest.txt", dir);
    write_occ(p, "2015-02-07", 90.0);
    snprintf(p, sizeof(p), "%s/datatest2.txt", dir);
    write_occ(p, "2015-02-08", 95.0);
    cr_assert_eq(eval_load_occupancy(dir, 900000, &b, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(a.n, 36); /* 3 files x 12 fifteen-minute windows */
    cr_assert_eq(b.n, a.n);
    size_t marked = 0;
    for (size_t i = 0; i < a.n; i++) {
        cr_assert_eq(a.split[i], b.split[i]);
        if (a.split[i] == EVAL_TRAIN) {
            cr_expect(memcmp(a.x + i * a.d, b.x + i * b.d, a.d * sizeof(double)) == 0,
                      "training window %zu changed by validation/test content", i);
        } else if (b.x[i * b.d] == 1.0 && a.x[i * a.d] < 1.0) {
            marked++; /* temperature clipped at the training maximum */
        }
    }
    cr_expect_eq(marked, 2, "one marker window per held-out file");
    cr_expect_eq(a.attr[0], 0);       /* Wednesday */
    cr_expect_eq(a.attr[a.n - 1], 1); /* Sunday */
    cr_expect_eq(a.query.min_samples, 14);
    eval_data_free(&a);
    eval_data_free(&b);
    ts_rmtree(dir);
    free(dir);
}

/* Calibration (θ) of the harness sees only training windows: validation/test rows replaced
 * by markers give the same θ graph, exposure, μ and ξ̂. */
Test(eval_split, planted_marker_theta_unchanged, .timeout = 120)
{
    char *dir = ts_tmpdir(), p[4200], eb[512] = "";
    struct eval_opts o;
    struct eval_data ds;
    struct cal_theta *t[2];
    eval_opts_default(&o);
    o.n_eps = 1;
    o.draws = 1;
    o.tune_draws = 1;
    o.n_tau = 1;
    o.tau_grid[0] = 0.2;
    o.ablations = o.runtime = o.plots = o.tau_sweep = false;
    o.quiet = true;
    for (int v = 0; v < 2; v++) {
        char out[4096];
        snprintf(out, sizeof(out), "%s/run%d", dir, v);
        o.out_dir = out;
        cr_assert_eq(eval_load_smoke(11, &ds, NULL, 0), CORE_OK);
        for (size_t i = 0; v == 1 && i < ds.n; i++) {
            if (ds.split[i] == EVAL_TRAIN)
                continue;
            for (size_t k = 0; k < ds.d; k++)
                ds.x[i * ds.d + k] = 0.987654;
            ds.y[i] = (int)(i % 2);
        }
        cr_assert_eq(eval_run_data(&o, &ds, NULL, 0, eb, sizeof(eb)), CORE_OK, "%s", eb);
        snprintf(p, sizeof(p), "%s/smoke/theta.json", out);
        cr_assert_eq(cal_theta_load_file(p, &t[v], eb, sizeof(eb)), CORE_OK, "%s", eb);
        eval_data_free(&ds);
    }
    cr_assert_eq(t[0]->n_cal, 180);
    cr_assert_eq(t[0]->n_cal, t[1]->n_cal);
    cr_assert_eq(t[0]->n_edges, t[1]->n_edges);
    for (size_t e = 0; e < t[0]->n_edges; e++)
        cr_expect(t[0]->edges[e].i == t[1]->edges[e].i && t[0]->edges[e].w == t[1]->edges[e].w);
    for (size_t k = 0; k < t[0]->d; k++) {
        cr_expect(t[0]->mu[k] == t[1]->mu[k], "mu[%zu]", k);
        cr_expect(t[0]->xi_hat[k] == t[1]->xi_hat[k], "xi_hat[%zu]", k);
        cr_expect(t[0]->exposure[k] == t[1]->exposure[k], "exposure[%zu]", k);
    }
    cal_theta_free(t[0]);
    cal_theta_free(t[1]);
    ts_rmtree(dir);
    free(dir);
}

/* ------------------------------------------------------------ readers */

static void write_arff(const char *path, int subj, int rows, double shift)
{
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fprintf(f, "@relation person_activities_labeled\n\n");
    for (int a = 0; a < 93; a++)
        fprintf(f, "@attribute \"a%d\" numeric\n", a);
    fprintf(f, "\n@data\n");
    for (int r = 0; r < rows; r++) {
        fprintf(f, "%c", "ABCDEFGHIJKLMOPQRS"[r % 18]);
        for (int c = 1; c < 92; c++)
            fprintf(f, ",%g", shift + 0.01 * (double)(r * c % 97));
        fprintf(f, ",%d\n", subj);
    }
    fclose(f);
}

Test(eval_readers, wisdm_duplicate_files_detected)
{
    char *dir = ts_tmpdir(), sub[4096], p[3][4200], eb[512];
    char **dropped = NULL;
    size_t nd = 0;
    long dup[3];
    struct eval_data ds;
    snprintf(sub, sizeof(sub), "%s/arff_files", dir);
    mkdir(sub, 0777);
    snprintf(sub, sizeof(sub), "%s/arff_files/phone", dir);
    mkdir(sub, 0777);
    snprintf(sub, sizeof(sub), "%s/arff_files/phone/accel", dir);
    mkdir(sub, 0777);
    snprintf(p[0], sizeof(p[0]), "%s/data_1600_accel_phone.arff", sub);
    snprintf(p[1], sizeof(p[1]), "%s/data_1601_accel_phone.arff", sub);
    snprintf(p[2], sizeof(p[2]), "%s/data_1602_accel_phone.arff", sub);
    write_arff(p[0], 1600, 20, 0.0);
    write_arff(p[1], 1601, 25, 1.0);
    write_arff(p[2], 1600, 20, 0.0); /* byte-identical copy of 1600's file */
    const char *pp[3] = {p[0], p[1], p[2]};
    cr_assert_eq(eval_find_duplicates(3, pp, dup, eb, sizeof(eb)), CORE_OK);
    cr_expect_eq(dup[0], -1);
    cr_expect_eq(dup[1], -1);
    cr_expect_eq(dup[2], 0);
    cr_assert_eq(eval_load_wisdm(dir, "accel", &ds, &dropped, &nd, eb, sizeof(eb)), CORE_OK, "%s",
                 eb);
    cr_expect_eq(nd, 1);
    cr_expect(nd == 1 && strstr(dropped[0], "data_1602_accel_phone.arff"));
    cr_expect_eq(ds.n, 45);
    cr_expect_eq(ds.d, 13);
    cr_expect_eq(ds.n_classes, 18);
    for (size_t i = 0; i < ds.n * ds.d; i++)
        cr_expect(ds.x[i] >= 0.0 && ds.x[i] <= 1.0);
    for (size_t i = 0; i < nd; i++)
        free(dropped[i]);
    free(dropped);
    eval_data_free(&ds);
    cr_expect_eq(eval_load_wisdm(dir, "magnet", &ds, &dropped, &nd, eb, sizeof(eb)), CORE_ECONFIG);
    ts_rmtree(dir);
    free(dir);
}

/* The real WISDM folder, when present: the six copies of subject 1610's accel file are
 * dropped, and the subject-disjoint split holds. */
Test(eval_readers, wisdm_real_duplicates, .timeout = 120)
{
    char dir[4096], eb[512];
    char **dropped = NULL;
    size_t nd = 0, bad = 0;
    struct eval_data ds;
    struct stat st;
    snprintf(dir, sizeof(dir), "%s/wisdm/arff_files/phone/accel", GCDP_DATA_DIR);
    if (stat(dir, &st) != 0)
        cr_skip_test("no WISDM data at %s", dir);
    snprintf(dir, sizeof(dir), "%s/wisdm", GCDP_DATA_DIR);
    cr_assert_eq(eval_load_wisdm(dir, "accel", &ds, &dropped, &nd, eb, sizeof(eb)), CORE_OK, "%s",
                 eb);
    cr_expect_eq(nd, 6);
    for (size_t i = 0; i < nd; i++) {
        int ok = 0;
        for (int s = 1611; s <= 1617; s++) {
            char nm[64];
            snprintf(nm, sizeof(nm), "data_%d_accel_phone.arff", s);
            ok |= s != 1614 && strstr(dropped[i], nm) != NULL;
        }
        cr_expect(ok, "dropped %s", dropped[i]);
        free(dropped[i]);
    }
    free(dropped);
    cr_expect_eq(ds.n, 23074 - 6 * 404);
    int64_t *g = malloc(ds.n * sizeof(int64_t));
    for (size_t i = 0; i < ds.n; i++)
        g[i] = ds.order[i] / 1000000; /* subject */
    cr_expect_eq(eval_split_check(&ds, g, &bad), CORE_OK);
    free(g);
    eval_data_free(&ds);
}

/* ------------------------------------------------------------ smoke run */

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* the GC-DP cell of the table row starting with `row` in section `sec` */
static void table_cell(const char *md, const char *sec, const char *row, int col, char *out,
                       size_t n)
{
    const char *s = strstr(md, sec), *r;
    cr_assert(s, "section %s", sec);
    r = strstr(s, row);
    cr_assert(r, "row %s", row);
    for (int c = 0; c < col; c++) {
        r = strchr(r + 1, '|');
        cr_assert(r);
    }
    const char *e = strchr(r + 1, '|');
    snprintf(out, n, "%.*s", (int)(e - r - 1), r + 1);
}

Test(eval_smoke, whole_harness_two_eps_two_draws, .timeout = 300)
{
    char *dir = ts_tmpdir(), p[4200], eb[512] = "";
    struct eval_opts o;
    eval_opts_default(&o);
    o.dataset = "smoke";
    o.out_dir = dir;
    o.n_eps = 2;
    o.eps[0] = 0.5;
    o.eps[1] = 1.0;
    o.draws = 2;
    o.tune_draws = 2;
    o.runtime = false;
    o.plots = false;
    o.quiet = true;
    cr_assert_eq(eval_run(&o, eb, sizeof(eb)), CORE_OK, "%s", eb);

    snprintf(p, sizeof(p), "%s/smoke/draws.csv", dir);
    char *csv = ts_read_file(p, NULL);
    cr_assert(csv);
    /* header + τ: 5 x (2 tuning + 2 test) + main: 2 ε x (5 mechanisms x 2 + NonPrivate) +
     * ablations 4 x 2 */
    cr_expect_eq(count_lines(csv), 1 + 20 + 22 + 8);
    /* mean GC-DP task F1 at ε = 1 from the CSV */
    double sum = 0.0;
    int n = 0;
    for (char *l = strstr(csv, "\nsmoke,main,gcdp,1,"); l;
         l = strstr(l + 1, "\nsmoke,main,gcdp,1,")) {
        char *f = l + 1;
        for (int c = 0; c < 9; c++)
            f = strchr(f, ',') + 1;
        sum += strtod(f, NULL);
        n++;
    }
    cr_assert_eq(n, 2);

    snprintf(p, sizeof(p), "%s/smoke/tables.md", dir);
    char *md = ts_read_file(p, NULL);
    cr_assert(md);
    const char *secs[] = {"## Table 6", "## Table 8", "## Table 9", "## Table 10", "## Table 11"};
    for (size_t i = 0; i < 5; i++)
        cr_expect(strstr(md, secs[i]), "missing %s", secs[i]);
    char cell[64], cell2[64], want[64];
    table_cell(md, "## Table 8", "| 1.0 |", 6, cell, sizeof(cell));
    snprintf(want, sizeof(want), " %.1f ±", 100.0 * sum / n);
    cr_expect(strncmp(cell, want, strlen(want)) == 0, "Table 8 GC-DP '%s' vs CSV mean '%s'", cell,
              want);
    /* Table 9's attack AUC row equals Table 10's ε = 1 row; Table 11's GC-DP column equals
     * Table 7's */
    table_cell(md, "## Table 9", "| attack AUC |", 6, cell, sizeof(cell));
    table_cell(md, "## Table 10", "| 1.0 |", 6, cell2, sizeof(cell2));
    cr_expect_str_eq(cell, cell2);
    table_cell(md, "## Table 11", "| F1 (%) |", 5, cell, sizeof(cell));
    table_cell(md, "## Table 8", "| 1.0 |", 6, cell2, sizeof(cell2));
    cr_expect_str_eq(cell, cell2);
    /* exactly one selected τ */
    const char *sel = strstr(md, "(selected)");
    cr_expect(sel && !strstr(sel + 1, "(selected)"));

    /* the tables are recomputable from the preserved draws */
    char md2[4200];
    snprintf(md2, sizeof(md2), "%s/again.md", dir);
    snprintf(p, sizeof(p), "%s/smoke/draws.csv", dir);
    cr_assert_eq(eval_tables_from_csv(p, md2, eb, sizeof(eb)), CORE_OK, "%s", eb);
    char *again = ts_read_file(md2, NULL);
    cr_expect_str_eq(again, md);
    free(again);
    free(md);
    free(csv);
    ts_rmtree(dir);
    free(dir);
}

/* ------------------------------------------------------------ the two readings */

static struct cal_theta *theta_smoke(double tau_c)
{
    struct eval_data ds;
    struct cal_matrix *mx = NULL;
    struct cal_opts o;
    struct cal_theta *t = NULL;
    char eb[256];
    json_t *nd = json_pack("[ff]", 0.0, 1.0);
    cr_assert_eq(eval_load_smoke(5, &ds, NULL, 0), CORE_OK);
    cr_assert_eq(
        cal_matrix_from_arrays(180, ds.d, ds.x, (const char *const *)ds.names, ds.y, 2, &mx),
        CORE_OK);
    cal_opts_default(&o);
    o.task = CAL_TASK_CLASSIFY;
    o.tau = 0.2;
    o.tau_c = tau_c;
    o.norm_default = nd;
    o.version = 1;
    o.threads = 1;
    cr_assert_eq(cal_calibrate(mx, &o, NULL, &t, NULL, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cal_matrix_free(mx);
    json_decref(nd);
    eval_data_free(&ds);
    return t;
}

/* Point 1 of docs/evaluation.md: with one coordinate per node the literal ξ̂ has no graph
 * term (compression changes nothing); the neighbour reading has one. */
Test(eval_readings, literal_xi_has_no_graph_term)
{
    struct cal_theta *a = theta_smoke(0.85), *b = theta_smoke(1.0);
    struct eval_data ds;
    double xa[8], xb[8];
    int greater = 0;
    cr_assert_eq(eval_load_smoke(5, &ds, NULL, 0), CORE_OK);
    cr_assert(a->n_edges > 0, "smoke data must give a graph");
    for (size_t k = 0; k < a->d; k++)
        cr_expect(a->xi_hat[k] == b->xi_hat[k], "literal xi[%zu] depends on tau_c", k);
    cr_assert_eq(eval_xi_neighbour(a, 180, ds.x, 0.5, xa), CORE_OK);
    for (size_t k = 0; k < a->d; k++) {
        cr_expect(xa[k] >= a->xi_hat[k], "neighbour reading below literal at %zu", k);
        greater += xa[k] > a->xi_hat[k];
    }
    cr_expect(greater > 0, "neighbour reading adds a graph term somewhere");
    a->gamma = 0.0; /* without expansion both readings coincide exactly */
    cr_assert_eq(eval_xi_neighbour(a, 180, ds.x, 0.5, xb), CORE_OK);
    for (size_t k = 0; k < a->d; k++)
        cr_expect(xb[k] == a->xi_hat[k], "gamma = 0: readings differ at %zu", k);
    cal_theta_free(a);
    cal_theta_free(b);
    eval_data_free(&ds);
}

/* Point 2: min-max exposure gives one node 0; the r / max r reading does not. Hand case:
 * path 0 - 1 - 2 with w = 0.5, α = 0.7: d = (0.5, 1, 0.5), W~_01 = 0.5 / sqrt(0.5),
 * r_0 = 0.35 + 0.3 W~_01 · 1, r_1 = 0.7 + 0.3 · 2 W~_01 · 0.5. */
Test(eval_readings, exposure_maxnorm_hand_case)
{
    struct cal_theta *t = NULL;
    struct cal_edge e[2] = {{0, 1, 0.5}, {1, 2, 0.5}};
    double r[3], wt = 0.5 / sqrt(0.5);
    cr_assert_eq(cal_theta_new(3, 3, &t), CORE_OK);
    t->alpha = 0.7;
    cr_assert_eq(cal_theta_set_edges(t, e, 2), CORE_OK);
    t->exposure[0] = 0.0;
    t->exposure[1] = 1.0;
    t->exposure[2] = 0.0;
    eval_exposure(t, EVAL_EXPO_MINMAX, r);
    cr_expect(r[0] == 0.0 && r[1] == 1.0 && r[2] == 0.0);
    eval_exposure(t, EVAL_EXPO_MAXNORM, r);
    double r0 = 0.35 + 0.3 * wt, r1 = 0.7 + 0.3 * wt;
    cr_expect_float_eq(r[0], r0 / r1, 1e-12);
    cr_expect_float_eq(r[1], 1.0, 1e-12);
    cr_expect_float_eq(r[2], r0 / r1, 1e-12);
    cal_theta_free(t);
}

/* ------------------------------------------------------------ command line */

static int run_cmd(const char *args)
{
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "'%s' eval %s >/dev/null 2>&1", GCDP_BIN, args);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(eval_cli, usage_errors_exit_2_runtime_errors_exit_1, .timeout = 60)
{
    char *dir = ts_tmpdir(), args[4300];
    cr_expect_eq(run_cmd("--help"), 0);
    cr_expect_eq(run_cmd("--draws 0"), 2);
    cr_expect_eq(run_cmd("--eps 1,-2"), 2);
    cr_expect_eq(run_cmd("--exposure other"), 2);
    snprintf(args, sizeof(args), "--dataset nosuch --out '%s'", dir);
    cr_expect_eq(run_cmd(args), 2);
    snprintf(args, sizeof(args), "--eps-cal 1 --out '%s' --dataset smoke", dir);
    cr_expect_eq(run_cmd(args), 2, "private calibration with a tau grid is refused");
    snprintf(args, sizeof(args), "--tables-from '%s/missing.csv'", dir);
    cr_expect_eq(run_cmd(args), 1);
    ts_rmtree(dir);
    free(dir);
}

/* ------------------------------------------------------------ dataset from a config file */

static void write_csv_dataset(const char *dir, const char *extra_key)
{
    struct eval_data ds;
    char p[4200];
    FILE *f;
    cr_assert_eq(eval_load_smoke(3, &ds, NULL, 0), CORE_OK);
    snprintf(p, sizeof(p), "%s/w.csv", dir);
    f = fopen(p, "w");
    cr_assert(f);
    fprintf(f, "when,split,label,weekend,a,b,c,d\n");
    for (size_t i = 0; i < ds.n; i++)
        fprintf(f, "%zu,%s,%d,%d,%.6f,%.6f,%.6f,%.6f\n", i,
                ds.split[i] == EVAL_TRAIN ? "train"
                : ds.split[i] == EVAL_VAL ? "val"
                                          : "test",
                ds.y[i], ds.attr[i], 20 + 5 * ds.x[i * 4], 20 + 5 * ds.x[i * 4 + 1],
                ds.x[i * 4 + 2] * 1000, ds.x[i * 4 + 3] * 1000);
    fclose(f);
    eval_data_free(&ds);
    snprintf(p, sizeof(p), "%s/w.json", dir);
    f = fopen(p, "w");
    cr_assert(f);
    fprintf(f,
            "{\"name\": \"mine\", \"file\": \"w.csv\", \"split_column\": \"split\","
            " \"label_column\": \"label\", \"attribute_column\": \"weekend\","
            " \"nodes\": [\"a\", \"b\", \"c\", \"d\"], \"task\": \"positive\","
            " \"sensitivity\": {\"stat\": \"mean\", \"min_samples\": 14, \"max_samples\": 15,"
            " \"interp_gap\": 1}%s}\n",
            extra_key);
    fclose(f);
}

Test(eval_csv, dataset_from_config_file_runs, .timeout = 120)
{
    char *dir = ts_tmpdir(), cfg[4200], p[4300], eb[512] = "";
    struct eval_opts o;
    struct eval_data ds;
    write_csv_dataset(dir, "");
    snprintf(cfg, sizeof(cfg), "%s/w.json", dir);
    cr_assert_eq(eval_load_csv(cfg, &ds, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_expect_eq(ds.n, 300);
    cr_expect_eq(ds.d, 4);
    cr_expect_eq(ds.n_classes, 2);
    for (size_t i = 0; i < ds.n * ds.d; i++)
        cr_expect(ds.x[i] >= 0.0 && ds.x[i] <= 1.0);
    eval_data_free(&ds);
    eval_opts_default(&o);
    o.dataset = "csv";
    o.data_dir = cfg;
    o.out_dir = dir;
    o.n_eps = 1;
    o.draws = 2;
    o.tune_draws = 1;
    o.runtime = o.plots = false;
    o.quiet = true;
    cr_assert_eq(eval_run(&o, eb, sizeof(eb)), CORE_OK, "%s", eb);
    snprintf(p, sizeof(p), "%s/mine/tables.md", dir);
    char *md = ts_read_file(p, NULL);
    cr_assert(md);
    cr_expect(strstr(md, "## Table 11"));
    free(md);
    /* unknown keys and bad columns are configuration errors naming the key */
    write_csv_dataset(dir, ", \"colour\": 1");
    cr_expect_eq(eval_load_csv(cfg, &ds, eb, sizeof(eb)), CORE_ECONFIG);
    cr_expect(strstr(eb, "colour"), "%s", eb);
    write_csv_dataset(dir, ", \"normalized\": false, \"task_desc\": \"x\"");
    cr_expect_eq(eval_load_csv(cfg, &ds, eb, sizeof(eb)), CORE_OK, "%s", eb);
    eval_data_free(&ds);
    ts_rmtree(dir);
    free(dir);
}
