/* dp_ledger_idx.h - core-internal: the ledger store's in-memory index of its live release ids
 * (docs/operations.md, "Ledger store").
 * SPDX-License-Identifier: Apache-2.0
 *
 * An open-addressing table (linear probing, backward-shift deletion) of 16-byte entries: a
 * 32-bit tag (the low half of a keyed SipHash of the id: libsodium crypto_shorthash, a random key
 * per table, as ids come from devices and must not flood it) -> where the id's row is in the audit
 * log (offset, length). The id itself is not kept: a tag match is a CANDIDATE, which the
 * caller confirms by reading the row at that place and comparing its id. So a collision costs
 * one read and can never make a wrong decision; a miss is certain (every stored id is in the
 * table).
 * Ownership: struct lidx owns its array. Thread-safety: one thread at a time.
 */
#ifndef CORE_DP_LEDGER_IDX_H
#define CORE_DP_LEDGER_IDX_H

#include <stddef.h>
#include <stdint.h>

#include <sodium.h>

struct lidx_ent {
    uint32_t tag; /* low 32 bits of the id's hash; its low bits are also the home slot */
    uint32_t len; /* the row's length in the audit log, newline included; 0: empty slot */
    uint64_t off; /* the row's offset in the audit log */
};

struct lidx {
    struct lidx_ent *e;
    size_t cap, n; /* cap: a power of two */
    unsigned char key[crypto_shorthash_KEYBYTES];
};

/* Empty table with a fresh random key, room for about expect ids (0: small). */
void lidx_init(struct lidx *x, size_t expect);
void lidx_cleanup(struct lidx *x);

/* The id's keyed hash (the tag and the home slot come from it). */
uint64_t lidx_hash(const struct lidx *x, const char *id);

/* Add an entry (duplicates of h are allowed: the caller checked the id is absent). len > 0. */
void lidx_put(struct lidx *x, uint64_t h, uint64_t off, uint32_t len);

/* Candidates for h, one per call: *pos starts at SIZE_MAX; returns the next entry whose tag
 * matches h, NULL when there are no more. The table must not change during a walk. */
const struct lidx_ent *lidx_next(const struct lidx *x, uint64_t h, size_t *pos);

/* Remove the entry (h, off); 1 when found. */
int lidx_del(struct lidx *x, uint64_t h, uint64_t off);

/* Test hook: keep only the low bits of every hash (0: all 64), so that ids collide on purpose
 * (tests/core/test_dp_ledger_store.c). Applies to tables hashing after the call. */
void lidx__test_hash_bits(unsigned bits);

#endif /* CORE_DP_LEDGER_IDX_H */
