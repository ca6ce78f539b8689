/* truth.h - ground-truth SEM file of a simulator run (stage-private).
 *
 * JSON, schema "gcdp.sim-truth/1": channels and their physical mapping, the shared DAG of
 * each regime (topological order, weighted edges "from -> to", implied covariance of the
 * latent), the spatial and temporal coupling, and per-device edge weights and offsets.
 */
#ifndef SIM_SVC_TRUTH_H
#define SIM_SVC_TRUTH_H

#include <jansson.h>

#include "core/err.h"
#include "sim/gen.h"
#include "sim/sim.h"

/* Build the truth document; new reference (json_decref). */
json_t *sim_truth_json(const struct sim_gen *g, const struct sim_options *o);

/* Write it to path (atomically: path.tmp then rename). CORE_EIO with a reason. */
CORE_MUST_CHECK core_err sim_truth_write(const struct sim_gen *g, const struct sim_options *o,
                                         const char *path, char *errbuf, size_t errbuf_size);

#endif /* SIM_SVC_TRUTH_H */
