/* occ_reader.c - file reader over the pure Occupancy line parsers (sim/occupancy.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/lines.h"
#include "core/mem.h"
#include "sim/occupancy.h"

struct sim_occ_reader {
    struct core_lines *lines;
};

core_err sim_occ_reader_open(const char *path, struct sim_occ_reader **out, char *eb, size_t ebn)
{
    struct sim_occ_reader *r;
    char *line;
    size_t n;
    char why[256];
    core_err rc;

    r = core_xcalloc(1, sizeof(*r));
    if ((rc = core_lines_open(path, SIM_OCC_MAX_LINE, &r->lines, eb, ebn)) != CORE_OK)
        goto fail;
    rc = core_lines_next(r->lines, &line, &n, eb, ebn);
    if (rc == CORE_ENOTFOUND) {
        snprintf(eb, ebn, "%s:1: empty file (expected the header line)", path);
        rc = CORE_EPARSE;
    }
    if (rc != CORE_OK)
        goto fail;
    if ((rc = sim_occ_parse_header(line, n, why, sizeof(why))) != CORE_OK) {
        snprintf(eb, ebn, "%s:1: %s", path, why);
        goto fail;
    }
    *out = r;
    return CORE_OK;
fail:
    sim_occ_reader_free(r);
    return rc;
}

core_err sim_occ_reader_next(struct sim_occ_reader *r, struct sim_occ_row *row, char *eb,
                             size_t ebn)
{
    char *line;
    size_t n;
    char why[256];
    core_err rc = core_lines_next(r->lines, &line, &n, eb, ebn);

    if (rc != CORE_OK)
        return rc;
    if ((rc = sim_occ_parse_row(line, n, row, why, sizeof(why))) != CORE_OK)
        snprintf(eb, ebn, "%s:%llu: %s", core_lines_path(r->lines),
                 (unsigned long long)core_lines_lineno(r->lines), why);
    return rc;
}

uint64_t sim_occ_reader_line(const struct sim_occ_reader *r)
{
    return core_lines_lineno(r->lines);
}

void sim_occ_reader_free(struct sim_occ_reader *r)
{
    if (!r)
        return;
    core_lines_free(r->lines);
    free(r);
}
