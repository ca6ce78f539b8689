/* ctl_listen.c - control-topic listener and status replies (core/ctl_listen.h). */
#include "core/ctl_listen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/kconf.h"
#include "core/log.h"
#include "core/mem.h"

/* Rejections of one reason logged one by one before only every LOG_EVERY-th is. */
#define LOG_FIRST 100
#define LOG_EVERY 1000

struct core_ctl_listener {
    struct core_ctl_listener_opts opts;
    char service[CORE_CTL_MAX_TARGET + 1];
    char instance[300];
    char topic[256];
    struct core_ctl_verifier *ver; /* NULL when disabled */
    struct core_kconsumer *cons;   /* NULL when disabled */
    struct core_metric *series[CORE_CTL_NVERDICTS];
    bool closing, closed;
};

int64_t core_ctl_now_ms(void)
{
    return core_wall_ms();
}

void core_ctl_instance_id(char *buf, size_t n)
{
    char host[256];
    if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "unknown");
    host[sizeof(host) - 1] = '\0';
    snprintf(buf, n, "%s:%ld", host, (long)getpid());
}

static void log_verdict(struct core_ctl_listener *l, const rd_kafka_message_t *m,
                        enum core_ctl_verdict r, const char *detail)
{
    uint64_t n = core_ctl_verifier_count(l->ver, r);
    if (n <= LOG_FIRST || n % LOG_EVERY == 0)
        CORE_WARN("control: record %s[%d]@%lld rejected: %s (%s); %llu %s so far", l->topic,
                  (int)m->partition, (long long)m->offset, core_ctl_verdict_name(r), detail,
                  (unsigned long long)n, core_ctl_verdict_name(r));
}

static void on_message(void *arg, const rd_kafka_message_t *m)
{
    struct core_ctl_listener *l = arg;
    struct core_ctl_cmd cmd;
    char detail[256];
    enum core_ctl_verdict r;

    r = core_ctl_verify(l->ver, m->payload ? m->payload : "", m->len, core_ctl_now_ms(), &cmd,
                        detail, sizeof(detail));
    core_metric_add(l->series[r], 1);
    if (r != CORE_CTL_ACCEPTED) {
        log_verdict(l, m, r, detail);
        return;
    }
    CORE_INFO("control: accepted %s for \"%s\" (key %s, nonce %s, %s[%d]@%lld): %s",
              core_ctl_cmd_name(cmd.cmd), cmd.target, cmd.key_id, cmd.nonce, l->topic,
              (int)m->partition, (long long)m->offset, cmd.reason);
    l->opts.on_command(l->opts.arg, &cmd);
}

static void on_gap(void *arg, const char *topic, int32_t p, int64_t from, int64_t to)
{
    struct core_ctl_listener *l = arg;
    (void)l;
    CORE_WARN("control: records %lld..%lld of %s[%d] were never seen (retention)", (long long)from,
              (long long)to, topic, (int)p);
}

static void on_error(void *arg, rd_kafka_resp_err_t err, const char *reason, bool fatal)
{
    (void)arg;
    (void)err;
    CORE_LOG(fatal ? CORE_LOG_ERROR : CORE_LOG_WARN, "control consumer: %s%s", reason,
             fatal ? " (fatal: commands are no longer read)" : "");
}

static void on_cons_closed(void *arg)
{
    struct core_ctl_listener *l = arg;
    l->closed = true;
    if (l->opts.on_closed)
        l->opts.on_closed(l->opts.arg);
}

/* The verifier from control.key_file / control.prev_key_file / control.max_skew_s. */
static core_err make_verifier(const struct core_config *cfg, struct core_ctl_listener *l, char *eb,
                              size_t ebn)
{
    const char *kf = core_config_str(cfg, "control.key_file");
    const char *pf = core_config_str(cfg, "control.prev_key_file");
    struct core_ctl_verifier_opts vo = {
        .max_skew_ms = core_config_int(cfg, "control.max_skew_s") * 1000,
        .target = l->service,
        .cache_cap = (size_t)core_config_int(cfg, "control.replay_cache"),
    };
    char why[512];
    core_err rc = core_ctl_key_load(kf, &vo.key, why, sizeof(why));

    if (rc != CORE_OK) {
        snprintf(eb, ebn, "control.key_file: %s", why);
        return CORE_ECONFIG;
    }
    if (pf && pf[0] && core_ctl_key_load(pf, &vo.prev_key, why, sizeof(why)) != CORE_OK) {
        snprintf(eb, ebn, "control.prev_key_file: %s", why);
        core_ctl_key_free(vo.key);
        return CORE_ECONFIG;
    }
    if (core_ctl_verifier_new(&vo, &l->ver, why, sizeof(why)) != CORE_OK) { /* takes keys */
        snprintf(eb, ebn, "%s: %s", vo.prev_key ? "control.prev_key_file" : "control", why);
        return CORE_ECONFIG;
    }
    return CORE_OK;
}

static core_err make_consumer(uv_loop_t *loop, const struct core_config *cfg,
                              struct core_ctl_listener *l, char *eb, size_t ebn)
{
    struct core_kconsumer_ops ops = {.on_message = on_message,
                                     .on_gap = on_gap,
                                     .on_error = on_error,
                                     .on_closed = on_cons_closed,
                                     .arg = l};
    char prefix[256];

    /* one group per instance: every instance is assigned every partition; "latest": never
     * replay old commands */
    snprintf(prefix, sizeof(prefix), "gcdp.ctl.%s", l->service);
    return core_kconsumer_new_own(loop, cfg, prefix, l->topic, "latest", &ops, &l->cons, eb, ebn);
}

