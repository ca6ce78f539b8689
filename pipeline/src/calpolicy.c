/* calpolicy.c - calibrate's |A| from release's policy graph (pipe/calpolicy.h). */
#include "pipe/calpolicy.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/mem.h"
#include "rel/bounds.h"

/* The policy edges as node-index pairs into ev (2 * ne entries). CORE_OK, or CORE_ECONFIG
 * naming the first endpoint that is not one of the m names. */
static core_err edges_to_indices(const json_t *edges, const char *const *names, size_t m,
                                 uint32_t *ev, char *eb, size_t ebn)
{
    size_t ne = json_array_size(edges);

    for (size_t e = 0; e < ne; e++)
        for (size_t side = 0; side < 2; side++) {
            const char *nm = json_string_value(json_array_get(json_array_get(edges, e), side));
            size_t j = 0;
            while (j < m && (!nm || strcmp(names[j], nm) != 0))
                j++;
            if (j == m) {
                snprintf(eb, ebn,
                         "release.policy.edges[%zu]: '%s' is not a node of the calibration "
                         "matrix",
                         e, nm ? nm : "?");
                return CORE_ECONFIG;
            }
            ev[2 * e + side] = (uint32_t)j;
        }
    return CORE_OK;
}

core_err pipe_cal_expansion_nodes(const struct core_config *cfg, const char *const *names, size_t m,
                                  int *out, char *eb, size_t ebn)
{
    const json_t *edges = core_config_json(cfg, "release.policy.edges");
    size_t ne = json_array_size(edges), best = 0;
    uint32_t *ev = core_xcalloc(2 * ne + 1, sizeof(*ev));
    uint32_t *counts = core_xcalloc(m * m + 1, sizeof(*counts));
    uint32_t *work = core_xcalloc(2 * m + 1, sizeof(*work));
    core_err rc = edges_to_indices(edges, names, m, ev, eb, ebn);

    if (rc == CORE_OK &&
        rel_policy_counts(m, ev, ne, (uint32_t)core_config_int(cfg, "release.policy.hops"), 0, 1,
                          counts, work) != CORE_OK) {
        snprintf(eb, ebn, "release.policy: invalid policy graph");
        rc = CORE_ECONFIG;
    }
    for (size_t i = 0; rc == CORE_OK && i < m; i++) {
        size_t a = 0;
        for (size_t j = 0; j < m; j++)
            a += counts[i * m + j] > 0;
        best = a > best ? a : best;
    }
    *out = (int)best;
    free(ev);
    free(counts);
    free(work);
    return rc;
}
