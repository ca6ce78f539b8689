/* broker.c - the broker fixture, child processes and a minimal HTTP client for tests. */
#define _XOPEN_SOURCE 700
#include "broker.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>

#include "core/window_bin.h"
#include "test_support.h"

int64_t ts_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

void ts_sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

int ts_free_port(void)
{
    struct sockaddr_in sin = {.sin_family = AF_INET};
    socklen_t len = sizeof(sin);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;

    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert(fd >= 0 && bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
              getsockname(fd, (struct sockaddr *)&sin, &len) == 0);
    port = ntohs(sin.sin_port);
    close(fd);
    return port;
}

static void redirect(int fd, const char *path)
{
    int f = open(path ? path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (f >= 0) {
        dup2(f, fd);
        close(f);
    }
}

pid_t ts_spawn(const char *const *args, const char *out_path, const char *err_path)
{
    const char *argv[64];
    size_t n = 0;
    pid_t pid;

    argv[n++] = GCDP_BIN;
    for (; args[n - 1] && n < 63; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    pid = fork();
    cr_assert(pid >= 0, "fork failed");
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* A failed assertion ends the test process without ts_broker_stop(): children
         * (brokers, ingest processes) must not outlive it. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        redirect(1, out_path);
        redirect(2, err_path);
        execv(GCDP_BIN, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

int ts_wait(pid_t pid, int timeout_ms)
{
    int64_t end = ts_now_ms() + timeout_ms;
    int st;

    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (r < 0)
            return -1;
        if (ts_now_ms() >= end) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        ts_sleep_ms(20);
    }
}

void ts_broker_start(struct ts_broker *b, const char *const *extra)
{
    const char *args[40] = {"broker", "--bootstrap-file", NULL, "--log-level", "warn"};
    char log[600];
    size_t n = 5;
    int64_t deadline;
    char *text;

    memset(b, 0, sizeof(*b));
    b->dir = ts_tmpdir();
    snprintf(b->bootstrap_file, sizeof(b->bootstrap_file), "%s/kafka.bootstrap", b->dir);
    snprintf(log, sizeof(log), "%s/broker.log", b->dir);
    args[2] = b->bootstrap_file;
    for (size_t i = 0; extra && extra[i] && n < 38; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    b->pid = ts_spawn(args, NULL, log);
    deadline = ts_now_ms() + 20000;
    while (!(text = ts_read_file(b->bootstrap_file, NULL))) {
        cr_assert(ts_now_ms() < deadline, "broker did not write its bootstrap file");
        cr_assert(waitpid(b->pid, NULL, WNOHANG) == 0, "broker exited at start");
        ts_sleep_ms(20);
    }
    cr_assert(sscanf(text, "BOOTSTRAP %255s", b->bootstrap) == 1, "bad bootstrap file");
    free(text);
    snprintf(b->set_bootstrap, sizeof(b->set_bootstrap), "broker.bootstrap=@%s", b->bootstrap_file);
}

void ts_broker_stop(struct ts_broker *b)
{
    if (b->pid > 0) {
        kill(b->pid, SIGTERM);
        ts_wait(b->pid, 10000);
        b->pid = 0;
    }
    ts_rmtree(b->dir);
    free(b->dir);
    b->dir = NULL;
}

char *ts_http_get(int port, const char *path, int *status)
{
    struct sockaddr_in sin = {.sin_family = AF_INET};
    char req[512], *buf = NULL, *body;
    size_t len = 0, cap = 0;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ssize_t r;

    sin.sin_port = htons((uint16_t)port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
    if (write(fd, req, strlen(req)) < 0) {
        close(fd);
        return NULL;
    }
    for (;;) {
        if (cap - len < 4096) {
            cap = cap ? cap * 2 : 65536;
            buf = realloc(buf, cap);
        }
        r = read(fd, buf + len, cap - len - 1);
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    if (!buf)
        return NULL;
    buf[len] = '\0';
    if (sscanf(buf, "HTTP/1.%*d %d", status) != 1 || !(body = strstr(buf, "\r\n\r\n"))) {
        free(buf);
        return NULL;
    }
    body = strdup(body + 4);
    free(buf);
    return body;
}

int64_t ts_prom_value(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, series, n) == 0 && p[n] == ' ')
            return strtoll(p + n + 1, NULL, 10);
    }
    return -1;
}

int64_t ts_prom_sum(const char *text, const char *name)
{
    size_t n = strlen(name);
    int64_t sum = 0;
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, name, n) != 0 || (p[n] != ' ' && p[n] != '{'))
            continue;
        const char *sp = strchr(p, ' ');
        if (sp)
            sum += strtoll(sp + 1, NULL, 10);
    }
    return sum;
}

