/* core/config.h - one configuration for every gcdp command: JSON file, environment, flags.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Keys are dotted names ("ingest.window.size_s") declared in tables that each stage
 * exports (struct core_cfg_key[], terminated by a {NULL} row); core knows no stage, the
 * app hands the tables in. Precedence, lowest first: defaults < JSON file < environment
 * (GCDP_<KEY> with '.' written as "__", upper case: GCDP_INGEST__WINDOW__SIZE_S) < flags
 * (--set key=value). A key that no table declares, a value of the wrong type, or one out
 * of range is a startup error whose message names the key and the reason.
 * Keys under "kafka." are passed through to librdkafka unchanged (as strings); librdkafka
 * itself validates them when a client is created (core/kconf.h), again naming the key.
 *
 * Thread-safety: build and validate on one thread; afterwards the getters are read-only
 * and safe to share.
 */
#ifndef CORE_CONFIG_H
#define CORE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/err.h"

enum core_cfg_type {
    CORE_CFG_BOOL,
    CORE_CFG_INT,    /* int64, range [min, max] */
    CORE_CFG_DOUBLE, /* finite double, range [min, max] */
    CORE_CFG_STRING,
    CORE_CFG_ENUM, /* string, one of choices "a|b|c" */
    CORE_CFG_JSON  /* any JSON value; the owning stage validates it (validate hook) */
};

/* Optional extra check for a key; write a reason into errbuf and return non-OK to refuse. */
typedef core_err core_cfg_check_fn(const json_t *value, char *errbuf, size_t errbuf_size);

/* The C type of the options-struct field a key is bound to (see "Options declared once"). */
enum core_cfg_field {
    CORE_FIELD_NONE = 0, /* not bound */
    CORE_FIELD_I64,      /* int64_t (INT keys) */
    CORE_FIELD_U64,      /* uint64_t (INT keys with min >= 0) */
    CORE_FIELD_INT,      /* int (INT keys within INT_MIN..INT_MAX) */
    CORE_FIELD_UINT,     /* unsigned (INT keys with min >= 0) */
    CORE_FIELD_SIZE,     /* size_t (INT keys with min >= 0) */
    CORE_FIELD_DOUBLE,   /* double (DOUBLE keys) */
    CORE_FIELD_BOOL      /* bool (BOOL keys) */
};

struct core_cfg_key {
    const char *name;
    enum core_cfg_type type;
    const char *def;     /* default as a JSON literal ("60", "\"mean\"", "[1,2]"); NULL: unset */
    double min, max;     /* INT / DOUBLE inclusive range; ignored when min > max */
    const char *choices; /* ENUM only */
    const char *help;    /* one line for `gcdp config keys` */
    core_cfg_check_fn *check; /* optional */
    /* Binding (optional, CORE_KEY_*_AT rows): the key's value is field `offset` of an
     * options struct of the table's binding group `group` (a stage's own small integer). */
    unsigned char group;
    unsigned char field; /* enum core_cfg_field */
    size_t offset;
};

/* Rows of a key table, defined once for every stage's table (use these, not positional
 * initializers; a table ends with {0}): CORE_KEY_INT("ingest.period_ms", "60000", 1,
 * 86400000, "help"). CORE_KEY is the general row. */
#define CORE_KEY(nm, ty, df, lo, hi, ch, hl, ck)                                                   \
    {                                                                                              \
        .name = (nm), .type = (ty), .def = (df), .min = (lo), .max = (hi), .choices = (ch),        \
        .help = (hl), .check = (ck)                                                                \
    }
#define CORE_KEY_INT(name, def, lo, hi, help)                                                      \
    CORE_KEY(name, CORE_CFG_INT, def, lo, hi, NULL, help, NULL)
#define CORE_KEY_DBL(name, def, lo, hi, help)                                                      \
    CORE_KEY(name, CORE_CFG_DOUBLE, def, lo, hi, NULL, help, NULL)
