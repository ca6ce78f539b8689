/* lines.c - bounded line reader (see core/lines.h).
 *
 * Two byte sources behind one contract. A file opened by core_lines_open() is read with
 * read(2) into a fixed chunk (64 KiB) and scanned with memchr: a line costs a few library
 * calls instead of one locked getc per byte (issue 9: getc was 40 % of `gcdp learn` on
 * 16 MB of CSV). read(2) returns what is there, so a FIFO given by path still delivers
 * each line as it arrives. A wrapped stream (stdin, fmemopen) keeps the getc loop: the
 * caller may have read from it already, so its stdio buffer is the only source of truth.
 * Both paths refuse exactly the same lines (tests/core/test_lines.c compares them).
 */
#include "core/lines.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/mem.h"
#include "lines_int.h"

struct core_lines {
    FILE *f;     /* wrapped stream, or NULL when reading fd */
    int fd;      /* file opened by core_lines_open, else -1 */
    char *chunk; /* fd path: bytes read, chunk[cpos..clen) not consumed yet */
    size_t chunk_cap, cpos, clen;
    bool eof, rd_err;
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
    l->fd = -1;
    l->path = core_xstrdup(name);
    l->max_line = max_line;
    return l;
}

core_err core__lines_open_chunk(const char *path, size_t max_line, size_t chunk,
                                struct core_lines **out, char *eb, size_t ebn)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    *out = NULL;
    if (fd < 0) {
        int e = errno;
        snprintf(eb, ebn, "cannot open '%s': %s", path, strerror(e));
        errno = e; /* callers name the reason from errno too */
        return CORE_EIO;
    }
    *out = core_lines_wrap(NULL, path, max_line);
    (*out)->fd = fd;
    (*out)->chunk_cap = chunk ? chunk : 1;
    (*out)->chunk = core_xmalloc((*out)->chunk_cap);
    return CORE_OK;
}

core_err core_lines_open(const char *path, size_t max_line, struct core_lines **out, char *eb,
                         size_t ebn)
{
    return core__lines_open_chunk(path, max_line, CORE_LINES_CHUNK, out, eb, ebn);
}

/* Room for len + 2 bytes (the byte to store and a NUL); never more than max_line + 2. */
static void reserve(struct core_lines *l, size_t len)
{
    size_t ncap;

    if (len + 2 <= l->cap)
        return;
    ncap = l->cap ? 2 * l->cap : 4096;
    while (ncap < len + 2)
        ncap *= 2;
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

/* ---- fd path ---- */

/* Refill the chunk when it is consumed; false at end of input or on a read error. */
static bool fill(struct core_lines *l)
{
    ssize_t got;

    if (l->cpos < l->clen)
        return true;
    if (l->eof || l->rd_err)
        return false;
    do
        got = read(l->fd, l->chunk, l->chunk_cap);
    while (got < 0 && errno == EINTR);
    l->cpos = 0;
    l->clen = got > 0 ? (size_t)got : 0;
    l->eof = got == 0;
    l->rd_err = got < 0;
    return got > 0;
}

/* Drop the rest of the current line (the fd path's skip_rest). */
static void fd_skip_rest(struct core_lines *l)
{
    l->terminated = false;
    while (fill(l)) {
        const char *p = l->chunk + l->cpos, *nl = memchr(p, '\n', l->clen - l->cpos);
        size_t k = nl ? (size_t)(nl - p) + 1 : l->clen - l->cpos;
        l->cpos += k;
        l->offset += k;
        if (nl) {
            l->terminated = true;
            return;
        }
    }
}

/* Index in seg[0..k) of the first byte the getc loop would refuse for its length, with
 * len bytes of the line before seg; k if none. A byte at line position q is refused when
 * q > max_line, or q == max_line and it is not the "\r" that may end the line. */
static size_t first_too_long(const struct core_lines *l, const char *seg, size_t k, size_t len)
{
    size_t i;

    if (len + k <= l->max_line)
        return k;
    if (len > l->max_line) /* a "\r" stood at max_line: nothing may follow it */
        return 0;
    i = l->max_line - len;
    if (seg[i] != '\r')
        return i;
    return i + 1 < k ? i + 1 : k;
}

static core_err fd_refuse(struct core_lines *l, core_err rc, size_t at, char *eb, size_t ebn)
{
    l->cpos += at + 1; /* the refused byte counts as consumed, as in the getc loop */
    l->offset += at + 1;
    if (rc == CORE_ETOOBIG)
        snprintf(eb, ebn, "%s:%llu: line longer than %zu bytes", l->path,
                 (unsigned long long)l->lineno, l->max_line);
    else
        snprintf(eb, ebn, "%s:%llu: NUL byte in line", l->path, (unsigned long long)l->lineno);
    fd_skip_rest(l);
    return l->rd_err ? CORE_EIO : rc;
}

/* One line from the chunked fd source; same results as the getc loop below. */
static core_err fd_next(struct core_lines *l, size_t *plen, char *eb, size_t ebn)
{
    size_t len = 0;

    for (;;) {
        const char *p, *nl, *nul;
        size_t k, big;

        if (!fill(l))
            break;
        p = l->chunk + l->cpos;
        nl = memchr(p, '\n', l->clen - l->cpos);
        k = nl ? (size_t)(nl - p) : l->clen - l->cpos;
        big = first_too_long(l, p, k, len);
        nul = memchr(p, '\0', k);
        if (nul && (size_t)(nul - p) < big)
            return fd_refuse(l, CORE_EPARSE, (size_t)(nul - p), eb, ebn);
        if (big < k)
            return fd_refuse(l, CORE_ETOOBIG, big, eb, ebn);
        if (k > 0) {
            reserve(l, len + k - 1); /* room for the k bytes and a NUL */
            memcpy(l->buf + len, p, k);
        }
        len += k;
        l->cpos += k + (nl != NULL);
        l->offset += k + (nl != NULL);
        if (nl) {
            l->terminated = true;
            *plen = len;
            return CORE_OK;
        }
    }
    l->terminated = false;
    if (l->rd_err) {
        snprintf(eb, ebn, "%s:%llu: read error", l->path, (unsigned long long)l->lineno);
        return CORE_EIO;
    }
    *plen = len;
    return len == 0 ? CORE_ENOTFOUND : CORE_OK;
}

/* ---- both paths ---- */

/* The line of len bytes is in l->buf: drop one final "\r", terminate, hand it out. */
static core_err hand_out(struct core_lines *l, size_t len, char **line, size_t *n)
{
    if (len > 0 && l->buf[len - 1] == '\r')
        len--; /* now len <= max_line: only a last "\r" may stand at max_line */
    reserve(l, len);
    l->buf[len] = '\0';
    *line = l->buf;
    *n = len;
    return CORE_OK;
}

core_err core_lines_next(struct core_lines *l, char **line, size_t *n, char *eb, size_t ebn)
{
    size_t len = 0;
    int c;

    l->lineno++;
    if (l->fd >= 0) {
        core_err rc = fd_next(l, &len, eb, ebn);
        if (rc == CORE_ENOTFOUND)
            l->lineno--;
        return rc == CORE_OK ? hand_out(l, len, line, n) : rc;
    }
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
    return hand_out(l, len, line, n);
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
    if (l->fd >= 0)
        close(l->fd);
    free(l->chunk);
    free(l->path);
    free(l->buf);
    free(l);
}
