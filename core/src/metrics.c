/* metrics.c - Prometheus text registry and the libmicrohttpd /metrics + /healthz server. */
#include "core/metrics.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/log.h"
#include "core/mem.h"

struct core_metric {
    enum core_metric_type type;
    char *name;
    char *labels; /* NULL: no labels */
    char *help;   /* only on the first series of a name */
    _Atomic int64_t value;
};

struct core_metrics {
    pthread_mutex_t lock; /* guards series[], nseries, health_reason, full_logged */
    struct core_metric *series[CORE_METRICS_MAX_SERIES];
    size_t nseries;
    atomic_bool healthy;
    char health_reason[160];
    bool full_logged;
    struct MHD_Daemon *httpd;
};

struct core_metrics *core_metrics_new(void)
{
    struct core_metrics *m = core_xcalloc(1, sizeof(*m));
    pthread_mutex_init(&m->lock, NULL);
    atomic_init(&m->healthy, false);
    snprintf(m->health_reason, sizeof(m->health_reason), "starting");
    return m;
}

void core_metrics_free(struct core_metrics *m)
{
    if (!m)
        return;
    if (m->httpd)
        MHD_stop_daemon(m->httpd);
    for (size_t i = 0; i < m->nseries; i++) {
        free(m->series[i]->name);
        free(m->series[i]->labels);
        free(m->series[i]->help);
        free(m->series[i]);
    }
    pthread_mutex_destroy(&m->lock);
    free(m);
}

static bool same_labels(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

struct core_metric *core_metrics_get(struct core_metrics *m, enum core_metric_type type,
                                     const char *name, const char *labels, const char *help)
{
    struct core_metric *s = NULL;
    bool seen_name = false;

    if (labels && strlen(labels) > CORE_METRICS_MAX_LABELS)
        return NULL;
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < m->nseries; i++) {
        if (strcmp(m->series[i]->name, name) != 0)
            continue;
        seen_name = true;
        if (same_labels(m->series[i]->labels, labels)) {
            s = m->series[i];
            goto out;
        }
    }
    if (m->nseries == CORE_METRICS_MAX_SERIES) {
        if (!m->full_logged)
            CORE_WARN("metrics registry full (%d series); '%s' not exported",
                      CORE_METRICS_MAX_SERIES, name);
        m->full_logged = true;
        goto out;
    }
    s = core_xcalloc(1, sizeof(*s));
    s->type = type;
    s->name = core_xstrdup(name);
    s->labels = labels ? core_xstrdup(labels) : NULL;
    s->help = (!seen_name && help) ? core_xstrdup(help) : NULL;
    atomic_init(&s->value, 0);
    m->series[m->nseries++] = s;
out:
    pthread_mutex_unlock(&m->lock);
    return s;
}

void core_metric_add(struct core_metric *s, uint64_t delta)
{
    if (s)
        atomic_fetch_add_explicit(&s->value, (int64_t)delta, memory_order_relaxed);
}

void core_metric_set(struct core_metric *s, int64_t value)
{
    if (s)
        atomic_store_explicit(&s->value, value, memory_order_relaxed);
}

int64_t core_metric_value(const struct core_metric *s)
{
    return s ? atomic_load_explicit(&s->value, memory_order_relaxed) : 0;
}

void core_metrics_set_health(struct core_metrics *m, bool healthy, const char *reason)
{
    pthread_mutex_lock(&m->lock);
    snprintf(m->health_reason, sizeof(m->health_reason), "%s", healthy ? "ok" : reason);
    atomic_store(&m->healthy, healthy);
    pthread_mutex_unlock(&m->lock);
}

