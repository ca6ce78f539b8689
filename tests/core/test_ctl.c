/* test_ctl.c - signed control records (core/ctl.h): round trip, every rejection reason from
 * a crafted record, the skew edges to the millisecond, replay and a full replay cache, key
 * rotation, key files, and the emitted records against schemas/control.schema.json and
 * schemas/status.schema.json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <criterion/criterion.h>
#include <jansson.h>
#include <uv.h>

#include "core/ctl.h"
#include "core/ctl_listen.h"
#include "core/kconf.h"
#include "core/log.h"
#include "test_support.h"

#define T0   1780000000000LL /* an epoch ms */
#define SKEW 60000LL

static struct core_ctl_key *key_of(uint8_t fill)
{
    uint8_t raw[CORE_CTL_KEY_BYTES];
    struct core_ctl_key *k = NULL;
    memset(raw, fill, sizeof(raw));
    cr_assert_eq(core_ctl_key_from_bytes(raw, &k), CORE_OK);
    return k;
}

/* Verifier for "calibrate" with key fill a (and b as the previous key when b != 0). */
static struct core_ctl_verifier *verifier(uint8_t a, uint8_t b, size_t cap)
{
    struct core_ctl_verifier_opts o = {key_of(a), b ? key_of(b) : NULL, SKEW, "calibrate", cap};
    struct core_ctl_verifier *v = NULL;
    char eb[128];
    cr_assert_eq(core_ctl_verifier_new(&o, &v, eb, sizeof(eb)), CORE_OK, "%s", eb);
    return v;
}

static char *sign(uint8_t fill, enum core_ctl_cmd_kind kind, const char *target, int64_t at,
                  struct core_ctl_cmd *c)
{
    struct core_ctl_key *k = key_of(fill);
    char *s = NULL, eb[128];
    cr_assert_eq(core_ctl_sign(k, kind, target, "operator test", at, c, &s, eb, sizeof(eb)),
                 CORE_OK, "%s", eb);
    core_ctl_key_free(k);
    return s;
}

static enum core_ctl_verdict judge(struct core_ctl_verifier *v, const char *s, int64_t now)
{
    char detail[256];
    return core_ctl_verify(v, s, strlen(s), now, NULL, detail, sizeof(detail));
}

/* s with member name replaced by val (stolen); the signature is left as it was. */
static char *tamper(const char *s, const char *name, json_t *val)
{
    json_t *j = json_loads(s, 0, NULL);
    char *out;
    cr_assert_not_null(j);
    if (val)
        json_object_set_new(j, name, val);
    else
        json_object_del(j, name);
    out = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return out;
}

Test(ctl, sign_then_verify_round_trip_gives_the_command)
{
    struct core_ctl_verifier *v = verifier(1, 0, 0);
    struct core_ctl_cmd sent, got;
    char *s = sign(1, CORE_CTL_RECALIBRATE, "calibrate", T0, &sent), detail[256];

    cr_assert_eq(core_ctl_verify(v, s, strlen(s), T0 + 5, &got, detail, sizeof(detail)),
                 CORE_CTL_ACCEPTED, "%s", detail);
    cr_assert_eq(got.cmd, CORE_CTL_RECALIBRATE);
    cr_assert_str_eq(got.target, "calibrate");
    cr_assert_str_eq(got.reason, "operator test");
    cr_assert_eq(got.issued_at_ms, T0);
    cr_assert_str_eq(got.nonce, sent.nonce);
    cr_assert_eq(strlen(got.nonce), 32);
    cr_assert_eq(strlen(got.key_id), 16);
    cr_assert_eq(core_ctl_verifier_count(v, CORE_CTL_ACCEPTED), 1);
    cr_assert_eq(core_ctl_verifier_cached(v), 1);
    free(s);
    /* two signatures of the same command differ in their nonce */
    s = sign(1, CORE_CTL_RECALIBRATE, "calibrate", T0, &got);
    cr_assert_str_neq(got.nonce, sent.nonce);
    free(s);
    core_ctl_verifier_free(v);
}

