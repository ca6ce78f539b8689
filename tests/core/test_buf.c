/* test_buf.c - the capped growable buffer (core/buf.h): growth, the cap and its sticky
 * overflow, fixed memory, take, printf, integers, JSON strings (parsed back by jansson) and
 * base64 (RFC 4648 vectors, and libsodium's encoder as the oracle on random bytes). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>
#include <sodium.h>

#include "core/buf.h"

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

Test(buf, grows_and_stays_terminated)
{
    struct core_buf b;
    core_buf_init(&b, CORE_BUF_NO_CAP);
    cr_assert_null(b.p, "nothing allocated before the first append");
    for (int i = 0; i < 5000; i++)
        core_buf_puts(&b, "ab");
    cr_assert_eq(b.len, 10000);
    cr_assert_eq(b.p[b.len], '\0');
    cr_assert_eq(strspn(b.p, "ab"), 10000);
    cr_assert_eq(core_buf_status(&b), CORE_OK);
    core_buf_reset(&b);
    cr_assert_eq(b.len, 0);
    cr_assert_str_eq(b.p, "");
    core_buf_cleanup(&b);
    cr_assert_null(b.p);
    core_buf_cleanup(NULL);
}

Test(buf, the_cap_is_exact_and_overflow_is_sticky)
{
    struct core_buf b;
    core_buf_init(&b, 8);
    core_buf_puts(&b, "12345678");
    cr_assert_eq(core_buf_status(&b), CORE_OK, "exactly the cap");
    cr_assert_leq(b.size, 9, "never more memory than cap + 1");
    core_buf_putc(&b, 'x');
    cr_assert_eq(core_buf_status(&b), CORE_ETOOBIG);
    cr_assert_str_eq(b.p, "12345678", "a refused append appends nothing");
    core_buf_reset(&b);
    core_buf_puts(&b, "1234");
    core_buf_puts(&b, "56789"); /* too long: refused whole */
    core_buf_puts(&b, "5");     /* would fit, but overflow is sticky */
    cr_assert_str_eq(b.p, "1234");
    cr_assert_eq(core_buf_status(&b), CORE_ETOOBIG);
    core_buf_reset(&b);
    cr_assert_eq(core_buf_status(&b), CORE_OK, "reset clears it");
    core_buf_put(&b, "x", SIZE_MAX - 1); /* the cap is checked before any allocation */
    cr_assert_eq(core_buf_status(&b), CORE_ETOOBIG);
    core_buf_cleanup(&b);
}

