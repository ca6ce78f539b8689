/* test_ctl.c - the control topic end to end on an embedded broker: the real `gcdp ctl`
 * publishes signed commands, a control listener (core/ctl_listen.h) in this process acts
 * on the valid ones and answers status through core_ctl_reply_status, and forged,
 * unsigned, stale, future, replayed, malformed and misdirected records produced straight
 * to the topic are refused and counted by reason, never acted on. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <jansson.h>
#include <uv.h>

#include "broker.h"
#include "core/config.h"
#include "core/ctl.h"
#include "core/ctl_listen.h"
#include "core/kafka.h"
#include "core/kconf.h"
#include "core/log.h"
#include "core/metrics.h"
#include "test_support.h"

#define CONTROL "gcdp.control"
#define STATUS  "gcdp.status"

TestSuite(ctl_e2e, .timeout = 240);

struct lx {
    uv_loop_t loop;
    uv_timer_t tick;
    struct core_config *cfg;
    struct core_metrics *metrics;
    struct core_ctl_listener *l;
    struct core_kproducer *prod;
    struct core_ctl_cmd got[16];
    size_t ngot;
    int64_t acked, failed;
    bool closed;
    pid_t child; /* a running `gcdp ctl`, or 0 */
    int child_status;
    bool (*until)(struct lx *);
    int64_t deadline;
};

static void on_command(void *arg, const struct core_ctl_cmd *c)
{
    struct lx *x = arg;
    char eb[256];
    json_t *body;

    cr_assert_lt(x->ngot, 16);
    x->got[x->ngot++] = *c;
    if (c->cmd != CORE_CTL_STATUS)
        return;
    body =
        json_pack("{s:s, s:o}", "state", "running", "control", core_ctl_listener_counts_json(x->l));
    cr_assert_eq(core_ctl_reply_status(x->prod, STATUS, "calibrate",
                                       core_ctl_listener_instance(x->l), c->nonce, body, NULL, eb,
                                       sizeof(eb)),
                 CORE_OK, "%s", eb);
    json_decref(body);
}

static void on_closed(void *arg)
{
    ((struct lx *)arg)->closed = true;
}

static void on_delivery(void *arg, void *opaque, rd_kafka_resp_err_t err)
{
    struct lx *x = arg;
    (void)opaque;
    if (err)
        x->failed++;
    else
        x->acked++;
}

