/* SPDX-License-Identifier: Apache-2.0
 * linesplit.h: turn a byte stream (a replica's stdout, a container log stream) into lines.
 * A line longer than TY_LINE_MAX (or the splitter's own max) is cut into pieces of at most
 * that size, so one runaway line cannot grow memory without bound: each cut at the limit, or
 * up to 3 bytes before it where a UTF-8 character would be split (the character goes whole
 * into the next piece; bytes that are not UTF-8 are cut at the limit); a final line without a
 * newline is delivered by ty_linesplit_flush. Lines are passed without their '\n', and without the
 * '\r' of a "\r\n": a '\r' anywhere else (at the end of a piece cut at the limit, at the end of a
 * final line without a newline) is part of the text. The pieces are the same whatever
 * chunks the bytes come in. */
#ifndef TY_LINESPLIT_H
#define TY_LINESPLIT_H

#include <stddef.h>

#include "buf.h"

/* 64 KiB: longer than any sane log line, small enough to keep per replica. */
#define TY_LINE_MAX 65536

typedef void (*ty_line_fn)(void *ctx, const char *line, size_t len);

struct ty_linesplit {
    struct ty_buf pending;
    size_t max; /* the longest line, cut beyond; 0: TY_LINE_MAX */
};

/* Feed @n bytes; calls @fn once per complete line. */
void ty_linesplit_feed(struct ty_linesplit *ls, const char *p, size_t n, ty_line_fn fn, void *ctx);
/* Deliver a pending partial line, if any. */
void ty_linesplit_flush(struct ty_linesplit *ls, ty_line_fn fn, void *ctx);
/* Release memory. */
void ty_linesplit_release(struct ty_linesplit *ls);

#endif
