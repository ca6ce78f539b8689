/* lines.c - bounded line reader (see core/lines.h). */
#include "core/lines.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"

struct core_lines {
    FILE *f;
    bool owned; /* we opened f */
    char *path;
    char *buf;
    size_t cap;      /* allocated bytes of buf */
    size_t max_line; /* longest accepted line */
    uint64_t lineno, offset;
    bool terminated;
};

struct core_lines *core_lines_wrap(FILE *f, const char *name, size_t max_line)
{
    struct core_lines *l = core_xcalloc(1, sizeof(*l));
    l->f = f;
    l->path = core_xstrdup(name);
    l->max_line = max_line;
    return l;
}

core_err core_lines_open(const char *path, size_t max_line, struct core_lines **out, char *eb,
                         size_t ebn)
{
    FILE *f = fopen(path, "rb");

    *out = NULL;
    if (!f) {
        snprintf(eb, ebn, "cannot open '%s': %s", path, strerror(errno));
        return CORE_EIO;
    }
    *out = core_lines_wrap(f, path, max_line);
    (*out)->owned = true;
    return CORE_OK;
}

/* Room for len + 2 bytes (the byte to store and a NUL); never more than max_line + 2. */
static void reserve(struct core_lines *l, size_t len)
{
    size_t ncap;

    if (len + 2 <= l->cap)
        return;
    ncap = l->cap ? 2 * l->cap : 4096;
    if (ncap > l->max_line + 2)
        ncap = l->max_line + 2;
    l->buf = core_xrealloc(l->buf, ncap);
    l->cap = ncap;
}

/* Drop the rest of the current line; c is the last byte read. */
static int skip_rest(struct core_lines *l, int c)
{
    while (c != EOF && c != '\n') {
        c = getc(l->f);
        l->offset += c != EOF;
    }
    l->terminated = c == '\n';
    return c;
}

static core_err refuse(struct core_lines *l, int c, core_err rc, char *eb, size_t ebn)
{
    if (rc == CORE_ETOOBIG)
        snprintf(eb, ebn, "%s:%llu: line longer than %zu bytes", l->path,
                 (unsigned long long)l->lineno, l->max_line);
    else
        snprintf(eb, ebn, "%s:%llu: NUL byte in line", l->path, (unsigned long long)l->lineno);
    skip_rest(l, c);
    return ferror(l->f) ? CORE_EIO : rc;
}

core_err core_lines_next(struct core_lines *l, char **line, size_t *n, char *eb, size_t ebn)
{
    size_t len = 0;
    int c;

    l->lineno++;
    /* getc loop instead of getline/fgets: the cap holds before allocating, NULs are seen */
    while ((c = getc(l->f)) != EOF && c != '\n') {
        l->offset++;
        if (len >= l->max_line + (c == '\r')) /* room for a "\r" that ends the line */
            return refuse(l, c, CORE_ETOOBIG, eb, ebn);
        if (c == '\0')
            return refuse(l, c, CORE_EPARSE, eb, ebn);
        reserve(l, len);
        l->buf[len++] = (char)c;
    }
    l->offset += c == '\n';
    l->terminated = c == '\n';
    if (c == EOF && ferror(l->f)) {
        snprintf(eb, ebn, "%s:%llu: read error", l->path, (unsigned long long)l->lineno);
        return CORE_EIO;
    }
    if (c == EOF && len == 0) {
        l->lineno--;
        return CORE_ENOTFOUND;
    }
    if (len > 0 && l->buf[len - 1] == '\r')
        len--; /* now len <= max_line: only a last "\r" may stand at max_line */
    reserve(l, len);
    l->buf[len] = '\0';
    *line = l->buf;
    *n = len;
    return CORE_OK;
}

uint64_t core_lines_lineno(const struct core_lines *l)
{
    return l->lineno;
}

uint64_t core_lines_offset(const struct core_lines *l)
{
    return l->offset;
}

bool core_lines_terminated(const struct core_lines *l)
{
    return l->terminated;
}

const char *core_lines_path(const struct core_lines *l)
{
    return l->path;
}

void core_lines_free(struct core_lines *l)
{
    if (!l)
        return;
    if (l->owned)
        fclose(l->f);
    free(l->path);
    free(l->buf);
    free(l);
}
