/* options.c - fault names and parsing, option defaults, progress summary (sim/sim.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "sim/config.h"
#include "sim/sim.h"

static const char *const fault_names[SIM_FAULT_COUNT] = {
#define X(name, str, help) str,
    SIM_FAULT_MAP(X)
#undef X
};

const char *sim_fault_name(enum sim_fault f)
{
    return (int)f >= 0 && f < SIM_FAULT_COUNT ? fault_names[f] : NULL;
}

void sim_progress_init(struct sim_progress *p)
{
    atomic_init(&p->stop, 0);
    atomic_init(&p->generated, 0);
    atomic_init(&p->sent, 0);
    atomic_init(&p->acked, 0);
    atomic_init(&p->failed, 0);
    atomic_init(&p->retries, 0);
    atomic_init(&p->lag_waits, 0);
    for (int k = 0; k < SIM_FAULT_COUNT; k++)
        atomic_init(&p->faults[k], 0);
}

/* The rows of sim_config_keys bound in group grp into obj (their defaults are stated only
 * there; core_config_new and tests/sim/test_options.c check that they fit). */
static void table_defaults(unsigned grp, void *obj)
{
    char eb[160];
    if (core_cfg_defaults(sim_config_keys, grp, obj, eb, sizeof(eb)) != CORE_OK)
        CORE_ERROR("%s", eb); /* a bug in the table: the fields keep 0, which the commands'
                                 checks refuse (devices, in-flight cap) */
}

void sim_producer_opts_default(struct sim_producer_opts *p)
{
    p->topic = NULL;
    p->flush_timeout_ms = 30000;
    p->lag_group = NULL;
    p->max_inflight = 0;
    p->max_lag_bytes = 0;
    table_defaults(SIM_KEYS_PRODUCER, p); /* sim.max_inflight, sim.max_lag_bytes */
}

void sim_gen_params_from_options(const struct sim_options *o, struct sim_gen_params *p)
{
    sim_gen_params_default(p);
    p->devices = o->devices;
    p->seed = o->seed;
    p->hetero_sd = o->hetero_sd;
    p->spatial_coupling = o->spatial_coupling;
    p->spatial_lag = o->spatial_lag;
    p->ar = o->ar;
    memcpy(p->ch, o->channel, sizeof(p->ch));
}

void sim_options_default(struct sim_options *o)
{
    memset(o, 0, sizeof(*o));
    table_defaults(SIM_KEYS_OPTIONS, o); /* devices, seed, rate, ticks, duration, start, ... */
    o->period_s = 60.0;           /* = ingest.period_ms default (the Intel Lab motes used ~31 s) */
    o->regime_change_at_s = -1.0; /* sim.regime_change_at_s unset */
    for (size_t c = 0; c < SIM_NCH; c++)
        o->channel[c] = *sim_gen_channel_info(c);
    o->oversize_bytes = 65536; /* = ingest.max_message_bytes default */
    o->truth_path = NULL;
    sim_producer_opts_default(&o->prod);
}

void sim_replay_options_default(struct sim_replay_options *o)
{
    memset(o, 0, sizeof(*o));
    o->format = SIM_REPLAY_OCCUPANCY;
    o->device = "occupancy";
    o->speed = 0.0;
    o->rate = 5000.0;
    sim_producer_opts_default(&o->prod);
}

/* One "kind=rate" item of length n. */
static core_err parse_item(const char *item, size_t n, double *rates, char *eb, size_t ebn)
{
    const char *eq = memchr(item, '=', n);
    char name[64], num[64], *end;
    double v;
    size_t kl;

    if (!eq || (kl = (size_t)(eq - item)) == 0 || kl >= sizeof(name) || n - kl - 1 == 0 ||
        n - kl - 1 >= sizeof(num)) {
        snprintf(eb, ebn, "fault spec item '%.*s' is not kind=rate", (int)(n > 60 ? 60 : n), item);
        return CORE_ECONFIG;
    }
    memcpy(name, item, kl);
    name[kl] = '\0';
    memcpy(num, eq + 1, n - kl - 1);
    num[n - kl - 1] = '\0';
    v = strtod(num, &end);
    if (*end != '\0' || !(v >= 0.0 && v <= 1.0)) {
        snprintf(eb, ebn, "fault rate '%s' for '%s' is not a number in [0, 1]", num, name);
        return CORE_ECONFIG;
    }
    if (strcmp(name, "all") == 0) {
        for (int k = 0; k < SIM_FAULT_COUNT; k++)
            rates[k] = v;
        return CORE_OK;
    }
    for (int k = 0; k < SIM_FAULT_COUNT; k++) {
        if (strcmp(name, fault_names[k]) == 0) {
            rates[k] = v;
            return CORE_OK;
        }
    }
    snprintf(eb, ebn, "unknown fault kind '%s' (kinds: see gcdp simulate --help)", name);
    return CORE_ECONFIG;
}

