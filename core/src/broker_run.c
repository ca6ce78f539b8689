/* broker_run.c - the standalone broker's lifecycle (core/broker.h): its topics, the control
 * FIFO of fault injection, the wait for SIGINT/SIGTERM (KAFKA.md §8.1). */
#include "core/broker.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"

const char *const core_broker_topic_keys[CORE_BROKER_N_TOPIC_KEYS] = {
    "topics.raw",         "topics.rejected",        "topics.windows",
    "topics.calibration", "topics.released",        "topics.control",
    "topics.audit",       "topics.learner_updates", "topics.learner_global",
    "topics.learner_dag", "topics.status",          "topics.ledger_changelog",
};

/* P of ":P": a decimal integer in 1..10000, the whole string. Returns 0 or -1. */
static int parse_partitions(const char *s, long *out)
{
    int saved = errno, bad;
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    bad = errno != 0 || end == s || *end || v < 1 || v > 10000;
    errno = saved;
    if (bad)
        return -1;
    *out = v;
    return 0;
}

core_err core_broker_topic_create_spec(struct core_broker *b, const char *spec, int partitions)
{
    char name[256];
    long p = partitions;
    const char *colon = strrchr(spec, ':');
    size_t len = colon ? (size_t)(colon - spec) : strlen(spec);

    if (len == 0 || len >= sizeof(name) || (colon && parse_partitions(colon + 1, &p) != 0))
        return CORE_EINVAL;
    memcpy(name, spec, len);
    name[len] = '\0';
    return core_broker_topic_create(b, name, (int)p) == CORE_OK ? CORE_OK : CORE_EKAFKA;
}

core_err core_broker_fifo_open(const char *path, int *fd)
{
    unlink(path);
    /* O_RDWR keeps the FIFO open with no writer, so reads never see EOF. */
    if (mkfifo(path, 0600) != 0 || (*fd = open(path, O_RDWR | O_NONBLOCK)) < 0)
        return CORE_EIO;
    return CORE_OK;
}

/* Apply complete lines read from the control FIFO (non-blocking). */
static void read_control(struct core_broker *b, int fd, char *buf, size_t *len, size_t cap)
{
    ssize_t r;
    char *nl;

    while ((r = read(fd, buf + *len, cap - 1 - *len)) > 0) {
        *len += (size_t)r;
        buf[*len] = '\0';
        while ((nl = strchr(buf, '\n'))) {
            *nl = '\0';
            if (buf[0] && core_broker_control(b, buf) != CORE_OK)
                CORE_WARN("broker control: refused '%s' (down | up | rtt MS)", buf);
            *len -= (size_t)(nl + 1 - buf);
            memmove(buf, nl + 1, *len + 1);
        }
        if (*len == cap - 1) /* an over-long line: drop it */
            *len = 0;
    }
}

int core_broker_wait_signal(struct core_broker *b, int fd)
{
    struct timespec tick = {0, 100 * 1000000L};
    sigset_t set;
    char buf[256];
    size_t len = 0;
    int sig;

    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    for (;;) {
        sig = fd >= 0 ? sigtimedwait(&set, NULL, &tick) : sigwaitinfo(&set, NULL);
        if (sig == SIGINT || sig == SIGTERM)
            return sig;
        if (fd >= 0)
            read_control(b, fd, buf, &len, sizeof(buf));
    }
}
