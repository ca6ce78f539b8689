/* lrn/fedsvc.h - the federated learner as Kafka services: participants (sites) and the
 * server of Fed-Sparse-BNSL over topics.learner_updates / topics.learner_global
 * (docs/learner.md, "Learner services").
 * SPDX-License-Identifier: Apache-2.0
 *
 * Method: learner.service.method = fed-sparse (PGCD local step, the learner.* options) or
 * fed-bnsl (the closed-form local step of lrn/baselines.h with notears-admm's driver options;
 * learner.rounds applies). The DP methods are not offered (learner.dp.enabled is refused).
 *
 * A PARTICIPANT is a site: a declared group of devices (comma-separated fnmatch globs). It
 * consumes ONLY topics.released (gcdp.released/1 records), keeps one sample row per record
 * of its devices (nodes = the released coordinate names, sorted; a record missing a node
 * is skipped and counted) in a ring of learner.service.horizon rows, announces its sample
 * count on learner.updates, and answers the server's SOLVE requests with the library's
 * PGCD local step (lrn/pgcd.h) on its own centred Σ_p of a frozen snapshot.
 * The SERVER starts a session when learner.service.participants sites announced at least
 * learner.service.min_samples rows over the same node list, and runs lrn_admm_run() with a
 * remote lrn_local_ops whose solve() asks participant p over the topics. A participant
 * that does not answer within learner.service.round_timeout_ms is ABSENT from then on in
 * that session (lrn/admm.h CORE_ENOTFOUND); the result names it. Each completed round is
 * checkpointed (state dir, temp + rename); after a restart the server replays the
 * checkpointed replies (no network) and continues with the first round not completed.
 * The result goes to topics.learner_dag (schemas/learner_dag.schema.json) and, as
 * dag-s<session>.{json,dot,png}, to the output directory.
 *
 * Wire (every message; little-endian): "LF", version 1, type, session u64, round u32,
 * participant id (u8 length + bytes), then the type's body (learner/src/svc/fedsvc_msg.c).
 *
 * Thread-safety: each run function is blocking and owns its own libuv loop and Kafka
 * clients, so any number may run on their own threads in one process. The progress structs
 * are written by the running thread and may be read from any thread (atomics).
 */
#ifndef LRN_FEDSVC_H
#define LRN_FEDSVC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/config.h"
#include "core/err.h"

#define LRN_FEDSVC_MAX_ID    64  /* participant id bytes */
#define LRN_FEDSVC_MAX_NODES 512 /* nodes (released coordinates) per sample row */

/* Server progress; all fields written by the server thread only. */
struct lrn_fedsvc_server_progress {
    _Atomic uint64_t session;            /* current (or last) session, 0 before the first */
    _Atomic uint64_t round;              /* rounds completed in the current session */
    _Atomic uint64_t resumed_from_round; /* first round asked over the network after a
                                          * restart (0: the session started fresh) */
    _Atomic double h;                    /* h(W̃) of the last round */
    _Atomic uint64_t edges;              /* |W| >= w_threshold after the last round */
    _Atomic uint64_t bytes;              /* Kafka payload bytes sent + received (all) */
    _Atomic uint64_t missing;            /* participants absent in the current session */
    _Atomic uint64_t sessions_completed; /* results published */
    _Atomic bool running;                /* the Kafka clients are up */
};

/* Participant progress; written by the participant thread only. */
struct lrn_fedsvc_participant_progress {
    _Atomic uint64_t samples;     /* rows held (≤ horizon) */
    _Atomic uint64_t skipped;     /* records of its devices skipped (missing node, bad) */
    _Atomic uint64_t other;       /* records of other devices (not taken) */
    _Atomic uint64_t duplicates;  /* republished records (release_id already held) */
    _Atomic uint64_t replies;     /* SOLVE replies sent (resends included) */
    _Atomic uint64_t first_round; /* first round asked in the current session */
    _Atomic uint64_t last_round;  /* last round answered in the current session */
    _Atomic uint64_t session;     /* session of the frozen snapshot (0: none) */
    _Atomic bool running;         /* the Kafka clients are up */
    char subscribed[2][256];      /* the topics its consumers subscribed to (set once,
                                   * before running becomes true) */
};

