/* release.c - Algorithm 4 per window with the write-ahead ledger (NOISE.md §4.9 option A):
 * lookup -> charge -> noise -> encode -> group commit (fsync) -> emit. */
#include "rel/release.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/log.h"
#include "core/mem.h"

#define UNIT_BUF ((size_t)REL_MAX_UNITS_PER_WINDOW * (REL_MAX_DEVICE + 24))

struct pending {
    char id[REL_MAX_ID + 32];
    char *bytes;
    size_t len;
    bool replayed;
};

/* One worker's share of Algorithm 4 steps 2-5: coordinates [k0, k1). */
struct noise_job {
    const struct rel_plan *p;
    const struct core_rng *rng;
    const double *y;
    double *out, *work;
    size_t k0, k1;
    char *const *names;     /* optional: JSON-quoted coordinate names, to format the values */
    const size_t *name_len; /* with names: strlen of each */
    struct core_buf *txt;   /* with names: receives ',"name":value' for k in [k0, k1) */
    core_err rc;
};

/* Persistent noise workers of a releaser (they used to be created and joined per window,
 * 20-50 us each on a loaded machine). Worker i runs jobs[i] once per generation; the
 * calling thread runs jobs[0]. */
struct pool;
struct pool_arg {
    struct pool *pl;
    unsigned me; /* index of the worker's job */
};

struct pool {
    struct pool_arg args[REL_MAX_THREADS];
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    pthread_t tid[REL_MAX_THREADS];
    unsigned n;       /* worker threads running (0 .. nthreads - 1) */
    unsigned running; /* workers still busy with the current generation */
    uint64_t gen;
    bool stop;
    pid_t pid; /* creator: a fork child has none of the workers and runs every share itself */
    struct noise_job jobs[REL_MAX_THREADS];
};

static struct pool *pool_new(unsigned nthreads);
static void pool_free(struct pool *pl);

struct rel_releaser {
    const struct rel_plan *plan;
    struct core_dp_ledger *ledger;
    const struct core_rng *rng;
    size_t batch, n_pending;
    unsigned nthreads;
    struct pending *pending;
    char **coord_json;                    /* d JSON-escaped coordinate names, with quotes */
    size_t *coord_len;                    /* their lengths */
    struct pool *pool;                    /* NULL with one thread */
    struct core_buf scale_json;           /* '},"scale":{...}}': the plan's scales, encoded once */
    struct core_buf txt[REL_MAX_THREADS]; /* per-worker formatted values of the current window */
    double *y, *z, *out;                  /* d work arrays */
    double *bw;                /* d: the current window's own certificates (Algorithm 2) */
    struct rel_term *terms;    /* scratch for one coordinate's terms */
    struct rel_node_obs *tobs; /* their observations */
    size_t cap_terms;
    /* Certificate cache: bw[k] is a function of the plan (fixed for the releaser) and the
     * observations of coordinate k's nodes only, and consecutive windows mostly state the
     * same counts; cert_obs[cert_off[k] ..] holds the observations bw[k] was computed from
     * (valid when cert_ok[k]). */
    struct rel_node_obs *cert_obs;
    size_t *cert_off;
    uint8_t *cert_ok;
    char *unit_buf;
    const char **units;
    struct rel_release_stats stats;
};

/* ------------------------------------------------------------------ small helpers */

/* JSON string literal of s (quotes included; core_buf_json_str's escaping); new string. */
static char *json_quote(const char *s)
{
    struct core_buf b;

    core_buf_init(&b, CORE_BUF_NO_CAP); /* bounded by the name */
    core_buf_json_str(&b, s, strlen(s));
    return core_buf_take(&b, NULL);
}

/* Exact doubles (%.17g, round-trip), with -0 canonicalized to 0 (NOISE.md §4.11). Used for
 * the public parameters (eps_rel, delta, scales). */
static void sb_double(struct core_buf *b, double v)
{
    if (v == 0.0)
        v = 0.0;
    core_buf_printf(b, "%.17g", v);
}

/* Released values: fixed point, rounded to 12 decimals, trailing zeros trimmed. Rounding a
 * DP output is post-processing (no privacy cost); the stored and published bytes are the
 * rounded ones, so a replay is still byte-identical. glibc's %.17g costs ~250 ns (exact
 * multiprecision conversion) and was a fifth of the release path's CPU; this costs ~20 ns.
 * |v| >= 1e6 (only possible for .sum nodes or huge coefficients) falls back to %.17g. */