static void on_tick(uv_timer_t *t)
{
    struct lx *x = t->data;
    int st;

    if (x->child > 0 && waitpid(x->child, &st, WNOHANG) == x->child) {
        x->child = 0;
        x->child_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    if ((x->until && x->until(x)) || ts_now_ms() > x->deadline)
        uv_stop(&x->loop);
}

/* Serve the loop until cond holds; false on the deadline. */
static bool run_until(struct lx *x, bool (*cond)(struct lx *), int timeout_ms)
{
    x->until = cond;
    x->deadline = ts_now_ms() + timeout_ms;
    while (!(cond && cond(x)) && ts_now_ms() <= x->deadline)
        uv_run(&x->loop, UV_RUN_DEFAULT);
    return !cond || cond(x);
}

static bool child_done(struct lx *x)
{
    return x->child == 0;
}

static void setup(struct lx *x, const struct ts_broker *b, const char *key_file)
{
    static const struct core_cfg_key *const tables[] = {core_config_keys};
    struct core_ctl_listener_opts o = {"calibrate", on_command, on_closed, x, NULL};
    rd_kafka_conf_t *pc = NULL;
    char eb[512], set[700];

    memset(x, 0, sizeof(*x));
    x->cfg = core_config_new(tables, 1);
    x->metrics = core_metrics_new();
    o.metrics = x->metrics;
    cr_assert_eq(core_config_set_arg(x->cfg, b->set_bootstrap, eb, sizeof(eb)), CORE_OK, "%s", eb);
    snprintf(set, sizeof(set), "control.key_file=%s", key_file);
    cr_assert_eq(core_config_set_arg(x->cfg, set, eb, sizeof(eb)), CORE_OK, "%s", eb);
    uv_loop_init(&x->loop);
    uv_timer_init(&x->loop, &x->tick);
    x->tick.data = x;
    uv_timer_start(&x->tick, on_tick, 20, 20);
    cr_assert_eq(core_kafka_conf_new(x->cfg, CORE_KAFKA_PRODUCER, NULL, &pc, eb, sizeof(eb)),
                 CORE_OK, "%s", eb);
    cr_assert_eq(core_kproducer_new(&x->loop, pc, on_delivery, x, &x->prod, eb, sizeof(eb)),
                 CORE_OK, "%s", eb);
    cr_assert_eq(core_ctl_listener_new(&x->loop, x->cfg, &o, &x->l, eb, sizeof(eb)), CORE_OK, "%s",
                 eb);
    cr_assert(core_ctl_listener_enabled(x->l));
}

static bool closed_and_flushed(struct lx *x)
{
    return x->closed && core_kproducer_outq(x->prod) == 0;
}

static void teardown(struct lx *x)
{
    core_ctl_listener_close(x->l);
    cr_assert(run_until(x, closed_and_flushed, 30000), "listener did not close");
    core_ctl_listener_detach(x->l);
    core_kproducer_detach(x->prod);
    uv_close((uv_handle_t *)&x->tick, NULL);
    uv_run(&x->loop, UV_RUN_DEFAULT);
    core_ctl_listener_free(x->l);
    core_kproducer_free(x->prod);
    uv_run(&x->loop, UV_RUN_DEFAULT);
    cr_assert_eq(uv_loop_close(&x->loop), 0, "handles left open on the loop");
    core_metrics_free(x->metrics);
    core_config_free(x->cfg);
}

static void send_raw(struct lx *x, int32_t partition, const char *text, size_t len)
{
    cr_assert_eq(core_kproducer_send(x->prod, CONTROL, partition, NULL, 0, text, len, NULL),
                 CORE_OK);
}

static uint64_t total(struct lx *x)
{
    uint64_t n = 0;
    for (int r = 0; r < CORE_CTL_NVERDICTS; r++)
        n += core_ctl_listener_count(x->l, (enum core_ctl_verdict)r);
    return n;
}

static bool is_ready(struct lx *x)
{
    return core_ctl_listener_ready(x->l);
}

static uint64_t want_total;
static bool total_reached(struct lx *x)
{
    return total(x) >= want_total;
}

/* The listener starts at the end of each partition (auto.offset.reset=latest), resolved
 * after its assignment: probe each partition with a malformed record until one is seen,
 * so later records are certainly read. Returns the probes counted (all malformed). */
static uint64_t wait_listening(struct lx *x)
{
    cr_assert(run_until(x, is_ready, 30000), "listener never got its partitions");
    for (int32_t p = 0; p < 4; p++) {
        int64_t end = ts_now_ms() + 30000;
        uint64_t before = total(x);
        do {
            send_raw(x, p, "probe", 5);
            want_total = before + 1;
            run_until(x, total_reached, 500);
        } while (total(x) == before && ts_now_ms() < end);
        cr_assert_gt(total(x), before, "partition %d never read", p);
    }
    want_total = total(x);
    run_until(x, NULL, 300); /* stragglers of the last probe */
    return core_ctl_listener_count(x->l, CORE_CTL_MALFORMED);
}

/* Run `gcdp ctl <args>` to completion while serving the loop; returns its exit status. */
static int run_ctl(struct lx *x, const char *const *args, const char *out, const char *err)
{
    x->child = ts_spawn(args, out, err);
    cr_assert(run_until(x, child_done, 60000), "gcdp ctl did not finish");
    return x->child_status;
}

static size_t want_got;
static bool got_enough(struct lx *x)
{
    return x->ngot >= want_got;
}

static void keygen(const char *path)
{
    const char *args[] = {"ctl", "keygen", "--out", path, NULL};
    cr_assert_eq(ts_wait(ts_spawn(args, NULL, NULL), 20000), 0, "gcdp ctl keygen failed");
}

/* The status reply printed by `gcdp ctl status`: quotes the nonce, validates. */
static void check_reply(const char *dir, const char *out, const char *nonce)
{
    char *text = ts_read_file(out, NULL), cmd[2048];
    json_t *j;

    cr_assert_not_null(text);
    cr_assert_eq(strchr(text, '\n') - text + 1, (long)strlen(text), "one line: %s", text);
    j = json_loads(text, 0, NULL);
    cr_assert_not_null(j, "%s", text);
    cr_assert_str_eq(json_string_value(json_object_get(j, "in_reply_to")), nonce);
    cr_assert_str_eq(json_string_value(json_object_get(j, "service")), "calibrate");
    cr_assert_eq(json_integer_value(json_object_get(
                     json_object_get(json_object_get(j, "status"), "control"), "accepted")),
                 3, "recalibrate, pause, status accepted when the reply was made");
    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 -c 'import json,sys,jsonschema; "
             "jsonschema.Draft202012Validator(json.load(open(sys.argv[1]))).validate("
             "json.load(open(sys.argv[2])))' %s/status.schema.json %s",
             GCDP_SCHEMA_DIR, out);
    cr_assert_eq(system(cmd), 0, "reply does not validate: %s", text);
    (void)dir;
    json_decref(j);
    free(text);
}

