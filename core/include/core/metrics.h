/* core/metrics.h - process metrics in the Prometheus text format, served with /healthz.
 * SPDX-License-Identifier: Apache-2.0
 *
 * A registry holds integer counters and gauges, each a (name, labels) pair. Values are
 * 64-bit atomics: the loop thread updates them, the HTTP thread (libmicrohttpd internal
 * polling thread) reads them; registration takes a mutex, so a new label value (a new
 * rejection reason) can appear at any time.
 * Invariant (DESIGN §7.4): metrics carry counts and reasons, never protected values.
 *
 * Thread-safety: every function is thread-safe except _free, which must run last.
 */
#ifndef CORE_METRICS_H
#define CORE_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* Caps (STYLE P8): metric series per registry, label text, rendered page. */
#define CORE_METRICS_MAX_SERIES 512
#define CORE_METRICS_MAX_LABELS 160

struct core_metrics;
struct core_metric; /* one series; owned by its registry, valid until core_metrics_free */

enum core_metric_type { CORE_METRIC_COUNTER, CORE_METRIC_GAUGE };

/* New empty registry; caller frees with core_metrics_free(). */
struct core_metrics *core_metrics_new(void);

/* Stop the HTTP server (if any) and free every series. NULL-safe. */
void core_metrics_free(struct core_metrics *m);

/* Find or create the series name{labels}.
 *   name    "gcdp_consumed_total"; borrowed (copied).
 *   labels  NULL or the label text without braces, e.g. "reason=\"bad_json\"" (copied).
 *   help    one line for # HELP (copied the first time a name is seen).
 * Returns a series owned by m, or NULL when CORE_METRICS_MAX_SERIES is reached or the
 * labels exceed CORE_METRICS_MAX_LABELS (the caller counts such updates nowhere: it is
 * logged once). */
struct core_metric *core_metrics_get(struct core_metrics *m, enum core_metric_type type,
                                     const char *name, const char *labels, const char *help);

/* Counter increment / gauge set / read. NULL series are ignored (read gives 0). */
void core_metric_add(struct core_metric *s, uint64_t delta);
void core_metric_set(struct core_metric *s, int64_t value);
int64_t core_metric_value(const struct core_metric *s);

/* Health reported by /healthz: 200 "ok" when healthy, 503 with the reason otherwise.
 *   reason  borrowed (copied); ignored when healthy. */
void core_metrics_set_health(struct core_metrics *m, bool healthy, const char *reason);

/* Render the Prometheus text exposition (version 0.0.4).
 *   out  on CORE_OK a new NUL-terminated string; caller frees with free(). */
CORE_MUST_CHECK core_err core_metrics_render(struct core_metrics *m, char **out);

/* Serve GET /metrics and GET /healthz on bind_addr:port in a libmicrohttpd thread.
 *   port        1..65535, or 0 to let the OS choose (the bound port goes to *bound_port).
 *   bound_port  optional out.
 * Returns CORE_OK, CORE_EINVAL (bad address), CORE_EIO (bind/listen failed), CORE_ESTATE
 * (already serving). */
CORE_MUST_CHECK core_err core_metrics_serve(struct core_metrics *m, const char *bind_addr, int port,
                                            int *bound_port);

/* Probe a running service's health: one plain HTTP/1.0 GET /healthz to host:port (an IPv4
 * address), send and receive each bounded by timeout_s seconds.
 *   code    out: the status line's code (200 healthy, 503 not), 0 when there was no HTTP
 *           answer.
 *   reason  out: the first line of the body ("ok" or the reason), rn bytes, "" when none.
 * Returns CORE_OK when an answer (or none) was read; CORE_EINVAL (host not an IPv4 address)
 * or CORE_EIO (socket, connect or send failed), errno then saying why. */
CORE_MUST_CHECK core_err core_metrics_probe_health(const char *host, int port, double timeout_s,
                                                   int *code, char *reason, size_t rn);

#endif /* CORE_METRICS_H */
