/* config.c - declared keys, layered sources, validation that names the key. */
#include "core/config.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "core/log.h"
#include "core/mem.h"

#define KAFKA_PREFIX "kafka."
#define MAX_KEY_LEN  256

struct core_config {
    const struct core_cfg_key *const *tables;
    size_t ntables;
    json_t *values;        /* flat {key: value} */
    json_t *kafka;         /* flat {librdkafka property: "string"} */
    json_t *explicit_keys; /* {key: source} for keys set by file, env or flag */
};

static const struct core_cfg_key *find_key(const struct core_config *cfg, const char *name)
{
    for (size_t t = 0; t < cfg->ntables; t++)
        for (const struct core_cfg_key *k = cfg->tables[t]; k->name; k++)
            if (strcmp(k->name, name) == 0)
                return k;
    return NULL;
}

/* True when some declared key starts with prefix + "." (a nested section). */
static bool is_section(const struct core_config *cfg, const char *prefix)
{
    size_t n = strlen(prefix);
    for (size_t t = 0; t < cfg->ntables; t++)
        for (const struct core_cfg_key *k = cfg->tables[t]; k->name; k++)
            if (strncmp(k->name, prefix, n) == 0 && k->name[n] == '.')
                return true;
    return false;
}

static const char *type_name(enum core_cfg_type t)
{
    static const char *const names[] = {"bool", "integer", "number", "string", "enum", "json"};
    return names[t];
}

static core_err check_enum(const struct core_cfg_key *k, const char *s, char *eb, size_t ebn)
{
    size_t n = strlen(s);
    const char *p = k->choices;
    while (p && *p) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, s, n) == 0)
            return CORE_OK;
        p = bar ? bar + 1 : NULL;
    }
    snprintf(eb, ebn, "config key '%s': '%s' is not one of %s", k->name, s, k->choices);
    return CORE_ECONFIG;
}

static core_err check_range(const struct core_cfg_key *k, double v, char *eb, size_t ebn)
{
    if (!isfinite(v)) {
        snprintf(eb, ebn, "config key '%s': value must be finite", k->name);
        return CORE_ECONFIG;
    }
    if (k->min <= k->max && !(v >= k->min && v <= k->max)) {
        snprintf(eb, ebn, "config key '%s': %g is outside [%g, %g]", k->name, v, k->min, k->max);
        return CORE_ECONFIG;
    }
    return CORE_OK;
}

/* Type- and range-check value for k. */
static core_err check_value(const struct core_cfg_key *k, const json_t *v, char *eb, size_t ebn)
{
    core_err rc = CORE_OK;
    switch (k->type) {
    case CORE_CFG_BOOL:
        if (!json_is_boolean(v))
            goto wrong_type;
        break;
    case CORE_CFG_INT:
        if (!json_is_integer(v))
            goto wrong_type;
        rc = check_range(k, (double)json_integer_value(v), eb, ebn);
        break;
    case CORE_CFG_DOUBLE:
        if (!json_is_number(v))
            goto wrong_type;
        rc = check_range(k, json_number_value(v), eb, ebn);
        break;
    case CORE_CFG_STRING:
        if (!json_is_string(v))
            goto wrong_type;
        break;
    case CORE_CFG_ENUM:
        if (!json_is_string(v))
            goto wrong_type;
        rc = check_enum(k, json_string_value(v), eb, ebn);
        break;
    case CORE_CFG_JSON:
        break;
    }
    if (rc == CORE_OK && k->check) {
        char why[400] = "";
        rc = k->check(v, why, sizeof(why));
        if (rc != CORE_OK)
            snprintf(eb, ebn, "config key '%s': %s", k->name, why);
    }
    return rc;
wrong_type:
    snprintf(eb, ebn, "config key '%s': expected %s", k->name, type_name(k->type));
    return CORE_ECONFIG;
}

/* A bound row's field fits its key: INT keys bind I64, or UINT/SIZE when min >= 0 and max
 * fits; DOUBLE keys bind DOUBLE; BOOL keys bind BOOL. */