/* One learned DAG, handed to the result callback; every pointer is borrowed and valid only
 * during the call. */
struct lrn_fedsvc_result {
    uint64_t session;
    size_t d;
    const char *const *nodes; /* d names */
    const double *w;          /* d×d row-major weighted DAG */
    size_t rounds;
    bool converged;
    size_t participants;          /* P of the session */
    const char *const *ids;       /* P participant ids (sorted) */
    const uint64_t *missing_from; /* P: UINT64_MAX when present to the end, else the
                                   * round from which the participant was absent */
    const char *json;             /* the exact record published on learner.dag */
    const char *dot_path;         /* DOT file written (NULL if none) */
};
typedef void lrn_fedsvc_result_fn(void *arg, const struct lrn_fedsvc_result *r);

struct lrn_fedsvc_server_opts {
    const struct core_config *cfg;   /* borrowed: broker.*, kafka.*, topics.*, learner.* */
    uint64_t max_sessions;           /* return after this many published results (0: never) */
    lrn_fedsvc_result_fn *on_result; /* optional, called on the server thread */
    void *arg;
    struct core_metrics *metrics; /* optional: counters/gauges gcdp_learner_server_* */
};

struct lrn_fedsvc_participant_opts {
    const struct core_config *cfg; /* borrowed */
    const char *id;                /* [A-Za-z0-9._-]{1,64} */
    const char *devices;           /* comma-separated device globs; NULL:
                                    * learner.service.devices */
    struct core_metrics *metrics;  /* optional: gcdp_learner_participant_* */
};

/* Validate what needs no network: the learner.* options, the learner.service.* keys, the
 * topics (topics.released must not name a protected topic: topics.raw, topics.windows,
 * topics.rejected, topics.release_rejected, topics.ledger_changelog or their default names,
 * nor a learner topic),
 * and for a participant (id != NULL) the id and device globs.
 * Returns CORE_OK or CORE_ECONFIG (eb names the key). */
CORE_MUST_CHECK core_err lrn_fedsvc_check(const struct core_config *cfg, const char *id,
                                          const char *devices, char *eb, size_t ebn);

/* Run the server until *stop becomes true (checked at least every 100 ms: returns within
 * ~1 s), o->max_sessions results were published, or a fatal error.
 *   prog  out (caller storage, zeroed here first), readable from other threads.
 * Returns CORE_OK (stopped or done), CORE_ECONFIG (lrn_fedsvc_check failed), CORE_EKAFKA,
 * CORE_EIO (state dir / checkpoint), CORE_ENUMERIC (the ADMM server step). */
CORE_MUST_CHECK core_err lrn_fedsvc_server_run(const struct lrn_fedsvc_server_opts *o,
                                               const atomic_bool *stop,
                                               struct lrn_fedsvc_server_progress *prog, char *eb,
                                               size_t ebn);

/* Run one participant until *stop becomes true (returns within ~1 s) or a fatal error.
 * Returns CORE_OK (stopped), CORE_ECONFIG, CORE_EKAFKA, CORE_EIO. */
CORE_MUST_CHECK core_err lrn_fedsvc_participant_run(const struct lrn_fedsvc_participant_opts *o,
                                                    const atomic_bool *stop,
                                                    struct lrn_fedsvc_participant_progress *prog,
                                                    char *eb, size_t ebn);

/* One process's learner service (fedsvc_run.c): the server (participant NULL) or one
 * participant, run until *stop (lrn_fedsvc_server_run / lrn_fedsvc_participant_run), then its
 * closing line to out: "<prog> --server: N sessions completed, last session S at round R
 * (<status>)" or "<prog> --participant ID: N rows held, K skipped, M replies (<status>)".
 *   cfg, metrics, participant, devices  as the run functions take them (borrowed).
 *   max_sessions  server: return after this many published results (0: never).
 * Returns the run function's status (eb). */
CORE_MUST_CHECK core_err lrn_fedsvc_run(const struct core_config *cfg, struct core_metrics *metrics,
                                        const char *participant, const char *devices,
                                        uint64_t max_sessions, const atomic_bool *stop, FILE *out,
                                        const char *prog, char *eb, size_t ebn);

#endif /* LRN_FEDSVC_H */
