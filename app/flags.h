/* flags.h - the number parsers every subcommand's flags use: one syntax, one set of checks.
 * SPDX-License-Identifier: Apache-2.0
 *
 * A value is accepted only when the whole argument is the number (no trailing text, not
 * empty), it is finite (no "nan", "inf"), it does not overflow, and it lies in the stated
 * range. The caller prints its own message naming the flag and the range on failure.
 *
 * Thread-safety: pure functions; errno is saved and restored.
 */
#ifndef GCDP_APP_FLAGS_H
#define GCDP_APP_FLAGS_H

#include <stddef.h>

/* Decimal unsigned integer <= max as strtoull reads it (leading blanks and '+' pass);
 * refused when empty, starting with '-', or followed by other text. Returns 0 with *out
 * set, or -1 (*out unchanged). */
int app_flag_parse_u64(const char *s, unsigned long long max, unsigned long long *out);

/* Decimal integer in [lo, hi]. Returns 0 with *out set, or -1 (*out unchanged). */
int app_flag_parse_long(const char *s, long lo, long hi, long *out);

/* Finite number (strtod syntax) in [lo, hi]. Returns 0 with *out set, or -1 (*out
 * unchanged). Open bounds are the caller's extra check (e.g. `v > 0`). */
int app_flag_parse_double(const char *s, double lo, double hi, double *out);

/* Comma-separated list of at most cap numbers, each as app_flag_parse_double(lo, hi);
 * at least one. Returns 0 with out[0..*n) set, or -1 (*n = 0). */
int app_flag_parse_doubles(const char *s, double lo, double hi, double *out, size_t cap, size_t *n);

#endif /* GCDP_APP_FLAGS_H */
