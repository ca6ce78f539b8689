/* offline.c - the offline release loop of `gcdp release` (rel/offline.h). */
#include "rel/offline.h"

#include <stdio.h>

#include "core/dp_rng.h"
#include "core/lines.h"

static core_err emit_line(void *arg, const char *bytes, size_t len, bool replayed)
{
    (void)replayed;
    if (fwrite(bytes, 1, len, arg) != len || fputc('\n', arg) == EOF)
        return CORE_EIO;
    return CORE_OK;
}

/* A refusal that concerns one record only (nothing charged, nothing drawn). */
static int record_refusal(core_err rc)
{
    return rc == CORE_EINVAL || rc == CORE_EPARSE || rc == CORE_ETOOBIG || rc == CORE_EBUDGET;
}

static core_err build_plan(struct rel_offline *r, const struct rel_window *w, char *eb, size_t ebn)
{
    core_err rc = rel_plan_for_window(r->theta, &r->opts, w, r->ledger ? r->scheme.period_ms : 0,
                                      &r->plan, eb, ebn);

    if (rc != CORE_OK)
        return rc;
    if (r->theta_out) {
        rel_plan_fill_theta(r->plan, r->theta);
        if (cal_theta_save_file(r->theta, r->theta_out, eb, ebn) != CORE_OK)
            return CORE_EIO;
    }
    if (!r->ledger)
        return CORE_OK;
    rc = rel_releaser_new(r->plan, r->ledger, core_rng_os(),
                          (size_t)core_config_int(r->cfg, "release.ledger.batch"),
                          (unsigned)core_config_int(r->cfg, "release.threads"), &r->rr);
    if (rc != CORE_OK)
        snprintf(eb, ebn, "cannot start the releaser (%s)", core_strerror(rc));
    return rc;
}

/* Parse one line and release it (building the plan on the first record that needs one). */
static core_err one_record(struct rel_offline *r, struct rel_window *w, const char *line, size_t n,
                           FILE *out, char *eb, size_t ebn)
{
    core_err rc = rel_window_from_json(line, n, w, eb, ebn);

    if (rc != CORE_OK)
        return rc;
    if (!r->plan && w->excluded) {
        r->excluded_before++;
        return CORE_OK;
    }
    if (!r->plan && (rc = build_plan(r, w, eb, ebn)) != CORE_OK) {
        r->plan_failed = true;
        return rc == CORE_EINVAL ? CORE_ESTATE : rc; /* no plan: nothing else can go on */
    }
    if (!r->rr)
        return CORE_OK; /* --plan: the plan is all we wanted */
    return rel_releaser_push(r->rr, w, emit_line, out, eb, ebn);
}

/* Read records one line at a time and release them; stops at the first refusal after
 * committing and writing everything before it (or, with --skip-refused, goes on).
 * r->lineno: the line of the last record read. */
static core_err read_records(struct rel_offline *r, struct core_lines *ln, struct rel_window *w,
                             FILE *out, char *eb, size_t ebn)
{
    core_err rc = CORE_OK;
    char *line;
    size_t n;

    while (rc == CORE_OK) {
        rc = core_lines_next(ln, &line, &n, eb, ebn); /* a refused line is skipped whole */
        if (rc == CORE_ENOTFOUND)
            return CORE_OK;
        r->lineno = (size_t)core_lines_lineno(ln);
        if (rc == CORE_ETOOBIG)
            snprintf(eb, ebn, "record longer than %u bytes", REL_MAX_LINE);
        if (rc == CORE_OK && n == 0)
            continue;
        if (rc == CORE_OK)
            rc = one_record(r, w, line, n, out, eb, ebn);
        if (r->skip_refused && record_refusal(rc)) {
            if (r->on_skip)
                r->on_skip(r->arg, r->lineno, eb, rc);
            r->skipped++;
            rc = CORE_OK;
        }
        if (rc == CORE_OK && r->plan && !r->rr)
            break; /* --plan */
    }
    return rc;
}

core_err rel_offline_run(struct rel_offline *r, FILE *in, FILE *out, char *eb, size_t ebn)
{
    struct rel_window w;
    struct core_lines *ln = core_lines_wrap(in, "input", REL_MAX_LINE);
    core_err rc;

    eb[0] = '\0';
    rel_window_init(&w, r->theta);
    rc = read_records(r, ln, &w, out, eb, ebn);
    if (r->rr) {
        char eb2[512] = "";
        core_err fr = rel_releaser_flush(r->rr, emit_line, out, eb2, sizeof(eb2));
        if (rc == CORE_OK && fr != CORE_OK) {
            rc = fr;
            snprintf(eb, ebn, "%s", eb2);
            r->lineno = 0;
        }
    }
    if (rc == CORE_OK && !r->plan && r->plan_only) {
        snprintf(eb, ebn,
                 "no non-excluded window record in the input: the plan is "
                 "built from a record's provenance");
        rc = CORE_EPARSE;
        r->lineno = 0;
    }
    core_lines_free(ln);
    rel_window_cleanup(&w);
    return rc;
}

void rel_offline_cleanup(struct rel_offline *r)
{
    rel_releaser_free(r->rr);
    r->rr = NULL;
    rel_plan_free(r->plan);
    r->plan = NULL;
}