static bool binding_fits(const struct core_cfg_key *k)
{
    switch ((enum core_cfg_field)k->field) {
    case CORE_FIELD_NONE:
        return true;
    case CORE_FIELD_I64:
        return k->type == CORE_CFG_INT;
    case CORE_FIELD_UINT:
        return k->type == CORE_CFG_INT && k->min >= 0 && k->max <= (double)UINT_MAX;
    case CORE_FIELD_INT:
        return k->type == CORE_CFG_INT && k->min >= (double)INT_MIN && k->max <= (double)INT_MAX &&
               k->min <= k->max;
    case CORE_FIELD_U64:
    case CORE_FIELD_SIZE:
        return k->type == CORE_CFG_INT && k->min >= 0 && k->min <= k->max;
    case CORE_FIELD_DOUBLE:
        return k->type == CORE_CFG_DOUBLE;
    case CORE_FIELD_BOOL:
        return k->type == CORE_CFG_BOOL;
    }
    return false;
}

/* Store v (already checked against k's type and range) in obj's field of k. */
static void field_put(const struct core_cfg_key *k, const json_t *v, void *obj)
{
    char *p = (char *)obj + k->offset;
    int64_t i = json_integer_value(v);
    double d = json_number_value(v);
    bool b = json_is_true(v);
    unsigned u = (unsigned)i;
    size_t z = (size_t)i;
    uint64_t w = (uint64_t)i;
    int n = (int)i;

    switch ((enum core_cfg_field)k->field) {
    case CORE_FIELD_NONE:
        break;
    case CORE_FIELD_I64:
        memcpy(p, &i, sizeof(i));
        break;
    case CORE_FIELD_U64:
        memcpy(p, &w, sizeof(w));
        break;
    case CORE_FIELD_INT:
        memcpy(p, &n, sizeof(n));
        break;
    case CORE_FIELD_UINT:
        memcpy(p, &u, sizeof(u));
        break;
    case CORE_FIELD_SIZE:
        memcpy(p, &z, sizeof(z));
        break;
    case CORE_FIELD_DOUBLE:
        memcpy(p, &d, sizeof(d));
        break;
    case CORE_FIELD_BOOL:
        memcpy(p, &b, sizeof(b));
        break;
    }
}

core_err core_cfg_defaults(const struct core_cfg_key *table, unsigned grp, void *obj, char *eb,
                           size_t ebn)
{
    for (const struct core_cfg_key *k = table; k->name; k++) {
        json_t *v;
        core_err rc;
        if (k->group != grp || k->field == CORE_FIELD_NONE || !k->def)
            continue;
        v = json_loads(k->def, JSON_DECODE_ANY, NULL);
        rc = v && binding_fits(k) ? check_value(k, v, eb, ebn) : CORE_ECONFIG;
        if (rc != CORE_OK) {
            json_decref(v);
            snprintf(eb, ebn, "default of config key '%s' does not fit its field (a bug)", k->name);
            return CORE_EINVAL;
        }
        field_put(k, v, obj);
        json_decref(v);
    }
    return CORE_OK;
}

void core_cfg_read(const struct core_config *cfg, const struct core_cfg_key *table, unsigned grp,
                   void *obj)
{
    for (const struct core_cfg_key *k = table; k->name; k++) {
        const json_t *v;
        if (k->group != grp || k->field == CORE_FIELD_NONE)
            continue;
        v = json_object_get(cfg->values, k->name);
        if (v)
            field_put(k, v, obj);
    }
}

void core_cfg_read_explicit(const struct core_config *cfg, const struct core_cfg_key *table,
                            unsigned grp, void *obj)
{
    for (const struct core_cfg_key *k = table; k->name; k++) {
        const json_t *v;
        if (k->group != grp || k->field == CORE_FIELD_NONE ||
            !json_object_get(cfg->explicit_keys, k->name))
            continue;
        v = json_object_get(cfg->values, k->name);
        if (v)
            field_put(k, v, obj);
    }
}

/* Key k's default into cfg->values (none: nothing). false after the message when k's
 * binding or default is invalid (a programming error in a key table). */
static bool take_default(struct core_config *cfg, const struct core_cfg_key *k)
{
    char eb[256];
    json_error_t jerr;
    json_t *v;

    if (!binding_fits(k)) {
        CORE_ERROR("config key '%s' is bound to a field of another type", k->name);
        return false;
    }
    if (!k->def)
        return true;
    v = json_loads(k->def, JSON_DECODE_ANY, &jerr);
    if (!v || check_value(k, v, eb, sizeof(eb)) != CORE_OK) {
        CORE_ERROR("default of config key '%s' is invalid: %s", k->name, v ? eb : jerr.text);
        json_decref(v);
        return false;
    }
    json_object_set_new(cfg->values, k->name, v);
    return true;
}

