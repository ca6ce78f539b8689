/* common.c - what every command shares (common.h): the common options --config, --set and
 * --log-level and the configuration they load; the service commands' shared set-up. */
#include "common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cal/config.h"
#include "cli.h"
#include "core/dp_ledger.h"
#include "core/dp_ledger_cfg.h"
#include "core/fsutil.h"
#include "core/kconf.h"
#include "core/log.h"
#include "core/metrics.h"
#include "ing/config.h"
#include "lrn/config.h"
#include "rel/config.h"
#include "sim/config.h"

extern char **environ;

const char app_common_help[] =
    "common options:\n"
    "  --config FILE      JSON configuration file (also $GCDP_CONFIG)\n"
    "  --set KEY=VALUE    set one configuration key (repeatable; wins over file and env)\n"
    "  --log-level LEVEL  debug|info|warn|error|off (also $GCDP_LOG_LEVEL, log.level)\n"
    "  environment        GCDP_<KEY> with '.' written as '__', e.g. GCDP_INGEST__WINDOW__SIZE_MS\n"
    "  `gcdp config keys` lists every key with its type, default and range.\n";

static const struct core_cfg_key *const all_tables[] = {
    core_config_keys, ing_config_keys, sim_config_keys,
    cal_config_keys,  rel_config_keys, lrn_config_keys,
};
// NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers
static const size_t n_all_tables = sizeof(all_tables) / sizeof(*all_tables);

/* Remove argv[i..i+n) and shift the rest down. */
static void drop_args(int *argc, char **argv, int i, int n)
{
    memmove(argv + i, argv + i + n, (size_t)(*argc - i - n + 1) * sizeof(*argv));
    *argc -= n;
}

/* Value of "--opt V" or "--opt=V" at argv[i]; *used = how many argv slots it took. */
static const char *opt_value(int argc, char **argv, int i, const char *opt, int *used)
{
    size_t n = strlen(opt);
    if (strncmp(argv[i], opt, n) != 0)
        return NULL;
    if (argv[i][n] == '=') {
        *used = 1;
        return argv[i] + n + 1;
    }
    if (argv[i][n] == '\0' && i + 1 < argc) {
        *used = 2;
        return argv[i + 1];
    }
    return NULL;
}

/* Take --config FILE and --log-level LEVEL off argv (the last of each wins; --set stays for
 * apply_sets). */
static void take_file_and_level(int *argc, char **argv, const char **file, const char **level)
{
    int used = 0;

    for (int i = 1; i < *argc;) {
        const char *v;
        if (strcmp(argv[i], "--") == 0)
            break;
        if ((v = opt_value(*argc, argv, i, "--config", &used))) {
            *file = v;
        } else if ((v = opt_value(*argc, argv, i, "--log-level", &used))) {
            *level = v;
        } else if ((v = opt_value(*argc, argv, i, "--set", &used))) {
            /* applied after file and env, by apply_sets; keep order */
            i += used;
            continue;
        } else {
            i++;
            continue;
        }
        drop_args(argc, argv, i, used);
    }
}

/* Take every --set KEY=VALUE off argv, applying them in order unless help. */
static core_err apply_sets(struct core_config *cfg, int *argc, char **argv, bool help, char *eb,
                           size_t ebn)
{
    core_err rc = CORE_OK;
    int used = 0;

    for (int i = 1; rc == CORE_OK && i < *argc;) {
        const char *v = opt_value(*argc, argv, i, "--set", &used);
        if (strcmp(argv[i], "--") == 0)
            break;
        if (!v) {
            i++;
            continue;
        }
        if (!help)
            rc = core_config_set_arg(cfg, v, eb, ebn);
        drop_args(argc, argv, i, used);
    }
    return rc;
}

/* The log level: level (flag or environment), else log.level. */
static core_err apply_log_level(const struct core_config *cfg, const char *level, char *eb,
                                size_t ebn)
{
    int lvl;

    if (!level)
        level = core_config_str(cfg, "log.level");
    if (core_log_level_parse(level, &lvl) != CORE_OK) {
        snprintf(eb, ebn, "log level '%s' is not one of debug|info|warn|error|off", level);
        return CORE_ECONFIG;
    }
    core_log_level = lvl;
    return CORE_OK;
}

