/* lines_int.h - core/lines.c internals shared with its tests. */
#ifndef CORE_LINES_INT_H
#define CORE_LINES_INT_H

#include <stddef.h>

#include "core/lines.h"

#define CORE_LINES_CHUNK ((size_t)64 * 1024) /* read(2) size of core_lines_open */

/* core_lines_open() with a chosen read(2) chunk size (>= 1; tests use tiny ones to put
 * line ends, "\r" and the cap on chunk boundaries). */
CORE_MUST_CHECK core_err core__lines_open_chunk(const char *path, size_t max_line, size_t chunk,
                                                struct core_lines **out, char *errbuf,
                                                size_t errbuf_size);

#endif /* CORE_LINES_INT_H */
