/* test_release.c - the release service path: plan from θ + configuration, window parsing,
 * write-ahead ledger (replay, crash injection, lifetime cap), refusals, and the T4
 * empirical DP audit of the Laplace release on neighbouring inputs. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "cal/theta.h"
#include "core/buf.h"
#include "core/dp_ledger.h"
#include "core/dp_mech.h"
#include "rel/config.h"
#include "rel/plan.h"
#include "rel/release.h"
#include "seeded_rng.h"
#include "test_support.h"

/* θ with nodes temp.mean, hum.mean, light.mean, temp.count; identity coordinates. */
static struct cal_theta *make_theta(void)
{
    static const char *names[] = {"temp.mean", "hum.mean", "light.mean", "temp.count"};
    struct cal_theta *t = NULL;
    cr_assert_eq(cal_theta_new(4, 4, &t), CORE_OK);
    for (size_t m = 0; m < 4; m++) {
        cr_assert_eq(cal_theta_set_node(t, m, names[m]), CORE_OK);
        t->exposure[m] = 0.2 * (double)(m + 1);
        t->mu[m] = 0.5;
        t->xi_hat[m] = 0.0;
    }
    cr_assert_eq(cal_theta_set_identity_coords(t), CORE_OK);
    t->version = 7;
    return t;
}

static struct rel_opts make_opts(const char *mech)
{
    struct rel_opts o;
    memset(&o, 0, sizeof(o));
    o.mech = rel_mech_find(mech);
    cr_assert_not_null(o.mech);
    o.eps_rel = 1.0;
    o.delta = 1e-6;
    o.alloc = (struct rel_alloc_params){1.0, 1.0, 0.7, 1e-8, 0.0};
    o.query = (struct rel_query_params){10, 10000, 0};
    o.period_ms = 1000;
    o.slot_ms = 60000;
    o.cap = (struct core_dp_cost){10.0, 0.0, 1e-5};
    return o;
}

/* A gcdp.window/2 record of device dev1 with the four nodes above and their provenance
 * (G 0, period 1000 ms: what make_opts' plan is built for). n_temp real samples of temp,
 * n real samples of the other channels; n_slots 0 leaves the field out. */
static void window_full(char *buf, size_t n, const char *id, long start, long end, int n_temp,
                        int samples, double count_value, int n_slots)
{
    char slots[32] = "";
    if (n_slots > 0)
        snprintf(slots, sizeof(slots), "\"n_slots\":%d,", n_slots);
    snprintf(buf, n,
             "{\"schema\":\"gcdp.window/2\",\"id\":\"%s\",\"device\":\"dev1\","
             "\"window_start\":%ld,\"window_end\":%ld,%s\"excluded\":false,"
             "\"nodes\":{\"temp.mean\":0.5,\"hum.mean\":0.25,\"light.mean\":0.75,"
             "\"temp.count\":%.17g},"
             "\"n_node\":{\"temp.mean\":%d,\"hum.mean\":%d,\"light.mean\":%d,\"temp.count\":%d},"
             "\"imputed\":{\"temp.mean\":[],\"hum.mean\":[],\"light.mean\":[],\"temp.count\":[]},"
             "\"prov\":{\"interp_gap\":0,\"period_ms\":1000,\"norm\":\"clip_minmax\",\"nodes\":{"
             "\"temp.mean\":{\"stat\":\"mean\",\"channel\":\"temp\",\"clip\":[0,1],"
             "\"n_imputed\":0,\"max_run\":0},"
             "\"hum.mean\":{\"stat\":\"mean\",\"channel\":\"hum\",\"clip\":[0,1],"
             "\"n_imputed\":0,\"max_run\":0},"
             "\"light.mean\":{\"stat\":\"mean\",\"channel\":\"light\",\"clip\":[0,1],"
             "\"n_imputed\":0,\"max_run\":0},"
             "\"temp.count\":{\"stat\":\"count\",\"channel\":\"temp\",\"clip\":[0,1],"
             "\"n_imputed\":0,\"max_run\":0}}}}",
             id, start, end, slots, count_value, n_temp, samples, samples, n_temp);
}

static void window_at(char *buf, size_t n, const char *id, long start, long end, int samples)
{
    window_full(buf, n, id, start, end, samples, samples, 0.8, 0);
}

static char WIN[2048];

/* A window filled in directly: it states the provenance the plan was built for. */
static void as_record_of(struct rel_window *w, const struct rel_plan *p)
{
    rel_profile_copy(&w->prof, &p->prof);
    w->prof.from_record = true;
}

static void win_init(void)
{
    window_at(WIN, sizeof(WIN), "dev1|0|cfg", 0, 60000, 20);
}

