/* test_release_golden.c - the released bytes of a fixed θ, seed and input, against a golden
 * transcript produced by the release path before it was optimized (issue 12, "Numbers"):
 * parsing, plan coverage, certificates, refusals (code and message), noise, encoding,
 * replays and ledger totals must not move by one byte when the path is made faster.
 *
 * Mechanism "lap" (uniform ε_k = ε_rel/d'): its plan is plain arithmetic. "gcdp" would put
 * pow() bits into ε_k and the published scales, and glibc picks pow's implementation by CPU
 * (FMA or not), so a golden of those bytes could differ on another CI machine. The
 * per-window path under test (parse, project, certify, noise, encode, replay) is the same
 * for every Laplace mechanism.
 *
 * To regenerate after an intended format change, run this test with GCDP_GOLDEN_WRITE=1 in
 * the environment: it rewrites the file first; review the diff like code. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cal/theta.h"
#include "core/buf.h"
#include "core/dp_ledger.h"
#include "rel/plan.h"
#include "rel/release.h"
#include "seeded_rng.h"
#include "test_support.h"

#define GOLDEN GCDP_SOURCE_DIR "/tests/release/golden/release_transcript.txt"
#define N_WIN  40

/* θ: six nodes, one of them ("co2") named by its channel only (bound to the window's one
 * co2 node), one read by no coordinate; five coordinates, one a combination of three nodes. */
static struct cal_theta *golden_theta(void)
{
    static const char *names[] = {"temp.mean", "hum.mean",   "light.max",
                                  "co2",       "temp.count", "spare.mean"};
    static const uint32_t one[][1] = {{0}, {1}, {2}, {3}};
    static const double unit[] = {1.0};
    static const uint32_t mix_nodes[] = {0, 1, 4};
    static const double mix_coef[] = {0.5, -0.25, 0.25};
    struct cal_theta *t = NULL;

    cr_assert_eq(cal_theta_new(6, 5, &t), CORE_OK);
    for (size_t m = 0; m < 6; m++)
        cr_assert_eq(cal_theta_set_node(t, m, names[m]), CORE_OK);
    for (size_t k = 0; k < 4; k++)
        cr_assert_eq(cal_theta_set_coord(t, k, names[k], 1, one[k], unit), CORE_OK);
    cr_assert_eq(cal_theta_set_coord(t, 4, "mix", 3, mix_nodes, mix_coef), CORE_OK);
    for (size_t m = 0; m < 6; m++)
        t->exposure[m] = 0.1 * (double)(m + 1);
    for (size_t k = 0; k < 5; k++) {
        t->mu[k] = 0.25 + 0.125 * (double)k;
        t->xi_hat[k] = k == 2 ? 0.05 : 0.0;
    }
    t->version = 3;
    return t;
}

static struct rel_opts golden_opts(void)
{
    struct rel_opts o;
    memset(&o, 0, sizeof(o));
    o.mech = rel_mech_find("lap");
    cr_assert_not_null(o.mech);
    o.eps_rel = 1.5;
    o.alloc = (struct rel_alloc_params){1.0, 1.0, 0.7, 1e-8, 0.0};
    o.query = (struct rel_query_params){10, 10000, 0};
    o.policy_time_radius = 1;
    o.policy_per_slot = 1;
    o.slot_ms = 60000;
    o.cap = (struct core_dp_cost){4.0, 0.0, 0.0}; /* the third window of a slot hits it */
    return o;
}

/* One node's provenance object and its n_node / imputed entries. */
struct gnode {
    const char *key, *chan, *stat;
    int n_real;
    const char *imputed; /* JSON array text */
    int n_imp, max_run;
    const char *clip;
};

/* Window i: values, counts and imputed runs vary with i; a few records are broken on
 * purpose (the refusal and its message are part of the golden). */
