/* seeded_rng.c - deterministic / fault-injecting core_rng sources for tests only.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "seeded_rng.h"

#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "core/mem.h"

#define KS_BLOCK 4096

struct ts_rng {
    struct core_rng iface;
    unsigned char key[crypto_stream_chacha20_ietf_KEYBYTES];
    uint32_t counter; /* next 64-byte ChaCha20 block */
    uint8_t ks[KS_BLOCK];
    size_t ks_pos;
    uint8_t *script; /* script mode when non-NULL or script_len == 0 with script mode */
    size_t script_len;
    int script_mode;
    uint64_t served, limit; /* fail once served would exceed limit */
};

static void refill(struct ts_rng *r)
{
    static const unsigned char nonce[crypto_stream_chacha20_ietf_NONCEBYTES] = {0};
    memset(r->ks, 0, sizeof(r->ks));
    crypto_stream_chacha20_ietf_xor_ic(r->ks, r->ks, sizeof(r->ks), nonce, r->counter, r->key);
    r->counter += KS_BLOCK / 64;
    r->ks_pos = 0;
}

static core_err ts_fill(void *self, uint8_t *buf, size_t len)
{
    struct ts_rng *r = self;
    if (r->served + len > r->limit)
        return CORE_ERNG;
    if (r->script_mode) {
        memcpy(buf, r->script + r->served, len);
        r->served += len;
        return CORE_OK;
    }
    r->served += len;
    while (len > 0) {
        if (r->ks_pos == KS_BLOCK)
            refill(r);
        size_t take = KS_BLOCK - r->ks_pos;
        if (take > len)
            take = len;
        memcpy(buf, r->ks + r->ks_pos, take);
        r->ks_pos += take;
        buf += take;
        len -= take;
    }
    return CORE_OK;
}

static struct ts_rng *alloc_rng(void)
{
    struct ts_rng *r = core_xcalloc(1, sizeof(*r));
    if (sodium_init() < 0)
        abort();
    r->iface.fill = ts_fill;
    r->iface.self = r;
    r->limit = UINT64_MAX;
    r->ks_pos = KS_BLOCK;
    return r;
}

struct ts_rng *ts_rng_seeded_new(uint64_t seed)
{
    struct ts_rng *r = alloc_rng();
    static const char label[] = "gcdp public test key v1";
    unsigned char in[sizeof(label) + 8];
    memcpy(in, label, sizeof(label));
    memcpy(in + sizeof(label), &seed, 8);
    crypto_generichash(r->key, sizeof(r->key), in, sizeof(in), NULL, 0);
    return r;
}

struct ts_rng *ts_rng_script_new(const uint8_t *bytes, size_t len)
{
    struct ts_rng *r = alloc_rng();
    r->script_mode = 1;
    r->script = core_xmalloc(len ? len : 1);
    if (len)
        memcpy(r->script, bytes, len);
    r->script_len = len;
    r->limit = len;
    return r;
}

struct ts_rng *ts_rng_failing_new(uint64_t seed, size_t ok_bytes)
{
    struct ts_rng *r = ts_rng_seeded_new(seed);
    r->limit = ok_bytes;
    return r;
}

const struct core_rng *ts_rng_iface(struct ts_rng *r)
{
    return &r->iface;
}

uint64_t ts_rng_served(const struct ts_rng *r)
{
    return r->served;
}

void ts_rng_free(struct ts_rng *r)
{
    if (!r)
        return;
    free(r->script);
    free(r);
}
