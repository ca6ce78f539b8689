/* producer_flags.h - the five producer flags `gcdp simulate` and `gcdp replay` share:
 * --topic, --max-inflight, --flush-timeout, --lag-group, --max-lag-bytes, which fill a
 * struct sim_producer_opts (sim/sim.h). One getopt table fragment, one parser with the
 * range checks, one --help block, so the two commands cannot drift apart.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Use: put APP_PROD_FLAG_OPTIONS in the command's `struct option` table (its own option
 * values must stay below APP_PROD_O_FIRST); in the getopt_long loop hand every value the
 * command does not know to app_prod_flags_apply(); print app_prod_flags_help() in --help.
 * Values come as decimal integers (the same syntax as the sim.* integer keys); a value out
 * of range is refused with "gcdp <cmd>: invalid value '<v>' for --<flag>" on stderr.
 */
#ifndef GCDP_APP_PRODUCER_FLAGS_H
#define GCDP_APP_PRODUCER_FLAGS_H

#include <getopt.h>
#include <stdio.h>

#include "sim/sim.h"

/* Accepted ranges (inclusive); the same as the sim.max_inflight / sim.max_lag_bytes keys. */
#define APP_PROD_INFLIGHT_MIN 1ULL
#define APP_PROD_INFLIGHT_MAX 10000000ULL
#define APP_PROD_FLUSH_MS_MAX 3600000ULL /* --flush-timeout: 0..1 hour */
#define APP_PROD_MAX_LAG_MIN  65536ULL
#define APP_PROD_MAX_LAG_MAX  5242880ULL /* the embedded broker's 5 MiB retention */

/* getopt_long values of the five flags (above every command's own values). */
enum {
    APP_PROD_O_FIRST = 1024,
    APP_PROD_O_TOPIC = APP_PROD_O_FIRST,
    APP_PROD_O_INFLIGHT,
    APP_PROD_O_FLUSH,
    APP_PROD_O_LAG_GROUP,
    APP_PROD_O_MAX_LAG
};

/* The five `struct option` rows, for a command's long-option table. */
/* clang-format off */
#define APP_PROD_FLAG_OPTIONS                                                                      \
    {"topic", required_argument, NULL, APP_PROD_O_TOPIC},                                          \
    {"max-inflight", required_argument, NULL, APP_PROD_O_INFLIGHT},                                \
    {"flush-timeout", required_argument, NULL, APP_PROD_O_FLUSH},                                  \
    {"lag-group", required_argument, NULL, APP_PROD_O_LAG_GROUP},                                  \
    {"max-lag-bytes", required_argument, NULL, APP_PROD_O_MAX_LAG}
/* clang-format on */

/* Apply getopt_long's value c with its argument arg (borrowed: p->topic and p->lag_group
 * point into it; an empty --lag-group means none) to p.
 *   cmd  the subcommand name for the message ("simulate").
 * Returns 0 when applied; -1 when arg is not a decimal integer in the flag's range (the
 * message naming the flag is printed on stderr; p is unchanged); 1 when c is not one of
 * the five flags (nothing done: the caller handles it). */
int app_prod_flags_apply(const char *cmd, int c, const char *arg, struct sim_producer_opts *p);

/* Print the five flags' --help lines to f, with their ranges and the defaults of
 * max_inflight, flush_timeout_ms and max_lag_bytes in d (pass the command's own defaults,
 * e.g. &opts.prod after sim_options_default; no default topic or lag group is shown: the
 * topics.raw and sim.lag_group keys give them). The flag names
 * sit in a column `width` characters wide after a two-space indent, the command's own. */
void app_prod_flags_help(FILE *f, int width, const struct sim_producer_opts *d);

#endif /* GCDP_APP_PRODUCER_FLAGS_H */
