/* check.c - `--check` of the service commands (pipe/check.h): the whole configuration and
 * every local input validated, nothing opened for writing, no network. */
#include "pipe/check.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "cal/calibrate.h"
#include "cal/matrix.h"
#include "cal/service.h"
#include "cal/theta.h"
#include "core/ctl.h"
#include "core/dp_ledger.h"
#include "core/dp_ledger_cfg.h"
#include "core/kconf.h"
#include "ing/engine.h"
#include "rel/changelog.h"
#include "rel/drift.h"
#include "rel/plan.h"

/* The stage's own options, parsed exactly as its service parses them at start. */
static core_err stage_config(const struct core_config *cfg, const char *cmd, char *eb, size_t ebn)
{
    if (strcmp(cmd, "ingest") == 0) {
        struct ing_params p;
        return ing_params_from_config(cfg, &p, eb, ebn);
    }
    if (strcmp(cmd, "calibrate") == 0) {
        struct cal_opts o;
        return cal_service_opts_from_config(cfg, &o, eb, ebn);
    }
    if (strcmp(cmd, "release") == 0) {
        struct rel_opts ro;
        struct rel_drift_opts dro;
        bool enabled;
        core_err rc = rel_opts_from_config(cfg, &ro, eb, ebn);
        if (rc == CORE_OK)
            rc = rel_drift_opts_from_config(cfg, &dro, &enabled, eb, ebn);
        if (rc == CORE_OK && core_config_bool(cfg, "release.service.changelog"))
            rc = rel_changelog_topic_check(cfg, eb, ebn);
        return rc;
    }
    return CORE_OK; /* a command without stage keys of its own */
}

/* Both librdkafka client profiles build: broker.bootstrap (an @FILE is read), every
 * kafka.* passthrough property accepted by librdkafka. No client is created. */
static core_err kafka_config(const struct core_config *cfg, char *eb, size_t ebn)
{
    enum core_kafka_role roles[] = {CORE_KAFKA_PRODUCER, CORE_KAFKA_CONSUMER};

    for (size_t i = 0; i < sizeof(roles) / sizeof(*roles); i++) {
        rd_kafka_conf_t *conf = NULL;
        core_err rc = core_kafka_conf_new(cfg, roles[i], "gcdp-check", &conf, eb, ebn);
        if (rc != CORE_OK)
            return rc;
        rd_kafka_conf_destroy(conf);
    }
    return CORE_OK;
}

/* One control key file (key names the configuration key): loaded as the service loads it
 * (64 hex digits, mode 0600), then wiped. */
static core_err control_key(const struct core_config *cfg, const char *key, char *eb, size_t ebn)
{
    const char *path = core_config_str(cfg, key);
    struct core_ctl_key *k = NULL;
    char why[512] = "";

    if (!path || !path[0])
        return CORE_OK;
    if (core_ctl_key_load(path, &k, why, sizeof(why)) != CORE_OK) {
        snprintf(eb, ebn, "%s: %s", key, why);
        return CORE_ECONFIG;
    }
    core_ctl_key_free(k);
    return CORE_OK;
}

static core_err control_keys(const struct core_config *cfg, char *eb, size_t ebn)
{
    const char *kf = core_config_str(cfg, "control.key_file");
    const char *pf = core_config_str(cfg, "control.prev_key_file");
    core_err rc;

    if ((!kf || !kf[0]) && pf && pf[0]) {
        snprintf(eb, ebn,
                 "control.prev_key_file: set while control.key_file is empty (the "
                 "previous key is only accepted beside a current one)");
        return CORE_ECONFIG;
    }
    rc = control_key(cfg, "control.key_file", eb, ebn);
    return rc == CORE_OK ? control_key(cfg, "control.prev_key_file", eb, ebn) : rc;
}

static core_err metrics_config(const struct core_config *cfg, const char *cmd, char *eb, size_t ebn)
{
    const char *bind = core_config_str(cfg, "metrics.bind");
    int64_t port = core_config_int(cfg, "metrics.port");
    struct in_addr a;

    if (port > 0 && inet_pton(AF_INET, bind, &a) != 1) {
        snprintf(eb, ebn,
                 "metrics.bind: '%s' is not an IPv4 address (e.g. 127.0.0.1, or "
                 "0.0.0.0 for every interface)",
                 bind);
        return CORE_ECONFIG;
    }
    if (port > 0 && port < 1024 && geteuid() != 0)
        fprintf(stderr,
                "gcdp %s: warning: metrics.port %lld is a privileged port and this "
                "user is not root\n",
                cmd, (long long)port);
    return CORE_OK;
}

/* A file the service will create or append to: it exists as a regular file we may read
 * and write, or its nearest existing ancestor is a directory we may create entries in. */
static core_err writable_target(const char *key, const char *path, char *eb, size_t ebn)
{
    char dir[4096];
    struct stat st;
    char *slash;

    if (stat(path, &st) == 0) {
        if (S_ISREG(st.st_mode) && access(path, R_OK | W_OK) == 0)
            return CORE_OK;
        snprintf(eb, ebn, "%s: '%s' is %s", key, path,
                 S_ISREG(st.st_mode) ? "not readable and writable by this user"
                                     : "not a regular file");
        return CORE_ECONFIG;
    }
    if ((size_t)snprintf(dir, sizeof(dir), "%s", path) >= sizeof(dir)) {
        snprintf(eb, ebn, "%s: path too long", key);
        return CORE_ECONFIG;
    }
    do { /* walk up to the nearest existing ancestor */
        slash = strrchr(dir, '/');
        if (!slash)
            snprintf(dir, sizeof(dir), ".");
        else if (slash == dir)
            dir[1] = '\0';
        else
            *slash = '\0';
    } while (stat(dir, &st) != 0 && slash && strcmp(dir, "/") != 0);
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && access(dir, W_OK | X_OK) == 0)
        return CORE_OK;
    snprintf(eb, ebn,
             "%s: '%.400s' cannot be created: '%.400s' is not a directory this user may "
             "write to",
             key, path, dir);
    return CORE_ECONFIG;
}

