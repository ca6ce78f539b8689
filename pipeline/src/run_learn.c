/* run_learn.c - `gcdp run`'s learner stage (run_int.h): the federated learner's server and
 * one participant per site (lrn/fedsvc.h) on threads of their own, reading only
 * topics.released; the newest learned DAG is kept for the summary, which compares it with
 * the simulator's true DAG (lrn/metrics.h) and with what a random graph of the same edge
 * count would score. Wiring only: the services are the learner library's, the same ones
 * `gcdp learn --server` / `--participant ID` run. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <uv.h>

#include "core/log.h"
#include "core/mem.h"
#include "core/prng.h"
#include "lrn/fedsvc.h"
#include "lrn/graphout.h"
#include "lrn/metrics.h"
#include "run_int.h"

#define LEARN_FINISH_MS  30000 /* at stop: wait this long for a session in progress */
#define SITE_DEVICES_MAX ((size_t)64 * 1024)
#define RANDOM_DAGS      2000 /* draws of the random-graph baseline (fixed seed: reproducible) */

struct run_learner {
    size_t sites;
    atomic_bool stop;
    bool stop_requested, stop_set;
    uint64_t stop_deadline;
    /* server */
    uv_thread_t server_th;
    bool server_started;
    atomic_bool server_done;
    struct lrn_fedsvc_server_opts so;
    struct lrn_fedsvc_server_progress sprog;
    core_err server_status;
    char server_err[512];
    /* participants */
    uv_thread_t *part_th;
    bool *part_started;
    atomic_uint parts_done;
    struct lrn_fedsvc_participant_opts *po;
    struct lrn_fedsvc_participant_progress *pprog;
    core_err *part_status;
    char (*part_err)[512];
    struct part_arg *pa;
    char **ids, **devices;
    /* the newest result (written on the server thread) */
    uv_mutex_t mu;
    bool have;
    uint64_t session;
    size_t d, rounds, participants, missing;
    bool converged;
    char **nodes;
    double *w;
    char dot[RUN_PATH_MAX];
};

struct part_arg {
    struct run_learner *l;
    size_t k;
};

static void free_result(struct run_learner *l)
{
    for (size_t i = 0; l->nodes && i < l->d; i++)
        free(l->nodes[i]);
    free(l->nodes);
    free(l->w);
    l->nodes = NULL;
    l->w = NULL;
}

static void on_result(void *arg, const struct lrn_fedsvc_result *r)
{
    struct run_learner *l = arg;

    uv_mutex_lock(&l->mu);
    free_result(l);
    l->d = r->d;
    l->nodes = core_xcalloc(r->d, sizeof(*l->nodes));
    for (size_t i = 0; i < r->d; i++)
        l->nodes[i] = core_xstrdup(r->nodes[i]);
    l->w = core_xcalloc(r->d * r->d, sizeof(double));
    memcpy(l->w, r->w, r->d * r->d * sizeof(double));
    l->session = r->session;
    l->rounds = r->rounds;
    l->converged = r->converged;
    l->participants = r->participants;
    l->missing = 0;
    for (size_t p = 0; p < r->participants; p++)
        l->missing += r->missing_from[p] != UINT64_MAX;
    snprintf(l->dot, sizeof(l->dot), "%s", r->dot_path ? r->dot_path : "");
    l->have = true;
    uv_mutex_unlock(&l->mu);
}

static void server_main(void *arg)
{
    struct run_learner *l = arg;
    l->server_status =
        lrn_fedsvc_server_run(&l->so, &l->stop, &l->sprog, l->server_err, sizeof(l->server_err));
    if (l->server_status != CORE_OK)
        CORE_ERROR("learner server stopped: %s", l->server_err);
    atomic_store(&l->server_done, true);
}

static void part_main(void *arg)
{
    struct part_arg *a = arg;
    struct run_learner *l = a->l;
    l->part_status[a->k] = lrn_fedsvc_participant_run(&l->po[a->k], &l->stop, &l->pprog[a->k],
                                                      l->part_err[a->k], sizeof(l->part_err[a->k]));
    if (l->part_status[a->k] != CORE_OK)
        CORE_ERROR("learner %s stopped: %s", l->ids[a->k], l->part_err[a->k]);
    atomic_fetch_add(&l->parts_done, 1);
}

