/* pipe/calpolicy.h - calibrate's expansion bound |A| from release's declared policy graph.
 * Calibration must bound Δ₁S over the same neighbourhoods release certifies with, so the
 * computation reads release's keys and calls release's rel_policy_counts: it joins two
 * stages and lives beside the pipeline, not in calibrate (which includes no other stage).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Thread-safety: reentrant (the configuration is only read).
 */
#ifndef PIPE_CALPOLICY_H
#define PIPE_CALPOLICY_H

#include <stddef.h>

#include "core/config.h"
#include "core/err.h"

/* |A| for the expansion bound on Δ₁S (paper Sec. 4.2): the most calibration nodes that one
 * protected occurrence's expansion set Γ(u) touches, from the declared policy graph G0
 * (release.policy.edges, release.policy.hops) over the calibration matrix's node names.
 *   cfg    borrowed; release.policy.edges and release.policy.hops are read.
 *   names  the matrix's m node names, borrowed.
 *   out    on CORE_OK, |A| (0 when m is 0).
 * Returns CORE_OK, or CORE_ECONFIG with eb naming the edge whose node is not a matrix node,
 * or saying the policy graph is invalid. */
CORE_MUST_CHECK core_err pipe_cal_expansion_nodes(const struct core_config *cfg,
                                                  const char *const *names, size_t m, int *out,
                                                  char *eb, size_t ebn);

#endif /* PIPE_CALPOLICY_H */