#define CORE_KEY_BOOL(name, def, help) CORE_KEY(name, CORE_CFG_BOOL, def, 1, 0, NULL, help, NULL)
#define CORE_KEY_STR(name, def, help)  CORE_KEY(name, CORE_CFG_STRING, def, 1, 0, NULL, help, NULL)
#define CORE_KEY_STR_CHECK(name, def, help, check)                                                 \
    CORE_KEY(name, CORE_CFG_STRING, def, 1, 0, NULL, help, check)
#define CORE_KEY_ENUM(name, def, choices, help)                                                    \
    CORE_KEY(name, CORE_CFG_ENUM, def, 1, 0, choices, help, NULL)
#define CORE_KEY_JSON(name, def, help, check)                                                      \
    CORE_KEY(name, CORE_CFG_JSON, def, 1, 0, NULL, help, check)

/* Options declared once: a row that also binds the key to member `mem` of `struct st` in
 * binding group `grp`, so that the table is the one place that states the key, its type,
 * default, range and help, and core_cfg_defaults / core_cfg_read fill the struct from it
 * (no *_default() constant and no reader line of its own). The member's size is checked
 * at compile time against the field type (a negative array size otherwise).
 *   CORE_KEY_INT_AT("release.drift.horizon", "9216", 8, 65536, "help",
 *                   REL_KEYS_DRIFT, SIZE, rel_drift_opts, horizon) */
