/* test_window_bin.c - the gcdp.window/3 codec (core/window_bin.h): round trips, every
 * truncation and an over-long record refused, named refusals (version, flags, non-finite,
 * strings, counts), and random byte mutations that either decode to a record re-encoding to
 * the same bytes or are refused (run under ASan in the debug build). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "core/window_bin.h"

static const int64_t imp_a[] = {60000, 120000, 240000};

/* A three-node record; the second node has three imputed slot times. */
static void sample(struct core_wrec *r, struct core_wrec_node *nd)
{
    memset(r, 0, sizeof(*r));
    r->id = "room1|0|0123456789abcdef";
    r->device = "room1";
    r->config_version = "0123456789abcdef";
    r->start = 0;
    r->end = 900000;
    r->n = 14;
    r->n_slots = 15;
    r->closed_early = "";
    r->interp_gap = 3;
    r->period_ms = 60000;
    r->norm = "clip_minmax";
    nd[0] = (struct core_wrec_node){"a.mean", "mean", "a", 0.25, -1.5, 40.0, 12, 0, 0, NULL};
    nd[1] = (struct core_wrec_node){"b.std", "std", "b", 0.0, 0.0, 1e300, 11, 2, 3, imp_a};
    nd[2] = (struct core_wrec_node){"c.count", "count", "c", 1.0, -0.0, 5.0, 1, 0, 0, NULL};
    r->n_nodes = 3;
    r->node = nd;
}

static unsigned char *encode(const struct core_wrec *r, size_t *len)
{
    struct core_buf b;

    core_buf_init(&b, CORE_BUF_NO_CAP);
    cr_assert_eq(core_wbin_encode(r, &b), CORE_OK);
    cr_assert_eq(core_buf_status(&b), CORE_OK);
    return (unsigned char *)core_buf_take(&b, len);
}

/* Decode p, re-encode the result: CORE_OK and the same bytes, or the decode's refusal. */
static core_err reencode_same(const unsigned char *p, size_t len, struct core_wrec *r)
{
    char eb[160] = "";
    core_err rc = core_wbin_decode(p, len, r, eb, sizeof(eb));
    unsigned char *q;
    size_t qlen;

    if (rc != CORE_OK) {
        cr_assert_neq(eb[0], '\0', "a refusal names its reason");
        return rc;
    }
    q = encode(r, &qlen);
    cr_assert_eq(qlen, len);
    cr_assert_eq(memcmp(p, q, len), 0, "decoded record re-encodes to the same bytes");
    free(q);
    return CORE_OK;
}

Test(window_bin, round_trip)
{
    struct core_wrec r, d;
    struct core_wrec_node nd[3];
    unsigned char *p;
    size_t len;

    sample(&r, nd);
    p = encode(&r, &len);
    cr_assert_eq(p[0], CORE_WBIN_MAGIC0, "first byte cannot start a JSON text");
    cr_assert(core_wbin_is(p, len));
    core_wrec_init(&d);
    cr_assert_eq(core_wbin_decode(p, len, &d, NULL, 0), CORE_OK);
    cr_assert_str_eq(d.id, r.id);
    cr_assert_str_eq(d.device, "room1");
    cr_assert_str_eq(d.config_version, r.config_version);
    cr_assert_eq(d.end, 900000);
    cr_assert_eq(d.n, 14);
    cr_assert_eq(d.n_slots, 15);
    cr_assert_not(d.excluded);
    cr_assert_eq(d.interp_gap, 3);
    cr_assert_eq(d.period_ms, 60000);
    cr_assert_str_eq(d.norm, "clip_minmax");
    cr_assert_eq(d.n_nodes, 3);
    for (size_t i = 0; i < 3; i++) {
        cr_assert_str_eq(d.node[i].name, nd[i].name);
        cr_assert_str_eq(d.node[i].stat, nd[i].stat);
        cr_assert_str_eq(d.node[i].channel, nd[i].channel);
        cr_assert_eq(memcmp(&d.node[i].value, &nd[i].value, sizeof(double)), 0);
        cr_assert_eq(memcmp(&d.node[i].clip_lo, &nd[i].clip_lo, sizeof(double)), 0, "bits");
        cr_assert_eq(d.node[i].clip_hi, nd[i].clip_hi);
        cr_assert_eq(d.node[i].n_node, nd[i].n_node);
        cr_assert_eq(d.node[i].max_run, nd[i].max_run);
        cr_assert_eq(d.node[i].n_imputed, nd[i].n_imputed);
    }
    cr_assert_eq(memcmp(d.node[1].imputed, imp_a, sizeof(imp_a)), 0);
    cr_assert_eq(reencode_same(p, len, &d), CORE_OK);
    core_wrec_cleanup(&d);
    free(p);
}

