/* sim/sim.h - the producers that feed sensors.raw: the mote simulator and dataset replay.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Two entry points, both blocking, both usable in-process (e.g. from `gcdp run` on a
 * thread of its own) or through the thin commands `gcdp simulate` / `gcdp replay`:
 *   sim_run()         N simulated motes (temperature, humidity, light, voltage), linear
 *                     Gaussian SEM across channels, lagged spatial correlation, diurnal
 *                     trends, optional regime change, fault injection.
 *   sim_replay_run()  a recorded file: UCI Occupancy CSV, reading JSONL, or the raw
 *                     bad-input corpus (tests/fixtures/bad_inputs/corpus.jsonl).
 * Messages are keyed by device id (one device stays on one partition, in order); the
 * topic is "topics.raw" unless overridden. Producers are paced (token bucket, --rate) and
 * bounded by the number of unacknowledged messages, and never drop a message on
 * QUEUE_FULL (they poll and retry). With lag_group set they also wait while that consumer
 * group's committed position lags more than max_lag_bytes on any partition, so the embedded
 * broker's 5 MiB-per-partition retention cannot overrun it (docs/simulator.md).
 *
 * Stopping and progress: struct sim_progress is shared with the caller. Set `stop` (from
 * any thread or a signal handler: it is a lock-free atomic) to end the run cleanly: no new
 * messages are generated, in-flight ones are flushed (bounded by flush_timeout_ms).
 * The counters can be read at any time with atomic_load.
 *
 * Thread-safety: one run per struct sim_progress; sim_run/sim_replay_run use no globals.
 */
#ifndef SIM_SIM_H
#define SIM_SIM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/err.h"
#include "sim/gen.h"

/* Kinds of injected fault. "missing" and "gap" send nothing (the reading is skipped);
 * every other kind produces exactly one recognizable bad (or displaced) message, which
 * carries the Kafka header "gcdp-fault: <name>". */
#define SIM_FAULT_MAP(X)                                                                           \
    X(SIM_FAULT_MISSING, "missing", "reading not sent")                                            \
    X(SIM_FAULT_GAP, "gap", "device silent for gap_ticks readings")                                \
    X(SIM_FAULT_DUPLICATE, "duplicate", "same message sent twice (2nd copy counted)")              \
    X(SIM_FAULT_OUT_OF_ORDER, "out_of_order", "swapped with the device's next reading")            \
    X(SIM_FAULT_LATE, "late", "ts moved late_s (+ half a period) into the past")                   \
    X(SIM_FAULT_OUT_OF_DOMAIN, "out_of_domain", "one channel outside its physical domain")         \
    X(SIM_FAULT_NONFINITE, "nonfinite", "one channel written as 1e999 (overflows)")                \
    X(SIM_FAULT_WRONG_TYPE, "wrong_type", "one channel written as a string")                       \
    X(SIM_FAULT_UNKNOWN_CHANNEL, "unknown_channel", "an extra undeclared channel")                 \
    X(SIM_FAULT_MALFORMED_JSON, "malformed_json", "syntax error: ':' after \"readings\" dropped")  \
    X(SIM_FAULT_TRUNCATED, "truncated", "JSON text cut after a random '{', ',' or ':'")            \
    X(SIM_FAULT_OVERSIZE, "oversize", "message padded beyond oversize_bytes")

enum sim_fault {
#define X(name, str, help) name,
    SIM_FAULT_MAP(X)
#undef X
        SIM_FAULT_COUNT
};

/* Name of a fault kind ("duplicate"); NULL when out of range. */
const char *sim_fault_name(enum sim_fault f);

/* Progress counters and stop flag, shared between the run and its caller. Zero it (or use
 * sim_progress_init) before the run. */
struct sim_progress {
    atomic_int stop;                /* set non-zero to stop cleanly */
    atomic_uint_fast64_t generated; /* readings generated (incl. skipped ones; one made
                                       as a stop arrives is not sent) */
    atomic_uint_fast64_t sent;      /* messages handed to librdkafka */
    atomic_uint_fast64_t acked;     /* delivery reports: success */
    atomic_uint_fast64_t failed;    /* delivery reports: failure, or unflushed at end */
    atomic_uint_fast64_t retries;   /* QUEUE_FULL / in-flight back-offs */
    atomic_uint_fast64_t lag_waits; /* 100 ms waits for a lagging consumer group */
    atomic_uint_fast64_t faults[SIM_FAULT_COUNT]; /* injected faults by kind */
};
void sim_progress_init(struct sim_progress *p);

