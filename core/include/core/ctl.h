/* core/ctl.h - signed operator commands (gcdp.control/1): keys, signer, verifier.
 * SPDX-License-Identifier: Apache-2.0
 *
 * A command record on topics.control is one JSON object, every member required, no other:
 *   {"schema":"gcdp.control/1","cmd":"recalibrate|pause|resume|status",
 *    "target":"<service name or \"all\">","reason":"<free text>","issued_at":<epoch ms>,
 *    "nonce":"<32 hex: 16 random bytes>","key_id":"<16 hex>","sig":"<64 hex>"}
 * sig = HMAC-SHA-256 (libsodium crypto_auth_hmacsha256) under the shared key over the
 * canonical string rebuilt from the PARSED fields, never over the received bytes:
 *   "gcdp.control/1\n" cmd "\n" target "\n" reason "\n" issued_at "\n" nonce "\n" key_id
 * (issued_at in decimal without sign or leading zeros). target and reason may hold no
 * control character (U+0000..U+001F, U+007F), so the '\n'-joined encoding is unambiguous.
 * key_id = the first 8 bytes of SHA-256(key), in hex: it names the key, reveals nothing.
 *
 * Commands are authenticated, not encrypted: anyone who reads the topic reads them.
 *
 * Pure module: no Kafka, no clock (time comes in as epoch milliseconds), no logging. The
 * only side effects are the key files (core_ctl_key_load / core_ctl_keygen) and the OS
 * random source (nonces, keys). Error texts name paths and reasons, never key bytes or a
 * full signature.
 *
 * Thread-safety: a core_ctl_key is immutable after load and may be shared read-only; a
 * core_ctl_verifier is used by one thread.
 */
#ifndef CORE_CTL_H
#define CORE_CTL_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

#define CORE_CTL_SCHEMA        "gcdp.control/1"
#define CORE_CTL_MAX_RECORD    4096 /* bytes of one record; larger is malformed */
#define CORE_CTL_MAX_TARGET    128  /* bytes of target */
#define CORE_CTL_MAX_REASON    1024 /* bytes of reason */
#define CORE_CTL_KEY_BYTES     32
#define CORE_CTL_NONCE_BYTES   16
#define CORE_CTL_KEY_ID_BYTES  8
#define CORE_CTL_TARGET_ALL    "all"
#define CORE_CTL_DEFAULT_CACHE 4096 /* remembered nonces (replay protection) */

enum core_ctl_cmd_kind {
    CORE_CTL_RECALIBRATE,
    CORE_CTL_PAUSE,
    CORE_CTL_RESUME,
    CORE_CTL_STATUS,
};

/* One parsed (and, from the verifier, authenticated) command. Value type. */
struct core_ctl_cmd {
    enum core_ctl_cmd_kind cmd;
    char target[CORE_CTL_MAX_TARGET + 1];
    char reason[CORE_CTL_MAX_REASON + 1];
    int64_t issued_at_ms;                       /* epoch ms, >= 0 */
    char nonce[2 * CORE_CTL_NONCE_BYTES + 1];   /* lower-case hex */
    char key_id[2 * CORE_CTL_KEY_ID_BYTES + 1]; /* lower-case hex */
};

/* Verdicts: CORE_CTL_ACCEPTED, then one stable reason per rejection (metrics label, log
 * word, docs/operations.md "Control topic"). */
#define CORE_CTL_VERDICT_MAP(X)                                                                    \
    X(CORE_CTL_ACCEPTED, "accepted")                                                               \
    X(CORE_CTL_MALFORMED, "malformed")                                                             \
    X(CORE_CTL_UNSIGNED, "unsigned")                                                               \
    X(CORE_CTL_UNKNOWN_KEY, "unknown_key")                                                         \
    X(CORE_CTL_BAD_SIGNATURE, "bad_signature")                                                     \
    X(CORE_CTL_STALE, "stale")                                                                     \
    X(CORE_CTL_FUTURE, "future")                                                                   \
    X(CORE_CTL_REPLAYED, "replayed")                                                               \
    X(CORE_CTL_WRONG_TARGET, "wrong_target")                                                       \
    X(CORE_CTL_REPLAY_CACHE_FULL, "replay_cache_full")

enum core_ctl_verdict {
#define X(name, text) name,
    CORE_CTL_VERDICT_MAP(X)
#undef X
        CORE_CTL_NVERDICTS
};

/* "accepted", "malformed", ...; "?" out of range. Static. */
const char *core_ctl_verdict_name(enum core_ctl_verdict v);

/* "recalibrate", "pause", "resume", "status". Static; "?" out of range. */
const char *core_ctl_cmd_name(enum core_ctl_cmd_kind k);

/* Parse a command name. Returns CORE_OK or CORE_EINVAL. */
CORE_MUST_CHECK core_err core_ctl_cmd_parse(const char *name, enum core_ctl_cmd_kind *out);

/* Check a target or reason text as the wire format requires: valid UTF-8 is jansson's
 * business; here at most max bytes, no control character, and for a target at least one
 * byte. Returns CORE_OK or CORE_EINVAL (errbuf says why, without echoing the text). */
CORE_MUST_CHECK core_err core_ctl_text_check(const char *text, size_t max, int nonempty,
                                             char *errbuf, size_t errbuf_size);

/* ------------------------------------------------------------------ keys */

struct core_ctl_key; /* 32 secret bytes + key id; wiped (sodium_memzero) on free */