Test(ctl, tampering_with_any_signed_field_is_a_bad_signature)
{
    struct core_ctl_verifier *v = verifier(1, 0, 0);
    char *s = sign(1, CORE_CTL_PAUSE, "all", T0, NULL);
    struct {
        const char *name;
        json_t *val;
    } cases[] = {
        {"cmd", json_string("resume")},
        {"target", json_string("calibrate")},
        {"reason", json_string("operator tesT")},
        {"issued_at", json_integer(T0 + 1)},
        {"nonce", json_string("00000000000000000000000000000000")},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        char *t = tamper(s, cases[i].name, cases[i].val);
        cr_assert_eq(judge(v, t, T0), CORE_CTL_BAD_SIGNATURE, "field %s", cases[i].name);
        free(t);
    }
    { /* one flipped hex digit of the signature */
        json_t *j = json_loads(s, 0, NULL);
        char sig[65], *t;
        snprintf(sig, sizeof(sig), "%s", json_string_value(json_object_get(j, "sig")));
        sig[10] = sig[10] == '0' ? '1' : '0';
        t = tamper(s, "sig", json_string(sig));
        cr_assert_eq(judge(v, t, T0), CORE_CTL_BAD_SIGNATURE);
        free(t);
        json_decref(j);
    }
    { /* another key's id */
        struct core_ctl_key *other = key_of(9);
        char *t = tamper(s, "key_id", json_string(core_ctl_key_id(other)));
        cr_assert_eq(judge(v, t, T0), CORE_CTL_UNKNOWN_KEY);
        free(t);
        core_ctl_key_free(other);
    }
    cr_assert_eq(core_ctl_verifier_count(v, CORE_CTL_BAD_SIGNATURE), 6);
    cr_assert_eq(core_ctl_verifier_count(v, CORE_CTL_ACCEPTED), 0);
    cr_assert_eq(core_ctl_verifier_cached(v), 0, "nothing unauthenticated enters the cache");
    cr_assert_eq(judge(v, s, T0), CORE_CTL_ACCEPTED, "the original is still good");
    free(s);
    core_ctl_verifier_free(v);
}

Test(ctl, wrong_key_is_unknown_and_a_forged_key_id_is_a_bad_signature)
{
    struct core_ctl_verifier *v = verifier(1, 0, 0);
    struct core_ctl_key *mine = key_of(1);
    char *s = sign(2, CORE_CTL_RECALIBRATE, "all", T0, NULL), *t, detail[256];

    cr_assert_eq(core_ctl_verify(v, s, strlen(s), T0, NULL, detail, sizeof(detail)),
                 CORE_CTL_UNKNOWN_KEY);
    cr_assert(strstr(detail, "key_id"), "%s", detail);
    t = tamper(s, "key_id", json_string(core_ctl_key_id(mine)));
    cr_assert_eq(core_ctl_verify(v, t, strlen(t), T0, NULL, detail, sizeof(detail)),
                 CORE_CTL_BAD_SIGNATURE);
    { /* the detail never carries the signature */
        json_t *j = json_loads(t, 0, NULL);
        const char *sig = json_string_value(json_object_get(j, "sig"));
        char head[17];
        snprintf(head, sizeof(head), "%s", sig);
        cr_assert_null(strstr(detail, head), "detail leaks the signature: %s", detail);
        json_decref(j);
    }
    free(s);
    free(t);
    core_ctl_key_free(mine);
    core_ctl_verifier_free(v);
}

