/* SPDX-License-Identifier: Apache-2.0
 * loop.h: a small single-threaded poll(2) event loop: fd watchers and one-shot timers.
 *
 * Everything that waits in trainyard (replica pipes, pidfds, cancel requests, grace-period
 * timers, later the container API's sockets) is a watcher on one loop, so no thread per
 * replica. Callbacks may add and remove watchers and timers, including their own. */
#ifndef TY_LOOP_H
#define TY_LOOP_H

#include <stdbool.h>
#include <stdint.h>

struct ty_loop;

typedef void (*ty_io_fn)(struct ty_loop *loop, int fd, short revents, void *data);
typedef void (*ty_timer_fn)(struct ty_loop *loop, void *data);

/* Create / destroy a loop. ty_loop_free does not close watched fds. NULL-safe free. */
struct ty_loop *ty_loop_new(void);
void ty_loop_free(struct ty_loop *loop);

/* Watch @fd for @events (POLLIN, POLLOUT). One watcher per fd; adding an fd that is already
 * watched replaces its events, callback and data. Returns 0. */
int ty_loop_add_fd(struct ty_loop *loop, int fd, short events, ty_io_fn fn, void *data);
/* Stop watching @fd (no-op when not watched). Safe inside callbacks. */
void ty_loop_remove_fd(struct ty_loop *loop, int fd);

/* Call @fn once at monotonic time @when_usec (see ty_mono_usec). Returns a timer id > 0. */
uint64_t ty_loop_add_timer(struct ty_loop *loop, int64_t when_usec, ty_timer_fn fn, void *data);
/* Cancel a pending timer (no-op for 0, fired or unknown ids). */
void ty_loop_cancel_timer(struct ty_loop *loop, uint64_t id);

/* Wait (at most until the next timer) and dispatch ready watchers and due timers once.
 * Returns 0, or -errno when poll fails for a reason other than EINTR. */
int ty_loop_run_once(struct ty_loop *loop);
/* Run until ty_loop_stop is called. Returns 0 or -errno. */
int ty_loop_run(struct ty_loop *loop);
void ty_loop_stop(struct ty_loop *loop);

#endif
