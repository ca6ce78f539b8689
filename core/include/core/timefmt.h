/* core/timefmt.h - the one timestamp parser and formatter (RFC 3339 text, epoch ms), used by
 * every stage that reads or writes a time: ingest (readings, window records), sim (replay,
 * encoding, --start), calibrate (CSV timestamp column, θ created_at), the log line.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Thread-safety: pure functions, reentrant; no clock, no locale, no allocation.
 *
 * Accepted text (core_time_parse), decided once for all stages (docs/ingest.md, "Time"):
 *   YYYY-MM-DD{T|t| }HH:MM:SS[.f{1,9}][Z|z|+HH:MM|-HH:MM]
 *   - 'T', 't' and ' ' separate date and time (RFC 3339 §5.6 NOTE allows lower case and,
 *     by agreement, a space); no zone means UTC ("naive" timestamps such as the UCI
 *     Occupancy "date" column); "-00:00" is UTC.
 *   - the fraction has 1 to 9 digits and is truncated (not rounded) to the millisecond.
 *   - offsets: hours 00..23, minutes 00..59.
 *   - second 60 (a leap second) is refused: epoch ms (POSIX time) cannot name it.
 *   - year 0000..9999 (four digits), month and day checked against the proleptic Gregorian
 *     calendar (2015-02-29 refused).
 *   - nothing before or after (no blanks).
 * Epoch milliseconds: where the carrier has types (JSON), an epoch-ms time is a JSON integer
 * and a string is RFC 3339 only, so "1423072260000" in a JSON "ts" is refused. Where the
 * carrier is untyped text (a CSV cell, a command-line flag), core_time_parse_text also takes
 * an optional '-' and 1..16 decimal digits as epoch ms. Either way the instant must lie in
 * [CORE_TIME_MIN_MS, CORE_TIME_MAX_MS) (a four-digit UTC year), so every accepted time can
 * be written back by core_time_format.
 */
#ifndef CORE_TIMEFMT_H
#define CORE_TIMEFMT_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* 0000-01-01T00:00:00Z and 10000-01-01T00:00:00Z in epoch ms. */
#define CORE_TIME_MIN_MS INT64_C(-62167219200000)
#define CORE_TIME_MAX_MS INT64_C(253402300800000)
/* Room for any core_time_format output, with its NUL. */
#define CORE_TIME_TEXT_MAX 32

/* Parse RFC 3339 text (forms above) into epoch ms (UTC).
 *   s, n    the text, n bytes (need not be NUL-terminated); borrowed.
 *   out_ms  written on CORE_OK only.
 * Returns CORE_OK or CORE_EPARSE (bad shape, out-of-range field or instant). */
CORE_MUST_CHECK core_err core_time_parse(const char *s, size_t n, int64_t *out_ms);

/* As core_time_parse, and also integer epoch ms ("-"? digits{1,16}) for untyped text
 * (CSV cells, flags). Returns CORE_OK or CORE_EPARSE. */
CORE_MUST_CHECK core_err core_time_parse_text(const char *s, size_t n, int64_t *out_ms);

/* How core_time_format writes the milliseconds. */
enum core_time_prec {
    CORE_TIME_SEC,  /* "YYYY-MM-DDTHH:MM:SSZ" (milliseconds dropped, floor) */
    CORE_TIME_MS,   /* "YYYY-MM-DDTHH:MM:SS.mmmZ" */
    CORE_TIME_AUTO, /* ".mmm" only when the milliseconds are not 0 */
};

/* Write ms (epoch ms) as UTC RFC 3339 text.
 *   out, out_size  caller buffer; always NUL-terminated when out_size > 0 (truncated if too
 *                  small; CORE_TIME_TEXT_MAX is always enough).
 * Returns the length of the full text (as snprintf). Outside [CORE_TIME_MIN_MS,
 * CORE_TIME_MAX_MS) the year is written as a signed number of more or fewer digits (not RFC
 * 3339, but never a wrong date). Hand-written: ingest calls it twice per window. */
size_t core_time_format(int64_t ms, enum core_time_prec prec, char *out, size_t out_size);

/* Days since 1970-01-01 of the proleptic Gregorian date y-m-d (m 1..12, d 1..31), and back
 * (H. Hinnant, "chrono-Compatible Low-Level Date Algorithms"). */
int64_t core_days_from_civil(int64_t y, unsigned m, unsigned d);
void core_civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d);

#endif /* CORE_TIMEFMT_H */
