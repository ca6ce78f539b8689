/* ctl.c - gcdp.control/1 records: key files, HMAC-SHA-256 signing, verification with a
 * bounded replay cache (core/ctl.h). */
#include "core/ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>

#include "core/mem.h"

#define NONCE_HEX  ((size_t)2 * CORE_CTL_NONCE_BYTES)
#define KEY_ID_HEX ((size_t)2 * CORE_CTL_KEY_ID_BYTES)
#define SIG_HEX    ((size_t)2 * crypto_auth_hmacsha256_BYTES)
#define KEY_HEX    ((size_t)2 * CORE_CTL_KEY_BYTES)
#define NFIELDS    8
#define CANON_MAX  2048 /* > every field's cap together */

struct core_ctl_key {
    uint8_t k[CORE_CTL_KEY_BYTES];
    char id[KEY_ID_HEX + 1];
};

struct nonce_slot {
    uint8_t nonce[CORE_CTL_NONCE_BYTES];
    int64_t expires_ms; /* issued_at + skew: after this the command is stale anyway */
};

struct core_ctl_verifier {
    struct core_ctl_key *keys[2];
    int64_t skew_ms;
    char target[CORE_CTL_MAX_TARGET + 1];
    struct nonce_slot *cache;
    size_t ncache, cap;
    uint64_t counts[CORE_CTL_NVERDICTS];
};

static const char *const verdict_names[] = {
#define X(name, text) text,
    CORE_CTL_VERDICT_MAP(X)
#undef X
};

static const char *const cmd_names[] = {"recalibrate", "pause", "resume", "status"};

const char *core_ctl_verdict_name(enum core_ctl_verdict v)
{
    return (unsigned)v < CORE_CTL_NVERDICTS ? verdict_names[v] : "?";
}

const char *core_ctl_cmd_name(enum core_ctl_cmd_kind k)
{
    return (unsigned)k < sizeof(cmd_names) / sizeof(*cmd_names) ? cmd_names[k] : "?";
}

core_err core_ctl_cmd_parse(const char *name, enum core_ctl_cmd_kind *out)
{
    for (size_t i = 0; i < sizeof(cmd_names) / sizeof(*cmd_names); i++)
        if (name && strcmp(name, cmd_names[i]) == 0) {
            *out = (enum core_ctl_cmd_kind)i;
            return CORE_OK;
        }
    return CORE_EINVAL;
}

core_err core_ctl_text_check(const char *text, size_t max, int nonempty, char *eb, size_t ebn)
{
    size_t n = text ? strlen(text) : 0;

    if (nonempty && n == 0) {
        snprintf(eb, ebn, "empty");
        return CORE_EINVAL;
    }
    if (n > max) {
        snprintf(eb, ebn, "%zu bytes, more than %zu", n, max);
        return CORE_EINVAL;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)text[i];
        if (ch < 0x20 || ch == 0x7f) {
            snprintf(eb, ebn, "control character at byte %zu", i + 1);
            return CORE_EINVAL;
        }
    }
    return CORE_OK;
}

/* ------------------------------------------------------------------ keys */

static bool is_lower_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return s[n] == '\0';
}

core_err core_ctl_key_from_bytes(const uint8_t bytes[CORE_CTL_KEY_BYTES], struct core_ctl_key **out)
{
    struct core_ctl_key *k;
    uint8_t h[crypto_hash_sha256_BYTES];

    if (sodium_init() < 0)
        return CORE_ERNG;
    k = core_xcalloc(1, sizeof(*k));
    memcpy(k->k, bytes, CORE_CTL_KEY_BYTES);
    crypto_hash_sha256(h, k->k, sizeof(k->k));
    sodium_bin2hex(k->id, sizeof(k->id), h, CORE_CTL_KEY_ID_BYTES);
    sodium_memzero(h, sizeof(h));
    *out = k;
    return CORE_OK;
}

void core_ctl_key_free(struct core_ctl_key *k)
{
    if (!k)
        return;
    sodium_memzero(k, sizeof(*k));
    free(k);
}

const char *core_ctl_key_id(const struct core_ctl_key *k)
{
    return k->id;
}