#define VALUE_MAX 40 /* longest sb_value output, %.17g included */

static const char digit_pairs[201] = "00010203040506070809101112131415161718192021222324"
                                     "25262728293031323334353637383940414243444546474849"
                                     "50515253545556575859606162636465666768697071727374"
                                     "75767778798081828384858687888990919293949596979899";

static void sb_value(struct core_buf *b, double v)
{
    char tmp[VALUE_MAX], *e = tmp + sizeof(tmp), *q = e;
    long long m;
    unsigned long long u, ip, fp;
    int digits = 12, neg;

    if (!(fabs(v) < 1e6)) {
        sb_double(b, v);
        return;
    }
    m = llround(v * 1e12);
    neg = m < 0;
    u = neg ? (unsigned long long)(-m) : (unsigned long long)m;
    ip = u / 1000000000000ULL;
    fp = u % 1000000000000ULL;
    if (fp) {
        while (fp % 10 == 0) { /* trim trailing zeros */
            fp /= 10;
            digits--;
        }
        for (; digits >= 2; digits -= 2, fp /= 100) {
            q -= 2;
            memcpy(q, digit_pairs + 2 * (fp % 100), 2);
        }
        if (digits)
            *--q = (char)('0' + fp % 10);
        *--q = '.';
    }
    do {
        *--q = (char)('0' + ip % 10);
        ip /= 10;
    } while (ip);
    if (neg && u)
        *--q = '-';
    core_buf_put(b, q, (size_t)(e - q));
}

/* ------------------------------------------------------------------ lifecycle */

static void cert_cache_init(struct rel_releaser *r)
{
    const struct cal_theta *t = r->plan->theta;
    size_t total = 0;

    r->cert_off = core_xcalloc(r->plan->d + 1, sizeof(*r->cert_off));
    r->cert_ok = core_xcalloc(r->plan->d + 1, sizeof(*r->cert_ok));
    for (size_t k = 0; k < r->plan->d; k++) {
        r->cert_off[k] = total;
        total += t->coords[k].n;
    }
    r->cert_obs = core_xcalloc(total + 1, sizeof(*r->cert_obs));
}

core_err rel_releaser_new(const struct rel_plan *plan, struct core_dp_ledger *ledger,
                          const struct core_rng *rng, size_t batch, unsigned nthreads,
                          struct rel_releaser **out)
{
    struct rel_releaser *r;

    *out = NULL;
    if (!plan || !ledger || !rng || batch == 0 || batch > 65536 || nthreads == 0 ||
        nthreads > REL_MAX_THREADS)
        return CORE_EINVAL;
    r = core_xcalloc(1, sizeof(*r));
    r->plan = plan;
    r->ledger = ledger;
    r->rng = rng;
    r->batch = batch;
    r->nthreads = nthreads;
    r->pending = core_xcalloc(batch, sizeof(*r->pending));
    r->coord_json = core_xcalloc(plan->d, sizeof(*r->coord_json));
    r->coord_len = core_xcalloc(plan->d, sizeof(*r->coord_len));
    core_buf_init(&r->scale_json, CORE_BUF_NO_CAP); /* bounded by d */
    for (unsigned t = 0; t < REL_MAX_THREADS; t++)
        core_buf_init(&r->txt[t], CORE_BUF_NO_CAP);
    for (size_t k = 0; k < plan->d; k++) {
        r->coord_json[k] = json_quote(plan->theta->coords[k].name ? plan->theta->coords[k].name
                                                                  : plan->theta->nodes[k]);
        r->coord_len[k] = strlen(r->coord_json[k]);
    }
    core_buf_put(&r->scale_json, "},\"scale\":{", 11);
    for (size_t k = 0; k < plan->d; k++) {
        if (k)
            core_buf_put(&r->scale_json, ",", 1);
        core_buf_put(&r->scale_json, r->coord_json[k], strlen(r->coord_json[k]));
        core_buf_put(&r->scale_json, ":", 1);
        sb_double(&r->scale_json, plan->scale[k]);
    }
    core_buf_put(&r->scale_json, "}}", 2);
    r->y = core_xcalloc(plan->d, sizeof(double));
    r->z = core_xcalloc(plan->d, sizeof(double));
    r->out = core_xcalloc(plan->d, sizeof(double));
    r->bw = core_xcalloc(plan->d, sizeof(double));
    for (size_t k = 0; k < plan->d; k++)
        r->cap_terms =
            plan->theta->coords[k].n > r->cap_terms ? plan->theta->coords[k].n : r->cap_terms;
    r->terms = core_xcalloc(r->cap_terms + 1, sizeof(*r->terms));
    r->tobs = core_xcalloc(r->cap_terms + 1, sizeof(*r->tobs));
    cert_cache_init(r);
    r->unit_buf = core_xmalloc(UNIT_BUF);
    r->units = core_xcalloc(REL_MAX_UNITS_PER_WINDOW, sizeof(*r->units));
    /* workers only when a window can use them (rel_noise_apply's 256-per-thread rule) */
    r->pool = plan->d >= (size_t)256 * nthreads ? pool_new(nthreads) : NULL;
    *out = r;
    return CORE_OK;
}

