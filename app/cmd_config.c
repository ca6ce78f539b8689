/* cmd_config.c - `gcdp config keys|show`: what can be configured and what is in effect. */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "app.h"
#include "help_texts.h"

/* librdkafka properties that hold credentials: shown as "<redacted>" by `config show` (the
 * effective configuration is printed to terminals, logs and bug reports). */
static void redact_secrets(json_t *dump)
{
    static const char *const secret[] = {"password", "secret", "sasl.jaas.config", "ssl.key.pem"};
    const char *name;
    json_t *v;
    void *tmp;

    json_object_foreach_safe(dump, tmp, name, v)
    {
        if (strncmp(name, "kafka.", 6) != 0)
            continue;
        for (size_t i = 0; i < sizeof(secret) / sizeof(secret[0]); i++)
            if (strstr(name, secret[i])) {
                json_object_set_new(dump, name, json_string("<redacted>"));
                break;
            }
    }
}

static int cmd_main(struct app_call *call)
{
    const struct core_config *cfg = call->cfg;
    int argc = call->argc;
    char **argv = call->argv;
    json_t *dump;

    if (argc > 2) { /* e.g. a bare trailing --set: never silently ignored */
        fprintf(stderr, "gcdp config: unexpected argument '%s'\n", argv[2]);
        return APP_EXIT_USAGE;
    }
    if (argc >= 2 && strcmp(argv[1], "keys") == 0) {
        core_config_print_keys(cfg, stdout);
    } else if (argc >= 2 && strcmp(argv[1], "show") == 0) {
        dump = core_config_dump(cfg);
        redact_secrets(dump);
        json_dumpf(dump, stdout, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
        putchar('\n');
        json_decref(dump);
    } else {
        fprintf(stderr, "gcdp config: expected 'keys' or 'show'\n");
        return APP_EXIT_USAGE;
    }
    return APP_EXIT_OK;
}

const struct app_command app_cmd_config = {
    .name = "config",
    .summary = "configuration: `config keys` lists every key, `config show`",
    .help = app_help_config,
    .run = cmd_main,
};
