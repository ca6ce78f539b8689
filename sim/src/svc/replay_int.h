/* replay_int.h - replay internals shared with the tests (stage-private). */
#ifndef SIM_SVC_REPLAY_INT_H
#define SIM_SVC_REPLAY_INT_H

#include <stddef.h>

#include "core/err.h"
#include "producer.h"
#include "sim/occupancy.h"

/* One line of the bad-input corpus (tests/fixtures/bad_inputs/corpus.jsonl):
 *   {"kind": str, "expected_reason": str|null, "payload": str | "payload_hex": str,
 *    "key"?: str|null, "pad"?: int}
 * payload is sent byte for byte (its JSON string decoded; payload_hex for bytes that are
 * not UTF-8). "pad": N replaces the first "@PAD@" in the payload with N 'x' bytes (so an
 * oversize message need not be stored). "key": absent = the payload's "device" when it is
 * a JSON object with a string device, else "corpus"; null = no key at all.
 * expected_reason null marks a set-up message that must be accepted (e.g. the first copy
 * of a duplicate). */
struct sim_corpus_entry {
    char *kind;            /* new */
    char *expected_reason; /* new, or NULL */
    char *key;             /* new, or NULL for no key */
    char *payload;         /* new; payload_len bytes + NUL */
    size_t payload_len;
};

#define SIM_CORPUS_MAX_PAD ((size_t)2 * 1024 * 1024)

/* Parse one corpus line. e is filled with new strings (sim_corpus_entry_cleanup) on
 * CORE_OK only. CORE_EPARSE / CORE_ETOOBIG with a reason. */
CORE_MUST_CHECK core_err sim_corpus_entry_parse(const char *line, size_t n,
                                                struct sim_corpus_entry *e, char *errbuf,
                                                size_t errbuf_size);
void sim_corpus_entry_cleanup(struct sim_corpus_entry *e);

/* Send one corpus entry with headers gcdp-corpus-kind and gcdp-expected-reason. */
CORE_MUST_CHECK core_err sim_producer_send_corpus(struct sim_producer *p,
                                                  const struct sim_corpus_entry *e);

/* Encode an Occupancy row as a gcdp.reading/1 JSON object into buf; returns the length, or
 * 0 if cap is too small. */
size_t sim_occ_row_json(const struct sim_occ_row *row, const char *device, char *buf, size_t cap);

#endif /* SIM_SVC_REPLAY_INT_H */
