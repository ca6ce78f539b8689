/* core/numparse.h - decimal text to double, bit-identical to strtod, fast on plain spellings.
 * SPDX-License-Identifier: Apache-2.0
 *
 * core_strtod() is strtod() (C locale) with a fast path: a number spelled
 * [+-]digits[.digits][(e|E)[+-]digits] with at most 19 significant digits whose value is a
 * normal double is converted by the Eisel-Lemire algorithm (D. Lemire, "Number parsing at a
 * gigabyte per second", Software: Practice and Experience 51(8), 2021; the exponent
 * arithmetic of Go's strconv.eiselLemire64), which yields the correctly rounded double or
 * declines. Everything else, and every declined case, goes to strtod itself: leading white
 * space, hex floats, inf/nan, more than 19 significant digits, an "e" without digits, results
 * that overflow or are subnormal, and the rare inputs too close to a rounding boundary.
 * strtod rounds correctly (glibc), so both paths give the same bits; tests/core/
 * test_numparse.c checks that on millions of inputs.
 *
 * Thread-safety: reentrant.
 */
#ifndef CORE_NUMPARSE_H
#define CORE_NUMPARSE_H

/* As strtod(s, end): the value, *end (if end != NULL) after the last byte used, errno
 * ERANGE only from the strtod path (the fast path never sets errno). */
double core_strtod(const char *s, char **end);

#endif /* CORE_NUMPARSE_H */