/* Read at most cap bytes of fd into buf; *n = bytes read. */
static core_err read_small(int fd, char *buf, size_t cap, size_t *n)
{
    ssize_t r;

    *n = 0;
    while (*n < cap && (r = read(fd, buf + *n, cap - *n)) != 0) {
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return CORE_EIO;
        *n += (size_t)r;
    }
    return CORE_OK;
}

/* Check the opened key file and decode it into raw (32 bytes). */
static core_err key_decode(int fd, const char *path, uint8_t *raw, char *eb, size_t ebn)
{
    char hex[KEY_HEX + 8];
    struct stat st;
    size_t n = 0, bin_len = 0;
    core_err rc = CORE_ECONFIG;

    if (fstat(fd, &st) != 0) {
        snprintf(eb, ebn, "key file '%s': cannot stat: %s", path, strerror(errno));
        return CORE_EIO;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(eb, ebn, "key file '%s': not a regular file", path);
        return CORE_ECONFIG;
    }
    if (st.st_mode & 077) {
        snprintf(eb, ebn,
                 "key file '%s': mode %04o lets group/other access it; refused "
                 "(chmod 600 '%s')",
                 path, (unsigned)(st.st_mode & 07777), path);
        return CORE_ECONFIG;
    }
    if (read_small(fd, hex, sizeof(hex), &n) != CORE_OK) {
        snprintf(eb, ebn, "key file '%s': cannot read: %s", path, strerror(errno));
        sodium_memzero(hex, sizeof(hex));
        return CORE_EIO;
    }
    if ((n == KEY_HEX + 1 && hex[KEY_HEX] == '\n' ? KEY_HEX : n) != KEY_HEX)
        snprintf(eb, ebn,
                 "key file '%s': %zu bytes; want %zu hex digits and an optional "
                 "newline (gcdp ctl keygen writes one)",
                 path, n, KEY_HEX);
    else if (sodium_hex2bin(raw, CORE_CTL_KEY_BYTES, hex, KEY_HEX, NULL, &bin_len, NULL) != 0 ||
             bin_len != CORE_CTL_KEY_BYTES)
        snprintf(eb, ebn, "key file '%s': not %zu hex digits", path, KEY_HEX);
    else
        rc = CORE_OK;
    sodium_memzero(hex, sizeof(hex));
    return rc;
}

core_err core_ctl_key_load(const char *path, struct core_ctl_key **out, char *eb, size_t ebn)
{
    uint8_t raw[CORE_CTL_KEY_BYTES];
    int fd;
    core_err rc;

    if (sodium_init() < 0) {
        snprintf(eb, ebn, "libsodium could not initialize");
        return CORE_ERNG;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        snprintf(eb, ebn, "key file '%s': cannot open: %s", path, strerror(errno));
        return CORE_EIO;
    }
    rc = key_decode(fd, path, raw, eb, ebn);
    close(fd);
    if (rc == CORE_OK)
        rc = core_ctl_key_from_bytes(raw, out);
    sodium_memzero(raw, sizeof(raw));
    return rc;
}

static core_err write_all(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return CORE_EIO;
        buf += w;
        n -= (size_t)w;
    }
    return CORE_OK;
}

core_err core_ctl_keygen(const char *path, char key_id_out[17], char *eb, size_t ebn)
{
    uint8_t raw[CORE_CTL_KEY_BYTES];
    char hex[KEY_HEX + 2];
    struct core_ctl_key *k = NULL;
    int fd;
    core_err rc;

    if (sodium_init() < 0) {
        snprintf(eb, ebn, "libsodium could not initialize");
        return CORE_ERNG;
    }
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        snprintf(eb, ebn, "key file '%s': cannot create: %s%s", path, strerror(errno),
                 errno == EEXIST ? " (an existing key is never overwritten)" : "");
        return errno == EEXIST ? CORE_EEXIST : CORE_EIO;
    }
    randombytes_buf(raw, sizeof(raw));
    sodium_bin2hex(hex, sizeof(hex), raw, sizeof(raw));
    hex[KEY_HEX] = '\n';
    rc = fchmod(fd, 0600) == 0 ? write_all(fd, hex, KEY_HEX + 1) : CORE_EIO;
    if (rc == CORE_OK && fsync(fd) != 0)
        rc = CORE_EIO;
    if (close(fd) != 0)
        rc = CORE_EIO;
    if (rc != CORE_OK) {
        snprintf(eb, ebn, "key file '%s': cannot write: %s", path, strerror(errno));
        unlink(path);
    } else if (key_id_out && core_ctl_key_from_bytes(raw, &k) == CORE_OK) {
        memcpy(key_id_out, k->id, KEY_ID_HEX + 1);
    }
    core_ctl_key_free(k);
    sodium_memzero(raw, sizeof(raw));
    sodium_memzero(hex, sizeof(hex));
    return rc;
}