Test(rel_plan, bounds_follow_policy_and_count_is_deterministic)
{
    struct cal_theta *t = make_theta();
    struct rel_opts o = make_opts("gcdp");
    struct rel_plan *p = NULL;
    json_t *edges = json_pack("[[s,s]]", "temp", "hum");
    char eb[512] = "";

    cr_assert_eq(rel_plan_new(t, &o, &p, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(p->n_chan, 3u, "temp.count is a statistic of channel temp");
    cr_assert_float_eq(p->B[0], 0.1, 1e-15);
    cr_assert_eq(p->B[3], 0.0);
    cr_assert_eq(p->s[3], 0.0);
    cr_assert_eq(p->eps[3], 0.0);
    cr_assert_eq(p->scale[3], 0.0);
    cr_assert_eq(p->n_noisy, 3u);
    cr_assert_float_eq(p->cost.eps, 1.0, 1e-12);
    cr_assert(p->cost.eps >= p->eps[0] + p->eps[1] + p->eps[2]);
    for (size_t k = 0; k < 3; k++)
        cr_assert_float_eq(p->scale[k], p->s[k] / p->eps[k], 1e-15);
    rel_plan_free(p);

    o.policy_edges = edges;
    o.policy_time_radius = 2;
    o.policy_per_slot = 1;
    cr_assert_eq(rel_plan_new(t, &o, &p, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_float_eq(p->B[0], 0.5, 1e-15, "5 occurrences / n_min 10");
    cr_assert_float_eq(p->B[2], 0.5, 1e-15, "the time radius applies to every channel");
    rel_plan_free(p);
    o.policy_per_slot = 2;
    cr_assert_eq(rel_plan_new(t, &o, &p, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_float_eq(p->B[0], 1.0, 1e-15, "10 occurrences / 10: capped at the range");
    cr_assert_eq(p->analytic[0], 0);
    rel_plan_free(p);
    json_decref(edges);
    cal_theta_free(t);
}

Test(rel_plan, refuses_unknown_policy_channel_and_ablation_theta_mismatch)
{
    struct cal_theta *t = make_theta();
    struct rel_opts o = make_opts("gcdp");
    struct rel_plan *p = NULL;
    json_t *edges = json_pack("[[s,s]]", "temp", "pressure");
    char eb[512] = "";

    o.policy_edges = edges;
    cr_assert_eq(rel_plan_new(t, &o, &p, eb, sizeof(eb)), CORE_ECONFIG);
    cr_assert(strstr(eb, "release.policy.edges[0]") && strstr(eb, "pressure"), "%s", eb);
    o = make_opts("gcdp-nolag");
    cr_assert_eq(rel_plan_new(t, &o, &p, eb, sizeof(eb)), CORE_ECONFIG);
    cr_assert(strstr(eb, "L = 0"), "%s", eb);
    t->L = 0;
    cr_assert_eq(rel_plan_new(t, &o, &p, eb, sizeof(eb)), CORE_OK, "%s", eb);
    rel_plan_free(p);
    o = make_opts("gcdp-nocomp");
    cr_assert_eq(rel_plan_new(t, &o, &p, eb, sizeof(eb)), CORE_ECONFIG);
    o = make_opts("gcdp");
    o.alloc.eps_min = 1.0 / 3.0; /* == eps_rel / d' */
    cr_assert_eq(rel_plan_new(t, &o, &p, eb, sizeof(eb)), CORE_EINVAL);
    cr_assert(strstr(eb, "Algorithm 3"), "%s", eb);
    t->xi_hat[1] = NAN;
    o = make_opts("gcdp");
    cr_assert_eq(rel_plan_new(t, &o, &p, eb, sizeof(eb)), CORE_EINVAL);
    json_decref(edges);
    cal_theta_free(t);
}

Test(rel_plan, mechanisms_differ_as_table4_says)
{
    struct cal_theta *t = make_theta();
    struct rel_plan *p = NULL;
    char eb[512];
    t->xi_hat[0] = 0.4; /* above B = 0.1 */
    struct rel_opts o = make_opts("gcdp");
    cr_assert_eq(rel_plan_new(t, &o, &p, eb, sizeof(eb)), CORE_OK);
    cr_assert_float_eq(p->s[0], 0.4, 0.0, "gcdp uses xi");
    rel_plan_free(p);
    o = make_opts("risk");
    cr_assert_eq(rel_plan_new(t, &o, &p, eb, sizeof(eb)), CORE_OK);
    cr_assert_float_eq(p->s[0], 0.1, 1e-15, "risk keeps s = B");
    rel_plan_free(p);
    o = make_opts("lap");
    cr_assert_eq(rel_plan_new(t, &o, &p, eb, sizeof(eb)), CORE_OK);
    cr_assert_float_eq(p->eps[0], 1.0 / 3.0, 1e-15, "uniform over the 3 noisy coordinates");
    rel_plan_free(p);
    o = make_opts("gauss");
    cr_assert_eq(rel_plan_new(t, &o, &p, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert(p->gauss.sigma > 0.0);
    cr_assert_float_eq(p->scale[1], p->s[1] * p->gauss.sigma, 1e-15);
    cr_assert_float_eq(p->cost.delta, 1e-6, 0.0);
    rel_plan_free(p);
    cal_theta_free(t);
}

/* ---- releaser helpers ---- */

struct out {
    char buf[65536];
    size_t len;
    int n, replayed;
};

static core_err collect(void *arg, const char *bytes, size_t len, bool replayed)
{
    struct out *o = arg;
    cr_assert(o->len + len + 1 < sizeof(o->buf));
    memcpy(o->buf + o->len, bytes, len);
    o->len += len;
    o->buf[o->len++] = '\n';
    o->buf[o->len] = '\0';
    o->n++;
    o->replayed += replayed;
    return CORE_OK;
}

struct fixture {
    char *dir, path[512];
    struct cal_theta *t;
    struct rel_plan *p;
    struct core_dp_ledger *l;
    struct ts_rng *rng;
    struct rel_releaser *r;
    struct rel_window w;
};

static void fx_open(struct fixture *f, size_t batch)
{
    struct core_dp_ledger_opts lo = {f->path, f->p->opts.cap, 0, {60000, 0, 1000}};
    char eb[256] = "";
    cr_assert_eq(core_dp_ledger_open(&lo, &f->l, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(rel_releaser_new(f->p, f->l, ts_rng_iface(f->rng), batch, 1, &f->r), CORE_OK);
}

static void fx_close(struct fixture *f)
{
    rel_releaser_free(f->r);
    core_dp_ledger_free(f->l);
    f->r = NULL;
    f->l = NULL;
}

static void fx_init(struct fixture *f, const char *mech, double cap_eps, size_t batch)
{
    struct rel_opts o = make_opts(mech);
    char eb[512] = "";
    memset(f, 0, sizeof(*f));
    f->dir = ts_tmpdir();
    snprintf(f->path, sizeof(f->path), "%s/ledger.jsonl", f->dir);
    f->t = make_theta();
    o.cap.eps = cap_eps;
    cr_assert_eq(rel_plan_new(f->t, &o, &f->p, eb, sizeof(eb)), CORE_OK, "%s", eb);
    f->rng = ts_rng_seeded_new(11);
    rel_window_init(&f->w, f->t);
    win_init();
    fx_open(f, batch);
}

static void fx_fini(struct fixture *f)
{
    fx_close(f);
    rel_window_cleanup(&f->w);
    rel_plan_free(f->p);
    cal_theta_free(f->t);
    ts_rng_free(f->rng);
    ts_rmtree(f->dir);
    free(f->dir);
}

static core_err push_json(struct fixture *f, const char *js, struct out *o, char *eb, size_t n)
{
    core_err rc = rel_window_from_json(js, strlen(js), &f->w, eb, n);
    if (rc != CORE_OK)
        return rc;
    return rel_releaser_push(f->r, &f->w, collect, o, eb, n);
}

Test(rel_release, record_has_schema_fields_scales_and_exact_zero_sensitivity_value)
{
    struct fixture f;
    struct out o = {0};
    char eb[512] = "";
    json_error_t je;
    json_t *rec;

    fx_init(&f, "gcdp", 10.0, 4);
    cr_assert_eq(push_json(&f, WIN, &o, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(o.n, 0, "nothing emitted before the group commit");
    cr_assert_eq(rel_releaser_flush(f.r, collect, &o, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(o.n, 1);
    rec = json_loads(o.buf, 0, &je);
    cr_assert_not_null(rec, "%s", je.text);
    cr_assert_str_eq(json_string_value(json_object_get(rec, "schema")), "gcdp.released/1");
    cr_assert_str_eq(json_string_value(json_object_get(rec, "release_id")), "dev1|0|cfg@7");
    cr_assert_str_eq(json_string_value(json_object_get(rec, "mechanism")), "gcdp");
    cr_assert_eq(json_integer_value(json_object_get(rec, "theta_version")), 7);
    cr_assert_eq(json_integer_value(json_object_get(rec, "window_end")), 60000);
    json_t *vals = json_object_get(rec, "values"), *sc = json_object_get(rec, "scale");
    cr_assert_eq(json_object_size(vals), 4u);
    cr_assert_float_eq(json_number_value(json_object_get(vals, "temp.count")), 0.8, 0.0,
                       "zero sensitivity: released exactly");
    cr_assert_eq(json_number_value(json_object_get(sc, "temp.count")), 0.0);
    cr_assert_float_eq(json_number_value(json_object_get(sc, "temp.mean")), f.p->scale[0], 0.0);
    cr_assert(json_number_value(json_object_get(vals, "temp.mean")) != 0.5, "noise was added");
    struct core_dp_cost spent;
    cr_assert_eq(core_dp_ledger_spent(f.l, "dev1|0", &spent), CORE_OK);
    cr_assert_float_eq(spent.eps, f.p->cost.eps, 0.0);
    json_decref(rec);
    fx_fini(&f);
}

Test(rel_release, rerun_on_same_ledger_replays_identical_bytes_without_new_charge)
{
    struct fixture f;
    struct out o1 = {0}, o2 = {0};
    char eb[512] = "";
    struct core_dp_cost before, after;

    fx_init(&f, "gcdp", 10.0, 2);
    cr_assert_eq(push_json(&f, WIN, &o1, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(rel_releaser_flush(f.r, collect, &o1, eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(core_dp_ledger_spent(f.l, "dev1|0", &before), CORE_OK);
    fx_close(&f);
    fx_open(&f, 2); /* a new process on the same ledger */
    cr_assert_eq(push_json(&f, WIN, &o2, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(push_json(&f, WIN, &o2, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(rel_releaser_flush(f.r, collect, &o2, eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(o2.n, 2);
    cr_assert_eq(o2.replayed, 2);
    cr_assert_eq(o2.len, 2 * o1.len);
    cr_assert_eq(memcmp(o1.buf, o2.buf, o1.len), 0, "replay must be byte-identical");
    cr_assert_eq(memcmp(o1.buf, o2.buf + o1.len, o1.len), 0);
    cr_assert_eq(core_dp_ledger_spent(f.l, "dev1|0", &after), CORE_OK);
    cr_assert_eq(after.eps, before.eps, "a replay is post-processing: no new charge");
    fx_fini(&f);
}

Test(rel_release, duplicate_window_within_one_batch_is_released_once)
{
    struct fixture f;
    struct out o = {0};
    char eb[512] = "";
    struct core_dp_cost spent;

    fx_init(&f, "gcdp", 10.0, 8);
    cr_assert_eq(push_json(&f, WIN, &o, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(push_json(&f, WIN, &o, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(rel_releaser_flush(f.r, collect, &o, eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(o.n, 2);
    cr_assert_eq(o.replayed, 1);
    char *nl = strchr(o.buf, '\n');
    cr_assert_eq(memcmp(o.buf, nl + 1, (size_t)(nl - o.buf)), 0);
    cr_assert_eq(core_dp_ledger_spent(f.l, "dev1|0", &spent), CORE_OK);
    cr_assert_float_eq(spent.eps, f.p->cost.eps, 0.0);
    fx_fini(&f);
}

/* Crash injection (NOISE.md T6): the child is SIGKILLed between the ledger commit and the
 * return to its caller (inside the emit callback, after it wrote what it published). */
static core_err publish_then_die(void *arg, const char *bytes, size_t len, bool replayed)
{
    FILE *fp = fopen(arg, "w");
    (void)replayed;
    fwrite(bytes, 1, len, fp);
    fflush(fp);
    fsync(fileno(fp));
    fclose(fp);
    raise(SIGKILL);
    return CORE_OK;
}

Test(rel_release, crash_after_ledger_write_replays_identical_bytes_and_never_undercounts)
{
    struct fixture f;
    struct out o = {0};
    char eb[512] = "", pub[600];
    int status;
    pid_t pid;
    size_t n = 0;
    struct core_dp_cost spent;

    fx_init(&f, "gcdp", 10.0, 1);
    fx_close(&f); /* the child owns the ledger (flock) */
    snprintf(pub, sizeof(pub), "%s/published", f.dir);
    pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        fx_open(&f, 1);
        if (rel_window_from_json(WIN, strlen(WIN), &f.w, eb, sizeof(eb)) == CORE_OK)
            if (rel_releaser_push(f.r, &f.w, publish_then_die, pub, eb, sizeof(eb)) != CORE_OK)
                _exit(4);
        _exit(3); /* not reached when the callback ran */
    }
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "child must die in emit");
    char *published = ts_read_file(pub, &n);
    cr_assert_not_null(published);
    fx_open(&f, 1);
    cr_assert_eq(core_dp_ledger_spent(f.l, "dev1|0", &spent), CORE_OK);
    cr_assert(spent.eps >= f.p->cost.eps, "published output is charged (no undercount)");
    cr_assert_eq(push_json(&f, WIN, &o, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(o.replayed, 1);
    cr_assert_eq(o.len, n + 1);
    cr_assert_eq(memcmp(o.buf, published, n), 0, "replay returns the published bytes");
    cr_assert_eq(core_dp_ledger_spent(f.l, "dev1|0", &spent), CORE_OK);
    cr_assert_float_eq(spent.eps, f.p->cost.eps, 0.0, "charged exactly once");
    free(published);
    fx_fini(&f);
}

Test(rel_release, crash_before_commit_publishes_nothing_and_rerun_charges_once)
{
    struct fixture f;
    struct out o = {0};
    char eb[512] = "";
    int status;
    pid_t pid;
    struct core_dp_cost spent;

    fx_init(&f, "gcdp", 10.0, 8);
    fx_close(&f);
    pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        struct out co = {0};
        fx_open(&f, 8); /* batch 8: the push charges but does not commit */
        if (push_json(&f, WIN, &co, eb, sizeof(eb)) == CORE_OK && co.n == 0)
            raise(SIGKILL);
        _exit(3);
    }
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFSIGNALED(status), "child must be killed after charging, before commit");
    fx_open(&f, 1);
    cr_assert_eq(core_dp_ledger_spent(f.l, "dev1|0", &spent), CORE_OK);
    cr_assert_eq(spent.eps, 0.0, "nothing was published, nothing is owed");
    cr_assert_eq(push_json(&f, WIN, &o, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(o.n, 1);
    cr_assert_eq(o.replayed, 0);
    cr_assert_eq(core_dp_ledger_spent(f.l, "dev1|0", &spent), CORE_OK);
    cr_assert_float_eq(spent.eps, f.p->cost.eps, 0.0);
    fx_fini(&f);
}

Test(rel_release, lifetime_cap_refuses_sequential_but_not_parallel_windows)
{
    struct fixture f;
    struct out o = {0};
    char eb[512] = "", js[2048];

    fx_init(&f, "gcdp", 2.5, 1); /* eps_rel = 1 per window */
    /* hopping windows over the same minute compose sequentially on unit dev1|0 */
    window_at(js, sizeof(js), "w-a", 0, 60000, 20);
    cr_assert_eq(push_json(&f, js, &o, eb, sizeof(eb)), CORE_OK, "%s", eb);
    window_at(js, sizeof(js), "w-b", 0, 60000, 20);
    cr_assert_eq(push_json(&f, js, &o, eb, sizeof(eb)), CORE_OK, "%s", eb);
    window_at(js, sizeof(js), "w-c", 30000, 60000, 20);
    cr_assert_eq(push_json(&f, js, &o, eb, sizeof(eb)), CORE_EBUDGET);
    cr_assert(strstr(eb, "unit 'dev1|0'") && strstr(eb, "spent eps=2") && strstr(eb, "cap eps=2.5"),
              "%s", eb);
    cr_assert_eq(o.n, 2, "the refused window is not released");
    /* a disjoint window (another slot) composes in parallel: still allowed */
    window_at(js, sizeof(js), "w-d", 60000, 120000, 20);
    cr_assert_eq(push_json(&f, js, &o, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(o.n, 3);
    /* a window spanning both slots charges both and is refused by dev1|0 */
    window_at(js, sizeof(js), "w-e", 0, 120000, 20);
    cr_assert_eq(push_json(&f, js, &o, eb, sizeof(eb)), CORE_EBUDGET);
    fx_fini(&f);
}

Test(rel_release, refuses_windows_outside_the_certified_sample_range_without_charging)
{
    struct fixture f;
    struct out o = {0};
    char eb[512] = "", js[2048];
    struct core_dp_cost spent;

    fx_init(&f, "gcdp", 10.0, 1);
    window_at(js, sizeof(js), "few", 0, 60000, 9); /* n_min = 10 */
    cr_assert_eq(push_json(&f, js, &o, eb, sizeof(eb)), CORE_EINVAL);
    cr_assert(strstr(eb, "9 real samples") && strstr(eb, "[10, 10000]"), "%s", eb);
    cr_assert_null(strstr(eb, "0.5"), "no window values in errors");
    cr_assert_eq(core_dp_ledger_spent(f.l, "dev1|0", &spent), CORE_OK);
    cr_assert_eq(spent.eps, 0.0);
    cr_assert_eq(o.n, 0);
    fx_fini(&f);
}

Test(rel_window, parse_errors_name_the_field)
{
    struct fixture f;
    char eb[512] = "", good[2048], js[2200];
    static const struct {
        const char *js, *needle;
    } bad[] = {
        {"[1]", "not a JSON object"},
        {"{\"schema\":\"gcdp.reading/1\"}", "schema"},
        {"{\"schema\":\"gcdp.window/1\",\"device\":\"d\",\"window_start\":0,\"window_end\":1}",
         "gcdp.window/1 carries no provenance"},
        {"{\"schema\":\"gcdp.window/2\",\"device\":\"d\",\"window_start\":0}", "window_end"},
        {"{\"schema\":\"gcdp.window/2\",\"device\":\"d|x\",\"window_start\":0,"
         "\"window_end\":1,\"nodes\":{},\"n_node\":{}}",
         "device"},
        {"{\"schema\":\"gcdp.window/2\",\"device\":\"d\",\"window_start\":5,"
         "\"window_end\":1,\"nodes\":{},\"n_node\":{}}",
         "window_end must be after"},
        {"{\"schema\":\"gcdp.window/2\",\"device\":\"d\",\"window_start\":0,"
         "\"window_end\":1,\"nodes\":{},\"n_node\":{},\"imputed\":{}}",
         "prov"},
    };
    /* mutations of a good record: each breaks its provenance in one way */
    static const struct {
        const char *from, *to, *needle;
    } mut[] = {
        {"\"hum.mean\":0.25,", "", "nodes.hum.mean"},
        {"\"hum.mean\":{\"stat\":\"mean\"", "\"hum.mean\":{\"stat\":\"max\"", "provenance"},
        {"\"light.mean\":20", "\"light.mean\":0", "n_node.light.mean"},
        {"\"temp.mean\":[]", "\"temp.mean\":[5000]", "inconsistent"},
        {"\"interp_gap\":0", "\"interp_gap\":-1", "prov.interp_gap"},
        {"\"norm\":\"clip_minmax\"", "\"norm\":\"zscore\"", "prov.norm"},
        {"\"clip\":[0,1],\"n_imputed\":0,\"max_run\":0},\"hum",
         "\"clip\":[1,0],\"n_imputed\":0,"
         "\"max_run\":0},\"hum",
         "clip"},
    };
    fx_init(&f, "gcdp", 10.0, 1);
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        eb[0] = '\0';
        cr_assert_neq(rel_window_from_json(bad[i].js, strlen(bad[i].js), &f.w, eb, sizeof(eb)),
                      CORE_OK, "case %zu", i);
        cr_assert(strstr(eb, bad[i].needle), "case %zu: '%s' lacks '%s'", i, eb, bad[i].needle);
    }
    window_at(good, sizeof(good), "g", 0, 60000, 20);
    cr_assert_eq(rel_window_from_json(good, strlen(good), &f.w, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(f.w.obs[1].n_real, 20u);
    cr_assert_float_eq(f.w.x[1], 0.25, 0.0);
    for (size_t i = 0; i < sizeof(mut) / sizeof(*mut); i++) {
        const char *at = strstr(good, mut[i].from);
        cr_assert_not_null(at, "mutation %zu", i);
        snprintf(js, sizeof(js), "%.*s%s%s", (int)(at - good), good, mut[i].to,
                 at + strlen(mut[i].from));
        eb[0] = '\0';
        cr_assert_neq(rel_window_from_json(js, strlen(js), &f.w, eb, sizeof(eb)), CORE_OK,
                      "mutation %zu accepted", i);
        cr_assert(strstr(eb, mut[i].needle), "mutation %zu: '%s' lacks '%s'", i, eb, mut[i].needle);
    }
    const char *excl = "{\"schema\":\"gcdp.window/2\",\"device\":\"d\",\"window_start\":0,"
                       "\"window_end\":1,\"excluded\":true,\"reason\":\"long_gap\"}";
    cr_assert_eq(rel_window_from_json(excl, strlen(excl), &f.w, eb, sizeof(eb)), CORE_OK);
    cr_assert(f.w.excluded);
    fx_fini(&f);
}

/* ---- T4: empirical DP audit (NOISE.md §6 T4, histogram tester) ----
 * Worst-case neighbours for the temp coordinate: x = 0 and x' = B (= s: one occurrence
 * moves the mean by 1/n_min), through the plan's own Laplace parameters. N = 10^6 draws
 * per side, m = 22 bins, beta = 1e-6. Fail if the lower confidence bound on
 * delta(eps_k) is > 0 (the claim is pure eps_k-DP). Negative control: the same tester on
 * a sampler with half the scale (true eps' = 2 eps_k) must report LB > 0. */
#define AUDIT_N    1000000
#define AUDIT_BINS 22

static void histogram(const struct core_rng *rng, const struct core_dp_lap *lp, double x, double b,
                      double *h)
{
    static double y[4096];
    double xs[4096];
    for (int i = 0; i < 4096; i++)
        xs[i] = x;
    memset(h, 0, AUDIT_BINS * sizeof(*h));
    for (int done = 0; done < AUDIT_N; done += 4096) {
        cr_assert_eq(core_dp_lap_release(rng, lp, 4096, xs, y), CORE_OK);
        for (int i = 0; i < 4096 && done + i < AUDIT_N; i++) {
            int bin = (int)floor(y[i] / (0.5 * b)) + AUDIT_BINS / 2; /* width b/2 */
            bin = bin < 0 ? 0 : (bin >= AUDIT_BINS ? AUDIT_BINS - 1 : bin);
            h[bin] += 1.0 / AUDIT_N;
        }
    }
}

static double audit_lb(const double *p, const double *q, double eps)
{
    double best = -1.0, ee = exp(eps), n = AUDIT_N;
    for (int dir = 0; dir < 2; dir++) {
        const double *a = dir ? q : p, *c = dir ? p : q;
        double d = 0.0, sa = 0.0, sc = 0.0;
        for (int i = 0; i < AUDIT_BINS; i++) {
            d += fmax(0.0, a[i] - ee * c[i]);
            sa += sqrt(a[i]);
            sc += sqrt(c[i]);
        }
        double lb = d - (2.0 / sqrt(n) * sa + 2.0 * ee / sqrt(n) * sc +
                         6.0 * (1.0 + ee) * sqrt(log(4.0 / 1e-6) / (2.0 * n)));
        best = fmax(best, lb);
    }
    return best;
}

Test(rel_audit, laplace_release_passes_t4_and_half_scale_control_fails, .timeout = 120)
{
    struct cal_theta *t = make_theta();
    struct rel_opts o = make_opts("lap");
    struct rel_plan *p = NULL;
    struct ts_rng *rng = ts_rng_seeded_new(2026);
    struct core_dp_lap broken;
    double hp[AUDIT_BINS], hq[AUDIT_BINS], lb, lb_bad;
    char eb[256];

    o.eps_rel = 3.0; /* eps_k = 1 for each of the 3 noisy coordinates */
    cr_assert_eq(rel_plan_new(t, &o, &p, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_float_eq(p->eps[0], 1.0, 1e-15);
    histogram(ts_rng_iface(rng), &p->lap[0], 0.0, p->scale[0], hp);
    histogram(ts_rng_iface(rng), &p->lap[0], p->B[0], p->scale[0], hq);
    lb = audit_lb(hp, hq, p->eps[0]);
    cr_assert(lb <= 0.0, "T4: delta lower bound %g > 0 at eps = %g", lb, p->eps[0]);
    cr_assert_eq(core_dp_lap_params(p->s[0] / 2.0, p->eps[0], p->bound, 1, &broken), CORE_OK);
    histogram(ts_rng_iface(rng), &broken, 0.0, p->scale[0], hp);
    histogram(ts_rng_iface(rng), &broken, p->B[0], p->scale[0], hq);
    lb_bad = audit_lb(hp, hq, p->eps[0]);
    cr_assert(lb_bad > 0.0, "negative control (half scale) not detected: LB = %g", lb_bad);
    cr_log_info("T4 audit: LB = %.4g (must be <= 0); half-scale control LB = %.4g (> 0)", lb,
                lb_bad);
    rel_plan_free(p);
    ts_rng_free(rng);
    cal_theta_free(t);
}

/* Every mechanism's record validates against schemas/released.schema.json (python3
 * jsonschema, Draft 2020-12), and values/scale name the same coordinates. */
Test(rel_release, records_of_every_mechanism_validate_against_the_schema, .timeout = 60)
{
    const char *mechs[] = {"lap", "gauss", "ada", "risk", "gcdp", "gcdp-noutility", "gcdp-norisk"};
    char *dir = ts_tmpdir(), file[600], cmd[1400];
    FILE *fp;

    snprintf(file, sizeof(file), "%s/records.jsonl", dir);
    fp = fopen(file, "w");
    cr_assert_not_null(fp);
    for (size_t i = 0; i < sizeof(mechs) / sizeof(*mechs); i++) {
        struct fixture f;
        struct out o = {0};
        char eb[512] = "";
        fx_init(&f, mechs[i], 10.0, 1);
        cr_assert_eq(push_json(&f, WIN, &o, eb, sizeof(eb)), CORE_OK, "%s: %s", mechs[i], eb);
        cr_assert_eq(o.n, 1);
        fputs(o.buf, fp);
        fx_fini(&f);
    }
    fclose(fp);
    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 -c \"import json,jsonschema,sys\n"
             "s=json.load(open('%s/released.schema.json'))\n"
             "v=jsonschema.Draft202012Validator(s)\n"
             "n=0\n"
             "for l in open('%s'):\n"
             "  r=json.loads(l); v.validate(r); n+=1\n"
             "  assert set(r['values'])==set(r['scale'])\n"
             "sys.exit(0 if n==7 else 3)\"",
             GCDP_SCHEMA_DIR, file);
    cr_assert_eq(system(cmd), 0, "schema validation failed");
    ts_rmtree(dir);
    free(dir);
}

Test(rel_release, time_radius_refuses_windows_denser_than_max_per_slot)
{
    struct fixture f;
    struct out o = {0};
    char eb[512] = "", eb2[512] = "";
    struct rel_opts opt = make_opts("gcdp");
    struct rel_plan *p2 = NULL;
    char dense[2048];

    window_full(dense, sizeof(dense), "dense", 0, 60000, 21, 20, 0.8, 10);
    fx_init(&f, "gcdp", 10.0, 1);
    opt.policy_time_radius = 1;
    opt.policy_per_slot = 2;
    cr_assert_eq(rel_plan_new(f.t, &opt, &p2, eb, sizeof(eb)), CORE_OK, "%s", eb);
    rel_window_cleanup(&f.w);
    fx_close(&f);
    rel_plan_free(f.p);
    f.p = p2;
    rel_window_init(&f.w, f.t);
    fx_open(&f, 1);
    cr_assert_eq(push_json(&f, dense, &o, eb2, sizeof(eb2)), CORE_EINVAL);
    cr_assert(strstr(eb2, "max_per_slot"), "%s", eb2);
    cr_assert_eq(o.n, 0);
    fx_fini(&f);
}

/* Released values are rounded to 12 decimals (post-processing); exact coordinates show it:
 * no "-0", trailing zeros trimmed, carries propagate, tiny values round to 0. */
Test(rel_release, value_formatting_is_exact_to_twelve_decimals)
{
    static const struct {
        double x;
        const char *want;
    } cases[] = {
        {0.0, "\"neg\":0}"},
        {0.25, "\"neg\":-0.25}"},
        {0.8, "\"neg\":-0.8}"},
        {1.0, "\"neg\":-1}"},
        {0.9999999999996, "\"neg\":-1}"},
        {1e-13, "\"neg\":0}"},
        {0.123456789012345, "\"neg\":-0.123456789012}"},
    };
    struct fixture f;
    const uint32_t node = 3;
    const double coef = -1.0;
    char eb[512] = "", js[2048];

    fx_init(&f, "gcdp", 1000.0, 1);
    fx_close(&f);
    rel_window_cleanup(&f.w);
    rel_plan_free(f.p);
    cr_assert_eq(cal_theta_set_coord(f.t, 3, "neg", 1, &node, &coef), CORE_OK);
    struct rel_opts o = make_opts("gcdp");
    o.cap.eps = 1000.0;
    cr_assert_eq(rel_plan_new(f.t, &o, &f.p, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(f.p->s[3], 0.0);
    rel_window_init(&f.w, f.t);
    fx_open(&f, 1);
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        struct out out = {0};
        char id[16];
        snprintf(id, sizeof(id), "fmt%zu", i);
        window_full(js, sizeof(js), id, 0, 60000, 20, 20, cases[i].x, 0);
        cr_assert_eq(push_json(&f, js, &out, eb, sizeof(eb)), CORE_OK, "%s", eb);
        char *vals = strstr(out.buf, "\"values\"");
        char *scale = strstr(out.buf, "\"scale\"");
        cr_assert(vals && scale);
        *scale = '\0';
        cr_assert(strstr(vals, cases[i].want), "case %zu: %s lacks %s", i, vals, cases[i].want);
    }
    fx_fini(&f);
}

/* Two noise workers (production rng): every coordinate present once, in θ order, the
 * exact coordinate copied, the record valid JSON. d = 600 so both workers run. */
Test(rel_release, two_noise_workers_produce_a_complete_ordered_record)
{
    struct cal_theta *t = NULL;
    struct rel_opts o = make_opts("gcdp");
    struct rel_plan *p = NULL;
    struct core_dp_ledger *l = NULL;
    struct rel_releaser *r = NULL;
    struct rel_window w;
    struct out *out = calloc(1, sizeof(*out));
    char eb[512] = "", name[32], *dir = ts_tmpdir(), path[600];
    const size_t d = 600;

    cr_assert_eq(cal_theta_new(d, d, &t), CORE_OK);
    for (size_t m = 0; m < d; m++) {
        snprintf(name, sizeof(name), m == d - 1 ? "c%zu.count" : "c%zu.mean", m);
        cr_assert_eq(cal_theta_set_node(t, m, name), CORE_OK);
        t->mu[m] = 0.5;
    }
    cr_assert_eq(cal_theta_set_identity_coords(t), CORE_OK);
    cr_assert_eq(rel_plan_new(t, &o, &p, eb, sizeof(eb)), CORE_OK, "%s", eb);
    snprintf(path, sizeof(path), "%s/l.jsonl", dir);
    struct core_dp_ledger_opts lo = {path, p->opts.cap, 0, {60000, 0, 1000}};
    cr_assert_eq(core_dp_ledger_open(&lo, &l, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(rel_releaser_new(p, l, core_rng_os(), 1, 2, &r), CORE_OK);
    rel_window_init(&w, t);
    as_record_of(&w, p);
    snprintf(w.id, sizeof(w.id), "big");
    snprintf(w.device, sizeof(w.device), "dev9");
    w.start = 0;
    w.end = 60000;
    for (size_t m = 0; m < d; m++) {
        w.x[m] = (double)m / (double)d;
        w.obs[m] = (struct rel_node_obs){30, 30, 0};
    }
    cr_assert_eq(rel_releaser_push(r, &w, collect, out, eb, sizeof(eb)), CORE_OK, "%s", eb);
    json_t *rec = json_loads(out->buf, 0, NULL);
    cr_assert_not_null(rec);
    json_t *vals = json_object_get(rec, "values");
    cr_assert_eq(json_object_size(vals), d);
    const char *key, *prev = NULL;
    json_t *v;
    size_t i = 0;
    json_object_foreach(vals, key, v)
    { /* jansson keeps insertion order */
        snprintf(name, sizeof(name), i == d - 1 ? "c%zu.count" : "c%zu.mean", i);
        cr_assert_str_eq(key, name);
        cr_assert(json_is_number(v));
        prev = key;
        i++;
    }
    cr_assert_not_null(prev);
    cr_assert_float_eq(json_number_value(json_object_get(vals, "c599.count")), 599.0 / 600.0,
                       1e-12);
    json_decref(rec);
    rel_window_cleanup(&w);
    rel_releaser_free(r);
    core_dp_ledger_free(l);
    rel_plan_free(p);
    cal_theta_free(t);
    free(out);
    ts_rmtree(dir);
    free(dir);
}

Test(rel_release, replay_under_other_parameters_republishes_stored_record_and_counts_it)
{
    struct fixture f;
    struct out o1 = {0}, o2 = {0};
    char eb[512] = "";
    struct rel_release_stats st;
    struct rel_plan *lap = NULL;
    struct rel_opts opt = make_opts("lap");

    fx_init(&f, "gcdp", 10.0, 1);
    cr_assert_eq(push_json(&f, WIN, &o1, eb, sizeof(eb)), CORE_OK, "%s", eb);
    fx_close(&f);
    cr_assert_eq(rel_plan_new(f.t, &opt, &lap, eb, sizeof(eb)), CORE_OK, "%s", eb);
    struct core_dp_ledger_opts lo = {f.path, lap->opts.cap, 0, {60000, 0, 1000}};
    cr_assert_eq(core_dp_ledger_open(&lo, &f.l, eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(rel_releaser_new(lap, f.l, ts_rng_iface(f.rng), 1, 1, &f.r), CORE_OK);
    cr_assert_eq(push_json(&f, WIN, &o2, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_str_eq(o1.buf, o2.buf, "the stored gcdp record, unchanged");
    rel_releaser_stats(f.r, &st);
    cr_assert_eq(st.replayed, 1);
    cr_assert_eq(st.replayed_other, 1);
    cr_assert_eq(st.released, 0);
    fx_fini(&f);
    rel_plan_free(lap);
}

/* T4 for gauss: the (ε_rel, δ) claim on the worst-case direction of the l2 certificate.
 * Neighbours move every normalized coordinate z_k by its full sensitivity 1 (Δz = (1,1,1),
 * ||Δz||_2 = sqrt(d')); the statistic is the sum of the 3 noisy z's (a sufficient statistic
 * along that direction). N = 10^6 per side, 22 bins of width σ_sum/2, β = 1e-6: fail if the
 * lower confidence bound on δ(ε_rel) exceeds the claimed δ = 1e-6. Power is limited: the
 * tester's slack at N = 10^6, ε = 1 is ≈ 0.09, so it only sees gross violations. Negative
 * control: σ/8 (along the tested direction μ = 1.9, true δ(1) ≈ 0.47) must be flagged;
 * σ/4 (δ(1) ≈ 0.11) and σ/2 (≈ 0.005) are below this N's power (measured). */
static void gauss_hist(const struct core_rng *rng, const struct core_dp_gauss *gp, double z0,
                       double width, double *h)
{
    double x[3] = {z0, z0, z0}, y[3];
    memset(h, 0, AUDIT_BINS * sizeof(*h));
    for (int i = 0; i < AUDIT_N; i++) {
        cr_assert_eq(core_dp_gauss_release(rng, gp, 3, x, y), CORE_OK);
        int bin = (int)floor((y[0] + y[1] + y[2] - 1.5) / width) + AUDIT_BINS / 2;
        bin = bin < 0 ? 0 : (bin >= AUDIT_BINS ? AUDIT_BINS - 1 : bin);
        h[bin] += 1.0 / AUDIT_N;
    }
}

Test(rel_audit, gauss_release_passes_t4_and_eighth_sigma_control_fails, .timeout = 180)
{
    struct cal_theta *t = make_theta();
    struct rel_opts o = make_opts("gauss");
    struct rel_plan *p = NULL;
    struct ts_rng *rng = ts_rng_seeded_new(77);
    struct core_dp_gauss broken;
    double hp[AUDIT_BINS], hq[AUDIT_BINS], lb, lb_bad, w;
    char eb[256];

    cr_assert_eq(rel_plan_new(t, &o, &p, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(p->n_noisy, 3u);
    w = 0.5 * sqrt(3.0) * p->gauss.sigma;
    gauss_hist(ts_rng_iface(rng), &p->gauss, 0.0, w, hp);
    gauss_hist(ts_rng_iface(rng), &p->gauss, 1.0, w, hq);
    lb = audit_lb(hp, hq, o.eps_rel);
    cr_assert(lb <= o.delta, "T4 gauss: delta lower bound %g > claimed %g", lb, o.delta);
    cr_assert_eq(
        core_dp_gauss_params_sigma(p->gauss.sigma / 8.0, sqrt(3.0), 3, p->gauss.bound, &broken),
        CORE_OK);
    gauss_hist(ts_rng_iface(rng), &broken, 0.0, w, hp);
    gauss_hist(ts_rng_iface(rng), &broken, 1.0, w, hq);
    lb_bad = audit_lb(hp, hq, o.eps_rel);
    cr_assert(lb_bad > o.delta, "negative control (sigma/8) not detected: LB = %g", lb_bad);
    cr_log_info("T4 gauss audit: LB = %.4g (must be <= 1e-6); sigma/8 control LB = %.4g", lb,
                lb_bad);
    rel_plan_free(p);
    ts_rng_free(rng);
    cal_theta_free(t);
}

/* Emit callback: checks that the record has d_expect values named c0..c<d-1>, in order. */
static size_t d_expect;
static core_err check_record(void *arg, const char *bytes, size_t len, bool replayed)
{
    char name[32];
    const char *key;
    json_t *v, *rec = json_loadb(bytes, len, 0, NULL);
    size_t i = 0;
    int ok = rec != NULL && !replayed;
    json_t *vals = json_object_get(rec, "values");
    ok = ok && json_object_size(vals) == d_expect;
    json_object_foreach(vals, key, v)
    {
        snprintf(name, sizeof(name), "c%zu.mean", i++);
        ok = ok && strcmp(key, name) == 0 && json_is_number(v);
    }
    json_decref(rec);
    *(int *)arg += ok ? 1 : 1000;
    return CORE_OK;
}

/* The persistent noise workers across many windows and partial batches: 3 threads,
 * d = 800, 11 windows, batch 4; every record complete (d values, in order), and a fork
 * child that inherits the releaser (without its worker threads) still releases a window
 * by itself instead of waiting for workers that do not exist in it. */
Test(rel_release, persistent_workers_over_many_windows_and_after_fork, .timeout = 120)
{
    struct cal_theta *t = NULL;
    struct rel_opts o = make_opts("gcdp");
    struct rel_plan *p = NULL;
    struct core_dp_ledger *l = NULL;
    struct rel_releaser *r = NULL;
    struct rel_window w;
    int good = 0;
    char eb[512] = "", name[32], *dir = ts_tmpdir(), path[600];
    const size_t d = 800;

    d_expect = d;

    cr_assert_eq(cal_theta_new(d, d, &t), CORE_OK);
    for (size_t m = 0; m < d; m++) {
        snprintf(name, sizeof(name), "c%zu.mean", m);
        cr_assert_eq(cal_theta_set_node(t, m, name), CORE_OK);
        t->mu[m] = 0.5;
    }
    cr_assert_eq(cal_theta_set_identity_coords(t), CORE_OK);
    cr_assert_eq(rel_plan_new(t, &o, &p, eb, sizeof(eb)), CORE_OK, "%s", eb);
    snprintf(path, sizeof(path), "%s/l.jsonl", dir);
    struct core_dp_ledger_opts lo = {path, p->opts.cap, 0, {60000, 0, 1000}};
    cr_assert_eq(core_dp_ledger_open(&lo, &l, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(rel_releaser_new(p, l, core_rng_os(), 4, 3, &r), CORE_OK);
    rel_window_init(&w, t);
    as_record_of(&w, p);
    snprintf(w.device, sizeof(w.device), "dev7");
    for (size_t m = 0; m < d; m++) {
        w.x[m] = (double)m / (double)d;
        w.obs[m] = (struct rel_node_obs){30, 30, 0};
    }
    for (int i = 0; i < 11; i++) {
        snprintf(w.id, sizeof(w.id), "win%d", i);
        w.start = 60000 * (int64_t)i;
        w.end = w.start + 60000;
        cr_assert_eq(rel_releaser_push(r, &w, check_record, &good, eb, sizeof(eb)), CORE_OK, "%s",
                     eb);
    }
    cr_assert_eq(rel_releaser_flush(r, check_record, &good, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(good, 11, "11 complete, ordered records (got score %d)", good);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        int g2 = 0;
        char e2[512] = "";
        alarm(30); /* waiting for workers that do not exist here would hang: die instead */
        snprintf(w.id, sizeof(w.id), "child");
        w.start = 60000 * 20;
        w.end = w.start + 60000;
        core_err rc = rel_releaser_push(r, &w, check_record, &g2, e2, sizeof(e2));
        if (rc == CORE_OK)
            rc = rel_releaser_flush(r, check_record, &g2, e2, sizeof(e2));
        _exit(rc == CORE_OK && g2 == 1 ? 0 : 3);
    }
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the fork child released by itself");
    rel_window_cleanup(&w);
    rel_releaser_free(r);
    core_dp_ledger_free(l);
    rel_plan_free(p);
    cal_theta_free(t);
    ts_rmtree(dir);
    free(dir);
}

/* Window records parse in the window's arena (core/jalloc.h): a typical record entirely, a
 * record whose tree outgrows the arena with its excess blocks from malloc (no leak: the
 * ASan build runs this with leak detection), each giving the same window. */
Test(rel_window, records_parse_in_the_window_arena_and_a_larger_one_falls_back)
{
    struct fixture f;
    struct core_jalloc_stats st;
    struct core_buf big;
    char eb[512] = "";
    const char *tail;

    fx_init(&f, "gcdp", 10.0, 1);
    cr_assert_not_null(f.w.ja);
    cr_assert_eq(rel_window_from_json(WIN, strlen(WIN), &f.w, eb, sizeof(eb)), CORE_OK, "%s", eb);
    core_jalloc_stats(f.w.ja, &st);
    cr_assert(st.hooks_active);
    cr_assert_gt(st.blocks, 50);
    cr_assert_eq(st.fallbacks, 0);
    cr_assert_float_eq(f.w.x[1], 0.25, 0.0);
    cr_assert_str_eq(f.w.id, "dev1|0|cfg");
    /* the same record with an unknown member of 200000 numbers: more than the arena holds */
    core_buf_init(&big, CORE_BUF_NO_CAP);
    tail = strrchr(WIN, '}');
    core_buf_put(&big, WIN, (size_t)(tail - WIN));
    core_buf_puts(&big, ",\"extra\":[");
    for (int i = 0; i < 200000; i++)
        core_buf_printf(&big, "%s%d", i ? "," : "", i);
    core_buf_puts(&big, "]}");
    f.w.x[1] = 0.0;
    f.w.id[0] = '\0';
    cr_assert_eq(rel_window_from_json(big.p, big.len, &f.w, eb, sizeof(eb)), CORE_OK, "%s", eb);
    core_jalloc_stats(f.w.ja, &st);
    cr_assert_gt(st.fallbacks, 0, "the tree did not outgrow the arena: make the member longer");
    cr_assert_float_eq(f.w.x[1], 0.25, 0.0);
    cr_assert_str_eq(f.w.id, "dev1|0|cfg");
    cr_assert_eq(f.w.obs[1].n_real, 20u);
    /* and the arena is whole again for the next record */
    cr_assert_eq(rel_window_from_json(WIN, strlen(WIN), &f.w, eb, sizeof(eb)), CORE_OK, "%s", eb);
    core_jalloc_stats(f.w.ja, &st);
    cr_assert_eq(st.fallbacks, 0);
    core_buf_cleanup(&big);
    fx_fini(&f);
}

/* Every numeric release.* key reaches its rel_opts field (the table's bound rows). */
Test(rel_plan, options_from_every_numeric_key)
{
    const struct core_cfg_key *tables[] = {rel_config_keys};
    struct core_config *cfg = core_config_new(tables, 1);
    static const char *const set[] = {
        "release.eps_rel=2.5",
        "release.delta=1e-7",
        "release.beta_r=0.5",
        "release.beta_g=0.25",
        "release.beta_u=0.125",
        "release.eta=1e-9",
        "release.eps_min=0.001",
        "release.query.min_samples=12",
        "release.query.max_samples=99",
        "release.policy.hops=2",
        "release.policy.time_radius=3",
        "release.policy.max_per_slot=4",
        "release.ledger.slot_ms=30000",
        "release.ledger.cap_eps=7",
        "release.ledger.cap_delta=1e-6",
    };
    struct rel_opts o;
    char eb[256] = "";

    cr_assert_not_null(cfg);
    for (size_t i = 0; i < sizeof(set) / sizeof(*set); i++)
        cr_assert_eq(core_config_set_arg(cfg, set[i], eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(rel_opts_from_config(cfg, &o, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(o.eps_rel, 2.5);
    cr_assert_eq(o.delta, 1e-7);
    cr_assert_eq(o.alloc.beta_r, 0.5);
    cr_assert_eq(o.alloc.beta_g, 0.25);
    cr_assert_eq(o.alloc.beta_u, 0.125);
    cr_assert_eq(o.alloc.eta, 1e-9);
    cr_assert_eq(o.alloc.eps_min, 0.001);
    cr_assert_eq(o.query.min_samples, 12);
    cr_assert_eq(o.query.max_samples, 99);
    cr_assert_eq(o.policy_hops, 2);
    cr_assert_eq(o.policy_time_radius, 3);
    cr_assert_eq(o.policy_per_slot, 4);
    cr_assert_eq(o.slot_ms, 30000);
    cr_assert_eq(o.cap.eps, 7.0);
    cr_assert_eq(o.cap.delta, 1e-6);
    cr_assert_eq(o.cap.rho, 0.0);
    core_config_free(cfg);
}

/* ---- gcdp.window/3: the binary encoding reads as the JSON one ---- */

/* w and v hold the same window: ids, times, values (bits), counts and provenance. */
static void same_window(const struct rel_window *w, const struct rel_window *v)
{
    cr_assert_str_eq(w->id, v->id);
    cr_assert_str_eq(w->device, v->device);
    cr_assert_eq(w->start, v->start);
    cr_assert_eq(w->end, v->end);
    cr_assert_eq(w->excluded, v->excluded);
    cr_assert_eq(w->n_slots, v->n_slots);
    cr_assert_eq(w->prof.interp_gap, v->prof.interp_gap);
    cr_assert_eq(w->prof.period_ms, v->prof.period_ms);
    cr_assert_eq(w->prof.from_record, v->prof.from_record);
    for (size_t m = 0; m < w->theta->n_nodes; m++) {
        const struct rel_node_prov *a = &w->prof.node[m], *b = &v->prof.node[m];
        cr_assert_eq(memcmp(&w->x[m], &v->x[m], sizeof(double)), 0, "x[%zu] bits", m);
        cr_assert_eq(memcmp(&w->obs[m], &v->obs[m], sizeof(w->obs[m])), 0, "obs[%zu]", m);
        cr_assert_str_eq(a->key, b->key);
        cr_assert_str_eq(a->chan, b->chan);
        cr_assert_eq(a->stat, b->stat);
        cr_assert_eq(a->clip_lo, b->clip_lo);
        cr_assert_eq(a->clip_hi, b->clip_hi);
    }
}

/* The fixture record with imputed points on temp (gap 2, period 1000) and extra nodes θ
 * does not read, in an order unlike θ's. */
static void window_imputed(char *buf, size_t n)
{
    snprintf(buf, n,
             "{\"schema\":\"gcdp.window/2\",\"id\":\"dev1|0|cfg\",\"device\":\"dev1\","
             "\"window_start\":0,\"window_end\":60000,\"config_version\":\"cfg\",\"n\":55,"
             "\"n_slots\":60,\"excluded\":false,"
             "\"nodes\":{\"x.max\":1,\"light.mean\":0.75,\"hum.mean\":0.25,\"temp.mean\":0.5,"
             "\"temp.count\":0.8},"
             "\"n_node\":{\"x.max\":3,\"light.mean\":20,\"hum.mean\":20,\"temp.mean\":55,"
             "\"temp.count\":55},"
             "\"imputed\":{\"x.max\":[],\"light.mean\":[],\"hum.mean\":[],"
             "\"temp.mean\":[3000,4000,9000],\"temp.count\":[3000,4000,9000]},"
             "\"prov\":{\"interp_gap\":2,\"period_ms\":1000,\"norm\":\"clip_minmax\",\"nodes\":{"
             "\"x.max\":{\"stat\":\"max\",\"channel\":\"x\",\"clip\":[0,1],"
             "\"n_imputed\":0,\"max_run\":0},"
             "\"light.mean\":{\"stat\":\"mean\",\"channel\":\"light\",\"clip\":[-2.5,1e3],"
             "\"n_imputed\":0,\"max_run\":0},"
             "\"hum.mean\":{\"stat\":\"mean\",\"channel\":\"hum\",\"clip\":[0,100],"
             "\"n_imputed\":0,\"max_run\":0},"
             "\"temp.mean\":{\"stat\":\"mean\",\"channel\":\"temp\",\"clip\":[-40,60],"
             "\"n_imputed\":3,\"max_run\":2},"
             "\"temp.count\":{\"stat\":\"count\",\"channel\":\"temp\",\"clip\":[-40,60],"
             "\"n_imputed\":3,\"max_run\":2}}}}");
}

Test(rel_window3, binary_record_reads_as_its_json_record)
{
    struct cal_theta *t = make_theta();
    struct rel_window wj, wb;
    char js[4096], eb[512] = "";
    unsigned char *bin;
    size_t len;

    rel_window_init(&wj, t);
    rel_window_init(&wb, t);
    window_imputed(js, sizeof(js));
    bin = ts_window2_to_bin(js, &len);
    cr_assert_eq(bin[0], CORE_WBIN_MAGIC0);
    cr_assert_eq(rel_window_from_json(js, strlen(js), &wj, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(rel_window_from_bytes((const char *)bin, len, &wb, eb, sizeof(eb)), CORE_OK, "%s",
                 eb);
    cr_assert_eq(wj.obs[0].n_points, 58u, "55 real + 3 imputed points");
    cr_assert_eq(wj.obs[0].max_run, 2u);
    same_window(&wj, &wb);
    /* JSON through the dispatcher is the JSON reader */
    cr_assert_eq(rel_window_from_bytes(js, strlen(js), &wb, eb, sizeof(eb)), CORE_OK, "%s", eb);
    same_window(&wj, &wb);
    /* and a window/3 record read after a JSON one (and back) leaves nothing stale */
    cr_assert_eq(rel_window_from_bytes((const char *)bin, len, &wb, eb, sizeof(eb)), CORE_OK);
    same_window(&wj, &wb);
    free(bin);
    rel_window_cleanup(&wj);
    rel_window_cleanup(&wb);
    cal_theta_free(t);
}

Test(rel_window3, refusals_read_the_same_in_both_encodings)
{
    /* one defect each, all representable in window/3 (a missing field is not) */
    static const struct {
        const char *from, *to, *needle;
    } mut[] = {
        {"\"hum.mean\":{\"stat\":\"mean\"", "\"hum.mean\":{\"stat\":\"max\"", "provenance"},
        {"\"hum.mean\":{\"stat\":\"mean\"", "\"hum.mean\":{\"stat\":\"median\"", "stat"},
        {"\"light.mean\":20", "\"light.mean\":0", "n_node.light.mean"},
        {"\"temp.mean\":[3000,4000,9000]", "\"temp.mean\":[3000,5000,9000]", "inconsistent"},
        {"\"temp.mean\":[3000,4000,9000]", "\"temp.mean\":[4000,3000,9000]", "inconsistent"},
        {"\"interp_gap\":2", "\"interp_gap\":1", "inconsistent"},
        {"\"interp_gap\":2", "\"interp_gap\":-1", "prov.interp_gap"},
        {"\"period_ms\":1000", "\"period_ms\":0", "prov.period_ms"},
        {"\"norm\":\"clip_minmax\"", "\"norm\":\"zscore\"", "prov.norm"},
        {"\"clip\":[0,100]", "\"clip\":[100,0]", "clip"},
        {"\"hum.mean\"", "\"hum.mode\"", "prov.nodes.hum.mean: missing"}, /* every one */
        {"\"device\":\"dev1\"", "\"device\":\"dev|1\"", "device"},
        {"\"window_end\":60000", "\"window_end\":0", "window_end must be after"},
    };
    struct cal_theta *t = make_theta();
    struct rel_window wj, wb;
    char good[4096], js[4200], ej[512], ebin[512];
    unsigned char *bin;
    size_t len;

    rel_window_init(&wj, t);
    rel_window_init(&wb, t);
    window_imputed(good, sizeof(good));
    for (size_t i = 0; i < sizeof(mut) / sizeof(*mut); i++) {
        const char *at = strstr(good, mut[i].from);
        core_err rj, rb;
        cr_assert_not_null(at, "mutation %zu", i);
        snprintf(js, sizeof(js), "%.*s%s%s", (int)(at - good), good, mut[i].to,
                 at + strlen(mut[i].from));
        while (strcmp(mut[i].from, "\"hum.mean\"") == 0 && (at = strstr(js, mut[i].from)))
            memcpy((char *)at, mut[i].to, strlen(mut[i].to)); /* same length: rename all */
        bin = ts_window2_to_bin(js, &len);
        ej[0] = ebin[0] = '\0';
        rj = rel_window_from_json(js, strlen(js), &wj, ej, sizeof(ej));
        rb = rel_window_from_bytes((const char *)bin, len, &wb, ebin, sizeof(ebin));
        cr_assert_neq(rj, CORE_OK, "mutation %zu accepted", i);
        cr_assert_eq(rj, rb, "mutation %zu: %s / %s", i, ej, ebin);
        cr_assert_str_eq(ej, ebin, "mutation %zu", i);
        cr_assert(strstr(ej, mut[i].needle), "mutation %zu: '%s' lacks '%s'", i, ej, mut[i].needle);
        free(bin);
    }
    rel_window_cleanup(&wj);
    rel_window_cleanup(&wb);
    cal_theta_free(t);
}

Test(rel_window3, structural_refusals_of_the_binary_reader)
{
    struct cal_theta *t = make_theta();
    struct rel_window w;
    struct core_wrec r;
    struct core_buf b;
    char js[4096], eb[512] = "";
    unsigned char *bin;
    size_t len;

    rel_window_init(&w, t);
    window_imputed(js, sizeof(js));
    bin = ts_window2_to_bin(js, &len);
    /* truncated: the codec's reason */
    cr_assert_eq(rel_window_from_bytes((const char *)bin, len - 1, &w, eb, sizeof(eb)),
                 CORE_EPARSE);
    cr_assert(strstr(eb, "gcdp.window/3"), "%s", eb);
    /* a node name given twice (x.max, the first node, renamed hum.mean): refused as the
     * JSON reader refuses a duplicate key */
    core_wrec_init(&r);
    cr_assert_eq(core_wbin_decode(bin, len, &r, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_str_eq(r.node[0].name, "x.max");
    r.node[0].name = "hum.mean";
    core_buf_init(&b, CORE_BUF_NO_CAP);
    cr_assert_eq(core_wbin_encode(&r, &b), CORE_OK);
    cr_assert_eq(rel_window_from_bytes(b.p, b.len, &w, eb, sizeof(eb)), CORE_EPARSE);
    cr_assert(strstr(eb, "hum.mean appears twice"), "%s", eb);
    core_buf_cleanup(&b);
    core_wrec_cleanup(&r);
    free(bin);
    rel_window_cleanup(&w);
    cal_theta_free(t);
}
