/* numparse_int.h - core/numparse.c internals shared with its tests. */
#ifndef CORE_NUMPARSE_INT_H
#define CORE_NUMPARSE_INT_H

#include <stdbool.h>

/* The fast path alone: true with *out and *end set when it decided, false when core_strtod
 * hands s to strtod (tests check that the fast path does run on plain spellings). */
bool core__strtod_fast(const char *s, double *out, const char **end);

#endif /* CORE_NUMPARSE_INT_H */
