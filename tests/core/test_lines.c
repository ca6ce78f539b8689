/* test_lines.c - the bounded line reader (core/lines.h): endings, the exact cap, refused lines
 * skipped whole (the reader stays in step), NUL bytes, offsets, stdin-style wrapping. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "core/lines.h"
#include "lines_int.h"
#include "test_support.h"

static FILE *mem(const char *text, size_t n)
{
    FILE *f = fmemopen((void *)text, n, "r");
    cr_assert_not_null(f);
    return f;
}

static void expect_line(struct core_lines *l, const char *want)
{
    char *line = NULL, eb[256] = "";
    size_t n = 0;
    cr_assert_eq(core_lines_next(l, &line, &n, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(n, strlen(want));
    cr_assert_str_eq(line, want);
}

static void expect_rc(struct core_lines *l, core_err want, const char *msg_part)
{
    char *line = NULL, eb[256] = "";
    size_t n = 0;
    cr_assert_eq(core_lines_next(l, &line, &n, eb, sizeof(eb)), want, "%s", eb);
    if (msg_part)
        cr_assert(strstr(eb, msg_part), "'%s' lacks '%s'", eb, msg_part);
}

Test(lines, endings_blank_lines_and_an_unterminated_last_line)
{
    static const char text[] = "a,b\r\n\nlast\r\nno newline";
    FILE *f = mem(text, sizeof(text) - 1);
    struct core_lines *l = core_lines_wrap(f, "mem", 64);

    expect_line(l, "a,b");
    cr_assert(core_lines_terminated(l));
    cr_assert_eq(core_lines_offset(l), 5);
    expect_line(l, "");
    expect_line(l, "last");
    expect_line(l, "no newline");
    cr_assert_not(core_lines_terminated(l));
    cr_assert_eq(core_lines_lineno(l), 4);
    cr_assert_eq(core_lines_offset(l), sizeof(text) - 1);
    expect_rc(l, CORE_ENOTFOUND, NULL);
    expect_rc(l, CORE_ENOTFOUND, NULL);
    cr_assert_eq(core_lines_lineno(l), 4, "end of input is not a line");
    core_lines_free(l);
    cr_assert_eq(fclose(f), 0, "a wrapped stream stays open (borrowed)");
}

Test(lines, the_cap_is_exact_and_a_long_line_is_skipped_whole)
{
    static const char text[] = "12345678\n123456789\n12345678\r\nok\n";
    FILE *f = mem(text, sizeof(text) - 1);
    struct core_lines *l = core_lines_wrap(f, "in.txt", 8);

    expect_line(l, "12345678");
    expect_rc(l, CORE_ETOOBIG, "in.txt:2: line longer than 8 bytes");
    cr_assert(core_lines_terminated(l));
    cr_assert_eq(core_lines_offset(l), 19, "the whole refused line consumed");
    expect_line(l, "12345678"); /* "\r\n" does not count against the cap */
    expect_line(l, "ok");
    cr_assert_eq(core_lines_lineno(l), 4);
    core_lines_free(l);
    fclose(f);
}

Test(lines, a_carriage_return_inside_counts)
{
    static const char text[] = "1234\r5678\n1234\r\n";
    FILE *f = mem(text, sizeof(text) - 1);
    struct core_lines *l = core_lines_wrap(f, "m", 8);

    expect_rc(l, CORE_ETOOBIG, NULL); /* 9 bytes: the inner "\r" is data */
    expect_line(l, "1234");
    core_lines_free(l);
    fclose(f);
}

Test(lines, nul_bytes_are_refused_not_cut)
{
    static const char text[] = "ab\0cd\nnext\nlast\0";
    FILE *f = mem(text, sizeof(text) - 1);
    struct core_lines *l = core_lines_wrap(f, "m", 64);

    expect_rc(l, CORE_EPARSE, "m:1: NUL byte");
    expect_line(l, "next");
    expect_rc(l, CORE_EPARSE, "m:3: NUL byte");
    cr_assert_not(core_lines_terminated(l));
    expect_rc(l, CORE_ENOTFOUND, NULL);
    core_lines_free(l);
    fclose(f);
}

Test(lines, a_huge_line_under_a_small_cap)
{
    size_t big = 8u << 20; /* 8 MiB on one line, cap 1 KiB: refused, then the next line */
    char *text = malloc(big + 8);
    FILE *f;
    struct core_lines *l;

    memset(text, 'x', big);
    memcpy(text + big, "\nafter\n", 7);
    f = mem(text, big + 7);
    l = core_lines_wrap(f, "m", 1024);
    expect_rc(l, CORE_ETOOBIG, NULL);
    expect_line(l, "after");
    core_lines_free(l);
    fclose(f);
    free(text);
}

