/* core/ctl_client.h - the operator's side of the control topic (`gcdp ctl`): a short-lived
 * synchronous client that publishes one signed command to topics.control, waits for the
 * broker's acknowledgement and (optionally) collects the gcdp.status/1 replies quoting it.
 * SPDX-License-Identifier: Apache-2.0
 *
 * The replies' consumer is assigned every partition of topics.status at its high watermark
 * BEFORE the command is produced, so no reply can slip past between the two; it never joins
 * a group and never commits.
 * Thread-safety: a client is used by one thread.
 */
#ifndef CORE_CTL_CLIENT_H
#define CORE_CTL_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/ctl.h"

struct core_ctl_client;

/* A producer for topics.control (message.timeout.ms 15 s) and, with replies, a consumer
 * assigned at the end of topics.status (made first).
 *   out  on CORE_OK a new client; free with core_ctl_client_free().
 * Returns CORE_OK, or the client's or the metadata's error with eb saying why. */
CORE_MUST_CHECK core_err core_ctl_client_new(const struct core_config *cfg, bool replies,
                                             struct core_ctl_client **out, char *eb, size_t ebn);

void core_ctl_client_free(struct core_ctl_client *cl); /* NULL-safe; closes the consumer */

/* Produce text (the encoded command c, keyed by its nonce) to topics.control and wait for its
 * delivery report. Returns CORE_OK with *partition and *offset where it landed, or
 * CORE_EKAFKA with eb "<cmd> was NOT acknowledged by the broker (<topic>): <why>". */
CORE_MUST_CHECK core_err core_ctl_client_publish(struct core_ctl_client *cl,
                                                 const struct core_ctl_cmd *c, const char *text,
                                                 int32_t *partition, int64_t *offset, char *eb,
                                                 size_t ebn);

/* Each reply (a gcdp.status/1 object whose in_reply_to is nonce), as it arrives. */
typedef void core_ctl_reply_fn(void *arg, const char *json, size_t len);

/* Collect replies quoting nonce until wait_s seconds passed or count (> 0) replies came;
 * the client must have been made with replies. Returns the number of replies. */
long core_ctl_client_replies(struct core_ctl_client *cl, const char *nonce, long wait_s, long count,
                             core_ctl_reply_fn *fn, void *arg);

#endif /* CORE_CTL_CLIENT_H */
