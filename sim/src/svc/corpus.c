/* corpus.c - bad-input corpus lines (see replay_int.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/mem.h"
#include "replay_int.h"

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static core_err from_hex(const char *hex, size_t n, char **out, size_t *len)
{
    char *b;
    if (n % 2)
        return CORE_EPARSE;
    b = core_xmalloc(n / 2 + 1);
    for (size_t i = 0; i < n; i += 2) {
        int hi = hexval(hex[i]), lo = hexval(hex[i + 1]);
        if (hi < 0 || lo < 0) {
            free(b);
            return CORE_EPARSE;
        }
        b[i / 2] = (char)(hi * 16 + lo);
    }
    b[n / 2] = '\0';
    *out = b;
    *len = n / 2;
    return CORE_OK;
}

/* Replace the first "@PAD@" of e->payload with pad 'x' bytes. */
static core_err apply_pad(struct sim_corpus_entry *e, json_int_t pad, char *eb, size_t ebn)
{
    const char *at = strstr(e->payload, "@PAD@");
    size_t pre, post, len;
    char *b;
    if (pad < 0 || (size_t)pad > SIM_CORPUS_MAX_PAD || !at) {
        snprintf(eb, ebn, "\"pad\" must be 0..%zu and the payload must contain @PAD@",
                 SIM_CORPUS_MAX_PAD);
        return CORE_EPARSE;
    }
    pre = (size_t)(at - e->payload);
    post = e->payload_len - pre - 5;
    len = pre + (size_t)pad + post;
    b = core_xmalloc(len + 1);
    memcpy(b, e->payload, pre);
    memset(b + pre, 'x', (size_t)pad);
    memcpy(b + pre + (size_t)pad, at + 5, post);
    b[len] = '\0';
    free(e->payload);
    e->payload = b;
    e->payload_len = len;
    return CORE_OK;
}

/* Default key: the payload's device if it is an object with a string "device". */
static char *default_key(const struct sim_corpus_entry *e)
{
    json_t *doc = json_loadb(e->payload, e->payload_len, 0, NULL);
    const char *dev = json_string_value(json_object_get(doc, "device"));
    char *k = core_xstrdup(dev && dev[0] &&
                                   strlen(dev) == json_string_length(json_object_get(doc, "device"))
                               ? dev
                               : "corpus");
    json_decref(doc);
    return k;
}

core_err sim_corpus_entry_parse(const char *line, size_t n, struct sim_corpus_entry *e, char *eb,
                                size_t ebn)
{
    json_error_t jerr;
    json_t *doc = json_loadb(line, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    const json_t *kind, *reason, *payload, *hex, *key, *pad;
    core_err rc = CORE_EPARSE;

    memset(e, 0, sizeof(*e));
    if (!json_is_object(doc)) {
        snprintf(eb, ebn, "not a JSON object: %s", doc ? "wrong type" : jerr.text);
        goto out;
    }
    kind = json_object_get(doc, "kind");
    reason = json_object_get(doc, "expected_reason");
    payload = json_object_get(doc, "payload");
    hex = json_object_get(doc, "payload_hex");
    key = json_object_get(doc, "key");
    pad = json_object_get(doc, "pad");
    if (!json_is_string(kind) || !(json_is_string(reason) || json_is_null(reason)) ||
        !(json_is_string(payload) ^ json_is_string(hex)) ||
        (key && !json_is_string(key) && !json_is_null(key)) || (pad && !json_is_integer(pad))) {
        snprintf(eb, ebn,
                 "needs kind (string), expected_reason (string|null), exactly one of "
                 "payload/payload_hex (string), optional key (string|null), pad (int)");
        goto out;
    }
    if (payload) {
        e->payload_len = json_string_length(payload);
        e->payload = core_xmalloc(e->payload_len + 1);
        memcpy(e->payload, json_string_value(payload), e->payload_len + 1);
    } else if (from_hex(json_string_value(hex), json_string_length(hex), &e->payload,
                        &e->payload_len) != CORE_OK) {
        snprintf(eb, ebn, "payload_hex is not an even-length hex string");
        goto out;
    }
    if (pad && (rc = apply_pad(e, json_integer_value(pad), eb, ebn)) != CORE_OK)
        goto out;
    e->kind = core_xstrdup(json_string_value(kind));
    e->expected_reason = json_is_string(reason) ? core_xstrdup(json_string_value(reason)) : NULL;
    e->key = !key                  ? default_key(e)
             : json_is_string(key) ? core_xstrdup(json_string_value(key))
                                   : NULL;
    rc = CORE_OK;
out:
    if (rc != CORE_OK)
        sim_corpus_entry_cleanup(e);
    json_decref(doc);
    return rc;
}

void sim_corpus_entry_cleanup(struct sim_corpus_entry *e)
{
    free(e->kind);
    free(e->expected_reason);
    free(e->key);
    free(e->payload);
    memset(e, 0, sizeof(*e));
}

core_err sim_producer_send_corpus(struct sim_producer *p, const struct sim_corpus_entry *e)
{
    static const char *const names[2] = {"gcdp-corpus-kind", "gcdp-expected-reason"};
    const char *values[2] = {e->kind, e->expected_reason ? e->expected_reason : "accepted"};
    return sim_producer_send_hdrs(p, e->key, e->key ? strlen(e->key) : 0, e->payload,
                                  e->payload_len, names, values, 2);
}
