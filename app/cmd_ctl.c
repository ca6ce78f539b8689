/* cmd_ctl.c - `gcdp ctl`: generate a control key; publish one signed command to
 * topics.control and (status, or --wait) print the gcdp.status/1 replies that quote it
 * (the client is core's: core/ctl_client.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "core/ctl.h"
#include "core/ctl_client.h"
#include "core/ctl_listen.h"
#include "core/kconf.h"
#include "core/log.h"
#include "flags.h"
#include "producer_flags.h"

#define STATUS_WAIT_S 10

struct ctl_opts {
    enum core_ctl_cmd_kind cmd;
    const char *target, *reason, *key;
    long wait_s, count;
};

#define AT(f) APP_FLAG_AT(struct ctl_opts, f)

static const struct app_flag ctl_flags[] = {
    {"target", APP_FLAG_STR, AT(target), .metavar = "NAME",
     .help = "service that should act (calibrate, release, ...); default all"},
    {"reason", APP_FLAG_STR, AT(reason), .metavar = "TEXT",
     .help = "why (logged by the services; at most " APP_STRINGIFY(
         CORE_CTL_MAX_REASON) " bytes, no control\ncharacters)"},
    {"key", APP_FLAG_STR, AT(key), .metavar = "FILE",
     .help = "key file (default: control.key_file)"},
    {"wait", APP_FLAG_INT, AT(wait_s), .lo = 0, .hi = 3600, .metavar = "S",
     .help = "after the broker acknowledged the command, wait up to S\n"
             "seconds for replies on topics.status quoting its nonce and\n"
             "print each as one JSON line (default " APP_STRINGIFY(
                 STATUS_WAIT_S) " for status, 0 for the\nothers: no wait)"},
    {"count", APP_FLAG_INT, AT(count), .lo = 0, .hi = 1000000, .metavar = "N",
     .help = "stop waiting after N replies (default 0: wait the whole S, so\n"
             "every instance can answer)"},
    {.name = NULL},
};

#undef AT

static void usage(FILE *f)
{
    fprintf(f, "usage: gcdp ctl keygen --out FILE\n"
               "       gcdp ctl recalibrate|pause|resume|status [--target NAME] [--reason TEXT]\n"
               "                [--key FILE] [--wait S] [--count N]\n\n"
               "Operator commands to the gcdp services over topics.control, signed with a shared\n"
               "key (HMAC-SHA-256; authenticated, NOT encrypted: put no secret in --reason).\n"
               "Services refuse unsigned, forged, stale, replayed and malformed commands\n"
               "(docs/operations.md, \"Control topic\").\n\n"
               "  keygen --out FILE  write a new random key (64 hex digits, mode 0600); never\n"
               "                     overwrites; prints the key id. Needs no configuration.\n");
    app_flags_help(f, ctl_flags, 19, 0);
    fprintf(f,
            "  -h, --help         this text\n\n"
            "Keys used: broker.bootstrap, broker.profile, kafka.*, topics.control,\n"
            "topics.status, control.key_file. The services' side: control.key_file,\n"
            "control.prev_key_file, control.max_skew_s, control.replay_cache.\n"
            "Exit: 0 command acknowledged by the broker (and, when waiting, at least one\n"
            "reply); 1 not acknowledged, or no reply within S; 2 usage, configuration or key\n"
            "file error.\n\n%s",
            app_common_help);
}

struct keygen_args {
    const char *out;
};

static const struct app_flag keygen_flags[] = {
    {"out", APP_FLAG_STR, APP_FLAG_AT(struct keygen_args, out)},
    {.name = NULL},
};

static int keygen(struct app_call *call)
{
    struct keygen_args a = {NULL};
    const char *out;
    char id[17], eb[512];
    int first;
    core_err rc;

    /* argv[1] is "keygen" */
    first = app_flags_parse("ctl keygen", keygen_flags, call->argc - 1, call->argv + 1, &a, NULL);
    if (first < 0)
        return APP_EXIT_USAGE;
    if (!a.out || first < call->argc - 1) {
        fprintf(stderr, "gcdp ctl keygen: --out FILE is required (and nothing else)\n");
        return APP_EXIT_USAGE;
    }
    out = a.out;
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

/* Returns -1 when parsed, else an exit code. */
static int parse_opts(int argc, char **argv, struct ctl_opts *o)
{
    int first;

    if (core_ctl_cmd_parse(argv[1], &o->cmd) != CORE_OK) {
        fprintf(stderr,
                "gcdp ctl: unknown command '%s' (keygen|recalibrate|pause|resume|"
                "status)\n",
                argv[1]);
        return APP_EXIT_USAGE;
    }
    o->wait_s = o->cmd == CORE_CTL_STATUS ? STATUS_WAIT_S : 0;
    /* argv[1] is the command */
    first = app_flags_parse("ctl", ctl_flags, argc - 1, argv + 1, o, NULL);
    if (first < 0)
        return APP_EXIT_USAGE;
    if (first < argc - 1) {
        fprintf(stderr, "gcdp ctl: unexpected argument '%s'\n", argv[first + 1]);
        return APP_EXIT_USAGE;
    }
    return -1;
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

static void print_reply(void *arg, const char *json, size_t len)
{
    (void)arg;
    printf("%.*s\n", (int)len, json);
    fflush(stdout);
}

/* Sign, (subscribe to replies,) publish, (wait). */
static int send_command(const struct core_config *cfg, const struct ctl_opts *o,
                        struct core_ctl_key *k)
{
    struct core_ctl_client *cl = NULL;
    struct core_ctl_cmd c;
    char *text = NULL, eb[512];
    int32_t partition;
    int64_t offset;
    int code = APP_EXIT_FAILURE;

    if (core_ctl_sign(k, o->cmd, o->target, o->reason, core_ctl_now_ms(), &c, &text, eb,
                      sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp ctl: --%s\n", eb);
        return APP_EXIT_USAGE;
    }
    if (core_ctl_client_new(cfg, o->wait_s > 0, &cl, eb, sizeof(eb)) != CORE_OK ||
        core_ctl_client_publish(cl, &c, text, &partition, &offset, eb, sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp ctl: %s\n", eb);
        goto out;
    }
    fprintf(stderr, "gcdp ctl: %s for \"%s\" (nonce %s, key %s) acknowledged: %s[%d]@%lld\n",
            core_ctl_cmd_name(c.cmd), c.target, c.nonce, c.key_id,
            core_config_str(cfg, "topics.control"), (int)partition, (long long)offset);
    code = APP_EXIT_OK;
    if (o->wait_s > 0 &&
        core_ctl_client_replies(cl, c.nonce, o->wait_s, o->count, print_reply, NULL) == 0) {
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
    core_ctl_client_free(cl);
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
