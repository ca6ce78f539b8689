/* producer_flags.c - the producer flags of `gcdp simulate` and `gcdp replay`
 * (producer_flags.h). */
#include "producer_flags.h"

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
