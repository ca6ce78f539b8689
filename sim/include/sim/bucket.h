/* sim/bucket.h - token bucket rate limiter (pure: the caller passes the time in).
 * SPDX-License-Identifier: Apache-2.0
 *
 * rate tokens per second accrue up to burst; a take succeeds when a whole token is there.
 * rate <= 0 means unlimited. Thread-safety: caller-owned plain state.
 */
#ifndef SIM_BUCKET_H
#define SIM_BUCKET_H

#include <stdint.h>

struct sim_bucket {
    double rate;  /* tokens per second; <= 0: unlimited */
    double burst; /* capacity in tokens (>= 1) */
    double tokens;
    int64_t last_ns;
};

/* Start full at time now_ns (monotonic nanoseconds). */
void sim_bucket_init(struct sim_bucket *b, double rate, double burst, int64_t now_ns);

/* Take one token at now_ns: returns 0 when taken, else the nanoseconds to wait before a
 * token is there (nothing is taken then). */
int64_t sim_bucket_take(struct sim_bucket *b, int64_t now_ns);

#endif /* SIM_BUCKET_H */