static void drop_pending(struct rel_releaser *r)
{
    for (size_t i = 0; i < r->n_pending; i++) {
        if (!r->pending[i].replayed && core_dp_ledger_cancel(r->ledger, r->pending[i].id))
            r->stats.cancel_failed++; /* stays charged: over-counts, never under */
        free(r->pending[i].bytes);
    }
    r->n_pending = 0;
}

void rel_releaser_free(struct rel_releaser *r)
{
    if (!r)
        return;
    drop_pending(r);
    pool_free(r->pool);
    free(r->pending);
    for (size_t k = 0; k < r->plan->d; k++)
        free(r->coord_json[k]);
    free(r->coord_json);
    free(r->coord_len);
    core_buf_cleanup(&r->scale_json);
    for (unsigned t = 0; t < REL_MAX_THREADS; t++)
        core_buf_cleanup(&r->txt[t]);
    free(r->y);
    free(r->z);
    free(r->out);
    free(r->bw);
    free(r->terms);
    free(r->tobs);
    free(r->cert_obs);
    free(r->cert_off);
    free(r->cert_ok);
    free(r->unit_buf);
    free(r->units);
    free(r);
}

void rel_releaser_stats(const struct rel_releaser *r, struct rel_release_stats *out)
{
    *out = r->stats;
}

/* ------------------------------------------------------------------ Algorithm 4 */

static bool same_obs(const struct cal_coord *c, const struct rel_node_obs *obs,
                     const struct rel_node_obs *seen)
{
    for (size_t a = 0; a < c->n; a++) {
        const struct rel_node_obs *o = &obs[c->nodes[a]];
        if (o->n_real != seen[a].n_real || o->n_points != seen[a].n_points ||
            o->max_run != seen[a].max_run)
            return false;
    }
    return true;
}

/* The window's own certificate per coordinate (Algorithm 2 from its provenance) into r->bw;
 * a coordinate whose nodes state the observations of its cached certificate reuses it (the
 * certificate is a pure function of the plan and those observations). */
static core_err window_certificates(struct rel_releaser *r, const struct rel_window *w, char *eb,
                                    size_t ebn)
{
    const struct rel_plan *p = r->plan;

    for (size_t k = 0; k < p->d; k++) {
        const struct cal_coord *c = &p->theta->coords[k];
        struct rel_node_obs *seen = &r->cert_obs[r->cert_off[k]];
        if (r->cert_ok[k] && same_obs(c, w->obs, seen))
            continue; /* bw[k] is the certificate of these very observations */
        r->cert_ok[k] = 0;
        for (size_t a = 0; a < c->n; a++) {
            r->terms[a] =
                (struct rel_term){p->node_chan[c->nodes[a]], p->node_stat[c->nodes[a]], c->coef[a]};
            r->tobs[a] = w->obs[c->nodes[a]];
        }
        if (rel_coord_bound_obs(p->n_chan, p->counts, c->n, r->terms, r->tobs, &p->opts.query,
                                &r->bw[k]) != CORE_OK) {
            snprintf(eb, ebn, "window %s: coordinate %s: no certificate from its provenance", w->id,
                     c->name ? c->name : "?");
            return CORE_EINVAL;
        }
        memcpy(seen, r->tobs, c->n * sizeof(*seen));
        r->cert_ok[k] = 1;
    }
    return CORE_OK;
}

/* y_k = Π_k(q_k(D)): public clamps of every node statistic, then of the combination.
 * Refuses windows the plan does not cover: provenance not the plan's, n outside
 * [n_min, n_max], over-dense windows. */
