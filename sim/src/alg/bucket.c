/* bucket.c - token bucket (sim/bucket.h). */
#include "sim/bucket.h"

#include <math.h>

void sim_bucket_init(struct sim_bucket *b, double rate, double burst, int64_t now_ns)
{
    b->rate = rate;
    b->burst = burst >= 1.0 ? burst : 1.0;
    b->tokens = b->burst;
    b->last_ns = now_ns;
}

int64_t sim_bucket_take(struct sim_bucket *b, int64_t now_ns)
{
    double wait_s;
    if (!(b->rate > 0.0))
        return 0;
    if (now_ns > b->last_ns) {
        b->tokens = fmin(b->burst, b->tokens + b->rate * (double)(now_ns - b->last_ns) * 1e-9);
        b->last_ns = now_ns;
    }
    if (b->tokens >= 1.0) {
        b->tokens -= 1.0;
        return 0;
    }
    wait_s = (1.0 - b->tokens) / b->rate;
    return (int64_t)ceil(wait_s * 1e9);
}
