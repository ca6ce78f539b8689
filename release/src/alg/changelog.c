/* changelog.c - the pure decision of rel/changelog.h: may a truncated changelog partition be
 * missing rows the ledger still needs? */
#include "rel/changelog.h"

bool rel_changelog_truncated(int64_t log_start, int64_t first_ts_ms, int64_t now_ms,
                             int64_t horizon_ms)
{
    if (log_start <= 0)
        return false;
    if (horizon_ms <= 0)
        return true;
    if (first_ts_ms < 0)
        return false;
    if (now_ms < INT64_MIN + horizon_ms)
        return true; /* no representable floor: fail closed */
    return first_ts_ms > now_ms - horizon_ms;
}
