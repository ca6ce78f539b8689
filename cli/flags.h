/* flags.h - the subcommands' flags: each command declares its flags once, in a table of
 * struct app_flag rows, and app_flags_parse() turns argv into the command's args struct
 * with the number parsers below: one syntax, one set of checks, one message shape.
 * SPDX-License-Identifier: Apache-2.0
 *
 * A number is accepted only when the whole argument is the number (no trailing text, not
 * empty), it is finite (no "nan", "inf"), it does not overflow, and it lies in the stated
 * range. A refused value prints
 *   gcdp <cmd>: invalid value '<arg>' for --<flag>: want <what> in <range>
 * and every parse error ends with "(gcdp <cmd> --help lists the options)"; exit 2 follows.
 *
 * Thread-safety: the number parsers are pure (errno is saved and restored);
 * app_flags_parse uses getopt_long: main thread only.
 */
#ifndef GCDP_APP_FLAGS_H
#define GCDP_APP_FLAGS_H

#include <float.h> /* DBL_MAX: a row without an upper bound */
#include <stddef.h>
#include <stdio.h>

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

/* What a row stores at its offset in the args struct. */
enum app_flag_kind {
    APP_FLAG_STR,   /* const char *: the argument (borrowed from argv) */
    APP_FLAG_STRS,  /* const char *[cap] and a size_t count (n_offset): repeatable */
    APP_FLAG_TRUE,  /* no argument; an integer field (bool, int, ...) set to 1 */
    APP_FLAG_FALSE, /* no argument; an integer field set to 0 (--no-png) */
    APP_FLAG_UINT,  /* an unsigned integer field of any width in [lo, hi] */
    APP_FLAG_INT,   /* a signed integer field of any width in [lo, hi] */
    APP_FLAG_DBL,   /* double in [lo, hi] */
    APP_FLAG_DBLS,  /* double[cap] and a size_t count (n_offset): a comma-separated list */
    APP_FLAG_FN,    /* fn(args, arg) does the work (a choice, a key, a unit conversion) */
};

#define APP_FLAG_OPEN_LO    1u /* the range excludes lo */
#define APP_FLAG_OPEN_HI    2u /* the range excludes hi */
#define APP_FLAG_EMPTY_NULL 4u /* APP_FLAG_STR: an empty argument stores NULL */

/* A custom flag's parser: arg into args. Returns 0; -1 for the generic "invalid value"
 * message; -2 when it printed its own message ("gcdp <cmd>: ..."). */
typedef int app_flag_fn(void *args, const char *arg);

/* One flag. Tables end with a row whose name is NULL. A numeric row states its range
 * (.lo defaults to 0, .hi = DBL_MAX: no upper bound); integer bounds beyond the field's
 * width are clamped to it. */
struct app_flag {
    const char *name;        /* long name without "--" */
    enum app_flag_kind kind; /* what is stored */
    size_t offset, size;     /* the field in the args struct (APP_FLAG_AT) */
    double lo, hi;           /* numeric range (closed unless APP_FLAG_OPEN_*) */
    unsigned flags;          /* APP_FLAG_OPEN_LO, ... */
    size_t n_offset;         /* STRS, DBLS: the size_t count of values stored */
    app_flag_fn *fn;         /* APP_FLAG_FN */
    int short_name;          /* 'i' for -i, or 0 */
    unsigned tag;            /* ORed into *tags when the flag is given (e.g. "offline only") */
};

/* .offset and .size of field f of struct type T, for a row: {"out", APP_FLAG_STR,
 * APP_FLAG_AT(struct args, out)}; a range follows as .lo = ..., .hi = ... */
#define APP_FLAG_AT(T, f) .offset = offsetof(T, f), .size = sizeof(((T *)0)->f)

/* Parse the options of argv[1..argc) by the table rows into args (getopt_long, arguments
 * permuted after the options, long names may be abbreviated).
 *   cmd   the command for messages ("learn", "ctl status").
 *   tags  optional: the OR of the given rows' tags.
 * Returns the index of the first operand (argc when none), or -1 after the message on
 * stderr (an unknown option, a missing or refused value). */
int app_flags_parse(const char *cmd, const struct app_flag *rows, int argc, char **argv, void *args,
                    unsigned *tags);

/* app_flags_parse for a command that takes no operand: one is refused with "gcdp <cmd>:
 * unexpected argument '<arg>'" (and the --help line). Returns 0, or -1 after the message. */
int app_flags_parse_only(const char *cmd, const struct app_flag *rows, int argc, char **argv,
                         void *args, unsigned *tags);

#endif /* GCDP_APP_FLAGS_H */
