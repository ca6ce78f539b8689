/* test_learner_service.c - the federated learner as Kafka services (lrn/fedsvc.h) on an
 * embedded broker: 1 server + 3 participants in threads of this process learn the DAG of a
 * known SEM from gcdp.released/1 records; a participant stopped mid-session is named
 * missing; a server stopped mid-session resumes from its checkpoint to the same DAG; a
 * learner service pointed at a protected topic is refused.
 *
 * Data: lrn_sem_problem_new (d = 6, 6 expected edges, weights ±[0.5, 2], noise sd 1,
 * seed 7), 3 sites × 300 samples (the first 10 of each published twice, as a republish
 * after a release crash: byte-identical, same release_id); site p's records (devices site<p>-a /
 * site<p>-b, one record per sample, values x0..x5) all go to partition p of gcdp.released so every
 * run reads each site's rows in the same order.
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>

#include "broker.h"
#include "core/config.h"
#include "core/kconf.h"
#include "lrn/config.h"
#include "lrn/fedsvc.h"
#include "lrn/graphout.h"
#include "lrn/metrics.h"
#include "lrn/sem.h"
#include "test_support.h"

#define D     6
#define SITES 3
#define NPER  300
#define DUP   10 /* the first DUP records of each site are published twice (a republish) */

static struct lrn_sem_problem *make_problem(void)
{
    struct lrn_sem_opts o = lrn_sem_opts_default();
    struct lrn_sem_problem *pb = NULL;
    o.d = D;
    o.participants = SITES;
    o.n_per = NPER;
    o.expected_edges = D;
    o.seed = 7;
    cr_assert_eq(lrn_sem_problem_new(&o, &pb), CORE_OK);
    return pb;
}

static char first_record[2048];

/* python3-jsonschema (Draft 2020-12) on one JSON text. */
static void schema_valid(const char *json, const char *schema)
{
    char path[512], cmd[2048];
    snprintf(path, sizeof(path), "/tmp/gcdp-lsvc-schema-%d.json", (int)getpid());
    ts_write_file(path, json);
    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 -c 'import json,sys,jsonschema; "
             "jsonschema.Draft202012Validator(json.load(open(sys.argv[1]))).validate("
             "json.load(open(sys.argv[2])))' %s/%s %s",
             GCDP_SCHEMA_DIR, schema, path);
    cr_assert_eq(system(cmd), 0, "not valid against %s: %s", schema, json);
    unlink(path);
}

/* Every record on learner.dag is schema-valid; returns how many there are. */
static size_t dag_records_valid(const char *bootstrap)
{
    struct ts_record *rec;
    size_t n = ts_topic_read(bootstrap, "learner.dag", &rec);
    for (size_t i = 0; i < n; i++)
        schema_valid(rec[i].value, "learner_dag.schema.json");
    ts_records_free(rec, n);
    return n;
}

