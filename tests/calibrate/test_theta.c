/* test_theta.c - θ: lifecycle, validation invariants, strict JSON round trip, schema. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cal/theta.h"
#include "test_support.h"

/* A small valid θ: 3 nodes a, b, c; coordinates a, b, and "ab" = a - 0.5 b. */
static struct cal_theta *sample(void)
{
    struct cal_theta *t = NULL;
    const uint32_t ab[] = {1, 0};
    const double coef[] = {-0.5, 1.0};
    const struct cal_edge e[] = {{0, 1, 0.9}, {1, 2, 0.3}};
    cr_assert_eq(cal_theta_new(3, 3, &t), CORE_OK);
    cr_assert_eq(cal_theta_set_node(t, 0, "a"), CORE_OK);
    cr_assert_eq(cal_theta_set_node(t, 1, "b"), CORE_OK);
    cr_assert_eq(cal_theta_set_node(t, 2, "c"), CORE_OK);
    cr_assert_eq(cal_theta_set_coord(t, 0, "a", 1, (uint32_t[]){0}, NULL), CORE_OK);
    cr_assert_eq(cal_theta_set_coord(t, 1, "b", 1, (uint32_t[]){1}, NULL), CORE_OK);
    cr_assert_eq(cal_theta_set_coord(t, 2, "ab", 2, ab, coef), CORE_OK);
    cr_assert_eq(cal_theta_set_edges(t, e, 2), CORE_OK);
    snprintf(t->created_at, sizeof(t->created_at), "2026-11-29T18:00:00Z");
    t->version = 42;
    t->exposure[0] = 0.5;
    t->exposure[1] = 1.0;
    t->mu[0] = 1.0;
    t->mu[2] = 0.25;
    t->xi_hat[1] = 0.125;
    t->norm_hi[2] = 2.5;
    return t;
}

static json_t *to_json(const struct cal_theta *t)
{
    json_t *j = NULL;
    char eb[256];
    cr_assert_eq(cal_theta_to_json(t, &j, eb, sizeof(eb)), CORE_OK, "%s", eb);
    return j;
}

Test(theta, set_coord_sorts_nodes_and_keeps_coefficients)
{
    struct cal_theta *t = sample();
    cr_assert_eq(t->coords[2].nodes[0], 0);
    cr_assert_eq(t->coords[2].coef[0], 1.0, "coef follows its node");
    cr_assert_eq(t->coords[2].coef[1], -0.5);
    cr_assert_float_eq(cal_theta_coord_exposure(t, 2), 0.75, 1e-15, "mean of r over a(k)");
    cr_assert_eq(cal_theta_set_coord(t, 0, "x", 2, (uint32_t[]){1, 1}, NULL), CORE_EINVAL,
                 "duplicate node");
    cr_assert_eq(cal_theta_set_coord(t, 0, "x", 1, (uint32_t[]){3}, NULL), CORE_EINVAL,
                 "node out of range");
    cal_theta_free(t);
}

Test(theta, json_round_trip_is_exact)
{
    struct cal_theta *t = sample(), *u = NULL;
    json_t *j, *j2;
    char eb[256];
    t->mode = CAL_MODE_PRIVATE;
    t->eps_cal = (struct cal_eps_cal){0.5, 0.1, 0.2, 0.2};
    t->delta_S = 3.0;
    cal_theta_release_alloc(t);
    for (size_t k = 0; k < 3; k++) {
        t->B[k] = 0.01;
        t->s[k] = 0.02;
        t->eps[k] = 0.3;
    }
    t->eps_rel = 1.0;
    snprintf(t->mechanism, sizeof(t->mechanism), "gcdp");
    j = to_json(t);
    cr_assert_eq(cal_theta_from_json(j, &u, eb, sizeof(eb)), CORE_OK, "%s", eb);
    j2 = to_json(u);
    cr_assert(json_equal(j, j2), "θ → JSON → θ → JSON is the identity");
    cr_assert_eq(u->version, 42);
    cr_assert_eq(u->n_edges, 2);
    cr_assert_eq(u->edges[1].w, 0.3);
    cr_assert_float_eq(cal_theta_eps_cal_total(u), 1.0, 1e-15);
    json_decref(j);
    json_decref(j2);
    cal_theta_free(t);
    cal_theta_free(u);
}

