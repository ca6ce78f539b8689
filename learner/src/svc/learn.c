/* learn.c - one offline learning run over participant CSV files (lrn/learn.h): the body of
 * `gcdp learn` after its flags are parsed. */
#include "lrn/learn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "core/dp_rng.h"
#include "core/fsutil.h"
#include "core/mem.h"
#include "lrn/config.h"
#include "lrn/csvio.h"
#include "lrn/graphout.h"
#include "lrn/metrics.h"
#include "lrn/report.h"

struct lrn_learn {
    const struct lrn_learn_job *job;
    struct lrn_csv *csv[LRN_LEARN_MAX_P];
    const double *x[LRN_LEARN_MAX_P];
    size_t n[LRN_LEARN_MAX_P];
    size_t d;
    double *w, *truth, *m_public;
    json_t *report, *metrics;
};

core_err lrn_learn_load(const struct lrn_learn_job *job, struct core_pool *pool,
                        struct lrn_learn **out, char *eb, size_t ebn)
{
    struct lrn_learn *l = core_xcalloc(1, sizeof(*l));
    core_err rc;

    *out = NULL;
    l->job = job;
    rc = job->P == 0 || job->P > LRN_LEARN_MAX_P ? CORE_EINVAL : CORE_OK;
    if (rc != CORE_OK)
        snprintf(eb, ebn, "give 1..%d participant CSV files", LRN_LEARN_MAX_P);
    if (rc == CORE_OK)
        rc = lrn_csv_read_all(job->files, job->P, job->min_rows, pool, l->csv, eb, ebn);
    if (rc == CORE_OK && l->csv[0]->d < 2) {
        snprintf(eb, ebn, "%s: need at least 2 columns", job->files[0]);
        rc = CORE_EINVAL;
    }
    if (rc != CORE_OK) {
        lrn_learn_free(l);
        return rc;
    }
    l->d = l->csv[0]->d;
    for (size_t p = 0; p < job->P; p++) {
        l->x[p] = l->csv[p]->x;
        l->n[p] = l->csv[p]->n;
    }
    *out = l;
    return CORE_OK;
}

size_t lrn_learn_d(const struct lrn_learn *l)
{
    return l->d;
}

core_err lrn_learn_configure(struct lrn_learn *l, const struct core_config *cfg,
                             struct lrn_runner_opts *o, char *eb, size_t ebn)
{
    if (!l->m_public)
        l->m_public = core_xcalloc(l->d, sizeof(double));
    return lrn_runner_opts_from_config(cfg, l->d, o, l->m_public, eb, ebn);
}

void lrn_learn_free(struct lrn_learn *l)
{
    if (!l)
        return;
    for (size_t p = 0; p < l->job->P && p < LRN_LEARN_MAX_P; p++)
        lrn_csv_free(l->csv[p]);
    free(l->w);
    free(l->truth);
    free(l->m_public);
    json_decref(l->report);
    json_decref(l->metrics);
    free(l);
}