#define CORE_FIELD_SIZEOF_I64    8
#define CORE_FIELD_SIZEOF_U64    8
#define CORE_FIELD_SIZEOF_INT    sizeof(int)
#define CORE_FIELD_SIZEOF_UINT   sizeof(unsigned)
#define CORE_FIELD_SIZEOF_SIZE   sizeof(size_t)
#define CORE_FIELD_SIZEOF_DOUBLE sizeof(double)
#define CORE_FIELD_SIZEOF_BOOL   sizeof(bool)
#define CORE_FIELD_OFFSET(ft, st, mem)                                                             \
    (offsetof(struct st, mem) +                                                                    \
     0 * sizeof(char[sizeof(((struct st *)0)->mem) == CORE_FIELD_SIZEOF_##ft ? 1 : -1]))
#define CORE_KEY_AT(nm, ty, df, lo, hi, hl, grp, ft, st, mem)                                      \
    {                                                                                              \
        .name = (nm), .type = (ty), .def = (df), .min = (lo), .max = (hi), .help = (hl),           \
        .group = (grp), .field = CORE_FIELD_##ft, .offset = CORE_FIELD_OFFSET(ft, st, mem)         \
    }
#define CORE_KEY_INT_AT(name, def, lo, hi, help, grp, ft, st, mem)                                 \
    CORE_KEY_AT(name, CORE_CFG_INT, def, lo, hi, help, grp, ft, st, mem)
#define CORE_KEY_DBL_AT(name, def, lo, hi, help, grp, st, mem)                                     \
    CORE_KEY_AT(name, CORE_CFG_DOUBLE, def, lo, hi, help, grp, DOUBLE, st, mem)
#define CORE_KEY_BOOL_AT(name, def, help, grp, st, mem)                                            \
    CORE_KEY_AT(name, CORE_CFG_BOOL, def, 1, 0, help, grp, BOOL, st, mem)

struct core_config;

/* Set every field of obj bound in group grp of table (a {NULL}-terminated key table) to
 * its key's default. Rows of other groups, unbound rows and rows without a default are
 * skipped. Returns CORE_OK, or CORE_EINVAL naming the key in errbuf when a default does not
 * parse as its field's type (a programmer error; core_config_new refuses it too). */
CORE_MUST_CHECK core_err core_cfg_defaults(const struct core_cfg_key *table, unsigned grp,
                                           void *obj, char *errbuf, size_t errbuf_size);

/* Set every field of obj bound in group grp of table to cfg's value of its key (values were
 * checked against type and range when set). A key cfg does not hold leaves its field. */
void core_cfg_read(const struct core_config *cfg, const struct core_cfg_key *table, unsigned grp,
                   void *obj);

/* As core_cfg_read, for the keys an operator set explicitly only (file, environment, flag:
 * core_config_is_explicit); every other bound field keeps its value (e.g. a per-method
 * default the caller put there). */
void core_cfg_read_explicit(const struct core_config *cfg, const struct core_cfg_key *table,
                            unsigned grp, void *obj);

/* New configuration holding the defaults of every key in tables[0..ntables).
 *   tables  borrowed; must outlive the configuration.
 * Returns NULL only when a default does not parse (a programmer error, logged). */
struct core_config *core_config_new(const struct core_cfg_key *const *tables, size_t ntables);
void core_config_free(struct core_config *cfg); /* NULL-safe */

/* Merge a JSON file (nested objects or dotted keys). CORE_EIO, CORE_EPARSE, CORE_ECONFIG. */
CORE_MUST_CHECK core_err core_config_load_file(struct core_config *cfg, const char *path,
                                               char *errbuf, size_t errbuf_size);

/* Merge GCDP_* variables from envp (NULL-terminated, e.g. environ). GCDP_CONFIG and
 * GCDP_LOG_LEVEL are handled by the app and skipped here. CORE_ECONFIG on an unknown key. */
CORE_MUST_CHECK core_err core_config_load_env(struct core_config *cfg, char *const *envp,
                                              char *errbuf, size_t errbuf_size);

/* Set one key from text: JSON literal, or a bare word taken as a string.
 *   source  "file", "env", "flag" (for messages). CORE_ECONFIG names key and reason. */
CORE_MUST_CHECK core_err core_config_set(struct core_config *cfg, const char *key, const char *text,
                                         const char *source, char *errbuf, size_t errbuf_size);

/* Set one key from a JSON value (borrowed). */
CORE_MUST_CHECK core_err core_config_set_json(struct core_config *cfg, const char *key,
                                              const json_t *value, const char *source, char *errbuf,
                                              size_t errbuf_size);

/* Parse "key=value" (a --set flag). */
CORE_MUST_CHECK core_err core_config_set_arg(struct core_config *cfg, const char *arg, char *errbuf,
                                             size_t errbuf_size);

/* Getters. The key must be declared with the matching type (ENUM reads as a string). An
 * undeclared key or a wrong type is a programmer error, fatal in every build (release
 * included): a FATAL log line naming the key, then abort(); a misspelt key never reads as 0.
 * The same holds for core_config_is_set and core_config_is_explicit.
 * String/JSON results are borrowed and valid until the key is set again or cfg is freed. */
bool core_config_bool(const struct core_config *cfg, const char *key);
int64_t core_config_int(const struct core_config *cfg, const char *key);
double core_config_double(const struct core_config *cfg, const char *key);
const char *core_config_str(const struct core_config *cfg, const char *key);    /* NULL if unset */
const json_t *core_config_json(const struct core_config *cfg, const char *key); /* NULL if unset */
bool core_config_is_set(const struct core_config *cfg, const char *key);

/* True when key was given by the file, the environment or a flag (not only its default).
 * Lets a command whose own per-mode defaults differ from a key's default apply exactly the
 * keys an operator set. */
bool core_config_is_explicit(const struct core_config *cfg, const char *key);

/* Call fn(name, value, arg) for every "kafka.*" key, with the "kafka." prefix removed. */
typedef void core_cfg_kv_fn(const char *name, const char *value, void *arg);
void core_config_each_kafka(const struct core_config *cfg, core_cfg_kv_fn *fn, void *arg);

/* Effective configuration as a flat JSON object {key: value}; new reference. */
json_t *core_config_dump(const struct core_config *cfg);

/* Stable 16-hex-digit id of the effective configuration of keys starting with prefix
 * (e.g. "ingest."), so records can name the configuration that produced them.
 *   out  at least 17 bytes. */
void core_config_version(const struct core_config *cfg, const char *prefix, char *out);

/* core_config_version leaving out the keys named in skip (NULL-terminated; NULL: none), for
 * keys that do not change what the records say, only how they are written (e.g. an
 * encoding), so the records keep their ids whichever is chosen. */
void core_config_version_except(const struct core_config *cfg, const char *prefix,
                                const char *const *skip, char *out);

/* Print the declared keys with type, default and help (for `gcdp config keys`). */
void core_config_print_keys(const struct core_config *cfg, void *file /* FILE* */);

#endif /* CORE_CONFIG_H */
