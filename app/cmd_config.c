/* cmd_config.c - `gcdp config keys|show`: what can be configured and what is in effect. */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "app.h"

int cmd_config(int argc, char **argv)
{
    struct core_config *cfg = NULL;
    json_t *dump;

    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: gcdp config keys | show [common options]\n"
               "  keys  list every configuration key with type, default, range and meaning\n"
               "  show  print the effective configuration (defaults < file < env < --set)\n\n%s",
               app_common_help);
        return APP_EXIT_OK;
    }
    if (app_config_load(&argc, argv, &cfg) != CORE_OK)
        return APP_EXIT_USAGE;
    if (argc > 2) { /* e.g. a bare trailing --set: never silently ignored */
        fprintf(stderr, "gcdp config: unexpected argument '%s'\n", argv[2]);
        core_config_free(cfg);
        return APP_EXIT_USAGE;
    }
    if (argc >= 2 && strcmp(argv[1], "keys") == 0) {
        core_config_print_keys(cfg, stdout);
    } else if (argc >= 2 && strcmp(argv[1], "show") == 0) {
        dump = core_config_dump(cfg);
        json_dumpf(dump, stdout, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
        putchar('\n');
        json_decref(dump);
    } else {
        fprintf(stderr, "gcdp config: expected 'keys' or 'show'\n");
        core_config_free(cfg);
        return APP_EXIT_USAGE;
    }
    core_config_free(cfg);
    return APP_EXIT_OK;
}