Test(ctl, rotation_accepts_the_previous_key_beside_the_current_one)
{
    struct core_ctl_verifier *both = verifier(1, 2, 0), *only_new = verifier(1, 0, 0);
    char *by_old = sign(2, CORE_CTL_STATUS, "all", T0, NULL);
    char *by_new = sign(1, CORE_CTL_STATUS, "all", T0, NULL);
    char *by_third = sign(3, CORE_CTL_STATUS, "all", T0, NULL);

    cr_assert_eq(judge(both, by_old, T0), CORE_CTL_ACCEPTED);
    cr_assert_eq(judge(both, by_new, T0), CORE_CTL_ACCEPTED);
    cr_assert_eq(judge(both, by_third, T0), CORE_CTL_UNKNOWN_KEY);
    cr_assert_eq(judge(only_new, by_old, T0), CORE_CTL_UNKNOWN_KEY, "prev dropped: refused");
    cr_assert_eq(judge(only_new, by_new, T0), CORE_CTL_ACCEPTED);
    free(by_old);
    free(by_new);
    free(by_third);
    core_ctl_verifier_free(both);
    core_ctl_verifier_free(only_new);
}

Test(ctl, the_same_key_twice_is_refused_as_a_rotation)
{
    struct core_ctl_verifier_opts o = {key_of(1), key_of(1), SKEW, "calibrate", 0};
    struct core_ctl_verifier *v = NULL;
    char eb[128];
    cr_assert_eq(core_ctl_verifier_new(&o, &v, eb, sizeof(eb)), CORE_EINVAL);
    cr_assert(strstr(eb, "same key"), "%s", eb);
    cr_assert_null(v);
}

Test(ctl, skew_edges_to_the_millisecond)
{
    struct core_ctl_verifier *v = verifier(1, 0, 0);
    struct {
        int64_t issued;
        enum core_ctl_verdict want;
    } cases[] = {
        {T0 - SKEW, CORE_CTL_ACCEPTED},
        {T0 - SKEW - 1, CORE_CTL_STALE},
        {T0 + SKEW, CORE_CTL_ACCEPTED},
        {T0 + SKEW + 1, CORE_CTL_FUTURE},
        {0, CORE_CTL_STALE},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        char *s = sign(1, CORE_CTL_PAUSE, "calibrate", cases[i].issued, NULL);
        cr_assert_eq(judge(v, s, T0), cases[i].want, "issued at now%+lld ms",
                     (long long)(cases[i].issued - T0));
        free(s);
    }
    cr_assert_eq(core_ctl_verifier_count(v, CORE_CTL_STALE), 2);
    cr_assert_eq(core_ctl_verifier_count(v, CORE_CTL_FUTURE), 1);
    core_ctl_verifier_free(v);
}

Test(ctl, a_replay_is_refused_until_it_would_be_stale)
{
    struct core_ctl_verifier *v = verifier(1, 0, 0);
    char *s = sign(1, CORE_CTL_RECALIBRATE, "all", T0, NULL), *spaced;

    cr_assert_eq(judge(v, s, T0), CORE_CTL_ACCEPTED);
    cr_assert_eq(judge(v, s, T0 + 1), CORE_CTL_REPLAYED);
    cr_assert_eq(judge(v, s, T0 + SKEW), CORE_CTL_REPLAYED, "last ms of the window");
    cr_assert_eq(judge(v, s, T0 + SKEW + 1), CORE_CTL_STALE, "after the window: stale");
    /* other bytes, same signed fields: still the same command */
    spaced = malloc(strlen(s) + 2);
    snprintf(spaced, strlen(s) + 2, " %s", s);
    cr_assert_eq(judge(v, spaced, T0 + 2), CORE_CTL_REPLAYED);
    cr_assert_eq(core_ctl_verifier_count(v, CORE_CTL_REPLAYED), 3);
    free(spaced);
    free(s);
    core_ctl_verifier_free(v);
}

