/* sim/occupancy.h - UCI Occupancy Detection CSV (Candanedo & Feldheim 2016) reader.
 * SPDX-License-Identifier: Apache-2.0
 *
 * The files are R write.csv output: a header of 7 quoted names
 *   "date","Temperature","Humidity","Light","CO2","HumidityRatio","Occupancy"
 * and data rows of 8 fields, the first being the unnamed quoted row id:
 *   "1","2015-02-04 17:51:00",23.18,27.272,426,721.25,0.00479298817650529,1
 * The date is quoted in datatraining/datatest and unquoted in datatest2; both are accepted
 * (and quotes around any field). Dates are taken as UTC. LF or CRLF line ends.
 * Numeric fields must be finite numbers; their original text is kept so a replay sends
 * exactly the recorded digits.
 *
 * Thread-safety: the line parsers are pure and reentrant; a reader is one thread's.
 */
#ifndef SIM_OCCUPANCY_H
#define SIM_OCCUPANCY_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

#define SIM_OCC_NVALUES   5 /* Temperature, Humidity, Light, CO2, HumidityRatio */
#define SIM_OCC_MAX_LINE  1024
#define SIM_OCC_MAX_FIELD 64

/* Reading channel names used for the five values, in file order. */
extern const char *const sim_occ_channels[SIM_OCC_NVALUES];

struct sim_occ_row {
    uint64_t id;   /* the R row name */
    int64_t ts_ms; /* date as UTC epoch ms */
    double value[SIM_OCC_NVALUES];
    char text[SIM_OCC_NVALUES][SIM_OCC_MAX_FIELD]; /* each value's text, valid JSON number */
    int occupancy;                                 /* 0 or 1 (not sent by replay) */
    int date_quoted;                               /* 1 if the date field was quoted */
};

/* Check the header line (n bytes, line end stripped or not). CORE_EPARSE with a reason. */
CORE_MUST_CHECK core_err sim_occ_parse_header(const char *line, size_t n, char *errbuf,
                                              size_t errbuf_size);

/* Parse one data line into row. CORE_EPARSE with a reason naming the field. */
CORE_MUST_CHECK core_err sim_occ_parse_row(const char *line, size_t n, struct sim_occ_row *row,
                                           char *errbuf, size_t errbuf_size);

struct sim_occ_reader;

/* Open path and check its header.
 *   out  new reader; close with sim_occ_reader_free().
 * CORE_EIO (cannot open), CORE_EPARSE ("path:1: reason"). */
CORE_MUST_CHECK core_err sim_occ_reader_open(const char *path, struct sim_occ_reader **out,
                                             char *errbuf, size_t errbuf_size);

/* Next data row. Returns CORE_OK, CORE_ENOTFOUND at end of file, CORE_EPARSE /
 * CORE_ETOOBIG / CORE_EIO with "path:line: reason" in errbuf. Blank lines are errors. */
CORE_MUST_CHECK core_err sim_occ_reader_next(struct sim_occ_reader *r, struct sim_occ_row *row,
                                             char *errbuf, size_t errbuf_size);

/* Line number of the last line read (1 = header). */
uint64_t sim_occ_reader_line(const struct sim_occ_reader *r);

void sim_occ_reader_free(struct sim_occ_reader *r); /* NULL-safe */

#endif /* SIM_OCCUPANCY_H */