core_err sim_faults_parse(const char *spec, double rates[SIM_FAULT_COUNT], char *eb, size_t ebn)
{
    double tmp[SIM_FAULT_COUNT], sum = 0.0;
    const char *p = spec;

    memcpy(tmp, rates, sizeof(tmp));
    while (*p) {
        size_t n = strcspn(p, ",");
        core_err rc;
        if (n > 0 && (rc = parse_item(p, n, tmp, eb, ebn)) != CORE_OK)
            return rc;
        p += n;
        if (*p == ',')
            p++;
    }
    for (int k = 0; k < SIM_FAULT_COUNT; k++)
        sum += tmp[k];
    if (!(sum <= 1.0)) {
        snprintf(eb, ebn, "fault rates sum to %.6g > 1", sum);
        return CORE_ECONFIG;
    }
    memcpy(rates, tmp, sizeof(tmp));
    return CORE_OK;
}

void sim_progress_print(const struct sim_progress *p, void *file)
{
    FILE *f = file;
    fprintf(f,
            "{\"generated\":%llu,\"sent\":%llu,\"acked\":%llu,\"failed\":%llu,"
            "\"retries\":%llu,\"lag_waits\":%llu,\"faults\":{",
            (unsigned long long)atomic_load(&p->generated),
            (unsigned long long)atomic_load(&p->sent), (unsigned long long)atomic_load(&p->acked),
            (unsigned long long)atomic_load(&p->failed),
            (unsigned long long)atomic_load(&p->retries),
            (unsigned long long)atomic_load(&p->lag_waits));
    for (int k = 0; k < SIM_FAULT_COUNT; k++)
        fprintf(f, "%s\"%s\":%llu", k ? "," : "", fault_names[k],
                (unsigned long long)atomic_load(&p->faults[k]));
    fprintf(f, "}}\n");
    fflush(f);
}

/* sim.channel_params: {channel: {base?, scale?, amp?, offset_sd?}} over the built-in table. */
static core_err channel_params(const struct core_config *cfg, struct sim_options *o, char *eb,
                               size_t ebn)
{
    static const char *const fields[] = {"base", "scale", "amp", "offset_sd"};
    const json_t *all = core_config_json(cfg, "sim.channel_params");
    const char *name;
    json_t *v;

    if (!all || json_is_null(all))
        return CORE_OK;
    if (!json_is_object(all))
        goto bad;
    json_object_foreach((json_t *)all, name, v)
    {
        int c = sim_gen_channel_index(name);
        const char *f;
        json_t *x;
        if (c < 0 || !json_is_object(v)) {
            snprintf(eb, ebn,
                     "config key 'sim.channel_params': '%s' is not a simulated channel "
                     "(temperature, humidity, light, voltage) with an object of parameters",
                     name);
            return CORE_ECONFIG;
        }
        json_object_foreach(v, f, x)
        {
            double *dst[] = {&o->channel[c].base, &o->channel[c].scale, &o->channel[c].amp,
                             &o->channel[c].offset_sd};
            size_t k = 0;
            while (k < 4 && strcmp(fields[k], f) != 0)
                k++;
            if (k == 4 || !json_is_number(x) || !isfinite(json_number_value(x)) ||
                (k != 0 && k != 2 && json_number_value(x) < 0)) {
                snprintf(eb, ebn,
                         "config key 'sim.channel_params': %s.%s: expected base, amp "
                         "(numbers) or scale, offset_sd (numbers >= 0)",
                         name, f);
                return CORE_ECONFIG;
            }
            *dst[k] = json_number_value(x);
        }
    }
    return CORE_OK;
bad:
    snprintf(eb, ebn, "config key 'sim.channel_params': expected an object or null");
    return CORE_ECONFIG;
}

core_err sim_options_from_config(const struct core_config *cfg, struct sim_options *o, char *eb,
                                 size_t ebn)
{
    const char *faults = core_config_str(cfg, "sim.faults");
    char why[256];

    sim_options_default(o);
    core_cfg_read(cfg, sim_config_keys, SIM_KEYS_OPTIONS, o); /* the table's bound rows */
    core_cfg_read(cfg, sim_config_keys, SIM_KEYS_PRODUCER, &o->prod);
    if (core_config_is_set(cfg, "sim.period_ms"))
        o->period_s = (double)core_config_int(cfg, "sim.period_ms") / 1000.0;
    else if (core_config_is_set(cfg, "ingest.period_ms"))
        o->period_s = (double)core_config_int(cfg, "ingest.period_ms") / 1000.0;
    if (core_config_is_set(cfg, "sim.regime_change_at_s"))
        o->regime_change_at_s = core_config_double(cfg, "sim.regime_change_at_s");
    if (core_config_is_set(cfg, "sim.oversize_bytes"))
        o->oversize_bytes = (size_t)core_config_int(cfg, "sim.oversize_bytes");
    else if (core_config_is_set(cfg, "ingest.max_message_bytes"))
        o->oversize_bytes = (size_t)core_config_int(cfg, "ingest.max_message_bytes");
    o->truth_path = core_config_str(cfg, "sim.truth_path");
    if (channel_params(cfg, o, eb, ebn) != CORE_OK)
        return CORE_ECONFIG;
    o->prod.lag_group = core_config_str(cfg, "sim.lag_group");
    if (faults && faults[0] &&
        sim_faults_parse(faults, o->fault_rate, why, sizeof(why)) != CORE_OK) {
        snprintf(eb, ebn, "config key 'sim.faults': %s", why);
        return CORE_ECONFIG;
    }
    return CORE_OK;
}
