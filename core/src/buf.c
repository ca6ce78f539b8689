/* buf.c - capped growable text buffer, JSON strings, base64 (see core/buf.h). */
#include "core/buf.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void core_buf_init(struct core_buf *b, size_t max)
{
    memset(b, 0, sizeof(*b));
    b->max = max < CORE_BUF_NO_CAP ? max : CORE_BUF_NO_CAP;
}

void core_buf_init_fixed(struct core_buf *b, char *mem, size_t size)
{
    memset(b, 0, sizeof(*b));
    b->p = mem;
    b->size = size;
    b->max = size - 1;
    b->fixed = true;
    mem[0] = '\0';
}

void core_buf_cleanup(struct core_buf *b)
{
    if (!b)
        return;
    if (!b->fixed) {
        free(b->p);
        b->p = NULL;
        b->size = 0;
    }
    b->len = 0;
    b->overflow = false;
}

void core_buf_reset(struct core_buf *b)
{
    b->len = 0;
    b->overflow = false;
    if (b->p)
        b->p[0] = '\0';
}

char *core_buf_take(struct core_buf *b, size_t *len)
{
    char *p = b->fixed || !b->p ? core_xstrdup(b->p ? b->p : "") : b->p;

    if (len)
        *len = b->len;
    if (!b->fixed) {
        b->p = NULL;
        b->size = 0;
    }
    core_buf_reset(b);
    return p;
}

bool core_buf_reserve(struct core_buf *b, size_t extra)
{
    size_t need, ns;

    if (b->overflow)
        return false;
    if (extra > b->max - b->len) { /* the cap, checked before any allocation */
        b->overflow = true;
        return false;
    }
    need = b->len + extra + 1;
    if (need <= b->size)
        return true;
    ns = b->size ? b->size : 1024;
    while (ns < need)
        ns *= 2;
    if (ns > b->max + 1)
        ns = b->max + 1;
    b->p = core_xrealloc(b->p, ns);
    b->size = ns;
    return true;
}

void core_buf_put(struct core_buf *b, const void *s, size_t n)
{
    if (!core_buf_reserve(b, n))
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void core_buf_puts(struct core_buf *b, const char *s)
{
    core_buf_put(b, s, strlen(s));
}

void core_buf_putc(struct core_buf *b, char c)
{
    core_buf_put(b, &c, 1);
}

void core_buf_printf(struct core_buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (!core_buf_reserve(b, 0))
        return;
    va_start(ap, fmt); /* first into the room there is: one vsnprintf when it fits */
    /* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): va_start is right above */
    n = vsnprintf(b->p + b->len, b->size - b->len, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < b->size - b->len) {
        b->len += (size_t)n;
        return;
    }
    b->p[b->len] = '\0'; /* drop a partial text */
    if (n < 0 || !core_buf_reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    /* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): va_start is right above */
    vsnprintf(b->p + b->len, b->size - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void core_buf_int(struct core_buf *b, int64_t v)
{
    char tmp[24];
    size_t i = sizeof(tmp);
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v; /* INT64_MIN safe */

    do {
        tmp[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        tmp[--i] = '-';
    core_buf_put(b, tmp + i, sizeof(tmp) - i);
}

/* Escape of byte c into o (at least 6 bytes); returns its length. */
static size_t json_escape(unsigned char c, char *o)
{
    static const char hex[] = "0123456789abcdef";

    if (c == '"' || c == '\\') {
        o[0] = '\\', o[1] = (char)c;
        return 2;
    }
    if (c == '\n' || c == '\r' || c == '\t') {
        o[0] = '\\', o[1] = (char)(c == '\n' ? 'n' : c == '\r' ? 'r' : 't');
        return 2;
    }
    if (c < 0x20 || c == 0x7f) {
        o[0] = '\\', o[1] = 'u', o[2] = '0', o[3] = '0';
        o[4] = hex[c >> 4], o[5] = hex[c & 15];
        return 6;
    }
    o[0] = (char)c;
    return 1;
}

void core_buf_json_str(struct core_buf *b, const char *s, size_t n)
{
    size_t need = 2;

    if (b->overflow)
        return;
    if (n <= (b->max - b->len) / 6 && n < SIZE_MAX / 8) {
        need += n * 6; /* the worst case fits under the cap: no counting pass */
    } else {
        char tmp[6];
        for (size_t i = 0; i < n && need <= b->max; i++)
            need += json_escape((unsigned char)s[i], tmp);
    }
    if (!core_buf_reserve(b, need))
        return;
    b->p[b->len++] = '"';
    for (size_t i = 0; i < n; i++)
        b->len += json_escape((unsigned char)s[i], b->p + b->len);
    b->p[b->len++] = '"';
    b->p[b->len] = '\0';
}

size_t core_base64_len(size_t n)
{
    return (n + 2) / 3 * 4;
}

static const char b64_tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* b64_pairs[v] = the two characters of the 12-bit value v: two lookups per 3 bytes. */
static char b64_pairs[4096][2];
static pthread_once_t b64_once = PTHREAD_ONCE_INIT;

static void b64_init(void)
{
    for (unsigned v = 0; v < 4096; v++) {
        b64_pairs[v][0] = b64_tab[v >> 6];
        b64_pairs[v][1] = b64_tab[v & 63];
    }
}

void core_base64_encode(char *dst, const void *src, size_t len)
{
    const unsigned char *s = src;
    size_t i = 0;

    (void)pthread_once(&b64_once, b64_init);
    for (; i + 3 <= len; i += 3, dst += 4) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        memcpy(dst, b64_pairs[v >> 12], 2);
        memcpy(dst + 2, b64_pairs[v & 4095], 2);
    }
    if (i < len) {
        uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < len ? (uint32_t)s[i + 1] << 8 : 0);
        dst[0] = b64_tab[v >> 18];
        dst[1] = b64_tab[(v >> 12) & 63];
        dst[2] = (char)(i + 1 < len ? b64_tab[(v >> 6) & 63] : '=');
        dst[3] = '=';
    }
}

void core_buf_base64(struct core_buf *b, const void *s, size_t n)
{
    size_t k = core_base64_len(n);

    if (n > SIZE_MAX / 2) {
        b->overflow = true;
        return;
    }
    if (!core_buf_reserve(b, k))
        return;
    core_base64_encode(b->p + b->len, s, n);
    b->len += k;
    b->p[b->len] = '\0';
}

core_err core_buf_status(const struct core_buf *b)
{
    return b->overflow ? CORE_ETOOBIG : CORE_OK;
}
