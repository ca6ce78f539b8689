#define _GNU_SOURCE /* memrchr */
/* kconf.c - core keys and the two librdkafka client profiles (KAFKA.md §8.2). */
#include "core/kconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/cfg_keys.h"
#include "core/fsutil.h"

#define K_TOPIC(name, def, help) CORE_KEY_STR_CHECK(name, def, help, check_topic)

/* Kafka's topic-name rules: 1..249 of [A-Za-z0-9._-], not "." or "..". A pattern
 * subscription (a name starting with '^') is not supported. Empty is never valid. */
static core_err check_topic(const json_t *v, char *eb, size_t ebn)
{
    const char *s = json_string_value(v);
    size_t n = s ? strlen(s) : 0;

    if (n == 0 || n > 249 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0) {
        snprintf(eb, ebn, "not a Kafka topic name (1..249 characters, not \".\" or \"..\")");
        return CORE_ECONFIG;
    }
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_' || s[i] == '-')) {
            snprintf(eb, ebn,
                     "not a Kafka topic name: character %zu is not one of "
                     "[A-Za-z0-9._-] (patterns are not supported)",
                     i + 1);
            return CORE_ECONFIG;
        }
    return CORE_OK;
}

/* broker.bootstrap: "@FILE" (written by `gcdp broker`) or host:port[,host:port...]. */
static core_err check_bootstrap(const json_t *v, char *eb, size_t ebn)
{
    const char *s = json_string_value(v), *p;

    if (!s || !s[0] || (s[0] == '@' && !s[1])) {
        snprintf(eb, ebn,
                 "empty (give host:port[,host:port] or @FILE; unset it for the "
                 "embedded broker where a command starts one)");
        return CORE_ECONFIG;
    }
    if (s[0] == '@')
        return CORE_OK;
    for (p = s; *p;) {
        const char *end = strchr(p, ','), *colon;
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char *num_end = NULL;
        long port;
        colon = memrchr(p, ':', len);
        port = colon ? strtol(colon + 1, &num_end, 10) : 0;
        if (len == 0 || !colon || colon == p || num_end != p + len || port < 1 || port > 65535) {
            snprintf(eb, ebn, "'%.*s' is not host:port (port 1..65535)", (int)len, p);
            return CORE_ECONFIG;
        }
        p += len + (end ? 1 : 0);
        if (end && !*p) {
            snprintf(eb, ebn, "trailing comma");
            return CORE_ECONFIG;
        }
    }
    return CORE_OK;
}

const struct core_cfg_key core_config_keys[] = {
    CORE_KEY("log.level", CORE_CFG_ENUM, "\"info\"", 1, 0, "debug|info|warn|error|off",
             "structured log level on stderr", NULL),
    CORE_KEY("broker.bootstrap", CORE_CFG_STRING, NULL, 1, 0, NULL,
             "Kafka bootstrap servers host:port[,...], or @file written by `gcdp broker`; unset: "
             "embedded broker",
             check_bootstrap),
    CORE_KEY("broker.profile", CORE_CFG_ENUM, "\"embedded\"", 1, 0, "embedded|production",
             "librdkafka client profile (see core/kconf.h)", NULL),
    K_INT("broker.partitions", "4", 1, 256, "partitions per topic created by the embedded broker"),
    K_TOPIC("topics.raw", "\"sensors.raw\"", "raw sensor readings (input)"),
    K_TOPIC("topics.rejected", "\"sensors.rejected\"", "dead letters"),
    K_TOPIC("topics.windows", "\"gcdp.windows\"", "protected window records (internal)"),
    K_TOPIC("topics.calibration", "\"gcdp.calibration\"", "versioned theta objects"),
    K_TOPIC("topics.released", "\"gcdp.released\"", "privatized releases (public)"),
    K_TOPIC("topics.release_rejected", "\"gcdp.windows.rejected\"",
            "windows the release refused (dead letters; protected, like topics.rejected)"),
    K_TOPIC("topics.ledger_changelog", "\"gcdp.ledger.changelog\"",
            "release ledger rows, co-partitioned with topics.windows (several release "
            "instances; protected, never read by consumers or the learner)"),
    K_TOPIC("topics.control", "\"gcdp.control\"", "operator commands"),
    K_TOPIC("topics.status", "\"gcdp.status\"",
            "service status records (gcdp.status/1), e.g. answers to `gcdp ctl status`"),
    K_TOPIC("topics.audit", "\"gcdp.audit\"", "privacy ledger events"),
    K_TOPIC("topics.learner_updates", "\"learner.updates\"", "participant -> server"),
    K_TOPIC("topics.learner_global", "\"learner.global\"", "server -> participants"),
    K_TOPIC("topics.learner_dag", "\"learner.dag\"", "learned DAG"),
    K_STR("state.dir", "\"/var/lib/gcdp\"",
          "state directory: a relative release.ledger.path lives here (never the working "
          "directory); created if missing"),
    K_INT("shutdown.deadline_s", "30", 1, 3600,
          "graceful shutdown deadline after the first SIGINT/SIGTERM; then exit 1 saying "
          "what was pending (a second signal ends the process at once)"),
    K_STR("control.key_file", "\"\"",
          "control key (64 hex, mode 0600, `gcdp ctl keygen`); \"\": the service does not "
          "listen to topics.control and `gcdp ctl` needs --key"),
    K_STR("control.prev_key_file", "\"\"",
          "previous control key, still accepted during a key rotation; \"\": none"),
    K_INT("control.max_skew_s", "60", 1, 3600,
          "control commands issued more than this before/after the local clock are refused "
          "(stale/future); nonces are remembered this long"),
    K_INT("control.replay_cache", "4096", 16, 1000000,
          "nonces remembered for replay protection; full of live nonces: refuse (fail closed)"),
    K_INT("metrics.port", "0", 0, 65535, "HTTP port for /metrics and /healthz; 0: disabled"),
    K_STR("metrics.bind", "\"127.0.0.1\"", "address the metrics endpoint binds to"),
    {0},
};