Test(window_bin, excluded_round_trip)
{
    struct core_wrec r = {0}, d;
    unsigned char *p;
    size_t len;

    r.id = "x|5|0123456789abcdef";
    r.device = "x";
    r.config_version = "0123456789abcdef";
    r.start = -5;
    r.end = 5;
    r.n = 1;
    r.n_slots = 2;
    r.excluded = true;
    r.exclude_reason = "low_coverage";
    r.exclude_detail = "channel a: 1 of 2 slots";
    r.closed_early = "flush";
    p = encode(&r, &len);
    core_wrec_init(&d);
    cr_assert_eq(core_wbin_decode(p, len, &d, NULL, 0), CORE_OK);
    cr_assert(d.excluded);
    cr_assert_eq(d.start, -5);
    cr_assert_str_eq(d.exclude_reason, "low_coverage");
    cr_assert_str_eq(d.exclude_detail, r.exclude_detail);
    cr_assert_str_eq(d.closed_early, "flush");
    cr_assert_eq(d.n_nodes, 0);
    cr_assert_eq(reencode_same(p, len, &d), CORE_OK);
    core_wrec_cleanup(&d);
    free(p);
}

Test(window_bin, every_truncation_and_overlong_refused)
{
    struct core_wrec r, d;
    struct core_wrec_node nd[3];
    unsigned char *p, *q;
    size_t len;
    char eb[160];

    sample(&r, nd);
    p = encode(&r, &len);
    core_wrec_init(&d);
    for (size_t k = 0; k < len; k++) {
        q = malloc(k ? k : 1); /* exact size: ASan sees any read past it */
        memcpy(q, p, k);
        eb[0] = '\0';
        cr_assert_eq(core_wbin_decode(q, k, &d, eb, sizeof(eb)), CORE_EPARSE, "%zu bytes", k);
        cr_assert_neq(eb[0], '\0');
        free(q);
    }
    q = malloc(len + 1);
    memcpy(q, p, len);
    q[len] = 0;
    cr_assert_eq(core_wbin_decode(q, len + 1, &d, eb, sizeof(eb)), CORE_EPARSE);
    cr_assert(strstr(eb, "trailing"), "%s", eb);
    free(q);
    core_wrec_cleanup(&d);
    free(p);
}

/* Offset just past the first occurrence of the n bytes s in p (must occur). */
static size_t after(const unsigned char *p, size_t len, const char *s, size_t n)
{
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(p + i, s, n) == 0)
            return i + n;
    cr_assert_fail("marker not found");
    return 0;
}

/* Decode p with byte at set to v; the refusal's reason must contain want. */
static void refused_with(const unsigned char *p, size_t len, size_t at, unsigned char v,
                         core_err want_rc, const char *want)
{
    unsigned char *q = malloc(len);
    struct core_wrec d;
    char eb[160] = "";

    memcpy(q, p, len);
    q[at] = v;
    core_wrec_init(&d);
    cr_assert_eq(core_wbin_decode(q, len, &d, eb, sizeof(eb)), want_rc, "byte %zu: %s", at, eb);
    cr_assert(strstr(eb, want), "byte %zu: '%s' lacks '%s'", at, eb, want);
    core_wrec_cleanup(&d);
    free(q);
}

Test(window_bin, named_refusals)
{
    struct core_wrec r, d;
    struct core_wrec_node nd[3];
    unsigned char *p;
    size_t len, at_nodes, at_value;
    double nan = NAN;

    sample(&r, nd);
    p = encode(&r, &len);
    refused_with(p, len, 0, '{', CORE_EPARSE, "magic");
    refused_with(p, len, 3, 2, CORE_EPARSE, "version");
    refused_with(p, len, 4, 4, CORE_EPARSE, "flags");
    refused_with(p, len, 7, 0, CORE_EPARSE, "id"); /* a NUL inside the id */
    /* n_nodes follows "clip_minmax\0"; the first value follows the first node's strings */
    at_nodes = after(p, len, "clip_minmax", 12);
    refused_with(p, len, at_nodes + 3, 0x7f, CORE_ETOOBIG, "n_nodes");
    refused_with(p, len, at_nodes, 200, CORE_EPARSE, "n_nodes larger than the record");
    at_value = after(p, len,
                     "\x01\x00"
                     "a",
                     4);                     /* the channel "a" and its NUL */
    memcpy(p + at_value, &nan, sizeof(nan)); /* little-endian hosts only, as CI is */
    core_wrec_init(&d);
    cr_assert_eq(core_wbin_decode(p, len, &d, NULL, 0), CORE_EPARSE, "NaN value refused");
    core_wrec_cleanup(&d);
    free(p);
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

Test(window_bin, mutations_decode_canonically_or_are_refused)
{
    struct core_wrec r, d;
    struct core_wrec_node nd[3];
    unsigned char *p, *q;
    size_t len, ok = 0;
    uint64_t seed = 2026;

    sample(&r, nd);
    p = encode(&r, &len);
    core_wrec_init(&d);
    for (int t = 0; t < 20000; t++) {
        q = malloc(len);
        memcpy(q, p, len);
        for (uint64_t k = 1 + splitmix(&seed) % 3; k > 0; k--) {
            uint64_t x = splitmix(&seed);
            q[x % len] = (unsigned char)(x >> 32);
        }
        ok += reencode_same(q, len, &d) == CORE_OK;
        free(q);
    }
    cr_assert_gt(ok, 0, "some mutations (values, counts) still decode");
    cr_assert_lt(ok, 20000, "some mutations are refused");
    core_wrec_cleanup(&d);
    free(p);
}