static core_err project(struct rel_releaser *r, const struct rel_window *w, char *eb, size_t ebn)
{
    const struct rel_plan *p = r->plan;
    const struct cal_theta *t = p->theta;
    char why[400];

    if (w->theta != t || !rel_plan_covers(p, &w->prof, why, sizeof(why))) {
        snprintf(eb, ebn, "window %s: %s; refused", w->id,
                 w->theta != t ? "parsed for another theta" : why);
        return CORE_EINVAL;
    }
    for (size_t m = 0; m < t->n_nodes; m++) {
        uint32_t n = w->obs[m].n_real;
        if (!p->node_used[m])
            continue;
        if (n < p->opts.query.min_samples || n > p->opts.query.max_samples) {
            snprintf(eb, ebn,
                     "window %s: node %s has %" PRIu32 " real samples, outside the "
                     "certified range [%" PRIu32 ", %" PRIu32 "] (release.query.*); refused",
                     w->id, w->prof.node[m].key, n, p->opts.query.min_samples,
                     p->opts.query.max_samples);
            return CORE_EINVAL;
        }
        if (p->opts.policy_time_radius > 0 && w->n_slots > 0 &&
            (uint64_t)n > (uint64_t)p->opts.policy_per_slot * w->n_slots) {
            snprintf(eb, ebn,
                     "window %s: node %s has more real samples than "
                     "release.policy.max_per_slot x n_slots; refused",
                     w->id, w->prof.node[m].key);
            return CORE_EINVAL;
        }
        if (!isfinite(w->x[m])) {
            snprintf(eb, ebn, "window %s: node %s is not a finite number", w->id, t->nodes[m]);
            return CORE_EINVAL;
        }
    }
    for (size_t k = 0; k < p->d; k++) {
        const struct cal_coord *c = &t->coords[k];
        double q = 0.0;
        for (size_t a = 0; a < c->n; a++) {
            double lo, hi;
            rel_stat_range(p->node_stat[c->nodes[a]], &p->opts.query, &lo, &hi);
            q += c->coef[a] * fmin(fmax(w->x[c->nodes[a]], lo), hi);
        }
        r->y[k] = fmin(fmax(q, p->lo[k]), p->hi[k]);
    }
    return window_certificates(r, w, eb, ebn);
}

static void *noise_run(void *arg)
{
    struct noise_job *j = arg;
    const struct rel_plan *p = j->p;
    core_err rc = CORE_OK;

    for (size_t k = j->k0; rc == CORE_OK && k < j->k1; k++) {
        if (!(p->s[k] > 0.0)) {
            j->out[k] = j->y[k]; /* zero sensitivity: released exactly (Theorem 1) */
        } else if (p->opts.mech->gaussian) {
            j->work[k] = j->y[k] / p->s[k]; /* sensitivity <= 1 per coordinate */
            rc = core_dp_gauss_release(j->rng, &p->gauss, 1, &j->work[k], &j->work[k]);
            j->out[k] = p->s[k] * j->work[k];
        } else {
            rc = core_dp_lap_release(j->rng, &p->lap[k], 1, &j->y[k], &j->out[k]);
        }
    }
    if (rc == CORE_OK && j->names) { /* encoding in the worker: printf is the next cost */
        core_buf_reset(j->txt);
        for (size_t k = j->k0; k < j->k1; k++) {
            size_t nl = j->name_len[k];
            if (!core_buf_reserve(j->txt, nl + 2 + VALUE_MAX))
                break; /* never: the buffer has no cap of its own */
            char *d = j->txt->p + j->txt->len;
            if (k)
                *d++ = ',';
            memcpy(d, j->names[k], nl);
            d += nl;
            *d++ = ':';
            j->txt->len = (size_t)(d - j->txt->p);
            sb_value(j->txt, j->out[k]);
        }
    }
    j->rc = rc;
    return NULL;
}

static void *pool_worker(void *arg);

/* Start nthreads - 1 persistent workers; fewer if pthread_create fails (the calling
 * thread then does more of the work). NULL for one thread. */
static struct pool *pool_new(unsigned nthreads)
{
    struct pool *pl;

