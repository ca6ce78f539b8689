/* test_support.h - helpers shared by the Criterion suites. Never linked into gcdp.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Compile-time paths (from tests/CMakeLists.txt): GCDP_SOURCE_DIR, GCDP_SCHEMA_DIR,
 * GCDP_DATA_DIR (../shared/data), GCDP_BIN (the built gcdp executable).
 */
#ifndef GCDP_TEST_SUPPORT_H
#define GCDP_TEST_SUPPORT_H

#include <stddef.h>

/* Create a fresh temporary directory; returns a new string (free()). Aborts on failure. */
char *ts_tmpdir(void);

/* Remove a directory tree (best effort). */
void ts_rmtree(const char *path);

/* Write text to path; aborts on failure. */
void ts_write_file(const char *path, const char *text);

/* One gcdp.window/2 record (JSON text with its provenance, no newline) into buf: nodes
 * "<chan[i]>.mean" = val[i], each with n_real real samples and no imputed point, clip
 * [0, 1], interp_gap 2, the given period; n_slots 0 leaves the field out. Aborts the test
 * when buf is too small. */
void ts_window2(char *buf, size_t n, const char *device, const char *id, long long start,
                long long end, size_t k, const char *const *chan, const double *val, int n_real,
                int n_slots, long long period_ms);

/* The gcdp.window/3 encoding (core/window_bin.h) of a gcdp.window/2 JSON record: every
 * field the JSON states, taken as it is (no check, so a JSON record with broken provenance
 * gives a binary record with the same defect), nodes in prov.nodes order. Missing numbers
 * become 0 and missing strings ""; a node's n_imputed is its imputed list's length (window/3
 * has one count). Returns a new buffer of *len bytes (free()); aborts the test on text that
 * is not JSON. */
unsigned char *ts_window2_to_bin(const char *json, size_t *len);

/* Read a whole file; new string (free()) or NULL. */
char *ts_read_file(const char *path, size_t *len);

#endif /* GCDP_TEST_SUPPORT_H */