/* gcdp ctl recalibrate, pause, status (answered), resume for another target. */
static void cli_commands(struct lx *x, const struct ts_broker *b, const char *dir, const char *key)
{
    char out[600], err[600], *text;
    const char *recal[] = {"ctl",      "recalibrate",     "--target", "calibrate",
                           "--reason", "drift suspected", "--key",    key,
                           "--set",    b->set_bootstrap,  NULL};
    const char *pause[] = {"ctl", "pause", "--key", key, "--set", b->set_bootstrap, NULL};
    const char *status[] = {"ctl", "status", "--key",          key, "--wait", "30", "--count",
                            "1",   "--set",  b->set_bootstrap, NULL};
    const char *resume[] = {"ctl", "resume", "--target",       "release", "--key",
                            key,   "--set",  b->set_bootstrap, NULL};

    snprintf(out, sizeof(out), "%s/ctl.out", dir);
    snprintf(err, sizeof(err), "%s/ctl.err", dir);
    cr_assert_eq(run_ctl(x, recal, NULL, err), 0, "recalibrate not acknowledged");
    text = ts_read_file(err, NULL);
    cr_assert(strstr(text, "acknowledged"), "%s", text);
    free(text);
    want_got = 1;
    cr_assert(run_until(x, got_enough, 20000), "recalibrate not received");
    cr_assert_eq(x->got[0].cmd, CORE_CTL_RECALIBRATE);
    cr_assert_str_eq(x->got[0].reason, "drift suspected");
    cr_assert_eq(run_ctl(x, pause, NULL, NULL), 0);
    want_got = 2;
    cr_assert(run_until(x, got_enough, 20000), "pause not received");
    cr_assert_eq(x->got[1].cmd, CORE_CTL_PAUSE);
    cr_assert_str_eq(x->got[1].target, "all");
    cr_assert_eq(run_ctl(x, status, out, err), 0, "status got no reply");
    cr_assert_eq(x->ngot, 3);
    cr_assert_eq(x->got[2].cmd, CORE_CTL_STATUS);
    check_reply(dir, out, x->got[2].nonce);
    want_total = total(x) + 1; /* before: the loop judges it while gcdp ctl runs */
    cr_assert_eq(run_ctl(x, resume, NULL, NULL), 0, "resume (for release) not acknowledged");
    cr_assert(run_until(x, total_reached, 20000));
    cr_assert_eq(core_ctl_listener_count(x->l, CORE_CTL_WRONG_TARGET), 1);
    cr_assert_eq(x->ngot, 3, "a command for release was acted on");
}