    if (nthreads <= 1)
        return NULL;
    pl = core_xcalloc(1, sizeof(*pl));
    if (pthread_mutex_init(&pl->mu, NULL) != 0) {
        free(pl);
        return NULL;
    }
    if (pthread_cond_init(&pl->go, NULL) != 0) {
        pthread_mutex_destroy(&pl->mu);
        free(pl);
        return NULL;
    }
    if (pthread_cond_init(&pl->done, NULL) != 0) {
        pthread_cond_destroy(&pl->go);
        pthread_mutex_destroy(&pl->mu);
        free(pl);
        return NULL;
    }
    pl->pid = getpid();
    for (unsigned t = 1; t < nthreads; t++) {
        pl->args[t] = (struct pool_arg){pl, t};
        if (pthread_create(&pl->tid[t], NULL, pool_worker, &pl->args[t]) != 0)
            break;
        pl->n++;
    }
    return pl;
}

static void pool_free(struct pool *pl)
{
    if (!pl)
        return;
    if (pl->pid != getpid()) { /* a fork child: the workers (and their lock) are the parent's */
        free(pl);
        return;
    }
    pthread_mutex_lock(&pl->mu);
    pl->stop = true;
    pthread_cond_broadcast(&pl->go);
    pthread_mutex_unlock(&pl->mu);
    for (unsigned t = 1; t <= pl->n; t++)
        pthread_join(pl->tid[t], NULL);
    pthread_cond_destroy(&pl->done);
    pthread_cond_destroy(&pl->go);
    pthread_mutex_destroy(&pl->mu);
    explicit_bzero(pl->jobs, sizeof(pl->jobs));
    free(pl);
}

static void *pool_worker(void *arg)
{
    const struct pool_arg *a = arg;
    struct pool *pl = a->pl;
    const unsigned me = a->me;
    uint64_t seen = 0;

    pthread_mutex_lock(&pl->mu);
    for (;;) {
        while (!pl->stop && pl->gen == seen)
            pthread_cond_wait(&pl->go, &pl->mu);
        if (pl->stop)
            break;
        seen = pl->gen;
        pthread_mutex_unlock(&pl->mu);
        noise_run(&pl->jobs[me]);
        pthread_mutex_lock(&pl->mu);
        if (--pl->running == 0)
            pthread_cond_signal(&pl->done);
    }
    pthread_mutex_unlock(&pl->mu);
    core_rng_os_wipe(); /* this thread's buffered future randomness dies with it */
    return NULL;
}

/* Runs jobs[0..nthreads): jobs 1.. on the pool's workers (pl not NULL: then nthreads is
 * pl->n + 1) or on threads created for this call (a thread that cannot be created: its job
 * runs here), job 0 on this thread; returns when all are done. */
static void noise_run_all(struct pool *pl, struct noise_job *jobs, unsigned nthreads)
{
    pthread_t tid[REL_MAX_THREADS];
    unsigned started = 1;
    bool pooled = pl != NULL;

    if (pooled) {
        pthread_mutex_lock(&pl->mu);
        pl->running = pl->n;
        pl->gen++;
        pthread_cond_broadcast(&pl->go);
        pthread_mutex_unlock(&pl->mu);
    } else {
        for (; started < nthreads; started++)
            if (pthread_create(&tid[started], NULL, noise_run, &jobs[started]) != 0)
                break;
        for (unsigned t = started; t < nthreads; t++) /* could not start: do it here */
            noise_run(&jobs[t]);
    }
    noise_run(&jobs[0]);
    if (pooled) {
        pthread_mutex_lock(&pl->mu);
        while (pl->running > 0)
            pthread_cond_wait(&pl->done, &pl->mu);
        pthread_mutex_unlock(&pl->mu);
    } else {
        for (unsigned t = 1; t < started; t++)
            pthread_join(tid[t], NULL);
    }
}

/* rel_noise_apply, optionally formatting each worker's values into txt[t]; *used = parts.
 * With a pool, its workers take the other shares; without one, threads are created for
 * this call. */
static core_err noise_apply(const struct rel_plan *p, const struct core_rng *rng, unsigned nthreads,
                            struct pool *pl, const double *y, double *out,
                            // NOLINTNEXTLINE(readability-non-const-parameter): the jobs write it
                            double *work, char *const *names, const size_t *name_len,
                            struct core_buf *txt, unsigned *used)
{
    struct noise_job local[REL_MAX_THREADS], *jobs = pl ? pl->jobs : local;
    core_err rc = CORE_OK;

