/* bench_release_drift.c - the drift phase of `gcdp bench release --drift S`: detection delay
 * of the drift monitor through the services, on an in-process embedded broker.
 *
 * Per seed, twice (with the simulator's regime change at day 1.5, and without): 64 simulated
 * motes, 5 days at 60 s (sim_gen) -> the ingest engine (10-minute tumbling windows, no
 * interpolation) -> gcdp.windows; the calibrate service (public θ from pilot rows over the
 * same motes, sim_calibration_csv) and the release service (lap, eps_rel 20, ledger on disk,
 * release.drift.* at their defaults) on one loop, the services `gcdp calibrate --serve` and
 * `gcdp release --serve` run. The scenario is tests/integration/test_live_drift.c's.
 *
 * Reported per seed: windows starting at or after the change that the release committed
 * under the initial θ before its first record under a newer one (ledger order: the order the
 * service released them), the same per device and in simulated days, and the seconds from
 * the drift report to the swap; for the twin, the drift versions made (false alarms). The
 * release noise is the service's own (not seeded): figures vary from run to run. */
#include "bench.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "app.h"
#include "cal/service.h"
#include "core/broker.h"
#include "core/ctl.h"
#include "core/dp_ledger.h"
#include "core/ksync.h"
#include "core/mem.h"
#include "core/prng.h"
#include "ing/engine.h"
#include "rel/ledger.h"
#include "rel/service.h"
#include "sim/encode.h"
#include "sim/gen.h"
#include "sim/sim.h"

#define DR_DEVICES 64
#define DR_TICKS   ((uint64_t)5 * 1440)
#define DR_CHANGE  (1440 + 720)
#define DR_WIN     10
#define DR_PERIOD  60000LL
#define DR_START   1793491200000LL /* the simulator's default start */
#define DR_SEED0   31u             /* not the tuning (101-108) nor the tests' (11-13, 21) */

/* ---- windows: simulator -> ingest engine -> memory; produced while the services run ---- */

/* The window records in emission order (ingest emits them in time order), produced to
 * gcdp.windows a simulated hour at a time while the release service keeps up (at most
 * DR_AHEAD unread), as a live pipeline feeds it: a backlog read partition by partition would
 * make horizons of a few devices over several days, not of every device over one. */
#define DR_CHUNK 384 /* one simulated hour of 64 motes */
#define DR_AHEAD 1024

struct dr_prod {
    struct core_ksync *ks;
    char **json, **key;
    size_t *len;
    size_t n, cap, next; /* records, capacity, produced */
    bool backlog;        /* produce everything at once */
    core_err rc;
    char eb[512];
};

static void dr_on_window(void *arg, const char *key, size_t key_len, const char *json, size_t len,
                         const struct ing_window_info *info)
{
    struct dr_prod *p = arg;

    if (info->excluded)
        return;
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 4096;
        p->json = core_xrealloc(p->json, p->cap * sizeof(*p->json));
        p->key = core_xrealloc(p->key, p->cap * sizeof(*p->key));
        p->len = core_xrealloc(p->len, p->cap * sizeof(*p->len));
    }
    p->json[p->n] = core_xmalloc(len + 1);
    memcpy(p->json[p->n], json, len);
    p->json[p->n][len] = '\0';
    p->len[p->n] = len;
    p->key[p->n] = core_xmalloc(key_len + 1);
    memcpy(p->key[p->n], key, key_len);
    p->key[p->n][key_len] = '\0';
    p->n++;
}

static void dr_prod_free(struct dr_prod *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->json[i]);
        free(p->key[i]);
    }
    free(p->json);
    free(p->key);
    free(p->len);
    core_ksync_free(p->ks);
    memset(p, 0, sizeof(*p));
}

/* Produce the next chunk when the release has read all but DR_AHEAD of what was produced. */
static void dr_produce(struct dr_prod *p, uint64_t consumed)
{
    size_t end = p->next + DR_CHUNK < p->n ? p->next + DR_CHUNK : p->n;

    if (p->rc != CORE_OK || p->next >= p->n || (!p->backlog && p->next > consumed + DR_AHEAD))
        return;
    if (p->backlog)
        end = p->n;
    for (; p->next < end && p->rc == CORE_OK; p->next++)
        p->rc = core_ksync_send(p->ks, p->key[p->next], strlen(p->key[p->next]), p->json[p->next],
                                p->len[p->next], NULL, NULL, 0, p->eb, sizeof(p->eb));
    core_ksync_poll(p->ks, 0);
}

