/* cmd_ctl.c - `gcdp ctl`: generate a control key; publish one signed command to
 * topics.control and (status, or --wait) print the gcdp.status/1 replies that quote it.
 *
 * A short-lived synchronous client (no event loop): the replies' consumer is assigned
 * every partition of topics.status at its high watermark BEFORE the command is produced,
 * so no reply can slip past between the two. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <librdkafka/rdkafka.h>

#include "app.h"
#include "core/ctl.h"
#include "core/ctl_listen.h"
#include "core/kafka.h"
#include "core/kconf.h"
#include "core/ksync.h"
#include "core/log.h"
#include "flags.h"
#include "producer_flags.h"

#define DELIVERY_TIMEOUT_MS "15000"
#define STATUS_WAIT_S       10

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gcdp ctl keygen --out FILE\n"
            "       gcdp ctl recalibrate|pause|resume|status [--target NAME] [--reason TEXT]\n"
            "                [--key FILE] [--wait S] [--count N]\n\n"
            "Operator commands to the gcdp services over topics.control, signed with a shared\n"
            "key (HMAC-SHA-256; authenticated, NOT encrypted: put no secret in --reason).\n"
            "Services refuse unsigned, forged, stale, replayed and malformed commands\n"
            "(docs/operations.md, \"Control topic\").\n\n"
            "  keygen --out FILE  write a new random key (64 hex digits, mode 0600); never\n"
            "                     overwrites; prints the key id. Needs no configuration.\n"
            "  --target NAME      service that should act (calibrate, release, ...); default all\n"
            "  --reason TEXT      why (logged by the services; at most %d bytes, no control\n"
            "                     characters)\n"
            "  --key FILE         key file (default: control.key_file)\n"
            "  --wait S           after the broker acknowledged the command, wait up to S\n"
            "                     seconds for replies on topics.status quoting its nonce and\n"
            "                     print each as one JSON line (default %d for status, 0 for the\n"
            "                     others: no wait)\n"
            "  --count N          stop waiting after N replies (default 0: wait the whole S, so\n"
            "                     every instance can answer)\n"
            "  -h, --help         this text\n\n"
            "Keys used: broker.bootstrap, broker.profile, kafka.*, topics.control,\n"
            "topics.status, control.key_file. The services' side: control.key_file,\n"
            "control.prev_key_file, control.max_skew_s, control.replay_cache.\n"
            "Exit: 0 command acknowledged by the broker (and, when waiting, at least one\n"
            "reply); 1 not acknowledged, or no reply within S; 2 usage, configuration or key\n"
            "file error.\n\n%s",
            CORE_CTL_MAX_REASON, STATUS_WAIT_S, app_common_help);
}

static int keygen(struct app_call *call)
{
    int argc = call->argc;
    char **argv = call->argv;
    static const struct option lo[] = {{"out", required_argument, NULL, 'o'}, {NULL, 0, NULL, 0}};
    const char *out = NULL;
    char id[17], eb[512];
    int c;
    core_err rc;

    optind = 2;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        if (c != 'o') {
            fprintf(stderr, "(gcdp ctl --help lists the options)\n");
            return APP_EXIT_USAGE;
        }
        out = optarg;
    }
    if (!out || optind < argc) {
        fprintf(stderr, "gcdp ctl keygen: --out FILE is required (and nothing else)\n");
        return APP_EXIT_USAGE;
    }
    rc = core_ctl_keygen(out, id, eb, sizeof(eb));
    if (rc != CORE_OK) {
        fprintf(stderr, "gcdp ctl keygen: %s\n", eb);
        return APP_EXIT_FAILURE;
    }
    printf("%s\n", id);
    fprintf(stderr,
            "gcdp ctl keygen: wrote %s (mode 0600, key id %s); copy it to the "
            "services' control.key_file over a trusted channel\n",
            out, id);
    return APP_EXIT_OK;
}

struct ctl_opts {
    enum core_ctl_cmd_kind cmd;
    const char *target, *reason, *key;
    long wait_s, count;
};

/* Returns -1 when parsed, else an exit code. */
static int parse_opts(int argc, char **argv, struct ctl_opts *o)
{
    static const struct option lo[] = {
        {"target", required_argument, NULL, 't'}, {"reason", required_argument, NULL, 'r'},
        {"key", required_argument, NULL, 'k'},    {"wait", required_argument, NULL, 'w'},
        {"count", required_argument, NULL, 'n'},  {NULL, 0, NULL, 0},
    };
    int c;

    if (core_ctl_cmd_parse(argv[1], &o->cmd) != CORE_OK) {
        fprintf(stderr,
                "gcdp ctl: unknown command '%s' (keygen|recalibrate|pause|resume|"
                "status)\n",
                argv[1]);
        return APP_EXIT_USAGE;
    }
    o->wait_s = o->cmd == CORE_CTL_STATUS ? STATUS_WAIT_S : 0;
    optind = 2;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        int bad = 0;
        if (c == 't')
            o->target = optarg;
        else if (c == 'r')
            o->reason = optarg;
        else if (c == 'k')
            o->key = optarg;
        else if (c == 'w')
            bad = app_flag_parse_long(optarg, 0, 3600, &o->wait_s);
        else if (c == 'n')
            bad = app_flag_parse_long(optarg, 0, 1000000, &o->count);
        else
            bad = -2;
        if (bad) {
            if (bad == -1)
                fprintf(stderr, "gcdp ctl: invalid value '%s' for --%s\n", optarg,
                        c == 'w' ? "wait (0..3600 s)" : "count");
            fprintf(stderr, "(gcdp ctl --help lists the options)\n");
            return APP_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gcdp ctl: unexpected argument '%s'\n", argv[optind]);
        return APP_EXIT_USAGE;
    }
    return -1;
}