/* The recalibrate record exactly as `gcdp ctl` published it. */
static char *published(const struct ts_broker *b, const char *nonce)
{
    struct ts_record *r = NULL;
    size_t n = ts_topic_read(b->bootstrap, CONTROL, &r);
    char *found = NULL;

    for (size_t i = 0; i < n && !found; i++)
        if (strstr(r[i].value, nonce))
            found = strdup(r[i].value);
    ts_records_free(r, n);
    cr_assert_not_null(found, "record with nonce %s not on %s", nonce, CONTROL);
    return found;
}

static char *signed_by(const char *key_file, enum core_ctl_cmd_kind k, int64_t at)
{
    struct core_ctl_key *key = NULL;
    char *s = NULL, eb[512];
    cr_assert_eq(core_ctl_key_load(key_file, &key, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(core_ctl_sign(key, k, "all", "raw", at, NULL, &s, eb, sizeof(eb)), CORE_OK);
    core_ctl_key_free(key);
    return s;
}

/* s with member name set to val (stolen); the signature untouched. */
static char *with(const char *s, const char *name, json_t *val)
{
    json_t *j = json_loads(s, 0, NULL);
    char *out;
    if (val)
        json_object_set_new(j, name, val);
    else
        json_object_del(j, name);
    out = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return out;
}

/* Forged, unsigned, stale, future, replayed, malformed records produced to the topic. */
static void raw_attacks(struct lx *x, const struct ts_broker *b, const char *key,
                        const char *other_key)
{
    int64_t now = core_ctl_now_ms();
    struct core_ctl_key *k = NULL;
    char eb[512], big[5000];
    char *replay = published(b, x->got[0].nonce);
    char *foreign = signed_by(other_key, CORE_CTL_RECALIBRATE, now);
    char *forged, *unsigned_rec, *stale = signed_by(key, CORE_CTL_RECALIBRATE, now - 61000);
    char *future = signed_by(key, CORE_CTL_PAUSE, now + 61000);
    char *texts[8];
    size_t n = 0;

    cr_assert_eq(core_ctl_key_load(key, &k, eb, sizeof(eb)), CORE_OK);
    forged = with(foreign, "key_id", json_string(core_ctl_key_id(k)));
    unsigned_rec = with(foreign, "sig", NULL);
    memset(big, ' ', sizeof(big));
    memcpy(big, replay, strlen(replay));
    texts[n++] = replay;
    texts[n++] = foreign;
    texts[n++] = forged;
    texts[n++] = unsigned_rec;
    texts[n++] = stale;
    texts[n++] = future;
    texts[n++] = "{\"schema\":\"gcdp.control/1\",\"cmd\":\"pause\"";
    want_total = total(x) + n + 1;
    for (size_t i = 0; i < n; i++)
        send_raw(x, RD_KAFKA_PARTITION_UA, texts[i], strlen(texts[i]));
    send_raw(x, RD_KAFKA_PARTITION_UA, big, sizeof(big)); /* the valid record, padded: oversize */
    cr_assert(run_until(x, total_reached, 30000), "the raw records were not all judged");
    for (size_t i = 0; i < 6; i++)
        free(texts[i]);
    core_ctl_key_free(k);
}

Test(ctl_e2e, cli_commands_are_acted_on_and_every_bad_record_is_refused_by_reason)
{
    struct ts_broker b;
    struct lx x;
    char *dir = ts_tmpdir(), key[600], other[600], *page = NULL;
    uint64_t probes;

    core_log_level = CORE_LOG_ERROR;
    ts_broker_start(&b, NULL);
    snprintf(key, sizeof(key), "%s/ctl.key", dir);
    snprintf(other, sizeof(other), "%s/other.key", dir);
    keygen(key);
    keygen(other);
    setup(&x, &b, key);
    probes = wait_listening(&x);
    cli_commands(&x, &b, dir, key);
    raw_attacks(&x, &b, key, other);
    run_until(&x, NULL, 500); /* nothing more arrives */
#define C(v) core_ctl_listener_count(x.l, CORE_CTL_##v)
    cr_assert_eq(C(ACCEPTED), 3);
    cr_assert_eq(x.ngot, 3, "a refused record was acted on");
    cr_assert_eq(C(REPLAYED), 1);
    cr_assert_eq(C(UNKNOWN_KEY), 1);
    cr_assert_eq(C(BAD_SIGNATURE), 1);
    cr_assert_eq(C(UNSIGNED), 1);
    cr_assert_eq(C(STALE), 1);
    cr_assert_eq(C(FUTURE), 1);
    cr_assert_eq(C(WRONG_TARGET), 1);
    cr_assert_eq(C(MALFORMED), probes + 2, "truncated JSON and the oversize record");
    cr_assert_eq(C(REPLAY_CACHE_FULL), 0);
#undef C
    cr_assert_eq(core_metrics_render(x.metrics, &page), CORE_OK);
    cr_assert_eq(ts_prom_value(page, "gcdp_control_records_total{service=\"calibrate\","
                                     "verdict=\"stale\"}"),
                 1, "%s", page);
    cr_assert_eq(ts_prom_value(page, "gcdp_control_records_total{service=\"calibrate\","
                                     "verdict=\"accepted\"}"),
                 3);
    free(page);
    cr_assert_eq(x.failed, 0);
    teardown(&x);
    ts_broker_stop(&b);
    ts_rmtree(dir);
    free(dir);
}

Test(ctl_e2e, status_nobody_answers_times_out_with_exit_1)
{
    struct ts_broker b;
    struct lx x;
    char *dir = ts_tmpdir(), key[600], err[600], *text;
    const char *args[] = {"ctl",    "status", "--target", "nobody",        "--key", key,
                          "--wait", "2",      "--set",    b.set_bootstrap, NULL};
    int64_t t0;

    core_log_level = CORE_LOG_ERROR;
    ts_broker_start(&b, NULL);
    args[9] = b.set_bootstrap;
    snprintf(key, sizeof(key), "%s/ctl.key", dir);
    snprintf(err, sizeof(err), "%s/ctl.err", dir);
    keygen(key);
    setup(&x, &b, key);
    wait_listening(&x);
    t0 = ts_now_ms();
    want_total = total(&x) + 1;
    cr_assert_eq(run_ctl(&x, args, NULL, err), 1, "no reply must be exit 1");
    cr_assert_geq(ts_now_ms() - t0, 2000, "did not wait --wait 2");
    text = ts_read_file(err, NULL);
    cr_assert(strstr(text, "no reply to status"), "%s", text);
    free(text);
    cr_assert(run_until(&x, total_reached, 20000));
    cr_assert_eq(core_ctl_listener_count(x.l, CORE_CTL_WRONG_TARGET), 1);
    cr_assert_eq(x.ngot, 0);
    teardown(&x);
    ts_broker_stop(&b);
    ts_rmtree(dir);
    free(dir);
}

Test(ctl_e2e, help_needs_no_configuration_and_names_keys_and_exit_codes)
{
    char *dir = ts_tmpdir(), out[600], *text;
    const char *args[] = {"ctl", "status", "--help", "--config", "/nonexistent/gcdp.json", NULL};
    const char *nokey[] = {"ctl", "pause", "--set", "broker.bootstrap=127.0.0.1:9", NULL};

    snprintf(out, sizeof(out), "%s/help", dir);
    cr_assert_eq(ts_wait(ts_spawn(args, out, NULL), 10000), 0);
    text = ts_read_file(out, NULL);
    cr_assert(strstr(text, "control.key_file") && strstr(text, "topics.status") &&
                  strstr(text, "Exit:") && strstr(text, "NOT encrypted"),
              "%s", text);
    free(text);
    cr_assert_eq(ts_wait(ts_spawn(nokey, NULL, out), 10000), 2, "no key is a config error");
    text = ts_read_file(out, NULL);
    cr_assert(strstr(text, "control.key_file"), "%s", text);
    free(text);
    ts_rmtree(dir);
    free(dir);
}
