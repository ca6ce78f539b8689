/* test_broker_run.c - the standalone broker's parts that need no cluster (core/broker.h):
 * --topic specs refused before the broker is touched, the control FIFO, the signal wait. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "core/broker.h"
#include "test_support.h"

Test(broker_run, bad_topic_specs_are_refused)
{
    static const char *const bad[] = {"", ":3", "t:0", "t:10001", "t:x", "t:3x", "t:"};

    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        cr_assert_eq(core_broker_topic_create_spec(NULL, bad[i], 4), CORE_EINVAL, "'%s'", bad[i]);
    cr_assert_eq(CORE_BROKER_N_TOPIC_KEYS, 12);
    cr_assert_str_eq(core_broker_topic_keys[0], "topics.raw");
}

/* The FIFO replaces a file at its path; with a pending SIGTERM (blocked) the wait returns it
 * after applying nothing (no line was written). */
Test(broker_run, fifo_and_signal_wait)
{
    char *dir = ts_tmpdir(), path[600];
    struct stat st;
    sigset_t set;
    int fd = -1;

    snprintf(path, sizeof(path), "%s/ctl", dir);
    ts_write_file(path, "a regular file first\n");
    cr_assert_eq(core_broker_fifo_open(path, &fd), CORE_OK);
    cr_assert(stat(path, &st) == 0 && S_ISFIFO(st.st_mode));
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    raise(SIGTERM);
    cr_assert_eq(core_broker_wait_signal(NULL, fd), SIGTERM);
    close(fd);
    snprintf(path, sizeof(path), "%s/nodir/ctl", dir);
    cr_assert_eq(core_broker_fifo_open(path, &fd), CORE_EIO);
    ts_rmtree(dir);
    free(dir);
}