static char *dup_n(const void *p, size_t n)
{
    char *s = malloc(n + 1);
    cr_assert_not_null(s);
    if (n)
        memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

static void add_record(struct ts_record **out, size_t *n, size_t *cap, rd_kafka_message_t *m)
{
    struct ts_record *r;
    rd_kafka_headers_t *hdrs = NULL;
    const void *hv;
    size_t hl;

    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 1024;
        *out = realloc(*out, *cap * sizeof(**out));
        cr_assert_not_null(*out);
    }
    r = &(*out)[(*n)++];
    r->partition = m->partition;
    r->offset = m->offset;
    r->key = m->key ? dup_n(m->key, m->key_len) : NULL;
    r->value = dup_n(m->payload, m->payload ? m->len : 0);
    r->value_len = m->payload ? m->len : 0;
    if (m->payload && core_wbin_is(m->payload, m->len)) { /* gcdp.window/3 */
        struct core_wrec w;
        struct core_buf b;
        core_wrec_init(&w);
        cr_assert_eq(core_wbin_decode(m->payload, m->len, &w, NULL, 0), CORE_OK,
                     "a gcdp.window/3 record on the topic does not decode");
        core_buf_init(&b, CORE_BUF_NO_CAP);
        core_wbin_to_json(&w, &b);
        free(r->value);
        r->value = core_buf_take(&b, &r->value_len);
        core_wrec_cleanup(&w);
    }
    r->expected_reason = NULL;
    if (rd_kafka_message_headers(m, &hdrs) == 0 &&
        rd_kafka_header_get_last(hdrs, "gcdp-expected-reason", &hv, &hl) == 0 && hv)
        r->expected_reason = dup_n(hv, hl);
}

size_t ts_topic_read(const char *bootstrap, const char *topic, struct ts_record **out)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_t *rk;
    const rd_kafka_metadata_t *md = NULL;
    rd_kafka_topic_t *rkt;
    rd_kafka_topic_partition_list_t *asg;
    int64_t *hi;
    int np, done = 0;
    size_t n = 0, cap = 0;
    char eb[512];
    int64_t deadline;

    *out = NULL;
    cr_assert(rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, eb, sizeof(eb)) == 0);
    cr_assert(rd_kafka_conf_set(conf, "group.id", "ts-reader", eb, sizeof(eb)) == 0);
    cr_assert(rd_kafka_conf_set(conf, "enable.auto.commit", "false", eb, sizeof(eb)) == 0);
    cr_assert(rd_kafka_conf_set(conf, "fetch.wait.max.ms", "10", eb, sizeof(eb)) == 0);
    cr_assert(rd_kafka_conf_set(conf, "log_level", "3", eb, sizeof(eb)) == 0);
    rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, eb, sizeof(eb));
    cr_assert_not_null(rk, "%s", eb);
    rkt = rd_kafka_topic_new(rk, topic, NULL);
    cr_assert(rd_kafka_metadata(rk, 0, rkt, &md, 10000) == 0, "metadata for %s", topic);
    cr_assert(md->topic_cnt == 1 && md->topics[0].partition_cnt > 0, "topic %s missing", topic);
    np = md->topics[0].partition_cnt;
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    hi = calloc((size_t)np, sizeof(*hi));
    asg = rd_kafka_topic_partition_list_new(np);
    for (int p = 0; p < np; p++) {
        int64_t lo;
        cr_assert(rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &hi[p], 10000) == 0);
        rd_kafka_topic_partition_list_add(asg, topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
        if (hi[p] <= lo)
            done++;
    }
    cr_assert(rd_kafka_assign(rk, asg) == 0);
    rd_kafka_topic_partition_list_destroy(asg);
    deadline = ts_now_ms() + 60000;
    while (done < np) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        cr_assert(ts_now_ms() < deadline, "reading %s timed out", topic);
        if (!m)
            continue;
        if (!m->err && m->offset < hi[m->partition]) {
            add_record(out, &n, &cap, m);
            if (m->offset + 1 == hi[m->partition])
                done++;
        }
        rd_kafka_message_destroy(m);
    }
    free(hi);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return n;
}

void ts_records_free(struct ts_record *r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(r[i].key);
        free(r[i].value);
        free(r[i].expected_reason);
    }
    free(r);
}

int64_t ts_metric(int port, const char *series)
{
    int status = 0;
    char *body = ts_http_get(port, "/metrics", &status);
    int64_t v = body ? ts_prom_value(body, series) : -1;
    free(body);
    return v;
}

json_t *ts_topic_json(const char *bootstrap, const char *topic)
{
    struct ts_record *rec;
    size_t n = ts_topic_read(bootstrap, topic, &rec);
    json_t *a = json_array();

    for (size_t i = 0; i < n; i++) {
        json_t *v = json_loads(rec[i].value, 0, NULL);
        cr_assert_not_null(v, "%s: a record is not JSON", topic);
        json_object_set_new(v, "_partition", json_integer(rec[i].partition));
        json_object_set_new(v, "_offset", json_integer(rec[i].offset));
        json_array_append_new(a, v);
    }
    ts_records_free(rec, n);
    return a;
}

static const char *sort_key;

static int by_key(const void *a, const void *b)
{
    json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, sort_key));
    json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, sort_key));
    return x < y ? -1 : x > y;
}

json_t *ts_json_sorted_by(json_t *a, const char *key)
{
    size_t n = json_array_size(a);
    json_t **v = calloc(n ? n : 1, sizeof(*v)), *out = json_array();

    for (size_t i = 0; i < n; i++)
        v[i] = json_array_get(a, i);
    sort_key = key; /* tests are single-threaded */
    qsort(v, n, sizeof(*v), by_key);
    for (size_t i = 0; i < n; i++)
        json_array_append(out, v[i]);
    free(v);
    return out;
}