static void register_metrics(struct core_ctl_listener *l)
{
    char labels[CORE_METRICS_MAX_LABELS];

    for (int r = 0; r < CORE_CTL_NVERDICTS; r++) {
        snprintf(labels, sizeof(labels), "service=\"%s\",verdict=\"%s\"", l->service,
                 core_ctl_verdict_name((enum core_ctl_verdict)r));
        l->series[r] = core_metrics_get(l->opts.metrics, CORE_METRIC_COUNTER,
                                        "gcdp_control_records_total", labels,
                                        "records of topics.control by verdict (accepted or "
                                        "the reason of the rejection)");
    }
}

core_err core_ctl_listener_new(uv_loop_t *loop, const struct core_config *cfg,
                               const struct core_ctl_listener_opts *opts,
                               struct core_ctl_listener **out, char *eb, size_t ebn)
{
    struct core_ctl_listener *l;
    const char *kf = core_config_str(cfg, "control.key_file");
    const char *pf = core_config_str(cfg, "control.prev_key_file");
    char why[128];
    core_err rc = CORE_OK;

    if (!opts->on_command ||
        core_ctl_text_check(opts->service, CORE_CTL_MAX_TARGET, 1, why, sizeof(why)) != CORE_OK) {
        snprintf(eb, ebn, "control listener: a service name and on_command are required");
        return CORE_EINVAL;
    }
    if ((!kf || !kf[0]) && pf && pf[0]) {
        snprintf(eb, ebn,
                 "control.prev_key_file: set while control.key_file is empty (the "
                 "previous key is only accepted beside a current one)");
        return CORE_ECONFIG;
    }
    l = core_xcalloc(1, sizeof(*l));
    l->opts = *opts;
    snprintf(l->service, sizeof(l->service), "%s", opts->service);
    snprintf(l->topic, sizeof(l->topic), "%s", core_config_str(cfg, "topics.control"));
    core_ctl_instance_id(l->instance, sizeof(l->instance));
    if (opts->metrics)
        register_metrics(l);
    if (kf && kf[0]) {
        rc = make_verifier(cfg, l, eb, ebn);
        if (rc == CORE_OK)
            rc = make_consumer(loop, cfg, l, eb, ebn);
    } else {
        CORE_INFO("control: disabled for %s (control.key_file is empty): %s is not read",
                  l->service, l->topic);
    }
    if (rc != CORE_OK) {
        core_ctl_listener_free(l);
        return rc;
    }
    *out = l;
    return CORE_OK;
}

bool core_ctl_listener_enabled(const struct core_ctl_listener *l)
{
    return l->cons != NULL;
}

bool core_ctl_listener_ready(const struct core_ctl_listener *l)
{
    return l->cons && !l->closing && core_kconsumer_assigned(l->cons) > 0;
}

uint64_t core_ctl_listener_count(const struct core_ctl_listener *l, enum core_ctl_verdict verdict)
{
    return l->ver ? core_ctl_verifier_count(l->ver, verdict) : 0;
}

json_t *core_ctl_listener_counts_json(const struct core_ctl_listener *l)
{
    json_t *o = json_object();
    for (int r = 0; r < CORE_CTL_NVERDICTS; r++)
        json_object_set_new(
            o, core_ctl_verdict_name((enum core_ctl_verdict)r),
            json_integer((json_int_t)core_ctl_listener_count(l, (enum core_ctl_verdict)r)));
    return o;
}

const char *core_ctl_listener_instance(const struct core_ctl_listener *l)
{
    return l->instance;
}

void core_ctl_listener_close(struct core_ctl_listener *l)
{
    if (l->closing)
        return;
    l->closing = true;
    if (l->cons) {
        core_kconsumer_close(l->cons);
        return;
    }
    l->closed = true;
    if (l->opts.on_closed)
        l->opts.on_closed(l->opts.arg);
}

void core_ctl_listener_detach(struct core_ctl_listener *l)
{
    if (l->cons)
        core_kconsumer_detach(l->cons);
}

void core_ctl_listener_free(struct core_ctl_listener *l)
{
    if (!l)
        return;
    core_kconsumer_free(l->cons);
    core_ctl_verifier_free(l->ver);
    free(l);
}

core_err core_ctl_status_encode(const char *service, const char *instance, const char *in_reply_to,
                                int64_t at_ms, const json_t *status, char **out)
{
    json_t *j;

    if (!json_is_object(status) || !service || !instance)
        return CORE_EINVAL;
    j = json_pack("{s:s, s:s, s:s, s:o, s:I, s:O}", "schema", CORE_CTL_STATUS_SCHEMA, "service",
                  service, "instance", instance, "in_reply_to",
                  in_reply_to ? json_string(in_reply_to) : json_null(), "at", (json_int_t)at_ms,
                  "status", (json_t *)status);
    if (!j)
        return CORE_EINVAL;
    *out = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return *out ? CORE_OK : CORE_ENOMEM;
}

core_err core_ctl_reply_status(struct core_kproducer *p, const char *topic, const char *service,
                               const char *instance, const char *in_reply_to, const json_t *status,
                               void *opaque, char *eb, size_t ebn)
{
    char *text = NULL;
    core_err rc =
        core_ctl_status_encode(service, instance, in_reply_to, core_ctl_now_ms(), status, &text);

    if (rc != CORE_OK) {
        snprintf(eb, ebn, "status record: %s", core_strerror(rc));
        return rc;
    }
    rc = core_kproducer_send(p, topic, RD_KAFKA_PARTITION_UA, instance, strlen(instance), text,
                             strlen(text), opaque);
    if (rc != CORE_OK)
        snprintf(eb, ebn, "status record to %s: %s", topic, core_strerror(rc));
    free(text);
    return rc;
}
