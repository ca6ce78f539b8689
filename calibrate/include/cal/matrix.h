/* cal/matrix.h - the calibration matrix: N_cal rows (time steps) x M nodes, optional labels.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Loaders read a public calibration file: a CSV with a header of node names (rows = time
 * steps, every cell a finite number; an optional label column for the classify task), or
 * the UCI Occupancy format (--format occupancy: channels temperature, humidity, light, co2,
 * humidity_ratio; the Occupancy column gives the labels). Missing values are an error: the
 * lagged correlations of Algorithm 1 need aligned complete rows (our choice; see
 * docs/calibrate.md). Values are raw: normalization with fixed public bounds happens in
 * calibration (cal_normalize). cal_matrix_from_arrays builds one from memory (streaming).
 *
 * Row timestamps (needed to charge a private calibration to the privacy ledger, cal/ledger.h):
 * the Occupancy format always reads its "date" column (UTC, as `gcdp replay` does); a CSV
 * gives them in an optional column named by ts_column (not a node), each cell an integer
 * of milliseconds since the epoch or an RFC 3339 date (core_time_parse_text, core/timefmt.h;
 * no zone = UTC). A row without a parseable timestamp is a parse error naming line and column.
 *
 * Thread-safety: a cal_matrix is a plain value; share read-only.
 */
#ifndef CAL_MATRIX_H
#define CAL_MATRIX_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

#define CAL_MAX_ROWS  4000000u    /* N_cal cap */
#define CAL_MAX_CELLS (64u << 20) /* N_cal * M cap (512 MiB of doubles) */
#define CAL_MAX_LINE  (1u << 20)  /* CSV line cap, bytes */

struct cal_matrix {
    size_t n, m;
    double *x;          /* owned, n x m row-major raw values */
    char **names;       /* owned, m node names */
    int *labels;        /* owned, n class ids in [0, n_classes), or NULL */
    size_t n_classes;   /* 0 when labels == NULL */
    char **class_names; /* owned, n_classes label strings as they appeared, or NULL */
    int64_t *ts;        /* owned, n row timestamps (ms since the epoch, UTC), or NULL */
};

enum cal_format { CAL_FORMAT_CSV = 0, CAL_FORMAT_OCCUPANCY = 1 };

/* Load a calibration file ("-": read standard input, e.g. a pipe).
 *   label_column  CSV only: name of the label column (NULL or not in the header: no
 *                 labels); labels are arbitrary strings mapped to ids in order of first
 *                 appearance (at most 64 classes).
 *   max_rows      cap (<= CAL_MAX_ROWS); more rows -> CORE_ETOOBIG.
 *   out           on CORE_OK a new matrix; caller frees with cal_matrix_free().
 * Returns CORE_OK, CORE_EIO, CORE_EPARSE (message names the line and column),
 * CORE_ETOOBIG, CORE_EINVAL. */
CORE_MUST_CHECK core_err cal_matrix_load(const char *path, enum cal_format fmt,
                                         const char *label_column, size_t max_rows,
                                         struct cal_matrix **out, char *errbuf, size_t errbuf_size);

/* As cal_matrix_load, and for CAL_FORMAT_CSV the timestamp column ts_column (NULL, or a
 * name not in the header: no timestamps; the column is never a node). The Occupancy format
 * reads its "date" column whatever ts_column says. */
CORE_MUST_CHECK core_err cal_matrix_load_ts(const char *path, enum cal_format fmt,
                                            const char *label_column, const char *ts_column,
                                            size_t max_rows, struct cal_matrix **out, char *errbuf,
                                            size_t errbuf_size);

/* Copy arrays into a new matrix (x: n x m row-major; labels may be NULL). */
CORE_MUST_CHECK core_err cal_matrix_from_arrays(size_t n, size_t m, const double *x,
                                                const char *const *names, const int *labels,
                                                size_t n_classes, struct cal_matrix **out);

/* Attach a copy of n row timestamps (ms since the epoch) to mx (replacing any). */
void cal_matrix_set_ts(struct cal_matrix *mx, const int64_t *ts);

void cal_matrix_free(struct cal_matrix *mx); /* NULL-safe */

#endif /* CAL_MATRIX_H */
