/* test_cli.c - the command driver (cli/cli.h) against the real binary: every command of
 * the driver's table, and every verb of a verb table (`gcdp bench <what>`), prints exactly
 * its entry's help on stdout and exits 0 whatever the configuration (a broken file named by
 * GCDP_CONFIG, or by --config), before anything else runs. A command added to the table is
 * covered without touching this file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "app.h"
#include "broker.h"
#include "test_support.h"

TestSuite(cli, .timeout = 60);

/* The help app_cli_help writes for c (new string, caller frees). */
static char *help_text(const struct app_command *c, const char *dir)
{
    char path[600];
    FILE *f;

    snprintf(path, sizeof(path), "%s/expected.txt", dir);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    app_cli_help(c, f);
    fclose(f);
    return ts_read_file(path, NULL);
}

/* `gcdp <words...> --help [extra...]`: exit status, stdout in *out (new string). */
static int run_help(const char *dir, const char *const *words, size_t n, const char *extra1,
                    const char *extra2, char **out)
{
    char out_path[600], err_path[600];
    const char *args[16];
    size_t k = 0;
    int rc;

    snprintf(out_path, sizeof(out_path), "%s/out.txt", dir);
    snprintf(err_path, sizeof(err_path), "%s/err.txt", dir);
    for (size_t i = 0; i < n; i++)
        args[k++] = words[i];
    args[k++] = "--help";
    if (extra1)
        args[k++] = extra1;
    if (extra2)
        args[k++] = extra2;
    args[k] = NULL;
    rc = ts_wait(ts_spawn(args, out_path, err_path), 20000);
    *out = ts_read_file(out_path, NULL);
    return rc;
}

/* Every entry of table (words: the command path before it), then its verbs. */
static size_t walk(const struct app_command *const *table, const char **words, size_t depth,
                   const char *dir, const char *broken)
{
    size_t n = 0;

    for (; *table; table++) {
        const struct app_command *c = *table;
        char *want = help_text(c, dir), *got = NULL;
        int rc;

        words[depth] = c->name;
        cr_assert(want && want[0], "gcdp %s: empty help", c->name);
        setenv("GCDP_CONFIG", broken, 1);
        rc = run_help(dir, words, depth + 1, NULL, NULL, &got);
        cr_expect_eq(rc, 0, "%s --help with GCDP_CONFIG broken: exit %d", c->name, rc);
        cr_expect(got && strcmp(got, want) == 0, "%s --help printed: %.100s", c->name,
                  got ? got : "(nothing)");
        free(got);
        unsetenv("GCDP_CONFIG");
        rc = run_help(dir, words, depth + 1, "--config", broken, &got);
        cr_expect_eq(rc, 0, "%s --help --config broken: exit %d", c->name, rc);
        cr_expect(got && strcmp(got, want) == 0, "%s --help --config: %.100s", c->name,
                  got ? got : "(nothing)");
        free(got);
        free(want);
        n++;
        if (c->sub)
            n += walk(c->sub, words, depth + 1, dir, broken);
    }
    return n;
}

Test(cli, every_command_in_the_table_answers_help_with_a_broken_configuration)
{
    char *dir = ts_tmpdir(), broken[600];
    const char *words[8];

    snprintf(broken, sizeof(broken), "%s/broken.json", dir);
    ts_write_file(broken, "{\"broken\": ");
    size_t n = walk(app_commands, words, 0, dir, broken);
    cr_expect_geq(n, 20u, "the table and its verb tables hold %zu commands", n);
    ts_rmtree(dir);
    free(dir);
}

/* A verb table (or ctl) without its argument: the help on stderr and exit 2. */
Test(cli, a_command_that_needs_an_argument_prints_its_help_on_stderr_and_exits_2)
{
    char *dir = ts_tmpdir(), out[600], err[600];
    size_t n = 0;

    snprintf(out, sizeof(out), "%s/out.txt", dir);
    snprintf(err, sizeof(err), "%s/err.txt", dir);
    for (const struct app_command *const *c = app_commands; *c; c++) {
        if (!((*c)->flags & APP_CMD_NEEDS_ARG))
            continue;
        const char *args[] = {(*c)->name, NULL};
        char *want = help_text(*c, dir);
        cr_expect_eq(ts_wait(ts_spawn(args, out, err), 20000), 2, "gcdp %s", (*c)->name);
        char *got = ts_read_file(err, NULL);
        cr_expect(got && strcmp(got, want) == 0, "gcdp %s: %.100s", (*c)->name,
                  got ? got : "(nothing)");
        free(got);
        free(want);
        n++;
    }
    cr_expect_geq(n, 2u);
    ts_rmtree(dir);
    free(dir);
}

/* The top-level help lists every command of the table, with its summary. */
Test(cli, gcdp_help_lists_the_table)
{
    char *dir = ts_tmpdir(), out[600], line[256];
    const char *args[] = {"--help", NULL};

    snprintf(out, sizeof(out), "%s/out.txt", dir);
    cr_assert_eq(ts_wait(ts_spawn(args, out, NULL), 20000), 0);
    char *text = ts_read_file(out, NULL);
    cr_assert_not_null(text);
    for (const struct app_command *const *c = app_commands; *c; c++) {
        snprintf(line, sizeof(line), "\n  %-11s %s\n", (*c)->name, (*c)->summary);
        cr_expect_not_null(strstr(text, line), "gcdp --help does not list %s", (*c)->name);
    }
    free(text);
    ts_rmtree(dir);
    free(dir);
}