/* Mutate one field of a valid θ document and expect an error naming it. */
static void expect_bad(const char *field, json_t *value, const char *needle, core_err want)
{
    struct cal_theta *t = sample(), *u = NULL;
    json_t *j = to_json(t);
    char eb[256] = "";
    core_err rc;
    if (value)
        json_object_set_new(j, field, value);
    else
        json_object_del(j, field);
    rc = cal_theta_from_json(j, &u, eb, sizeof(eb));
    cr_assert_eq(rc, want, "%s: got %s (%s)", field, core_errname(rc), eb);
    cr_assert_null(u);
    cr_assert(strstr(eb, needle), "error \"%s\" should mention \"%s\"", eb, needle);
    json_decref(j);
    cal_theta_free(t);
}

Test(theta, strict_parse_names_the_bad_field)
{
    expect_bad("schema", json_string("gcdp.theta/0"), "schema", CORE_EPARSE);
    expect_bad("bogus", json_integer(1), "bogus: unknown field", CORE_EPARSE);
    expect_bad("mu", json_pack("[f,f,f]", 0.1, 1.5, 0.0), "mu[1]", CORE_EINVAL);
    expect_bad("mu", json_pack("[f,f]", 0.1, 0.5), "mu: length 2, expected 3", CORE_EINVAL);
    expect_bad("exposure", json_pack("[f,s,f]", 0.1, "x", 0.0), "exposure[1]", CORE_EPARSE);
    expect_bad("lambda", json_real(1.5), "lambda", CORE_EINVAL);
    expect_bad("L", json_integer(65), "L", CORE_EINVAL);
    expect_bad("K", json_integer(0), "K", CORE_EINVAL);
    expect_bad("kappa", json_real(0.5), "kappa", CORE_EINVAL);
    expect_bad("tau", NULL, "tau: missing", CORE_EPARSE);
    expect_bad("mode", json_string("secret"), "mode", CORE_EINVAL);
    expect_bad("edges", json_pack("[[i,i,f]]", 1, 0, 0.5), "edges[0]", CORE_EINVAL);
    expect_bad("edges", json_pack("[[i,i,f]]", 0, 7, 0.5), "edges[0]", CORE_EINVAL);
    expect_bad("edges", json_pack("[[i,i,f]]", 0, 1, 0.1), "weight not in [tau,1]", CORE_EINVAL);
    expect_bad("eps_cal",
               json_pack("{s:f,s:f,s:f,s:f}", "G", 1.0, "tau", 0.0, "mu", 0.0, "xi", 0.0),
               "must be 0 in public mode", CORE_EINVAL);
    expect_bad("coords",
               json_pack("[{s:s,s:[i,i],s:[f]},{s:s,s:[i],s:[f]},{s:s,s:[i],s:[f]}]", "name", "a",
                         "nodes", 0, 1, "coef", 1.0, "name", "b", "nodes", 1, "coef", 1.0, "name",
                         "c", "nodes", 2, "coef", 1.0),
               "coords[0]", CORE_EPARSE);
    expect_bad(
        "eps_cal",
        json_pack("{s:f,s:f,s:f,s:f,s:f}", "G", 0.0, "tau", 0.0, "mu", 0.0, "xi", 0.0, "zeta", 0.0),
        "eps_cal.zeta: unknown field", CORE_EPARSE);
    expect_bad("sensitivity",
               json_pack("{s:s,s:f,s:f,s:f,s:f}", "choice", "tight", "delta_S", 0.0, "delta_mu",
                         0.0, "delta_xi", 0.0, "delta_U", 0.0),
               "sensitivity.choice", CORE_EINVAL);
    expect_bad("xi_hat", json_pack("[f,f,f]", 0.0, 2.0, 0.0), "xi_hat[1]", CORE_EINVAL);
}

