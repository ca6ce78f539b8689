/* lrn/csvio.h - participant data and adjacency matrices as CSV files.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Format: one sample per line, comma-separated finite decimal numbers, all lines with the
 * same number of fields; an optional first header line (detected when its first field is
 * not a number) naming the columns; blank lines are not allowed inside the data. Every
 * error message names the file and the 1-based line (and field) at fault.
 * Thread-safety: reentrant (no global state); lrn_csv_read_all() uses the pool it is given.
 */
#ifndef LRN_CSVIO_H
#define LRN_CSVIO_H

#include <stddef.h>

#include "core/err.h"

#define LRN_CSV_MAX_D     4096      /* columns */
#define LRN_CSV_MAX_ROWS  20000000  /* data rows */
#define LRN_CSV_MAX_CELLS 400000000 /* rows * columns (3.2 GB of doubles) */
#define LRN_CSV_MAX_LINE  (1 << 20) /* bytes per line */

/* A dense n x d matrix read from a CSV file. */
struct lrn_csv {
    size_t n, d;
    double *x;    /* n*d row-major values */
    char **names; /* d column names (from the header, else "x0".."x{d-1}") */
    int has_header;
};

/* Read path.
 *   expect_d  0: any width; else the file must have exactly this many columns.
 *   min_rows  minimum number of data rows (error "too few rows" below it).
 *   out       on CORE_OK a new object; caller frees with lrn_csv_free().
 *   eb        receives "path:line: reason" on failure (may be NULL).
 * Returns CORE_OK, CORE_EIO (cannot open/read), CORE_EPARSE (ragged row, non-number,
 * NaN/Inf, empty file, header width mismatch), CORE_ETOOBIG (a cap above), CORE_EINVAL
 * (width differs from expect_d, too few rows). */
CORE_MUST_CHECK core_err lrn_csv_read(const char *path, size_t expect_d, size_t min_rows,
                                      struct lrn_csv **out, char *eb, size_t ebn);

struct core_pool;

/* Read n files as lrn_csv_read(paths[i], i ? d of file 0 : 0, min_rows, ...) in order
 * would, the files spread over pool's threads (NULL: one after another).
 *   out  n slots; on CORE_OK each a new object (free each with lrn_csv_free()); on failure
 *        all NULL.
 *   eb   on failure the message of the first file (in order) that fails, as the
 *        sequential loop would give it.
 * Returns what lrn_csv_read returns for that file. */
CORE_MUST_CHECK core_err lrn_csv_read_all(const char *const *paths, size_t n, size_t min_rows,
                                          struct core_pool *pool, struct lrn_csv **out, char *eb,
                                          size_t ebn);

/* NULL is a no-op. */
void lrn_csv_free(struct lrn_csv *csv);

/* Write an n x d matrix with "%.17g" (round-trips exactly); names (borrowed, may be NULL)
 * becomes the header line when non-NULL.
 * Returns CORE_OK or CORE_EIO (message in eb). */
CORE_MUST_CHECK core_err lrn_csv_write(const char *path, const double *x, size_t n, size_t d,
                                       const char *const *names, char *eb, size_t ebn);

#endif /* LRN_CSVIO_H */
