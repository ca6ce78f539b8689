/* release.c - the offline `gcdp release` (pipe/release.h): input, ledger and output around
 * rel_offline_run, the plan-only mode and the closing counts. */
#include "pipe/release.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "cal/theta.h"
#include "core/dp_ledger.h"
#include "core/dp_ledger_cfg.h"
#include "core/dp_rng.h"
#include "core/fsutil.h"
#include "core/log.h"
#include "rel/offline.h"
#include "rel/plan.h"
#include "rel/release.h"

/* The run: the request and the record loop's state. */
struct run {
    const struct pipe_release_offline *req;
    struct rel_offline r;
};

static void print_plan(const struct rel_plan *p)
{
    json_t *o = rel_plan_to_json(p);

    json_dumpf(o, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    putchar('\n');
    json_decref(o);
}

static void on_skip(void *arg, size_t lineno, const char *why, core_err rc)
{
    const struct pipe_release_offline *req = ((const struct run *)arg)->req;

    fprintf(req->log, "%s: input line %zu: %s (%s); skipped\n", req->prog, lineno, why,
            core_errname(rc));
}

static core_err run_stream(struct run *u, FILE *in, FILE *out)
{
    const struct pipe_release_offline *req = u->req;
    struct rel_offline *r = &u->r;
    char eb[1024] = "";
    core_err rc = rel_offline_run(r, in, out, eb, sizeof(eb));

    if (rc != CORE_OK && r->lineno)
        fprintf(req->log, "%s: input line %zu: %s (%s)\n", req->prog, r->lineno,
                eb[0] ? eb : "output error", core_errname(rc));
    else if (rc != CORE_OK)
        fprintf(req->log, "%s: %s (%s)\n", req->prog, eb[0] ? eb : "output error",
                core_errname(rc));
    if (r->skipped)
        fprintf(req->log, "%s: %zu record(s) refused and skipped\n", req->prog, r->skipped);
    if (rc != CORE_OK && r->plan_failed && rc != CORE_EIO)
        return CORE_ECONFIG;
    return rc == CORE_ECONFIG ? CORE_EINVAL : rc;
}

static core_err open_ledger(struct run *u)
{
    struct rel_offline *r = &u->r;
    struct core_dp_ledger_opts lo = {u->req->ledger_path, r->opts.cap, 0, r->scheme};
    char eb[1024] = "";
    core_err rc = core_dp_ledger_open_config(r->cfg, &lo, &r->ledger, eb, sizeof(eb));

    if (rc == CORE_OK)
        return CORE_OK;
    fprintf(u->req->log, "%s: ledger '%s': %s (%s)\n", u->req->prog, lo.path,
            eb[0] ? eb : "cannot open", core_errname(rc));
    return rc == CORE_ESTATE ? CORE_ECONFIG : rc == CORE_ECONFIG ? CORE_EINVAL : rc;
}

/* The window records: the input file, or standard input unless it is a terminal. */
static core_err open_input(const struct pipe_release_offline *req, FILE **in)
{
    struct stat st_in;

    if (strcmp(req->input, "-") == 0 && isatty(STDIN_FILENO)) { /* would wait silently */
        fprintf(req->log,
                "%s: window records are read from standard input, which is a terminal; "
                "give --input FILE (or pipe the records in)\n",
                req->prog);
        return CORE_ECONFIG;
    }
    if (strcmp(req->input, "-") != 0 && !(*in = fopen(req->input, "r"))) {
        fprintf(req->log, "%s: cannot open input '%s': %s\n", req->prog, req->input,
                strerror(errno));
        return CORE_EIO;
    }
    if (*in != stdin && fstat(fileno(*in), &st_in) == 0 && S_ISDIR(st_in.st_mode)) {
        fprintf(req->log, "%s: input '%s' is a directory\n", req->prog, req->input);
        fclose(*in);
        *in = NULL;
        return CORE_ECONFIG;
    }
    return CORE_OK;
}

/* The closing counts (log line). */
static void log_done(const struct run *u, core_err rc)
{
    const struct rel_offline *r = &u->r;
    struct rel_release_stats st;

    if (r->rr) {
        rel_releaser_stats(r->rr, &st);
        CORE_INFO("release done: released=%" PRIu64 " replayed=%" PRIu64 " (with other "
                  "parameters: %" PRIu64 ") excluded=%" PRIu64 " coords_noisy=%" PRIu64
                  " coords_exact=%" PRIu64,
                  st.released, st.replayed, st.replayed_other, st.excluded + r->excluded_before,
                  st.coords_noisy, st.coords_exact);
    } else if (!u->req->plan_only && rc == CORE_OK) {
        CORE_INFO("release done: released=0 excluded=%" PRIu64 " (no window to release)",
                  r->excluded_before);
    }
}

/* Output (temporary file, committed on success) around run_stream. */
static core_err run_output(struct run *u, FILE *in)
{
    const struct pipe_release_offline *req = u->req;
    struct core_outfile of = {0};
    char eb[512] = "";
    core_err rc = CORE_OK;

    if (!req->plan_only && core_outfile_open(&of, req->output, eb, sizeof(eb)) != CORE_OK) {
        fprintf(req->log, "%s: output: %s\n", req->prog, eb);
        return CORE_EIO;
    }
    if (of.f == stdout)
        setvbuf(stdout, NULL, _IOLBF, 0); /* a live pipe sees each record as it is released */
    rc = run_stream(u, in, of.f ? of.f : stdout);
    if (req->plan_only && u->r.plan && rc == CORE_OK)
        print_plan(u->r.plan);
    if (of.f) {
        if (rc == CORE_OK && core_outfile_commit(&of) != CORE_OK) {
            fprintf(req->log, "%s: cannot write output '%s'\n", req->prog, req->output);
            rc = CORE_EIO;
        }
        core_outfile_abort(&of); /* after a failure: the target stays as it was */
    }
    return rc;
}

static core_err run_release(struct run *u)
{
    struct rel_offline *r = &u->r;
    FILE *in = stdin;
    core_err rc = open_input(u->req, &in);

    if (rc != CORE_OK)
        return rc;
    if (!u->req->plan_only)
        rc = open_ledger(u);
    if (rc == CORE_OK)
        rc = run_output(u, in);
    log_done(u, rc);
    rel_offline_cleanup(r);
    core_dp_ledger_free(r->ledger);
    core_rng_os_wipe();
    if (in && in != stdin)
        fclose(in);
    return rc;
}

core_err pipe_release_offline(const struct core_config *cfg, const struct pipe_release_offline *req)
{
    struct run u;
    char eb[1024] = "";
    core_err rc = CORE_ECONFIG;

    memset(&u, 0, sizeof(u));
    u.req = req;
    u.r.cfg = cfg;
    u.r.theta_out = req->theta_out;
    u.r.skip_refused = req->skip_refused;
    u.r.plan_only = req->plan_only;
    u.r.on_skip = on_skip;
    u.r.arg = &u;
    core_dp_scheme_from_config(cfg, &u.r.scheme);
    if (rel_opts_from_config(cfg, &u.r.opts, eb, sizeof(eb)) != CORE_OK)
        fprintf(req->log, "%s: configuration error: %s\n", req->prog, eb);
    else if (cal_theta_load_file(req->theta, &u.r.theta, eb, sizeof(eb)) != CORE_OK)
        fprintf(req->log, "%s: theta '%s': %s\n", req->prog, req->theta, eb);
    else
        rc = run_release(&u);
    cal_theta_free(u.r.theta);
    return rc;
}