    if (!p || !rng || nthreads == 0 || nthreads > REL_MAX_THREADS)
        return CORE_EINVAL;
    if (pl && pl->pid != getpid())
        pl = NULL, jobs = local; /* forked: the workers stayed in the parent */
    if (pl)
        nthreads = pl->n + 1;
    if (p->d < (size_t)256 * nthreads) /* not worth a thread */
        nthreads = 1;
    for (unsigned t = 0; t < nthreads; t++)
        jobs[t] = (struct noise_job){p,
                                     rng,
                                     y,
                                     out,
                                     work,
                                     p->d * t / nthreads,
                                     p->d * (t + 1) / nthreads,
                                     names,
                                     name_len,
                                     names ? &txt[t] : NULL,
                                     CORE_OK};
    if (used)
        *used = nthreads;
    noise_run_all(nthreads > 1 ? pl : NULL, jobs, nthreads);
    for (unsigned t = 0; t < nthreads; t++)
        if (jobs[t].rc != CORE_OK && rc == CORE_OK)
            rc = jobs[t].rc;
    if (rc != CORE_OK) /* fail closed: nothing of this window may be used */
        explicit_bzero(out, p->d * sizeof(*out));
    return rc;
}

core_err rel_noise_apply(const struct rel_plan *p, const struct core_rng *rng, unsigned nthreads,
                         const double *y, double *out, double *work)
{
    return noise_apply(p, rng, nthreads, NULL, y, out, work, NULL, NULL, NULL, NULL);
}

static char *encode(struct rel_releaser *r, const struct rel_window *w, const char *rid,
                    unsigned parts, size_t *len)
{
    const struct rel_plan *p = r->plan;
    struct core_buf b;

    core_buf_init(&b, CORE_BUF_NO_CAP); /* bounded by d */
    (void)core_buf_reserve(&b, 256 + p->d * 64);
    core_buf_printf(&b, "{\"schema\":\"%s\",\"release_id\":", REL_SCHEMA_RELEASED);
    core_buf_json_str(&b, rid, strlen(rid));
    core_buf_printf(&b,
                    ",\"device\":\"%s\",\"window_start\":%" PRId64 ",\"window_end\":%" PRId64
                    ",\"theta_version\":%" PRIu64 ",\"mechanism\":\"%s\",\"eps_rel\":",
                    w->device, w->start, w->end, p->theta->version, p->opts.mech->name);
    sb_double(&b, p->opts.eps_rel);
    if (p->opts.mech->gaussian) {
        core_buf_put(&b, ",\"delta\":", 9);
        sb_double(&b, p->opts.delta);
    }
    core_buf_put(&b, ",\"values\":{", 11);
    for (unsigned t = 0; t < parts; t++) /* formatted by the noise workers, in order */
        core_buf_put(&b, r->txt[t].p, r->txt[t].len);
    core_buf_put(&b, r->scale_json.p, r->scale_json.len); /* public, fixed per plan */
    return core_buf_take(&b, len);
}

core_err rel_releaser_flush(struct rel_releaser *r, rel_emit_fn *emit, void *arg, char *eb,
                            size_t ebn)
{
    const char **ids = NULL;
    const void **bytes = NULL;
    size_t *lens = NULL, n = 0;
    core_err rc = CORE_OK;

    if (r->n_pending == 0)
        return CORE_OK;
    ids = core_xcalloc(r->n_pending, sizeof(*ids));
    bytes = core_xcalloc(r->n_pending, sizeof(*bytes));
    lens = core_xcalloc(r->n_pending, sizeof(*lens));
    for (size_t i = 0; i < r->n_pending; i++) {
        if (r->pending[i].replayed)
            continue;
        ids[n] = r->pending[i].id;
        bytes[n] = r->pending[i].bytes;
        lens[n++] = r->pending[i].len;
    }
    if (n > 0)
        rc = core_dp_ledger_commit_batch(r->ledger, n, ids, bytes, lens); /* fsync */
    if (rc != CORE_OK) {
        snprintf(eb, ebn, "ledger commit failed (%s); nothing of the batch was published",
                 core_strerror(rc));
        goto out;
    }
    for (size_t i = 0; i < r->n_pending; i++) {
        r->pending[i].replayed ? r->stats.replayed++ : r->stats.released++;
        if (rc == CORE_OK)
            rc = emit(arg, r->pending[i].bytes, r->pending[i].len, r->pending[i].replayed);
        free(r->pending[i].bytes);
        r->pending[i].replayed = true; /* committed: nothing left to cancel */
    }
    r->n_pending = 0;
    if (rc != CORE_OK)
        snprintf(eb, ebn,
                 "output failed after the ledger commit (%s); rerun to republish "
                 "from the ledger",
                 core_strerror(rc));
out:
    free(ids);
    free(bytes);
    free(lens);
    return rc;
}

