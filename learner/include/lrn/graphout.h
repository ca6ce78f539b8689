/* lrn/graphout.h - learned DAG outputs: JSON, CSV adjacency, Graphviz DOT/PNG, metrics JSON.
 * SPDX-License-Identifier: Apache-2.0
 *
 * JSON DAG format (also read back as a truth file):
 *   {"schema": "gcdp.dag/1", "d": D, "nodes": ["x0", ...],
 *    "edges": [[from, to, weight], ...]}   (0-based node indices, weight != 0)
 * Thread-safety: reentrant.
 */
#ifndef LRN_GRAPHOUT_H
#define LRN_GRAPHOUT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/err.h"
#include "lrn/metrics.h"

/* New JSON object of the d x d weighted adjacency w (entries with w != 0 become edges).
 *   names  borrowed, d strings, or NULL for "x0".."x{d-1}".
 * Returns a new reference (caller json_decref()s). */
json_t *lrn_graph_to_json(const double *w, size_t d, const char *const *names);

/* Write lrn_graph_to_json() to path (indented). Returns CORE_OK or CORE_EIO (eb). */
CORE_MUST_CHECK core_err lrn_graph_write_json(const char *path, const double *w, size_t d,
                                              const char *const *names, char *eb, size_t ebn);

/* Read a weighted DAG: a JSON file in the format above (path ends in ".json") or a CSV
 * d x d adjacency matrix (no header).
 *   expect_d  0: any; else must match.
 *   w         out; a new d*d array (caller frees with free()); *d_out its size.
 * Returns CORE_OK, CORE_EIO, CORE_EPARSE (bad format, index out of range, non-finite
 * weight, self-loop), CORE_EINVAL (d mismatch, not square). */
CORE_MUST_CHECK core_err lrn_graph_read(const char *path, size_t expect_d, double **w,
                                        size_t *d_out, char *eb, size_t ebn);

/* Graphviz DOT of est. With truth (borrowed, may be NULL) edges are coloured:
 * correct = black solid, reversed = orange, extra (not in the true skeleton) = red,
 * missing true edges = grey dashed; the legend is in the graph label.
 * Returns CORE_OK or CORE_EIO. */
CORE_MUST_CHECK core_err lrn_graph_write_dot(const char *path, const double *est,
                                             const double *truth, size_t d,
                                             const char *const *names, char *eb, size_t ebn);

/* Render dot_path to png_path with `dot -Tpng` (graphviz), run without a shell.
 * Returns CORE_OK, CORE_ENOTFOUND (dot not installed / not on PATH), CORE_EIO (dot
 * failed). */
CORE_MUST_CHECK core_err lrn_graph_render_png(const char *dot_path, const char *png_path, char *eb,
                                              size_t ebn);

/* The output set of one learned graph: PREFIX.json (lrn_graph_write_json), PREFIX.csv (the
 * d x d adjacency, lrn_csv_write), PREFIX.dot (lrn_graph_write_dot, coloured with truth when
 * given) and, with png, PREFIX.png (lrn_graph_render_png).
 *   prefix  path without the extension (borrowed); its directory must exist.
 *   truth   borrowed, may be NULL; names borrowed, may be NULL (as lrn_graph_to_json).
 *   png_rc  out: CORE_OK, or the render's error (then eb holds the reason); a PNG that cannot
 *           be rendered does not fail the call (graphviz is optional).
 * Returns CORE_OK, or CORE_EIO / CORE_EINVAL from the JSON/CSV/DOT writers (eb). */
CORE_MUST_CHECK core_err lrn_graph_write_all(const char *prefix, const double *w,
                                             const double *truth, size_t d,
                                             const char *const *names, bool png, core_err *png_rc,
                                             char *eb, size_t ebn);

/* New JSON object of the metrics (every field of struct lrn_metrics). */
json_t *lrn_metrics_to_json(const struct lrn_metrics *m);

#endif /* LRN_GRAPHOUT_H */
