/* test_fuzz_corpus.c - every committed fuzz corpus file (seeds and every crash found) through
 * its target on every run (in the ASan+UBSan build too): window records, ledger files, θ
 * JSON, configuration --set values, calibrate and learner CSVs (tests/fuzz/targets.h). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../fuzz/targets.h"
#include "test_support.h"

static size_t replay(const char *name, int (*target)(const uint8_t *, size_t))
{
    char dir[1024], path[2048];
    DIR *d;
    struct dirent *e;
    size_t n = 0;

    snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus-%s", GCDP_SOURCE_DIR, name);
    d = opendir(dir);
    cr_assert_not_null(d, "%s", dir);
    while ((e = readdir(d))) {
        size_t len = 0;
        char *data;
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        data = ts_read_file(path, &len);
        cr_assert_not_null(data, "%s", path);
        cr_assert_eq(target((const uint8_t *)data, len), 0, "%s", path);
        free(data);
        n++;
    }
    closedir(d);
    return n;
}

Test(fuzz_corpus, window_records)
{
    cr_assert_geq(replay("window", gcdp_fuzz_window), 5u);
}
Test(fuzz_corpus, ledger_files)
{
    cr_assert_geq(replay("ledger", gcdp_fuzz_ledger), 5u);
}
Test(fuzz_corpus, theta_json)
{
    cr_assert_geq(replay("theta", gcdp_fuzz_theta), 2u);
}
Test(fuzz_corpus, config_values)
{
    cr_assert_geq(replay("config", gcdp_fuzz_config), 5u);
}
Test(fuzz_corpus, csv_files)
{
    cr_assert_geq(replay("csv", gcdp_fuzz_csv), 5u);
}