/* The per-round line: progress, or with job->trace the diagnostic line. */
static bool on_round(void *arg, const struct lrn_admm_progress *pr)
{
    const struct lrn_learn_job *job = ((const struct lrn_learn *)arg)->job;

    if (job->trace) {
        fprintf(job->log_f,
                "trace %3zu h(W) %.2e h(W~) %.2e primal %.3e dual %.3e chg %zu stable %zu "
                "beta_dropped %.3f rho1 %.3g alpha %.3g edges %zu up %zu down %zu lbfgs %zu\n",
                pr->round + 1, pr->h, pr->h_server, pr->primal_residual, pr->dual_residual,
                pr->support_changes, pr->stable_rounds, pr->beta_dropped, pr->rho1, pr->alpha,
                pr->edges, pr->nnz_up, pr->nnz_down, pr->lbfgs_iters);
        return true;
    }
    if (!job->quiet)
        fprintf(job->log_f,
                "round %4zu  h(W~) %.3e  primal %.2e  dual %.2e  support +-%zu (stable %zu)  "
                "edges %4zu  bytes %llu (paper model %llu)\n",
                pr->round + 1, pr->h_server, pr->primal_residual, pr->dual_residual,
                pr->support_changes, pr->stable_rounds, pr->edges,
                (unsigned long long)pr->bytes_wire, (unsigned long long)pr->bytes_model);
    return true;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* PREFIX<tag>.{json,csv,dot,png}; a PNG that cannot be rendered only warns. */
static core_err write_graph(const struct lrn_learn *l, const char *tag, const double *w,
                            const double *truth, char *eb, size_t ebn)
{
    const struct lrn_learn_job *job = l->job;
    char prefix[4096];
    core_err png_rc, rc;

    snprintf(prefix, sizeof(prefix), "%s%s", job->out, tag);
    rc = lrn_graph_write_all(prefix, w, truth, l->d, (const char *const *)l->csv[0]->names,
                             job->png, &png_rc, eb, ebn);
    if (rc == CORE_OK && png_rc != CORE_OK) {
        fprintf(job->log_f, "%s: warning: no PNG: %s\n", job->prog, eb);
        eb[0] = '\0';
    }
    return rc;
}

/* One graph's metrics against the truth into l->metrics; the first one also as a line. */
static core_err add_metrics(struct lrn_learn *l, const double *w, char *eb, size_t ebn)
{
    struct lrn_metrics m;

    if (lrn_metrics_compute(l->truth, w, l->d, 0.0, &m) != CORE_OK) {
        snprintf(eb, ebn, "cannot compute the metrics against --truth %s", l->job->truth);
        return CORE_EINVAL;
    }
    json_array_append_new(l->metrics, lrn_metrics_to_json(&m));
    if (json_array_size(l->metrics) == 1)
        fprintf(l->job->out_f,
                "SHD %zu  TPR %.3f  FDR %.3f  edges %zu (true %zu)  skeleton recall %.3f  "
                "v-structures %zu/%zu correct\n",
                m.shd, m.tpr, m.fdr, m.pred_edges, m.true_edges, m.skel_recall, m.vs_correct,
                m.vs_pred);
    return CORE_OK;
}

/* --personalize / --participant-truth: OLS refit per participant, NMSE (Appendix B.2.2),
 * into the report's "personalization" member. */
static core_err personalize(struct lrn_learn *l, char *eb, size_t ebn)
{
    const struct lrn_learn_job *job = l->job;
    size_t d = l->d;
    double *bp = core_xmalloc(d * d * sizeof(double));
    json_t *arr = json_array(), *row;
    char tag[64];
    core_err rc = CORE_OK;

    for (size_t p = 0; rc == CORE_OK && p < job->P; p++) {
        row = NULL;
        if (lrn_personalize_refit(l->csv[p]->n, d, l->csv[p]->x, l->w, bp) != CORE_OK) {
            snprintf(eb, ebn, "%s: OLS refit failed (singular)", job->files[p]);
            rc = CORE_ENUMERIC;
        }
        snprintf(tag, sizeof(tag), ".p%zu.personal", p + 1);
        if (rc == CORE_OK && job->personalize)
            rc = write_graph(l, tag, bp, NULL, eb, ebn);
        if (rc == CORE_OK && job->n_ptruth)
            rc = lrn_personal_nmse_json(job->ptruth[p], l->w, bp, d, &row, eb, ebn);
        json_array_append_new(arr, row ? row : json_object());
    }
    json_object_set_new(l->report, "personalization", arr);
    free(bp);
    return rc;
}

/* --truth into l->truth and the directory of the output prefix, before the run (a bad one
 * fails fast). */
static core_err read_truth_and_out(struct lrn_learn *l, char *eb, size_t ebn)
{
    const struct lrn_learn_job *job = l->job;
    size_t dt = 0;
    core_err rc;

    if (job->truth && (rc = lrn_graph_read(job->truth, l->d, &l->truth, &dt, eb, ebn)) != CORE_OK)
        return rc;
    if (core_mkdir_p(job->out, 1) != 0) {
        snprintf(eb, ebn, "cannot create the directory of --out %s: %s", job->out, strerror(errno));
        return CORE_EIO;
    }
    return CORE_OK;
}

/* The graphs (one, or one per participant for local-notears) and their metrics. */
static core_err write_graphs(struct lrn_learn *l, size_t ngraph, char *eb, size_t ebn)
{
    size_t dd = l->d * l->d;
    char tag[64] = "";
    core_err rc = CORE_OK;

    for (size_t g = 0; rc == CORE_OK && g < ngraph; g++) {
        if (ngraph > 1)
            snprintf(tag, sizeof(tag), ".p%zu", g + 1);
        rc = write_graph(l, tag, l->w + g * dd, l->truth, eb, ebn);
        if (rc == CORE_OK && l->truth)
            rc = add_metrics(l, l->w + g * dd, eb, ebn);
    }
    return rc;
}

/* The run's summary lines, then its report (metrics file). */
static core_err report(struct lrn_learn *l, const struct lrn_runner_opts *o,
                       const struct lrn_runner_result *res, double secs, char *eb, size_t ebn)
{
    const struct lrn_learn_job *job = l->job;
    size_t ngraph = o->method == LRN_METHOD_LOCAL_NOTEARS ? job->P : 1;
    char path[4096];
    core_err rc;

    if (!job->quiet && lrn_method_is_federated(o->method)) /* closes the progress lines */
        fprintf(job->log_f, "stop after round %zu: %s\n", res->admm.rounds,
                lrn_runner_stop_reason(o, res));
    fprintf(job->out_f,
            "%s: d = %zu, P = %zu, %.3f s, %zu rounds, communication %.3f MB (paper model), "
            "%llu bytes encoded\n",
            lrn_method_name(o->method), l->d, job->P, secs, res->admm.rounds,
            (double)res->admm.bytes_model / 1e6, (unsigned long long)res->admm.bytes_wire);
    lrn_runner_summary_print(job->out_f, o, res);
    rc = write_graphs(l, ngraph, eb, ebn);
    json_object_set_new(l->report, "options", lrn_runner_opts_json(o));
    json_object_set_new(l->report, "result", lrn_runner_result_json(o, res, secs));
    json_object_set(l->report, "metrics", l->metrics);
    if (rc == CORE_OK && (job->personalize || job->n_ptruth) && ngraph == 1)
        rc = personalize(l, eb, ebn);
    snprintf(path, sizeof(path), "%s.metrics.json", job->out);
    if (rc == CORE_OK && json_dump_file(l->report, path, JSON_INDENT(1)) != 0) {
        snprintf(eb, ebn, "%s: cannot write", path);
        rc = CORE_EIO;
    }
    if (rc == CORE_OK)
        fprintf(job->out_f, "wrote %s.{json,csv,dot%s} and %s\n", job->out, job->png ? ",png" : "",
                path);
    return rc;
}

core_err lrn_learn_run(struct lrn_learn *l, const struct lrn_runner_opts *o, char *eb, size_t ebn)
{
    const struct lrn_learn_job *job = l->job;
    size_t ngraph = o->method == LRN_METHOD_LOCAL_NOTEARS ? job->P : 1;
    struct lrn_runner_result res;
    double t0;
    core_err rc = read_truth_and_out(l, eb, ebn);

    if (rc != CORE_OK)
        return rc;
    l->report = json_pack("{s:s,s:I,s:I}", "schema", "gcdp.learn-metrics/1", "d", (json_int_t)l->d,
                          "participants", (json_int_t)job->P);
    l->metrics = json_array();
    l->w = core_xcalloc(ngraph * l->d * l->d, sizeof(double));
    t0 = now_s();
    rc = lrn_runner_run(o, l->d, job->P, l->x, l->n, core_rng_os(), on_round, l, l->w, &res, eb,
                        ebn);
    if (rc != CORE_OK)
        return rc;
    return report(l, o, &res, now_s() - t0, eb, ebn);
}