core_err core_kafka_conf_set(rd_kafka_conf_t *conf, const char *name, const char *value, char *eb,
                             size_t ebn)
{
    char why[512];
    if (rd_kafka_conf_set(conf, name, value, why, sizeof(why)) != RD_KAFKA_CONF_OK) {
        snprintf(eb, ebn, "kafka property '%s'='%s': %s", name, value, why);
        return CORE_ECONFIG;
    }
    return CORE_OK;
}

core_err core_kafka_bootstrap_resolve(const char *spec, char *out, size_t n, char *eb, size_t ebn)
{
    FILE *f;
    char line[1024];
    const char *p;
    size_t len;

    if (spec[0] != '@') {
        snprintf(out, n, "%s", spec);
        return CORE_OK;
    }
    f = fopen(spec + 1, "r");
    if (!f || !fgets(line, sizeof(line), f)) {
        snprintf(eb, ebn, "cannot read bootstrap file '%s'", spec + 1);
        if (f)
            fclose(f);
        return CORE_EIO;
    }
    fclose(f);
    p = strncmp(line, "BOOTSTRAP ", 10) == 0 ? line + 10 : line;
    len = strcspn(p, " \r\n");
    if (len == 0 || len >= n) {
        snprintf(eb, ebn, "bootstrap file '%s' holds no address", spec + 1);
        return CORE_EPARSE;
    }
    memcpy(out, p, len);
    out[len] = '\0';
    return CORE_OK;
}

core_err core_kafka_bootstrap_write(const char *path, const char *addr)
{
    char tmp[4200];
    FILE *f;

    (void)core_mkdir_p(path, 1); /* a failure shows as the open error below */
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    f = fopen(tmp, "w");
    if (!f)
        return CORE_EIO;
    fprintf(f, "BOOTSTRAP %s\n", addr);
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        return CORE_EIO;
    }
    return CORE_OK;
}

struct kv {
    const char *k, *v;
};

static const struct kv common_props[] = {
    {"log.queue", "true"},
    {NULL, NULL},
};
static const struct kv embedded_consumer[] = {
    {"fetch.wait.max.ms", "10"},
    {"session.timeout.ms", "6000"},
    {"heartbeat.interval.ms", "500"},
    {"reconnect.backoff.max.ms", "1000"},
    {"topic.metadata.refresh.interval.ms", "5000"},
    {NULL, NULL},
};
static const struct kv consumer_props[] = {
    /* One list on every member: the mock broker aborts on mixed lists (KAFKA.md §3.4). */
    {"partition.assignment.strategy", "range,roundrobin"},
    {"enable.auto.commit", "false"},
    {"enable.auto.offset.store", "false"},
    {"auto.offset.reset", "earliest"},
    {"enable.partition.eof", "false"},
    {NULL, NULL},
};
static const struct kv producer_props[] = {
    {"enable.idempotence", "true"},
    {"acks", "all"},
    {"linger.ms", "5"},
    {NULL, NULL},
};
static const struct kv embedded_producer[] = {
    {"reconnect.backoff.max.ms", "1000"},
    {NULL, NULL},
};

static core_err apply(rd_kafka_conf_t *conf, const struct kv *kv, char *eb, size_t ebn)
{
    for (; kv->k; kv++) {
        core_err rc = core_kafka_conf_set(conf, kv->k, kv->v, eb, ebn);
        if (rc != CORE_OK)
            return rc;
    }
    return CORE_OK;
}

struct override_ctx {
    rd_kafka_conf_t *conf;
    core_err rc;
    char *eb;
    size_t ebn;
};

static void apply_override(const char *name, const char *value, void *arg)
{
    struct override_ctx *o = arg;
    if (o->rc == CORE_OK)
        o->rc = core_kafka_conf_set(o->conf, name, value, o->eb, o->ebn);
}

core_err core_kafka_conf_new(const struct core_config *cfg, enum core_kafka_role role,
                             const char *group_id, rd_kafka_conf_t **out, char *eb, size_t ebn)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *boot = core_config_str(cfg, "broker.bootstrap");
    int embedded = strcmp(core_config_str(cfg, "broker.profile"), "embedded") == 0;
    struct override_ctx o = {conf, CORE_OK, eb, ebn};
    char addr[1024];
    core_err rc = apply(conf, common_props, eb, ebn);

    if (rc == CORE_OK && boot) {
        rc = core_kafka_bootstrap_resolve(boot, addr, sizeof(addr), eb, ebn);
        if (rc == CORE_OK)
            rc = core_kafka_conf_set(conf, "bootstrap.servers", addr, eb, ebn);
    }
    if (rc == CORE_OK && role == CORE_KAFKA_CONSUMER) {
        rc = apply(conf, consumer_props, eb, ebn);
        if (rc == CORE_OK && embedded)
            rc = apply(conf, embedded_consumer, eb, ebn);
        if (rc == CORE_OK && group_id)
            rc = core_kafka_conf_set(conf, "group.id", group_id, eb, ebn);
    } else if (rc == CORE_OK) {
        rc = apply(conf, producer_props, eb, ebn);
        if (rc == CORE_OK && embedded)
            rc = apply(conf, embedded_producer, eb, ebn);
    }
    if (rc == CORE_OK) {
        core_config_each_kafka(cfg, apply_override, &o);
        rc = o.rc;
    }
    if (rc != CORE_OK) {
        rd_kafka_conf_destroy(conf);
        return rc;
    }
    *out = conf;
    return CORE_OK;
}