static core_err dr_readings(struct ing_engine *eng, struct sim_gen *g, bool change,
                            struct dr_prod *p)
{
    struct ing_sink sink = {dr_on_window, NULL, p};
    struct ing_source src = {"sensors.raw", -1, 0};
    struct core_prng prng;
    const char *names[SIM_NCH];
    double vals[DR_DEVICES * SIM_NCH];
    char buf[1024], dev[32];

    for (size_t c = 0; c < SIM_NCH; c++)
        names[c] = sim_gen_channel_info(c)->name;
    core_prng_seed(&prng, 0xABCDu);
    for (uint64_t k = 0; k < DR_TICKS && p->rc == CORE_OK; k++) {
        int64_t ts = DR_START + (int64_t)k * DR_PERIOD;
        sim_gen_tick(g, ts, (double)k / 1440.0, change && k >= DR_CHANGE, vals);
        for (size_t m = 0; m < DR_DEVICES && p->rc == CORE_OK; m++) {
            struct sim_reading r = {dev, ts, k, names, vals + m * SIM_NCH, SIM_NCH};
            size_t len;
            snprintf(dev, sizeof(dev), "mote-%zu", m);
            if (sim_encode_reading(&r, SIM_FAULT_COUNT, &prng, 0, buf, sizeof(buf), &len) !=
                    CORE_OK ||
                ing_engine_push(eng, buf, len, dev, strlen(dev), &src, ts, &sink, NULL) !=
                    CORE_OK) {
                snprintf(p->eb, sizeof(p->eb), "simulated reading refused");
                p->rc = CORE_EINVAL;
            }
        }
    }
    if (p->rc == CORE_OK)
        ing_engine_flush(eng, &sink);
    return p->rc;
}

static core_err dr_windows(uint64_t seed, bool change, struct dr_prod *p, char *eb, size_t ebn)
{
    struct sim_options so;
    struct sim_gen_params gp;
    struct sim_gen *g = NULL;
    struct ing_params ip;
    struct ing_engine *eng;

    sim_options_default(&so);
    so.seed = seed;
    so.devices = DR_DEVICES;
    sim_gen_params_from_options(&so, &gp);
    ing_params_default(&ip);
    ip.window_ms = ip.hop_ms = DR_WIN * DR_PERIOD;
    ip.max_interp_gap = 0;
    if (sim_gen_new(&gp, &g) != CORE_OK || !(eng = ing_engine_new(&ip, eb, ebn))) {
        sim_gen_free(g);
        snprintf(eb, ebn, "simulator or ingest engine refused its parameters");
        return CORE_EINVAL;
    }
    p->rc = CORE_OK;
    if (dr_readings(eng, g, change, p) != CORE_OK)
        snprintf(eb, ebn, "%s", p->eb);
    ing_engine_free(eng);
    sim_gen_free(g);
    return p->rc;
}

/* The public calibration rows: the model of seed over the same motes, noise of its own. */
static core_err dr_pilot(uint64_t seed, const char *path, char *eb, size_t ebn)
{
    struct sim_options so;
    struct ing_params ip;
    double lo[SIM_NCH], hi[SIM_NCH];

    sim_options_default(&so);
    so.seed = seed;
    so.devices = DR_DEVICES;
    ing_params_default(&ip);
    for (size_t c = 0; c < SIM_NCH; c++) {
        size_t i = 0;
        while (i < ip.n_channels && strcmp(ip.channels[i].name, sim_gen_channel_info(c)->name) != 0)
            i++;
        if (i == ip.n_channels) {
            snprintf(eb, ebn, "ingest has no channel %s", sim_gen_channel_info(c)->name);
            return CORE_EINVAL;
        }
        lo[c] = ip.channels[i].clip_lo;
        hi[c] = ip.channels[i].clip_hi;
    }
    return sim_calibration_csv(&so, (seed * 7919u) | 1u, lo, hi, 144, DR_WIN, path, eb, ebn);
}

/* ---- the services on one loop ---- */

struct dr_loop {
    uv_loop_t loop;
    uv_timer_t poll;
    struct cal_service *cal;
    struct rel_service *rel;
    struct core_metric *reports; /* gcdp_release_drift_reports_total */
    struct dr_prod *prod;
    size_t windows;
    double t_report, t_swap;
    struct core_metric *horizons; /* gcdp_release_drift_horizons_total */
    int64_t last_h;
    size_t n_scores;
    double scores[16]; /* each horizon's score, in order */
    bool stopping, cal_done, rel_done;
    core_err rel_status;
};

static double dr_now(void)
{
    return 1e-9 * (double)uv_hrtime();
}

