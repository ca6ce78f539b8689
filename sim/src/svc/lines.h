/* lines.h - capped line reader (stage-private). A line longer than the cap is an error
 * (CORE_ETOOBIG naming file:line), never silently split or truncated. */
#ifndef SIM_SVC_LINES_H
#define SIM_SVC_LINES_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

struct sim_lines;

/* out: new; free with sim_lines_free(). CORE_EIO "cannot open 'path'". path is copied. */
CORE_MUST_CHECK core_err sim_lines_open(const char *path, size_t max_line, struct sim_lines **out,
                                        char *errbuf, size_t errbuf_size);

/* Next line without its "\n" / "\r\n": *line borrowed until the next call, NUL-terminated
 * at (*line)[*n]. CORE_ENOTFOUND at end of file; CORE_ETOOBIG / CORE_EIO / CORE_EPARSE
 * (NUL byte in the line) with "path:line: reason". */
CORE_MUST_CHECK core_err sim_lines_next(struct sim_lines *l, const char **line, size_t *n,
                                        char *errbuf, size_t errbuf_size);

uint64_t sim_lines_lineno(const struct sim_lines *l);
const char *sim_lines_path(const struct sim_lines *l);
void sim_lines_free(struct sim_lines *l); /* NULL-safe */

#endif /* SIM_SVC_LINES_H */
