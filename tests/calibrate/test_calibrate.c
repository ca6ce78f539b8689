/* test_calibrate.c - one calibration run end to end: loaders, options and their errors,
 * public and private mode (seeded noise source), ε_cal accounting. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cal/calibrate.h"
#include "cal/config.h"
#include "cal/matrix.h"
#include "seeded_rng.h"
#include "test_support.h"

#define OCC GCDP_DATA_DIR "/occupancy/datatraining.txt"

static struct cal_matrix *load_occ(void)
{
    struct cal_matrix *mx = NULL;
    char eb[512] = "";
    cr_assert_eq(cal_matrix_load(OCC, CAL_FORMAT_OCCUPANCY, NULL, 100000, &mx, eb, sizeof(eb)),
                 CORE_OK, "%s", eb);
    return mx;
}

Test(calibrate, occupancy_loader_maps_channels_and_labels)
{
    struct cal_matrix *mx = load_occ();
    cr_assert_eq(mx->m, 5);
    cr_assert_eq(mx->n, 8143, "rows of datatraining.txt");
    cr_assert_str_eq(mx->names[0], "temperature");
    cr_assert_str_eq(mx->names[4], "humidity_ratio");
    cr_assert_eq(mx->n_classes, 2);
    cr_assert_float_eq(mx->x[0], 23.18, 1e-12, "first Temperature value");
    cr_assert_float_eq(mx->x[3], 721.25, 1e-12, "first CO2 value");
    cal_matrix_free(mx);
}

Test(calibrate, csv_loader_errors_name_line_and_column)
{
    char *dir = ts_tmpdir(), p[512], eb[512] = "";
    struct cal_matrix *mx = NULL;
    snprintf(p, sizeof(p), "%s/m.csv", dir);
    ts_write_file(p, "a,b,label\n1,2,x\n3,,y\n");
    cr_assert_eq(cal_matrix_load(p, CAL_FORMAT_CSV, "label", 100, &mx, eb, sizeof(eb)),
                 CORE_EPARSE);
    cr_assert(strstr(eb, "line 3") && strstr(eb, "\"b\""), "%s", eb);
    ts_write_file(p, "a,b,label\n1,2,x\n3,4,y\n5,6,x\n");
    cr_assert_eq(cal_matrix_load(p, CAL_FORMAT_CSV, "label", 100, &mx, eb, sizeof(eb)), CORE_OK,
                 "%s", eb);
    cr_assert_eq(mx->m, 2, "label column is not a node");
    cr_assert_eq(mx->n_classes, 2);
    cr_assert_eq(mx->labels[2], 0, "x first seen -> class 0");
    cal_matrix_free(mx);
    mx = NULL;
    cr_assert_eq(cal_matrix_load(p, CAL_FORMAT_CSV, "label", 2, &mx, eb, sizeof(eb)), CORE_ETOOBIG,
                 "row cap");
    ts_write_file(p, "a,a\n1,2\n3,4\n");
    cr_assert_eq(cal_matrix_load(p, CAL_FORMAT_CSV, NULL, 100, &mx, eb, sizeof(eb)), CORE_EPARSE);
    cr_assert(strstr(eb, "duplicate"), "%s", eb);
    ts_write_file(p, "a,b\n1,2,3\n");
    cr_assert_eq(cal_matrix_load(p, CAL_FORMAT_CSV, NULL, 100, &mx, eb, sizeof(eb)), CORE_EPARSE);
    cr_assert(strstr(eb, "line 2"), "%s", eb);
    ts_rmtree(dir);
    free(dir);
}

Test(calibrate, public_classify_on_occupancy)
{
    struct cal_matrix *mx = load_occ();
    struct cal_opts o;
    struct cal_theta *t = NULL;
    struct cal_report rep;
    char eb[512] = "";
    size_t light = 0;
    cal_opts_default(&o);
    o.format = CAL_FORMAT_OCCUPANCY;
    o.task = CAL_TASK_CLASSIFY;
    o.tau_from_grid = true;
    o.version = 7;
    cr_assert_eq(cal_calibrate(mx, &o, NULL, &t, &rep, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(cal_theta_validate(t, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(t->mode, CAL_MODE_PUBLIC);
    cr_assert_eq(cal_theta_eps_cal_total(t), 0.0);
    cr_assert_eq(t->version, 7);
    cr_assert_eq(t->d, 5);
    cr_assert_eq(t->n_tau_grid, 5);
    cr_assert_eq(t->tau, o.tau_grid[rep.tau_index], "tau from the grid");
    for (size_t g = 0; g < 5; g++) /* argmax with ties to the smaller tau */
        cr_assert(rep.tau_utility[g] < rep.tau_utility[rep.tau_index] ||
                      (rep.tau_utility[g] == rep.tau_utility[rep.tau_index] && g >= rep.tau_index),
                  "grid %zu", g);
    cr_assert_gt(rep.f1_full, 0.9, "occupancy validation macro-F1 %g", rep.f1_full);
    cr_assert_eq(cal_theta_node_index(t, "light", &light), CORE_OK);
    cr_assert_eq(t->mu[light], 1.0, "light is the most useful channel for occupancy");
    cr_assert_eq(t->norm_hi[light], 2000.0, "built-in public physical range");
    cal_theta_free(t);
    cal_matrix_free(mx);
}