/* ------------------------------------------------------------------ signer */

/* The signed bytes (see the header); returns the length, 0 when it does not fit. */
static size_t canon(const struct core_ctl_cmd *c, const char *key_id, char *buf, size_t n)
{
    int len =
        snprintf(buf, n, "%s\n%s\n%s\n%s\n%lld\n%s\n%s", CORE_CTL_SCHEMA, core_ctl_cmd_name(c->cmd),
                 c->target, c->reason, (long long)c->issued_at_ms, c->nonce, key_id);
    return len > 0 && (size_t)len < n ? (size_t)len : 0;
}

static void mac_hex(const struct core_ctl_key *k, const char *msg, size_t n, char out[SIG_HEX + 1])
{
    uint8_t mac[crypto_auth_hmacsha256_BYTES];
    crypto_auth_hmacsha256(mac, (const unsigned char *)msg, n, k->k);
    sodium_bin2hex(out, SIG_HEX + 1, mac, sizeof(mac));
}

static core_err cmd_check(const struct core_ctl_cmd *c, char *eb, size_t ebn)
{
    char why[128];

    if (core_ctl_text_check(c->target, CORE_CTL_MAX_TARGET, 1, why, sizeof(why)) != CORE_OK) {
        snprintf(eb, ebn, "target: %s", why);
        return CORE_EINVAL;
    }
    if (core_ctl_text_check(c->reason, CORE_CTL_MAX_REASON, 0, why, sizeof(why)) != CORE_OK) {
        snprintf(eb, ebn, "reason: %s", why);
        return CORE_EINVAL;
    }
    if (!is_lower_hex(c->nonce, NONCE_HEX) || c->issued_at_ms < 0 ||
        (unsigned)c->cmd > CORE_CTL_STATUS) {
        snprintf(eb, ebn, "nonce, issued_at or cmd out of range");
        return CORE_EINVAL;
    }
    return CORE_OK;
}

core_err core_ctl_encode(const struct core_ctl_key *k, const struct core_ctl_cmd *c, char **out,
                         char *eb, size_t ebn)
{
    char buf[CANON_MAX], sig[SIG_HEX + 1];
    size_t n;
    json_t *j;
    core_err rc = cmd_check(c, eb, ebn);

    if (rc != CORE_OK)
        return rc;
    n = canon(c, k->id, buf, sizeof(buf));
    if (n == 0) {
        snprintf(eb, ebn, "command too long");
        return CORE_EINVAL;
    }
    mac_hex(k, buf, n, sig);
    j = json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:s, s:s}", "schema", CORE_CTL_SCHEMA, "cmd",
                  core_ctl_cmd_name(c->cmd), "target", c->target, "reason", c->reason, "issued_at",
                  (json_int_t)c->issued_at_ms, "nonce", c->nonce, "key_id", k->id, "sig", sig);
    if (!j) { /* json_pack refuses text that is not valid UTF-8 */
        snprintf(eb, ebn, "target or reason is not valid UTF-8");
        return CORE_EINVAL;
    }
    *out = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return *out ? CORE_OK : CORE_ENOMEM;
}

core_err core_ctl_sign(const struct core_ctl_key *k, enum core_ctl_cmd_kind kind,
                       const char *target, const char *reason, int64_t now_ms,
                       struct core_ctl_cmd *cmd_out, char **out, char *eb, size_t ebn)
{
    struct core_ctl_cmd c;
    uint8_t nonce[CORE_CTL_NONCE_BYTES];
    char why[128];

