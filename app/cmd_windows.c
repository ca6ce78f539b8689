/* cmd_windows.c - `gcdp windows`: print the window records on topics.windows, in either
 * encoding, as gcdp.window/2 JSON lines (core_wrec_print), for operators looking at what ingest
 * wrote. It assigns every partition itself (core_kread): no group is joined and no offset is
 * committed, so the services' positions do not move. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "core/clock.h"
#include "core/ksync.h"
#include "core/window_bin.h"
#include "flags.h"
#include "help_texts.h"

struct windows_args {
    const char *topic; /* NULL: topics.windows */
    bool at_end;
    long max;
    double idle;
};

#define AT(f) APP_FLAG_AT(struct windows_args, f)

static const struct app_flag windows_flags[] = {
    {"topic", APP_FLAG_STR, AT(topic)},
    {"end", APP_FLAG_TRUE, AT(at_end)},
    {"max", APP_FLAG_INT, AT(max), .lo = 0, .hi = 1e9},
    {"idle", APP_FLAG_DBL, AT(idle), .lo = 0, .hi = 86400},
    {.name = NULL},
};

#undef AT

struct tally {
    long printed, refused, errors;
};

/* Print one message as a line, or report why it cannot be printed; counted in t. */
static void print_one(const rd_kafka_message_t *m, struct core_wrec *r, struct core_buf *line,
                      struct tally *t)
{
    char eb[512] = "";

    if (m->err) {
        fprintf(stderr, "gcdp windows: %s\n", rd_kafka_message_errstr(m));
        t->errors++;
        return;
    }
    core_buf_reset(line);
    if (core_wrec_print(m->payload, m->len, r, line, eb, sizeof(eb)) != CORE_OK ||
        core_buf_status(line) != CORE_OK) {
        fprintf(stderr, "gcdp windows: %s[%" PRId32 "]@%" PRId64 ": %s\n",
                rd_kafka_topic_name(m->rkt), m->partition, m->offset,
                eb[0] ? eb : "record too long to print");
        t->refused++;
        return;
    }
    core_buf_putc(line, '\n');
    fwrite(line->p, 1, line->len, stdout);
    t->printed++;
}

static int cmd_main(struct app_call *call)
{
    struct windows_args a = {NULL, false, 0, 5};
    struct core_kread *rd = NULL;
    struct core_wrec r;
    struct core_buf line;
    struct tally t = {0, 0, 0};
    char eb[1024] = "", group[96];
    int64_t last = 0;
    const char *topic;

    if (app_flags_parse_only("windows", windows_flags, call->argc, call->argv, &a, NULL) != 0)
        return APP_EXIT_USAGE;
    topic = a.topic ? a.topic : core_config_str(call->cfg, "topics.windows");
    snprintf(group, sizeof(group), "gcdp.windows.print.%ld", (long)getpid());
    if (core_kread_new(call->cfg, topic, group, a.at_end, &rd, eb, sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp windows: %s\n", eb);
        return APP_EXIT_FAILURE;
    }
    core_wrec_init(&r);
    core_buf_init(&line, (size_t)CORE_WBIN_MAX_LEN * 4);
    last = core_mono_ms();
    while (a.max == 0 || t.printed + t.refused < a.max) {
        rd_kafka_message_t *m = core_kread_poll(rd, 200);
        if (!m) {
            fflush(stdout); /* a pause: what was printed reaches a pipe now */
            if (a.idle > 0 && (double)(core_mono_ms() - last) >= 1000.0 * a.idle)
                break;
            continue;
        }
        print_one(m, &r, &line, &t);
        rd_kafka_message_destroy(m);
        last = core_mono_ms();
    }
    fflush(stdout);
    fprintf(stderr, "gcdp windows: %ld printed, %ld refused, %ld broker errors (%s)\n", t.printed,
            t.refused, t.errors, topic);
    core_buf_cleanup(&line);
    core_wrec_cleanup(&r);
    core_kread_free(rd);
    return t.refused || t.errors ? APP_EXIT_FAILURE : APP_EXIT_OK;
}

const struct app_command app_cmd_windows = {
    .name = "windows",
    .summary = "print the window records on topics.windows as JSON lines (either encoding)",
    .help = app_help_windows,
    .options = windows_flags,
    .run = cmd_main,
};