struct dr_state {
    int done;
    rd_kafka_resp_err_t err;
    int32_t partition;
    int64_t offset;
};

static void on_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    struct dr_state *d = opaque;
    (void)rk;
    d->done = 1;
    d->err = m->err;
    d->partition = m->partition;
    d->offset = m->offset;
}

static rd_kafka_t *client(const struct core_config *cfg, enum core_kafka_role role,
                          struct dr_state *dr)
{
    static const char *const producer_extra[] = {"message.timeout.ms", DELIVERY_TIMEOUT_MS, NULL};
    rd_kafka_t *rk;
    char eb[512], group[400], inst[300];

    /* consumer_poll needs a group id; the reader only assigns (never joins, never commits) */
    core_ctl_instance_id(inst, sizeof(inst));
    snprintf(group, sizeof(group), "gcdp.ctl.cli.%s", inst);
    if (core_kafka_client_new(cfg, role, role == CORE_KAFKA_CONSUMER ? group : NULL,
                              role == CORE_KAFKA_PRODUCER ? producer_extra : NULL,
                              role == CORE_KAFKA_PRODUCER ? on_dr : NULL, dr, &rk, eb,
                              sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp ctl: %s\n", eb);
        return NULL;
    }
    if (role == CORE_KAFKA_CONSUMER)
        rd_kafka_poll_set_consumer(rk); /* client logs (log.queue) are served by the polls */
    return rk;
}

/* Assign every partition of topic at its current high watermark. */
static int assign_at_end(rd_kafka_t *rk, const char *topic)
{
    int32_t ids[1024];
    int n = 0;
    char eb[512] = "";
    rd_kafka_topic_partition_list_t *l = NULL;
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;

    if (core_kafka_partitions(rk, topic, 10000, ids, 1024, &n, eb, sizeof(eb)) != CORE_OK ||
        n == 0) {
        fprintf(stderr, "gcdp ctl: no metadata for %s (topics.status): %s\n", topic,
                eb[0] ? eb : "unknown topic");
        return -1;
    }
    l = rd_kafka_topic_partition_list_new(n);
    for (int i = 0; i < n && !err; i++) {
        int64_t lo = 0, hi = 0;
        err = rd_kafka_query_watermark_offsets(rk, topic, ids[i], &lo, &hi, 10000);
        if (err)
            fprintf(stderr, "gcdp ctl: %s[%d]: %s\n", topic, (int)ids[i], rd_kafka_err2str(err));
        else
            rd_kafka_topic_partition_list_add(l, topic, ids[i])->offset = hi;
    }
    if (!err && (err = rd_kafka_assign(rk, l)) != RD_KAFKA_RESP_ERR_NO_ERROR)
        fprintf(stderr, "gcdp ctl: assign %s: %s\n", topic, rd_kafka_err2str(err));
    rd_kafka_topic_partition_list_destroy(l);
    return err ? -1 : 0;
}

/* A reply: a gcdp.status/1 object whose in_reply_to is nonce. */
static int is_reply(const rd_kafka_message_t *m, const char *nonce)
{
    json_t *j = json_loadb(m->payload, m->len, 0, NULL);
    const char *irt = json_string_value(json_object_get(j, "in_reply_to"));
    const char *schema = json_string_value(json_object_get(j, "schema"));
    int ok =
        irt && schema && strcmp(schema, CORE_CTL_STATUS_SCHEMA) == 0 && strcmp(irt, nonce) == 0;
    json_decref(j);
    return ok;
}

/* Print replies quoting nonce until wait_s elapsed or count replies came. */
static long await_replies(rd_kafka_t *rk, const char *nonce, long wait_s, long count)
{
    int64_t end = core_ctl_now_ms() + wait_s * 1000;
    long n = 0;

    while (core_ctl_now_ms() < end && (count == 0 || n < count)) {
        int64_t left = end - core_ctl_now_ms();
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, left > 200 ? 200 : (int)left + 1);
        if (!m)
            continue;
        if (!m->err && m->payload && is_reply(m, nonce)) {
            printf("%.*s\n", (int)m->len, (const char *)m->payload);
            fflush(stdout);
            n++;
        }
        rd_kafka_message_destroy(m);
    }
    return n;
}

