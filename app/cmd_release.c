/* cmd_release.c - `gcdp release`: offline GC-DP release of window records with θ
 * (paper Algorithms 2-4), write-ahead ledger, byte-identical replay. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "cal/theta.h"
#include "core/dp_ledger.h"
#include "core/dp_rng.h"
#include "core/log.h"
#include "core/mem.h"
#include "ing/engine.h"
#include "rel/plan.h"
#include "rel/release.h"

static const char release_help[] =
    "usage: gcdp release --theta FILE [options] [common options]\n"
    "\n"
    "Privatize window records (gcdp.window/1 JSON lines, or CSV) with the GC-DP parameter\n"
    "object theta: certified bounds B_k from the declared policy graph (Algorithm 2),\n"
    "budgets eps_k (Algorithm 3 or the mechanism's rule), checks s_k >= B_k, eps_k > 0,\n"
    "sum eps_k <= eps_rel before any noise (Algorithm 4), secure noise, and a write-ahead\n"
    "ledger: every record is fsync'd in the ledger before it is written out. A window\n"
    "already in the ledger (same window id and theta version) is republished byte-for-byte,\n"
    "never re-noised. Output: gcdp.released/1 JSON lines (values in normalized units,\n"
    "rounded to 12 decimals). Excluded windows are skipped; a window the certified bounds\n"
    "do not cover (too few real samples, ...) or the lifetime cap refuses stops the run\n"
    "after everything before it was committed and written.\n"
    "\n"
    "options:\n"
    "  --theta FILE      theta JSON from `gcdp calibrate` (required)\n"
    "  --input FILE      window records; '-' = stdin (default -)\n"
    "  --format F        jsonl | csv (default: csv if FILE ends in .csv, else jsonl)\n"
    "  --output FILE     released records, truncated first; '-' = stdout (default -)\n"
    "  --ledger FILE     ledger path (default: release.ledger.path = gcdp-ledger.jsonl)\n"
    "  --mechanism M     " REL_MECH_CHOICES "\n"
    "                    (default: release.mechanism = gcdp)\n"
    "  --eps-rel E       release budget per window (default: release.eps_rel = 1)\n"
    "  --plan            print the per-coordinate plan (B, s, eps, scale) as JSON and exit;\n"
    "                    reads no windows, draws no noise, opens no ledger\n"
    "  --theta-out FILE  also write theta with its release part (B, s, eps) filled\n"
    "  --skip-refused    report a refused record (malformed, not covered by the bounds,\n"
    "                    over the lifetime cap) with its line number and go on; the exit\n"
    "                    status is then 1 if any was skipped (default: stop at the first)\n"
    "  -h, --help        this text\n"
    "\n"
    "Other settings are release.* keys (`gcdp config keys`): delta, beta_r/g/u, eta, eps_min,\n"
    "policy.edges/hops/time_radius, query.min_samples/max_samples/interp_gap, period_ms,\n"
    "ledger.slot_ms/cap_eps/cap_delta/batch, threads.\n"
    "exit status: 0 ok; 1 runtime failure or refusal (budget cap, window not covered,\n"
    "ledger I/O; with --skip-refused: some record skipped); 2 usage, configuration or theta\n"
    "error.\n\n";

struct args {
    const char *theta, *input, *format, *output, *ledger, *mech, *eps, *theta_out;
    int plan_only, skip;
};

static int parse_args(int argc, char **argv, struct args *a)
{
    static const struct option lo[] = {
        {"theta", required_argument, NULL, 't'},  {"input", required_argument, NULL, 'i'},
        {"format", required_argument, NULL, 'f'}, {"output", required_argument, NULL, 'o'},
        {"ledger", required_argument, NULL, 'l'}, {"mechanism", required_argument, NULL, 'm'},
        {"eps-rel", required_argument, NULL, 'e'}, {"plan", no_argument, NULL, 'p'},
        {"theta-out", required_argument, NULL, 'T'}, {"help", no_argument, NULL, 'h'},
        {"skip-refused", no_argument, NULL, 's'},
        {NULL, 0, NULL, 0}};
    int ch;

    memset(a, 0, sizeof(*a));
    a->input = "-";
    a->output = "-";
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (ch) {
        case 't': a->theta = optarg; break;
        case 'i': a->input = optarg; break;
        case 'f': a->format = optarg; break;
        case 'o': a->output = optarg; break;
        case 'l': a->ledger = optarg; break;
        case 'm': a->mech = optarg; break;
        case 'e': a->eps = optarg; break;
        case 'p': a->plan_only = 1; break;
        case 's': a->skip = 1; break;
        case 'T': a->theta_out = optarg; break;
        case 'h': printf("%s%s", release_help, app_common_help); return APP_EXIT_OK + 100;
        default: return APP_EXIT_USAGE;
        }
    }
    if (optind != argc || !a->theta) {
        fprintf(stderr, "gcdp release: %s\n", optind != argc ? "unexpected argument"
                                                            : "--theta FILE is required");
        return APP_EXIT_USAGE;
    }
    if (!a->format) {
        size_t n = strlen(a->input);
        a->format = n > 4 && strcmp(a->input + n - 4, ".csv") == 0 ? "csv" : "jsonl";
    }
    if (strcmp(a->format, "csv") != 0 && strcmp(a->format, "jsonl") != 0) {
        fprintf(stderr, "gcdp release: --format must be jsonl or csv\n");
        return APP_EXIT_USAGE;
    }
    return APP_EXIT_OK;
}

/* --mechanism / --eps-rel are shorthands for --set release.*=... */
static core_err apply_shorthands(struct core_config *cfg, const struct args *a)
{
    char eb[512] = "";
    core_err rc = CORE_OK;
    if (a->mech)
        rc = core_config_set(cfg, "release.mechanism", a->mech, "flag", eb, sizeof(eb));
    if (rc == CORE_OK && a->eps)
        rc = core_config_set(cfg, "release.eps_rel", a->eps, "flag", eb, sizeof(eb));
    if (rc == CORE_OK && a->ledger)
        rc = core_config_set(cfg, "release.ledger.path", a->ledger, "flag", eb, sizeof(eb));
    if (rc != CORE_OK)
        fprintf(stderr, "gcdp release: configuration error: %s\n", eb);
    return rc;
}