/* Every sample as one schema-valid gcdp.released/1 record, site p on partition p. */
static void produce_released(const char *bootstrap, const struct lrn_sem_problem *pb)
{
    char eb[512], rec[2048], *w;
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    rd_kafka_t *rk;

    cr_assert_eq(rd_kafka_conf_set(c, "bootstrap.servers", bootstrap, eb, sizeof(eb)),
                 RD_KAFKA_CONF_OK);
    rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, eb, sizeof(eb));
    cr_assert_not_null(rk, "%s", eb);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, "gcdp.released", NULL);
    for (size_t p = 0; p < SITES; p++)
        for (size_t kk = 0; kk < NPER + DUP; kk++) {
            size_t k = kk < NPER ? kk : kk - NPER;
            const double *x = pb->x + (p * NPER + k) * D;
            char dev[32];
            snprintf(dev, sizeof(dev), "site%zu-%c", p, k % 2 ? 'b' : 'a');
            w = rec + snprintf(rec, sizeof(rec),
                               "{\"schema\":\"gcdp.released/1\",\"release_id\":\"%s:%zu@1\","
                               "\"device\":\"%s\",\"window_start\":%zu,\"window_end\":%zu,"
                               "\"theta_version\":1,\"mechanism\":\"lap\",\"eps_rel\":1,"
                               "\"values\":{",
                               dev, k, dev, k * 1000, k * 1000 + 1000);
            for (size_t i = 0; i < D; i++)
                w += sprintf(w, "%s\"x%zu\":%.12f", i ? "," : "", i, x[i]);
            w += sprintf(w, "},\"scale\":{");
            for (size_t i = 0; i < D; i++)
                w += sprintf(w, "%s\"x%zu\":0.1", i ? "," : "", i);
            sprintf(w, "}}");
            if (!first_record[0])
                memcpy(first_record, rec, sizeof(first_record));
            while (rd_kafka_produce(rkt, (int32_t)p, RD_KAFKA_MSG_F_COPY, rec, strlen(rec), dev,
                                    strlen(dev), NULL) != 0)
                rd_kafka_poll(rk, 10);
            rd_kafka_poll(rk, 0);
        }
    cr_assert_eq(rd_kafka_flush(rk, 20000), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
}

static void set(struct core_config *cfg, const char *k, const char *v)
{
    char eb[512];
    cr_assert_eq(core_config_set(cfg, k, v, "test", eb, sizeof(eb)), CORE_OK, "%s: %s", k, eb);
}

static struct core_config *make_cfg(const struct ts_broker *b, const char *state, const char *out)
{
    static const struct core_cfg_key *tables[] = {core_config_keys, lrn_config_keys};
    struct core_config *cfg = core_config_new(tables, 2);
    char v[1200];

    cr_assert_not_null(cfg);
    snprintf(v, sizeof(v), "\"%s\"", b->bootstrap);
    set(cfg, "broker.bootstrap", v);
    set(cfg, "log.level", "\"warn\"");
    snprintf(v, sizeof(v), "\"%s\"", state);
    set(cfg, "learner.service.state_dir", v);
    snprintf(v, sizeof(v), "\"%s\"", out);
    set(cfg, "learner.service.out_dir", v);
    set(cfg, "learner.service.participants", "3");
    set(cfg, "learner.service.min_samples", "300");
    set(cfg, "learner.service.horizon", "300");
    set(cfg, "learner.service.round_timeout_ms", "1500");
    set(cfg, "learner.service.resend_ms", "400");
    set(cfg, "learner.service.announce_ms", "200");
    set(cfg, "learner.service.session_interval_s", "600");
    set(cfg, "learner.service.png", "false");
    return cfg;
}

/* ---- threads ---- */

struct result_copy {
    pthread_mutex_t mu;
    int n;
    double w[D * D];
    size_t rounds, participants;
    char missing[8][LRN_FEDSVC_MAX_ID + 1];
    uint64_t missing_from[8];
    size_t nmissing;
    char *json;
    char nodes[D][16];
};

static void on_result(void *arg, const struct lrn_fedsvc_result *r)
{
    struct result_copy *c = arg;
    pthread_mutex_lock(&c->mu);
    c->n++;
    cr_assert_eq(r->d, D);
    memcpy(c->w, r->w, sizeof(c->w));
    for (size_t i = 0; i < D; i++)
        snprintf(c->nodes[i], sizeof(c->nodes[i]), "%s", r->nodes[i]);
    c->rounds = r->rounds;
    c->participants = r->participants;
    c->nmissing = 0;
    for (size_t p = 0; p < r->participants && c->nmissing < 8; p++)
        if (r->missing_from[p] != UINT64_MAX) {
            snprintf(c->missing[c->nmissing], sizeof(c->missing[0]), "%s", r->ids[p]);
            c->missing_from[c->nmissing++] = r->missing_from[p];
        }
    free(c->json);
    c->json = strdup(r->json);
    pthread_mutex_unlock(&c->mu);
}

