/* replay.c - sim_replay_run: recorded files into the raw topic (sim/sim.h).
 *
 * Formats:
 *   occupancy  UCI CSV rows -> gcdp.reading/1 (device = opt->device, ts = date as UTC
 *              RFC 3339 "2015-02-04T17:51:00Z", readings {temperature, humidity, light, co2,
 *              humidity_ratio} with the recorded digits, seq = row id; Occupancy not sent).
 *   jsonl      one reading per line, sent verbatim; key = its "device" (a line that is not
 *              a JSON object with a string "device" stops the replay: file:line).
 *   corpus     tests/fixtures/bad_inputs/corpus.jsonl lines; the raw payload is sent
 *              verbatim with headers gcdp-corpus-kind / gcdp-expected-reason.
 * Pacing with speed > 0 follows the recorded timestamps: a line with ts T is sent at
 * start + (T - T_first) / speed of wall time (lines whose ts cannot be read are sent
 * right away).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <librdkafka/rdkafka.h>

#include "core/lines.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/timefmt.h"
#include "producer.h"
#include "replay_int.h"
#include "sim/encode.h"
#include "sim/occupancy.h"
#include "sim/sim.h"

/* Corpus/JSONL lines may carry an oversize payload (1 MiB + hex), never more. */
#define SIM_REPLAY_MAX_LINE ((size_t)4 * 1024 * 1024)

struct pacer {
    double speed;
    int have_first;
    int64_t first_ts_ms, t0_ns;
};

static void pace(struct pacer *pc, struct sim_producer *p, int have_ts, int64_t ts_ms)
{
    if (!(pc->speed > 0.0) || !have_ts)
        return;
    if (!pc->have_first) {
        pc->have_first = 1;
        pc->first_ts_ms = ts_ms;
        pc->t0_ns = sim_now_ns();
        return;
    }
    if (ts_ms > pc->first_ts_ms)
        sim_producer_sleep_until(
            p, pc->t0_ns + (int64_t)((double)(ts_ms - pc->first_ts_ms) * 1e6 / pc->speed));
}

