/* clock.c - see core/clock.h. */
#include "core/clock.h"

#include <time.h>

static int64_t ms_of(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t core_wall_ms(void)
{
    return ms_of(CLOCK_REALTIME);
}

int64_t core_mono_ms(void)
{
    return ms_of(CLOCK_MONOTONIC);
}
