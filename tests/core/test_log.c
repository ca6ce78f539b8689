/* test_log.c - log lines: one JSON object per line; with a line prefix (a command drawing a
 * progress line on a terminal) the prefix comes first in the same write, so a log line
 * replaces the progress line instead of being appended to it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "core/log.h"

/* Emit one info line with prefix; return what reached stderr (new string). */
static char *emit_with(const char *prefix)
{
    int fds[2], saved = dup(STDERR_FILENO);
    static char buf[4096];
    ssize_t n;

    cr_assert_eq(pipe(fds), 0);
    dup2(fds[1], STDERR_FILENO);
    core_log_set_line_prefix(prefix);
    core_log_emit(CORE_LOG_WARN, "fn", 1, "hello %d", 7);
    core_log_set_line_prefix(NULL);
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(fds[1]);
    n = read(fds[0], buf, sizeof(buf) - 1);
    close(fds[0]);
    cr_assert_gt(n, 0);
    buf[n] = '\0';
    return strdup(buf);
}

Test(log, a_line_prefix_clears_the_progress_line_first)
{
    char *plain = emit_with(NULL), *pre = emit_with("\r\033[K");
    cr_assert_eq(plain[0], '{', "%s", plain);
    cr_assert(strstr(plain, "\"msg\":\"hello 7\"}\n"), "%s", plain);
    cr_assert_eq(strncmp(pre, "\r\033[K{", 4), 0, "%s", pre);
    free(plain);
    free(pre);
}
