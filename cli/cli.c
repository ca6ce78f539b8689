/* cli.c - the command driver (cli.h). */
#include "cli.h"

#include <stdio.h>
#include <string.h>

#include "common.h"
#include "core/log.h"

void app_cli_list(FILE *f, const struct app_command *const *table, int width)
{
    for (; *table; table++)
        fprintf(f, "  %-*s %s\n", width, (*table)->name, (*table)->summary);
}

int app_exit_status(const char *name, core_err rc, const char *eb)
{
    if (rc == CORE_OK)
        return APP_EXIT_OK;
    fprintf(stderr, "gcdp %s: %s\n", name, eb && eb[0] ? eb : core_strerror(rc));
    return rc == CORE_ECONFIG ? APP_EXIT_USAGE : APP_EXIT_FAILURE;
}

static void usage(const struct app_command *const *table, FILE *f)
{
    fprintf(f, "usage: gcdp <command> [options]   (gcdp <command> --help for details)\n\n"
               "gcdp ingests IoT sensor streams from Kafka and releases window analytics under\n"
               "Graph-Calibrated Differential Privacy; a federated structure learner consumes\n"
               "only the privatized output.\n\ncommands:\n");
    app_cli_list(f, table, 11);
    fprintf(f, "\n%s", app_common_help);
}

void app_cli_help(const struct app_command *c, FILE *f)
{
    fputs(c->help, f);
    if (c->sub)
        app_cli_list(f, c->sub, 10);
    if (c->run && !(c->flags & APP_CMD_NO_CONFIG))
        fprintf(f, "\n%s", app_common_help);
}

static const struct app_command *find(const struct app_command *const *table, const char *name)
{
    for (; *table; table++)
        if (strcmp((*table)->name, name) == 0)
            return *table;
    return NULL;
}

/* Steps 4-6 of cli.h for the entry c: help, configuration, run. */
static int invoke(const struct app_command *c, const char *name, int argc, char **argv)
{
    struct app_call call = {name, NULL, argc, argv};
    int ret;

    if (app_help_requested(argc, argv)) { /* also as a flag's value: help, never a run */
        app_cli_help(c, stdout);
        return APP_EXIT_OK;
    }
    if (!(c->flags & APP_CMD_NO_CONFIG) &&
        app_config_load_named(name, &call.argc, call.argv, &call.cfg) != CORE_OK)
        return APP_EXIT_USAGE;
    if (c->component)
        core_log_set_component(c->component);
    ret = c->run(&call);
    core_config_free(call.cfg);
    return ret;
}

/* Steps 1-3 of cli.h; name: the command as typed so far ("bench ingest"). */
static int dispatch(const struct app_command *c, const char *name, int argc, char **argv)
{
    const struct app_command *m;
    char sub_name[64];

    if ((c->flags & APP_CMD_NEEDS_ARG) && argc < 2) {
        app_cli_help(c, stderr);
        return APP_EXIT_USAGE;
    }
    if (c->sub) {
        const struct app_command *s = find(c->sub, argv[1]);
        if (s) {
            snprintf(sub_name, sizeof(sub_name), "%s %s", name, s->name);
            return dispatch(s, sub_name, argc - 1, argv + 1);
        }
        if (argv[1][0] == '-' && app_help_requested(argc, argv)) {
            app_cli_help(c, stdout);
            return APP_EXIT_OK;
        }
        fprintf(stderr, "gcdp %s: unknown %s '%s'\n", name, c->sub_what, argv[1]);
        return APP_EXIT_USAGE;
    }
    if (c->mode && (m = c->mode(argc, argv)) != NULL)
        c = m;
    return invoke(c, name, argc, argv);
}

int app_cli_main(const struct app_command *const *table, int argc, char **argv)
{
    const struct app_command *c;

    if (argc < 2) {
        usage(table, stderr);
        return APP_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(table, stdout);
        return APP_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("gcdp 0.1.0\n");
        return APP_EXIT_OK;
    }
    c = find(table, argv[1]);
    if (c)
        return dispatch(c, c->name, argc - 1, argv + 1);
    fprintf(stderr, "gcdp: unknown command '%s'\n\n", argv[1]);
    usage(table, stderr);
    return APP_EXIT_USAGE;
}