/* Site k: the simulator's devices mote-i for i in [k n / K, (k+1) n / K): contiguous blocks,
 * as motes of one building would be (the simulator chains neighbouring motes). */
static char *site_devices(size_t k, size_t sites, size_t n)
{
    char *buf = core_xcalloc(SITE_DEVICES_MAX, 1);
    size_t len = 0;

    for (size_t i = k * n / sites; i < (k + 1) * n / sites && len + 32 < SITE_DEVICES_MAX; i++)
        len += (size_t)snprintf(buf + len, SITE_DEVICES_MAX - len, "%smote-%zu", len ? "," : "", i);
    return buf;
}

core_err run_lrn_start(struct run_ctx *c, char *eb, size_t ebn)
{
    struct run_learner *l = core_xcalloc(1, sizeof(*l));
    size_t sites = c->o.no_sim ? 1 : c->o.sites;

    c->lrn = l;
    l->sites = sites;
    uv_mutex_init(&l->mu);
    l->part_th = core_xcalloc(sites, sizeof(*l->part_th));
    l->part_started = core_xcalloc(sites, sizeof(*l->part_started));
    l->po = core_xcalloc(sites, sizeof(*l->po));
    l->pprog = core_xcalloc(sites, sizeof(*l->pprog));
    l->part_status = core_xcalloc(sites, sizeof(*l->part_status));
    l->part_err = core_xcalloc(sites, sizeof(*l->part_err));
    l->pa = core_xcalloc(sites, sizeof(*l->pa));
    l->ids = core_xcalloc(sites, sizeof(*l->ids));
    l->devices = core_xcalloc(sites, sizeof(*l->devices));
    for (size_t k = 0; k < sites; k++) {
        char id[32];
        snprintf(id, sizeof(id), "site-%zu", k);
        l->ids[k] = core_xstrdup(id);
        l->devices[k] = c->o.no_sim ? core_xstrdup("*") : site_devices(k, sites, c->o.devices);
        if (lrn_fedsvc_check(c->cfg, l->ids[k], l->devices[k], eb, ebn) != CORE_OK)
            return CORE_ECONFIG;
    }
    l->so = (struct lrn_fedsvc_server_opts){c->cfg, 0, on_result, l, c->metrics};
    if (uv_thread_create(&l->server_th, server_main, l) != 0) {
        snprintf(eb, ebn, "cannot start the learner server thread");
        return CORE_EIO;
    }
    l->server_started = true;
    for (size_t k = 0; k < sites; k++) {
        l->po[k] = (struct lrn_fedsvc_participant_opts){c->cfg, l->ids[k], l->devices[k], NULL};
        l->pa[k] = (struct part_arg){l, k};
        if (uv_thread_create(&l->part_th[k], part_main, &l->pa[k]) != 0) {
            snprintf(eb, ebn, "cannot start the learner participant threads");
            return CORE_EIO;
        }
        l->part_started[k] = true;
    }
    return CORE_OK;
}

/* Stopping the learner after release lets a session in progress finish (bounded by
 * LEARN_FINISH_MS; a second signal skips it), so the summary shows a DAG learned from as
 * much of the run as possible. */
void run_lrn_stop(struct run_ctx *c)
{
    struct run_learner *l = c->lrn;

    if (l && !l->stop_requested) {
        l->stop_requested = true;
        l->stop_deadline = uv_now(&c->loop) + LEARN_FINISH_MS;
    }
}