size_t sim_occ_row_json(const struct sim_occ_row *row, const char *device, char *buf, size_t cap)
{
    char ts[CORE_TIME_TEXT_MAX];
    int n;
    core_time_format(row->ts_ms, CORE_TIME_SEC, ts, sizeof(ts));
    n = snprintf(buf, cap,
                 "{\"schema\":\"gcdp.reading/1\",\"device\":\"%s\",\"ts\":\"%s\","
                 "\"readings\":{\"%s\":%s,\"%s\":%s,\"%s\":%s,\"%s\":%s,\"%s\":%s},"
                 "\"seq\":%llu}",
                 device, ts, sim_occ_channels[0], row->text[0], sim_occ_channels[1], row->text[1],
                 sim_occ_channels[2], row->text[2], sim_occ_channels[3], row->text[3],
                 sim_occ_channels[4], row->text[4], (unsigned long long)row->id);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

static core_err replay_occupancy(const struct sim_replay_options *o, struct sim_producer *p,
                                 struct sim_progress *pr, char *eb, size_t ebn)
{
    struct sim_occ_reader *rd = NULL;
    struct sim_occ_row row;
    struct pacer pc = {o->speed, 0, 0, 0};
    char buf[1024];
    core_err rc = sim_occ_reader_open(o->path, &rd, eb, ebn);

    while (rc == CORE_OK && !atomic_load(&pr->stop)) {
        size_t len;
        rc = sim_occ_reader_next(rd, &row, eb, ebn);
        if (rc != CORE_OK)
            break;
        atomic_fetch_add(&pr->generated, 1);
        len = sim_occ_row_json(&row, o->device, buf, sizeof(buf));
        if (len == 0) {
            snprintf(eb, ebn, "%s:%llu: encoded reading too long", o->path,
                     (unsigned long long)sim_occ_reader_line(rd));
            rc = CORE_ETOOBIG;
            break;
        }
        pace(&pc, p, 1, row.ts_ms);
        rc = sim_producer_send(p, o->device, strlen(o->device), buf, len, NULL);
    }
    sim_occ_reader_free(rd);
    return rc == CORE_ENOTFOUND || rc == CORE_ESTATE ? CORE_OK : rc;
}

/* ts member as epoch ms: integer, or an RFC 3339 string. */
static int json_ts(const json_t *doc, int64_t *out)
{
    const json_t *ts = json_is_object(doc) ? json_object_get(doc, "ts") : NULL;
    if (json_is_integer(ts)) {
        *out = (int64_t)json_integer_value(ts);
        return 1;
    }
    if (json_is_string(ts))
        return core_time_parse(json_string_value(ts), json_string_length(ts), out) == CORE_OK;
    return 0;
}

static core_err replay_jsonl(const struct sim_replay_options *o, struct core_lines *ln,
                             struct sim_producer *p, struct sim_progress *pr, char *eb, size_t ebn)
{
    struct pacer pc = {o->speed, 0, 0, 0};
    core_err rc = CORE_OK;

    while (rc == CORE_OK && !atomic_load(&pr->stop)) {
        const char *dev;
        char *line;
        size_t n;
        json_error_t jerr;
        json_t *doc;
        int64_t ts = 0;
        int have_ts;

        if ((rc = core_lines_next(ln, &line, &n, eb, ebn)) != CORE_OK)
            break;
        if (n == 0)
            continue;
        doc = json_loadb(line, n, JSON_REJECT_DUPLICATES, &jerr);
        dev = json_string_value(json_object_get(doc, "device"));
        if (!dev) {
            snprintf(eb, ebn, "%s:%llu: %s", o->path, (unsigned long long)core_lines_lineno(ln),
                     doc ? "no string \"device\" member (needed for the key)" : jerr.text);
            json_decref(doc);
            rc = CORE_EPARSE;
            break;
        }
        atomic_fetch_add(&pr->generated, 1);
        have_ts = json_ts(doc, &ts);
        pace(&pc, p, have_ts, ts);
        rc = sim_producer_send(p, dev, strlen(dev), line, n, NULL);
        json_decref(doc);
    }
    return rc == CORE_ENOTFOUND || rc == CORE_ESTATE ? CORE_OK : rc;
}

static core_err replay_corpus(const struct sim_replay_options *o, struct core_lines *ln,
                              struct sim_producer *p, struct sim_progress *pr, char *eb, size_t ebn)
{
    core_err rc = CORE_OK;
    struct sim_corpus_entry e;

    while (rc == CORE_OK && !atomic_load(&pr->stop)) {
        char *line;
        size_t n;
        char why[256];

        if ((rc = core_lines_next(ln, &line, &n, eb, ebn)) != CORE_OK)
            break;
        if (n == 0)
            continue;
        if ((rc = sim_corpus_entry_parse(line, n, &e, why, sizeof(why))) != CORE_OK) {
            snprintf(eb, ebn, "%s:%llu: %s", o->path, (unsigned long long)core_lines_lineno(ln),
                     why);
            break;
        }
        atomic_fetch_add(&pr->generated, 1);
        rc = sim_producer_send_corpus(p, &e);
        sim_corpus_entry_cleanup(&e);
    }
    return rc == CORE_ENOTFOUND || rc == CORE_ESTATE ? CORE_OK : rc;
}

core_err sim_replay_run(const struct core_config *cfg, const struct sim_replay_options *o,
                        struct sim_progress *pr, char *eb, size_t ebn)
{
    struct sim_producer *p = NULL;
    struct core_lines *ln = NULL;
    core_err rc, frc;

    if (ebn > 0)
        eb[0] = '\0';
    if (!o->path || !o->device || strlen(o->device) == 0 || strlen(o->device) > SIM_MAX_DEVICE_ID ||
        !(o->speed >= 0.0) || !(o->rate >= 0.0) || o->prod.max_inflight < 1) {
        snprintf(eb, ebn,
                 "invalid replay options (file, device 1..%d bytes, speed >= 0, "
                 "rate >= 0, max-inflight >= 1)",
                 SIM_MAX_DEVICE_ID);
        return CORE_EINVAL;
    }
    if (o->format != SIM_REPLAY_OCCUPANCY &&
        (rc = core_lines_open(o->path, SIM_REPLAY_MAX_LINE, &ln, eb, ebn)) != CORE_OK)
        return rc;
    rc = sim_producer_new(cfg, &o->prod, o->rate, SIM_REPLAY_MAX_LINE, pr, &p, eb, ebn);
    if (rc != CORE_OK)
        goto out;
    if (o->format == SIM_REPLAY_OCCUPANCY)
        rc = replay_occupancy(o, p, pr, eb, ebn);
    else if (o->format == SIM_REPLAY_JSONL)
        rc = replay_jsonl(o, ln, p, pr, eb, ebn);
    else
        rc = replay_corpus(o, ln, p, pr, eb, ebn);
    /* flush what was sent even after a parse error: those messages are valid */
    frc = sim_producer_finish(p, o->prod.flush_timeout_ms);
    if (rc == CORE_OK && frc != CORE_OK) {
        snprintf(eb, ebn, "%llu message(s) not delivered",
                 (unsigned long long)atomic_load(&pr->failed));
        rc = frc;
    }
out:
    sim_producer_free(p);
    core_lines_free(ln);
    return rc;
}
