/* SPDX-License-Identifier: Apache-2.0
 * live-out.h: `local train`'s live output. The lines its loop shows are written to standard
 * output by a thread of their own, so that a terminal or pipe that stops reading (a paused
 * pager, a stopped `less`) never stops the loop: the job's state, its log files, its time
 * limits and the signals that cancel it go on. Up to LIVE_OUT_MAX bytes wait to be written;
 * lines beyond that are left out, counted, and a line says how many once the output is read
 * again (every line is in the job's log files). */
#ifndef TY_LIVE_OUT_H
#define TY_LIVE_OUT_H

#include <stddef.h>

#define LIVE_OUT_MAX (4 * 1024 * 1024)

struct live_out;

/* Start writing to @fd. Returns NULL when no thread can be started: live_out_line then writes
 * @fd itself. */
struct live_out *live_out_start(int fd);

/* Queue the @n bytes of @line (one or more whole lines) for output; on a NULL @lo, write them
 * to standard output now. Never waits for the output's reader. */
void live_out_line(struct live_out *lo, const char *line, size_t n);

/* Write what is queued (this waits for the reader), end the thread and free @lo; NULL-safe. */
void live_out_end(struct live_out *lo);

#endif
