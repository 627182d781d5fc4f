/* SPDX-License-Identifier: Apache-2.0
 * ports.h: holding a free TCP port on this host for a replica until its program binds it
 * (the process runtime, and the container runtime when replicas share the host's network).
 *
 * A port is held by a socket bound to 0.0.0.0:<port> (no SO_REUSEADDR, not listening), which
 * keeps every other process off it without accepting connections; the caller closes it right
 * before the replica starts. Ports come from [TY_PORT_LOW, the start of the kernel's
 * ephemeral range), so outgoing connections never take them in the meantime. */
#ifndef TY_PORTS_H
#define TY_PORTS_H

#include "error.h"

/* 20000 keeps clear of the well-known and commonly configured service ports below it. */
#define TY_PORT_LOW 20000

/* Hold the next free port after *@cursor (0: start at a random point of the range, so
 * concurrent runs rarely probe the same ports; the cursor then moves past the port held).
 * Returns the port and sets *@fd (close-on-exec); -EADDRINUSE when the whole range is
 * taken, -ERANGE when there is no range, or -errno, each with err saying so (@what names
 * the replica). */
int ty_port_hold(int *cursor, int *fd, const char *what, struct ty_error *err);

/* Hold exactly @port (a retried job keeping its addresses). Returns the socket's fd
 * (close-on-exec), or -errno (-EADDRINUSE when something else has it). */
int ty_port_hold_exact(int port);

#endif