/* Load a key file: exactly 64 hex digits, optionally followed by one '\n'; a regular file
 * that neither group nor others may read, write or execute (mode & 077 == 0).
 *   out  on CORE_OK a new key; free with core_ctl_key_free().
 * Returns CORE_OK, CORE_EIO (cannot open/read/stat), CORE_ECONFIG (mode too open, not a
 * regular file, wrong length, not hex); errbuf names the path and the reason. */
CORE_MUST_CHECK core_err core_ctl_key_load(const char *path, struct core_ctl_key **out,
                                           char *errbuf, size_t errbuf_size);

/* A key from raw bytes (tests, tools). bytes borrowed. Returns CORE_OK or CORE_ERNG
 * (libsodium could not initialize). */
CORE_MUST_CHECK core_err core_ctl_key_from_bytes(const uint8_t bytes[CORE_CTL_KEY_BYTES],
                                                 struct core_ctl_key **out);

void core_ctl_key_free(struct core_ctl_key *k); /* wipes; NULL-safe */

/* The key's id, 16 lower-case hex digits; valid while k lives. */
const char *core_ctl_key_id(const struct core_ctl_key *k);

/* Write a new random key file at path: created with O_CREAT|O_EXCL, mode 0600, fsync'd;
 * an existing file is never overwritten.
 *   key_id_out  optional, 17 bytes: the new key's id.
 * Returns CORE_OK, CORE_EEXIST (path exists), CORE_EIO, CORE_ERNG. */
CORE_MUST_CHECK core_err core_ctl_keygen(const char *path, char key_id_out[17], char *errbuf,
                                         size_t errbuf_size);

/* ------------------------------------------------------------------ signer */

/* Build the signed record of cmd under k. cmd->nonce must hold 32 hex digits (the caller's
 * choice: tests craft replays with it); cmd->key_id is ignored (k's id is written).
 *   out  on CORE_OK a new NUL-terminated compact JSON text; caller frees with free().
 * Returns CORE_OK, CORE_EINVAL (target/reason/nonce/issued_at not encodable; errbuf). */
CORE_MUST_CHECK core_err core_ctl_encode(const struct core_ctl_key *k,
                                         const struct core_ctl_cmd *cmd, char **out, char *errbuf,
                                         size_t errbuf_size);

/* Sign a new command: a fresh nonce from the OS CSPRNG (randombytes_buf), issued_at = now.
 *   target  NULL means "all"; reason NULL means "".
 *   cmd_out optional: the command as signed (its nonce is what status replies quote).
 *   out     as core_ctl_encode.
 * Returns as core_ctl_encode. */
CORE_MUST_CHECK core_err core_ctl_sign(const struct core_ctl_key *k, enum core_ctl_cmd_kind kind,
                                       const char *target, const char *reason, int64_t now_ms,
                                       struct core_ctl_cmd *cmd_out, char **out, char *errbuf,
                                       size_t errbuf_size);

/* ------------------------------------------------------------------ verifier */

struct core_ctl_verifier;

struct core_ctl_verifier_opts {
    struct core_ctl_key *key;      /* current key; required */
    struct core_ctl_key *prev_key; /* optional: the previous key, accepted during a rotation */
    int64_t max_skew_ms;           /* > 0: |now - issued_at| allowed */
    const char *target;            /* this service's name (copied); commands for it or "all" */
    size_t cache_cap;              /* remembered nonces; 0 = CORE_CTL_DEFAULT_CACHE */
};

/* New verifier. Takes ownership of opts->key and opts->prev_key ALWAYS (freed here on
 * failure too).
 * Returns CORE_OK, CORE_EINVAL (no key, skew <= 0, target not a valid target text, both
 * keys with one id; errbuf says which). */
CORE_MUST_CHECK core_err core_ctl_verifier_new(const struct core_ctl_verifier_opts *opts,
                                               struct core_ctl_verifier **out, char *errbuf,
                                               size_t errbuf_size);
void core_ctl_verifier_free(struct core_ctl_verifier *v); /* wipes the keys; NULL-safe */

/* Judge one record (the raw value bytes, not NUL-terminated) at time now_ms (epoch ms).
 * Checks, in order: size (<= CORE_CTL_MAX_RECORD), JSON (valid UTF-8, no duplicate member,
 * an object), sig and key_id present (else unsigned), every member and type (else
 * malformed), key_id known (else unknown_key), HMAC (constant-time compare; else
 * bad_signature), issued_at within [now - skew, now + skew] (else stale / future), target
 * = ours or "all" (else wrong_target), nonce not seen (else replayed; remembered until
 * issued_at + skew has passed; when the cache is full of live nonces: replay_cache_full,
 * fail closed). Only an authenticated command reaches the nonce cache.
 *   out     on CORE_CTL_ACCEPTED the command; otherwise unspecified. May be NULL.
 *   detail  optional: a short reason text for logs (no key, no signature, no reason text).
 * Every verdict is counted (core_ctl_verifier_count). */
enum core_ctl_verdict core_ctl_verify(struct core_ctl_verifier *v, const void *buf, size_t len,
                                      int64_t now_ms, struct core_ctl_cmd *out, char *detail,
                                      size_t detail_size);

/* Records judged with verdict v so far. */
uint64_t core_ctl_verifier_count(const struct core_ctl_verifier *v, enum core_ctl_verdict verdict);

/* Nonces currently remembered. */
size_t core_ctl_verifier_cached(const struct core_ctl_verifier *v);

#endif /* CORE_CTL_H */