Test(ctl, a_full_replay_cache_fails_closed_and_frees_up_as_nonces_expire)
{
    struct core_ctl_verifier *v = verifier(1, 0, 16);
    char *s;

    for (int i = 0; i < 16; i++) {
        s = sign(1, CORE_CTL_STATUS, "all", T0 + i, NULL);
        cr_assert_eq(judge(v, s, T0 + 20), CORE_CTL_ACCEPTED, "command %d", i);
        free(s);
    }
    s = sign(1, CORE_CTL_STATUS, "all", T0 + 20, NULL);
    cr_assert_eq(judge(v, s, T0 + 20), CORE_CTL_REPLAY_CACHE_FULL);
    cr_assert_eq(core_ctl_verifier_cached(v), 16);
    /* one ms after the first nonce (issued T0) expired: exactly one slot frees */
    cr_assert_eq(judge(v, s, T0 + SKEW + 1), CORE_CTL_ACCEPTED);
    cr_assert_eq(core_ctl_verifier_cached(v), 16);
    free(s);
    s = sign(1, CORE_CTL_STATUS, "all", T0 + SKEW + 1, NULL);
    cr_assert_eq(judge(v, s, T0 + SKEW + 1), CORE_CTL_REPLAY_CACHE_FULL);
    cr_assert_eq(judge(v, s, T0 + SKEW + 2), CORE_CTL_ACCEPTED, "the nonce of T0+1 expired");
    cr_assert_eq(core_ctl_verifier_count(v, CORE_CTL_REPLAY_CACHE_FULL), 2);
    free(s);
    core_ctl_verifier_free(v);
}

Test(ctl, commands_for_another_target_are_refused)
{
    struct core_ctl_verifier *v = verifier(1, 0, 0);
    char *a = sign(1, CORE_CTL_PAUSE, "release", T0, NULL);
    char *b = sign(1, CORE_CTL_PAUSE, "calibrate", T0, NULL);
    char *c = sign(1, CORE_CTL_PAUSE, "all", T0, NULL);

    cr_assert_eq(judge(v, a, T0), CORE_CTL_WRONG_TARGET);
    cr_assert_eq(judge(v, b, T0), CORE_CTL_ACCEPTED);
    cr_assert_eq(judge(v, c, T0), CORE_CTL_ACCEPTED);
    free(a);
    free(b);
    free(c);
    core_ctl_verifier_free(v);
}

Test(ctl, records_without_signature_or_key_id_are_unsigned)
{
    struct core_ctl_verifier *v = verifier(1, 0, 0);
    char *s = sign(1, CORE_CTL_PAUSE, "all", T0, NULL);
    char *a = tamper(s, "sig", NULL), *b = tamper(s, "key_id", NULL),
         *c = tamper(a, "key_id", NULL);

    cr_assert_eq(judge(v, a, T0), CORE_CTL_UNSIGNED);
    cr_assert_eq(judge(v, b, T0), CORE_CTL_UNSIGNED);
    cr_assert_eq(judge(v, c, T0), CORE_CTL_UNSIGNED);
    cr_assert_eq(core_ctl_verifier_count(v, CORE_CTL_UNSIGNED), 3);
    free(s);
    free(a);
    free(b);
    free(c);
    core_ctl_verifier_free(v);
}

/* Member name -> replacement value (NULL value: remove the member). */
struct mal {
    const char *name;
    const char *json_val; /* JSON text of the new value */
};

Test(ctl, malformed_members_and_types_are_refused)
{
    struct core_ctl_verifier *v = verifier(1, 0, 0);
    char *s = sign(1, CORE_CTL_PAUSE, "all", T0, NULL);
    const struct mal cases[] = {
        {"cmd", "\"reboot\""},
        {"cmd", "1"},
        {"schema", "\"gcdp.control/2\""},
        {"target", "\"\""},
        {"target", "7"},
        {"reason", "\"line\\nbreak\""},
        {"reason", "\"nul\\u0000\""},
        {"reason", "null"},
        {"issued_at", "\"1780000000000\""},
        {"issued_at", "1780000000000.5"},
        {"issued_at", "-1"},
        {"nonce", "\"ABCDEF0123456789ABCDEF0123456789\""},
        {"nonce", "\"abc\""},
        {"key_id", "12"},
        {"sig", "\"zz\""},
        {"extra", "1"},
        {"reason", NULL},
        {"issued_at", NULL},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        json_t *val = cases[i].json_val
                          ? json_loads(cases[i].json_val, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL)
                          : NULL;
        char *t;
        cr_assert(!cases[i].json_val || val, "case %zu", i);
        t = tamper(s, cases[i].name, val);
        cr_assert_eq(judge(v, t, T0), CORE_CTL_MALFORMED, "%s = %s", cases[i].name,
                     cases[i].json_val ? cases[i].json_val : "(removed)");
        free(t);
    }
    cr_assert_eq(core_ctl_verifier_count(v, CORE_CTL_MALFORMED), sizeof(cases) / sizeof(*cases));
    free(s);
    core_ctl_verifier_free(v);
}