struct core_config *core_config_new(const struct core_cfg_key *const *tables, size_t ntables)
{
    struct core_config *cfg = core_xcalloc(1, sizeof(*cfg));

    cfg->tables = tables;
    cfg->ntables = ntables;
    cfg->values = json_object();
    cfg->kafka = json_object();
    cfg->explicit_keys = json_object();
    for (size_t t = 0; t < ntables; t++)
        for (const struct core_cfg_key *k = tables[t]; k->name; k++)
            if (!take_default(cfg, k)) {
                core_config_free(cfg);
                return NULL;
            }
    return cfg;
}

void core_config_free(struct core_config *cfg)
{
    if (!cfg)
        return;
    json_decref(cfg->values);
    json_decref(cfg->kafka);
    json_decref(cfg->explicit_keys);
    free(cfg);
}

static core_err set_kafka(struct core_config *cfg, const char *key, const json_t *value, char *eb,
                          size_t ebn)
{
    char buf[64];
    const char *s;

    if (json_is_string(value)) {
        s = json_string_value(value);
    } else if (json_is_integer(value)) {
        snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(value));
        s = buf;
    } else if (json_is_boolean(value)) {
        s = json_is_true(value) ? "true" : "false";
    } else if (json_is_real(value)) {
        snprintf(buf, sizeof(buf), "%.17g", json_real_value(value));
        s = buf;
    } else {
        snprintf(eb, ebn, "config key '%s': librdkafka properties take scalar values", key);
        return CORE_ECONFIG;
    }
    if (strlen(key) <= strlen(KAFKA_PREFIX)) {
        snprintf(eb, ebn, "config key '%s': empty librdkafka property name", key);
        return CORE_ECONFIG;
    }
    json_object_set_new(cfg->kafka, key + strlen(KAFKA_PREFIX), json_string(s));
    return CORE_OK;
}

core_err core_config_set_json(struct core_config *cfg, const char *key, const json_t *value,
                              const char *source, char *eb, size_t ebn)
{
    const struct core_cfg_key *k;
    core_err rc;

    if (strncmp(key, KAFKA_PREFIX, strlen(KAFKA_PREFIX)) == 0)
        return set_kafka(cfg, key, value, eb, ebn);
    k = find_key(cfg, key);
    if (!k) {
        snprintf(eb, ebn, "unknown config key '%s' (from %s); `gcdp config keys` lists them", key,
                 source);
        return CORE_ECONFIG;
    }
    rc = check_value(k, value, eb, ebn);
    if (rc != CORE_OK) {
        size_t n = strlen(eb);
        snprintf(eb + n, ebn > n ? ebn - n : 0, " (from %s)", source);
        return rc;
    }
    json_object_set_new(cfg->values, key, json_deep_copy(value));
    json_object_set_new(cfg->explicit_keys, key, json_string(source));
    return CORE_OK;
}

core_err core_config_set(struct core_config *cfg, const char *key, const char *text,
                         const char *source, char *eb, size_t ebn)
{
    const struct core_cfg_key *k = find_key(cfg, key);
    json_error_t jerr;
    json_t *v = NULL;
    core_err rc;

    /* Strings may be written bare (--set ingest.feature=mean); everything else is JSON. */
    bool bare = (k && (k->type == CORE_CFG_STRING || k->type == CORE_CFG_ENUM) && text[0] != '"') ||
                (!k && strncmp(key, KAFKA_PREFIX, strlen(KAFKA_PREFIX)) == 0);
    json_t *probe = json_string(text); /* NULL: not UTF-8, and then never echoed */

    v = bare ? json_incref(probe) : json_loads(text, JSON_DECODE_ANY, &jerr);
    if (!v && !probe)
        snprintf(eb, ebn, "config key '%s' (from %s): the value is not valid UTF-8", key, source);
    else if (!v)
        snprintf(eb, ebn, "config key '%s' (from %s): cannot parse '%s': %s", key, source, text,
                 jerr.text);
    json_decref(probe);
    if (!v)
        return CORE_ECONFIG;
    rc = core_config_set_json(cfg, key, v, source, eb, ebn);
    json_decref(v);
    return rc;
}

