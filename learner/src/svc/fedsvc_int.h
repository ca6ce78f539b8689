/* fedsvc_int.h - internals shared by the learner services (lrn/fedsvc.h): the Kafka link
 * driven from a blocking caller, and the message codec. Not installed.
 * Thread-safety: one struct fs_link per thread.
 */
#ifndef LRN_FEDSVC_INT_H
#define LRN_FEDSVC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>
#include <uv.h>

#include "core/config.h"
#include "core/err.h"
#include "core/kafka.h"
#include "lrn/fedsvc.h"

/* ---- messages (docs/learner.md "Learner services", "Wire") ---- */

enum fs_type { FS_ANNOUNCE = 1, FS_SOLVE = 2, FS_REPLY = 3, FS_END = 4 };
enum { FS_METHOD_FED_SPARSE = 0, FS_METHOD_FED_BNSL = 1 };

/* REPLY status */
enum { FS_REPLY_OK = 0, FS_REPLY_NO_SNAPSHOT = 1, FS_REPLY_NODES = 2 };

struct fs_msg {
    int type;
    uint64_t session;
    uint32_t round;
    char id[LRN_FEDSVC_MAX_ID + 1];
    /* ANNOUNCE */
    uint64_t samples;
    size_t d;
    char **names; /* d strings, owned (fs_msg_clear) */
    /* SOLVE (d also) */
    uint64_t nodes_hash;
    double rho2, lambda, gamma, tol;
    uint64_t max_steps;
    uint8_t wire, center; /* center: LRN_COV_CENTER | _STANDARDIZE | _RESCALE bits (lrn/admm.h) */
    uint8_t method;       /* SOLVE: 0 fed-sparse (PGCD), 1 fed-bnsl (closed form) */
    double cov_scale;     /* SOLVE: Σ_p = X̃ᵀX̃ / (n_p · cov_scale) */
    /* SOLVE: W_p, β_p, B_p(prev); REPLY: B_p in blob[0]. Borrowed from the decoded bytes. */
    const uint8_t *blob[3];
    uint32_t blen[3];
    uint8_t status; /* REPLY */
};

struct fs_wbuf {
    uint8_t *p;
    size_t n, cap;
};

void fs_wbuf_free(struct fs_wbuf *b);
/* Encode m (type-dependent fields) into b (reset first). */
void fs_msg_encode(const struct fs_msg *m, struct fs_wbuf *b);
/* Decode buf into m (zeroed first; blobs borrow buf). Returns CORE_OK or CORE_EPARSE. */
CORE_MUST_CHECK core_err fs_msg_decode(const uint8_t *buf, size_t len, struct fs_msg *m);
void fs_msg_clear(struct fs_msg *m); /* frees names */

/* FNV-1a 64 of the names joined by NUL: both sides' node order must agree. */
uint64_t fs_nodes_hash(const char *const *names, size_t d);

/* ---- the Kafka link: one loop, up to two own-group consumers, one producer ---- */

typedef void fs_msg_fn(void *arg, const rd_kafka_message_t *m);

struct fs_link {
    uv_loop_t loop;
    uv_timer_t timer;
    struct core_kconsumer *cons[2];
    size_t ncons, closed;
    struct core_kproducer *prod;
    fs_msg_fn *on_msg;
    void *arg;
    bool fatal, timer_on, loop_ok;
    uint64_t bytes_out, bytes_in;
    char fatal_why[256];
};

/* Open consumers (own groups "<prefix>.<k>.<host>.<pid>", each on topics[k] from reset[k])
 * and a producer; messages of every consumer go to on_msg on the calling thread during
 * fs_link_pump. On failure everything opened is released. */
CORE_MUST_CHECK core_err fs_link_open(struct fs_link *l, const struct core_config *cfg,
                                      const char *prefix, const char *const *topics,
                                      const char *const *reset, size_t n, fs_msg_fn *on_msg,
                                      void *arg, char *eb, size_t ebn);
/* Every consumer has its partitions (a consumer reading from "latest" sees nothing before:
 * wait for this before asking for answers). */
bool fs_link_ready(struct fs_link *l);
/* Serve the loop for up to ms milliseconds (returns earlier after an event). */
void fs_link_pump(struct fs_link *l, int ms);
/* Enqueue one record (key = participant id or NULL); retries a full queue. */
CORE_MUST_CHECK core_err fs_link_send(struct fs_link *l, const char *topic, const char *key,
                                      const void *buf, size_t len);
/* Leave the groups, wait ≤ 1 s for unacknowledged records, free everything. */
void fs_link_close(struct fs_link *l);

/* ---- helpers ---- */
uint64_t fs_now_ms(void);
bool fs_id_valid(const char *id);
/* mkdir -p dir (mode 0755). Returns CORE_OK or CORE_EIO. */
CORE_MUST_CHECK core_err fs_mkdir_p(const char *dir);
/* The directory of key (learner.service.state_dir / out_dir) into buf: as given when
 * absolute, else under state.dir (as a relative ledger path is; never the working
 * directory). Returns the directory, created if missing, or NULL (eb names key and path). */
const char *fs_dir(const struct core_config *cfg, const char *key, char *buf, size_t n, char *eb,
                   size_t ebn);
/* Write len bytes to path atomically (core_outfile: temp + fsync + rename). */
CORE_MUST_CHECK core_err fs_write_atomic(const char *path, const void *buf, size_t len, char *eb,
                                         size_t ebn);
/* Read a whole file (new buffer, free()); CORE_ENOTFOUND when absent, CORE_EIO. */
CORE_MUST_CHECK core_err fs_read_file(const char *path, uint8_t **buf, size_t *len);

#endif /* LRN_FEDSVC_INT_H */
