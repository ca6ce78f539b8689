/* broker.h - test fixture: a `gcdp broker` child process on a free loopback port.
 * SPDX-License-Identifier: Apache-2.0
 *
 * ts_broker_start() runs GCDP_BIN broker with a bootstrap file in a fresh temp dir, waits
 * until the file appears (the broker is then serving), and returns. ts_broker_stop() sends
 * SIGTERM, waits (SIGKILL after 10 s) and removes the temp dir. Also: free ports, child
 * processes of gcdp with captured output, and a tiny HTTP GET for /metrics.
 * Never linked into gcdp. Thread-safety: single-threaded tests only.
 */
#ifndef GCDP_TEST_BROKER_H
#define GCDP_TEST_BROKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

struct ts_broker {
    pid_t pid;
    char *dir; /* temp dir; holds the bootstrap file and child logs */
    char bootstrap_file[512];
    char bootstrap[256];     /* "127.0.0.1:PORT" */
    char set_bootstrap[600]; /* "broker.bootstrap=@<file>" for --set */
};

/* Start a broker; extra_args (NULL-terminated, may be NULL) go to `gcdp broker`
 * (e.g. "--partitions", "8", "--topic", "x:2"). Aborts the test on failure. */
void ts_broker_start(struct ts_broker *b, const char *const *extra_args);
void ts_broker_stop(struct ts_broker *b);

/* A TCP port on 127.0.0.1 that was free a moment ago. */
int ts_free_port(void);

/* Spawn GCDP_BIN with args (args[0] is the subcommand; NULL-terminated); stdout and
 * stderr go to out_path / err_path (NULL: /dev/null). The child is SIGKILLed if the test
 * process dies first (PR_SET_PDEATHSIG), so a failed assertion leaks no process.
 * Returns the pid; aborts on failure. */
pid_t ts_spawn(const char *const *args, const char *out_path, const char *err_path);

/* Wait for pid up to timeout_ms; returns the exit status (0..255), 128+signal, or -1 on
 * timeout (the process is then SIGKILLed and reaped). */
int ts_wait(pid_t pid, int timeout_ms);

/* GET http://127.0.0.1:port/path; returns a new string with the body (free()) and the
 * status code in *status, or NULL on connection failure. */
char *ts_http_get(int port, const char *path, int *status);

/* Value of the Prometheus series `series` (exact text before the value, e.g.
 * "gcdp_ingest_consumed_total" or "gcdp_ingest_rejected_total{reason=\"late\"}") in text;
 * -1 when absent. */
int64_t ts_prom_value(const char *text, const char *series);

/* Sum of every series of metric name (with any labels). */
int64_t ts_prom_sum(const char *text, const char *name);

/* One record read back from a topic. Strings are NUL-terminated copies. */
struct ts_record {
    int32_t partition;
    int64_t offset;
    char *key;   /* NULL when the record has no key */
    char *value; /* "" for an empty payload */
    size_t value_len;
    char *expected_reason; /* header gcdp-expected-reason, or NULL */
};

/* Read every record of topic (all partitions, from the log start to the high watermark at
 * the time of the call) from bootstrap "host:port". Returns the count; *out is a new array
 * (free with ts_records_free). A gcdp.window/3 record (ingest.output.format=binary) is
 * returned as its gcdp.window/2 JSON text (core_wbin_to_json), so the suites read windows in
 * either encoding. Aborts the test on a Kafka error. */
size_t ts_topic_read(const char *bootstrap, const char *topic, struct ts_record **out);
void ts_records_free(struct ts_record *r, size_t n);

/* Value of series on the /metrics page of 127.0.0.1:port (ts_prom_value); -1 when the page
 * cannot be fetched or the series is absent. */
int64_t ts_metric(int port, const char *series);

/* Parsed values of every record of topic (JSON array, new reference), each with
 * "_partition" and "_offset" added; a record that is not JSON fails the test. */
json_t *ts_topic_json(const char *bootstrap, const char *topic);

/* A new array of the objects of a (borrowed) in ascending order of their integer member
 * key (e.g. the θ records of gcdp.calibration by "version"). */
json_t *ts_json_sorted_by(json_t *a, const char *key);

/* Milliseconds from a monotonic clock. */
int64_t ts_now_ms(void);
void ts_sleep_ms(int ms);

#endif /* GCDP_TEST_BROKER_H */
