/* producer.c - paced, loss-free producer (see producer.h). */
#include "producer.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <librdkafka/rdkafka.h>

#include "core/kconf.h"
#include "core/log.h"
#include "core/mem.h"
#include "lagguard.h"

struct sim_producer {
    rd_kafka_t *rk;
    char *topic;
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

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    struct sim_progress *pr = opaque;
    (void)rk;
    if (m->err) {
        atomic_fetch_add(&pr->failed, 1);
        CORE_WARN("delivery failed: %s", rd_kafka_err2str(m->err));
    } else {
        atomic_fetch_add(&pr->acked, 1);
    }
}

core_err sim_producer_new(const struct core_config *cfg, const struct sim_producer_opts *po,
                          double rate, size_t max_bytes, struct sim_progress *progress,
                          struct sim_producer **out, char *eb, size_t ebn)
{
    rd_kafka_conf_t *conf = NULL;
    struct sim_producer *p = NULL;
    char why[512], num[32];
    core_err rc;

    rc = core_kafka_conf_new(cfg, CORE_KAFKA_PRODUCER, NULL, &conf, eb, ebn);
    if (rc != CORE_OK)
        return rc;
    if (max_bytes + 1024 > 1000000) { /* librdkafka's default message.max.bytes */
        snprintf(num, sizeof(num), "%zu", max_bytes + 65536);
        rc = core_kafka_conf_set(conf, "message.max.bytes", num, eb, ebn);
        if (rc != CORE_OK) {
            rd_kafka_conf_destroy(conf);
            return rc;
        }
    }
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_opaque(conf, progress);
    p = core_xcalloc(1, sizeof(*p));
    p->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof(why));
    if (!p->rk) {
        rd_kafka_conf_destroy(conf); /* rd_kafka_new takes conf on success only */
        snprintf(eb, ebn, "cannot create producer: %s", why);
        free(p);
        return CORE_EKAFKA;
    }
    /* log.queue=true in the profile: route client logs to the main queue we poll */
    rd_kafka_set_log_queue(p->rk, NULL);
    p->topic = core_xstrdup(po->topic ? po->topic : core_config_str(cfg, "topics.raw"));
    p->max_inflight = po->max_inflight ? po->max_inflight : 1;
    p->progress = progress;
    sim_bucket_init(&p->bucket, rate, rate > 0.0 ? rate / 100.0 + 1.0 : 1.0, sim_now_ns());
    if (po->lag_group) {
        rc = sim_lagguard_new(cfg, p->rk, p->topic, po->lag_group, po->max_lag_bytes, &p->guard, eb,
                              ebn);
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
            rd_kafka_poll(p->rk, ms > 100 ? 100 : ms);
        } else {
            struct timespec ts = {0, (long)(deadline_ns - now)};
            rd_kafka_poll(p->rk, 0);
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
        rd_kafka_poll(p->rk, 100);
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
    while ((size_t)rd_kafka_outq_len(p->rk) >= p->max_inflight) {
        if (atomic_load(&p->progress->stop))
            return CORE_ESTATE;
        atomic_fetch_add(&p->progress->retries, 1);
        rd_kafka_poll(p->rk, 5);
    }
    rd_kafka_poll(p->rk, 0);
    return p->guard ? wait_for_consumer(p) : CORE_OK;
}

/* One produce attempt; the headers (built here) are freed unless librdkafka took them. */
static rd_kafka_resp_err_t produce_once(struct sim_producer *p, const char *key, size_t key_len,
                                        const char *payload, size_t len, const char *const *names,
                                        const char *const *values, size_t nhdr)
{
    rd_kafka_headers_t *h = NULL;
    rd_kafka_resp_err_t err;
    rd_kafka_error_t *error;
    rd_kafka_vu_t vu[5];

    if (nhdr > 0) {
        h = rd_kafka_headers_new(nhdr);
        for (size_t i = 0; i < nhdr; i++)
            if (values[i])
                rd_kafka_header_add(h, names[i], -1, values[i], -1);
    }
    /* produceva, not producev: the RD_KAFKA_V_* macros are GNU statement expressions */
    vu[0].vtype = RD_KAFKA_VTYPE_TOPIC;
    vu[0].u.cstr = p->topic;
    vu[1].vtype = RD_KAFKA_VTYPE_KEY;
    vu[1].u.mem.ptr = (void *)key;
    vu[1].u.mem.size = key ? key_len : 0;
    vu[2].vtype = RD_KAFKA_VTYPE_VALUE;
    vu[2].u.mem.ptr = (void *)payload;
    vu[2].u.mem.size = len;
    vu[3].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
    vu[3].u.i = RD_KAFKA_MSG_F_COPY;
    vu[4].vtype = RD_KAFKA_VTYPE_HEADERS;
    vu[4].u.headers = h;
    error = rd_kafka_produceva(p->rk, vu, h ? 5 : 4);
    err = error ? rd_kafka_error_code(error) : RD_KAFKA_RESP_ERR_NO_ERROR;
    if (error)
        rd_kafka_error_destroy(error);
    if (err && h)
        rd_kafka_headers_destroy(h); /* producev takes the headers on success only */
    return err;
}

core_err sim_producer_send_hdrs(struct sim_producer *p, const char *key, size_t key_len,
                                const char *payload, size_t len, const char *const *names,
                                const char *const *values, size_t nhdr)
{
    rd_kafka_resp_err_t err;
    core_err rc = wait_turn(p);

    if (rc != CORE_OK)
        return rc;
    while ((err = produce_once(p, key, key_len, payload, len, names, values, nhdr)) ==
           RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        if (atomic_load(&p->progress->stop))
            return CORE_ESTATE; /* not produced: nothing is lost, the run just ends here */
        /* never drop: serve delivery reports until the local queue has room */
        atomic_fetch_add(&p->progress->retries, 1);
        rd_kafka_poll(p->rk, 50);
    }
    if (err) {
        p->produce_errors++;
        atomic_fetch_add(&p->progress->failed, 1);
        CORE_ERROR("produce to %s failed: %s", p->topic, rd_kafka_err2str(err));
        return CORE_EKAFKA;
    }
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
    int left;
    rd_kafka_resp_err_t err = rd_kafka_flush(p->rk, timeout_ms);
    rd_kafka_poll(p->rk, 0);
    left = rd_kafka_outq_len(p->rk);
    if (err || left > 0) {
        /* outq also counts internal requests; count only messages still unacknowledged */
        uint_fast64_t sent = atomic_load(&p->progress->sent);
        uint_fast64_t done = atomic_load(&p->progress->acked) + atomic_load(&p->progress->failed) -
                             p->produce_errors;
        if (sent > done) {
            CORE_ERROR("flush timed out after %d ms: %llu messages not acknowledged", timeout_ms,
                       (unsigned long long)(sent - done));
            atomic_fetch_add(&p->progress->failed, sent - done);
        }
    }
    return atomic_load(&p->progress->failed) == 0 ? CORE_OK : CORE_EKAFKA;
}

void sim_producer_free(struct sim_producer *p)
{
    if (!p)
        return;
    sim_lagguard_free(p->guard); /* before the producer it borrows */
    rd_kafka_destroy(p->rk);
    free(p->topic);
    free(p);
}