bool run_lrn_done(struct run_ctx *c)
{
    struct run_learner *l = c->lrn;
    size_t started = 0;

    if (!l)
        return true;
    if (l->stop_requested && !l->stop_set) {
        uint64_t sess = atomic_load(&l->sprog.session);
        bool in_session =
            sess > atomic_load(&l->sprog.sessions_completed) && atomic_load(&l->sprog.round) > 0;
        if (!in_session || c->signals > 1 || uv_now(&c->loop) >= l->stop_deadline) {
            l->stop_set = true;
            atomic_store(&l->stop, true);
        }
    }
    for (size_t k = 0; k < l->sites; k++)
        started += l->part_started[k];
    if (atomic_load(&l->parts_done) < started ||
        (l->server_started && !atomic_load(&l->server_done)))
        return false;
    return true; /* a thread that ended by itself is reported by run_lrn_failed() */
}

bool run_lrn_failed_early(const struct run_ctx *c)
{
    const struct run_learner *l = c->lrn;
    return l && !c->stopping && (atomic_load(&l->server_done) || atomic_load(&l->parts_done) > 0);
}

void run_lrn_progress(struct run_ctx *c, char *buf, size_t n)
{
    struct run_learner *l = c->lrn;
    uint64_t samples = 0;

    if (!l) {
        snprintf(buf, n, "%s", "");
        return;
    }
    for (size_t k = 0; k < l->sites; k++)
        samples += atomic_load(&l->pprog[k].samples);
    snprintf(buf, n,
             " | learner samples %" PRIu64 " session %" PRIu64 " round %" PRIu64
             " h %.1e edges %" PRIu64 " %.2f MB done %" PRIu64,
             samples, atomic_load(&l->sprog.session), atomic_load(&l->sprog.round),
             atomic_load(&l->sprog.h), atomic_load(&l->sprog.edges),
             (double)atomic_load(&l->sprog.bytes) / 1e6, atomic_load(&l->sprog.sessions_completed));
}

/* ---- summary: the learned DAG beside the simulator's true one ---- */

/* The true DAG of regime 0 in the learned nodes' order (node "<channel>.<stat>" reads
 * channel). Returns false when the truth file is unreadable or names no learned node. */
static bool truth_matrix(const char *path, char *const *nodes, size_t d, double *T)
{
    json_t *j = json_load_file(path, 0, NULL), *e;
    json_t *edges = json_object_get(json_array_get(json_object_get(j, "regimes"), 0), "edges");
    size_t k, hits = 0;

    memset(T, 0, d * d * sizeof(double));
    json_array_foreach(edges, k, e)
    {
        const char *from = json_string_value(json_object_get(e, "from"));
        const char *to = json_string_value(json_object_get(e, "to"));
        for (size_t i = 0; from && to && i < d; i++)
            for (size_t m = 0; m < d; m++) {
                size_t li = strcspn(nodes[i], "."), lm = strcspn(nodes[m], ".");
                if (strlen(from) == li && strncmp(nodes[i], from, li) == 0 && strlen(to) == lm &&
                    strncmp(nodes[m], to, lm) == 0) {
                    T[i * d + m] = json_number_value(json_object_get(e, "weight"));
                    hits++;
                }
            }
    }
    json_decref(j);
    return hits > 0;
}

static void edges_out(const struct run_learner *l, FILE *human, json_t *arr)
{
    const char *sep = "";
    for (size_t i = 0; i < l->d; i++)
        for (size_t m = 0; m < l->d; m++) {
            double w = l->w[i * l->d + m];
            if (w == 0.0)
                continue;
            fprintf(human, "%s%s -> %s (%.2f)", sep, l->nodes[i], l->nodes[m], w);
            sep = ", ";
            json_array_append_new(arr, json_pack("{s:s,s:s,s:f}", "from", l->nodes[i], "to",
                                                 l->nodes[m], "weight", w));
        }
    if (!*sep)
        fprintf(human, "no edge");
}

/* The chance baseline: mean SHD and skeleton F1 of random DAGs with `edges` edges (a random
 * order, `edges` of the d(d-1)/2 pairs drawn uniformly, oriented along the order) against
 * the truth T, over RANDOM_DAGS draws from a fixed seed. */
