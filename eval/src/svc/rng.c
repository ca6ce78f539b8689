/* rng.c - a seeded ChaCha20 (libsodium) core_rng for reproducible evaluation noise draws.
 * It is a CSPRNG stream (DESIGN §7.6: noise only from a CSPRNG); production releases use
 * core_rng_os(). The seed of every draw is written beside its outputs (draws.csv). */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "core/mem.h"
#include "eval/eval.h"

#define BLOCK 4096

struct eval_rng {
    struct core_rng iface;
    unsigned char key[crypto_stream_chacha20_ietf_KEYBYTES];
    uint32_t counter;
    uint8_t ks[BLOCK];
    size_t pos;
};

static core_err fill(void *self, uint8_t *buf, size_t len)
{
    static const unsigned char nonce[crypto_stream_chacha20_ietf_NONCEBYTES] = {0};
    struct eval_rng *r = self;
    while (len > 0) {
        size_t take;
        if (r->pos == BLOCK) {
            if (r->counter > UINT32_MAX - BLOCK / 64)
                return CORE_ERNG; /* stream exhausted (2^38 bytes) */
            memset(r->ks, 0, sizeof(r->ks));
            crypto_stream_chacha20_ietf_xor_ic(r->ks, r->ks, sizeof(r->ks), nonce, r->counter,
                                               r->key);
            r->counter += BLOCK / 64;
            r->pos = 0;
        }
        take = BLOCK - r->pos < len ? BLOCK - r->pos : len;
        memcpy(buf, r->ks + r->pos, take);
        r->pos += take;
        buf += take;
        len -= take;
    }
    return CORE_OK;
}

struct eval_rng *eval_rng_new(uint64_t seed)
{
    struct eval_rng *r = core_xcalloc(1, sizeof(*r));
    unsigned char s8[8];
    if (sodium_init() < 0) {
        free(r);
        return NULL;
    }
    for (int i = 0; i < 8; i++)
        s8[i] = (unsigned char)(seed >> (8 * i));
    crypto_generichash(r->key, sizeof(r->key), s8, sizeof(s8), NULL, 0);
    r->pos = BLOCK;
    r->iface.fill = fill;
    r->iface.self = r;
    return r;
}

const struct core_rng *eval_rng_iface(struct eval_rng *r)
{
    return &r->iface;
}

void eval_rng_free(struct eval_rng *r)
{
    if (r)
        sodium_memzero(r, sizeof(*r));
    free(r);
}