struct srv_th {
    pthread_t th;
    struct lrn_fedsvc_server_opts o;
    struct lrn_fedsvc_server_progress pr;
    atomic_bool stop;
    core_err rc;
    char eb[512];
};

static void *srv_main(void *arg)
{
    struct srv_th *t = arg;
    t->rc = lrn_fedsvc_server_run(&t->o, &t->stop, &t->pr, t->eb, sizeof(t->eb));
    return NULL;
}

struct part_th {
    pthread_t th;
    struct lrn_fedsvc_participant_opts o;
    struct lrn_fedsvc_participant_progress pr;
    atomic_bool stop;
    core_err rc;
    char id[16], devices[32], eb[512];
};

static void *part_main(void *arg)
{
    struct part_th *t = arg;
    t->rc = lrn_fedsvc_participant_run(&t->o, &t->stop, &t->pr, t->eb, sizeof(t->eb));
    return NULL;
}

static void start_server(struct srv_th *t, const struct core_config *cfg, struct result_copy *rc)
{
    memset(t, 0, sizeof(*t));
    t->o = (struct lrn_fedsvc_server_opts){
        .cfg = cfg, .max_sessions = 1, .on_result = on_result, .arg = rc};
    cr_assert_eq(pthread_create(&t->th, NULL, srv_main, t), 0);
}

static void start_parts(struct part_th *t, const struct core_config *cfg, const char *prefix)
{
    for (int p = 0; p < SITES; p++) {
        memset(&t[p], 0, sizeof(t[p]));
        snprintf(t[p].id, sizeof(t[p].id), "%s%d", prefix, p);
        snprintf(t[p].devices, sizeof(t[p].devices), "site%d-*", p);
        t[p].o = (struct lrn_fedsvc_participant_opts){
            .cfg = cfg, .id = t[p].id, .devices = t[p].devices};
        cr_assert_eq(pthread_create(&t[p].th, NULL, part_main, &t[p]), 0);
    }
}

/* The services return within ~1 s of *stop (plus leaving the consumer group); asserted with
 * a margin for this loaded 2-core machine. */
#define STOP_MS_MAX 3000

static void stop_parts(struct part_th *t)
{
    int64_t t0 = ts_now_ms();
    for (int p = 0; p < SITES; p++)
        atomic_store(&t[p].stop, true);
    for (int p = 0; p < SITES; p++) {
        pthread_join(t[p].th, NULL);
        cr_assert_leq(ts_now_ms() - t0, STOP_MS_MAX, "participants took %" PRId64 " ms to stop",
                      ts_now_ms() - t0);
        cr_assert_eq(t[p].rc, CORE_OK, "participant %s: %s", t[p].id, t[p].eb);
    }
}

/* Wait until pred holds or timeout_ms passed; returns whether it held. */
static bool wait_for(bool (*pred)(void *), void *arg, int timeout_ms)
{
    int64_t t0 = ts_now_ms();
    while (!pred(arg)) {
        if (ts_now_ms() - t0 > timeout_ms)
            return false;
        ts_sleep_ms(50);
    }
    return true;
}

static bool server_done(void *arg)
{
    struct srv_th *t = arg;
    return atomic_load(&t->pr.sessions_completed) >= 1 ||
           (!atomic_load(&t->pr.running) && t->rc != CORE_OK);
}

struct round_wait {
    struct srv_th *t;
    uint64_t round;
};

static bool server_at_round(void *arg)
{
    struct round_wait *w = arg;
    return atomic_load(&w->t->pr.round) >= w->round && atomic_load(&w->t->pr.session) != 0;
}

static void join_server(struct srv_th *t)
{
    int64_t t0 = ts_now_ms();
    atomic_store(&t->stop, true);
    pthread_join(t->th, NULL);
    cr_assert_leq(ts_now_ms() - t0, STOP_MS_MAX, "the server took %" PRId64 " ms to stop",
                  ts_now_ms() - t0);
    cr_assert_eq(t->rc, CORE_OK, "server: %s", t->eb);
}