Test(ctl, malformed_documents_are_refused)
{
    struct core_ctl_verifier *v = verifier(1, 0, 0);
    char *s = sign(1, CORE_CTL_PAUSE, "all", T0, NULL), *big, *dup, *bad_utf8, detail[256];
    const char *texts[] = {"", "{", "[1,2]", "\"pause\"", "null", "{\"cmd\":\"pause\"} x"};
    size_t n = strlen(s);

    for (size_t i = 0; i < sizeof(texts) / sizeof(*texts); i++)
        cr_assert_eq(judge(v, texts[i], T0), CORE_CTL_MALFORMED, "'%s'", texts[i]);
    /* oversize: the valid record padded with whitespace past 4 KiB */
    big = malloc(CORE_CTL_MAX_RECORD + 2);
    memset(big, ' ', CORE_CTL_MAX_RECORD + 1);
    memcpy(big, s, n);
    big[CORE_CTL_MAX_RECORD + 1] = '\0';
    cr_assert_eq(core_ctl_verify(v, big, CORE_CTL_MAX_RECORD + 1, T0, NULL, detail, sizeof(detail)),
                 CORE_CTL_MALFORMED);
    cr_assert(strstr(detail, "oversize"), "%s", detail);
    cr_assert_eq(core_ctl_verify(v, big, CORE_CTL_MAX_RECORD, T0, NULL, detail, sizeof(detail)),
                 CORE_CTL_ACCEPTED, "exactly 4096 bytes is allowed: %s", detail);
    /* a repeated member ahead of the real one */
    dup = malloc(n + 32);
    snprintf(dup, n + 32, "{\"cmd\":\"resume\",%s", s + 1);
    cr_assert_eq(judge(v, dup, T0), CORE_CTL_MALFORMED);
    /* invalid UTF-8 inside the reason */
    bad_utf8 = strdup(s);
    memcpy(strstr(bad_utf8, "operator"), "\xff\xfe", 2);
    cr_assert_eq(judge(v, bad_utf8, T0), CORE_CTL_MALFORMED);
    cr_assert_eq(core_ctl_verifier_count(v, CORE_CTL_MALFORMED),
                 sizeof(texts) / sizeof(*texts) + 3);
    free(big);
    free(dup);
    free(bad_utf8);
    free(s);
    core_ctl_verifier_free(v);
}

