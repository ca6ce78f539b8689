/* run_int.h - `gcdp run`'s shared state (run.c drives; run_live.c holds the live privacy
 * path's stages: calibrate, release; run_learn.c the learner). Private to pipeline/. */
#ifndef PIPE_RUN_INT_H
#define PIPE_RUN_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <uv.h>

#include "core/config.h"
#include "core/dp_ledger.h"
#include "core/metrics.h"
#include "ing/service.h"
#include "pipe/run.h"
#include "sim/sim.h"

struct cal_service;
struct rel_service;
struct run_learner;

#define RUN_PATH_MAX 4096

#define BROKER_START_MS 30000
#define CATCH_UP_MS     10000
#define FORCE_MS        5000

struct run_ctx {
    uv_loop_t loop;
    uv_signal_t sigint, sigterm;
    uv_timer_t progress, duration, poll, force;
    bool forced; /* the second-signal deadline passed: skip the orderly cleanup */
    struct core_config *cfg;
    struct core_metrics *metrics;
    struct pipe_run_opts o;
    pid_t broker_pid;
    uint64_t t0;
    bool stopping, tty;
    int signals;
    size_t stopping_stage; /* index of the stage being stopped */
    core_err status;       /* CORE_OK; CORE_ECONFIG (refused at start) or CORE_ESTATE (failed) */
    /* simulator */
    uv_thread_t sim_thread;
    bool sim_started;
    struct sim_progress sim;
    struct sim_options sim_opts;
    atomic_bool sim_done;
    core_err sim_status;
    char sim_err[512];
    /* ingest */
    struct ing_service *ingest;
    bool ingest_done, ingest_stop_requested, ingest_stop_sent;
    uint64_t ingest_stop_deadline;
    core_err ingest_status;
    uint64_t last_in;
    /* files of this run (under --dir) */
    char bootstrap_buf[RUN_PATH_MAX];
    char dir[RUN_PATH_MAX], ledger_path[RUN_PATH_MAX], calib_path[RUN_PATH_MAX];
    bool ledger_new;               /* the ledger did not exist before this run */
    char truth_path[RUN_PATH_MAX]; /* the simulator's true DAG ("" when none) */
    char stamp[32];                /* UTC time of the run's start, names its files */
    char absdir[RUN_PATH_MAX];     /* realpath of --dir */
    struct run_learner *lrn;       /* run_learn.c */
    /* calibrate service */
    struct cal_service *cal;
    bool cal_done;
    core_err cal_status;
    /* release service and the ledger it charges (opened here, one per run by default) */
    struct core_dp_ledger *ledger;
    struct core_dp_ledger_opts lo;
    struct rel_service *rel;
    bool rel_done, rel_stop_requested, rel_stop_sent;
    uint64_t rel_stop_deadline;
    core_err rel_status;
};

/* The live stages (run_live.c), each: start (CORE_OK or an error in eb), stop (begin),
 * done (fully stopped). A stage that stops by itself while the run is not stopping makes the
 * run fail. */
core_err run_files_prepare(struct run_ctx *c, char *eb, size_t ebn);
/* Set a string key to value as it is (a JSON string, never re-parsed text), source "gcdp run". */
core_err run_config_set_str(struct run_ctx *c, const char *key, const char *value, char *eb,
                            size_t ebn);
/* A service stage ended (its on_done): *done, *st = status; outside the shutdown that is a
 * failure of the run (logged, exit status 1). */
void run_service_done(struct run_ctx *c, const char *name, bool *done, core_err *st,
                      core_err status);
core_err run_cal_start(struct run_ctx *c, char *eb, size_t ebn);
void run_cal_stop(struct run_ctx *c);
bool run_cal_done(struct run_ctx *c);
core_err run_rel_start(struct run_ctx *c, char *eb, size_t ebn);
void run_rel_stop(struct run_ctx *c);
bool run_rel_done(struct run_ctx *c);
/* Progress text of the live stages (appended to the progress line) and the summary. */
void run_live_progress(struct run_ctx *c, char *buf, size_t n);
void run_live_summary(struct run_ctx *c, FILE *human, FILE *json);
bool run_live_failed(const struct run_ctx *c);
void run_live_free(struct run_ctx *c);
/* The learner stage (run_learn.c): a server and --sites participants on threads. */
core_err run_lrn_start(struct run_ctx *c, char *eb, size_t ebn);
void run_lrn_stop(struct run_ctx *c);
bool run_lrn_done(struct run_ctx *c);
bool run_lrn_failed_early(const struct run_ctx *c); /* a learner thread ended by itself */
void run_lrn_progress(struct run_ctx *c, char *buf, size_t n);
void run_lrn_summary(struct run_ctx *c, FILE *human, FILE *json);
bool run_lrn_failed(const struct run_ctx *c);
void run_lrn_free(struct run_ctx *c); /* joins the threads */

#endif /* PIPE_RUN_INT_H */