static const char *t_name(const struct rel_plan *p, size_t k)
{
    const struct cal_theta *t = p->theta;
    return t->coords[k].name ? t->coords[k].name : k < t->n_nodes ? t->nodes[k] : "?";
}

static core_err queue(struct rel_releaser *r, const char *rid, char *bytes, size_t len,
                      bool replayed, rel_emit_fn *emit, void *arg, char *eb, size_t ebn)
{
    struct pending *e = &r->pending[r->n_pending++];
    snprintf(e->id, sizeof(e->id), "%s", rid);
    e->bytes = bytes;
    e->len = len;
    e->replayed = replayed;
    return r->n_pending == r->batch ? rel_releaser_flush(r, emit, arg, eb, ebn) : CORE_OK;
}

static core_err charge(struct rel_releaser *r, const struct rel_window *w, const char *rid,
                       char *eb, size_t ebn)
{
    const struct rel_plan *p = r->plan;
    size_t n_units = 0;
    core_err rc = rel_plan_units(p, w->device, w->start, w->end, r->unit_buf, UNIT_BUF, r->units,
                                 REL_MAX_UNITS_PER_WINDOW, &n_units);
    if (rc != CORE_OK) {
        snprintf(eb, ebn,
                 "window %s: spans more than %u ledger slots "
                 "(release.ledger.slot_ms too small)",
                 w->id, REL_MAX_UNITS_PER_WINDOW);
        return rc;
    }
    rc = core_dp_ledger_charge(r->ledger, rid, p->opts.mech->name, r->units, n_units, &p->cost,
                               p->params_json);
    if (rc == CORE_EBUDGET) /* the cap's message is core's, as its decision */
        core_dp_ledger_refusal(r->ledger, r->units, n_units, &p->cost, "release", "eps", eb, ebn);
    else if (rc != CORE_OK)
        snprintf(eb, ebn, "window %s: ledger charge failed (%s)", w->id, core_strerror(rc));
    return rc;
}

/* Does a stored record carry the current mechanism and eps_rel? (only to warn: the stored
 * bytes are republished either way; the record states what produced it). */
static bool replay_matches(const struct rel_plan *p, const uint8_t *bytes, size_t len)
{
    char want[128];
    struct core_buf b;
    bool ok;
    core_buf_init(&b, CORE_BUF_NO_CAP);
    snprintf(want, sizeof(want), "\"mechanism\":\"%s\",\"eps_rel\":", p->opts.mech->name);
    core_buf_put(&b, want, strlen(want));
    sb_double(&b, p->opts.eps_rel);
    ok = false;
    for (size_t i = 0; !ok && len >= b.len && i <= len - b.len; i++)
        ok = bytes[i] == (uint8_t)b.p[0] && memcmp(bytes + i, b.p, b.len) == 0;
    core_buf_cleanup(&b);
    return ok;
}

/* A replay of release rid: its stored bytes queued as they are (never new noise). */
static core_err replay(struct rel_releaser *r, const char *rid, uint8_t *stored, size_t len,
                       rel_emit_fn *emit, void *arg, char *eb, size_t ebn)
{
    if (!replay_matches(r->plan, stored, len) && r->stats.replayed_other++ == 0)
        CORE_WARN("release %s was first published with another mechanism or eps_rel; "
                  "republishing the stored record unchanged (a new theta version "
                  "is needed for a new release)",
                  rid);
    return queue(r, rid, (char *)stored, len, true, emit, arg, eb, ebn);
}

/* The window's projection, then Algorithm 4 step 1 per window: s_k >= B_k >= the window's
 * own certificate from its provenance (DESIGN §7.2, §7.7). CORE_EINVAL refuses this window
 * only: nothing charged, nothing drawn. */
