/* alg/window.h - engine internals shared by engine.c and window.c (private to ingest).
 * SPDX-License-Identifier: Apache-2.0
 * Thread-safety: as struct ing_engine (single-threaded).
 */
#ifndef ING_ALG_WINDOW_H
#define ING_ALG_WINDOW_H

#include "core/jalloc.h"
#include "core/window_bin.h"
#include "ing_int.h"

#define ING_JALLOC_BYTES                                                                           \
    ((size_t)64 * 1024) /* parse arena per engine; a 200-byte reading                              \
                           uses ~2 KiB */

/* One buffered reading (values live in the device's val array, n_channels per row). */
struct ing__rd {
    int64_t ts;     /* epoch ms as sent */
    int64_t tau;    /* slot time: ts snapped to the sampling grid */
    int64_t offset; /* source offset */
    int32_t partition;
};

struct ing__dev {
    size_t id_len; /* first: the lookup compares id_len and id right after the table slot */
    char id[ING_DEVICE_MAX + 1];
    uint64_t hash;
    size_t n, cap; /* buffered readings, sorted by ts (hence by tau) */
    struct ing__rd *rd;
    double *val;          /* cap * n_channels; NaN = null */
    int64_t max_tau;      /* largest slot time accepted (valid once a reading arrived) */
    int64_t next_k;       /* windows < next_k are closed; INT64_MIN: none yet */
    int64_t last_seen_ms; /* processing time of the last accepted reading */
    int32_t last_partition;
    int list;                     /* ING__LIST_NONE / _OPEN (n > 0) / _IDLE (n == 0) */
    struct ing__dev *prev, *next; /* links in the open or the idle list */
    int64_t jump_tau;             /* slot time of the latest rejected ts_jump reading */
    int jump_run;                 /* consecutive ts_jump readings agreeing within max_jump_ms */
};

/* A device table slot. The hash is kept in the slot, so that a probe past another device
 * compares it without loading that device (one cache miss per probe, measured as a fifth
 * of the ingest loop's time with 10,000 devices). dev == NULL: empty. */
struct ing__tslot {
    uint64_t hash;
    struct ing__dev *dev;
};

/* Per-window scratch, sized once at engine creation (no allocation per window). */
struct ing__wscratch {
    int64_t n_slots;
    size_t *slot_first, *slot_last; /* per slot: first/last reading index; SIZE_MAX = empty */
    double *u;                      /* normalized points of one channel */
    int64_t *imp_ts;                /* n_channels * n_slots imputed slot times */
    size_t imp_n[ING_MAX_CHANNELS];
    size_t imp_run[ING_MAX_CHANNELS]; /* longest run of consecutive imputed slots */
    size_t n_real[ING_MAX_CHANNELS];
    double feat[ING_MAX_CHANNELS][5]; /* mean, count, min, max, std */
    size_t nodes[ING_MAX_CHANNELS];   /* channel index per node of this window */
    size_t n_nodes;
    struct ing_src_range *src;
    size_t src_cap;
    /* Per node (channel c, feature f): its constant record text, formatted once here
     * instead of per window (the clip bounds went through snprintf each time):
     * name  "<channel>.<feature>":
     * prov  {"stat":"<feature>","channel":"<channel>","clip":[L,U],"n_imputed":
     * as [off, off + len) into text. */
    struct {
        uint32_t name_off, name_len, prov_off, prov_len;
    } node_txt[ING_MAX_CHANNELS][5];
    char *text;
    /* gcdp.window/3 output: each node's name "<channel>.<feature>" (NUL-terminated) and the
     * record's nodes, filled per window */
    char bin_name[ING_MAX_CHANNELS][5][ING_NAME_MAX + 8];
    struct core_wrec_node bin_node[ING_MAX_CHANNELS * 5];
};

enum { ING__LIST_NONE, ING__LIST_OPEN, ING__LIST_IDLE };

/* Doubly linked list of devices, oldest activity first. */
struct ing__dlist {
    struct ing__dev *head, *tail;
};

struct ing_engine {
    struct ing_params p;
    int64_t n_slots;        /* window_ms / period_ms */
    int64_t half;           /* period_ms / 2 */
    struct ing__tslot *tab; /* open addressing, linear probing, tab_size a power of 2 */
    size_t tab_size, n_dev;
    struct ing__dlist open; /* devices holding buffered readings */
    struct ing__dlist idle; /* device entries without readings (closed-window memory) */
    struct ing_counters c;
    struct core_buf out;
    struct ing__wscratch ws;
    struct core_jalloc *ja;   /* parse arena (core/jalloc.h) */
    struct ing__fj *fj;       /* simdjson scanner (alg/fastjson.h); NULL: ingest.decoder=jansson */
    const char *closed_early; /* while force-closing: why ("flush", "idle_timeout",
                                 "stream_restart"); NULL when windows close on the watermark */
    uint64_t pf_hash[2];      /* ing_engine_prefetch: key hashes of the last two calls */
    bool pf_valid[2];
};

void ing__window_scratch_init(struct ing__wscratch *ws, const struct ing_params *p);
void ing__window_scratch_cleanup(struct ing__wscratch *ws);

/* Slot time of ts: origin + floor((ts - origin + period/2) / period) * period. */
int64_t ing__slot_time(const struct ing_engine *e, int64_t ts);

/* Compute and emit the window [start, start + size) of d from readings [i0, i1). */
void ing__window_emit(struct ing_engine *e, const struct ing__dev *d, int64_t start, size_t i0,
                      size_t i1, const struct ing_sink *sink);

#endif /* ING_ALG_WINDOW_H */
