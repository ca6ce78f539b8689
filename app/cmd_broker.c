/* cmd_broker.c - `gcdp broker`: the embedded in-memory Kafka-protocol broker, standalone.
 *
 * DEVELOPMENT / TEST ONLY (see core/broker.h and KAFKA.md). It prints its bootstrap
 * address on stdout ("BOOTSTRAP 127.0.0.1:PORT"), writes it to a file that other commands
 * read with --set broker.bootstrap=@FILE, and stops cleanly on SIGINT/SIGTERM (removing
 * the file). SIGINT/SIGTERM are blocked before any librdkafka thread exists and taken
 * with sigwait(), so no thread can swallow them (KAFKA.md §8.1).
 *
 * --port uses the bind() interposer of broker_bind.c (inactive except while this command
 * creates the cluster). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "broker_bind.h"
#include "core/broker.h"
#include "core/kconf.h"
#include "core/log.h"
#include "flags.h"
#include "help_texts.h"

#define MAX_EXTRA_TOPICS 32

struct broker_opts {
    const char *bootstrap_file;
    long port, brokers, partitions;
    const char *extra[MAX_EXTRA_TOPICS];
    size_t nextra;
    const char *control;
};

#define AT(f) APP_FLAG_AT(struct broker_opts, f)

static const struct app_flag broker_flags[] = {
    {"bootstrap-file", APP_FLAG_STR, AT(bootstrap_file)},
    {"port", APP_FLAG_INT, AT(port), .lo = 1, .hi = 65535},
    {"brokers", APP_FLAG_INT, AT(brokers), .lo = 1, .hi = CORE_BROKER_MAX_BROKERS},
    {"partitions", APP_FLAG_INT, AT(partitions), .lo = 1, .hi = 10000},
    {"topic", APP_FLAG_STRS, AT(extra), .n_offset = offsetof(struct broker_opts, nextra)},
    {"control", APP_FLAG_STR, AT(control)},
    {.name = NULL},
};

#undef AT

#define NTOPIC_KEYS CORE_BROKER_N_TOPIC_KEYS

/* Create the extra --topic NAME[:P] topics. */
static core_err create_extra(struct core_broker *b, const struct broker_opts *o)
{
    for (size_t i = 0; i < o->nextra; i++) {
        core_err rc = core_broker_topic_create_spec(b, o->extra[i], (int)o->partitions);
        if (rc == CORE_EINVAL)
            fprintf(stderr, "gcdp broker: bad --topic '%s'\n", o->extra[i]);
        if (rc != CORE_OK)
            return rc;
    }
    return CORE_OK;
}

/* Create the broker (o->port: fixed ports from there, each checked free first). Returns
 * CORE_OK or a failure after the message. */
static core_err start_broker(const struct broker_opts *o, const char **topics,
                             struct core_broker **b)
{
    char eb[512] = "";

    if (o->port) {
        for (long i = 0; i < o->brokers; i++)
            if (o->port + i > 65535 || !broker_bind_port_free((int)(o->port + i))) {
                fprintf(stderr, "gcdp broker: port %ld on 127.0.0.1 is in use\n", o->port + i);
                return CORE_EIO;
            }
        broker_bind_fix_ports((int)o->port);
    }
    if (core_broker_new((int)o->brokers, topics, NTOPIC_KEYS, (int)o->partitions, b, eb,
                        sizeof(eb)) != CORE_OK) {
        broker_bind_fix_ports(0);
        fprintf(stderr, "gcdp broker: %s\n", eb);
        return CORE_EIO;
    }
    broker_bind_fix_ports(0);
    return CORE_OK;
}

/* The development-only banner on stderr and the BOOTSTRAP line on stdout. */
static void announce(const struct broker_opts *o, struct core_broker *b)
{
    fprintf(stderr,
            "gcdp broker: embedded in-memory development/test broker (NOT for production);\n"
            "  %ld broker(s), %zu topics x %ld partitions; retention is fixed by the mock at\n"
            "  %u MiB or %u batches PER PARTITION (older records are dropped); no persistence.\n"
            "  bootstrap file: %s (use --set broker.bootstrap=@%s)\n",
            o->brokers, NTOPIC_KEYS + o->nextra, o->partitions, CORE_BROKER_RETENTION_BYTES >> 20,
            CORE_BROKER_RETENTION_BATCHES, o->bootstrap_file, o->bootstrap_file);
    printf("BOOTSTRAP %s\n", core_broker_bootstrap(b));
    fflush(stdout);
}

static int cmd_main(struct app_call *call)
{
    const struct core_config *cfg = call->cfg;
    struct core_broker *b = NULL;
    struct broker_opts o = {APP_BOOTSTRAP_FILE, 0, 1, 0, {NULL}, 0, NULL};
    const char *topics[NTOPIC_KEYS];
    sigset_t set;
    int rc = APP_EXIT_FAILURE, sig, ctl = -1;

    o.partitions = (long)core_config_int(cfg, "broker.partitions");
    if (app_flags_parse_only("broker", broker_flags, call->argc, call->argv, &o, NULL) != 0)
        return APP_EXIT_USAGE;
    for (size_t i = 0; i < NTOPIC_KEYS; i++)
        topics[i] = core_config_str(cfg, core_broker_topic_keys[i]);
    /* Before any librdkafka thread exists: threads inherit the mask (KAFKA.md §8.1). */
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (start_broker(&o, topics, &b) != CORE_OK || create_extra(b, &o) != CORE_OK)
        goto out;
    if (o.control && core_broker_fifo_open(o.control, &ctl) != CORE_OK) {
        fprintf(stderr, "gcdp broker: cannot create control FIFO '%s'\n", o.control);
        goto out;
    }
    if (core_kafka_bootstrap_write(o.bootstrap_file, core_broker_bootstrap(b)) != CORE_OK) {
        fprintf(stderr, "gcdp broker: cannot write bootstrap file '%s'\n", o.bootstrap_file);
        goto out;
    }
    announce(&o, b);
    CORE_INFO("broker ready at %s", core_broker_bootstrap(b));
    sig = core_broker_wait_signal(b, ctl);
    CORE_INFO("broker stopping on signal %d", sig);
    unlink(o.bootstrap_file);
    rc = APP_EXIT_OK;
out:
    if (ctl >= 0) {
        close(ctl);
        unlink(o.control);
    }
    core_broker_free(b);
    return rc;
}

const struct app_command app_cmd_broker = {
    .name = "broker",
    .summary = "run the embedded in-memory Kafka-protocol broker (dev/test only)",
    .help = app_help_broker,
    .options = broker_flags,
    .run = cmd_main,
    .component = "broker",
};
