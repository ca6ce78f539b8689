/* broker_bind.c - the bind() interposer behind `gcdp broker --port` (broker_bind.h).
 *
 * librdkafka 2.0.2's mock cluster binds 127.0.0.1:0 with no API to choose the port, so while
 * `gcdp broker --port P` creates the cluster this executable's bind() rewrites that address
 * to 127.0.0.1:P+n for broker n and calls the real bind via dlsym(RTLD_NEXT). Every other
 * bind() of the process, and every bind() of every other command, passes through unchanged
 * (fixed_port_next is 0 except inside broker_bind_fix_ports(P) ... (0) in cmd_broker.c). The
 * ports are checked free first (broker_bind_port_free), because a failed bind aborts the
 * process inside librdkafka (rd_assert, rdkafka_mock.c:2405). Kept apart from every other
 * source so that what overrides a libc symbol in the production binary is one small file. */
#include "broker_bind.h"

#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* glibc exposes RTLD_NEXT only under _GNU_SOURCE, which would also turn bind()'s
 * prototype into a transparent union that an ISO C definition cannot match. */
#ifndef RTLD_NEXT
#define RTLD_NEXT ((void *)-1L)
#endif

/* 0: pass through; otherwise the next port to hand to a 127.0.0.1:0 bind. */
static atomic_int fixed_port_next;

typedef int bind_fn(int, const struct sockaddr *, socklen_t);

/* Interposed bind(): see the file comment. Only active during core_broker_new(). */
int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
    static bind_fn *real_bind;
    struct sockaddr_in sin;
    int port;

    if (!real_bind) {
        void *sym = dlsym(RTLD_NEXT, "bind");
        memcpy(&real_bind, &sym, sizeof(real_bind));
        if (!real_bind) {
            errno = ENOSYS;
            return -1;
        }
    }
    port = atomic_load(&fixed_port_next);
    if (port > 0 && addr && addr->sa_family == AF_INET && len >= sizeof(sin)) {
        memcpy(&sin, addr, sizeof(sin));
        if (sin.sin_port == 0 && sin.sin_addr.s_addr == htonl(INADDR_LOOPBACK)) {
            int one = 1;
            sin.sin_port = htons((uint16_t)port);
            atomic_store(&fixed_port_next, port + 1);
            /* a restart on the same --port must not wait for the old connections' TIME_WAIT
             * (~60 s); a port another process listens on is still refused */
            (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
            return real_bind(fd, (const struct sockaddr *)&sin, sizeof(sin));
        }
    }
    return real_bind(fd, addr, len);
}

/* True when 127.0.0.1:port can be bound right now, with SO_REUSEADDR as the broker's own
 * bind uses it (TIME_WAIT leftovers of an earlier run do not count; a listener does). */
bool broker_bind_port_free(int port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET};
    int fd = socket(AF_INET, SOCK_STREAM, 0), ok, one = 1;

    if (fd < 0)
        return false;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sin.sin_port = htons((uint16_t)port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok = bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0;
    close(fd);
    return ok;
}

void broker_bind_fix_ports(int first_port)
{
    atomic_store(&fixed_port_next, first_port);
}
