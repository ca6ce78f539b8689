/* test_audit_mirror.c - core/audit_mirror.h: the ledger's audit log on a topic, at least
 * once, resumed from its persisted offset, against an in-process embedded broker. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <uv.h>

#include "broker.h"
#include "core/audit_mirror.h"
#include "core/broker.h"
#include "core/config.h"
#include "core/dp_ledger.h"
#include "core/kconf.h"
#include "core/log.h"
#include "test_support.h"

static void quiet(void)
{
    core_log_level = CORE_LOG_OFF;
}

TestSuite(audit_mirror, .init = quiet, .timeout = 120);

struct run {
    uv_loop_t loop;
    uv_timer_t poll;
    struct core_dp_ledger *l;
    struct core_audit_mirror *m;
    struct core_broker *down; /* brought up again after the first failed delivery */
    uint64_t t0;
    int done;
};

static uint64_t durable(void *arg)
{
    struct core_dp_ledger_stats st;
    core_dp_ledger_stats(arg, &st);
    return st.audit_bytes;
}

static void mirror_done(void *arg)
{
    struct run *r = arg;
    r->done = 1;
}

/* Stop the mirror once it has caught up with the ledger (or after 60 s). */
static void on_poll(uv_timer_t *t)
{
    struct run *r = t->data;
    struct core_audit_mirror_stats st;
    core_audit_mirror_stats(r->m, &st);
    if (r->down && st.errors > 0) { /* a delivery failed during the outage: end it */
        cr_assert_eq(core_broker_control(r->down, "up"), CORE_OK);
        r->down = NULL;
    }
    if ((!r->down && st.acked_bytes == durable(r->l)) || uv_now(&r->loop) - r->t0 > 60000) {
        uv_close((uv_handle_t *)&r->poll, NULL);
        core_audit_mirror_stop(r->m, 10000, mirror_done, r);
    }
}

static uint64_t mirror_run(struct core_dp_ledger *l, struct core_broker *b, const char *audit,
                           const char *state, int outage)
{
    static const struct core_cfg_key *const tables[] = {core_config_keys};
    struct core_config *cfg = core_config_new(tables, 1);
    rd_kafka_conf_t *pc = NULL;
    struct run r;
    char eb[512], arg[300];
    struct core_audit_mirror_opts o = {.audit_path = audit,
                                       .state_path = state,
                                       .topic = "gcdp.audit",
                                       .interval_ms = 20,
                                       .max_inflight = 64,
                                       .durable = durable,
                                       .arg = l};
    memset(&r, 0, sizeof(r));
    r.l = l;
    snprintf(arg, sizeof(arg), "broker.bootstrap=%s", core_broker_bootstrap(b));
    cr_assert_eq(core_config_set_arg(cfg, arg, eb, sizeof(eb)), CORE_OK, "%s", eb);
    /* a delivery fails after 1.5 s instead of 5 minutes (the outage test) */
    cr_assert_eq(core_config_set_arg(cfg, "kafka.message.timeout.ms=1500", eb, sizeof(eb)), CORE_OK,
                 "%s", eb);
    if (outage) {
        cr_assert_eq(core_broker_control(b, "down"), CORE_OK);
        r.down = b;
    }
    cr_assert_eq(core_kafka_conf_new(cfg, CORE_KAFKA_PRODUCER, NULL, &pc, eb, sizeof(eb)), CORE_OK);
    uv_loop_init(&r.loop);
    cr_assert_eq(core_audit_mirror_new(&r.loop, pc, &o, &r.m, eb, sizeof(eb)), CORE_OK, "%s", eb);
    uv_timer_init(&r.loop, &r.poll);
    r.poll.data = &r;
    r.t0 = uv_now(&r.loop);
    uv_timer_start(&r.poll, on_poll, 50, 50);
    uv_run(&r.loop, UV_RUN_DEFAULT);
    cr_assert(r.done, "the mirror did not stop");
    struct core_audit_mirror_stats st;
    core_audit_mirror_stats(r.m, &st);
    cr_assert_eq(st.acked_bytes, durable(l), "caught up with the ledger");
    cr_assert(outage ? st.errors > 0 : st.errors == 0, "%llu delivery errors",
              (unsigned long long)st.errors);
    core_audit_mirror_free(r.m);
    uv_run(&r.loop, UV_RUN_DEFAULT);
    cr_assert_eq(uv_loop_close(&r.loop), 0, "handles left open");
    core_config_free(cfg);
    return st.errors;
}

static void mirror_once(struct core_dp_ledger *l, struct core_broker *b, const char *audit,
                        const char *state)
{
    (void)mirror_run(l, b, audit, state, 0);
}

