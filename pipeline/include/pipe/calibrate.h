/* pipe/calibrate.h - the offline `gcdp calibrate`: θ from a calibration matrix file, public or
 * private (charged to the release ledger first), written atomically or to standard output and
 * optionally published; and the strict check of a θ file. Private mode bounds Δ₁S with
 * release's policy graph (pipe/calpolicy.h), so this joins two stages and lives here.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Thread-safety: one call at a time per configuration (private mode draws from the OS CSPRNG
 * and wipes its state afterwards).
 */
#ifndef PIPE_CALIBRATE_H
#define PIPE_CALIBRATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "core/config.h"
#include "core/err.h"

/* What one offline run asks for (every pointer borrowed). */
struct pipe_cal_offline {
    const char *input;          /* the calibration matrix (calibrate.input.format; - = stdin) */
    const char *output;         /* θ file (atomic rename, fsync); NULL: stdout plus newline */
    const char *ledger;         /* private: the ledger path as given; NULL: release.ledger.path */
    const char *const *devices; /* private: the rows' device ids ... */
    size_t n_devices;           /* ... 0: calibrate.ledger.devices */
    bool publish;               /* also produce θ to topics.calibration and wait for the ack */
};

/* Calibrate (cal_calibrate, or in calibrate.mode=private cal_calibrate_charged on the opened
 * ledger: units charged and θ committed before anything is written), log the run's counts and
 * timings, write θ, then publish the same bytes when asked.
 *   cfg  borrowed; calibrate.*, release.ledger.*, release.policy.*, topics.calibration.
 *   eb   on failure one line saying why (and, in private mode, that nothing was written).
 * Returns CORE_OK; CORE_ECONFIG for what is a usage or configuration error (options, no device
 * id, no row timestamps in private mode, an unusable policy graph or ledger path, a
 * refused publish configuration); any other code for a runtime failure (input, ledger,
 * calibration, output, broker). */
CORE_MUST_CHECK core_err pipe_calibrate_offline(struct core_config *cfg,
                                                const struct pipe_cal_offline *req, char *eb,
                                                size_t ebn);

/* Load the θ file at path strictly (cal_theta_load_file) and print one line describing it
 * (version, mode, sizes, eps_cal) to out.
 * Returns CORE_OK, or the loader's error with eb = "invalid theta: <reason>"; never
 * CORE_ECONFIG. */
CORE_MUST_CHECK core_err pipe_calibrate_check_file(const char *path, FILE *out, char *eb,
                                                   size_t ebn);

#endif /* PIPE_CALIBRATE_H */