Test(lines, open_names_the_path_and_closes_what_it_opened)
{
    char *dir = ts_tmpdir(), path[512], eb[256] = "";
    struct core_lines *l = NULL;

    snprintf(path, sizeof(path), "%s/missing.txt", dir);
    cr_assert_eq(core_lines_open(path, 16, &l, eb, sizeof(eb)), CORE_EIO);
    cr_assert_null(l);
    cr_assert(strstr(eb, "missing.txt"), "%s", eb);
    snprintf(path, sizeof(path), "%s/f.txt", dir);
    ts_write_file(path, "one\ntwo");
    cr_assert_eq(core_lines_open(path, 16, &l, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_str_eq(core_lines_path(l), path);
    expect_line(l, "one");
    expect_line(l, "two");
    expect_rc(l, CORE_ENOTFOUND, NULL);
    core_lines_free(l);
    core_lines_free(NULL);
    ts_rmtree(dir);
    free(dir);
}

/* ---- the chunked file path (core_lines_open) against the getc path (core_lines_wrap) ---- */

struct lines_obs {
    core_err rc;
    size_t n;
    char line[64];
    uint64_t lineno, offset;
    bool terminated;
};

static void observe(struct core_lines *l, struct lines_obs *o)
{
    char *line = NULL, eb[256] = "";

    memset(o, 0, sizeof(*o));
    o->rc = core_lines_next(l, &line, &o->n, eb, sizeof(eb));
    if (o->rc == CORE_OK) {
        cr_assert_lt(o->n, sizeof(o->line));
        memcpy(o->line, line, o->n);
        cr_assert_eq(line[o->n], '\0');
    }
    o->lineno = core_lines_lineno(l);
    o->offset = core_lines_offset(l);
    o->terminated = core_lines_terminated(l);
}

/* Every answer of the two readers on text[0..len), cap max_line, chunk size chunk. */
static void compare_paths(const char *path, const char *text, size_t len, size_t max_line,
                          size_t chunk)
{
    FILE *f = mem(text, len), *w = fopen(path, "wb");
    struct core_lines *a = core_lines_wrap(f, "x", max_line), *b = NULL;
    char eb[256] = "";
    int ends = 0;

    cr_assert_not_null(w);
    cr_assert_eq(fwrite(text, 1, len, w), len);
    cr_assert_eq(fclose(w), 0);
    cr_assert_eq(core__lines_open_chunk(path, max_line, chunk, &b, eb, sizeof(eb)), CORE_OK, "%s",
                 eb);
    for (int k = 0; ends < 2 && k < 1000; k++) {
        struct lines_obs x, y;
        observe(a, &x);
        observe(b, &y);
        cr_assert_eq(x.rc, y.rc, "call %d (cap %zu, chunk %zu)", k, max_line, chunk);
        cr_assert_eq(x.n, y.n, "call %d", k);
        cr_assert_eq(memcmp(x.line, y.line, x.n), 0, "call %d", k);
        cr_assert_eq(x.lineno, y.lineno, "call %d", k);
        cr_assert_eq(x.offset, y.offset, "call %d", k);
        cr_assert_eq(x.terminated, y.terminated, "call %d (cap %zu, chunk %zu)", k, max_line,
                     chunk);
        ends += x.rc == CORE_ENOTFOUND;
    }
    cr_assert_eq(ends, 2);
    core_lines_free(a);
    core_lines_free(b);
    fclose(f);
}

Test(lines, the_chunked_file_reader_answers_as_the_stream_reader)
{
    static const char alphabet[] = {'a', 'b', '\r', '\n', '\0', ','};
    static const size_t caps[] = {1, 2, 3, 5, 8}, chunks[] = {1, 2, 3, 7, 65536};
    char *dir = ts_tmpdir(), path[512], text[48];
    uint64_t s = 0x9E3779B97F4A7C15u;

    snprintf(path, sizeof(path), "%s/chunk.txt", dir);
    for (int trial = 0; trial < 400; trial++) {
        size_t len = (size_t)(trial % 40);
        for (size_t i = 0; i < len; i++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17; /* xorshift64 */
            /* mostly letters, so that lines reach the caps */
            text[i] = (s >> 32) % 3 ? alphabet[(s >> 8) % 2]
                                    : alphabet[2 + (s >> 16) % (sizeof(alphabet) - 2)];
        }
        for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++)
            for (size_t k = 0; k < sizeof(chunks) / sizeof(chunks[0]); k++)
                compare_paths(path, text, len, caps[c], chunks[k]);
    }
    ts_rmtree(dir);
    free(dir);
}

Test(lines, the_chunked_reader_on_a_long_file_with_a_crlf_at_the_cap)
{
    char *dir = ts_tmpdir(), path[512];
    /* "abc\r" at cap 3 is accepted (the "\r" may stand at the cap), "abcd" is not */
    static const char text[] = "abc\r\nabcd\nab\r\r\nabc\rx\nabc";

    snprintf(path, sizeof(path), "%s/crlf.txt", dir);
    for (size_t chunk = 1; chunk <= sizeof(text); chunk++)
        compare_paths(path, text, sizeof(text) - 1, 3, chunk);
    ts_rmtree(dir);
    free(dir);
}