    memset(&c, 0, sizeof(c));
    c.cmd = kind;
    c.issued_at_ms = now_ms;
    if (!target)
        target = CORE_CTL_TARGET_ALL;
    if (!reason)
        reason = "";
    if (core_ctl_text_check(target, CORE_CTL_MAX_TARGET, 1, why, sizeof(why)) != CORE_OK) {
        snprintf(eb, ebn, "target: %s", why);
        return CORE_EINVAL;
    }
    if (core_ctl_text_check(reason, CORE_CTL_MAX_REASON, 0, why, sizeof(why)) != CORE_OK) {
        snprintf(eb, ebn, "reason: %s", why);
        return CORE_EINVAL;
    }
    memcpy(c.target, target, strlen(target) + 1);
    memcpy(c.reason, reason, strlen(reason) + 1);
    randombytes_buf(nonce, sizeof(nonce));
    sodium_bin2hex(c.nonce, sizeof(c.nonce), nonce, sizeof(nonce));
    memcpy(c.key_id, k->id, sizeof(c.key_id));
    if (cmd_out)
        *cmd_out = c;
    return core_ctl_encode(k, &c, out, eb, ebn);
}

/* ------------------------------------------------------------------ verifier */

core_err core_ctl_verifier_new(const struct core_ctl_verifier_opts *o,
                               struct core_ctl_verifier **out, char *eb, size_t ebn)
{
    struct core_ctl_verifier *v;
    char why[128];
    const char *bad =
        !o->key               ? "no control key"
        : o->max_skew_ms <= 0 ? "max skew must be > 0"
        : core_ctl_text_check(o->target, CORE_CTL_MAX_TARGET, 1, why, sizeof(why)) != CORE_OK
            ? "service name is not a valid control target"
        : o->prev_key && strcmp(o->key->id, o->prev_key->id) == 0
            ? "the previous key is the current key (same key id)"
            : NULL;

    if (bad) {
        snprintf(eb, ebn, "%s", bad);
        core_ctl_key_free(o->key);
        core_ctl_key_free(o->prev_key);
        return CORE_EINVAL;
    }
    v = core_xcalloc(1, sizeof(*v));
    v->keys[0] = o->key;
    v->keys[1] = o->prev_key;
    v->skew_ms = o->max_skew_ms;
    memcpy(v->target, o->target, strlen(o->target) + 1);
    v->cap = o->cache_cap ? o->cache_cap : CORE_CTL_DEFAULT_CACHE;
    v->cache = core_xcalloc(v->cap, sizeof(*v->cache));
    *out = v;
    return CORE_OK;
}

void core_ctl_verifier_free(struct core_ctl_verifier *v)
{
    if (!v)
        return;
    core_ctl_key_free(v->keys[0]);
    core_ctl_key_free(v->keys[1]);
    free(v->cache);
    free(v);
}

uint64_t core_ctl_verifier_count(const struct core_ctl_verifier *v, enum core_ctl_verdict verdict)
{
    return (unsigned)verdict < CORE_CTL_NVERDICTS ? v->counts[verdict] : 0;
}

size_t core_ctl_verifier_cached(const struct core_ctl_verifier *v)
{
    return v->ncache;
}

static const char *const field_names[NFIELDS] = {"schema",    "cmd",   "target", "reason",
                                                 "issued_at", "nonce", "key_id", "sig"};

/* Copy string member name of j into dst (cap bytes incl. NUL); false when absent, not a
 * string, too long or holding a NUL. */
static bool get_str(const json_t *j, const char *name, char *dst, size_t cap)
{
    const json_t *s = json_object_get(j, name);
    size_t n = json_string_length(s);

    if (!json_is_string(s) || n >= cap || strlen(json_string_value(s)) != n)
        return false;
    memcpy(dst, json_string_value(s), n + 1);
    return true;
}