static void commit_n(struct core_dp_ledger *l, int from, int n)
{
    for (int i = from; i < from + n; i++) {
        char id[32], unit[32];
        snprintf(id, sizeof(id), "w%d@1", i);
        snprintf(unit, sizeof(unit), "dev%d|%d", i % 7, i / 7);
        const char *u[1] = {unit};
        cr_assert_eq(
            core_dp_ledger_charge(l, id, "lap", u, 1, &(struct core_dp_cost){0.5, 0, 0}, NULL),
            CORE_OK);
        cr_assert_eq(core_dp_ledger_commit_output(l, id, id, strlen(id)), CORE_OK);
    }
}

/* A broker with gcdp.audit (one partition) and a JSONL ledger in a fresh directory. */
struct fx {
    struct core_broker *b;
    struct core_dp_ledger *l;
    char *dir, audit[512], state[512];
};

static void fx_open(struct fx *f)
{
    const char *topics[] = {"gcdp.audit"};
    char eb[512];
    struct core_dp_ledger_opts lo = {
        .path = f->audit, .cap = {1e6, 1e6, 1}, .scheme = {60000, 0, 1000}};
    f->dir = ts_tmpdir();
    snprintf(f->audit, sizeof(f->audit), "%s/ledger.jsonl", f->dir);
    snprintf(f->state, sizeof(f->state), "%s/ledger.jsonl.mirror", f->dir);
    cr_assert_eq(core_broker_new(1, topics, 1, 1, &f->b, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(core_dp_ledger_open(&lo, &f->l, eb, sizeof(eb)), CORE_OK, "%s", eb);
}

static void fx_close(struct fx *f)
{
    core_dp_ledger_free(f->l);
    core_broker_free(f->b);
    ts_rmtree(f->dir);
    free(f->dir);
}

/* Every row of the audit log, in order, keyed by its release id (the header first); a
 * restart resumes at the persisted offset; rows committed while no mirror ran follow. */
Test(audit_mirror, every_row_once_in_order_and_resumed_after_a_restart)
{
    struct fx f;
    fx_open(&f);
    struct core_dp_ledger *l = f.l;
    struct core_broker *b = f.b;
    const char *audit = f.audit, *state = f.state;
    commit_n(l, 0, 300);
    mirror_once(l, b, audit, state);
    commit_n(l, 300, 200);
    mirror_once(l, b, audit, state);

    struct ts_record *rec = NULL;
    size_t n = ts_topic_read(core_broker_bootstrap(b), "gcdp.audit", &rec);
    size_t len = 0;
    char *text = ts_read_file(audit, &len), *line = text;
    cr_assert_eq(n, 501, "the header and 500 rows, none twice after a clean stop: %zu", n);
    cr_assert_str_eq(rec[0].key, "header");
    for (size_t i = 0; i < n; i++) {
        char *nl = strchr(line, '\n');
        cr_assert_not_null(nl);
        *nl = '\0';
        cr_assert_str_eq(rec[i].value, line, "record %zu is the audit log's line %zu", i, i);
        if (i > 0) {
            char id[32];
            snprintf(id, sizeof(id), "w%zu@1", i - 1);
            cr_assert_str_eq(rec[i].key, id);
        }
        line = nl + 1;
    }
    ts_records_free(rec, n);
    free(text);
    /* a state file of another audit log: mirrored again from the beginning */
    ts_write_file(state, "{\"offset\":5,\"header\":\"00\"}\n");
    mirror_once(l, b, audit, state);
    n = ts_topic_read(core_broker_bootstrap(b), "gcdp.audit", &rec);
    cr_assert_eq(n, 1002);
    cr_assert_str_eq(rec[501].key, "header");
    ts_records_free(rec, n);
    fx_close(&f);
}

/* The broker down while rows are sent: deliveries fail, the mirror rewinds to its
 * acknowledged offset and sends again; afterwards every row is on the topic (at least once,
 * in audit order after the last rewind). */
Test(audit_mirror, a_broker_outage_rewinds_and_loses_no_row)
{
    struct fx f;
    fx_open(&f);
    struct core_dp_ledger *l = f.l;
    struct core_broker *b = f.b;
    const char *audit = f.audit, *state = f.state;
    commit_n(l, 0, 200);
    uint64_t errors = mirror_run(l, b, audit, state, 1);
    struct ts_record *rec = NULL;
    size_t n = ts_topic_read(core_broker_bootstrap(b), "gcdp.audit", &rec);
    int seen[200] = {0};
    for (size_t i = 0; i < n; i++) {
        int k = -1;
        if (strcmp(rec[i].key, "header") != 0 && sscanf(rec[i].key, "w%d@1", &k) == 1 && k >= 0 &&
            k < 200)
            seen[k]++;
    }
    for (int k = 0; k < 200; k++)
        cr_assert_geq(seen[k], 1, "row w%d@1 missing after the outage", k);
    cr_log_info("outage: %llu failed deliveries, %zu records for 201 lines\n",
                (unsigned long long)errors, n);
    ts_records_free(rec, n);
    fx_close(&f);
}
