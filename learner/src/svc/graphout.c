/* graphout.c - DAG as JSON / DOT / PNG, truth reader, metrics as JSON. */
#include "lrn/graphout.h"

#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "core/mem.h"
#include "lrn/csvio.h"

extern char **environ;

#define GRAPH_MAX_D 4096

static void node_name(const char *const *names, size_t i, char *buf, size_t n)
{
    if (names)
        snprintf(buf, n, "%s", names[i]);
    else
        snprintf(buf, n, "x%zu", i);
}

json_t *lrn_graph_to_json(const double *w, size_t d, const char *const *names)
{
    json_t *o = json_object(), *nodes = json_array(), *edges = json_array();
    char nb[256];

    for (size_t i = 0; i < d; i++) {
        node_name(names, i, nb, sizeof(nb));
        json_array_append_new(nodes, json_string(nb));
    }
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < d; j++)
            if (w[i * d + j] != 0.0)
                json_array_append_new(
                    edges, json_pack("[I,I,f]", (json_int_t)i, (json_int_t)j, w[i * d + j]));
    json_object_set_new(o, "schema", json_string("gcdp.dag/1"));
    json_object_set_new(o, "d", json_integer((json_int_t)d));
    json_object_set_new(o, "nodes", nodes);
    json_object_set_new(o, "edges", edges);
    return o;
}

core_err lrn_graph_write_json(const char *path, const double *w, size_t d, const char *const *names,
                              char *eb, size_t ebn)
{
    json_t *o = lrn_graph_to_json(w, d, names);
    int r = json_dump_file(o, path, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
    json_decref(o);
    if (r != 0) {
        if (eb)
            snprintf(eb, ebn, "%s: cannot write JSON", path);
        return CORE_EIO;
    }
    return CORE_OK;
}

static core_err parse_edges(json_t *edges, size_t d, double *w, const char *path, char *eb,
                            size_t ebn)
{
    size_t k;
    json_t *e;
    json_array_foreach(edges, k, e)
    {
        json_int_t i, j;
        double v;
        if (json_unpack(e, "[IIF]", &i, &j, &v) != 0 || i < 0 || j < 0 || (size_t)i >= d ||
            (size_t)j >= d || i == j || !isfinite(v)) {
            if (eb)
                snprintf(eb, ebn,
                         "%s: edges[%zu]: want [from, to, finite weight], "
                         "0 <= from != to < %zu",
                         path, k, d);
            return CORE_EPARSE;
        }
        w[(size_t)i * d + (size_t)j] = v;
    }
    return CORE_OK;
}

static core_err read_json_dag(const char *path, double **w, size_t *d_out, char *eb, size_t ebn)
{
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je), *edges;
    json_int_t d = 0;
    core_err rc = CORE_OK;

    if (!root) {
        if (eb)
            snprintf(eb, ebn, "%s:%d: %s", path, je.line, je.text);
        return CORE_EPARSE;
    }
    if (json_unpack(root, "{s:I,s:o}", "d", &d, "edges", &edges) != 0 || d < 1 || d > GRAPH_MAX_D ||
        !json_is_array(edges)) {
        if (eb)
            snprintf(eb, ebn, "%s: want {\"d\": 1..%d, \"edges\": [...]}", path, GRAPH_MAX_D);
        rc = CORE_EPARSE;
        goto out;
    }
    *w = core_xcalloc((size_t)d * (size_t)d, sizeof(double));
    *d_out = (size_t)d;
    rc = parse_edges(edges, (size_t)d, *w, path, eb, ebn);
    if (rc != CORE_OK) {
        free(*w);
        *w = NULL;
    }
out:
    json_decref(root);
    return rc;
}

core_err lrn_graph_read(const char *path, size_t expect_d, double **w, size_t *d_out, char *eb,
                        size_t ebn)
{
    size_t n = strlen(path);
    struct lrn_csv *c = NULL;
    core_err rc;

    *w = NULL;
    if (n > 5 && strcmp(path + n - 5, ".json") == 0) {
        rc = read_json_dag(path, w, d_out, eb, ebn);
    } else {
        rc = lrn_csv_read(path, 0, 1, &c, eb, ebn);
        if (rc == CORE_OK && c->n != c->d) {
            if (eb)
                snprintf(eb, ebn, "%s: adjacency must be square, got %zu x %zu", path, c->n, c->d);
            rc = CORE_EINVAL;
        }
        if (rc == CORE_OK) {
            *w = c->x;
            *d_out = c->d;
            c->x = NULL;
        }
        lrn_csv_free(c);
    }
    if (rc == CORE_OK && expect_d && *d_out != expect_d) {
        if (eb)
            snprintf(eb, ebn, "%s: truth has d = %zu but the data has d = %zu", path, *d_out,
                     expect_d);
        free(*w);
        *w = NULL;
        rc = CORE_EINVAL;
    }
    return rc;
}

