/* targets.c - see targets.h. */
#define _GNU_SOURCE /* memfd_create */
#include "targets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <jansson.h>

#include "cal/config.h"
#include "cal/matrix.h"
#include "cal/theta.h"
#include "core/config.h"
#include "core/dp_ledger.h"
#include "core/kconf.h"
#include "ing/config.h"
#include "lrn/config.h"
#include "lrn/csvio.h"
#include "rel/config.h"
#include "rel/plan.h"
#include "rel/release.h"
#include "sim/config.h"

/* θ over three channel-named nodes and one statistic-named node, identity coordinates. */
static struct cal_theta *fuzz_theta_fixture(void)
{
    static const char *names[] = {"temperature", "humidity", "co2", "light.max"};
    struct cal_theta *t = NULL;
    if (cal_theta_new(4, 4, &t) != CORE_OK)
        abort();
    for (size_t m = 0; m < 4; m++) {
        if (cal_theta_set_node(t, m, names[m]) != CORE_OK)
            abort();
        t->exposure[m] = 0.25 * (double)m;
        t->mu[m] = 0.5;
    }
    if (cal_theta_set_identity_coords(t) != CORE_OK)
        abort();
    t->version = 1;
    return t;
}

int gcdp_fuzz_window(const uint8_t *data, size_t size)
{
    static struct cal_theta *t;
    struct rel_window w;
    char eb[512];

    if (!t)
        t = fuzz_theta_fixture();
    rel_window_init(&w, t);
    /* either encoding: a first byte 0xFF takes the gcdp.window/3 decoder */
    if (rel_window_from_bytes((const char *)data, size, &w, eb, sizeof(eb)) == CORE_OK &&
        !w.excluded) {
        /* a record that parses must also build (or refuse) a plan without crashing */
        struct rel_opts o;
        struct rel_plan *p = NULL;
        memset(&o, 0, sizeof(o));
        o.mech = rel_mech_find("gcdp");
        o.eps_rel = 1.0;
        o.alloc = (struct rel_alloc_params){1.0, 1.0, 0.7, 1e-8, 0.0};
        o.query = (struct rel_query_params){10, 10000, 0};
        o.slot_ms = 60000;
        o.cap = (struct core_dp_cost){10, 0, 1e-5};
        o.profile = &w.prof;
        if (rel_plan_new(t, &o, &p, eb, sizeof(eb)) == CORE_OK) {
            (void)rel_plan_covers(p, &w.prof, eb, sizeof(eb));
            rel_plan_free(p);
        }
    }
    rel_window_cleanup(&w);
    return 0;
}

static int count_row(void *arg, const struct core_dp_row *row)
{
    (void)row;
    (*(size_t *)arg)++;
    return 0;
}

int gcdp_fuzz_ledger(const uint8_t *data, size_t size)
{
    int fd = memfd_create("gcdp-fuzz-ledger", 0);
    char path[64], eb[512] = "";
    struct core_dp_scheme sc;
    struct core_dp_cost cap;
    uint64_t torn = 0;
    size_t rows = 0;

    if (fd < 0)
        return 0;
    if (write(fd, data, size) == (ssize_t)size) {
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        core_err rc = core_dp_ledger_scan(path, &sc, &cap, count_row, &rows, &torn, eb, sizeof(eb));
        if (rc != CORE_OK && !eb[0])
            abort(); /* a refusal always says why */
    }
    close(fd);
    return 0;
}

int gcdp_fuzz_theta(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    json_t *j = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr), *back = NULL;
    struct cal_theta *t = NULL;
    char eb[512];

    if (j && cal_theta_from_json(j, &t, eb, sizeof(eb)) == CORE_OK) {
        if (cal_theta_to_json(t, &back, eb, sizeof(eb)) != CORE_OK)
            abort(); /* a θ that loads must serialize */
        json_decref(back);
        cal_theta_free(t);
    }
    json_decref(j);
    return 0;
}

int gcdp_fuzz_config(const uint8_t *data, size_t size)
{
    static const struct core_cfg_key *const tables[] = {core_config_keys, ing_config_keys,
                                                        sim_config_keys,  cal_config_keys,
                                                        rel_config_keys,  lrn_config_keys};
    struct core_config *cfg = core_config_new(tables, sizeof(tables) / sizeof(*tables));
    char *arg = malloc(size + 1), eb[512];

    if (!cfg || !arg)
        abort();
    memcpy(arg, data, size);
    arg[size] = '\0'; /* a --set argument is a C string: bytes after a NUL are not seen */
    eb[0] = '\0';
    if (core_config_set_arg(cfg, arg, eb, sizeof(eb)) != CORE_OK && !eb[0])
        abort(); /* a refusal always names what is wrong */
    free(arg);
    core_config_free(cfg);
    return 0;
}

int gcdp_fuzz_csv(const uint8_t *data, size_t size)
{
    int fd = memfd_create("gcdp-fuzz-csv", 0);
    char path[64], eb[512] = "";
    unsigned which = size ? data[0] % 3u : 0u;

    if (fd < 0 || size == 0) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    if (write(fd, data + 1, size - 1) == (ssize_t)(size - 1)) {
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        if (which == 2) {
            struct lrn_csv *c = NULL;
            if (lrn_csv_read(path, 0, 1, &c, eb, sizeof(eb)) != CORE_OK && !eb[0])
                abort(); /* a refusal always says why */
            lrn_csv_free(c);
        } else {
            struct cal_matrix *mx = NULL;
            if (cal_matrix_load_ts(path, which ? CAL_FORMAT_OCCUPANCY : CAL_FORMAT_CSV,
                                   which ? NULL : "label", which ? NULL : "ts", 10000, &mx, eb,
                                   sizeof(eb)) != CORE_OK &&
                !eb[0])
                abort();
            cal_matrix_free(mx);
        }
    }
    close(fd);
    return 0;
}
