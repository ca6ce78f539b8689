/* producer_flags.h - the five producer flags `gcdp simulate` and `gcdp replay` share:
 * --topic, --max-inflight, --flush-timeout, --lag-group, --max-lag-bytes, which fill a
 * struct sim_producer_opts (sim/sim.h). One flag-table fragment with the ranges, so the two
 * commands cannot drift apart (their --help texts, docs/cli/simulate.txt and replay.txt, are
 * checked against these ranges by tests/app/test_help.c).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Use: put APP_PROD_FLAG_ROWS in the command's flag table (flags.h). Values come as decimal
 * integers (the same syntax as the sim.* integer keys); a value out of range is refused with "gcdp
 * <cmd>: invalid value
 * '<v>' for --<flag>: want ..." on stderr.
 */
#ifndef GCDP_APP_PRODUCER_FLAGS_H
#define GCDP_APP_PRODUCER_FLAGS_H

#include <stdio.h>

#include "flags.h"
#include "sim/sim.h"

/* Accepted ranges (inclusive); the same as the sim.max_inflight / sim.max_lag_bytes keys. */
#define APP_PROD_INFLIGHT_MIN 1ULL
#define APP_PROD_INFLIGHT_MAX 10000000ULL
#define APP_PROD_FLUSH_MS_MAX 3600000ULL /* --flush-timeout: 0..1 hour */
#define APP_PROD_MAX_LAG_MIN  65536ULL
#define APP_PROD_MAX_LAG_MAX  5242880ULL /* the embedded broker's 5 MiB retention */

/* The five rows of a command's flag table (flags.h) for its struct sim_producer_opts at
 * byte offset base of its args struct (offsetof(T, prod)). An empty --lag-group means none. */
#define APP_PROD_AT(base, f)                                                                       \
    .offset = (base) + offsetof(struct sim_producer_opts, f),                                      \
    .size = sizeof(((struct sim_producer_opts *)0)->f)
/* clang-format off */
#define APP_PROD_FLAG_ROWS(base)                                                                   \
    {"topic", APP_FLAG_STR, APP_PROD_AT(base, topic)},                                             \
    {"max-inflight", APP_FLAG_UINT, APP_PROD_AT(base, max_inflight),                               \
     .lo = APP_PROD_INFLIGHT_MIN, .hi = APP_PROD_INFLIGHT_MAX},                                    \
    {"flush-timeout", APP_FLAG_INT, APP_PROD_AT(base, flush_timeout_ms),                           \
     .lo = 0, .hi = APP_PROD_FLUSH_MS_MAX},                                                        \
    {"lag-group", APP_FLAG_STR, APP_PROD_AT(base, lag_group), .flags = APP_FLAG_EMPTY_NULL},       \
    {"max-lag-bytes", APP_FLAG_UINT, APP_PROD_AT(base, max_lag_bytes),                             \
     .lo = APP_PROD_MAX_LAG_MIN, .hi = APP_PROD_MAX_LAG_MAX}
/* clang-format on */

#endif /* GCDP_APP_PRODUCER_FLAGS_H */
