/* core/lines.h - the one bounded line reader: every file or stream read line by line (replay
 * and Occupancy files, release records, ledger files, calibration and learner CSVs).
 * SPDX-License-Identifier: Apache-2.0
 *
 * The cap is checked before any allocation: the buffer grows (doubling, from 4 KiB) up to
 * max_line + 2 bytes and never beyond, whatever the input. A line longer than the cap or
 * holding a NUL byte is refused (never split, truncated or cut at the NUL); the reader then
 * skips to the end of that line, so the next call reads the next line (a caller may go on).
 * A line ends at "\n"; one "\r" before it is dropped; the last line may lack "\n"
 * (core_lines_terminated tells).
 *
 * Thread-safety: a struct core_lines is used by one thread at a time.
 */
#ifndef CORE_LINES_H
#define CORE_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/err.h"

struct core_lines;

/* Open path for reading (a file name only; for stdin use core_lines_wrap(stdin, "-", …)).
 *   path      copied; named in every error message.
 *   max_line  longest accepted line in bytes, without its line ending (>= 1).
 *   out       on CORE_OK a new reader; caller frees with core_lines_free().
 * Returns CORE_OK or CORE_EIO (errbuf: "cannot open 'path': reason"). */
CORE_MUST_CHECK core_err core_lines_open(const char *path, size_t max_line, struct core_lines **out,
                                         char *errbuf, size_t errbuf_size);

/* Read from an open stream f (borrowed: core_lines_free does not close it).
 *   name  copied; used in error messages. Returns a new reader (core_xmalloc: never NULL). */
struct core_lines *core_lines_wrap(FILE *f, const char *name, size_t max_line);

/* Next line without its line ending.
 *   line  on CORE_OK, the line, NUL-terminated at (*line)[*n]; the caller may modify it;
 *         valid until the next call or core_lines_free.
 * Returns CORE_OK; CORE_ENOTFOUND at end of input (no text left); CORE_ETOOBIG (longer than
 * max_line) or CORE_EPARSE (NUL byte) with "name:line: reason", the line skipped; CORE_EIO on
 * a read error. */
CORE_MUST_CHECK core_err core_lines_next(struct core_lines *l, char **line, size_t *n, char *errbuf,
                                         size_t errbuf_size);

/* 1-based number of the line last returned or refused (0 before the first). */
uint64_t core_lines_lineno(const struct core_lines *l);

/* Bytes consumed so far, line endings included: the offset of the next line. */
uint64_t core_lines_offset(const struct core_lines *l);

/* Did the line last returned or refused end with "\n"? (false: it was cut by end of file) */
bool core_lines_terminated(const struct core_lines *l);

/* The path or name given at open/wrap (valid until core_lines_free). */
const char *core_lines_path(const struct core_lines *l);

/* Free the reader (closes the file only if core_lines_open opened it). NULL-safe. */
void core_lines_free(struct core_lines *l);

#endif /* CORE_LINES_H */