core_err core_config_set_arg(struct core_config *cfg, const char *arg, char *eb, size_t ebn)
{
    const char *eq = strchr(arg, '=');
    char key[MAX_KEY_LEN];

    if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof(key)) {
        snprintf(eb, ebn, "--set takes key=value, got '%s'", arg);
        return CORE_ECONFIG;
    }
    memcpy(key, arg, (size_t)(eq - arg));
    key[eq - arg] = '\0';
    return core_config_set(cfg, key, eq + 1, "flag --set", eb, ebn);
}

/* Flatten nested objects into dotted keys, stopping at declared JSON-typed keys. */
static core_err merge_object(struct core_config *cfg, const char *prefix, json_t *obj,
                             const char *source, char *eb, size_t ebn)
{
    const char *name;
    json_t *v;

    json_object_foreach(obj, name, v)
    {
        char key[MAX_KEY_LEN];
        const struct core_cfg_key *k;
        core_err rc;
        int n = snprintf(key, sizeof(key), "%s%s%s", prefix, *prefix ? "." : "", name);
        if (n < 0 || (size_t)n >= sizeof(key)) {
            snprintf(eb, ebn, "config key '%s...' is too long", prefix);
            return CORE_ECONFIG;
        }
        k = find_key(cfg, key);
        if (json_is_object(v) && (!k || k->type != CORE_CFG_JSON) &&
            (is_section(cfg, key) || strcmp(key, "kafka") == 0 ||
             strncmp(key, KAFKA_PREFIX, strlen(KAFKA_PREFIX)) == 0))
            rc = merge_object(cfg, key, v, source, eb, ebn);
        else
            rc = core_config_set_json(cfg, key, v, source, eb, ebn);
        if (rc != CORE_OK)
            return rc;
    }
    return CORE_OK;
}

core_err core_config_load_file(struct core_config *cfg, const char *path, char *eb, size_t ebn)
{
    json_error_t jerr;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    char source[512];
    core_err rc;

    if (!root) {
        snprintf(eb, ebn, "config file %s: line %d column %d: %s", path, jerr.line, jerr.column,
                 jerr.text);
        return jerr.line < 0 ? CORE_EIO : CORE_EPARSE;
    }
    if (!json_is_object(root)) {
        snprintf(eb, ebn, "config file %s: the top level must be an object", path);
        json_decref(root);
        return CORE_EPARSE;
    }
    snprintf(source, sizeof(source), "file %s", path);
    rc = merge_object(cfg, "", root, source, eb, ebn);
    json_decref(root);
    return rc;
}

core_err core_config_load_env(struct core_config *cfg, char *const *envp, char *eb, size_t ebn)
{
    for (; envp && *envp; envp++) {
        const char *e = *envp, *eq = strchr(e, '=');
        char key[MAX_KEY_LEN], source[MAX_KEY_LEN + 16];
        size_t j = 0;
        core_err rc;

        if (strncmp(e, "GCDP_", 5) != 0 || !eq)
            continue;
        if (strncmp(e, "GCDP_CONFIG=", 12) == 0 || strncmp(e, "GCDP_LOG_LEVEL=", 15) == 0)
            continue;
        for (const char *p = e + 5; p < eq && j + 1 < sizeof(key); p++) {
            if (p[0] == '_' && p + 1 < eq && p[1] == '_') {
                key[j++] = '.';
                p++;
            } else {
                key[j++] = (char)tolower((unsigned char)*p);
            }
        }
        key[j] = '\0';
        snprintf(source, sizeof(source), "environment %.*s", (int)(eq - e), e);
        rc = core_config_set(cfg, key, eq + 1, source, eb, ebn);
        if (rc != CORE_OK)
            return rc;
    }
    return CORE_OK;
}

/* Reading an undeclared key (a getter, is_set, is_explicit), or a key with the wrong type,
 * is a programmer error that is fatal in EVERY build (not an assert, which NDEBUG removes): a
 * misspelt key must never read as 0, false, NULL or "not set". The log line names the key;
 * then abort() (STYLE P6 tier 2, kept in release builds on purpose). */
static const struct core_cfg_key *declared(const struct core_config *cfg, const char *key,
                                           const char *fn)
{
    const struct core_cfg_key *k = find_key(cfg, key);

    if (!k) {
        core_log_emit(CORE_LOG_FATAL, fn, __LINE__,
                      "config key '%s' is not declared by any key table (a bug)", key);
        abort();
    }
    return k;
}