static void golden_window(size_t i, struct core_buf *b)
{
    char id[64], dev[16];
    long long start = (long long)(i / 2) * 60000, t0 = start + 1000;
    char imp_a[64], imp_b[64];
    struct gnode g[6];
    size_t ng = 5;
    double v[6];

    snprintf(dev, sizeof(dev), "dev-%c", i % 2 ? 'b' : 'a');
    snprintf(id, sizeof(id), "%s|%lld", dev, start);
    snprintf(imp_a, sizeof(imp_a), "[%lld,%lld]", t0, t0 + 1000);                 /* run 2 */
    snprintf(imp_b, sizeof(imp_b), "[%lld,%lld,%lld]", t0, t0 + 3000, t0 + 4000); /* run 2 */
    g[0] = (struct gnode){"temp.mean",          "temp",        "mean",        12 + (int)(i % 7) * 4,
                          i % 3 ? "[]" : imp_a, i % 3 ? 0 : 2, i % 3 ? 0 : 2, "[0,1]"};
    g[1] = (struct gnode){
        "hum.mean",         "hum",  "mean", 30, i % 4 == 1 ? imp_b : "[]", i % 4 == 1 ? 3 : 0,
        i % 4 == 1 ? 2 : 0, "[0,1]"};
    g[2] = (struct gnode){"light.max", "light", "max", 25 + (int)(i % 5), "[]", 0, 0, "[0,1]"};
    g[3] = (struct gnode){"co2.mean", "co2", "mean", 18, "[]", 0, 0, "[0,1]"};
    g[4] = (struct gnode){"temp.count", "temp",     "count",      g[0].n_real,
                          g[0].imputed, g[0].n_imp, g[0].max_run, "[0,1]"};
    for (size_t m = 0; m < 6; m++)
        v[m] = (double)((m * 7919 + i * 104729) % 100003) / 100003.0;
    if (i == 7) /* too few real samples: not covered, refused, nothing charged */
        g[1].n_real = 4;
    if (i == 11) /* inconsistent provenance: n_imputed disagrees with the list */
        g[0].n_imp = 1;
    if (i == 13) /* another clip interval than the plan's: another ingest configuration */
        g[2].clip = "[0,0.5]";
    if (i == 17) { /* two statistics of channel co2: θ node "co2" is ambiguous */
        g[5] = (struct gnode){"co2.max", "co2", "max", 18, "[]", 0, 0, "[0,1]"};
        ng = 6;
    }
    core_buf_reset(b);
    core_buf_printf(b,
                    "{\"schema\":\"gcdp.window/2\",\"id\":\"%s\",\"device\":\"%s\","
                    "\"window_start\":%lld,\"window_end\":%lld,\"n_slots\":60,\"excluded\":%s,"
                    "\"nodes\":{",
                    id, dev, start, start + 60000, i == 5 ? "true" : "false");
    for (size_t m = 0; m < ng; m++) {
        if (i == 23 && m == 2) /* a value that is not a number */
            core_buf_printf(b, ",\"%s\":\"high\"", g[m].key);
        else
            core_buf_printf(b, "%s\"%s\":%.17g", m ? "," : "", g[m].key,
                            v[m] * (m == 4 ? 40.0 : 1.0));
    }
    core_buf_puts(b, "},\"n_node\":{");
    for (size_t m = 0; m < ng; m++)
        core_buf_printf(b, "%s\"%s\":%d", m ? "," : "", g[m].key, g[m].n_real);
    core_buf_puts(b, "},\"imputed\":{");
    for (size_t m = 0; m < ng; m++)
        core_buf_printf(b, "%s\"%s\":%s", m ? "," : "", g[m].key, g[m].imputed);
    core_buf_puts(b, "},\"prov\":{\"interp_gap\":2,\"period_ms\":1000,\"norm\":\"clip_minmax\","
                     "\"nodes\":{");
    for (size_t m = 0; m < ng; m++)
        core_buf_printf(b,
                        "%s\"%s\":{\"stat\":\"%s\",\"channel\":\"%s\",\"clip\":%s,"
                        "\"n_imputed\":%d,\"max_run\":%d}",
                        m ? "," : "", g[m].key, g[m].stat, g[m].chan, g[m].clip, g[m].n_imp,
                        g[m].max_run);
    core_buf_puts(b, "}}}");
}

static core_err to_transcript(void *arg, const char *bytes, size_t len, bool replayed)
{
    struct core_buf *tr = arg;
    core_buf_printf(tr, "emit%s ", replayed ? " replayed" : "");
    core_buf_put(tr, bytes, len);
    core_buf_putc(tr, '\n');
    return CORE_OK;
}

/* The whole run: every window pushed (window 3 twice in one batch, window 9 again after a
 * commit), the plan from window 0's provenance, batch 4, seed 2026. */