static void dr_cal_done(void *arg, core_err status)
{
    struct dr_loop *d = arg;
    (void)status;
    d->cal_done = true;
    if (d->rel_done)
        uv_close((uv_handle_t *)&d->poll, NULL);
}

static void dr_rel_done(void *arg, core_err status)
{
    struct dr_loop *d = arg;
    d->rel_status = status;
    d->rel_done = true;
    if (!d->stopping) { /* stopped by itself (an error): stop the other one too */
        d->stopping = true;
        cal_service_stop(d->cal);
    }
    if (d->cal_done)
        uv_close((uv_handle_t *)&d->poll, NULL);
}

static void dr_on_poll(uv_timer_t *t)
{
    struct dr_loop *d = t->data;
    struct rel_service_stats st;

    rel_service_stats(d->rel, &st);
    if (core_metric_value(d->horizons) > d->last_h) { /* a horizon was evaluated */
        d->last_h = core_metric_value(d->horizons);
        if (d->n_scores < 16 && st.drift_ppm >= 0)
            d->scores[d->n_scores++] = (double)st.drift_ppm / 1e6;
    }
    if (d->t_report == 0 && core_metric_value(d->reports) > 0)
        d->t_report = dr_now();
    if (d->t_swap == 0 && st.theta_swaps > 0)
        d->t_swap = dr_now();
    dr_produce(d->prod, st.consumed);
    if (!d->stopping && d->prod->rc != CORE_OK) {
        fprintf(stderr, "gcdp bench release: drift: %s\n", d->prod->eb);
        d->stopping = true;
        rel_service_stop(d->rel);
        cal_service_stop(d->cal);
    }
    if (!d->stopping && st.consumed >= d->windows && st.lag == 0 &&
        st.released + st.dead_letters >= d->windows) {
        d->stopping = true;
        rel_service_stop(d->rel);
        cal_service_stop(d->cal);
    }
}

static core_err dr_services(struct dr_loop *d, const struct core_config *cfg, const char *csv,
                            struct core_dp_ledger *l, const struct core_dp_scheme *scheme,
                            struct core_metrics *m, char *eb, size_t ebn)
{
    struct cal_service_opts co;
    struct rel_service_opts ro;
    core_err rc;

    cal_service_opts_init(cfg, csv, &co);
    co.on_done = dr_cal_done;
    co.arg = d;
    rc = cal_service_new(&d->loop, cfg, &co, NULL, &d->cal, eb, ebn);
    if (rc != CORE_OK)
        return rc;
    rel_service_opts_init(cfg, "gcdp-bench-drift", l, scheme, &ro);
    ro.on_done = dr_rel_done;
    ro.arg = d;
    rc = rel_service_new(&d->loop, cfg, &ro, m, &d->rel, eb, ebn);
    if (rc != CORE_OK) {
        d->rel_done = true;
        cal_service_stop(d->cal);
        return rc;
    }
    d->reports = core_metrics_get(m, CORE_METRIC_COUNTER, "gcdp_release_drift_reports_total", NULL,
                                  "drift reports (recalibration requests) sent");
    d->horizons = core_metrics_get(m, CORE_METRIC_COUNTER, "gcdp_release_drift_horizons_total",
                                   NULL, "drift horizons evaluated");
    return CORE_OK;
}

/* What one run measured. */
struct dr_result {
    size_t windows, old_post; /* released; post-change windows under the initial θ */
    uint64_t v1, drift_versions;
    bool swapped;
    double report_to_swap_s, secs;
    size_t n_scores;
    double scores[16];
};

/* Run both services until every window is released; fills r's timing and version fields. */
static int dr_run_services(const struct core_config *cfg, const char *csv, const char *ledger,
                           struct dr_prod *prod, struct dr_result *r)
{
    struct core_dp_ledger_opts lo;
    struct core_dp_ledger *l = NULL;
    struct core_metrics *m = core_metrics_new();
    struct dr_loop d;
    struct cal_service_stats cs;
    char eb[1024] = "";
    core_err rc;

    struct core_ksync_opts ko = {.topic = core_config_str(cfg, "topics.windows")};