/* Members and types (everything but the signature). */
static enum core_ctl_verdict check_members(const json_t *j, struct core_ctl_cmd *c, char *sig,
                                           char *d, size_t dn)
{
    char schema[32], cmd[16], why[96];
    const json_t *t = json_object_get(j, "issued_at");
    const char *k;
    const json_t *val;

    json_object_foreach((json_t *)j, k, val)
    {
        size_t i = 0;
        while (i < NFIELDS && strcmp(k, field_names[i]) != 0)
            i++;
        if (i == NFIELDS) {
            snprintf(d, dn, "unknown member (only the %d of gcdp.control/1 are allowed)", NFIELDS);
            return CORE_CTL_MALFORMED;
        }
    }
    if (!get_str(j, "schema", schema, sizeof(schema)) || strcmp(schema, CORE_CTL_SCHEMA) != 0)
        snprintf(d, dn, "schema is not \"%s\"", CORE_CTL_SCHEMA);
    else if (!get_str(j, "cmd", cmd, sizeof(cmd)) || core_ctl_cmd_parse(cmd, &c->cmd) != CORE_OK)
        snprintf(d, dn, "cmd is not one of recalibrate|pause|resume|status");
    else if (!get_str(j, "target", c->target, sizeof(c->target)) ||
             core_ctl_text_check(c->target, CORE_CTL_MAX_TARGET, 1, why, sizeof(why)) != CORE_OK)
        snprintf(d, dn, "target is not a string of 1..%d bytes without control characters",
                 CORE_CTL_MAX_TARGET);
    else if (!get_str(j, "reason", c->reason, sizeof(c->reason)) ||
             core_ctl_text_check(c->reason, CORE_CTL_MAX_REASON, 0, why, sizeof(why)) != CORE_OK)
        snprintf(d, dn, "reason is not a string of at most %d bytes without control characters",
                 CORE_CTL_MAX_REASON);
    else if (!json_is_integer(t) || json_integer_value(t) < 0)
        snprintf(d, dn, "issued_at is not an integer >= 0 (epoch ms)");
    else if (!get_str(j, "nonce", c->nonce, sizeof(c->nonce)) || !is_lower_hex(c->nonce, NONCE_HEX))
        snprintf(d, dn, "nonce is not %zu lower-case hex digits", NONCE_HEX);
    else if (!get_str(j, "key_id", c->key_id, sizeof(c->key_id)) ||
             !is_lower_hex(c->key_id, KEY_ID_HEX))
        snprintf(d, dn, "key_id is not %zu lower-case hex digits", KEY_ID_HEX);
    else if (!get_str(j, "sig", sig, SIG_HEX + 1) || !is_lower_hex(sig, SIG_HEX))
        snprintf(d, dn, "sig is not %zu lower-case hex digits", SIG_HEX);
    else {
        c->issued_at_ms = (int64_t)json_integer_value(t);
        return CORE_CTL_ACCEPTED;
    }
    return CORE_CTL_MALFORMED;
}

/* Size, JSON, presence of the signature, members. */
static enum core_ctl_verdict parse_record(const void *buf, size_t len, struct core_ctl_cmd *c,
                                          char *sig, char *d, size_t dn)
{
    json_error_t e;
    json_t *j;
    enum core_ctl_verdict r;

    if (len > CORE_CTL_MAX_RECORD) {
        snprintf(d, dn, "oversize: %zu bytes > %d", len, CORE_CTL_MAX_RECORD);
        return CORE_CTL_MALFORMED;
    }
    /* jansson refuses invalid UTF-8, \u0000 and (with the flag) a repeated member name */
    j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &e);
    if (!j || !json_is_object(j)) {
        /* position only: jansson's text quotes the input ("near '...'") */
        snprintf(d, dn,
                 j ? "not a JSON object"
                   : "not JSON, or invalid UTF-8, or a repeated "
                     "member (line %d column %d)",
                 e.line, e.column);
        json_decref(j);
        return CORE_CTL_MALFORMED;
    }
    if (!json_object_get(j, "sig") || !json_object_get(j, "key_id")) {
        snprintf(d, dn, "no %s", json_object_get(j, "sig") ? "key_id" : "sig");
        json_decref(j);
        return CORE_CTL_UNSIGNED;
    }
    r = check_members(j, c, sig, d, dn);
    json_decref(j);
    return r;
}

static enum core_ctl_verdict check_sig(const struct core_ctl_verifier *v,
                                       const struct core_ctl_cmd *c, const char *sig_hex, char *d,
                                       size_t dn)
{
    const struct core_ctl_key *k = NULL;
    uint8_t want[crypto_auth_hmacsha256_BYTES], got[crypto_auth_hmacsha256_BYTES];
    char buf[CANON_MAX];
    size_t n, bin_len = 0;
    int bad;

    for (int i = 0; i < 2; i++)
        if (v->keys[i] && strcmp(v->keys[i]->id, c->key_id) == 0)
            k = v->keys[i];
    if (!k) {
        snprintf(d, dn, "key_id %s is neither control.key_file nor control.prev_key_file",
                 c->key_id);
        return CORE_CTL_UNKNOWN_KEY;
    }
    n = canon(c, c->key_id, buf, sizeof(buf));
    crypto_auth_hmacsha256(want, (const unsigned char *)buf, n, k->k);
    bad = sodium_hex2bin(got, sizeof(got), sig_hex, SIG_HEX, NULL, &bin_len, NULL) != 0 ||
          bin_len != sizeof(got) || crypto_verify_32(want, got) != 0;
    sodium_memzero(want, sizeof(want));
    if (bad) {
        snprintf(d, dn, "HMAC does not match under key %s", c->key_id);
        return CORE_CTL_BAD_SIGNATURE;
    }
    return CORE_CTL_ACCEPTED;
}