static size_t edges_of(const double *w)
{
    size_t e = 0;
    for (size_t x = 0; x < D * D; x++)
        e += w[x] != 0.0;
    return e;
}

/* One full run: 3 participants with id prefix pfx, a server with state dir state. */
static void full_run(const struct ts_broker *b, const char *dir, const char *pfx,
                     struct result_copy *res)
{
    char state[600], out[600];
    struct srv_th st;
    struct part_th pt[SITES];
    struct core_config *cfg;

    snprintf(state, sizeof(state), "%s/state-%s", dir, pfx);
    snprintf(out, sizeof(out), "%s/out-%s", dir, pfx);
    cfg = make_cfg(b, state, out);
    start_parts(pt, cfg, pfx);
    start_server(&st, cfg, res);
    cr_assert(wait_for(server_done, &st, 60000), "no DAG within 60 s (round %" PRIu64 ")",
              atomic_load(&st.pr.round));
    join_server(&st);
    cr_assert_eq(atomic_load(&st.pr.resumed_from_round), 0);
    for (int p = 0; p < SITES; p++) {
        cr_assert_eq(atomic_load(&pt[p].pr.samples), NPER);
        cr_assert_eq(atomic_load(&pt[p].pr.skipped), 0);
        cr_assert_eq(atomic_load(&pt[p].pr.other), (SITES - 1) * (NPER + DUP));
        cr_assert_eq(atomic_load(&pt[p].pr.duplicates), DUP);
        /* the privacy boundary: the data consumer reads the released topic only */
        cr_assert_str_eq(pt[p].pr.subscribed[0], "gcdp.released");
        cr_assert_str_eq(pt[p].pr.subscribed[1], "learner.global");
    }
    stop_parts(pt);
    core_config_free(cfg);
}