static const json_t *get_typed(const struct core_config *cfg, const char *key,
                               enum core_cfg_type type)
{
    const struct core_cfg_key *k = declared(cfg, key, __func__);

    if (!(k->type == type || (type == CORE_CFG_STRING && k->type == CORE_CFG_ENUM))) {
        core_log_emit(CORE_LOG_FATAL, __func__, __LINE__,
                      "config key '%s' read with the wrong type (a bug)", key);
        abort();
    }
    return json_object_get(cfg->values, key);
}

bool core_config_bool(const struct core_config *cfg, const char *key)
{
    return json_is_true(get_typed(cfg, key, CORE_CFG_BOOL));
}

int64_t core_config_int(const struct core_config *cfg, const char *key)
{
    return (int64_t)json_integer_value(get_typed(cfg, key, CORE_CFG_INT));
}

double core_config_double(const struct core_config *cfg, const char *key)
{
    return json_number_value(get_typed(cfg, key, CORE_CFG_DOUBLE));
}

const char *core_config_str(const struct core_config *cfg, const char *key)
{
    return json_string_value(get_typed(cfg, key, CORE_CFG_STRING));
}

const json_t *core_config_json(const struct core_config *cfg, const char *key)
{
    return get_typed(cfg, key, CORE_CFG_JSON);
}

bool core_config_is_set(const struct core_config *cfg, const char *key)
{
    (void)declared(cfg, key, __func__);
    return json_object_get(cfg->values, key) != NULL;
}

bool core_config_is_explicit(const struct core_config *cfg, const char *key)
{
    (void)declared(cfg, key, __func__);
    return json_object_get(cfg->explicit_keys, key) != NULL;
}

void core_config_each_kafka(const struct core_config *cfg, core_cfg_kv_fn *fn, void *arg)
{
    const char *name;
    json_t *v;
    json_object_foreach(cfg->kafka, name, v) fn(name, json_string_value(v), arg);
}

json_t *core_config_dump(const struct core_config *cfg)
{
    json_t *out = json_deep_copy(cfg->values);
    const char *name;
    json_t *v;
    char key[MAX_KEY_LEN];
    json_object_foreach(cfg->kafka, name, v)
    {
        snprintf(key, sizeof(key), KAFKA_PREFIX "%s", name);
        json_object_set(out, key, v);
    }
    return out;
}

static bool skipped(const char *name, const char *const *skip)
{
    for (; skip && *skip; skip++)
        if (strcmp(name, *skip) == 0)
            return true;
    return false;
}

void core_config_version(const struct core_config *cfg, const char *prefix, char *out)
{
    core_config_version_except(cfg, prefix, NULL, out);
}

void core_config_version_except(const struct core_config *cfg, const char *prefix,
                                const char *const *skip, char *out)
{
    unsigned char h[crypto_hash_sha256_BYTES];
    json_t *sub = json_object();
    const char *name;
    json_t *v;
    char *text;
    size_t n = strlen(prefix);

    json_object_foreach(cfg->values, name, v)
    {
        if (strncmp(name, prefix, n) == 0 && !skipped(name, skip))
            json_object_set(sub, name, v);
    }
    text = json_dumps(sub, JSON_SORT_KEYS | JSON_COMPACT | JSON_REAL_PRECISION(17));
    crypto_hash_sha256(h, (const unsigned char *)text, strlen(text));
    for (int i = 0; i < 8; i++)
        snprintf(out + (size_t)2 * i, 3, "%02x", h[i]);
    free(text);
    json_decref(sub);
}

void core_config_print_keys(const struct core_config *cfg, void *file)
{
    FILE *f = file;
    for (size_t t = 0; t < cfg->ntables; t++) {
        for (const struct core_cfg_key *k = cfg->tables[t]; k->name; k++) {
            fprintf(f, "  %-36s %-8s default %-14s %s", k->name, type_name(k->type),
                    k->def ? k->def : "(unset)", k->help ? k->help : "");
            if (k->type == CORE_CFG_ENUM)
                fprintf(f, " [%s]", k->choices);
            else if (k->min <= k->max && (k->type == CORE_CFG_INT || k->type == CORE_CFG_DOUBLE))
                fprintf(f, " [%g..%g]", k->min, k->max);
            fputc('\n', f);
        }
    }
    fprintf(f, "  %-36s %-8s passed to librdkafka unchanged\n", "kafka.<property>", "string");
}
