/* semio.c - a generated SEM problem written as files (lrn/semio.h). */
#include "lrn/semio.h"

#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "core/mem.h"
#include "lrn/csvio.h"
#include "lrn/graphout.h"

static core_err write_manifest(const char *dir, const struct lrn_sem_opts *o)
{
    char path[4096];
    json_t *m =
        json_pack("{s:s,s:I,s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:I,s:s}", "schema", "gcdp.semgen/1", "d",
                  (json_int_t)o->d, "participants", (json_int_t)o->participants, "n_per",
                  (json_int_t)o->n_per, "expected_edges", o->expected_edges, "w_lo", o->w_lo,
                  "w_hi", o->w_hi, "noise_sd", o->noise_sd, "hetero_var", o->hetero_var, "seed",
                  (json_int_t)o->seed, "generator", "ER G(n,p) + xoshiro256**/Box-Muller");
    int r;
    snprintf(path, sizeof(path), "%s/manifest.json", dir);
    r = json_dump_file(m, path, JSON_INDENT(1));
    json_decref(m);
    return r == 0 ? CORE_OK : CORE_EIO;
}

core_err lrn_sem_problem_write(const char *dir, const struct lrn_sem_opts *o,
                               const struct lrn_sem_problem *pb, char *eb, size_t ebn)
{
    char path[4096];
    size_t d = pb->d;
    const char **names = core_xcalloc(d, sizeof(*names));
    char *nbuf = core_xcalloc(d, 24);
    core_err rc = CORE_OK;

    for (size_t j = 0; j < d; j++) {
        snprintf(nbuf + 24 * j, 24, "x%zu", j);
        names[j] = nbuf + 24 * j;
    }
    snprintf(path, sizeof(path), "%s/truth.json", dir);
    rc = lrn_graph_write_json(path, pb->w, d, names, eb, ebn);
    snprintf(path, sizeof(path), "%s/truth.csv", dir);
    if (rc == CORE_OK)
        rc = lrn_csv_write(path, pb->w, d, d, NULL, eb, ebn);
    for (size_t p = 0; rc == CORE_OK && p < pb->participants; p++) {
        snprintf(path, sizeof(path), "%s/p%zu.csv", dir, p + 1);
        rc = lrn_csv_write(path, pb->x + p * pb->n_per * d, pb->n_per, d, names, eb, ebn);
        if (rc == CORE_OK && o->hetero_var > 0.0) {
            snprintf(path, sizeof(path), "%s/truth_p%zu.json", dir, p + 1);
            rc = lrn_graph_write_json(path, pb->w_p + p * d * d, d, names, eb, ebn);
        }
    }
    if (rc == CORE_OK && write_manifest(dir, o) != CORE_OK) {
        snprintf(eb, ebn, "%s/manifest.json: cannot write", dir);
        rc = CORE_EIO;
    }
    free(names);
    free(nbuf);
    return rc;
}