/* An existing ledger's header (read only, no lock) binds a unit scheme and caps; the
 * service refuses to open it with other values, so --check does too. */
static core_err ledger_binding(const struct core_config *cfg, const char *path, char *eb,
                               size_t ebn)
{
    struct core_dp_scheme want, have;
    struct core_dp_cost cap;
    struct rel_opts ro;
    char why[512] = "";

    if (access(path, F_OK) != 0)
        return CORE_OK; /* created with this configuration's values at the first start */
    if (rel_opts_from_config(cfg, &ro, eb, ebn) != CORE_OK)
        return CORE_ECONFIG;
    core_dp_scheme_from_config(cfg, &want);
    if (core_dp_ledger_read_header(path, &have, &cap, why, sizeof(why)) != CORE_OK) {
        snprintf(eb, ebn, "release.ledger.path: %s", why);
        return CORE_ECONFIG;
    }
    if (have.slot_ms != want.slot_ms || have.time_radius != want.time_radius ||
        have.period_ms != want.period_ms || cap.eps != ro.cap.eps || cap.rho != ro.cap.rho ||
        cap.delta != ro.cap.delta) {
        snprintf(eb, ebn,
                 "release.ledger.path: the ledger '%.400s' is bound to slot_ms %lld, "
                 "time_radius %lld, period_ms %lld, cap eps %.17g delta %.17g; this "
                 "configuration has %lld, %lld, %lld, %.17g, %.17g (release.ledger.slot_ms, "
                 "release.policy.time_radius, ingest.period_ms, release.ledger.cap_*): the "
                 "service would refuse it (`gcdp ledger --carry-to`, docs/release.md)",
                 path, (long long)have.slot_ms, (long long)have.time_radius,
                 (long long)have.period_ms, cap.eps, cap.delta, (long long)want.slot_ms,
                 (long long)want.time_radius, (long long)want.period_ms, ro.cap.eps, ro.cap.delta);
        return CORE_ECONFIG;
    }
    return CORE_OK;
}

static core_err ledger_paths(const struct core_config *cfg, const char *ledger, char *eb,
                             size_t ebn)
{
    char store[4096];
    core_err rc = writable_target("release.ledger.path", ledger, eb, ebn);

    if (rc == CORE_OK)
        rc = ledger_binding(cfg, ledger, eb, ebn);
    if (rc != CORE_OK)
        return rc;
    if (core_dp_ledger_store_path(cfg, store, sizeof(store)) != 0) {
        snprintf(eb, ebn,
                 "release.ledger.store: a relative path needs state.dir, and the "
                 "path must fit in 4096 bytes");
        return CORE_ECONFIG;
    }
    return store[0] ? writable_target("release.ledger.store", store, eb, ebn) : CORE_OK;
}

/* The service's local inputs: θ file, calibration source, ledger location. */
static core_err inputs(const struct core_config *cfg, const struct pipe_check_opts *o, char *eb,
                       size_t ebn)
{
    char why[1024] = "";
    core_err rc = CORE_OK;

    if (o->theta) {
        struct cal_theta *t = NULL;
        rc = cal_theta_load_file(o->theta, &t, why, sizeof(why));
        cal_theta_free(t);
        if (rc != CORE_OK)
            snprintf(eb, ebn, "--theta '%s': %s", o->theta, why);
    }
    if (rc == CORE_OK && o->cal_input) {
        struct cal_opts co;
        struct cal_matrix *mx = NULL;
        rc = cal_opts_from_config(cfg, &co, eb, ebn);
        if (rc == CORE_OK)
            rc = cal_matrix_load_ts(o->cal_input, co.format, co.label_column,
                                    co.ts_column[0] ? co.ts_column : NULL, co.max_rows, &mx, why,
                                    sizeof(why));
        cal_matrix_free(mx);
        if (rc != CORE_OK && why[0])
            snprintf(eb, ebn, "--input '%s' (calibrate.input.format %s): %s", o->cal_input,
                     core_config_str(cfg, "calibrate.input.format"), why);
    }
    if (rc == CORE_OK && o->ledger_path)
        rc = ledger_paths(cfg, o->ledger_path, eb, ebn);
    return rc;
}

core_err pipe_service_check(const struct core_config *cfg, const struct pipe_check_opts *o,
                            char *eb, size_t ebn)
{
    core_err rc = stage_config(cfg, o->cmd, eb, ebn);

    if (rc == CORE_OK)
        rc = kafka_config(cfg, eb, ebn);
    if (rc == CORE_OK)
        rc = metrics_config(cfg, o->cmd, eb, ebn);
    if (rc == CORE_OK && o->control)
        rc = control_keys(cfg, eb, ebn);
    if (rc == CORE_OK)
        rc = inputs(cfg, o, eb, ebn);
    return rc;
}
