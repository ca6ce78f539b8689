/* producer.c - paced, loss-free producer (see producer.h). */
#include "producer.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/ksync.h"
#include "core/log.h"
#include "core/mem.h"
#include "lagguard.h"

struct sim_producer {
    struct core_ksync *ks;
    struct sim_bucket bucket;
    size_t max_inflight;
    uint64_t produce_errors; /* counted in progress->failed but never in ->sent */
    struct sim_progress *progress;
    struct sim_lagguard *guard; /* NULL: no consumer-lag back-pressure */
    uint64_t bytes_sent;        /* payload + key bytes, for the mean message size */
    uint64_t bytes_at_check;    /* bytes_sent at the last lag check */
    int64_t next_check_ns;
};

/* Lag checks: every 100 ms, and whenever 1/8 of the allowed lag was produced since. */
#define LAG_CHECK_NS 100000000

int64_t sim_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void on_delivery(void *arg, rd_kafka_resp_err_t err)
{
    struct sim_progress *pr = arg;
    if (err) {
        atomic_fetch_add(&pr->failed, 1);
        CORE_WARN("delivery failed: %s", rd_kafka_err2str(err));
    } else {
        atomic_fetch_add(&pr->acked, 1);
    }
}

core_err sim_producer_new(const struct core_config *cfg, const struct sim_producer_opts *po,
                          double rate, size_t max_bytes, struct sim_progress *progress,
                          struct sim_producer **out, char *eb, size_t ebn)
{
    struct core_ksync_opts ko = {
        .topic = po->topic ? po->topic : core_config_str(cfg, "topics.raw"),
        .max_message_bytes = max_bytes,
        .on_delivery = on_delivery,
        .arg = progress,
        .stop = &progress->stop,
        .retries = &progress->retries,
    };
    struct sim_producer *p = core_xcalloc(1, sizeof(*p));
    core_err rc = core_ksync_new(cfg, &ko, &p->ks, eb, ebn);

    if (rc != CORE_OK) {
        free(p);
        return rc;
    }
    p->max_inflight = po->max_inflight ? po->max_inflight : 1;
    p->progress = progress;
    sim_bucket_init(&p->bucket, rate, rate > 0.0 ? rate / 100.0 + 1.0 : 1.0, sim_now_ns());
    if (po->lag_group) {
        rc = sim_lagguard_new(cfg, core_ksync_handle(p->ks), ko.topic, po->lag_group,
                              po->max_lag_bytes, &p->guard, eb, ebn);
        if (rc != CORE_OK) {
            sim_producer_free(p);
            return rc;
        }
    }
    *out = p;
    return CORE_OK;
}

void sim_producer_sleep_until(struct sim_producer *p, int64_t deadline_ns)
{
    for (;;) {
        int64_t now = sim_now_ns();
        int ms;
        if (now >= deadline_ns || atomic_load(&p->progress->stop))
            return;
        ms = (int)((deadline_ns - now) / 1000000);
        /* poll serves delivery reports; sub-millisecond waits sleep instead */
        if (ms >= 1) {
            core_ksync_poll(p->ks, ms > 100 ? 100 : ms);
        } else {
            struct timespec ts = {0, (long)(deadline_ns - now)};
            core_ksync_poll(p->ks, 0);
            nanosleep(&ts, NULL);
        }
    }
}

/* Consumer-lag back-pressure (lagguard.h): wait while the watched group lags too far. */
static core_err wait_for_consumer(struct sim_producer *p)
{
    uint_fast64_t sent = atomic_load(&p->progress->sent);
    double mean = sent ? (double)p->bytes_sent / (double)sent : 200.0, lag = 0.0;
    size_t limit = sim_lagguard_limit(p->guard);

    if (sim_now_ns() < p->next_check_ns && p->bytes_sent - p->bytes_at_check < limit / 8)
        return CORE_OK;
    /* fail closed: an unanswered query counts as "too far behind" */
    while (sim_lagguard_max_lag(p->guard, mean, &lag) != CORE_OK || lag > (double)limit) {
        if (atomic_load(&p->progress->stop))
            return CORE_ESTATE;
        atomic_fetch_add(&p->progress->lag_waits, 1);
        core_ksync_poll(p->ks, 100);
    }
    p->bytes_at_check = p->bytes_sent;
    p->next_check_ns = sim_now_ns() + LAG_CHECK_NS;
    return CORE_OK;
}

/* Wait for a token and for in-flight room. CORE_ESTATE when stop is requested. */
static core_err wait_turn(struct sim_producer *p)
{
    int64_t wait;
    while ((wait = sim_bucket_take(&p->bucket, sim_now_ns())) > 0) {
        if (atomic_load(&p->progress->stop))
            return CORE_ESTATE;
        sim_producer_sleep_until(p, sim_now_ns() + wait);
    }
    /* Bound unacknowledged messages: the producer cannot run ahead of the broker. */
    while (core_ksync_inflight(p->ks) >= p->max_inflight) {
        if (atomic_load(&p->progress->stop))
            return CORE_ESTATE;
        atomic_fetch_add(&p->progress->retries, 1);
        core_ksync_poll(p->ks, 5);
    }
    core_ksync_poll(p->ks, 0);
    return p->guard ? wait_for_consumer(p) : CORE_OK;
}

core_err sim_producer_send_hdrs(struct sim_producer *p, const char *key, size_t key_len,
                                const char *payload, size_t len, const char *const *names,
                                const char *const *values, size_t nhdr)
{
    char why[512];
    core_err rc = wait_turn(p);

    if (rc == CORE_OK)
        rc = core_ksync_send(p->ks, key, key ? key_len : 0, payload, len, names, values, nhdr, why,
                             sizeof(why));
    if (rc == CORE_EKAFKA) {
        p->produce_errors++;
        atomic_fetch_add(&p->progress->failed, 1);
        CORE_ERROR("%s", why);
    }
    if (rc != CORE_OK)
        return rc; /* CORE_ESTATE: not produced; nothing is lost, the run just ends here */
    atomic_fetch_add(&p->progress->sent, 1);
    p->bytes_sent += len + (key ? key_len : 0);
    return CORE_OK;
}

core_err sim_producer_send(struct sim_producer *p, const char *key, size_t key_len,
                           const char *payload, size_t len, const char *fault)
{
    static const char *const name[1] = {"gcdp-fault"};
    const char *value[1] = {fault};
    return sim_producer_send_hdrs(p, key, key_len, payload, len, name, value, fault ? 1 : 0);
}

core_err sim_producer_finish(struct sim_producer *p, int timeout_ms)
{
    uint64_t left = 0;
    char why[512];

    if (core_ksync_flush(p->ks, timeout_ms, &left, why, sizeof(why)) != CORE_OK && left > 0) {
        CORE_ERROR("flush timed out after %d ms: %llu messages not acknowledged", timeout_ms,
                   (unsigned long long)left);
        atomic_fetch_add(&p->progress->failed, left);
    }
    return atomic_load(&p->progress->failed) == 0 ? CORE_OK : CORE_EKAFKA;
}

void sim_producer_free(struct sim_producer *p)
{
    if (!p)
        return;
    sim_lagguard_free(p->guard); /* before the producer it borrows */
    core_ksync_free(p->ks);
    free(p);
}
