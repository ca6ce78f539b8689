/* pipe/check.h - `--check` of the service commands: validate, without the network and
 * without opening anything for writing, what a service would refuse at start. It reads the
 * keys of several stages, so it lives beside the pipeline, not in one of them.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Thread-safety: reentrant (the configuration is only read).
 */
#ifndef PIPE_CHECK_H
#define PIPE_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "core/config.h"
#include "core/err.h"

struct pipe_check_opts {
    const char *cmd;         /* "ingest", "calibrate", "release", "learn", ... */
    bool control;            /* the service listens to topics.control: control.key_file and
                                control.prev_key_file load (64 hex, mode 0600) */
    const char *theta;       /* a θ file the service loads (--theta), strictly validated */
    const char *cal_input;   /* a calibration source (--input), parsed with calibrate.input.* */
    const char *ledger_path; /* the ledger path: it and release.ledger.store exist writable or
                                can be created; an existing ledger's header (read only) binds
                                the configured unit scheme and caps */
};

/* The stage's own keys parsed as its service parses them (cmd "ingest":
 * ing_params_from_config; "calibrate": cal_service_opts_from_config; "release":
 * rel_opts_from_config + rel_drift_opts_from_config (+ the changelog topic); any other cmd:
 * none), both librdkafka client profiles with every kafka.* property and broker.bootstrap
 * (an @FILE is read), metrics.bind (a privileged metrics.port is warned about on stderr),
 * the control keys when o->control, then the inputs o names.
 * Returns CORE_OK, or the first refusal with eb naming the key or flag and why. */
CORE_MUST_CHECK core_err pipe_service_check(const struct core_config *cfg,
                                            const struct pipe_check_opts *o, char *eb, size_t ebn);

#endif /* PIPE_CHECK_H */
