/* test_contract.c - the producers' bad messages against the real ingest engine (defaults):
 * every corpus line gets exactly its expected_reason. This is the contract between the
 * corpus and ingest/include/ing/engine.h; when ingest changes a code or a check order this
 * test names the corpus line that no longer matches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "ing/engine.h"
#include "svc/replay_int.h"
#include "test_support.h"

Test(sim_contract, corpus_lines_get_their_expected_reason_from_the_ingest_engine)
{
    struct ing_params p;
    struct ing_engine *e;
    struct ing_source src = {"sensors.raw", 0, 0};
    struct ing_sink sink = {NULL, NULL, NULL};
    struct ing_counters cnt;
    char eb[512], *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int lines = 0, rejected = 0;
    FILE *f = fopen(GCDP_SOURCE_DIR "/tests/fixtures/bad_inputs/corpus.jsonl", "r");

    cr_assert_not_null(f);
    ing_params_default(&p);
    e = ing_engine_new(&p, eb, sizeof(eb));
    cr_assert_not_null(e, "%s", eb);
    while ((n = getline(&line, &cap, f)) > 0) {
        struct sim_corpus_entry c;
        enum ing_reason r;
        const char *want;
        cr_assert_eq(sim_corpus_entry_parse(line, (size_t)n, &c, eb, sizeof(eb)), CORE_OK);
        cr_assert_eq(ing_engine_push(e, c.payload, c.payload_len, c.key, c.key ? strlen(c.key) : 0,
                                     &src, 1000, &sink, &r),
                     CORE_OK);
        want = c.expected_reason ? c.expected_reason : "accepted";
        cr_expect_str_eq(ing_reason_code(r), want, "corpus kind %s", c.kind);
        rejected += c.expected_reason != NULL;
        src.offset++;
        lines++;
        sim_corpus_entry_cleanup(&c);
    }
    ing_engine_counters(e, &cnt);
    cr_assert_eq(cnt.consumed, (uint64_t)lines);
    cr_assert_eq(cnt.rejected, (uint64_t)rejected);
    free(line);
    fclose(f);
    ing_engine_free(e);
}
