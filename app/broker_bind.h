/* broker_bind.h - the bind() interposer `gcdp broker --port` needs (broker_bind.c). */
#ifndef GCDP_BROKER_BIND_H
#define GCDP_BROKER_BIND_H

#include <stdbool.h>

/* From now on, hand 127.0.0.1:0 binds the ports first_port, first_port + 1, ...; 0: pass
 * every bind through unchanged again (the default). */
void broker_bind_fix_ports(int first_port);

/* True when 127.0.0.1:port can be bound right now with SO_REUSEADDR (TIME_WAIT leftovers of
 * an earlier run do not count; a listener does). */
bool broker_bind_port_free(int port);

#endif /* GCDP_BROKER_BIND_H */