static void run(struct core_buf *tr, const char *dir)
{
    struct cal_theta *t = golden_theta();
    struct rel_opts o = golden_opts();
    struct rel_plan *p = NULL;
    struct core_dp_ledger *l = NULL;
    struct rel_releaser *r = NULL;
    struct ts_rng *rng = ts_rng_seeded_new(2026);
    struct rel_window w;
    struct core_buf rec;
    char path[512], eb[1024];
    static const size_t order[] = {0,  1,  2,  3,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12,
                                   13, 14, 15, 16, 17, 18, 9,  19, 20, 21, 22, 23, 24, 25,
                                   26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39};
    struct core_dp_ledger_opts lo = {path, o.cap, 0, {60000, 1, 1000}};

    snprintf(path, sizeof(path), "%s/ledger.jsonl", dir);
    core_buf_init(&rec, CORE_BUF_NO_CAP);
    rel_window_init(&w, t);
    cr_assert_eq(core_dp_ledger_open(&lo, &l, eb, sizeof(eb)), CORE_OK, "%s", eb);
    for (size_t j = 0; j < sizeof(order) / sizeof(*order); j++) {
        size_t i = order[j];
        core_err rc;
        golden_window(i, &rec);
        eb[0] = '\0';
        rc = rel_window_from_json(rec.p, rec.len, &w, eb, sizeof(eb));
        if (rc == CORE_OK && !p) {
            cr_assert_eq(rel_plan_for_window(t, &o, &w, 1000, &p, eb, sizeof(eb)), CORE_OK, "%s",
                         eb);
            cr_assert_eq(rel_releaser_new(p, l, ts_rng_iface(rng), 4, 1, &r), CORE_OK);
        }
        if (rc == CORE_OK)
            rc = rel_releaser_push(r, &w, to_transcript, tr, eb, sizeof(eb));
        core_buf_printf(tr, "push %zu: %s%s%s\n", i, core_errname(rc), eb[0] ? ": " : "", eb);
    }
    cr_assert_eq(rel_releaser_flush(r, to_transcript, tr, eb, sizeof(eb)), CORE_OK, "%s", eb);
    for (int64_t s = -1; s <= N_WIN / 2; s++) {
        static const char *devs[] = {"dev-a", "dev-b"};
        for (size_t d = 0; d < 2; d++) {
            char unit[64];
            struct core_dp_cost c;
            snprintf(unit, sizeof(unit), "%s|%" PRId64, devs[d], s);
            cr_assert_eq(core_dp_ledger_spent(l, unit, &c), CORE_OK);
            core_buf_printf(tr, "spent %s eps %.17g\n", unit, c.eps);
        }
    }
    rel_releaser_free(r);
    core_dp_ledger_free(l);
    rel_plan_free(p);
    rel_window_cleanup(&w);
    core_buf_cleanup(&rec);
    cal_theta_free(t);
    ts_rng_free(rng);
}

Test(rel_golden, released_bytes_refusals_and_totals_match_the_golden_transcript)
{
    struct core_buf tr;
    char *dir = ts_tmpdir(), *want;
    size_t want_len = 0, at = 0;

    core_buf_init(&tr, CORE_BUF_NO_CAP);
    run(&tr, dir);
    cr_assert_eq(core_buf_status(&tr), CORE_OK);
    if (getenv("GCDP_GOLDEN_WRITE")) {
        FILE *f = fopen(GOLDEN, "wb");
        cr_assert_not_null(f, "cannot write %s", GOLDEN);
        cr_assert_eq(fwrite(tr.p, 1, tr.len, f), tr.len);
        cr_assert_eq(fclose(f), 0);
    }
    want = ts_read_file(GOLDEN, &want_len);
    cr_assert_not_null(want, "golden %s missing", GOLDEN);
    while (at < tr.len && at < want_len && tr.p[at] == want[at])
        at++;
    cr_assert(at == tr.len && at == want_len,
              "transcript differs from the golden at byte %zu (of %zu, golden %zu): "
              "...%.80s... vs ...%.80s...",
              at, tr.len, want_len, tr.p + (at > 40 ? at - 40 : 0), want + (at > 40 ? at - 40 : 0));
    /* the run is not vacuous: releases, a replay and each kind of refusal are in it */
    cr_assert(strstr(tr.p, "\nemit replayed {"), "a replay");
    cr_assert(strstr(tr.p, "push 7: CORE_EINVAL"), "not covered: sample count");
    cr_assert(strstr(tr.p, "push 11: CORE_EINVAL"), "inconsistent provenance");
    cr_assert(strstr(tr.p, "push 13: CORE_EINVAL"), "clip differs");
    cr_assert(strstr(tr.p, "push 17: CORE_EINVAL"), "ambiguous channel binding");
    cr_assert(strstr(tr.p, "push 23: CORE_EPARSE"), "non-finite value");
    cr_assert(strstr(tr.p, ": CORE_EBUDGET: "), "a lifetime cap");
    free(want);
    core_buf_cleanup(&tr);
    ts_rmtree(dir);
    free(dir);
}
