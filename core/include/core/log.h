/* core/log.h - structured JSON log lines on stderr, one macro, level checked first (STYLE P13).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Every line is one JSON object: {"ts","level","component","fn","line","msg"}.
 * Invariant (DESIGN §7.4): log lines carry identifiers, counts and reasons, never
 * protected readings, window values or noise.
 * Thread-safety: core_log_emit is thread-safe (one write(2) per line); set the level and
 * component before starting threads.
 */
#ifndef CORE_LOG_H
#define CORE_LOG_H

#include "core/err.h"

enum core_log_level {
    CORE_LOG_DEBUG = 0,
    CORE_LOG_INFO = 1,
    CORE_LOG_WARN = 2,
    CORE_LOG_ERROR = 3,
    CORE_LOG_FATAL = 4,
    CORE_LOG_OFF = 5
};

extern int core_log_level;

#define CORE_LOG(lvl, ...)                                                                         \
    do {                                                                                           \
        if ((int)(lvl) >= core_log_level)                                                          \
            core_log_emit((lvl), __func__, __LINE__, __VA_ARGS__);                                 \
    } while (0)

#define CORE_DEBUG(...) CORE_LOG(CORE_LOG_DEBUG, __VA_ARGS__)
#define CORE_INFO(...)  CORE_LOG(CORE_LOG_INFO, __VA_ARGS__)
#define CORE_WARN(...)  CORE_LOG(CORE_LOG_WARN, __VA_ARGS__)
#define CORE_ERROR(...) CORE_LOG(CORE_LOG_ERROR, __VA_ARGS__)

void core_log_emit(int lvl, const char *fn, int line, const char *fmt, ...) CORE_PRINTF(4, 5);

/* Parse "debug|info|warn|error|off" into *out. Returns CORE_OK or CORE_EINVAL. */
CORE_MUST_CHECK core_err core_log_level_parse(const char *name, int *out);

/* Component name added to every line (borrowed; must outlive logging), e.g. "ingest". */
void core_log_set_component(const char *component);

/* Bytes written before every log line, in the same write(2) (borrowed string, at most 16
 * bytes; NULL or "" for none). A command that draws a progress line on a terminal sets
 * "\r\033[K" so a log line replaces the progress line instead of being glued to it. Set it
 * before other threads log. */
void core_log_set_line_prefix(const char *prefix);

#endif /* CORE_LOG_H */
