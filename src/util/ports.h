/* SPDX-License-Identifier: Apache-2.0
 * ports.h: holding a free TCP port on this host for a replica until its program binds it
 * (the process runtime, and the container runtime when replicas share the host's network).
 *
 * A port is held by a socket bound to 0.0.0.0:<port> (no SO_REUSEADDR, not listening), which
 * keeps every other process off it without accepting connections; the caller gives it up
 * (ty_port_release) right before the replica starts. Ports come from [TY_PORT_LOW, the start
 * of the kernel's ephemeral range), so outgoing connections never take them in the meantime.
 *
 * Every reservation of this process is listed (ty_port_held), so that a child about to exec
 * can close them all first: until its exec, a child holds a copy of every reservation still
 * open (close-on-exec, but inherited by fork), and a replica started meanwhile could not bind
 * its port. */
#ifndef TY_PORTS_H
#define TY_PORTS_H

#include <stddef.h>

#include "error.h"

/* 20000 keeps clear of the well-known and commonly configured service ports below it. */
#define TY_PORT_LOW 20000

/* How many ports the range for replicas has now: from TY_PORT_LOW to the start of the kernel's
 * ephemeral range (net.ipv4.ip_local_port_range), 0 when it starts at or below TY_PORT_LOW. */
int ty_port_range_size(void);

/* Hold the next free port after *@cursor (0: start at a random point of the range, so
 * concurrent runs rarely probe the same ports; the cursor then moves past the port held).
 * Returns the port and sets *@fd (close-on-exec); -EADDRINUSE when the whole range is
 * taken, -ERANGE when there is no range, or -errno, each with err saying so (@what names
 * the replica). */
int ty_port_hold(int *cursor, int *fd, const char *what, struct ty_error *err);

/* Hold exactly @port (a retried job keeping its addresses). Returns the socket's fd
 * (close-on-exec), or -errno (-EADDRINUSE when something else has it). */
int ty_port_hold_exact(int port);

/* Give up the reservation @fd (from ty_port_hold or ty_port_hold_exact): close it and drop it
 * from the list of this process's reservations. No-op for a negative @fd. */
void ty_port_release(int fd);

/* The fds of every reservation this process holds now, ascending (any thread's). Returns
 * their count and sets *@fds (caller frees; NULL when there are none). */
size_t ty_port_held(int **fds);

#endif
