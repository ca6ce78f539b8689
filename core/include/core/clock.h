/* core/clock.h - the one clock: wall time and monotonic time in milliseconds.
 * SPDX-License-Identifier: Apache-2.0
 *
 * core_wall_ms: CLOCK_REALTIME, epoch ms (what record times, θ versions, command issue times
 *   and log lines are compared with; it can step back).
 * core_mono_ms: CLOCK_MONOTONIC, ms from an arbitrary origin (deadlines and durations only).
 * Thread-safety: both reentrant.
 */
#ifndef CORE_CLOCK_H
#define CORE_CLOCK_H

#include <stdint.h>

int64_t core_wall_ms(void);
int64_t core_mono_ms(void);

#endif /* CORE_CLOCK_H */