Test(ctl, signer_refuses_texts_the_encoding_cannot_carry)
{
    struct core_ctl_key *k = key_of(1);
    char *s = NULL, eb[128], longr[CORE_CTL_MAX_REASON + 2];

    memset(longr, 'r', sizeof(longr) - 1);
    longr[sizeof(longr) - 1] = '\0';
    cr_assert_eq(core_ctl_sign(k, CORE_CTL_PAUSE, "a\nb", "", T0, NULL, &s, eb, sizeof(eb)),
                 CORE_EINVAL);
    cr_assert(strstr(eb, "target"), "%s", eb);
    cr_assert_eq(core_ctl_sign(k, CORE_CTL_PAUSE, "", "", T0, NULL, &s, eb, sizeof(eb)),
                 CORE_EINVAL);
    cr_assert_eq(core_ctl_sign(k, CORE_CTL_PAUSE, "x", "tab\there", T0, NULL, &s, eb, sizeof(eb)),
                 CORE_EINVAL);
    cr_assert(strstr(eb, "reason"), "%s", eb);
    cr_assert_eq(core_ctl_sign(k, CORE_CTL_PAUSE, "x", longr, T0, NULL, &s, eb, sizeof(eb)),
                 CORE_EINVAL);
    cr_assert_eq(core_ctl_sign(k, CORE_CTL_PAUSE, "x", "\xff", T0, NULL, &s, eb, sizeof(eb)),
                 CORE_EINVAL, "invalid UTF-8");
    cr_assert_null(s);
    /* the longest reason and target, all escaped characters, still fit in 4 KiB */
    memset(longr, '"', CORE_CTL_MAX_REASON);
    longr[CORE_CTL_MAX_REASON] = '\0';
    cr_assert_eq(core_ctl_sign(k, CORE_CTL_PAUSE, NULL, longr, T0, NULL, &s, eb, sizeof(eb)),
                 CORE_OK, "%s", eb);
    cr_assert_leq(strlen(s), CORE_CTL_MAX_RECORD);
    free(s);
    core_ctl_key_free(k);
}

