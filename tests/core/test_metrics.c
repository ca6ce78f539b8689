/* test_metrics.c - core/metrics.h (Prometheus text, /metrics and /healthz over HTTP);
 * core/kafka.h against an embedded broker is in tests/broker/test_kafka.c (label
 * integration). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>
#include <uv.h>

#include "broker.h"
#include "core/broker.h"
#include "core/config.h"
#include "core/kafka.h"
#include "core/kconf.h"
#include "core/log.h"
#include "core/metrics.h"

static void quiet(void)
{
    core_log_level = CORE_LOG_OFF;
}

TestSuite(metrics, .init = quiet);

Test(metrics, renders_help_type_once_and_labelled_series_together)
{
    struct core_metrics *m = core_metrics_new();
    struct core_metric *a =
        core_metrics_get(m, CORE_METRIC_COUNTER, "x_total", "reason=\"a\"", "things");
    struct core_metric *g = core_metrics_get(m, CORE_METRIC_GAUGE, "lag", NULL, "lag");
    struct core_metric *b =
        core_metrics_get(m, CORE_METRIC_COUNTER, "x_total", "reason=\"b\"", "things");
    char *text = NULL;

    cr_assert(a && b && g && a != b);
    cr_assert_eq(core_metrics_get(m, CORE_METRIC_COUNTER, "x_total", "reason=\"a\"", NULL), a,
                 "same name and labels must give the same series");
    core_metric_add(a, 3);
    core_metric_add(b, 1);
    core_metric_add(a, 2);
    core_metric_set(g, -1);
    cr_assert_eq(core_metrics_render(m, &text), CORE_OK);
    cr_assert_str_eq(text, "# HELP x_total things\n# TYPE x_total counter\n"
                           "x_total{reason=\"a\"} 5\nx_total{reason=\"b\"} 1\n"
                           "# HELP lag lag\n# TYPE lag gauge\nlag -1\n");
    free(text);
    core_metrics_free(m);
}

/* The /healthz client against the server: 200 "ok", then 503 with the reason; a closed port
 * is an error with errno, not an answer. */
Test(metrics, health_probe_reads_what_healthz_serves)
{
    struct core_metrics *m = core_metrics_new();
    char reason[256];
    int port = 0, code = -1;

    cr_assert_eq(core_metrics_serve(m, "127.0.0.1", 0, &port), CORE_OK);
    cr_assert_gt(port, 0);
    core_metrics_set_health(m, true, NULL);
    cr_assert_eq(core_metrics_probe_health("127.0.0.1", port, 3, &code, reason, sizeof(reason)),
                 CORE_OK);
    cr_assert_eq(code, 200);
    cr_assert_str_eq(reason, "ok");
    core_metrics_set_health(m, false, "consumer lagging");
    cr_assert_eq(core_metrics_probe_health("127.0.0.1", port, 3, &code, reason, sizeof(reason)),
                 CORE_OK);
    cr_assert_eq(code, 503);
    cr_assert_str_eq(reason, "consumer lagging");
    core_metrics_free(m);
    cr_assert_eq(core_metrics_probe_health("127.0.0.1", port, 1, &code, reason, sizeof(reason)),
                 CORE_EIO);
    cr_assert_eq(code, 0);
    cr_assert_eq(core_metrics_probe_health("not-an-ip", port, 1, &code, reason, sizeof(reason)),
                 CORE_EINVAL);
}

Test(metrics, refuses_series_beyond_the_cap)
{
    struct core_metrics *m = core_metrics_new();
    char lab[64];
    for (int i = 0; i < CORE_METRICS_MAX_SERIES; i++) {
        snprintf(lab, sizeof(lab), "i=\"%d\"", i);
        cr_assert_not_null(core_metrics_get(m, CORE_METRIC_COUNTER, "c", lab, "c"));
    }
    cr_assert_null(core_metrics_get(m, CORE_METRIC_COUNTER, "c", "i=\"x\"", "c"));
    core_metric_add(NULL, 1); /* NULL series are ignored */
    cr_assert_eq(core_metric_value(NULL), 0);
    core_metrics_free(m);
}

Test(metrics, serves_metrics_and_healthz_over_http)
{
    struct core_metrics *m = core_metrics_new();
    int port = 0, st = 0;
    char *body;

    core_metric_add(core_metrics_get(m, CORE_METRIC_COUNTER, "gcdp_test_total", NULL, "t"), 7);
    cr_assert_eq(core_metrics_serve(m, "127.0.0.1", 0, &port), CORE_OK);
    cr_assert_gt(port, 0);
    cr_assert_eq(core_metrics_serve(m, "127.0.0.1", 0, NULL), CORE_ESTATE);
    body = ts_http_get(port, "/metrics", &st);
    cr_assert_eq(st, 200);
    cr_assert_eq(ts_prom_value(body, "gcdp_test_total"), 7);
    free(body);
    body = ts_http_get(port, "/healthz", &st);
    cr_assert_eq(st, 503, "not healthy before the owner says so");
    cr_assert_str_eq(body, "starting\n");
    free(body);
    core_metrics_set_health(m, true, NULL);
    body = ts_http_get(port, "/healthz", &st);
    cr_assert_eq(st, 200);
    free(body);
    body = ts_http_get(port, "/nope", &st);
    cr_assert_eq(st, 404);
    free(body);
    core_metrics_free(m);
}

Test(metrics, rejects_a_bad_bind_address)
{
    struct core_metrics *m = core_metrics_new();
    cr_assert_eq(core_metrics_serve(m, "not-an-ip", 0, NULL), CORE_EINVAL);
    core_metrics_free(m);
}

/* ------------------------------------------------------------------------------------ */