static void random_baseline(const double *T, size_t d, size_t edges, double *shd, double *f1)
{
    size_t pairs = d * (d - 1) / 2, *order = core_xcalloc(d, sizeof(size_t));
    size_t *pi = core_xcalloc(pairs, sizeof(size_t)), *pj = core_xcalloc(pairs, sizeof(size_t));
    double *R = core_xcalloc(d * d, sizeof(double));
    struct core_prng r;
    struct lrn_metrics m;
    size_t q = 0;

    core_prng_seed(&r, 20261202u);
    for (size_t i = 0; i < d; i++)
        for (size_t j = i + 1; j < d; j++, q++) {
            pi[q] = i;
            pj[q] = j;
        }
    *shd = *f1 = 0.0;
    for (int it = 0; it < RANDOM_DAGS; it++) {
        memset(R, 0, d * d * sizeof(double));
        for (size_t i = 0; i < d; i++)
            order[i] = i;
        for (size_t i = d; i-- > 1;) { /* order[k]: rank of node k */
            size_t j = (size_t)core_prng_below(&r, i + 1), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (size_t k = 0; k < edges && k < pairs; k++) { /* partial Fisher-Yates on pairs */
            size_t j = k + (size_t)core_prng_below(&r, pairs - k), a = pi[j], b = pj[j];
            pi[j] = pi[k];
            pj[j] = pj[k];
            pi[k] = a;
            pj[k] = b;
            R[order[a] < order[b] ? a * d + b : b * d + a] = 1.0;
        }
        if (lrn_metrics_compute(T, R, d, 0.0, &m) == CORE_OK) {
            double p = m.skel_precision, rc = m.skel_recall;
            *shd += (double)m.shd / RANDOM_DAGS;
            *f1 += (p + rc > 0 ? 2 * p * rc / (p + rc) : 0.0) / RANDOM_DAGS;
        }
    }
    free(order);
    free(pi);
    free(pj);
    free(R);
}

/* <out_dir>/dag-vs-truth.{dot,png}: the learned DAG coloured against the truth. Returns the
 * picture's path in buf ("" when none could be written). */
static void truth_picture(const struct run_ctx *c, const struct run_learner *l, const double *T,
                          char *buf, size_t n)
{
    const char *dir = core_config_str(c->cfg, "learner.service.out_dir");
    char dot[RUN_PATH_MAX], eb[256];

    buf[0] = '\0';
    snprintf(dot, sizeof(dot), "%s/dag-vs-truth.dot", dir ? dir : ".");
    if (lrn_graph_write_dot(dot, l->w, T, l->d, (const char *const *)l->nodes, eb, sizeof(eb)) !=
        CORE_OK)
        return;
    snprintf(buf, n, "%s/dag-vs-truth.png", dir ? dir : ".");
    if (lrn_graph_render_png(dot, buf, eb, sizeof(eb)) != CORE_OK)
        snprintf(buf, n, "%s", dot);
}

static json_t *truth_out(const struct run_ctx *c, const struct run_learner *l,
                         const char *truth_path, FILE *human)
{
    double *T = core_xcalloc(l->d * l->d, sizeof(double));
    struct lrn_metrics m;
    json_t *o = NULL;

    if (truth_path && truth_matrix(truth_path, l->nodes, l->d, T) &&
        lrn_metrics_compute(T, l->w, l->d, 0.0, &m) == CORE_OK) {
        double p = m.skel_precision, r = m.skel_recall, f1 = p + r > 0 ? 2 * p * r / (p + r) : 0;
        double rshd = 0, rf1 = 0;
        char pic[RUN_PATH_MAX];
        random_baseline(T, l->d, m.pred_edges, &rshd, &rf1);
        fprintf(human,
                "vs the simulator's true DAG (%s, regime 0: %zu edges): SHD %zu, TPR %.2f, "
                "FDR %.2f; skeleton recall %.2f, precision %.2f, F1 %.2f. A random DAG with "
                "the same %zu edges: SHD %.2f, skeleton F1 %.2f (mean of %d draws)\n",
                truth_path, m.true_edges, m.shd, m.tpr, m.fdr, r, p, f1, m.pred_edges, rshd, rf1,
                RANDOM_DAGS);
        truth_picture(c, l, T, pic, sizeof(pic));
        if (pic[0])
            fprintf(human,
                    "picture of both: %s (black: right, orange: reversed, red: extra, "
                    "grey dashed: missed)\n",
                    pic);
        o = json_pack("{s:s,s:s,s:i,s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "file", truth_path,
                      "picture", pic, "true_edges", (int)m.true_edges, "shd", (int)m.shd, "tpr",
                      m.tpr, "fdr", m.fdr, "skel_recall", r, "skel_precision", p, "skel_f1", f1,
                      "random_shd", rshd, "random_skel_f1", rf1);
    } else {
        fprintf(human, "no true DAG to compare with (%s)\n",
                truth_path ? truth_path : "not a simulator run");
    }
    free(T);
    return o;
}

void run_lrn_summary(struct run_ctx *c, FILE *human, FILE *json)
{
    struct run_learner *l = c->lrn;
    json_t *o, *edges;
    char *text;

    if (!l)
        return;
    uv_mutex_lock(&l->mu);
    if (!l->have) {
        uv_mutex_unlock(&l->mu);
        fprintf(human,
                "learner: no DAG yet (%" PRIu64 " session(s) started; each needs "
                "learner.service.min_samples rows at learner.service.participants sites)\n",
                atomic_load(&l->sprog.session));
        fprintf(json, ",\"learner\":null");
        return;
    }
    edges = json_array();
    fprintf(human,
            "learner: session %" PRIu64 ", %zu rounds (%s), %zu site(s), %zu missing; "
            "DAG: ",
            l->session, l->rounds, l->converged ? "converged" : "NOT converged", l->participants,
            l->missing);
    edges_out(l, human, edges);
    fprintf(human, "\n");
    o = json_pack("{s:I,s:i,s:b,s:i,s:i,s:o,s:o,s:s}", "session", (json_int_t)l->session, "rounds",
                  (int)l->rounds, "converged", l->converged, "sites", (int)l->participants,
                  "missing", (int)l->missing, "edges", edges, "truth", json_null(), "dot", l->dot);
    json_t *t = truth_out(c, l, c->truth_path[0] ? c->truth_path : NULL, human);
    if (t)
        json_object_set_new(o, "truth", t);
    if (l->dot[0]) {
        char png[RUN_PATH_MAX];
        size_t len = strlen(l->dot);
        snprintf(png, sizeof(png), "%.*s.png", (int)(len > 4 ? len - 4 : len), l->dot);
        fprintf(human, "picture: %s\n", access(png, R_OK) == 0 ? png : l->dot);
    }
    uv_mutex_unlock(&l->mu);
    text = json_dumps(o, JSON_COMPACT);
    fprintf(json, ",\"learner\":%s", text ? text : "null");
    free(text);
    json_decref(o);
}

bool run_lrn_failed(const struct run_ctx *c)
{
    const struct run_learner *l = c->lrn;
    if (!l)
        return false;
    if (l->server_started && l->server_status != CORE_OK) {
        fprintf(stderr, "gcdp run: learner server: %s\n", l->server_err);
        return true;
    }
    for (size_t k = 0; k < l->sites; k++)
        if (l->part_started[k] && l->part_status[k] != CORE_OK) {
            fprintf(stderr, "gcdp run: learner %s: %s\n", l->ids[k], l->part_err[k]);
            return true;
        }
    return false;
}

void run_lrn_free(struct run_ctx *c)
{
    struct run_learner *l = c->lrn;

    if (!l)
        return;
    atomic_store(&l->stop, true);
    if (l->server_started)
        uv_thread_join(&l->server_th);
    for (size_t k = 0; k < l->sites; k++) {
        if (l->part_started[k])
            uv_thread_join(&l->part_th[k]);
        free(l->ids[k]);
        free(l->devices[k]);
    }
    free_result(l);
    uv_mutex_destroy(&l->mu);
    free(l->part_th);
    free(l->part_started);
    free(l->po);
    free(l->pprog);
    free(l->part_status);
    free(l->part_err);
    free(l->pa);
    free(l->ids);
    free(l->devices);
    free(l);
    c->lrn = NULL;
}