/* Private mode with every part of ε_cal; the same seed gives the same θ; ε_cal is recorded
 * exactly and Δ₁S is the universal P = 10 for 5 nodes. */
static struct cal_theta *private_run(uint64_t seed, struct cal_opts *o)
{
    struct cal_matrix *mx = load_occ();
    struct ts_rng *r = ts_rng_seeded_new(seed);
    struct cal_theta *t = NULL;
    char eb[512] = "";
    cr_assert_eq(cal_calibrate(mx, o, ts_rng_iface(r), &t, NULL, eb, sizeof(eb)), CORE_OK, "%s",
                 eb);
    ts_rng_free(r);
    cal_matrix_free(mx);
    return t;
}

static void private_opts(struct cal_opts *o)
{
    cal_opts_default(o);
    o->format = CAL_FORMAT_OCCUPANCY;
    o->mode = CAL_MODE_PRIVATE;
    o->task = CAL_TASK_CLASSIFY;
    o->tau_from_grid = true;
    o->eps = (struct cal_eps_cal){1.0, 0.25, 0.5, 0.25};
    o->version = 3;
}

Test(calibrate, private_mode_records_eps_cal_and_is_reproducible_with_a_seed)
{
    struct cal_opts o;
    struct cal_theta *a, *b;
    private_opts(&o);
    a = private_run(1, &o);
    b = private_run(1, &o);
    cr_assert_eq(a->mode, CAL_MODE_PRIVATE);
    cr_assert_float_eq(cal_theta_eps_cal_total(a), 2.0, 1e-15);
    cr_assert_eq(a->eps_cal.G, 1.0);
    cr_assert_eq(a->delta_S, 10.0, "universal P = M(M-1)/2");
    cr_assert_eq(a->delta_mu, 5.0, "Δ₁V_μ <= d");
    cr_assert_eq(a->delta_xi, 5.0);
    cr_assert_eq(a->delta_U, 1.0);
    cr_assert_eq(a->n_edges, b->n_edges);
    cr_assert_eq(a->tau, b->tau);
    for (size_t k = 0; k < a->d; k++) {
        cr_assert_eq(a->mu[k], b->mu[k]);
        cr_assert_eq(a->xi_hat[k], b->xi_hat[k]);
        cr_assert(a->mu[k] >= 0.0 && a->mu[k] <= 1.0, "projected to [0,1]");
    }
    cal_theta_free(a);
    cal_theta_free(b);
}

Test(calibrate, private_mode_expansion_sensitivity)
{
    struct cal_opts o;
    struct cal_theta *t;
    private_opts(&o);
    o.sens = CAL_SENS_EXPANSION;
    o.expansion_nodes = 2;
    t = private_run(2, &o);
    cr_assert_eq(t->sens, CAL_SENS_EXPANSION);
    cr_assert_eq(t->delta_S, 2.0 * 4.0 - 1.0, "|A|(M-1) - |A|(|A|-1)/2 = 7");
    cal_theta_free(t);
    cr_assert_eq(cal_delta_s(10, CAL_SENS_UNIVERSAL, 3), 45.0);
    cr_assert_eq(cal_delta_s(10, CAL_SENS_EXPANSION, 1), 9.0);
    cr_assert_eq(cal_delta_s(10, CAL_SENS_EXPANSION, 10), 45.0, "capped at P");
}