/* Forget nonces whose command would be stale now. */
static void cache_evict(struct core_ctl_verifier *v, int64_t now_ms)
{
    size_t w = 0;
    for (size_t i = 0; i < v->ncache; i++)
        if (!(now_ms > v->cache[i].expires_ms))
            v->cache[w++] = v->cache[i];
    v->ncache = w;
}

static enum core_ctl_verdict check_fresh(struct core_ctl_verifier *v, const struct core_ctl_cmd *c,
                                         int64_t now_ms, char *d, size_t dn)
{
    uint8_t nonce[CORE_CTL_NONCE_BYTES];
    size_t bin_len = 0;

    if (c->issued_at_ms < now_ms - v->skew_ms || c->issued_at_ms > now_ms + v->skew_ms) {
        snprintf(d, dn, "issued_at is %lld ms %s now; the allowed skew is %lld ms",
                 (long long)(c->issued_at_ms < now_ms ? now_ms - c->issued_at_ms
                                                      : c->issued_at_ms - now_ms),
                 c->issued_at_ms < now_ms ? "before" : "after", (long long)v->skew_ms);
        return c->issued_at_ms < now_ms ? CORE_CTL_STALE : CORE_CTL_FUTURE;
    }
    if (strcmp(c->target, v->target) != 0 && strcmp(c->target, CORE_CTL_TARGET_ALL) != 0) {
        snprintf(d, dn, "for another target (this is \"%s\")", v->target);
        return CORE_CTL_WRONG_TARGET;
    }
    if (sodium_hex2bin(nonce, sizeof(nonce), c->nonce, NONCE_HEX, NULL, &bin_len, NULL) != 0)
        return CORE_CTL_MALFORMED; /* checked as hex already */
    for (size_t i = 0; i < v->ncache; i++)
        if (memcmp(v->cache[i].nonce, nonce, sizeof(nonce)) == 0) {
            snprintf(d, dn, "nonce %s already seen", c->nonce);
            return CORE_CTL_REPLAYED;
        }
    if (v->ncache == v->cap)
        cache_evict(v, now_ms);
    if (v->ncache == v->cap) {
        snprintf(d, dn,
                 "%zu nonces within the skew window are remembered already; refused "
                 "(fail closed)",
                 v->cap);
        return CORE_CTL_REPLAY_CACHE_FULL;
    }
    memcpy(v->cache[v->ncache].nonce, nonce, sizeof(nonce));
    v->cache[v->ncache++].expires_ms = c->issued_at_ms + v->skew_ms;
    return CORE_CTL_ACCEPTED;
}

enum core_ctl_verdict core_ctl_verify(struct core_ctl_verifier *v, const void *buf, size_t len,
                                      int64_t now_ms, struct core_ctl_cmd *out, char *detail,
                                      size_t detail_size)
{
    struct core_ctl_cmd c;
    char sig[SIG_HEX + 1], scratch[8];
    char *d = detail ? detail : scratch;
    size_t dn = detail ? detail_size : sizeof(scratch);
    enum core_ctl_verdict r;

    memset(&c, 0, sizeof(c));
    if (dn)
        d[0] = '\0';
    r = parse_record(buf, len, &c, sig, d, dn);
    if (r == CORE_CTL_ACCEPTED)
        r = check_sig(v, &c, sig, d, dn);
    if (r == CORE_CTL_ACCEPTED)
        r = check_fresh(v, &c, now_ms, d, dn);
    v->counts[r]++;
    if (r == CORE_CTL_ACCEPTED && out)
        *out = c;
    sodium_memzero(sig, sizeof(sig));
    return r;
}