core_err core_metrics_render(struct core_metrics *m, char **out)
{
    struct core_buf b;

    core_buf_init(&b, CORE_BUF_NO_CAP); /* at most CORE_METRICS_MAX_SERIES short lines */
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < m->nseries; i++) {
        const struct core_metric *s = m->series[i];
        /* Emit HELP/TYPE once per name, before its first series; keep series of a name
         * together by scanning forward (n is small: at most CORE_METRICS_MAX_SERIES). */
        if (!s->help)
            continue;
        core_buf_printf(&b, "# HELP %s %s\n# TYPE %s %s\n", s->name, s->help, s->name,
                        s->type == CORE_METRIC_COUNTER ? "counter" : "gauge");
        for (size_t j = i; j < m->nseries; j++) {
            const struct core_metric *t = m->series[j];
            if (strcmp(t->name, s->name) != 0)
                continue;
            if (t->labels)
                core_buf_printf(&b, "%s{%s} %lld\n", t->name, t->labels,
                                (long long)core_metric_value(t));
            else
                core_buf_printf(&b, "%s %lld\n", t->name, (long long)core_metric_value(t));
        }
    }
    pthread_mutex_unlock(&m->lock);
    *out = core_buf_take(&b, NULL);
    return CORE_OK;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, char *body,
                             enum MHD_ResponseMemoryMode mode, const char *ctype)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body, mode);
    enum MHD_Result ret;

    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", ctype);
    ret = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  // NOLINTNEXTLINE: libmicrohttpd's signature
                                  size_t *upload_data_size, void **con_cls)
{
    struct core_metrics *m = cls;
    char health[200], *text = NULL;

    (void)version;
    (void)upload_data;
    (void)upload_data_size;
    (void)con_cls;
    if (strcmp(method, "GET") != 0)
        return reply(c, 405, "method not allowed\n", MHD_RESPMEM_PERSISTENT, "text/plain");
    if (strcmp(url, "/metrics") == 0) {
        if (core_metrics_render(m, &text) != CORE_OK)
            return MHD_NO;
        return reply(c, 200, text, MHD_RESPMEM_MUST_FREE, "text/plain; version=0.0.4");
    }
    if (strcmp(url, "/healthz") == 0) {
        pthread_mutex_lock(&m->lock);
        snprintf(health, sizeof(health), "%s\n", m->health_reason);
        pthread_mutex_unlock(&m->lock);
        return reply(c, atomic_load(&m->healthy) ? 200 : 503, health, MHD_RESPMEM_MUST_COPY,
                     "text/plain");
    }
    return reply(c, 404, "not found\n", MHD_RESPMEM_PERSISTENT, "text/plain");
}

core_err core_metrics_serve(struct core_metrics *m, const char *bind_addr, int port,
                            int *bound_port)
{
    struct sockaddr_in sa;
    const union MHD_DaemonInfo *info;

    if (m->httpd)
        return CORE_ESTATE;
    if (port < 0 || port > 65535)
        return CORE_EINVAL;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, bind_addr, &sa.sin_addr) != 1)
        return CORE_EINVAL;
    m->httpd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, (uint16_t)port,
                                NULL, NULL, on_request, m, MHD_OPTION_SOCK_ADDR,
                                (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_LIMIT, 16u,
                                MHD_OPTION_CONNECTION_TIMEOUT, 5u, MHD_OPTION_END);
    if (!m->httpd)
        return CORE_EIO;
    info = MHD_get_daemon_info(m->httpd, MHD_DAEMON_INFO_BIND_PORT);
    if (bound_port)
        *bound_port = info ? (int)info->port : port;
    return CORE_OK;
}

/* The client side of /healthz (`gcdp healthcheck`, the image's HEALTHCHECK): HTTP/1.0. */
core_err core_metrics_probe_health(const char *host, int port, double timeout_s, int *code,
                                   char *reason, size_t rn)
{
    static const char req[] = "GET /healthz HTTP/1.0\r\nHost: localhost\r\n\r\n";
    long ms = (long)(timeout_s * 1000);
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000 * 1000)};
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    char buf[2048];
    size_t got = 0;
    ssize_t n;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const char *body;

    *code = 0;
    reason[0] = '\0';
    if (fd < 0 || inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        if (fd >= 0)
            close(fd);
        errno = fd < 0 ? errno : EINVAL;
        return fd < 0 ? CORE_EIO : CORE_EINVAL;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof(req) - 1)) {
        int e = errno;
        close(fd);
        errno = e;
        return CORE_EIO;
    }
    while (got + 1 < sizeof(buf) && (n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0)) > 0)
        got += (size_t)n;
    close(fd);
    buf[got] = '\0';
    *code = 0; /* "HTTP/1.x NNN ..." */
    if (strncmp(buf, "HTTP/1.", 7) == 0 && isdigit((unsigned char)buf[7]) && buf[8] == ' ' &&
        isdigit((unsigned char)buf[9]) && isdigit((unsigned char)buf[10]) &&
        isdigit((unsigned char)buf[11]))
        *code = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
    body = strstr(buf, "\r\n\r\n");
    if (body)
        snprintf(reason, rn, "%.*s", (int)strcspn(body + 4, "\r\n"), body + 4);
    return CORE_OK;
}