Test(buf, printf_into_the_room_left_and_past_it)
{
    struct core_buf b;
    char big[3000];
    core_buf_init(&b, 4000);
    memset(big, 'z', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    core_buf_printf(&b, "%d-%s", 42, "x");
    core_buf_printf(&b, "[%s]", big); /* needs growth past the first 1 KiB */
    cr_assert_eq(b.len, 4 + 2 + 2999);
    cr_assert_eq(strncmp(b.p, "42-x[zz", 7), 0);
    cr_assert_eq(b.p[b.len - 1], ']');
    core_buf_printf(&b, "%s", big); /* past the cap: nothing, not a partial text */
    cr_assert_eq(b.len, 3005);
    cr_assert_eq(b.p[3005], '\0');
    cr_assert_eq(core_buf_status(&b), CORE_ETOOBIG);
    core_buf_cleanup(&b);
}

Test(buf, fixed_memory_is_never_grown)
{
    char mem[8];
    struct core_buf b;
    char *t;
    core_buf_init_fixed(&b, mem, sizeof(mem));
    core_buf_printf(&b, "%s", "abc");
    core_buf_printf(&b, "%s", "defg");
    cr_assert_eq(b.p, mem);
    cr_assert_str_eq(mem, "abcdefg");
    core_buf_printf(&b, "%s", "h");
    cr_assert_eq(core_buf_status(&b), CORE_ETOOBIG);
    cr_assert_str_eq(mem, "abcdefg", "a refused printf leaves no partial text");
    t = core_buf_take(&b, NULL);
    cr_assert_str_eq(t, "abcdefg", "take of fixed memory is a copy");
    cr_assert_neq(t, mem);
    free(t);
    core_buf_cleanup(&b);
}

Test(buf, take_moves_the_text_out)
{
    struct core_buf b;
    size_t n = 99;
    char *t;
    core_buf_init(&b, 100);
    t = core_buf_take(&b, &n);
    cr_assert_str_eq(t, "");
    cr_assert_eq(n, 0);
    free(t);
    core_buf_puts(&b, "hello");
    t = core_buf_take(&b, &n);
    cr_assert_str_eq(t, "hello");
    cr_assert_eq(n, 5);
    cr_assert_null(b.p);
    cr_assert_eq(b.len, 0);
    free(t);
}

Test(buf, integers_match_printf)
{
    static const int64_t v[] = {
        0,         1,         -1,           9, 10, 99, 100, 1423072800000LL, -1423072800000LL,
        INT64_MAX, INT64_MIN, INT64_MIN + 1};
    uint64_t st = 7;
    struct core_buf b;
    core_buf_init(&b, CORE_BUF_NO_CAP);
    for (size_t i = 0; i < sizeof(v) / sizeof(*v) + 100000; i++) {
        int64_t x = i < sizeof(v) / sizeof(*v) ? v[i] : (int64_t)splitmix(&st) >> (i % 63);
        char want[32];
        snprintf(want, sizeof(want), "%" PRId64, x);
        core_buf_reset(&b);
        core_buf_int(&b, x);
        cr_assert_str_eq(b.p, want);
    }
    core_buf_cleanup(&b);
}

Test(buf, json_strings_parse_back)
{
    static const char s[] = "a\"b\\c\n\r\t\x01\x1f\x7f\xc3\xa9/";
    struct core_buf b;
    json_t *v;
    core_buf_init(&b, CORE_BUF_NO_CAP);
    core_buf_json_str(&b, s, sizeof(s) - 1);
    cr_assert_str_eq(b.p, "\"a\\\"b\\\\c\\n\\r\\t\\u0001\\u001f\\u007f\xc3\xa9/\"");
    v = json_loads(b.p, JSON_DECODE_ANY, NULL);
    cr_assert_not_null(v, "escaped text must parse back: %s", b.p);
    cr_assert_eq(json_string_length(v), sizeof(s) - 1);
    cr_assert_eq(memcmp(json_string_value(v), s, sizeof(s) - 1), 0);
    json_decref(v);
    core_buf_cleanup(&b);
}

Test(buf, json_string_near_the_cap_counts_exactly)
{
    struct core_buf b;
    core_buf_init(&b, 12);
    core_buf_puts(&b, "0123");
    core_buf_json_str(&b, "abcdef", 6); /* 8 bytes: exactly fills 12, no worst-case refusal */
    cr_assert_eq(core_buf_status(&b), CORE_OK);
    cr_assert_str_eq(b.p, "0123\"abcdef\"");
    core_buf_reset(&b);
    core_buf_json_str(&b, "\n\n\n\n\n", 5); /* 12 bytes: fits */
    cr_assert_eq(core_buf_status(&b), CORE_OK);
    core_buf_json_str(&b, "", 0);
    cr_assert_eq(core_buf_status(&b), CORE_ETOOBIG);
    core_buf_cleanup(&b);
}

Test(buf, base64_rfc4648_vectors)
{
    static const char *want[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    struct core_buf b;
    core_buf_init(&b, 64);
    for (size_t n = 0; n <= 6; n++) {
        core_buf_reset(&b);
        core_buf_base64(&b, "foobar", n);
        cr_assert_str_eq(b.p ? b.p : "", want[n], "length %zu", n);
        cr_assert_eq(core_base64_len(n), strlen(want[n]));
    }
    core_buf_cleanup(&b);
}

Test(buf, base64_is_libsodiums_text)
{
    uint64_t st = 11;
    unsigned char in[700];
    char want[1000], got[1000];
    cr_assert_geq(sodium_init(), 0);
    for (int i = 0; i < 3000; i++) {
        size_t n = (size_t)(splitmix(&st) % sizeof(in));
        for (size_t k = 0; k < n; k++)
            in[k] = (unsigned char)splitmix(&st);
        sodium_bin2base64(want, sizeof(want), in, n, sodium_base64_VARIANT_ORIGINAL);
        memset(got, 0, sizeof(got));
        core_base64_encode(got, in, n);
        cr_assert_eq(core_base64_len(n), strlen(want), "n = %zu", n);
        cr_assert_str_eq(got, want, "n = %zu", n);
    }
}
