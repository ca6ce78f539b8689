/* lines.c - capped line reader (see lines.h). */
#include "lines.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"

struct sim_lines {
    FILE *f;
    char *path;
    char *buf;
    size_t cap; /* max_line + 2: room for "\n" and NUL */
    uint64_t lineno;
};

core_err sim_lines_open(const char *path, size_t max_line, struct sim_lines **out, char *eb,
                        size_t ebn)
{
    struct sim_lines *l;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(eb, ebn, "cannot open '%s'", path);
        return CORE_EIO;
    }
    l = core_xcalloc(1, sizeof(*l));
    l->f = f;
    l->path = core_xstrdup(path);
    l->cap = max_line + 3;
    l->buf = core_xmalloc(l->cap);
    *out = l;
    return CORE_OK;
}

core_err sim_lines_next(struct sim_lines *l, const char **line, size_t *n, char *eb, size_t ebn)
{
    size_t len = 0;
    int c;

    /* getc loop instead of fgets: NUL bytes are detected, and the cap is exact */
    while ((c = getc(l->f)) != EOF && c != '\n') {
        if (len + 2 >= l->cap) {
            snprintf(eb, ebn, "%s:%llu: line longer than %zu bytes", l->path,
                     (unsigned long long)l->lineno + 1, l->cap - 3);
            return CORE_ETOOBIG;
        }
        if (c == '\0') {
            snprintf(eb, ebn, "%s:%llu: NUL byte in line", l->path,
                     (unsigned long long)l->lineno + 1);
            return CORE_EPARSE;
        }
        l->buf[len++] = (char)c;
    }
    if (c == EOF && ferror(l->f)) {
        snprintf(eb, ebn, "%s:%llu: read error", l->path, (unsigned long long)l->lineno + 1);
        return CORE_EIO;
    }
    if (c == EOF && len == 0)
        return CORE_ENOTFOUND;
    l->lineno++;
    if (len > 0 && l->buf[len - 1] == '\r')
        len--;
    l->buf[len] = '\0';
    *line = l->buf;
    *n = len;
    return CORE_OK;
}

uint64_t sim_lines_lineno(const struct sim_lines *l)
{
    return l->lineno;
}

const char *sim_lines_path(const struct sim_lines *l)
{
    return l->path;
}

void sim_lines_free(struct sim_lines *l)
{
    if (!l)
        return;
    fclose(l->f);
    free(l->path);
    free(l->buf);
    free(l);
}
