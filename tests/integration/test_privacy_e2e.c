/* test_privacy_e2e.c - the audit's end-to-end check over the embedded broker: replay UCI
 * Occupancy -> ingest with ingest.features = ["max"] -> release --mechanism lap. A window
 * max moves by the whole clipped range when one reading changes, so every released
 * coordinate's sensitivity (scale x eps_k, what the record certifies) must be at least 1
 * (normalized units); release used to certify it as a mean (0.5). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "broker.h"
#include "cal/theta.h"
#include "test_support.h"

#define OCCUPANCY GCDP_DATA_DIR "/occupancy/datatraining.txt"
#define OCC_TEST  GCDP_DATA_DIR "/occupancy/datatest.txt"

static int run_gcdp(const char *const *args, const char *out, const char *err, int timeout_ms)
{
    return ts_wait(ts_spawn(args, out, err), timeout_ms);
}

Test(privacy_e2e, max_feature_is_certified_at_the_clipped_range, .timeout = 240)
{
    struct ts_broker b;
    struct ts_record *rec;
    char p_win[600], p_theta[600], p_out[600], p_led[600], p_err[600], p_plan[600];
    size_t n;
    FILE *f;

    ts_broker_start(&b, NULL);
    const char *replay[] = {"replay",        "--file",      OCCUPANCY, "--set",
                            b.set_bootstrap, "--log-level", "warn",    NULL};
    snprintf(p_err, sizeof(p_err), "%s/err.txt", b.dir);
    cr_assert_eq(run_gcdp(replay, NULL, p_err, 60000), 0, "replay failed");
    const char *ingest[] = {"ingest",      "--exit-idle",
                            "3",           "--flush-on-idle",
                            "--set",       b.set_bootstrap,
                            "--set",       "ingest.features=[\"max\"]",
                            "--set",       "ingest.idle_timeout_ms=0",
                            "--log-level", "warn",
                            NULL};
    cr_assert_eq(run_gcdp(ingest, NULL, p_err, 120000), 0, "ingest failed");
    n = ts_topic_read(b.bootstrap, "gcdp.windows", &rec);
    cr_assert_gt(n, 500u);
    snprintf(p_win, sizeof(p_win), "%s/windows.jsonl", b.dir);
    f = fopen(p_win, "w");
    cr_assert_not_null(f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s\n", rec[i].value);
    fclose(f);
    ts_records_free(rec, n);

    snprintf(p_theta, sizeof(p_theta), "%s/theta.json", b.dir);
    const char *cal[] = {"calibrate", "-i",    OCC_TEST,      "-f",   "occupancy",
                         "-o",        p_theta, "--log-level", "warn", NULL};
    cr_assert_eq(run_gcdp(cal, NULL, p_err, 60000), 0, "calibrate failed");
    snprintf(p_out, sizeof(p_out), "%s/released.jsonl", b.dir);
    snprintf(p_led, sizeof(p_led), "%s/ledger.jsonl", b.dir);
    const char *rel[] = {"release",     "--theta",  p_theta, "--input",     p_win, "--output",
                         p_out,         "--ledger", p_led,   "--mechanism", "lap", "--skip-refused",
                         "--log-level", "warn",     NULL};
    cr_assert_eq(run_gcdp(rel, NULL, p_err, 60000), 0, "release failed: %s",
                 ts_read_file(p_err, NULL));
    snprintf(p_plan, sizeof(p_plan), "%s/plan.json", b.dir);
    const char *plan[] = {"release",     "--theta", p_theta,       "--input", p_win, "--plan",
                          "--mechanism", "lap",     "--log-level", "warn",    NULL};
    cr_assert_eq(run_gcdp(plan, p_plan, p_err, 60000), 0);

    /* eps_k of every coordinate from the plan; scale_k from every released record */
    json_t *pl = json_load_file(p_plan, 0, NULL), *c;
    size_t k;
    cr_assert_not_null(pl);
    json_t *eps = json_object();
    json_array_foreach(json_object_get(pl, "coords"), k, c)
    {
        const char *reads = json_string_value(json_array_get(json_object_get(c, "reads"), 0));
        cr_assert(reads && strstr(reads, ".max"), "coordinate reads %s", reads ? reads : "?");
        json_object_set(eps, json_string_value(json_object_get(c, "name")),
                        json_object_get(c, "eps"));
    }
    cr_assert_eq(json_object_size(eps), 5u);
    char *text = ts_read_file(p_out, NULL), *line, *save = NULL;
    size_t released = 0;
    cr_assert_not_null(text);
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_t *r = json_loads(line, 0, NULL), *v;
        const char *name;
        cr_assert_not_null(r);
        json_object_foreach(json_object_get(r, "scale"), name, v)
        {
            double sens = json_number_value(v) * json_number_value(json_object_get(eps, name));
            cr_assert_geq(sens, 1.0 - 1e-12, "%s: sensitivity %.17g below the clipped range", name,
                          sens);
        }
        released++;
        json_decref(r);
    }
    cr_assert_gt(released, 500u, "released %zu windows", released);
    free(text);
    json_decref(eps);
    json_decref(pl);
    ts_broker_stop(&b);
}