/* With --help anywhere, the common options are taken off argv but not applied: a broken
 * configuration must not hide the help that explains it. Every command treats --help
 * anywhere (even as a flag's value) as a request for help and runs nothing, so nothing ever
 * runs on this defaults-only configuration (tests/integration/test_commands.c). */
core_err app_config_load(int *argc, char **argv, struct core_config **out)
{
    return app_config_load_named(argv[0], argc, argv, out);
}

core_err app_config_load_named(const char *cmd, int *argc, char **argv, struct core_config **out)
{
    struct core_config *cfg = core_config_new(all_tables, n_all_tables);
    const char *file = getenv("GCDP_CONFIG"), *level = getenv("GCDP_LOG_LEVEL");
    const bool help = app_help_requested(*argc, argv);
    char eb[1024] = "";
    core_err rc = cfg ? CORE_OK : CORE_ECONFIG;

    if (rc == CORE_OK)
        take_file_and_level(argc, argv, &file, &level);
    if (rc == CORE_OK && file && file[0] && !help)
        rc = core_config_load_file(cfg, file, eb, sizeof(eb));
    if (rc == CORE_OK && !help)
        rc = core_config_load_env(cfg, environ, eb, sizeof(eb));
    if (rc == CORE_OK)
        rc = apply_sets(cfg, argc, argv, help, eb, sizeof(eb));
    if (rc == CORE_OK && !help)
        rc = apply_log_level(cfg, level, eb, sizeof(eb));
    if (rc != CORE_OK) {
        fprintf(stderr, "gcdp %s: configuration error: %s\n", cmd, eb[0] ? eb : core_strerror(rc));
        core_config_free(cfg);
        return rc;
    }
    *out = cfg;
    return CORE_OK;
}

bool app_help_requested(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return true;
    return false;
}

int app_ledger_path(const struct core_config *cfg, const char *flag, char *buf, size_t n)
{
    return app_ledger_path_resolve(cfg, flag, buf, n, true);
}

int app_ledger_path_resolve(const struct core_config *cfg, const char *flag, char *buf, size_t n,
                            bool create)
{
    char eb[4200];

    if (core_dp_ledger_path(cfg, flag, create, buf, n, eb, sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp: %s\n", eb);
        return -1;
    }
    return 0;
}

int app_paths_distinct(const char *cmd, const char *const *paths, const char *const *roles,
                       size_t n_out, size_t n)
{
    for (size_t i = 0; i < n_out; i++)
        for (size_t j = 0; j < n; j++)
            if (j != i && paths[i] && paths[j] && core_path_same(paths[i], paths[j])) {
                fprintf(stderr,
                        "gcdp %s: %s '%s' is the same file as %s '%s'; refused "
                        "before anything was opened for writing\n",
                        cmd, roles[i], paths[i], roles[j], paths[j]);
                return -1;
            }
    return 0;
}

int app_require_bootstrap(struct core_config *cfg, const char *cmd)
{
    char eb[256] = "";

    if (!core_config_is_set(cfg, "broker.bootstrap") && access(APP_BOOTSTRAP_FILE, R_OK) == 0 &&
        core_config_set(cfg, "broker.bootstrap", "\"@" APP_BOOTSTRAP_FILE "\"", "flag", eb,
                        sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp %s: %s\n", cmd, eb);
        return -1;
    }
    if (core_config_is_set(cfg, "broker.bootstrap"))
        return 0;
    fprintf(stderr,
            "gcdp %s: broker.bootstrap is not set (start `gcdp broker` and pass --set "
            "broker.bootstrap=@%s)\n",
            cmd, APP_BOOTSTRAP_FILE);
    return -1;
}

int app_metrics_start(const struct core_config *cfg, const char *cmd, struct core_metrics **out)
{
    int port = (int)core_config_int(cfg, "metrics.port");

    *out = core_metrics_new();
    if (port > 0 &&
        core_metrics_serve(*out, core_config_str(cfg, "metrics.bind"), port, NULL) != CORE_OK) {
        fprintf(stderr, "gcdp %s: cannot serve metrics on %s:%d\n", cmd,
                core_config_str(cfg, "metrics.bind"), port);
        return -1;
    }
    return 0;
}