Test(learner_service, learns_the_sem_dag_and_resumes_after_server_and_participant_restarts,
     .timeout = 300)
{
    struct ts_broker b;
    struct lrn_sem_problem *pb = make_problem();
    struct result_copy a = {.mu = PTHREAD_MUTEX_INITIALIZER}, r = a;
    struct lrn_metrics m;
    char *dir = ts_tmpdir(), state[600], out[600];

    ts_broker_start(&b, NULL);
    produce_released(b.bootstrap, pb);
    schema_valid(first_record, "released.schema.json");

    /* uninterrupted run */
    full_run(&b, dir, "a", &a);
    cr_assert_eq(a.n, 1);
    cr_assert_eq(a.nmissing, 0);
    for (size_t i = 0; i < D; i++) {
        char want[16];
        snprintf(want, sizeof(want), "x%zu", i);
        cr_assert_str_eq(a.nodes[i], want);
    }
    cr_assert_eq(lrn_metrics_compute(pb->w, a.w, D, 0.0, &m), CORE_OK);
    cr_log_info("services: %zu rounds, SHD %zu, TPR %.2f, FDR %.2f, %zu true / %zu learned",
                a.rounds, m.shd, m.tpr, m.fdr, m.true_edges, m.pred_edges);
    cr_assert_leq(m.shd, 1, "SHD %zu", m.shd);
    cr_assert_not_null(strstr(a.json, "\"schema\":\"gcdp.learner-dag/1\""));
    cr_assert_not_null(strstr(a.json, "\"private\":false"));

    /* the same data, a server stopped after round 4 and restarted on its checkpoint, then a
     * participant stopped after round 8 and restarted (same id and state dir): it answers
     * the later rounds from its persisted snapshot; nobody missing, the same DAG */
    snprintf(state, sizeof(state), "%s/state-b", dir);
    snprintf(out, sizeof(out), "%s/out-b", dir);
    struct core_config *cfg = make_cfg(&b, state, out);
    set(cfg, "learner.service.round_timeout_ms", "15000"); /* the restart rejoins the group */
    struct part_th pt[SITES];
    struct srv_th st;
    start_parts(pt, cfg, "b");
    start_server(&st, cfg, &r);
    struct round_wait rw = {&st, 4};
    cr_assert(wait_for(server_at_round, &rw, 60000), "server B never reached round 4");
    join_server(&st); /* "killed": nothing is written at stop but what each round wrote */
    cr_assert_eq(atomic_load(&st.pr.sessions_completed), 0);
    uint64_t done_rounds = atomic_load(&st.pr.round);
    start_server(&st, cfg, &r);
    rw.round = 8;
    cr_assert(wait_for(server_at_round, &rw, 60000), "restarted server never reached round 8");
    cr_assert_geq(atomic_load(&st.pr.resumed_from_round), 4, "did not resume from round >= 4");
    cr_assert_geq(atomic_load(&st.pr.resumed_from_round), done_rounds);
    atomic_store(&pt[1].stop, true);
    pthread_join(pt[1].th, NULL);
    cr_assert_eq(pt[1].rc, CORE_OK, "%s", pt[1].eb);
    uint64_t asked = atomic_load(&pt[1].pr.last_round);
    atomic_store(&pt[1].stop, false);
    cr_assert_eq(pthread_create(&pt[1].th, NULL, part_main, &pt[1]), 0);
    cr_assert(wait_for(server_done, &st, 90000), "restarted server: no DAG within 90 s");
    join_server(&st);
    uint64_t first = atomic_load(&pt[1].pr.first_round);
    stop_parts(pt);
    cr_log_info("server restart after %" PRIu64 " rounds: resumed from round %" PRIu64
                "; participant b1 restarted after answering round %" PRIu64
                ", answered again from round %" PRIu64 "; %zu rounds (uninterrupted: %zu)",
                done_rounds, atomic_load(&st.pr.resumed_from_round), asked, first, r.rounds,
                a.rounds);
    cr_assert_gt(first, 0, "the restarted participant was asked round 0 again");
    cr_assert_eq(r.n, 1);
    cr_assert_eq(r.nmissing, 0);
    cr_assert_eq(r.rounds, a.rounds);
    cr_assert_eq(dag_records_valid(b.bootstrap), 2); /* run a's and run b's */
    cr_assert_eq(edges_of(r.w), edges_of(a.w));
    for (size_t x = 0; x < D * D; x++) {
        cr_assert_eq(r.w[x] != 0.0, a.w[x] != 0.0, "support differs at %zu", x);
        cr_assert_float_eq(r.w[x], a.w[x], 1e-6, "weight %zu: %g vs %g", x, r.w[x], a.w[x]);
    }
    core_config_free(cfg);
    free(a.json);
    free(r.json);
    lrn_sem_problem_free(pb);
    ts_broker_stop(&b);
    ts_rmtree(dir);
    free(dir);
}

static bool part_answered(void *arg)
{
    struct part_th *t = arg;
    return atomic_load(&t->pr.last_round) >= 3;
}