/* Produce the record and wait for its delivery report. */
static int publish(rd_kafka_t *rk, const char *topic, const struct core_ctl_cmd *c,
                   const char *text, struct dr_state *dr)
{
    rd_kafka_resp_err_t err = core_kafka_produce_copy(rk, topic, RD_KAFKA_PARTITION_UA, c->nonce,
                                                      strlen(c->nonce), text, strlen(text), NULL);
    if (!err)
        rd_kafka_flush(rk, 20000);
    if (err || !dr->done || dr->err) {
        fprintf(stderr, "gcdp ctl: %s was NOT acknowledged by the broker (%s): %s\n",
                core_ctl_cmd_name(c->cmd), topic,
                rd_kafka_err2str(err        ? err
                                 : dr->done ? dr->err
                                            : RD_KAFKA_RESP_ERR__TIMED_OUT));
        return APP_EXIT_FAILURE;
    }
    fprintf(stderr, "gcdp ctl: %s for \"%s\" (nonce %s, key %s) acknowledged: %s[%d]@%lld\n",
            core_ctl_cmd_name(c->cmd), c->target, c->nonce, c->key_id, topic, (int)dr->partition,
            (long long)dr->offset);
    return APP_EXIT_OK;
}

static core_err load_key(const struct core_config *cfg, const char *flag, struct core_ctl_key **k)
{
    const char *path = flag ? flag : core_config_str(cfg, "control.key_file");
    char eb[512];

    if (!path || !path[0]) {
        fprintf(stderr, "gcdp ctl: configuration error: control.key_file: empty; give --key "
                        "FILE or set control.key_file (gcdp ctl keygen writes a key)\n");
        return CORE_ECONFIG;
    }
    if (core_ctl_key_load(path, k, eb, sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp ctl: %s%s\n", flag ? "--key: " : "control.key_file: ", eb);
        return CORE_ECONFIG;
    }
    return CORE_OK;
}

/* Sign, (subscribe to replies,) publish, (wait). */
static int send_command(const struct core_config *cfg, const struct ctl_opts *o,
                        struct core_ctl_key *k)
{
    struct dr_state dr = {0, RD_KAFKA_RESP_ERR_NO_ERROR, -1, -1};
    struct core_ctl_cmd c;
    rd_kafka_t *prod = NULL, *cons = NULL;
    char *text = NULL, eb[256];
    int code = APP_EXIT_FAILURE;
    long n;

    if (core_ctl_sign(k, o->cmd, o->target, o->reason, core_ctl_now_ms(), &c, &text, eb,
                      sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp ctl: --%s\n", eb);
        return APP_EXIT_USAGE;
    }
    if (o->wait_s > 0 && (!(cons = client(cfg, CORE_KAFKA_CONSUMER, NULL)) ||
                          assign_at_end(cons, core_config_str(cfg, "topics.status")) != 0))
        goto out;
    if (!(prod = client(cfg, CORE_KAFKA_PRODUCER, &dr)))
        goto out;
    code = publish(prod, core_config_str(cfg, "topics.control"), &c, text, &dr);
    if (code != APP_EXIT_OK || o->wait_s == 0)
        goto out;
    n = await_replies(cons, c.nonce, o->wait_s, o->count);
    if (n == 0) {
        fprintf(stderr,
                "gcdp ctl: no reply to %s (nonce %s) on %s within %ld s: no service "
                "answered (is control.key_file set on the services, is the target "
                "right, are their clocks within control.max_skew_s?)\n",
                core_ctl_cmd_name(c.cmd), c.nonce, core_config_str(cfg, "topics.status"),
                o->wait_s);
        code = APP_EXIT_FAILURE;
    }
out:
    free(text);
    if (prod)
        rd_kafka_destroy(prod);
    if (cons) {
        rd_kafka_consumer_close(cons);
        rd_kafka_destroy(cons);
    }
    return code;
}

static int cmd_main(struct app_call *call)
{
    const struct core_config *cfg = call->cfg;
    struct ctl_opts o = {0};
    struct core_ctl_key *k = NULL;
    int code;

    code = parse_opts(call->argc, call->argv, &o);
    if (code == -1 && !core_config_str(cfg, "broker.bootstrap")) {
        fprintf(stderr, "gcdp ctl: configuration error: broker.bootstrap: unset; commands go "
                        "to the services' broker (e.g. --set broker.bootstrap=@FILE written "
                        "by `gcdp broker`)\n");
        code = APP_EXIT_USAGE;
    }
    if (code == -1)
        code = load_key(cfg, o.key, &k) == CORE_OK ? send_command(cfg, &o, k) : APP_EXIT_USAGE;
    core_ctl_key_free(k);
    return code;
}

/* `gcdp ctl keygen` needs no configuration (its help is ctl's). */
static const struct app_command cmd_keygen = {
    .name = "ctl keygen",
    .help = usage,
    .run = keygen,
    .flags = APP_CMD_NO_CONFIG,
};

static const struct app_command *mode(int argc, char **argv)
{
    return argc >= 2 && strcmp(argv[1], "keygen") == 0 ? &cmd_keygen : NULL;
}

const struct app_command app_cmd_ctl = {
    .name = "ctl",
    .summary = "signed operator commands: recalibrate | pause | resume | status, keygen",
    .help = usage,
    .run = cmd_main,
    .mode = mode,
    .component = "ctl",
    .flags = APP_CMD_NEEDS_ARG,
};
