/* test_kconf_paths.c - the files and paths core resolves from configuration for every command:
 * the bootstrap file (core_kafka_bootstrap_write / _resolve) and the ledger's path
 * (core_dp_ledger_path). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "core/config.h"
#include "core/dp_ledger_cfg.h"
#include "core/kconf.h"
#include "core/log.h"
#include "test_support.h"

static const struct core_cfg_key ledger_keys[] = {
    CORE_KEY_STR("release.ledger.path", "\"ledger.jsonl\"", "the ledger"),
    CORE_KEY_STR("release.ledger.store", "\"\"", "the ledger store"),
    {0},
};
static const struct core_cfg_key *const tables[] = {core_config_keys, ledger_keys};

static struct core_config *new_cfg(const char *state_dir, const char *ledger_path)
{
    struct core_config *cfg;
    char eb[256];

    core_log_level = CORE_LOG_OFF;
    cfg = core_config_new(tables, 2);
    cr_assert_not_null(cfg);
    cr_assert_eq(core_config_set(cfg, "state.dir", state_dir, "test", eb, sizeof(eb)), CORE_OK,
                 "%s", eb);
    cr_assert_eq(core_config_set(cfg, "release.ledger.path", ledger_path, "test", eb, sizeof(eb)),
                 CORE_OK, "%s", eb);
    return cfg;
}

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

Test(kconf_paths, bootstrap_file_round_trips_through_the_resolver)
{
    char *dir = ts_tmpdir(), path[600], spec[620], addr[64], eb[256] = "";

    snprintf(path, sizeof(path), "%s/a/b/kafka.bootstrap", dir);
    cr_assert_eq(core_kafka_bootstrap_write(path, "127.0.0.1:39092"), CORE_OK);
    snprintf(spec, sizeof(spec), "@%s", path);
    cr_assert_eq(core_kafka_bootstrap_resolve(spec, addr, sizeof(addr), eb, sizeof(eb)), CORE_OK,
                 "%s", eb);
    cr_assert_str_eq(addr, "127.0.0.1:39092");
    /* rewritten in place; the temporary file is gone */
    cr_assert_eq(core_kafka_bootstrap_write(path, "127.0.0.1:1"), CORE_OK);
    cr_assert_eq(core_kafka_bootstrap_resolve(spec, addr, sizeof(addr), eb, sizeof(eb)), CORE_OK);
    cr_assert_str_eq(addr, "127.0.0.1:1");
    snprintf(spec, sizeof(spec), "%s.tmp.%ld", path, (long)getpid());
    cr_assert_neq(access(spec, F_OK), 0, "temporary file left: %s", spec);
    /* a directory where the file should be: CORE_EIO */
    snprintf(path, sizeof(path), "%s/a", dir);
    cr_assert_eq(core_kafka_bootstrap_write(path, "127.0.0.1:1"), CORE_EIO);
    ts_rmtree(dir);
    free(dir);
}

Test(kconf_paths, ledger_path_is_the_flag_or_the_key_under_state_dir)
{
    char *dir = ts_tmpdir(), state[600], want[700], buf[1024], eb[256] = "";
    struct core_config *cfg;

    snprintf(state, sizeof(state), "%s/state", dir);
    cfg = new_cfg(state, "led.jsonl");
    /* a flag is used as given, nothing created */
    cr_assert_eq(core_dp_ledger_path(cfg, "x/flag.jsonl", true, buf, sizeof(buf), eb, sizeof(eb)),
                 CORE_OK);
    cr_assert_str_eq(buf, "x/flag.jsonl");
    cr_assert_not(is_dir(state));
    /* relative key: under state.dir, created only when asked */
    snprintf(want, sizeof(want), "%s/led.jsonl", state);
    cr_assert_eq(core_dp_ledger_path(cfg, NULL, false, buf, sizeof(buf), eb, sizeof(eb)), CORE_OK);
    cr_assert_str_eq(buf, want);
    cr_assert_not(is_dir(state));
    cr_assert_eq(core_dp_ledger_path(cfg, NULL, true, buf, sizeof(buf), eb, sizeof(eb)), CORE_OK);
    cr_assert_str_eq(buf, want);
    cr_assert(is_dir(state));
    /* a path that does not fit */
    cr_assert_eq(core_dp_ledger_path(cfg, NULL, false, buf, 8, eb, sizeof(eb)), CORE_ECONFIG);
    cr_assert(strstr(eb, "release.ledger.path: too long"), "%s", eb);
    core_config_free(cfg);
    /* absolute key: as given */
    cfg = new_cfg(state, "/abs/led.jsonl");
    cr_assert_eq(core_dp_ledger_path(cfg, NULL, true, buf, sizeof(buf), eb, sizeof(eb)), CORE_OK);
    cr_assert_str_eq(buf, "/abs/led.jsonl");
    core_config_free(cfg);
    ts_rmtree(dir);
    free(dir);
}

Test(kconf_paths, ledger_path_refuses_empty_keys)
{
    char buf[256], eb[256] = "";
    struct core_config *cfg = new_cfg("/tmp", "");

    cr_assert_eq(core_dp_ledger_path(cfg, NULL, false, buf, sizeof(buf), eb, sizeof(eb)),
                 CORE_ECONFIG);
    cr_assert(strstr(eb, "release.ledger.path: empty"), "%s", eb);
    core_config_free(cfg);
    cfg = new_cfg("", "led.jsonl");
    cr_assert_eq(core_dp_ledger_path(cfg, NULL, false, buf, sizeof(buf), eb, sizeof(eb)),
                 CORE_ECONFIG);
    cr_assert(strstr(eb, "state.dir: empty"), "%s", eb);
    core_config_free(cfg);
}

/* The store resolves as the ledger does: under state.dir, absolute as given, "" when none, and
 * a relative store with state.dir empty is refused (never under the working directory). */
Test(kconf_paths, ledger_store_path_resolves_as_the_ledger_and_refuses_the_same_case)
{
    char buf[256], eb[256];
    struct core_config *cfg = new_cfg("/var/st", "l.jsonl");
    cr_assert_eq(core_dp_ledger_store_path(cfg, buf, sizeof(buf)), 0);
    cr_assert_str_eq(buf, "", "no store configured");
    cr_assert_eq(core_config_set(cfg, "release.ledger.store", "l.db", "test", eb, sizeof(eb)),
                 CORE_OK, "%s", eb);
    cr_assert_eq(core_dp_ledger_store_path(cfg, buf, sizeof(buf)), 0);
    cr_assert_str_eq(buf, "/var/st/l.db");
    cr_assert_eq(core_dp_ledger_store_path(cfg, buf, 8), -1, "does not fit");
    cr_assert_eq(core_config_set(cfg, "state.dir", "", "test", eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(core_dp_ledger_store_path(cfg, buf, sizeof(buf)), -1,
                 "relative store, state.dir empty: refused");
    cr_assert_eq(core_config_set(cfg, "release.ledger.store", "/abs/l.db", "test", eb, sizeof(eb)),
                 CORE_OK, "%s", eb);
    cr_assert_eq(core_dp_ledger_store_path(cfg, buf, sizeof(buf)), 0);
    cr_assert_str_eq(buf, "/abs/l.db");
    core_config_free(cfg);
}
