/* producer_flags.c - the producer flags of `gcdp simulate` and `gcdp replay`
 * (producer_flags.h). */
#include "producer_flags.h"

#include <stdlib.h>

#include "flags.h"

static const struct option prod_opts[] = {APP_PROD_FLAG_OPTIONS};

/* s as an integer in [lo, hi] into *out; 0 or -1. */
static int parse_range(const char *s, unsigned long long lo, unsigned long long hi,
                       unsigned long long *out)
{
    unsigned long long v;
    if (app_flag_parse_u64(s, hi, &v) != 0 || v < lo)
        return -1;
    *out = v;
    return 0;
}

int app_prod_flags_apply(const char *cmd, int c, const char *arg, struct sim_producer_opts *p)
{
    unsigned long long u = 0;
    int bad = 0;

    switch (c) {
    case APP_PROD_O_TOPIC:
        p->topic = arg;
        break;
    case APP_PROD_O_INFLIGHT:
        bad = parse_range(arg, APP_PROD_INFLIGHT_MIN, APP_PROD_INFLIGHT_MAX, &u);
        if (!bad)
            p->max_inflight = (size_t)u;
        break;
    case APP_PROD_O_FLUSH:
        bad = parse_range(arg, 0, APP_PROD_FLUSH_MS_MAX, &u);
        if (!bad)
            p->flush_timeout_ms = (int)u;
        break;
    case APP_PROD_O_LAG_GROUP:
        p->lag_group = arg[0] ? arg : NULL;
        break;
    case APP_PROD_O_MAX_LAG:
        bad = parse_range(arg, APP_PROD_MAX_LAG_MIN, APP_PROD_MAX_LAG_MAX, &u);
        if (!bad)
            p->max_lag_bytes = (size_t)u;
        break;
    default:
        return 1;
    }
    if (!bad)
        return 0;
    for (size_t i = 0; i < sizeof(prod_opts) / sizeof(prod_opts[0]); i++)
        if (prod_opts[i].val == c)
            fprintf(stderr, "gcdp %s: invalid value '%s' for --%s\n", cmd, arg, prod_opts[i].name);
    return -1;
}

void app_prod_flags_help(FILE *f, int width, const struct sim_producer_opts *d)
{
    /* a continuation line prints "" in the flag column */
    fprintf(f, "  %-*soverride topics.raw\n", width, "--topic T");
    fprintf(f, "  %-*scap on unacknowledged messages, %llu..%llu\n", width, "--max-inflight N",
            APP_PROD_INFLIGHT_MIN, APP_PROD_INFLIGHT_MAX);
    fprintf(f, "  %-*s(default %zu)\n", width, "", d->max_inflight);
    fprintf(f, "  %-*sfinal flush bound in ms, 0..%llu (default %d)\n", width, "--flush-timeout MS",
            APP_PROD_FLUSH_MS_MAX, d->flush_timeout_ms);
    fprintf(f, "  %-*swait while consumer group G lags more than --max-lag-bytes\n", width,
            "--lag-group G");
    fprintf(f, "  %-*son any partition (committed offsets; e.g. gcdp-ingest);\n", width, "");
    fprintf(f, "  %-*sdefault: sim.lag_group (unset = none)\n", width, "");
    fprintf(f, "  %-*sallowed per-partition lag of G, %llu..%llu\n", width, "--max-lag-bytes N",
            APP_PROD_MAX_LAG_MIN, APP_PROD_MAX_LAG_MAX);
    fprintf(f, "  %-*s(default sim.max_lag_bytes, %zu)\n", width, "", d->max_lag_bytes);
}
