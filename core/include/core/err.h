/* core/err.h - the one status type of gcdp, generated from one table (STYLE P5).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Thread-safety: all functions are pure and thread-safe.
 */
#ifndef CORE_ERR_H
#define CORE_ERR_H

/* CORE_OK is 0; every failure is negative. Counts never travel in the return value. */
#define CORE_ERR_MAP(X)                                                                            \
    X(CORE_OK, 0, "success")                                                                       \
    X(CORE_ENOMEM, -1, "out of memory")                                                            \
    X(CORE_EINVAL, -2, "invalid argument")                                                         \
    X(CORE_ETOOBIG, -3, "input exceeds configured limit")                                          \
    X(CORE_EPARSE, -4, "malformed input")                                                          \
    X(CORE_ENUMERIC, -5, "numerical failure")                                                      \
    X(CORE_EAGAIN, -6, "resource temporarily unavailable")                                         \
    X(CORE_EIO, -7, "i/o error")                                                                   \
    X(CORE_ECONFIG, -8, "invalid configuration")                                                   \
    X(CORE_EINVARIANT, -9, "privacy invariant violated; release refused")                          \
    X(CORE_EBUDGET, -10, "privacy budget exhausted; work refused")                                 \
    X(CORE_ERNG, -11, "secure random source failed")                                               \
    X(CORE_EKAFKA, -12, "kafka error")                                                             \
    X(CORE_ENOTFOUND, -13, "not found")                                                            \
    X(CORE_EEXIST, -14, "already exists")                                                          \
    X(CORE_ESTATE, -15, "operation not valid in the current state")                                \
    X(CORE_EEXPIRED, -16, "older than the ledger's replay horizon; refused")

typedef enum core_err {
#define X(name, value, msg) name = (value),
    CORE_ERR_MAP(X)
#undef X
} core_err;

/* Static description of err; never NULL. */
const char *core_strerror(core_err err);

/* Name of err as written in the table ("CORE_EINVAL"); never NULL. */
const char *core_errname(core_err err);

#if defined(__GNUC__)
#define CORE_MUST_CHECK        __attribute__((warn_unused_result))
#define CORE_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#define CORE_UNUSED            __attribute__((unused))
#else
#define CORE_MUST_CHECK
#define CORE_PRINTF(fmt, args)
#define CORE_UNUSED
#endif

#endif /* CORE_ERR_H */