static const char *edge_style(const double *truth, size_t d, size_t i, size_t j)
{
    if (!truth)
        return "color=black";
    if (truth[i * d + j] != 0.0)
        return "color=black,penwidth=1.6";
    if (truth[j * d + i] != 0.0)
        return "color=orange,penwidth=1.6";
    return "color=red,penwidth=1.6";
}

core_err lrn_graph_write_dot(const char *path, const double *est, const double *truth, size_t d,
                             const char *const *names, char *eb, size_t ebn)
{
    FILE *f = fopen(path, "w");
    char nb[256];
    core_err rc = CORE_OK;

    if (!f) {
        if (eb)
            snprintf(eb, ebn, "%s: cannot create: %s", path, strerror(errno));
        return CORE_EIO;
    }
    fprintf(f, "digraph learned {\n  graph [rankdir=TB%s];\n  node [shape=ellipse];\n",
            truth ? ", label=\"black: correct  orange: reversed  red: extra  "
                    "grey dashed: missing\""
                  : "");
    for (size_t i = 0; i < d; i++) {
        node_name(names, i, nb, sizeof(nb));
        fprintf(f, "  n%zu [label=\"%s\"];\n", i, nb);
    }
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < d; j++) {
            if (est[i * d + j] != 0.0)
                fprintf(f, "  n%zu -> n%zu [label=\"%.2f\", %s];\n", i, j, est[i * d + j],
                        edge_style(truth, d, i, j));
            else if (truth && truth[i * d + j] != 0.0 && est[j * d + i] == 0.0)
                fprintf(f, "  n%zu -> n%zu [style=dashed, color=grey];\n", i, j);
        }
    fprintf(f, "}\n");
    if (ferror(f))
        rc = CORE_EIO;
    if (fclose(f) != 0)
        rc = CORE_EIO;
    if (rc != CORE_OK && eb)
        snprintf(eb, ebn, "%s: write failed", path);
    return rc;
}

core_err lrn_graph_render_png(const char *dot_path, const char *png_path, char *eb, size_t ebn)
{
    char *argv[] = {"dot", "-Tpng", "-o", NULL, NULL, NULL};
    pid_t pid;
    int status = 0, r;

    argv[3] = (char *)png_path;
    argv[4] = (char *)dot_path;
    r = posix_spawnp(&pid, "dot", NULL, NULL, argv, environ);
    if (r != 0) {
        if (eb)
            snprintf(eb, ebn,
                     "graphviz 'dot' not found on PATH (%s); install graphviz to "
                     "get %s (the .dot file is written)",
                     strerror(r), png_path);
        return CORE_ENOTFOUND;
    }
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (eb)
            snprintf(eb, ebn, "dot -Tpng %s failed (status %d)", dot_path, status);
        return WIFEXITED(status) && WEXITSTATUS(status) == 127 ? CORE_ENOTFOUND : CORE_EIO;
    }
    return CORE_OK;
}

json_t *lrn_metrics_to_json(const struct lrn_metrics *m)
{
    return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:I,s:f,s:f,s:I,s:I,s:I}",
                     "d", (json_int_t)m->d, "true_edges", (json_int_t)m->true_edges, "pred_edges",
                     (json_int_t)m->pred_edges, "true_pos", (json_int_t)m->true_pos, "reversed",
                     (json_int_t)m->reversed, "false_pos", (json_int_t)m->false_pos,
                     "extra_skeleton", (json_int_t)m->extra_skel, "missing_skeleton",
                     (json_int_t)m->missing_skel, "shd", (json_int_t)m->shd, "tpr", m->tpr, "fdr",
                     m->fdr, "fpr", m->fpr, "skeleton_correct", (json_int_t)m->skel_correct,
                     "skeleton_recall", m->skel_recall, "skeleton_precision", m->skel_precision,
                     "vstructures_true", (json_int_t)m->vs_true, "vstructures_pred",
                     (json_int_t)m->vs_pred, "vstructures_correct", (json_int_t)m->vs_correct);
}

core_err lrn_graph_write_all(const char *prefix, const double *w, const double *truth, size_t d,
                             const char *const *names, bool png, core_err *png_rc, char *eb,
                             size_t ebn)
{
    char path[4096], dot[4096];
    core_err rc;

    *png_rc = CORE_OK;
    snprintf(path, sizeof(path), "%s.json", prefix);
    rc = lrn_graph_write_json(path, w, d, names, eb, ebn);
    snprintf(path, sizeof(path), "%s.csv", prefix);
    if (rc == CORE_OK)
        rc = lrn_csv_write(path, w, d, d, NULL, eb, ebn);
    snprintf(dot, sizeof(dot), "%s.dot", prefix);
    if (rc == CORE_OK)
        rc = lrn_graph_write_dot(dot, w, truth, d, names, eb, ebn);
    if (rc != CORE_OK || !png)
        return rc;
    snprintf(path, sizeof(path), "%s.png", prefix);
    *png_rc = lrn_graph_render_png(dot, path, eb, ebn);
    return CORE_OK;
}
