/* svc/parse_batch.h - window records read in one loop turn, parsed together on the
 * release.threads parse workers before they are released one by one in the order read
 * (private to release: the service's use of the second core).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Parsing a gcdp.window/2 record (rel_window_from_json: jansson's tree, then the provenance
 * checks) is a pure function of the record and θ and is most of the service's CPU; releasing
 * (ledger, noise, output) must stay sequential and in input order. So the service collects
 * the records of a loop turn here (copies: librdkafka's message dies after its callback),
 * parses them with nthreads threads (the calling one included), and then releases each
 * parsed window in order exactly as if it had been parsed on arrival: the release order,
 * the ledger's at-most-once decisions and the output order per partition are unchanged.
 *
 * Thread-safety: one owner thread calls every function; rel__pbatch_parse runs parts of the
 * work on the batch's own worker threads and returns when all of it is done.
 */
#ifndef REL_SVC_PARSE_BATCH_H
#define REL_SVC_PARSE_BATCH_H

#include <stdbool.h>
#include <stddef.h>

#include <librdkafka/rdkafka.h>

#include "cal/theta.h"
#include "core/err.h"
#include "rel/release.h"

#define REL_PBATCH_MAX 16u /* records per batch (each with a window and its parse arena) */

/* One record of the batch: the message's fields (payload and key are the batch's copies;
 * rkt is NULL), and once parsed the window and the parse result. */
struct rel__prec {
    rd_kafka_message_t m;
    struct rel_window w; /* initialized for the batch's θ */
    core_err rc;         /* rel_window_from_json's result (CORE_EPARSE for no payload) */
    char eb[1024];       /* its message when rc != CORE_OK */
};

struct rel__pbatch;

/* New empty batch parsing with nthreads threads (1..REL_MAX_THREADS; nthreads - 1 workers
 * are started, fewer if pthread_create fails). No θ yet: call rel__pbatch_theta before the
 * first add. Free with rel__pbatch_free (joins the workers). */
struct rel__pbatch *rel__pbatch_new(unsigned nthreads);
void rel__pbatch_free(struct rel__pbatch *b); /* NULL-safe */

/* Parse for θ (borrowed; must outlive its use) from now on. The batch must be empty. */
void rel__pbatch_theta(struct rel__pbatch *b, const struct cal_theta *t);

/* Copy m's partition, offset, key and payload in as the next record. Returns true when
 * the batch is now full (parse and empty it before the next add). */
bool rel__pbatch_add(struct rel__pbatch *b, const rd_kafka_message_t *m);

size_t rel__pbatch_count(const struct rel__pbatch *b);

/* Parse every record not parsed yet (rec->rc, rec->eb, rec->w). */
void rel__pbatch_parse(struct rel__pbatch *b);

/* Record i (< count), valid until rel__pbatch_clear or the next add. */
struct rel__prec *rel__pbatch_rec(struct rel__pbatch *b, size_t i);

/* Forget every record (their buffers are kept for reuse). */
void rel__pbatch_clear(struct rel__pbatch *b);

#endif /* REL_SVC_PARSE_BATCH_H */