    memset(&d, 0, sizeof(d));
    d.windows = r->windows;
    d.prod = prod;
    if (core_ksync_new(cfg, &ko, &prod->ks, eb, sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp bench release: drift: producer: %s\n", eb);
        core_metrics_free(m);
        return APP_EXIT_FAILURE;
    }
    if ((rc = rel_ledger_open(cfg, ledger, &lo, &l, eb, sizeof(eb))) != CORE_OK) {
        fprintf(stderr, "gcdp bench release: drift: %s\n", eb);
        core_metrics_free(m);
        return rc == CORE_ESTATE || rc == CORE_ECONFIG ? APP_EXIT_USAGE : APP_EXIT_FAILURE;
    }
    uv_loop_init(&d.loop);
    uv_timer_init(&d.loop, &d.poll);
    d.poll.data = &d;
    rc = dr_services(&d, cfg, csv, l, &lo.scheme, m, eb, sizeof(eb));
    if (rc == CORE_OK)
        uv_timer_start(&d.poll, dr_on_poll, 5, 5);
    else if (!d.cal) /* else the calibrate service's on_done closes it */
        uv_close((uv_handle_t *)&d.poll, NULL);
    uv_run(&d.loop, UV_RUN_DEFAULT);
    memset(&cs, 0, sizeof(cs));
    if (d.cal)
        cal_service_stats(d.cal, &cs);
    rel_service_free(d.rel);
    cal_service_free(d.cal);
    uv_run(&d.loop, UV_RUN_DEFAULT);
    uv_loop_close(&d.loop);
    core_dp_ledger_free(l);
    core_metrics_free(m);
    if (rc != CORE_OK || d.rel_status != CORE_OK || prod->rc != CORE_OK) {
        fprintf(stderr, "gcdp bench release: drift: %s\n",
                rc != CORE_OK ? eb : core_strerror(d.rel_status));
        return APP_EXIT_FAILURE;
    }
    r->drift_versions = cs.by_reason[cal_reason_index("drift")];
    r->swapped = d.t_swap > 0;
    r->n_scores = d.n_scores;
    memcpy(r->scores, d.scores, sizeof(d.scores));
    r->report_to_swap_s = d.t_swap > 0 && d.t_report > 0 ? d.t_swap - d.t_report : -1.0;
    return APP_EXIT_OK;
}

/* Ledger rows in commit order: id "<device>|<window_start>|<cfg>@<θ version>". */
struct dr_scan {
    int64_t change_ms;
    uint64_t v1;
    bool newer_seen;
    size_t old_post, rows;
};

static int dr_row(void *arg, const struct core_dp_row *row)
{
    struct dr_scan *s = arg;
    const char *bar = strchr(row->id, '|'), *at = strrchr(row->id, '@');
    uint64_t v;
    int64_t start;

    if (!bar || !at)
        return 1;
    start = strtoll(bar + 1, NULL, 10);
    v = strtoull(at + 1, NULL, 10);
    s->rows++;
    if (!s->v1)
        s->v1 = v;
    if (v > s->v1)
        s->newer_seen = true;
    else if (!s->newer_seen && start >= s->change_ms)
        s->old_post++;
    return 0;
}

/* One pipeline on a fresh embedded broker: windows, then both services until every window
 * is released, then the ledger read back. */
/* The run's configuration: the broker (boot), the control key (kset), Laplace at eps_rel 20,
 * a cap no run reaches, no rate limit on recalibration, and span (a --set, or NULL). */
static core_err dr_config(char *boot, char *kset, char *span, struct core_config **cfg)
{
    /* clang-format off */
    char *argv[] = {"bench", "--set", boot, "--set", kset,
                    "--set", "release.mechanism=lap", "--set", "release.eps_rel=20",
                    "--set", "release.ledger.cap_eps=1e6",
                    "--set", "calibrate.service.min_interval_s=0", "--log-level", "error",
                    "--set", span, NULL};
    /* clang-format on */
    int argc = span ? 17 : 15;

    if (!span)
        argv[15] = NULL;
    return app_config_load(&argc, argv, cfg);
}

static int dr_one(uint64_t seed, bool change, const struct bench_drift_mode *mode, const char *dir,
                  struct dr_result *r)
{
    const char *topics[] = {"gcdp.windows",     "gcdp.released", "gcdp.windows.rejected",
                            "gcdp.calibration", "gcdp.control",  "gcdp.status"};
    struct core_broker *br = NULL;
    struct core_config *cfg = NULL;
    struct dr_scan sc = {DR_START + (int64_t)DR_CHANGE * DR_PERIOD, 0, false, 0, 0};
    struct dr_prod prod;
    char eb[1024] = "", boot[300], key[4200], kset[4300], csv[4200], ledger[4200], span[64];
    int ex = APP_EXIT_FAILURE;
    double t0 = dr_now();
    struct core_dp_scheme scheme;
    struct core_dp_cost cap;
    uint64_t torn = 0;

