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
#include "help_texts.h"
#include "producer_flags.h"

#define STATUS_WAIT_S 10

struct ctl_opts {
    enum core_ctl_cmd_kind cmd;
    const char *target, *reason, *key;
    long wait_s, count;
};

#define AT(f) APP_FLAG_AT(struct ctl_opts, f)

static const struct app_flag ctl_flags[] = {
    {"target", APP_FLAG_STR, AT(target)},
    {"reason", APP_FLAG_STR, AT(reason)},
    {"key", APP_FLAG_STR, AT(key)},
    {"wait", APP_FLAG_INT, AT(wait_s), .lo = 0, .hi = 3600},
    {"count", APP_FLAG_INT, AT(count), .lo = 0, .hi = 1000000},
    {.name = NULL},
};

#undef AT

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
    .help = app_help_ctl,
    .options = keygen_flags,
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
    .help = app_help_ctl,
    .options = ctl_flags,
    .run = cmd_main,
    .mode = mode,
    .component = "ctl",
    .flags = APP_CMD_NEEDS_ARG,
};
