/* SPDX-License-Identifier: Apache-2.0
 * docker-test-server.h: for the unit tests of the Docker API client and the container
 * engine: a real HTTP/1.1 server on a unix socket, forked by the test (canned JSON, chunked
 * and multiplexed streams, slow answers, echo, the engine's image and garbage routes), and
 * helpers that turn a ty_loop for a while. */
#ifndef TY_DOCKER_TEST_SERVER_H
#define TY_DOCKER_TEST_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include "loop.h"

/* A scratch folder, and the server's socket in it (set by dts_setup). */
extern char dts_tmpdir[64];
extern char dts_sock_path[108];

/* Make the scratch folder and the socket's path. Returns 0, or -1 (mkdtemp failed). */
int dts_setup(void);
/* Remove the socket, the test's other sockets and files in the folder, and the folder. */
void dts_teardown(void);

/* Besides canned routes, the server is a tiny engine for the container runtime: images
 * named rt-* are present; networks are created and removed; POST /containers/create saves
 * its body as create-<name>-<k>.json in the scratch folder and answers the id
 * "<image>~<k>"; such a container logs "output of <id>", its wait answers after 400 ms (later
 * than its log stream ends, as Podman's) and its inspect says how it ended, by image:
 * rt-once exits 137 on its first run and 0 after, rt-kill 137, rt-oom 137 with OOMKilled,
 * rt-gone is removed under the wait (an error, then 404), rt-long runs until the server
 * is stopped, others 0. An engine without an init: a create of rt-noinit with
 * HostConfig.Init fails (as Podman's), and so does the start of rt-dinit created with it
 * (as Docker's). Every request under
 * /containers and /networks is appended to requests.log ("METHOD PATH").
 * GET /events streams the die event (exit status 7) of each rt-evt container about 20 ms
 * after its start, amid events of other things; rt-evt's log follow takes 1.5 s to end and its
 * wait 3 s, so the event is the first to tell. A scratch file events-break makes every events
 * stream end after half a line. Each /events request is appended to events.log.
 * rt-xf behaves as rt-evt with exit status 5, but has no die event: 100 ms after its start,
 * its exit file exits/<id> (in the scratch folder; the test makes the folder) says "5", as
 * Podman's conmon writes it (a temporary file renamed). */

/* Fork the server on dts_sock_path; returns once it listens: 0, or -1. */
int start_server(void);
/* Kill and reap it (no-op when it is not running). */
void stop_server(void);

/* One frame of Docker's multiplexed log stream (stream id, big-endian length, @p) into @out
 * (8 + @n bytes). Returns its length. */
size_t mux_frame(char *out, int stream, const char *p, size_t n);

/* Run @loop until *flag is true or @ms passed (docker-test-loop.c). Returns *flag (false for a
 * NULL @flag). */
bool run_until(struct ty_loop *loop, const bool *flag, int ms);
/* Run @loop for @ms. */
void run_for(struct ty_loop *loop, int ms);

#endif
