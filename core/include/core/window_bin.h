/* core/window_bin.h - gcdp.window/3: the binary encoding of one window record (the content of
 * a gcdp.window/2 JSON record, schemas/window3.md), written by ingest and read by release
 * and the private calibrate service.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Pure functions: no I/O, no clock, no globals. A record is a plain struct of strings and
 * arrays; decoding checks every length before it reads and refuses truncated, over-long or
 * non-canonical input, non-finite doubles, unknown versions and counts out of range, with a
 * reason in errbuf. A decoded record's strings point into the input bytes (every string is
 * stored NUL-terminated), so it is valid while those bytes are. The codec checks structure
 * only: what the provenance means (names, runs, gaps) is the reader's check (release).
 *
 * Thread-safety: a struct core_wrec is used by one thread at a time.
 */
#ifndef CORE_WINDOW_BIN_H
#define CORE_WINDOW_BIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

/* First bytes of every gcdp.window/3 record: 0xFF never starts a JSON text (not UTF-8), so a
 * reader tells the two encodings apart by the first byte. The fourth byte is the version. */
#define CORE_WBIN_MAGIC0    0xFFu
#define CORE_WBIN_MAGIC     "\xffGW"
#define CORE_WBIN_VERSION   3u
#define CORE_WBIN_SCHEMA    "gcdp.window/3"
#define CORE_WBIN_MAX_NODES 65536u     /* nodes of one record */
#define CORE_WBIN_MAX_STR   65535u     /* bytes of one string (u16 length) */
#define CORE_WBIN_MAX_LEN   (1u << 26) /* bytes of one record */

/* One node (a channel's statistic) of a record that is not excluded. */
struct core_wrec_node {
    const char *name;        /* "<channel>.<stat>" */
    const char *stat;        /* mean | count | min | max | std (not checked here) */
    const char *channel;     /* channel name */
    double value;            /* feature value (finite) */
    double clip_lo, clip_hi; /* clip interval (finite) */
    uint32_t n_node;         /* real samples of the channel in the window */
    uint32_t max_run;        /* longest imputed run, as stated */
    uint32_t n_imputed;      /* entries of imputed */
    const int64_t *imputed;  /* slot times (epoch ms) filled by interpolation, as stated */
};

/* One window record. Strings are never NULL once decoded ("" when absent). */
struct core_wrec {
    const char *id, *device, *config_version;
    int64_t start, end; /* epoch ms, [start, end) */
    uint32_t n;         /* readings in the window */
    uint32_t n_slots;
    bool excluded;
    const char *exclude_reason, *exclude_detail; /* excluded records only */
    const char *closed_early;                    /* "" unless closed before its watermark */
    /* provenance and nodes: records that are not excluded only */
    uint32_t interp_gap;
    int64_t period_ms;
    const char *norm;
    size_t n_nodes;
    struct core_wrec_node *node; /* n_nodes */
    /* decoder storage (owned; core_wrec_cleanup frees) */
    size_t node_cap, imp_cap;
    int64_t *imp;
};

/* Zero r (no storage yet). */
void core_wrec_init(struct core_wrec *r);
/* Free the decoder storage; r is zeroed. NULL-safe. */
void core_wrec_cleanup(struct core_wrec *r);

/* Append r's encoding to out (check core_buf_status(out) once the record is written).
 * Every string of r is NUL-terminated, at most CORE_WBIN_MAX_STR bytes and never NULL for
 * the fields the record carries (NULL is written as ""). Returns CORE_OK, or CORE_EINVAL
 * (a string too long or a count out of range; nothing appended). */
CORE_MUST_CHECK core_err core_wbin_encode(const struct core_wrec *r, struct core_buf *out);

/* Decode one record of len bytes into r (core_wrec_init'ed; storage reused and grown).
 * On CORE_OK, r's strings point into p (valid while p is) and its arrays into r's storage.
 * Returns CORE_OK, CORE_EPARSE (not gcdp.window/3, truncated, trailing bytes, bad string,
 * non-finite double, flags), CORE_ETOOBIG (counts or length past the caps); errbuf
 * (optional) names the field. */
CORE_MUST_CHECK core_err core_wbin_decode(const void *p, size_t len, struct core_wrec *r,
                                          char *errbuf, size_t errbuf_size);

/* Append r as the gcdp.window/2 JSON record it encodes (schemas/window.schema.json; the
 * same members and values as ingest's JSON writer, window_start_utc / window_end_utc derived
 * from the times, doubles as %.17g so they read back bit for bit, keys and strings escaped),
 * without a newline. For operators looking at window/3 records (`gcdp windows`) and for tests. */
void core_wbin_to_json(const struct core_wrec *r, struct core_buf *out);

/* Append the gcdp.window/2 JSON text of one record as it travels on topics.windows, on one line
 * (no newline appended), for operators (`gcdp windows`): a gcdp.window/3 record is decoded
 * (r: scratch storage, core_wrec_init'ed) and rendered by core_wbin_to_json; other bytes must
 * be one JSON object (a gcdp.window/2 record; its members are not checked here) and are copied
 * with any line break turned into a space. Returns CORE_OK, or CORE_EPARSE / CORE_ETOOBIG with
 * the reason in errbuf (nothing appended). */
CORE_MUST_CHECK core_err core_wrec_print(const void *p, size_t len, struct core_wrec *r,
                                         struct core_buf *out, char *errbuf, size_t errbuf_size);

/* True when the bytes start like a gcdp.window/3 record (magic, any version). */
bool core_wbin_is(const void *p, size_t len);

#endif /* CORE_WINDOW_BIN_H */
