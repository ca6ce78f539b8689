/* dp_ledger_idx.c - the ledger store's in-memory index of live release ids (see
 * dp_ledger_idx.h).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Why in memory: keyed by id in the store, every release probed, inserted and (compaction)
 * deleted at a random place of a B-tree larger than SQLite's page cache, which was most of
 * the store's cost at steady state (ops/measure/ledger_index.c). Here those are O(1) in a
 * table of 16 bytes per slot (load <= 3/4); the store's replay table is keyed by time.
 * Why a 32-bit tag: the home slot is the tag's low bits (a grow and a deletion must find an
 * entry's home without its id), so two entries of one home differ in the tag's other bits
 * with probability 1 - 2^-(32 - log2 cap): at a million slots, about one absent id in 6,000
 * costs the caller one row read. Never a wrong answer: the caller confirms by the row's id.
 */
#include "dp_ledger_idx.h"

#include <stdlib.h>
#include <string.h>

#include "core/mem.h"

static unsigned test_bits; /* 0: full hashes (lidx__test_hash_bits) */

void lidx__test_hash_bits(unsigned bits)
{
    test_bits = bits < 32 ? bits : 0;
}

void lidx_init(struct lidx *x, size_t expect)
{
    x->cap = 64;
    while (x->cap / 4 * 3 < expect)
        x->cap *= 2;
    x->n = 0;
    x->e = core_xcalloc(x->cap, sizeof(*x->e));
    crypto_shorthash_keygen(x->key);
}

void lidx_cleanup(struct lidx *x)
{
    free(x->e);
    x->e = NULL;
    x->cap = x->n = 0;
}

uint64_t lidx_hash(const struct lidx *x, const char *id)
{
    unsigned char h[crypto_shorthash_BYTES];
    uint64_t v;
    crypto_shorthash(h, (const unsigned char *)id, strlen(id), x->key);
    memcpy(&v, h, sizeof(v));
    return test_bits ? v & ((UINT64_C(1) << test_bits) - 1) : v;
}

static void place(struct lidx_ent *e, size_t cap, struct lidx_ent ent)
{
    size_t i = ent.tag & (cap - 1);
    while (e[i].len)
        i = (i + 1) & (cap - 1);
    e[i] = ent;
}

static void grow(struct lidx *x)
{
    size_t cap = x->cap * 2;
    struct lidx_ent *e = core_xcalloc(cap, sizeof(*e));
    for (size_t i = 0; i < x->cap; i++)
        if (x->e[i].len)
            place(e, cap, x->e[i]);
    free(x->e);
    x->e = e;
    x->cap = cap;
}

void lidx_put(struct lidx *x, uint64_t h, uint64_t off, uint32_t len)
{
    if ((x->n + 1) * 4 > x->cap * 3)
        grow(x);
    place(x->e, x->cap, (struct lidx_ent){(uint32_t)h, len, off});
    x->n++;
}

const struct lidx_ent *lidx_next(const struct lidx *x, uint64_t h, size_t *pos)
{
    size_t mask = x->cap - 1;
    size_t i = *pos == SIZE_MAX ? (size_t)(uint32_t)h & mask : (*pos + 1) & mask;
    for (; x->e[i].len; i = (i + 1) & mask)
        if (x->e[i].tag == (uint32_t)h) {
            *pos = i;
            return &x->e[i];
        }
    return NULL; /* the table is never full (load <= 3/4): the walk ends at an empty slot */
}

int lidx_del(struct lidx *x, uint64_t h, uint64_t off)
{
    size_t mask = x->cap - 1, i = (size_t)(uint32_t)h & mask, j;
    while (x->e[i].len && !(x->e[i].tag == (uint32_t)h && x->e[i].off == off))
        i = (i + 1) & mask;
    if (!x->e[i].len)
        return 0;
    for (j = i;;) { /* backward shift: every probe chain stays intact, no tombstones */
        j = (j + 1) & mask;
        if (!x->e[j].len)
            break;
        size_t k = x->e[j].tag & mask; /* home of the entry at j */
        int stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (!stays) {
            x->e[i] = x->e[j];
            i = j;
        }
    }
    x->e[i] = (struct lidx_ent){0, 0, 0};
    x->n--;
    return 1;
}
