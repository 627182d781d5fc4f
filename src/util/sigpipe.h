/* SPDX-License-Identifier: Apache-2.0
 * sigpipe.h: signals delivered to an event loop through a pipe (the self-pipe trick): the
 * handler only writes the signal's number; the loop reads it and acts outside signal
 * context. One pipe per process. */
#ifndef TY_SIGPIPE_H
#define TY_SIGPIPE_H

#include <stddef.h>

/* Install the handler for the @n signals @sigs (creating the pipe on first use). Returns the
 * pipe's read end (non-blocking, close-on-exec; each byte read is a signal number), or
 * -errno. Children forked later must reset these handlers before running anything else. */
int ty_sigpipe_install(const int *sigs, size_t n);

#endif