/* The producer settings both producers share (sim_run and sim_replay_run; the flags
 * --topic, --max-inflight, --flush-timeout, --lag-group, --max-lag-bytes of both
 * commands). Fill with sim_producer_opts_default() (the *_options_default functions do)
 * and then override. Borrowed strings must stay valid for the whole run. */
struct sim_producer_opts {
    const char *topic;     /* topic produced to; NULL: the "topics.raw" key */
    size_t max_inflight;   /* cap on unacknowledged messages, >= 1 (default: the
                              sim.max_inflight row of sim_config_keys) */
    int flush_timeout_ms;  /* bound on the final flush, ms (default 30000); what is still
                              unacknowledged then counts as failed */
    const char *lag_group; /* consumer group kept within max_lag_bytes; NULL (default): none */
    size_t max_lag_bytes;  /* per-partition lag allowed for lag_group, estimated bytes
                              (default: the sim.max_lag_bytes row, 2 MiB = 40 % of the
                              embedded broker's 5 MiB per partition) */
};
void sim_producer_opts_default(struct sim_producer_opts *p);

/* Simulator options. Fill with sim_options_default() and then override. Borrowed strings
 * must stay valid for the whole run. */
struct sim_options {
    size_t devices;    /* number of motes, 1..SIM_MAX_DEVICES; ids "mote-0".. */
    uint64_t seed;     /* everything generated is a function of the seed */
    double rate;       /* readings per second (token bucket); 0: as fast as in-flight allows */
    uint64_t ticks;    /* readings per device; 0: unbounded */
    double duration_s; /* wall-clock cap in seconds; 0: unbounded */
    int64_t start_ms;  /* simulated clock: ts of tick 0 (epoch ms) */
    double period_s;   /* simulated clock: seconds between a device's readings */
    bool wall_clock;   /* true: ts = wall-clock time when the reading is made */
    double regime_change_at_s; /* seconds after start when SEM weights switch; < 0: never */
    double hetero_sd;          /* per-device weight heterogeneity: sd of N(0, sd^2) per edge */
    double spatial_coupling;   /* coupling of a mote's innovations to its neighbour's, [0, 1) */
    unsigned spatial_lag;      /* lag in ticks of that coupling, 0..SIM_MAX_LAG */
    double ar;                 /* temporal AR(1) coefficient of the innovations, [0, 1) */
    struct sim_channel_info channel[SIM_NCH]; /* physical mapping (sim.channel_params over the
                                                 built-in table; sim/gen.h) */
    double fault_rate[SIM_FAULT_COUNT];       /* per-reading probability of each kind; sum <= 1 */
    unsigned gap_ticks;                       /* length of a "gap" fault in readings */
    double late_s;                            /* how far into the past a "late" reading goes */
    size_t oversize_bytes;                    /* size an "oversize" message is padded beyond */
    const char *truth_path;        /* write the ground-truth SEM JSON here; NULL: don't */
    struct sim_producer_opts prod; /* topic, in-flight cap, flush bound, lag guard */
};
void sim_options_default(struct sim_options *o);

/* Fill o from the sim.* keys of cfg (borrowed; strings in o borrow from cfg and stay valid
 * while cfg is unchanged). sim.period_ms / sim.oversize_bytes fall back to
 * ingest.period_ms / ingest.max_message_bytes when those keys are declared, so the
 * simulator matches what ingest expects. Of the producer settings, sim.max_inflight,
 * sim.lag_group and sim.max_lag_bytes fill o->prod; prod.topic (NULL: topics.raw) and
 * prod.flush_timeout_ms keep their defaults. CORE_ECONFIG naming the key on a bad
 * sim.faults. */
CORE_MUST_CHECK core_err sim_options_from_config(const struct core_config *cfg,
                                                 struct sim_options *o, char *errbuf,
                                                 size_t errbuf_size);

