/* test_changelog.c - the truncation decision of a ledger changelog partition
 * (rel_changelog_truncated, issue 12) and the changelog topic check. The embedded broker
 * cannot be made to drop the start of a partition within a test's time (5 MiB or 100 000
 * batches per partition), so the decision is tested here as the pure function it is.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <string.h>

#include <criterion/criterion.h>

#include "core/config.h"
#include "core/kconf.h"
#include "rel/changelog.h"
#include "test_support.h"

static struct core_config *cfg_new(void)
{
    static const struct core_cfg_key *const tables[] = {core_config_keys};
    struct core_config *c = core_config_new(tables, 1);
    cr_assert_not_null(c);
    return c;
}

static int cfg_set(struct core_config *c, const char *key, const char *text)
{
    char eb[256];
    return core_config_set(c, key, text, "flag", eb, sizeof(eb)) == CORE_OK ? 0 : -1;
}

TestSuite(rel_changelog, .timeout = 30);

Test(rel_changelog, truncation_decision)
{
    const int64_t now = 1800000000000, h = 3600000;
    cr_assert(!rel_changelog_truncated(0, now, now, h), "nothing deleted");
    cr_assert(!rel_changelog_truncated(0, -1, now, 0), "nothing deleted, nothing kept");
    cr_assert(rel_changelog_truncated(1, now - 10 * h, now, 0),
              "horizon 0: every row is needed forever, any deletion may have lost one");
    cr_assert(rel_changelog_truncated(5, now - h + 1, now, h),
              "first row kept is younger than the horizon: rows before it may be needed");
    cr_assert(!rel_changelog_truncated(5, now - h, now, h), "first row at the floor");
    cr_assert(!rel_changelog_truncated(5, now - 2 * h, now, h), "deleted rows were older");
    cr_assert(!rel_changelog_truncated(5, -1, now, h), "emptied by time retention");
    cr_assert(rel_changelog_truncated(5, -1, now, 0), "emptied, horizon 0");
    cr_assert(rel_changelog_truncated(5, 0, INT64_MIN + 5, h), "no floor: fail closed");
}

Test(rel_changelog, topic_must_be_its_own)
{
    struct core_config *cfg = cfg_new();
    char eb[512] = "";
    cr_assert_eq(rel_changelog_topic_check(cfg, eb, sizeof(eb)), CORE_OK, "%s", eb);
    const char *clash[] = {"topics.windows", "topics.released", "topics.calibration"};
    for (size_t i = 0; i < 3; i++) {
        struct core_config *c = cfg_new();
        char set[128];
        snprintf(set, sizeof(set), "\"%s\"", core_config_str(c, clash[i]));
        cr_assert_eq(cfg_set(c, "topics.ledger_changelog", set), 0);
        eb[0] = '\0';
        cr_assert_eq(rel_changelog_topic_check(c, eb, sizeof(eb)), CORE_ECONFIG);
        cr_assert(strstr(eb, clash[i]) != NULL, "names the key: %s", eb);
        core_config_free(c);
    }
    cr_assert_eq(cfg_set(cfg, "topics.ledger_changelog", "\"gcdp.audit\""), 0);
    cr_assert_eq(rel_changelog_topic_check(cfg, eb, sizeof(eb)), CORE_ECONFIG);
    core_config_free(cfg);
}