static core_err certify(struct rel_releaser *r, const struct rel_window *w, char *eb, size_t ebn)
{
    const struct rel_plan *p = r->plan;
    size_t bad = 0;
    enum rel_refusal why = REL_REFUSE_NONE;
    core_err rc = project(r, w, eb, ebn);

    if (rc != CORE_OK)
        return rc;
    rc = rel_release_check(p->d, p->B, r->bw, p->s, p->eps, p->opts.eps_rel, &bad, &why);
    if (rc == CORE_OK)
        return CORE_OK;
    snprintf(eb, ebn,
             "window %s: release refused (Algorithm 4): coordinate %s: %s "
             "(the window's certificate %.6g, plan B %.6g)",
             w->id, bad < p->d && t_name(p, bad) ? t_name(p, bad) : "-", rel_refusal_str(why),
             bad < p->d ? r->bw[bad] : 0.0, bad < p->d ? p->B[bad] : 0.0);
    return CORE_EINVAL;
}

core_err rel_releaser_push(struct rel_releaser *r, const struct rel_window *w, rel_emit_fn *emit,
                           void *arg, char *eb, size_t ebn)
{
    const struct rel_plan *p = r->plan;
    char rid[REL_MAX_ID + 32], *bytes = NULL;
    unsigned parts = 0;
    uint8_t *stored = NULL;
    size_t len = 0;
    core_err rc;

    if (r->n_pending >= r->batch) { /* an earlier group commit failed: retry it first */
        rc = rel_releaser_flush(r, emit, arg, eb, ebn);
        if (rc != CORE_OK)
            return rc;
    }
    if (w->excluded) {
        r->stats.excluded++;
        return CORE_OK;
    }
    snprintf(rid, sizeof(rid), "%s@%" PRIu64, w->id, p->theta->version);
    rc = core_dp_ledger_lookup(r->ledger, rid, &stored, &len);
    if (rc == CORE_ENOTFOUND) {
        /* a duplicate of a release still pending in this batch: commit it, then replay */
        for (size_t i = 0; i < r->n_pending; i++)
            if (strcmp(r->pending[i].id, rid) == 0) {
                rc = rel_releaser_flush(r, emit, arg, eb, ebn);
                if (rc != CORE_OK)
                    return rc;
                return rel_releaser_push(r, w, emit, arg, eb, ebn);
            }
    }
    if (rc == CORE_OK) /* replay: the stored bytes, never new noise */
        return replay(r, rid, stored, len, emit, arg, eb, ebn);
    if (rc != CORE_ENOTFOUND) {
        snprintf(eb, ebn, "ledger lookup failed (%s)", core_strerror(rc));
        return rc;
    }
    rc = certify(r, w, eb, ebn);
    if (rc == CORE_OK)
        rc = charge(r, w, rid, eb, ebn); /* write-ahead: charged before any noise */
    if (rc != CORE_OK)
        return rc;
    rc = noise_apply(p, r->rng, r->nthreads, r->pool, r->y, r->out, r->z, r->coord_json,
                     r->coord_len, r->txt, &parts);
    if (rc != CORE_OK) {
        if (core_dp_ledger_cancel(r->ledger, rid) != CORE_OK)
            r->stats.cancel_failed++;
        snprintf(eb, ebn, "window %s: noise generation failed (%s); nothing released", w->id,
                 core_strerror(rc));
        return rc;
    }
    bytes = encode(r, w, rid, parts, &len);
    r->stats.coords_noisy += p->n_noisy;
    r->stats.coords_exact += p->d - p->n_noisy;
    return queue(r, rid, bytes, len, false, emit, arg, eb, ebn);
}

core_err rel_plan_for_window(const struct cal_theta *theta, struct rel_opts *o,
                             const struct rel_window *w, int64_t ledger_period_ms,
                             struct rel_plan **out, char *eb, size_t ebn)
{
    struct core_dp_scheme sc;
    core_err rc;

    o->profile = &w->prof;
    rc = rel_plan_new(theta, o, out, eb, ebn);
    o->profile = NULL;
    if (rc != CORE_OK)
        return rc;
    rel_plan_scheme(*out, &sc);
    if (ledger_period_ms > 0 && sc.period_ms != ledger_period_ms) {
        snprintf(eb, ebn,
                 "window %s: prov.period_ms %lld differs from the ledger scheme's "
                 "period %lld (ingest.period_ms): the units would not be the ledger's; refused",
                 w->id, (long long)sc.period_ms, (long long)ledger_period_ms);
        rel_plan_free(*out);
        *out = NULL;
        return CORE_ESTATE;
    }
    return CORE_OK;
}
