/* test_window_bin.c - ingest.output.format = binary: the engine's gcdp.window/3 records carry
 * exactly what its gcdp.window/2 JSON records say (decoded and printed back as window/2 by
 * core_wbin_to_json, they equal the JSON writer's records member for member), excluded and
 * early-closed windows included; the format stays out of config_version. */
#include "core/kconf.h"
#include "core/window_bin.h"
#include "ing/config.h"
#include "ing_test.h"

struct raw {
    char *rec[32];
    size_t len[32], n;
};

static void raw_on_window(void *arg, const char *key, size_t key_len, const char *p, size_t len,
                          const struct ing_window_info *info)
{
    struct raw *r = arg;

    (void)key;
    (void)key_len;
    (void)info;
    cr_assert_lt(r->n, 32);
    r->rec[r->n] = malloc(len + 1);
    memcpy(r->rec[r->n], p, len);
    r->len[r->n++] = len;
}

/* Three 10-minute windows of device m1 (temperature, humidity): a short gap (imputed), a
 * long gap (excluded), and a last one closed early by the flush; all five features. */
static void run(enum ing_out_format fmt, struct raw *out)
{
    struct ing_params p;
    struct ing_engine *e;
    struct ing_sink s = {raw_on_window, NULL, out};
    char buf[256];
    long long off = 0;

    ing_params_default(&p);
    p.window_ms = 10 * T_MIN;
    p.hop_ms = p.window_ms;
    p.period_ms = T_MIN;
    p.lateness_ms = 0;
    p.min_coverage = 0.0;
    p.max_interp_gap = 2;
    p.features = ING_F_MEAN | ING_F_COUNT | ING_F_MIN | ING_F_MAX | ING_F_STD;
    p.out_format = fmt;
    memset(out, 0, sizeof(*out));
    e = mk_engine(&p);
    for (int k = 0; k < 25; k++) {
        struct ing_source src = {"sensors.raw", 0, off++};
        int n;
        if (k == 3 || k == 4 || (k >= 12 && k <= 16))
            continue; /* gap of 2 (imputed) in window 0, of 5 (long_gap) in window 1 */
        n = snprintf(buf, sizeof(buf),
                     "{\"schema\":\"gcdp.reading/1\",\"device\":\"m1\",\"ts\":%lld,"
                     "\"readings\":{\"temperature\":%.17g,\"humidity\":%d}}",
                     T0 + k * T_MIN + 7000, 12.5 + 0.37 * k, 30 + k % 7);
        cr_assert_eq(ing_engine_push(e, buf, (size_t)n, "m1", 2, &src, 0, &s, NULL), CORE_OK);
    }
    ing_engine_flush(e, &s);
    ing_engine_free(e);
}

static void raw_free(struct raw *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->rec[i]);
}

Test(window_bin, binary_records_say_what_the_json_records_say)
{
    struct raw js, bin;
    struct core_wrec r;
    struct core_buf b;
    char eb[200];
    bool saw_imputed = false, saw_excluded = false, saw_early = false;

    run(ING_OUT_JSON, &js);
    run(ING_OUT_BINARY, &bin);
    cr_assert_eq(js.n, 3);
    cr_assert_eq(bin.n, js.n);
    core_wrec_init(&r);
    core_buf_init(&b, CORE_BUF_NO_CAP);
    for (size_t i = 0; i < js.n; i++) {
        json_error_t je;
        json_t *a = json_loadb(js.rec[i], js.len[i], 0, &je), *c;
        cr_assert_not_null(a, "%s", je.text);
        cr_assert_eq((unsigned char)bin.rec[i][0], CORE_WBIN_MAGIC0);
        cr_assert_lt(bin.len[i], js.len[i], "window %zu: binary is smaller", i);
        cr_assert_eq(core_wbin_decode(bin.rec[i], bin.len[i], &r, eb, sizeof(eb)), CORE_OK, "%s",
                     eb);
        core_buf_reset(&b);
        core_wbin_to_json(&r, &b);
        c = json_loadb(b.p, b.len, 0, &je);
        cr_assert_not_null(c, "%s: %s", je.text, b.p);
        cr_assert(json_equal(a, c), "window %zu:\n json   %s\n binary %s", i, js.rec[i], b.p);
        saw_imputed |= !r.excluded && r.node[0].n_imputed > 0;
        saw_excluded |= r.excluded;
        saw_early |= r.closed_early[0] != '\0';
        json_decref(a);
        json_decref(c);
    }
    cr_assert(saw_imputed && saw_excluded && saw_early, "the run covers what it should");
    core_buf_cleanup(&b);
    core_wrec_cleanup(&r);
    raw_free(&js);
    raw_free(&bin);
}

Test(window_bin, output_format_is_a_key_outside_config_version)
{
    static const struct core_cfg_key *const tables[] = {core_config_keys, ing_config_keys};
    struct core_config *cfg = core_config_new(tables, 2);
    struct ing_params pj, pb;
    char eb[256] = "";

    cr_assert_not_null(cfg);
    cr_assert_eq(ing_params_from_config(cfg, &pj, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(pj.out_format, ING_OUT_BINARY, "gcdp.window/3 by default");
    cr_assert_eq(core_config_set(cfg, "ingest.output.format", "json", "flag", eb, sizeof(eb)),
                 CORE_OK, "%s", eb);
    cr_assert_eq(ing_params_from_config(cfg, &pb, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(pb.out_format, ING_OUT_JSON);
    cr_assert_str_eq(pj.config_version, pb.config_version, "same windows, same ids");
    cr_assert_neq(core_config_set(cfg, "ingest.output.format", "xml", "flag", eb, sizeof(eb)),
                  CORE_OK);
    core_config_free(cfg);
}