#define SIM_MAX_DEVICES 100000
#define SIM_MAX_LAG     64

/* Parse "kind=rate,kind=rate" (kinds as sim_fault_name; "all=rate" sets every kind) into
 * rates[]; kinds not named keep their value. CORE_ECONFIG names the bad item. */
CORE_MUST_CHECK core_err sim_faults_parse(const char *spec, double rates[SIM_FAULT_COUNT],
                                          char *errbuf, size_t errbuf_size);

/* The generator parameters of o (sim/gen.h): devices, seed, heterogeneity, coupling, lag,
 * AR coefficient and channel mapping; noise_seed 0 (the noise stream follows the seed). */
void sim_gen_params_from_options(const struct sim_options *o, struct sim_gen_params *p);

/* Public calibration rows (sim/src/svc/calib.c): another run of the model with o's seed (the
 * same DAG and device parameters) and devices, its readings drawn from noise_seed (nonzero,
 * not the protected run's: sim_gen_params.noise_seed), windows windows of
 * window_ticks readings per device; each row is one device's window mean per channel after
 * clipping every reading to [clip_lo, clip_hi] and mapping it to [0, 1] (ingest's
 * clip_minmax), columns ts (window start, epoch ms) and <channel>.mean, device-major.
 * Written atomically to path (core_outfile). Returns CORE_OK, CORE_EINVAL (bad sizes,
 * intervals or model parameters), CORE_EIO (errbuf names the path). */
CORE_MUST_CHECK core_err sim_calibration_csv(const struct sim_options *o, uint64_t noise_seed,
                                             const double clip_lo[SIM_NCH],
                                             const double clip_hi[SIM_NCH], size_t windows,
                                             size_t window_ticks, const char *path, char *eb,
                                             size_t ebn);

/* Run the simulator until ticks/duration are reached or progress->stop is set.
 *   cfg       borrowed: broker.* / topics.* / kafka.* keys (core_kafka_conf_new).
 *   progress  borrowed; updated while running.
 * Returns CORE_OK when every sent message was acknowledged; CORE_EKAFKA when any failed
 * (progress->failed > 0) or the producer could not be created; CORE_EIO when the truth
 * file cannot be written; CORE_EINVAL for bad options. errbuf receives the reason. */
CORE_MUST_CHECK core_err sim_run(const struct core_config *cfg, const struct sim_options *opt,
                                 struct sim_progress *progress, char *errbuf, size_t errbuf_size);

enum sim_replay_format {
    SIM_REPLAY_OCCUPANCY, /* UCI Occupancy CSV (R write.csv, unnamed row-id column) */
    SIM_REPLAY_JSONL,     /* one gcdp.reading/1 JSON per line, sent verbatim, key = device */
    SIM_REPLAY_CORPUS     /* bad-input corpus lines {kind, expected_reason, payload|payload_hex,
                             key?, pad?}: the payload is sent verbatim (see docs/simulator.md) */
};

struct sim_replay_options {
    const char *path; /* input file; borrowed */
    enum sim_replay_format format;
    const char *device; /* occupancy: device id (default "occupancy") */
    double speed;       /* > 0: replay at speed x the recorded pace; 0: as fast as allowed */
    double rate;        /* token bucket cap, messages/s; 0: none */
    struct sim_producer_opts prod; /* topic, in-flight cap, flush bound, lag guard */
};
void sim_replay_options_default(struct sim_replay_options *o);

/* Replay a file into the raw topic. The file is validated line by line while sending; a
 * malformed line stops the run with CORE_EPARSE and "file:line: reason" in errbuf
 * (messages before it have been sent and are flushed). Other returns as sim_run. */
CORE_MUST_CHECK core_err sim_replay_run(const struct core_config *cfg,
                                        const struct sim_replay_options *opt,
                                        struct sim_progress *progress, char *errbuf,
                                        size_t errbuf_size);

/* Print a one-line JSON summary of progress to f (a FILE *): {"generated","sent","acked",
 * "failed","retries","lag_waits","faults":{kind:n}}. */
void sim_progress_print(const struct sim_progress *p, void *f);

#endif /* SIM_SIM_H */