Test(learner_service, a_stopped_participant_is_missing_and_the_session_goes_on, .timeout = 180)
{
    struct ts_broker b;
    struct lrn_sem_problem *pb = make_problem();
    struct result_copy r = {.mu = PTHREAD_MUTEX_INITIALIZER};
    char *dir = ts_tmpdir(), state[600], out[600];
    struct part_th pt[SITES];
    struct srv_th st;

    ts_broker_start(&b, NULL);
    produce_released(b.bootstrap, pb);
    snprintf(state, sizeof(state), "%s/state", dir);
    snprintf(out, sizeof(out), "%s/out", dir);
    struct core_config *cfg = make_cfg(&b, state, out);
    start_parts(pt, cfg, "c");
    start_server(&st, cfg, &r);
    cr_assert(wait_for(part_answered, &pt[2], 60000), "c2 never answered round 3");
    atomic_store(&pt[2].stop, true); /* c2 leaves mid-session */
    pthread_join(pt[2].th, NULL);
    cr_assert(wait_for(server_done, &st, 90000), "no DAG within 90 s");
    join_server(&st);
    for (int p = 0; p < 2; p++) {
        atomic_store(&pt[p].stop, true);
        pthread_join(pt[p].th, NULL);
    }
    cr_assert_eq(r.n, 1);
    cr_assert_eq(r.participants, 3);
    cr_assert_eq(r.nmissing, 1, "missing: %zu", r.nmissing);
    cr_assert_str_eq(r.missing[0], "c2");
    cr_assert_geq(r.missing_from[0], 3);
    cr_assert_not_null(strstr(r.json, "\"missing\":[\"c2\"]"), "%s", r.json);
    cr_assert_eq(dag_records_valid(b.bootstrap), 1);
    cr_log_info("c2 missing from round %" PRIu64 "; %zu rounds, %zu edges", r.missing_from[0],
                r.rounds, edges_of(r.w));
    core_config_free(cfg);
    free(r.json);
    lrn_sem_problem_free(pb);
    ts_broker_stop(&b);
    ts_rmtree(dir);
    free(dir);
}

Test(learner_service, refuses_protected_topics, .timeout = 60)
{
    static const char *const bad[] = {"gcdp.windows", "sensors.raw", "sensors.rejected",
                                      "learner.updates"};
    struct ts_broker b = {.bootstrap = "127.0.0.1:1"};
    char *dir = ts_tmpdir();
    atomic_bool stop = false;

    for (size_t k = 0; k < sizeof(bad) / sizeof(*bad); k++) {
        struct core_config *cfg = make_cfg(&b, dir, dir);
        struct lrn_fedsvc_participant_opts po = {.cfg = cfg, .id = "p1"};
        struct lrn_fedsvc_participant_progress pp;
        struct lrn_fedsvc_server_opts so = {.cfg = cfg};
        struct lrn_fedsvc_server_progress sp;
        char eb[512] = "", v[64];
        snprintf(v, sizeof(v), "\"%s\"", bad[k]);
        set(cfg, "topics.released", v);
        cr_assert_eq(lrn_fedsvc_participant_run(&po, &stop, &pp, eb, sizeof(eb)), CORE_ECONFIG,
                     "participant accepted topics.released = %s", bad[k]);
        cr_assert_not_null(strstr(eb, "topics.released"), "%s", eb);
        cr_assert_eq(pp.subscribed[0][0], 0, "subscribed before the check");
        cr_assert_eq(lrn_fedsvc_server_run(&so, &stop, &sp, eb, sizeof(eb)), CORE_ECONFIG);
        core_config_free(cfg);
    }
    /* and the CLI: exit 2 before any network */
    {
        const char *args[] = {"learn",   "--participant", "p1",
                              "--check", "--set",         "topics.released=sensors.raw",
                              NULL};
        const char *ok[] = {"learn",   "--participant", "p1", "--devices",
                            "site0-*", "--check",       NULL};
        cr_assert_eq(ts_wait(ts_spawn(args, NULL, NULL), 20000), 2);
        cr_assert_eq(ts_wait(ts_spawn(ok, NULL, NULL), 20000), 0);
    }
    ts_rmtree(dir);
    free(dir);
}

/* Rounds completed in the active session of the server checkpoint at path (-1: none). */
static long ckpt_rounds(const char *path)
{
    json_t *j = json_load_file(path, 0, NULL);
    json_t *r = json_object_get(json_object_get(j, "active"), "rounds");
    long n = json_is_array(r) ? (long)json_array_size(r) : -1;
    json_decref(j);
    return n;
}

/* A second server process over the same participants, with a state and output directory of
 * its own, is killed with SIGKILL once its checkpoint holds 5 completed rounds, then started
 * again: it resumes from the checkpoint and publishes the same DAG (weights within 1e-9 of
 * the uninterrupted first server's: same data, same deterministic steps). */
