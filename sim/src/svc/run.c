/* run.c - sim_run: the mote simulator's produce loop (sim/sim.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "core/mem.h"
#include "producer.h"
#include "sim/encode.h"
#include "sim/gen.h"
#include "sim/sim.h"
#include "truth.h"

/* Per-device fault state. */
struct dev_state {
    unsigned gap_left; /* readings still to skip in a "gap" fault */
    char *held;        /* an "out_of_order" message waiting for the device's next reading */
    size_t held_len;
};

struct run {
    const struct sim_options *o;
    struct sim_progress *pr;
    struct sim_gen *gen;
    struct sim_producer *prod;
    struct core_prng frng; /* fault decisions: a stream of its own so faults do not perturb
                            the data (same seed, same readings with or without faults) */
    struct dev_state *dev;
    double *values;
    char *buf;
    size_t cap;
    int64_t period_ms;
    const char *names[SIM_NCH];
};

static core_err check_options(const struct sim_options *o, char *eb, size_t ebn)
{
    double sum = 0.0;
    for (int k = 0; k < SIM_FAULT_COUNT; k++) {
        if (!(o->fault_rate[k] >= 0.0 && o->fault_rate[k] <= 1.0)) {
            snprintf(eb, ebn, "fault rate of '%s' not in [0, 1]", sim_fault_name(k));
            return CORE_EINVAL;
        }
        sum += o->fault_rate[k];
    }
    if (!(sum <= 1.0)) {
        snprintf(eb, ebn, "fault rates sum to %.6g > 1", sum);
        return CORE_EINVAL;
    }
    if (o->devices < 1 || o->devices > SIM_MAX_DEVICES) {
        snprintf(eb, ebn, "devices must be in 1..%d", SIM_MAX_DEVICES);
        return CORE_EINVAL;
    }
    if (!(o->rate >= 0.0) || !(o->duration_s >= 0.0) || !(o->period_s >= 0.001) ||
        !(o->period_s <= 86400.0) || !(o->late_s >= 0.0) || !(o->hetero_sd >= 0.0) ||
        !(o->spatial_coupling >= 0.0 && o->spatial_coupling < 1.0) ||
        !(o->ar >= 0.0 && o->ar < 1.0) || o->spatial_lag > SIM_MAX_LAG || o->oversize_bytes < 64 ||
        o->oversize_bytes > (size_t)64 * 1024 * 1024 || o->prod.max_inflight < 1 ||
        !isfinite(o->regime_change_at_s)) {
        snprintf(eb, ebn,
                 "option out of range (rate >= 0, duration >= 0, period in "
                 "[0.001, 86400] s, coupling and ar in [0, 1), lag <= %d, "
                 "oversize-bytes in [64, 64 MiB], max-inflight >= 1)",
                 SIM_MAX_LAG);
        return CORE_EINVAL;
    }
    return CORE_OK;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static core_err send_text(struct run *r, const char *id, const char *text, size_t len,
                          enum sim_fault f)
{
    return sim_producer_send(r->prod, id, strlen(id), text, len,
                             f < SIM_FAULT_COUNT ? sim_fault_name(f) : NULL);
}

static core_err encode(struct run *r, const struct sim_reading *rd, enum sim_fault f, size_t *len)
{
    core_err rc = sim_encode_reading(rd, f, &r->frng, r->o->oversize_bytes, r->buf, r->cap, len);
    if (rc != CORE_OK)
        CORE_ERROR("cannot encode a reading of %s: %s", rd->device, core_strerror(rc));
    return rc;
}

/* Emit device m's reading of this tick, applying at most one fault. */
static core_err emit_reading(struct run *r, struct sim_reading *rd, struct dev_state *d,
                             enum sim_fault f)
{
    size_t len = 0;
    core_err rc = CORE_OK;

    switch (f) {
    case SIM_FAULT_MISSING:
        break;
    case SIM_FAULT_GAP:
        d->gap_left = r->o->gap_ticks > 0 ? r->o->gap_ticks - 1 : 0;
        break;
    case SIM_FAULT_DUPLICATE:
        if ((rc = encode(r, rd, SIM_FAULT_COUNT, &len)) == CORE_OK &&
            (rc = send_text(r, rd->device, r->buf, len, SIM_FAULT_COUNT)) == CORE_OK)
            rc = send_text(r, rd->device, r->buf, len, f);
        break;
    case SIM_FAULT_OUT_OF_ORDER:
        if ((rc = encode(r, rd, SIM_FAULT_COUNT, &len)) == CORE_OK) {
            d->held = core_xmalloc(len + 1);
            memcpy(d->held, r->buf, len + 1);
            d->held_len = len;
        }
        break;
    case SIM_FAULT_LATE:
        /* half a period off the grid so it can never equal an earlier reading's ts */
        rd->ts_ms -= llround(r->o->late_s * 1000.0) + r->period_ms / 2;
        if ((rc = encode(r, rd, SIM_FAULT_COUNT, &len)) == CORE_OK)
            rc = send_text(r, rd->device, r->buf, len, f);
        break;
    default: /* message-level faults, or none (SIM_FAULT_COUNT) */
        if ((rc = encode(r, rd, f, &len)) == CORE_OK)
            rc = send_text(r, rd->device, r->buf, len, f);
    }
    /* an out-of-order message is counted when it is sent (after its successor) */
    if (rc == CORE_OK && f < SIM_FAULT_COUNT && f != SIM_FAULT_OUT_OF_ORDER)
        atomic_fetch_add(&r->pr->faults[f], 1);
    return rc;
}

static core_err send_held(struct run *r, const char *id, const char *held, size_t len)
{
    core_err rc = send_text(r, id, held, len, SIM_FAULT_OUT_OF_ORDER);
    if (rc == CORE_OK)
        atomic_fetch_add(&r->pr->faults[SIM_FAULT_OUT_OF_ORDER], 1);
    return rc;
}

static core_err emit_device(struct run *r, size_t m, int64_t ts_ms, uint64_t tick, double elapsed_s)
{
    struct dev_state *d = &r->dev[m];
    char id[32];
    struct sim_reading rd = {id, ts_ms, tick, r->names, &r->values[m * SIM_NCH], SIM_NCH};
    char *held = d->held;
    size_t held_len = d->held_len;
    enum sim_fault f;
    core_err rc = CORE_OK;

    snprintf(id, sizeof(id), "mote-%zu", m);
    d->held = NULL;
    atomic_fetch_add(&r->pr->generated, 1);
    if (d->gap_left > 0) {
        d->gap_left--;
    } else {
        f = sim_fault_pick(&r->frng, r->o->fault_rate);
        /* A reading can only be late relative to history the device has: before
         * late_s + one period of it exists the fault is not injected (nor counted). */
        if (f == SIM_FAULT_LATE && elapsed_s < r->o->late_s + r->o->period_s)
            f = SIM_FAULT_COUNT;
        /* one held message at a time per device */
        if (f == SIM_FAULT_OUT_OF_ORDER && held)
            f = SIM_FAULT_COUNT;
        rc = emit_reading(r, &rd, d, f);
    }
    if (held && rc == CORE_OK) { /* the previous reading, now after its successor */
        rc = send_held(r, id, held, held_len);
        free(held);
    } else if (held) { /* not sent now (stop or error): release_held() or cleanup() gets it */
        d->held = held;
        d->held_len = held_len;
    }
    return rc;
}

static core_err setup(struct run *r, const struct core_config *cfg, char *eb, size_t ebn)
{
    struct sim_gen_params gp;
    const struct sim_options *o = r->o;
    core_err rc;

    sim_gen_params_from_options(o, &gp);
    if ((rc = sim_gen_new(&gp, &r->gen)) != CORE_OK) {
        snprintf(eb, ebn, "invalid generator parameters");
        return rc;
    }
    if (o->truth_path && (rc = sim_truth_write(r->gen, o, o->truth_path, eb, ebn)) != CORE_OK)
        return rc;
    for (size_t c = 0; c < SIM_NCH; c++)
        r->names[c] = sim_gen_channel_info(c)->name;
    {
        uint64_t st = o->seed ^ 0x5ca1ab1e0ddba11ULL;
        core_prng_seed(&r->frng, core_splitmix64(&st));
    }
    r->period_ms = llround(o->period_s * 1000.0);
    r->cap = o->oversize_bytes + 4096;
    r->buf = core_xmalloc(r->cap);
    r->values = core_xcalloc(o->devices * SIM_NCH, sizeof(double));
    r->dev = core_xcalloc(o->devices, sizeof(*r->dev));
    return sim_producer_new(cfg, &o->prod, o->rate, o->oversize_bytes + 1, r->pr, &r->prod, eb,
                            ebn);
}

static void cleanup(struct run *r)
{
    if (r->dev)
        for (size_t m = 0; m < r->o->devices; m++)
            free(r->dev[m].held);
    free(r->dev);
    free(r->values);
    free(r->buf);
    sim_producer_free(r->prod);
    sim_gen_free(r->gen);
}

/* Send the out-of-order messages still held at the end (nothing generated is dropped). */
static core_err release_held(struct run *r)
{
    core_err rc = CORE_OK;
    char id[32];
    int stop = atomic_exchange(&r->pr->stop, 0); /* let the producer take these few */
    for (size_t m = 0; m < r->o->devices && rc == CORE_OK; m++) {
        if (!r->dev[m].held)
            continue;
        snprintf(id, sizeof(id), "mote-%zu", m);
        rc = send_held(r, id, r->dev[m].held, r->dev[m].held_len);
        free(r->dev[m].held);
        r->dev[m].held = NULL;
    }
    atomic_store(&r->pr->stop, stop);
    return rc;
}

static core_err loop(struct run *r)
{
    const struct sim_options *o = r->o;
    int64_t t0 = sim_now_ns(), wall0 = wall_ms();
    core_err rc = CORE_OK;

    for (uint64_t tick = 0; o->ticks == 0 || tick < o->ticks; tick++) {
        double wall_s = (double)(sim_now_ns() - t0) * 1e-9;
        double elapsed_s = o->wall_clock ? wall_s : (double)tick * o->period_s;
        int64_t ts;
        unsigned regime = o->regime_change_at_s >= 0.0 && elapsed_s >= o->regime_change_at_s;

        if (atomic_load(&r->pr->stop) || (o->duration_s > 0.0 && wall_s >= o->duration_s))
            break;
        if (o->wall_clock) { /* real time: one tick per period */
            int64_t due = t0 + (int64_t)((double)tick * o->period_s * 1e9);
            if (o->duration_s > 0.0 && (double)(due - t0) * 1e-9 >= o->duration_s)
                break; /* the next tick would fall after the end */
            sim_producer_sleep_until(r->prod, due);
            if (atomic_load(&r->pr->stop))
                break;
            ts = wall_ms();
        } else {
            ts = o->start_ms + (int64_t)tick * r->period_ms;
        }
        sim_gen_tick(r->gen, ts, (double)(ts - (o->wall_clock ? wall0 : o->start_ms)) / 86400000.0,
                     regime, r->values);
        for (size_t m = 0; m < o->devices && rc == CORE_OK; m++)
            rc = emit_device(r, m, ts, tick, elapsed_s);
        if (rc != CORE_OK)
            break;
    }
    if (rc == CORE_ESTATE) /* stop requested while waiting to send: a clean stop */
        rc = CORE_OK;
    return rc;
}

core_err sim_run(const struct core_config *cfg, const struct sim_options *o,
                 struct sim_progress *pr, char *eb, size_t ebn)
{
    struct run r;
    core_err rc, frc;

    memset(&r, 0, sizeof(r));
    if (ebn > 0)
        eb[0] = '\0';
    r.o = o;
    r.pr = pr;
    if ((rc = check_options(o, eb, ebn)) != CORE_OK)
        return rc;
    if ((rc = setup(&r, cfg, eb, ebn)) != CORE_OK)
        goto out;
    CORE_INFO("simulating %zu devices, seed %llu, rate %.6g/s", o->devices,
              (unsigned long long)o->seed, o->rate);
    rc = loop(&r);
    if (rc == CORE_OK)
        rc = release_held(&r);
    frc = sim_producer_finish(r.prod, o->prod.flush_timeout_ms);
    if (rc == CORE_OK && frc != CORE_OK) {
        snprintf(eb, ebn, "%llu message(s) not delivered",
                 (unsigned long long)atomic_load(&pr->failed));
        rc = frc;
    } else if (rc != CORE_OK && !eb[0]) {
        snprintf(eb, ebn, "producer error: %s", core_strerror(rc));
    }
out:
    cleanup(&r);
    return rc;
}