/* The ingest stage's gap and period (the bounds must cover what ingest produces). */
static void ingest_defaults(const struct core_config *cfg, int64_t *gap, int64_t *period)
{
    struct ing_params ip;
    char eb[256];
    *gap = *period = -1;
    if (ing_params_from_config(cfg, &ip, eb, sizeof(eb)) == CORE_OK) {
        *gap = ip.max_interp_gap;
        *period = ip.period_ms;
    }
}

static void print_plan(const struct rel_plan *p)
{
    json_t *o = json_object(), *coords = json_array();
    for (size_t k = 0; k < p->d; k++) {
        json_t *c = json_object();
        json_object_set_new(c, "name", json_string(p->theta->coords[k].name));
        json_object_set_new(c, "lo", json_real(p->lo[k]));
        json_object_set_new(c, "hi", json_real(p->hi[k]));
        json_object_set_new(c, "B", json_real(p->B[k]));
        json_object_set_new(c, "certificate", json_string(p->analytic[k] ? "analytic"
                                                                          : "clipped_range"));
        json_object_set_new(c, "xi_hat", json_real(p->theta->xi_hat[k]));
        json_object_set_new(c, "s", json_real(p->s[k]));
        json_object_set_new(c, "eps", json_real(p->eps[k]));
        json_object_set_new(c, "scale", json_real(p->scale[k]));
        json_array_append_new(coords, c);
    }
    json_object_set_new(o, "theta_version", json_integer((json_int_t)p->theta->version));
    json_object_set_new(o, "mechanism", json_string(p->opts.mech->name));
    json_object_set_new(o, "eps_rel", json_real(p->opts.eps_rel));
    json_object_set_new(o, "eps_cal", json_real(cal_theta_eps_cal_total(p->theta)));
    json_object_set_new(o, "eps_min", json_real(p->eps_min));
    json_object_set_new(o, "d", json_integer((json_int_t)p->d));
    json_object_set_new(o, "d_noisy", json_integer((json_int_t)p->n_noisy));
    json_object_set_new(o, "charge_per_unit", json_pack("{s:f,s:f}", "eps", p->cost.eps,
                                                        "delta", p->cost.delta));
    json_object_set_new(o, "coords", coords);
    json_dumpf(o, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    putchar('\n');
    json_decref(o);
}

static core_err emit_line(void *arg, const char *bytes, size_t len, bool replayed)
{
    (void)replayed;
    if (fwrite(bytes, 1, len, arg) != len || fputc('\n', arg) == EOF)
        return CORE_EIO;
    return CORE_OK;
}

/* Read one line (with its newline) into *buf, never holding more than max bytes (STYLE P8:
 * getline would grow without bound on a hostile input). Returns the length, 0 at EOF,
 * -1 when the line is longer than max (the rest of it is not read). */
static ssize_t read_line(FILE *in, char **buf, size_t *cap, size_t max)
{
    size_t len = 0;
    int c;

    while ((c = getc(in)) != EOF) {
        if (len + 2 > *cap) {
            size_t ncap = *cap ? 2 * *cap : 4096;
            if (ncap > max + 2)
                ncap = max + 2;
            if (len + 2 > ncap)
                return -1;
            *buf = core_xrealloc(*buf, ncap);
            *cap = ncap;
        }
        (*buf)[len++] = (char)c;
        if (c == '\n')
            break;
    }
    if (len > 0)
        (*buf)[len] = '\0';
    return (ssize_t)len;
}

/* Read records one line at a time and release them; stops at the first refusal after
 * committing and writing everything before it. */
/* A refusal that concerns one record only (nothing charged, nothing drawn). */
static int record_refusal(core_err rc)
{
    return rc == CORE_EINVAL || rc == CORE_EPARSE || rc == CORE_ETOOBIG || rc == CORE_EBUDGET;
}

static int run_stream(const struct rel_plan *plan, struct rel_releaser *rr, FILE *in, FILE *out,
                      int csv, int skip)
{
    struct rel_window w;
    struct rel_csv *cv = NULL;
    char *line = NULL, eb[1024] = "";
    size_t cap = 0, lineno = 0, skipped = 0;
    ssize_t n;
    int c;
    core_err rc = CORE_OK;

    rel_window_init(&w, plan);
    while (rc == CORE_OK && (n = read_line(in, &line, &cap, REL_MAX_LINE)) != 0) {
        lineno++;
        if (n > 0 && (line[0] == '\n' || (line[0] == '\r' && line[1] == '\n')))
            continue;
        if (n < 0) {
            snprintf(eb, sizeof(eb), "record longer than %u bytes", REL_MAX_LINE);
            rc = CORE_ETOOBIG;
        } else if (csv && !cv) {
            rc = rel_csv_new(plan, line, &cv, eb, sizeof(eb));
        } else {
            rc = csv ? rel_csv_parse(cv, line, &w, eb, sizeof(eb))
                     : rel_window_from_json(plan, line, (size_t)n, &w, eb, sizeof(eb));
            if (rc == CORE_OK)
                rc = rel_releaser_push(rr, &w, emit_line, out, eb, sizeof(eb));
        }
        if (skip && (cv || !csv) && record_refusal(rc)) {
            fprintf(stderr, "gcdp release: input line %zu: %s (%s); skipped\n", lineno, eb,
                    core_errname(rc));
            while (n < 0 && (c = getc(in)) != EOF && c != '\n')
                ; /* drop the rest of an over-long line */
            skipped++;
            rc = CORE_OK;
        }
    }
    if (rc == CORE_OK && ferror(in)) {
        snprintf(eb, sizeof(eb), "read error");
        rc = CORE_EIO;
    }
    {
        char eb2[512] = "";
        core_err fr = rel_releaser_flush(rr, emit_line, out, eb2, sizeof(eb2));
        if (rc == CORE_OK && fr != CORE_OK) {
            rc = fr;
            snprintf(eb, sizeof(eb), "%s", eb2);
            lineno = 0;
        }
    }
    if (rc == CORE_OK && fflush(out) != 0)
        rc = CORE_EIO;
    if (rc != CORE_OK)
        fprintf(stderr, "gcdp release: %s%zu%s%s (%s)\n", lineno ? "input line " : "",
                lineno, lineno ? ": " : "", eb[0] ? eb : "output error", core_errname(rc));
    if (skipped)
        fprintf(stderr, "gcdp release: %zu record(s) refused and skipped\n", skipped);
    free(line);
    rel_csv_free(cv);
    rel_window_cleanup(&w);
    return rc == CORE_OK && skipped == 0 ? APP_EXIT_OK : APP_EXIT_FAILURE;
}

static int run_release(const struct core_config *cfg, const struct rel_plan *plan,
                       const struct args *a)
{
    struct core_dp_ledger_opts lo = {core_config_str(cfg, "release.ledger.path"),
                                     plan->opts.cap, 0};
    struct core_dp_ledger *ledger = NULL;
    struct rel_releaser *rr = NULL;
    struct rel_release_stats st;
    FILE *in = stdin, *out = stdout;
    char eb[512] = "";
    int ex = APP_EXIT_FAILURE;

    if (strcmp(a->input, "-") != 0 && !(in = fopen(a->input, "r"))) {
        fprintf(stderr, "gcdp release: cannot open input '%s'\n", a->input);
        return APP_EXIT_FAILURE;
    }
    if (core_dp_ledger_open(&lo, &ledger, eb, sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp release: ledger '%s': %s\n", lo.path, eb);
        goto out;
    }
    if (strcmp(a->output, "-") != 0 && !(out = fopen(a->output, "w"))) {
        fprintf(stderr, "gcdp release: cannot open output '%s'\n", a->output);
        goto out;
    }
    if (rel_releaser_new(plan, ledger, core_rng_os(),
                         (size_t)core_config_int(cfg, "release.ledger.batch"),
                         (unsigned)core_config_int(cfg, "release.threads"), &rr) != CORE_OK)
        goto out;
    ex = run_stream(plan, rr, in, out, strcmp(a->format, "csv") == 0, a->skip);
    rel_releaser_stats(rr, &st);
    CORE_INFO("release done: released=%" PRIu64 " replayed=%" PRIu64 " (with other "
              "parameters: %" PRIu64 ") excluded=%" PRIu64 " coords_noisy=%" PRIu64
              " coords_exact=%" PRIu64, st.released, st.replayed, st.replayed_other,
              st.excluded, st.coords_noisy, st.coords_exact);
out:
    rel_releaser_free(rr);
    core_dp_ledger_free(ledger);
    core_rng_os_wipe();
    if (in && in != stdin)
        fclose(in);
    if (out && out != stdout && fclose(out) != 0)
        ex = APP_EXIT_FAILURE;
    return ex;
}

int cmd_release(int argc, char **argv)
{
    struct core_config *cfg = NULL;
    struct cal_theta *theta = NULL;
    struct rel_plan *plan = NULL;
    struct rel_opts opts;
    struct args a;
    char eb[1024] = "";
    int64_t gap, period;
    int ex;

    core_log_set_component("release");
    if (app_config_load(&argc, argv, &cfg) != CORE_OK)
        return APP_EXIT_USAGE;
    ex = parse_args(argc, argv, &a);
    if (ex != APP_EXIT_OK || apply_shorthands(cfg, &a) != CORE_OK) {
        ex = ex == APP_EXIT_OK + 100 ? APP_EXIT_OK : APP_EXIT_USAGE;
        goto out;
    }
    ex = APP_EXIT_USAGE;
    ingest_defaults(cfg, &gap, &period);
    if (rel_opts_from_config(cfg, gap, period, &opts, eb, sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp release: configuration error: %s\n", eb);
        goto out;
    }
    if (cal_theta_load_file(a.theta, &theta, eb, sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp release: theta '%s': %s\n", a.theta, eb);
        goto out;
    }
    if (rel_plan_new(theta, &opts, &plan, eb, sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp release: %s\n", eb);
        goto out;
    }
    if (a.theta_out) {
        rel_plan_fill_theta(plan, theta);
        if (cal_theta_save_file(theta, a.theta_out, eb, sizeof(eb)) != CORE_OK) {
            fprintf(stderr, "gcdp release: --theta-out '%s': %s\n", a.theta_out, eb);
            ex = APP_EXIT_FAILURE;
            goto out;
        }
    }
    if (a.plan_only) {
        print_plan(plan);
        ex = APP_EXIT_OK;
        goto out;
    }
    ex = run_release(cfg, plan, &a);
out:
    rel_plan_free(plan);
    cal_theta_free(theta);
    core_config_free(cfg);
    return ex;
}