static void kill9_server_resumes(const char *dir, const char *const *sargs, const char *errf)
{
    char st[700], out[700], ck[760], a[760], b[760], *args[64];
    size_t n = 0;
    pid_t srv;
    int64_t end;

    snprintf(st, sizeof(st), "learner.service.state_dir=state2");
    snprintf(out, sizeof(out), "learner.service.out_dir=out2");
    for (; sargs[n]; n++)
        args[n] = strstr(sargs[n], "learner.service.state_dir=") ? st
                  : strstr(sargs[n], "learner.service.out_dir=") ? out
                                                                 : (char *)sargs[n];
    args[n] = NULL;
    snprintf(ck, sizeof(ck), "%s/state2/server.ckpt", dir);
    srv = ts_spawn((const char *const *)args, NULL, errf);
    end = ts_now_ms() + 60000;
    while (ckpt_rounds(ck) < 5 && ts_now_ms() < end)
        ts_sleep_ms(20);
    cr_assert_geq(ckpt_rounds(ck), 5, "no checkpoint with 5 rounds: %s", ts_read_file(errf, NULL));
    kill(srv, SIGKILL);
    cr_assert_eq(ts_wait(srv, 10000), 128 + SIGKILL);
    srv = ts_spawn((const char *const *)args, NULL, errf);
    cr_assert_eq(ts_wait(srv, 95000), 0, "restarted server: %s", ts_read_file(errf, NULL));
    snprintf(a, sizeof(a), "%s/out/dag-s1.json", dir);
    snprintf(b, sizeof(b), "%s/out2/dag-s1.json", dir);
    double *wa = NULL, *wb = NULL;
    size_t da = 0, db = 0;
    char eb[512];
    cr_assert_eq(lrn_graph_read(a, D, &wa, &da, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(lrn_graph_read(b, D, &wb, &db, eb, sizeof(eb)), CORE_OK, "%s", eb);
    for (size_t x = 0; x < da * da; x++)
        cr_assert_float_eq(wa[x], wb[x], 1e-9 * (1.0 + fabs(wa[x])), "entry %zu", x);
    free(wa);
    free(wb);
}

/* The CLI: `gcdp learn --participant` ×3 and `gcdp learn --server --sessions 1` as
 * processes, with learner.service.method = fed-bnsl (the closed-form local step, dense
 * wire); the server exits 0 after publishing, the participants exit 0 on SIGTERM; a second
 * server killed with SIGKILL mid-session resumes and publishes the same DAG. */
Test(learner_service, cli_server_and_participants_publish_a_dag, .timeout = 120)
{
    struct ts_broker b;
    struct lrn_sem_problem *pb = make_problem();
    char *dir = ts_tmpdir(), sets[11][700], err[4][600], id[3][8], dev[3][16];
    pid_t parts[3], srv;

    ts_broker_start(&b, NULL);
    produce_released(b.bootstrap, pb);
    snprintf(sets[0], sizeof(sets[0]), "broker.bootstrap=%s", b.bootstrap);
    /* relative learner directories live under state.dir (checked below: dir/out/...) */
    snprintf(sets[1], sizeof(sets[1]), "learner.service.state_dir=state");
    snprintf(sets[2], sizeof(sets[2]), "learner.service.out_dir=out");
    snprintf(sets[10], sizeof(sets[10]), "state.dir=%s", dir);
    snprintf(sets[3], sizeof(sets[3]), "learner.service.participants=3");
    snprintf(sets[4], sizeof(sets[4]), "learner.service.min_samples=300");
    snprintf(sets[5], sizeof(sets[5]), "learner.service.horizon=300");
    snprintf(sets[6], sizeof(sets[6]), "learner.service.png=false");
    snprintf(sets[7], sizeof(sets[7]), "learner.service.announce_ms=200");
    snprintf(sets[8], sizeof(sets[8]), "learner.service.method=fed-bnsl");
    /* 60 of notears-admm's 100 rounds (test time): ρ₁ = 1e-3·1.75⁶⁰ ≈ 4e11 by then */
    snprintf(sets[9], sizeof(sets[9]), "learner.rounds=60");
    for (int p = 0; p < 3; p++) {
        snprintf(id[p], sizeof(id[p]), "e%d", p);
        snprintf(dev[p], sizeof(dev[p]), "site%d-*", p);
        snprintf(err[p], sizeof(err[p]), "%s/p%d.err", dir, p);
        const char *args[] = {"learn",        "--participant", id[p],   "--devices", dev[p],
                              "--exit-after", "100",           "--set", sets[0],     "--set",
                              sets[1],        "--set",         sets[5], "--set",     sets[7],
                              "--set",        sets[10],        NULL};
        parts[p] = ts_spawn(args, NULL, err[p]);
    }
    snprintf(err[3], sizeof(err[3]), "%s/server.err", dir);
    const char *sargs[] = {"learn", "--server", "--sessions", "1",     "--exit-after", "90",
                           "--set", sets[0],    "--set",      sets[1], "--set",        sets[2],
                           "--set", sets[3],    "--set",      sets[4], "--set",        sets[5],
                           "--set", sets[6],    "--set",      sets[8], "--set",        sets[9],
                           "--set", sets[10],   NULL};
    srv = ts_spawn(sargs, NULL, err[3]);
    cr_assert_eq(ts_wait(srv, 95000), 0, "server: %s", ts_read_file(err[3], NULL));
    kill9_server_resumes(dir, sargs, err[3]);
    for (int p = 0; p < 3; p++) {
        kill(parts[p], SIGTERM);
        cr_assert_eq(ts_wait(parts[p], 10000), 0, "participant %d: %s", p,
                     ts_read_file(err[p], NULL));
    }
    cr_assert_eq(dag_records_valid(b.bootstrap), 2); /* both servers' results */
    char path[700], *txt;
    snprintf(path, sizeof(path), "%s/out/dag-s1.dot", dir);
    txt = ts_read_file(path, NULL);
    cr_assert_not_null(txt, "no %s", path);
    free(txt);
    snprintf(path, sizeof(path), "%s/out/dag-s1.json", dir);
    txt = ts_read_file(path, NULL);
    cr_assert_not_null(txt, "no %s", path);
    cr_assert_not_null(strstr(txt, "\"x0\""), "%s", txt);
    free(txt);
    double *w = NULL;
    size_t d = 0;
    char eb[512];
    struct lrn_metrics m;
    cr_assert_eq(lrn_graph_read(path, D, &w, &d, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(lrn_metrics_compute(pb->w, w, D, 0.0, &m), CORE_OK);
    cr_log_info("fed-bnsl services (CLI): SHD %zu, TPR %.2f, FDR %.2f, %zu learned", m.shd, m.tpr,
                m.fdr, m.pred_edges);
    cr_assert_leq(m.shd, 1, "SHD %zu", m.shd);
    free(w);
    struct ts_record *rec;
    size_t n = ts_topic_read(b.bootstrap, "learner.dag", &rec);
    cr_assert_eq(n, 2);
    cr_assert_not_null(strstr(rec[0].value, "\"method\":\"fed-bnsl\""), "%s", rec[0].value);
    cr_assert_not_null(strstr(rec[0].value, "\"rounds\":60"), "%s", rec[0].value);
    cr_assert_not_null(strstr(rec[1].value, "\"rounds\":60"), "%s", rec[1].value);
    json_t *second = json_loads(rec[1].value, 0, NULL);
    cr_assert_geq(json_integer_value(json_object_get(second, "resumed_from_round")), 5,
                  "the killed server did not resume from its checkpoint: %s", rec[1].value);
    json_decref(second);
    ts_records_free(rec, n);
    lrn_sem_problem_free(pb);
    ts_broker_stop(&b);
    ts_rmtree(dir);
    free(dir);
}