Test(ctl, keygen_writes_a_0600_key_that_loads_and_never_overwrites)
{
    char *dir = ts_tmpdir(), path[600], id[17], eb[512], *before, *after;
    struct core_ctl_key *k = NULL;
    struct stat st;

    snprintf(path, sizeof(path), "%s/ctl.key", dir);
    cr_assert_eq(core_ctl_keygen(path, id, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600);
    cr_assert_eq(st.st_size, 65, "64 hex digits and a newline");
    cr_assert_eq(core_ctl_key_load(path, &k, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_str_eq(core_ctl_key_id(k), id);
    before = ts_read_file(path, NULL);
    cr_assert_eq(core_ctl_keygen(path, NULL, eb, sizeof(eb)), CORE_EEXIST);
    cr_assert(strstr(eb, path), "%s", eb);
    after = ts_read_file(path, NULL);
    cr_assert_str_eq(before, after, "an existing key was overwritten");
    free(before);
    free(after);
    core_ctl_key_free(k);
    ts_rmtree(dir);
    free(dir);
}

/* Write text with mode, load it; returns the load's status, eb gets the message. */
static core_err load_text(const char *dir, const char *text, mode_t mode, char *eb, size_t ebn)
{
    char path[600];
    struct core_ctl_key *k = NULL;
    core_err rc;

    snprintf(path, sizeof(path), "%s/k", dir);
    remove(path);
    ts_write_file(path, text);
    cr_assert_eq(chmod(path, mode), 0);
    rc = core_ctl_key_load(path, &k, eb, ebn);
    core_ctl_key_free(k);
    return rc;
}

Test(ctl, key_files_that_are_open_short_long_or_not_hex_are_refused_naming_the_path)
{
    char *dir = ts_tmpdir(), eb[512];
    const char *hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    char buf[200];

    cr_assert_eq(load_text(dir, hex, 0600, eb, sizeof(eb)), CORE_OK, "%s", eb);
    snprintf(buf, sizeof(buf), "%s\n", hex);
    cr_assert_eq(load_text(dir, buf, 0400, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(load_text(dir, buf, 0644, eb, sizeof(eb)), CORE_ECONFIG);
    cr_assert(strstr(eb, dir) && strstr(eb, "mode 0644"), "%s", eb);
    cr_assert_eq(load_text(dir, buf, 0620, eb, sizeof(eb)), CORE_ECONFIG, "group-writable");
    cr_assert_null(strstr(eb, hex), "the message leaks the key: %s", eb);
    snprintf(buf, sizeof(buf), "%s\n\n", hex);
    cr_assert_eq(load_text(dir, buf, 0600, eb, sizeof(eb)), CORE_ECONFIG, "two newlines");
    cr_assert(strstr(eb, "66 bytes"), "%s", eb);
    cr_assert_eq(load_text(dir, "0011", 0600, eb, sizeof(eb)), CORE_ECONFIG, "short");
    snprintf(buf, sizeof(buf), "%.63sg", hex);
    cr_assert_eq(load_text(dir, buf, 0600, eb, sizeof(eb)), CORE_ECONFIG, "not hex");
    cr_assert(strstr(eb, "hex"), "%s", eb);
    cr_assert_null(strstr(eb, "0011223344"), "the message leaks the key: %s", eb);
    {
        struct core_ctl_key *k = NULL;
        char path[600];
        snprintf(path, sizeof(path), "%s/missing", dir);
        cr_assert_eq(core_ctl_key_load(path, &k, eb, sizeof(eb)), CORE_EIO);
        cr_assert(strstr(eb, path), "%s", eb);
        cr_assert_eq(core_ctl_key_load(dir, &k, eb, sizeof(eb)), CORE_ECONFIG, "a directory");
    }
    ts_rmtree(dir);
    free(dir);
}

/* Validate one JSON text against schemas/<schema> with python3-jsonschema (Draft 2020-12);
 * returns the validator's exit status. */
static int validate(const char *dir, const char *schema, const char *text)
{
    char path[600], cmd[2048];
    snprintf(path, sizeof(path), "%s/rec.json", dir);
    ts_write_file(path, text);
    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 -c 'import json,sys,jsonschema; "
             "jsonschema.Draft202012Validator(json.load(open(sys.argv[1]))).validate("
             "json.load(open(sys.argv[2])))' %s/%s %s 2>/dev/null",
             GCDP_SCHEMA_DIR, schema, path);
    return system(cmd);
}

Test(ctl, emitted_records_validate_against_the_schemas_and_bad_ones_do_not)
{
    char *dir = ts_tmpdir(), *s, *t, *st = NULL;
    json_t *body = json_pack("{s:I, s:s}", "theta_version", (json_int_t)3, "why", "drift");

    s = sign(1, CORE_CTL_RECALIBRATE, "calibrate", T0, NULL);
    cr_assert_eq(validate(dir, "control.schema.json", s), 0, "%s", s);
    t = tamper(s, "nonce", json_string("xyz"));
    cr_assert_neq(validate(dir, "control.schema.json", t), 0, "schema accepts a bad nonce");
    free(t);
    t = tamper(s, "extra", json_true());
    cr_assert_neq(validate(dir, "control.schema.json", t), 0, "schema accepts an extra member");
    free(t);
    cr_assert_eq(core_ctl_status_encode("calibrate", "host:1", "0123456789abcdef0123456789abcdef",
                                        T0, body, &st),
                 CORE_OK);
    cr_assert_eq(validate(dir, "status.schema.json", st), 0, "%s", st);
    free(st);
    cr_assert_eq(core_ctl_status_encode("release", "host:2", NULL, T0, body, &st), CORE_OK);
    cr_assert_eq(validate(dir, "status.schema.json", st), 0, "%s", st);
    cr_assert(strstr(st, "\"in_reply_to\":null"), "%s", st);
    free(st);
    cr_assert_eq(core_ctl_status_encode("x", "h", NULL, T0, json_object_get(body, "why"), &st),
                 CORE_EINVAL, "a body that is not an object");
    json_decref(body);
    free(s);
    ts_rmtree(dir);
    free(dir);
}

/* ------------------------------------------------------------------ listener set-up */

static void ignore_cmd(void *arg, const struct core_ctl_cmd *c)
{
    (void)arg;
    (void)c;
}

static void count_closed(void *arg)
{
    (*(int *)arg)++;
}

/* core_ctl_listener_new with control.key_file / prev_key_file set (NULL: leave default). */
static core_err listener_with(const char *kf, const char *pf, struct core_ctl_listener **l,
                              int *closed, char *eb, size_t ebn)
{
    static const struct core_cfg_key *const tables[] = {core_config_keys};
    struct core_config *cfg = core_config_new(tables, 1);
    struct core_ctl_listener_opts o = {"calibrate", ignore_cmd, count_closed, closed, NULL};
    uv_loop_t loop;
    char set[700];
    core_err rc;

    cr_assert_not_null(cfg);
    if (kf) {
        snprintf(set, sizeof(set), "control.key_file=%s", kf);
        cr_assert_eq(core_config_set_arg(cfg, set, eb, ebn), CORE_OK, "%s", eb);
    }
    if (pf) {
        snprintf(set, sizeof(set), "control.prev_key_file=%s", pf);
        cr_assert_eq(core_config_set_arg(cfg, set, eb, ebn), CORE_OK, "%s", eb);
    }
    uv_loop_init(&loop);
    rc = core_ctl_listener_new(&loop, cfg, &o, l, eb, ebn);
    cr_assert(rc != CORE_OK || !core_ctl_listener_enabled(*l), "no broker: only disabled");
    if (rc == CORE_OK)
        core_ctl_listener_close(*l);
    uv_run(&loop, UV_RUN_DEFAULT);
    cr_assert_eq(uv_loop_close(&loop), 0);
    core_config_free(cfg);
    return rc;
}

Test(ctl, an_empty_key_file_disables_the_listener_and_it_closes_at_once)
{
    struct core_ctl_listener *l = NULL;
    int closed = 0;
    char eb[512] = "";
    json_t *counts;

    core_log_level = CORE_LOG_OFF;
    cr_assert_eq(listener_with(NULL, NULL, &l, &closed, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_not(core_ctl_listener_ready(l));
    cr_assert_eq(closed, 1, "on_closed of a disabled listener runs inside close");
    core_ctl_listener_close(l);
    cr_assert_eq(closed, 1, "close is idempotent");
    counts = core_ctl_listener_counts_json(l);
    cr_assert_eq(json_object_size(counts), CORE_CTL_NVERDICTS);
    cr_assert_eq(json_integer_value(json_object_get(counts, "replay_cache_full")), 0);
    json_decref(counts);
    core_ctl_listener_free(l);
}

Test(ctl, unusable_keys_are_configuration_errors_naming_the_key)
{
    char *dir = ts_tmpdir(), kf[600], kf2[600], eb[512];
    struct core_ctl_listener *l = NULL;
    int closed = 0;

    core_log_level = CORE_LOG_OFF;
    snprintf(kf, sizeof(kf), "%s/a.key", dir);
    snprintf(kf2, sizeof(kf2), "%s/b.key", dir);
    cr_assert_eq(core_ctl_keygen(kf, NULL, eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(core_ctl_keygen(kf2, NULL, eb, sizeof(eb)), CORE_OK);
    cr_assert_eq(listener_with(NULL, kf, &l, &closed, eb, sizeof(eb)), CORE_ECONFIG);
    cr_assert(strstr(eb, "control.prev_key_file"), "%s", eb);
    cr_assert_eq(listener_with(kf, kf, &l, &closed, eb, sizeof(eb)), CORE_ECONFIG);
    cr_assert(strstr(eb, "control.prev_key_file") && strstr(eb, "same key"), "%s", eb);
    cr_assert_eq(chmod(kf2, 0640), 0);
    cr_assert_eq(listener_with(kf, kf2, &l, &closed, eb, sizeof(eb)), CORE_ECONFIG);
    cr_assert(strstr(eb, "control.prev_key_file") && strstr(eb, "mode 0640"), "%s", eb);
    cr_assert_eq(listener_with(kf2, NULL, &l, &closed, eb, sizeof(eb)), CORE_ECONFIG);
    cr_assert(strstr(eb, "control.key_file") && strstr(eb, kf2), "%s", eb);
    cr_assert_eq(closed, 0);
    ts_rmtree(dir);
    free(dir);
}