Test(calibrate, private_mode_fails_closed_when_the_rng_fails)
{
    struct cal_matrix *mx = load_occ();
    struct ts_rng *r = ts_rng_failing_new(5, 16);
    struct cal_theta *t = NULL;
    struct cal_opts o;
    char eb[512] = "";
    private_opts(&o);
    cr_assert_eq(cal_calibrate(mx, &o, ts_rng_iface(r), &t, NULL, eb, sizeof(eb)), CORE_ERNG, "%s",
                 eb);
    cr_assert_null(t, "no θ on a noise failure");
    ts_rng_free(r);
    cal_matrix_free(mx);
}

static void expect_cfg_error(struct cal_opts *o, const char *needle, core_err want)
{
    struct cal_matrix *mx = load_occ();
    struct ts_rng *r = ts_rng_seeded_new(9);
    struct cal_theta *t = NULL;
    char eb[512] = "";
    core_err rc = cal_calibrate(mx, o, ts_rng_iface(r), &t, NULL, eb, sizeof(eb));
    cr_assert_eq(rc, want, "got %s: %s", core_errname(rc), eb);
    cr_assert_null(t);
    cr_assert(strstr(eb, needle), "\"%s\" should mention \"%s\"", eb, needle);
    ts_rng_free(r);
    cal_matrix_free(mx);
}

Test(calibrate, inconsistent_budgets_are_config_errors_naming_the_key)
{
    struct cal_opts o;
    cal_opts_default(&o);
    o.eps.G = 1.0;
    expect_cfg_error(&o, "must be 0 in public mode", CORE_ECONFIG);
    private_opts(&o);
    o.eps.G = 0.0;
    expect_cfg_error(&o, "calibrate.eps_G", CORE_ECONFIG);
    private_opts(&o);
    o.eps.mu = 0.0;
    expect_cfg_error(&o, "calibrate.eps_mu", CORE_ECONFIG);
    private_opts(&o);
    o.tau_from_grid = false;
    expect_cfg_error(&o, "calibrate.eps_tau", CORE_ECONFIG);
}

Test(calibrate, dimension_mismatches_are_clear_errors)
{
    struct cal_opts o;
    json_t *coords = json_pack("[{s:s, s:[s,s]}]", "name", "th", "nodes", "temperature", "nope");
    json_t *norm = json_pack("{s:[f,f]}", "pressure", 0.0, 1.0);
    json_t *w = json_pack("[f,f]", 1.0, 2.0);
    cal_opts_default(&o);
    o.format = CAL_FORMAT_OCCUPANCY;
    o.coords = coords;
    expect_cfg_error(&o, "calibrate.coords[0].nodes[1]", CORE_EINVAL);
    o.coords = NULL;
    o.norm = norm;
    expect_cfg_error(&o, "calibrate.norm: node \"pressure\"", CORE_ECONFIG);
    o.norm = NULL;
    o.task_weights = w;
    expect_cfg_error(&o, "calibrate.task_weights: 2 weights for 5 coordinates", CORE_EINVAL);
    json_decref(coords);
    json_decref(norm);
    json_decref(w);
}