    memset(r, 0, sizeof(*r));
    memset(&prod, 0, sizeof(prod));
    prod.backlog = mode->backlog;
    snprintf(span, sizeof(span), "release.drift.span_ms=%lld", mode->span);
    snprintf(key, sizeof(key), "%s/bench-drift.key", dir);
    snprintf(csv, sizeof(csv), "%s/bench-drift-pilot.csv", dir);
    snprintf(ledger, sizeof(ledger), "%s/bench-drift-ledger.jsonl", dir);
    snprintf(kset, sizeof(kset), "control.key_file=%s", key);
    remove(key);
    remove(ledger);
    if (core_broker_new(1, topics, 6, 16, &br, eb, sizeof(eb)) != CORE_OK ||
        core_ctl_keygen(key, NULL, eb, sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp bench release: drift setup: %s\n", eb);
        goto out;
    }
    snprintf(boot, sizeof(boot), "broker.bootstrap=%s", core_broker_bootstrap(br));
    if (dr_config(boot, kset, mode->span >= 0 ? span : NULL, &cfg) != CORE_OK)
        goto out;
    if (dr_pilot(seed, csv, eb, sizeof(eb)) != CORE_OK ||
        dr_windows(seed, change, &prod, eb, sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp bench release: drift setup: %s\n", eb);
        goto out;
    }
    r->windows = prod.n;
    if ((ex = dr_run_services(cfg, csv, ledger, &prod, r)) != APP_EXIT_OK)
        goto out;
    if (core_dp_ledger_scan(ledger, &scheme, &cap, dr_row, &sc, &torn, eb, sizeof(eb)) != CORE_OK ||
        sc.rows != r->windows) {
        fprintf(stderr, "gcdp bench release: drift: ledger %s: %zu rows of %zu windows\n", eb,
                sc.rows, r->windows);
        ex = APP_EXIT_FAILURE;
    }
    r->v1 = sc.v1;
    r->old_post = sc.old_post;
    r->secs = dr_now() - t0;
out:
    dr_prod_free(&prod);
    remove(ledger);
    remove(key);
    remove(csv);
    core_config_free(cfg);
    core_broker_free(br);
    return ex;
}

static void dr_scores(const char *what, const struct dr_result *r)
{
    printf("            %s: scores", what);
    for (size_t i = 0; i < r->n_scores; i++)
        printf(" %.3f", r->scores[i]);
    printf("\n");
}

static void dr_print(uint64_t seed, const struct dr_result *c, const struct dr_result *n)
{
    if (c->swapped)
        printf("  seed %3" PRIu64 "  %6zu windows (%5.1f per device, %.2f days) from the change "
               "to the new theta; report -> swap %.2f s; %6.1f s\n",
               seed, c->old_post, (double)c->old_post / DR_DEVICES,
               (double)c->old_post / DR_DEVICES / 144.0, c->report_to_swap_s, c->secs);
    else
        printf("  seed %3" PRIu64 "  NOT DETECTED within %zu windows (%zu after the change "
               "under the initial theta); %6.1f s\n",
               seed, c->windows, c->old_post, c->secs);
    printf("            no change: %" PRIu64 " drift version(s) (false alarms) over %zu "
           "windows; %6.1f s\n",
           n->drift_versions, n->windows, n->secs);
    dr_scores("change   ", c);
    dr_scores("no change", n);
}

int bench_release_drift(size_t seeds, const struct bench_drift_mode *mode, const char *dir)
{
    struct dr_result c, n;
    size_t detected = 0, alarms = 0, sum_old = 0;
    char span[64] = "default";

    if (mode->span >= 0)
        snprintf(span, sizeof(span), "%lld", mode->span);
    printf("drift detection delay (64 motes, 10-minute windows, change at day 1.5 of 5, lap "
           "eps_rel 20, release.drift.* defaults but span_ms %s; public pilot theta over the "
           "same motes; %s):\n",
           span,
           mode->backlog ? "BACKLOG: every window produced before the release reads"
                         : "paced: the release keeps up");
    for (size_t i = 0; i < seeds; i++) {
        uint64_t seed = DR_SEED0 + i;
        int ex = dr_one(seed, true, mode, dir, &c);
        if (ex == APP_EXIT_OK)
            ex = dr_one(seed, false, mode, dir, &n);
        if (ex != APP_EXIT_OK)
            return ex;
        dr_print(seed, &c, &n);
        detected += c.swapped;
        sum_old += c.swapped ? c.old_post : 0;
        alarms += n.drift_versions > 0;
    }
    printf("  detected %zu of %zu (mean %.0f windows = %.1f per device); false alarms: %zu of "
           "%zu no-change runs\n",
           detected, seeds, detected ? (double)sum_old / (double)detected : 0.0,
           detected ? (double)sum_old / (double)detected / DR_DEVICES : 0.0, alarms, seeds);
    return APP_EXIT_OK;
}
