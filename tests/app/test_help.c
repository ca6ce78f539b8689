/* test_help.c - the --help texts (the files of docs/cli, compiled in) against the code they
 * describe: every flag a command parses is in its text, every option line of the text is a flag the
 * command parses, a range the text states is the range the flag table enforces, and the
 * defaults and limits the texts quote are the ones the code uses. A flag added to a table
 * without its help line, or a limit changed without the text, fails here. */
#include <ctype.h>
#include <float.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "app.h"
#include "core/ctl.h"
#include "flags.h"
#include "help_texts.h"
#include "producer_flags.h"
#include "rel/mech.h"
#include "sim/sim.h"

TestSuite(help);

#define MAX_ENTRIES 64

/* Every command entry: the table, its verb tables, and the entries a mode hands over to. */
static size_t collect(const struct app_command *const *table, const struct app_command **out,
                      size_t n)
{
    for (; *table && n < MAX_ENTRIES; table++) {
        out[n++] = *table;
        if ((*table)->sub)
            n = collect((*table)->sub, out, n);
    }
    return n;
}

static size_t all_entries(const struct app_command **out)
{
    char *ctl_keygen[] = {"ctl", "keygen", NULL};
    size_t n = collect(app_commands, out, 0);

    out[n++] = &app_cmd_learn_serve;
    out[n++] = app_cmd_ctl.mode(2, ctl_keygen);
    return n;
}

static bool name_char(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '_';
}

/* text holds "--name" as a whole word. */
static bool mentions(const char *text, const char *name)
{
    size_t len = strlen(name);

    for (const char *p = strstr(text, "--"); p; p = strstr(p + 2, "--"))
        if (strncmp(p + 2, name, len) == 0 && !name_char(p[2 + len]) &&
            (p == text || !name_char(p[-1])))
            return true;
    return false;
}

/* The flag an option line names ("  -i, --input FILE ...", "      --serve ..."): its name in
 * out, or false for any other line (prose, continuation lines indented deeper). */
static bool option_line(const char *line, char *out, size_t cap)
{
    size_t k = 0, n = 0;

    while (line[k] == ' ')
        k++;
    if (k < 2 || k > 6)
        return false;
    line += k;
    if (line[0] == '-' && isalpha((unsigned char)line[1]) && line[2] == ',' && line[3] == ' ')
        line += 4;
    if (strncmp(line, "--", 2) != 0)
        return false;
    for (line += 2; name_char(line[n]) && n + 1 < cap; n++)
        out[n] = line[n];
    out[n] = '\0';
    return n > 0;
}

static const struct app_flag *row_named(const struct app_flag *rows, const char *name)
{
    for (; rows && rows->name; rows++)
        if (strcmp(rows->name, name) == 0)
            return rows;
    return NULL;
}

static bool common_option(const char *name)
{
    static const char *const common[] = {"help", "config", "set", "log-level", NULL};
    for (const char *const *c = common; *c; c++)
        if (strcmp(*c, name) == 0)
            return true;
    return false;
}

/* Some entry whose help is text (ctl keygen shares ctl's) parses --name. */
static bool parsed_by_a_reader(const struct app_command *const *e, size_t n, const char *text,
                               const char *name)
{
    for (size_t j = 0; j < n; j++)
        if (e[j]->help == text && row_named(e[j]->options, name))
            return true;
    return false;
}

Test(help, every_flag_of_a_table_is_in_the_text_and_every_option_line_is_a_flag)
{
    const struct app_command *e[MAX_ENTRIES];
    size_t n = all_entries(e), rows = 0, lines = 0;

    for (size_t i = 0; i < n; i++) {
        cr_assert(e[i]->help && e[i]->help[0], "%s: no help text", e[i]->name);
        for (const struct app_flag *r = e[i]->options; r && r->name; r++, rows++)
            cr_expect(mentions(e[i]->help, r->name), "gcdp %s parses --%s; its help omits it",
                      e[i]->name, r->name);
        for (const char *l = e[i]->help; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0)) {
            char name[64];
            if (!option_line(l, name, sizeof(name)))
                continue;
            lines++;
            cr_expect(parsed_by_a_reader(e, n, e[i]->help, name) || common_option(name),
                      "gcdp %s: its help lists --%s, which it does not parse", e[i]->name, name);
        }
    }
    cr_expect_geq(n, 23u, "%zu entries", n);
    cr_expect_geq(rows, 150u, "%zu flag rows", rows);
    cr_expect_geq(lines, 150u, "%zu option lines", lines);
}

/* The option line of --name and its continuation lines: [*from, *to). */
static bool option_block(const char *text, const char *name, const char **from, const char **to)
{
    for (const char *l = text; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0)) {
        char got[64];
        if (!option_line(l, got, sizeof(got)) || strcmp(got, name) != 0)
            continue;
        const char *end = l + strcspn(l, "\n");
        while (*end == '\n' && strncmp(end + 1, "       ", 7) == 0) /* deeper: continuation */
            end += 1 + strcspn(end + 1, "\n");
        *from = l;
        *to = end;
        return true;
    }
    return false;
}

/* The first "A..B" of numbers in [from, to). */
static bool stated_range(const char *from, const char *to, double *lo, double *hi)
{
    for (const char *p = from; p + 2 < to; p++) {
        char *e1, *e2;
        if (strncmp(p, "..", 2) != 0 || p == from || !isdigit((unsigned char)p[-1]) ||
            !isdigit((unsigned char)p[2]))
            continue;
        const char *a = p;
        while (a > from && (isdigit((unsigned char)a[-1]) || a[-1] == '.'))
            a--;
        char num[32];
        snprintf(num, sizeof(num), "%.*s", (int)(p - a), a);
        *lo = strtod(num, &e1);
        *hi = strtod(p + 2, &e2);
        return *e1 == '\0' && e2 > p + 2;
    }
    return false;
}

