/* log.c - JSON lines on stderr. The message is escaped so that a line always parses. */
#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/timefmt.h"

int core_log_level = CORE_LOG_INFO;
static const char *log_component = "gcdp";

static const char *const level_names[] = {"debug", "info", "warn", "error", "fatal", "off"};

void core_log_set_component(const char *component)
{
    log_component = component ? component : "gcdp";
}

core_err core_log_level_parse(const char *name, int *out)
{
    for (int i = 0; i < (int)(sizeof(level_names) / sizeof(level_names[0])); i++) {
        if (strcmp(name, level_names[i]) == 0) {
            *out = i;
            return CORE_OK;
        }
    }
    return CORE_EINVAL;
}

/* Append s to buf[*len..cap) with JSON string escaping; truncates safely. */
static void append_escaped(char *buf, size_t *len, size_t cap, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    for (; *s && *len + 7 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            buf[(*len)++] = '\\';
            buf[(*len)++] = (char)c;
        } else if (c == '\n') {
            buf[(*len)++] = '\\';
            buf[(*len)++] = 'n';
        } else if (c < 0x20) {
            memcpy(buf + *len, "\\u00", 4);
            *len += 4;
            buf[(*len)++] = hex[c >> 4];
            buf[(*len)++] = hex[c & 15];
        } else {
            buf[(*len)++] = (char)c;
        }
    }
}

static const char *log_prefix = "";

void core_log_set_line_prefix(const char *prefix)
{
    log_prefix = prefix && strlen(prefix) <= 16 ? prefix : "";
}

void core_log_emit(int lvl, const char *fn, int line, const char *fmt, ...)
{
    char msg[1024], out[2048], ts[CORE_TIME_TEXT_MAX];
    struct timespec now;
    size_t len = 0;
    va_list ap;
    int n;

    if (lvl < 0 || lvl > CORE_LOG_FATAL)
        lvl = CORE_LOG_ERROR;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    clock_gettime(CLOCK_REALTIME, &now);
    core_time_format((int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000, CORE_TIME_MS, ts,
                     sizeof(ts));
    n = snprintf(out, sizeof(out), "%s{\"ts\":\"%s\",\"level\":\"%s\",\"component\":\"", log_prefix,
                 ts, level_names[lvl]);
    len = (size_t)n;
    append_escaped(out, &len, sizeof(out) - 64, log_component);
    n = snprintf(out + len, sizeof(out) - len, "\",\"fn\":\"%s\",\"line\":%d,\"msg\":\"", fn, line);
    len += (size_t)n;
    append_escaped(out, &len, sizeof(out) - 8, msg);
    memcpy(out + len, "\"}\n", 3);
    len += 3;
    (void)!write(STDERR_FILENO, out, len);
}
