/* test_windows_cli.c - `gcdp windows` against an embedded broker: a gcdp.window/3 record is
 * printed as the gcdp.window/2 JSON text it encodes, a gcdp.window/2 record as it is, one line
 * each; a record that is neither is reported with its partition and offset (exit 1) and the
 * records after it are still printed; --max stops early; --end prints nothing already there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "broker.h"
#include "core/config.h"
#include "core/ksync.h"
#include "core/log.h"
#include "core/window_bin.h"
#include "test_support.h"

static struct core_config *cfg_for(const struct ts_broker *b)
{
    static const struct core_cfg_key *const tables[] = {core_config_keys};
    struct core_config *cfg = core_config_new(tables, 1);
    char eb[512];

    cr_assert_not_null(cfg);
    cr_assert_eq(core_config_set_arg(cfg, b->set_bootstrap, eb, sizeof(eb)), CORE_OK, "%s", eb);
    return cfg;
}

/* A two-node record, one node with imputed slots; its binary bytes and JSON text. */
static void sample_record(struct core_buf *bin, struct core_buf *json)
{
    static const int64_t imputed[] = {1423072260000, 1423072320000};
    struct core_wrec_node node[2] = {
        {"Temperature.mean", "mean", "Temperature", 0.25, 19.0, 25.0, 8, 2, 2, imputed},
        {"CO2.max", "max", "CO2", 0.875, 400.0, 2100.0, 10, 0, 0, NULL},
    };
    struct core_wrec r;

    core_wrec_init(&r);
    r.id = "room-1|1423072200000|cfg1";
    r.device = "room-1";
    r.config_version = "cfg1";
    r.start = 1423072200000;
    r.end = 1423072800000;
    r.n = 18;
    r.n_slots = 10;
    r.closed_early = "";
    r.interp_gap = 2;
    r.period_ms = 60000;
    r.norm = "clip_minmax";
    r.n_nodes = 2;
    r.node = node;
    core_buf_init(bin, CORE_BUF_NO_CAP);
    core_buf_init(json, CORE_BUF_NO_CAP);
    cr_assert_eq(core_wbin_encode(&r, bin), CORE_OK);
    core_wbin_to_json(&r, json);
    cr_assert_eq(core_buf_status(bin), CORE_OK);
    cr_assert_eq(core_buf_status(json), CORE_OK);
}

static void produce(const struct core_config *cfg, const char *const *vals, const size_t *lens,
                    size_t n)
{
    struct core_ksync_opts o = {.topic = core_config_str(cfg, "topics.windows")};
    struct core_ksync *p = NULL;
    char eb[512];

    cr_assert_eq(core_ksync_new(cfg, &o, &p, eb, sizeof(eb)), CORE_OK, "%s", eb);
    for (size_t i = 0; i < n; i++) /* one key: one partition, in this order */
        cr_assert_eq(
            core_ksync_send(p, "room-1", 6, vals[i], lens[i], NULL, NULL, 0, eb, sizeof(eb)),
            CORE_OK, "%s", eb);
    cr_assert_eq(core_ksync_flush(p, 30000, NULL, eb, sizeof(eb)), CORE_OK, "%s", eb);
    core_ksync_free(p);
}

Test(windows_cli, prints_both_encodings_and_reports_the_rest, .timeout = 180)
{
    struct ts_broker b;
    struct core_config *cfg;
    struct core_buf bin, json;
    char *dir = ts_tmpdir(), out[600], err[600], *text, *errs, expect[8192];
    static const char junk[] = "\xffGW\x03\x00 truncated";
    static const char pretty[] = "{\"schema\": \"gcdp.window/2\",\n \"id\": \"x\"}";

    core_log_level = CORE_LOG_OFF;
    ts_broker_start(&b, NULL);
    cfg = cfg_for(&b);
    sample_record(&bin, &json);
    const char *vals[] = {bin.p, json.p, junk, pretty, "[1,2]"};
    const size_t lens[] = {bin.len, json.len, sizeof(junk) - 1, sizeof(pretty) - 1, 5};
    produce(cfg, vals, lens, 5);

    const char *args[] = {"windows", "--set", b.set_bootstrap, "--idle", "3", NULL};
    snprintf(out, sizeof(out), "%s/out", dir);
    snprintf(err, sizeof(err), "%s/err", dir);
    cr_assert_eq(ts_wait(ts_spawn(args, out, err), 60000), 1, "a refused record: exit 1");
    text = ts_read_file(out, NULL);
    errs = ts_read_file(err, NULL);
    snprintf(expect, sizeof(expect), "%s\n%s\n%s\n", json.p, json.p,
             "{\"schema\": \"gcdp.window/2\",  \"id\": \"x\"}");
    cr_assert_str_eq(text, expect, "stderr: %s", errs);
    cr_assert(strstr(errs, "@2: ") && strstr(errs, "gcdp.window/3"), "%s", errs);
    cr_assert(strstr(errs, "@4: ") && strstr(errs, "not an object"), "%s", errs);
    cr_assert(strstr(errs, "3 printed, 2 refused"), "%s", errs);
    free(text);
    free(errs);

    /* --max stops early; exit 0 when every record read was printed */
    const char *two[] = {"windows", "--set", b.set_bootstrap, "--max", "2", "--idle", "30", NULL};
    cr_assert_eq(ts_wait(ts_spawn(two, out, err), 60000), 0);
    text = ts_read_file(out, NULL);
    snprintf(expect, sizeof(expect), "%s\n%s\n", json.p, json.p);
    cr_assert_str_eq(text, expect);
    free(text);

    /* --end: nothing written since it started */
    const char *end[] = {"windows", "--set", b.set_bootstrap, "--end", "--idle", "1", NULL};
    cr_assert_eq(ts_wait(ts_spawn(end, out, err), 60000), 0);
    text = ts_read_file(out, NULL);
    cr_assert_str_eq(text, "");
    free(text);

    core_buf_cleanup(&bin);
    core_buf_cleanup(&json);
    core_config_free(cfg);
    ts_broker_stop(&b);
    ts_rmtree(dir);
    free(dir);
}