/* A..B ranges of numeric flags; "up to N" of repeatable ones (N: the table's cap). */
Test(help, a_range_the_text_states_is_the_range_the_flag_table_enforces)
{
    const struct app_command *e[MAX_ENTRIES];
    size_t n = all_entries(e), checked = 0;

    for (size_t i = 0; i < n; i++)
        for (const struct app_flag *r = e[i]->options; r && r->name; r++) {
            const char *from, *to;
            double lo, hi;
            const char *cap_at;
            if (r->kind == APP_FLAG_STRS && option_block(e[i]->help, r->name, &from, &to) &&
                (cap_at = strstr(from, "up to ")) != NULL && cap_at < to) {
                cr_expect_eq(strtoul(cap_at + 6, NULL, 10), r->size / sizeof(const char *),
                             "gcdp %s --%s: the help's \"up to\" is not the table's cap",
                             e[i]->name, r->name);
                checked++;
            }
            if (r->kind < APP_FLAG_UINT || r->kind > APP_FLAG_DBLS ||
                !option_block(e[i]->help, r->name, &from, &to) || !stated_range(from, to, &lo, &hi))
                continue;
            cr_expect(lo == r->lo && hi == r->hi,
                      "gcdp %s --%s: the help says %g..%g, the table enforces %g..%g", e[i]->name,
                      r->name, lo, hi, r->lo, r->hi);
            checked++;
        }
    cr_expect_geq(checked, 10u, "%zu ranges checked", checked);
}

static void expect_says(const char *text, const char *what, const char *cmd)
{
    cr_expect_not_null(strstr(text, what), "gcdp %s --help should say \"%s\"", cmd, what);
}

/* expect_says with the words made by a format. */
__attribute__((format(printf, 3, 4))) static void expect_saysf(const char *text, const char *cmd,
                                                               const char *fmt, ...)
{
    char what[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    expect_says(text, what, cmd);
}

/* The producer flags' defaults as the help of simulate and replay states them. */
static void expect_producer_defaults(const char *text, const char *cmd,
                                     const struct sim_producer_opts *d)
{
    expect_saysf(text, cmd, "(default %zu)", d->max_inflight);
    expect_saysf(text, cmd, "0..%llu (default %d)", APP_PROD_FLUSH_MS_MAX, d->flush_timeout_ms);
    expect_saysf(text, cmd, "(default sim.max_lag_bytes, %zu)", d->max_lag_bytes);
}

Test(help, simulate_and_replay_state_the_defaults_the_code_uses)
{
    struct sim_options d;
    struct sim_replay_options r;
    static const char *const faults[][2] = {
#define X(name, str, help) {str, help},
        SIM_FAULT_MAP(X)
#undef X
    };

    sim_options_default(&d);
    expect_saysf(app_help_simulate, "simulate", "(default %zu, max %d)", d.devices,
                 SIM_MAX_DEVICES);
    expect_saysf(app_help_simulate, "simulate", "unsigned 64-bit (default %llu)",
                 (unsigned long long)d.seed);
    expect_saysf(app_help_simulate, "simulate", "(default %.0f; see docs/simulator.md", d.rate);
    expect_saysf(app_help_simulate, "simulate", "(default %lld = 2026-11-01T00:00:00Z)",
                 (long long)d.start_ms);
    expect_saysf(app_help_simulate, "simulate", "else ingest.period_ms; i.e. %g)", d.period_s);
    expect_saysf(app_help_simulate, "simulate", "per-device edge weight sd (default %g)",
                 d.hetero_sd);
    expect_saysf(app_help_simulate, "simulate", "neighbour mote, [0,1) (default %g)",
                 d.spatial_coupling);
    expect_saysf(app_help_simulate, "simulate", "lag in ticks, 0..%d (default %u)", SIM_MAX_LAG,
                 d.spatial_lag);
    expect_saysf(app_help_simulate, "simulate", "AR(1) coefficient, [0,1) (default %g)", d.ar);
    expect_saysf(app_help_simulate, "simulate", "skipped by one gap fault (default %u)",
                 d.gap_ticks);
    expect_saysf(app_help_simulate, "simulate", "late reading goes back (default %g s)", d.late_s);
    expect_saysf(app_help_simulate, "simulate", "i.e. %zu)", d.oversize_bytes);
    expect_producer_defaults(app_help_simulate, "simulate", &d.prod);
    for (size_t k = 0; k < sizeof(faults) / sizeof(faults[0]); k++)
        expect_saysf(app_help_simulate, "simulate", "\n  %-16s %s\n", faults[k][0], faults[k][1]);

    sim_replay_options_default(&r);
    expect_saysf(app_help_replay, "replay", "occupancy device id (default \"%s\")", r.device);
    expect_saysf(app_help_replay, "replay", "in-flight cap allow (default %g)", r.speed);
    expect_saysf(app_help_replay, "replay", "token bucket; 0 = none (default %.0f)", r.rate);
    expect_producer_defaults(app_help_replay, "replay", &r.prod);
}

Test(help, the_limits_the_texts_quote_are_the_code_s)
{
    expect_saysf(app_help_ctl, "ctl", "at most %d bytes", CORE_CTL_MAX_REASON);
    expect_says(app_help_release, REL_MECH_CHOICES, "release");
    expect_saysf(app_help_ingest, "ingest", "when unset and %s", APP_BOOTSTRAP_FILE);
}