/* d != M: coordinates that combine several nodes. */
Test(calibrate, multi_node_coordinates)
{
    struct cal_matrix *mx = load_occ();
    struct cal_opts o;
    struct cal_theta *t = NULL;
    char eb[512] = "";
    json_t *coords =
        json_pack("[{s:s, s:[s,s], s:[f,f]}, {s:s, s:[s]}]", "name", "climate", "nodes",
                  "temperature", "humidity", "coef", 0.5, 0.5, "name", "co2", "nodes", "co2");
    cal_opts_default(&o);
    o.format = CAL_FORMAT_OCCUPANCY;
    o.coords = coords;
    o.task = CAL_TASK_CLASSIFY;
    cr_assert_eq(cal_calibrate(mx, &o, NULL, &t, NULL, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(t->d, 2);
    cr_assert_eq(t->n_nodes, 5);
    cr_assert_eq(t->coords[0].n, 2);
    cr_assert_eq(t->coords[0].coef[1], 0.5);
    for (size_t k = 0; k < 2; k++)
        cr_assert(t->xi_hat[k] >= 0.0 && t->xi_hat[k] <= t->g_max);
    cal_theta_free(t);
    cal_matrix_free(mx);
    json_decref(coords);
}

Test(calibrate, options_from_configuration_keys)
{
    const struct core_cfg_key *tables[] = {cal_config_keys};
    struct core_config *cfg = core_config_new(tables, 1);
    struct cal_opts o;
    char eb[512] = "";
    cr_assert_not_null(cfg);
    cr_assert_eq(cal_opts_from_config(cfg, &o, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(o.L, 3);
    cr_assert_float_eq(o.lambda, 0.6, 0.0, "Table 5 default");
    cr_assert_eq(o.K, 5);
    cr_assert_eq(o.n_tau_grid, 5);
    cr_assert_eq(core_config_set(cfg, "calibrate.mode", "private", "flag", eb, sizeof(eb)),
                 CORE_OK);
    cr_assert_eq(core_config_set(cfg, "calibrate.eps_G", "0.5", "flag", eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(cal_opts_from_config(cfg, &o, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(o.mode, CAL_MODE_PRIVATE);
    cr_assert_eq(o.eps.G, 0.5);
    cr_assert_neq(core_config_set(cfg, "calibrate.lambda", "1.5", "flag", eb, sizeof(eb)), CORE_OK);
    cr_assert(strstr(eb, "calibrate.lambda"), "%s", eb);
    cr_assert_neq(core_config_set(cfg, "calibrate.tau_grid", "[0.1, 2]", "flag", eb, sizeof(eb)),
                  CORE_OK);
    cr_assert_neq(core_config_set(cfg, "calibrate.norm", "{\"a\": [1, 0]}", "flag", eb, sizeof(eb)),
                  CORE_OK);
    core_config_free(cfg);
}

/* Table 5 is stated once, in the calibrate.* key rows: cal_opts_default, an untouched
 * configuration and a new θ's parameters all read it. */
Test(calibrate, table5_defaults_are_the_key_rows)
{
    const struct core_cfg_key *tables[] = {cal_config_keys};
    struct core_config *cfg = core_config_new(tables, 1);
    struct cal_opts d, c;
    struct cal_theta *t = NULL;
    char eb[512] = "";

    cr_assert_not_null(cfg);
    cal_opts_default(&d);
    cr_assert_eq(cal_opts_from_config(cfg, &c, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(d.L, 3);
    cr_assert_eq(d.lambda, 0.6);
    cr_assert_eq(d.tau, 0.2);
    cr_assert_eq(d.K, 5);
    cr_assert_eq(d.alpha, 0.7);
    cr_assert_eq(d.gamma, 1.2);
    cr_assert_eq(d.tau_c, 0.85);
    cr_assert_eq(d.kappa, 1.0);
    cr_assert_eq(d.g_max, 1.0);
    cr_assert_eq(d.mask_value, 0.5);
    cr_assert_eq(d.train_frac, 0.7);
    cr_assert_eq(d.max_rows, 1000000);
    cr_assert_eq(c.L, d.L);
    cr_assert_eq(c.lambda, d.lambda);
    cr_assert_eq(c.tau, d.tau);
    cr_assert_eq(c.K, d.K);
    cr_assert_eq(c.alpha, d.alpha);
    cr_assert_eq(c.gamma, d.gamma);
    cr_assert_eq(c.tau_c, d.tau_c);
    cr_assert_eq(c.kappa, d.kappa);
    cr_assert_eq(c.g_max, d.g_max);
    cr_assert_eq(c.mask_value, d.mask_value);
    cr_assert_eq(c.train_frac, d.train_frac);
    cr_assert_eq(c.max_rows, d.max_rows);
    cr_assert_eq(c.threads, d.threads);
    cr_assert_eq(c.version, d.version);
    cr_assert_eq(cal_theta_new(3, 3, &t), CORE_OK);
    cr_assert_eq(t->L, d.L);
    cr_assert_eq(t->lambda, d.lambda);
    cr_assert_eq(t->K, d.K);
    cr_assert_eq(t->tau, d.tau);
    cr_assert_eq(t->tau_c, d.tau_c);
    cal_theta_free(t);
    core_config_free(cfg);
}