Test(theta, degree_cap_and_release_invariants_checked)
{
    struct cal_theta *t = sample();
    char eb[256];
    t->K = 1; /* node 1 has degree 2 */
    cr_assert_eq(cal_theta_validate(t, eb, sizeof(eb)), CORE_EINVAL);
    cr_assert(strstr(eb, "degree cap"), "%s", eb);
    t->K = 5;
    cal_theta_release_alloc(t);
    for (size_t k = 0; k < 3; k++) {
        t->B[k] = 0.5;
        t->s[k] = 0.5;
        t->eps[k] = 0.4;
    }
    t->eps_rel = 1.0;
    snprintf(t->mechanism, sizeof(t->mechanism), "gcdp");
    cr_assert_eq(cal_theta_validate(t, eb, sizeof(eb)), CORE_EINVAL, "Σε = 1.2 > ε_rel");
    cr_assert(strstr(eb, "exceeds eps_rel"), "%s", eb);
    t->eps[2] = 0.2;
    cr_assert_eq(cal_theta_validate(t, eb, sizeof(eb)), CORE_OK, "%s", eb);
    t->s[1] = 0.4;
    cr_assert_eq(cal_theta_validate(t, eb, sizeof(eb)), CORE_EINVAL, "s < B");
    cr_assert(strstr(eb, "s[1]"), "%s", eb);
    t->s[1] = NAN;
    cr_assert_eq(cal_theta_validate(t, eb, sizeof(eb)), CORE_EINVAL, "NaN fails closed");
    t->s[1] = 0.5;
    t->eps[0] = NAN;
    cr_assert_eq(cal_theta_validate(t, eb, sizeof(eb)), CORE_EINVAL, "NaN eps fails closed");
    t->eps[0] = 0.4;
    t->mu[0] = NAN;
    cr_assert_eq(cal_theta_validate(t, eb, sizeof(eb)), CORE_EINVAL, "NaN mu fails closed");
    cal_theta_free(t);
}

Test(theta, private_mode_needs_positive_eps_cal)
{
    struct cal_theta *t = sample();
    char eb[256];
    t->mode = CAL_MODE_PRIVATE;
    cr_assert_eq(cal_theta_validate(t, eb, sizeof(eb)), CORE_EINVAL);
    cr_assert(strstr(eb, "eps_cal"), "%s", eb);
    t->eps_cal.G = 1.0;
    cr_assert_eq(cal_theta_validate(t, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cal_theta_free(t);
}

Test(theta, file_round_trip_and_schema_validation)
{
    char *dir = ts_tmpdir(), path[512], cmd[2048];
    struct cal_theta *t = sample(), *u = NULL;
    char eb[256];
    snprintf(path, sizeof(path), "%s/theta.json", dir);
    cr_assert_eq(cal_theta_save_file(t, path, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(cal_theta_load_file(path, &u, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(u->d, 3);
    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 -c 'import json,sys,jsonschema; "
             "jsonschema.Draft202012Validator(json.load(open(sys.argv[1]))).validate("
             "json.load(open(sys.argv[2])))' %s/theta.schema.json %s",
             GCDP_SCHEMA_DIR, path);
    cr_assert_eq(system(cmd), 0, "θ written by cal_theta_save_file validates against the schema");
    ts_write_file(path, "{\"schema\": \"gcdp.theta/1\", ");
    cal_theta_free(u);
    u = NULL;
    cr_assert_eq(cal_theta_load_file(path, &u, eb, sizeof(eb)), CORE_EPARSE);
    cr_assert(strstr(eb, path), "parse error names the file: %s", eb);
    cal_theta_free(t);
    ts_rmtree(dir);
    free(dir);
}
