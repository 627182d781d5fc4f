/* SPDX-License-Identifier: Apache-2.0
 * linesplit.c: byte stream -> lines (see linesplit.h).
 *
 * A line that fits (its text, without the '\r' of a "\r\n", at most max bytes) is delivered
 * from the caller's bytes when it is all there, else through the pending buffer. The buffer
 * holds at most max + HOLD bytes: a piece is cut off only once it is full and more of the line
 * follows, or at the line's end, so the pieces are the same whatever the chunking (a '\r' at
 * the limit may still turn out to be a line end, and the whole character the limit falls in
 * is seen before the cut). A piece ends at a character boundary: a multibyte character the
 * limit would split goes to the next piece whole. */
#include "linesplit.h"

#include <string.h>

/* Bytes the pending buffer holds beyond the limit: the rest of a UTF-8 character the limit
 * falls in (at most 3), or the '\r' that may start a "\r\n". */
#define HOLD 4

/* Where to cut a pending line of more than @max bytes: before the character the limit falls
 * in, when the bytes there start a UTF-8 character (so far as they go) that does not end
 * before the limit; else at the limit (bytes that are no UTF-8 are cut anywhere). */
static size_t cut_point(const struct ty_buf *pending, size_t max)
{
    const unsigned char *u = (const unsigned char *)pending->data;
    size_t len = pending->len;

    for (size_t c = max; c > 0 && c + 4 > max; c--) {
        size_t need;
        if ((u[c] & 0xc0) == 0x80)
            continue; /* a continuation byte: the character starts earlier */
        if (c == max)
            return max; /* a character starts at the limit */
        need = u[c] >= 0xc2 && u[c] <= 0xdf   ? 2
               : u[c] >= 0xe0 && u[c] <= 0xef ? 3
               : u[c] >= 0xf0 && u[c] <= 0xf4 ? 4
                                              : 0;
        if (need == 0 || c + need <= max)
            return max; /* no character, or one that ends before the limit */
        for (size_t i = c + 1; i < c + need && i < len; i++)
            if ((u[i] & 0xc0) != 0x80)
                return max;
        return c;
    }
    return max;
}

/* Deliver the first @n bytes of the pending line as a piece of a line cut at the limit, as
 * they are (a '\r' there is text, not a line end). */
static void cut(struct ty_linesplit *ls, size_t n, ty_line_fn fn, void *ctx)
{
    fn(ctx, ls->pending.data, n);
    ty_buf_consume(&ls->pending, n);
}

/* Deliver a line its '\n' ended, without the '\r' of a "\r\n". */
static void emit_line(const char *p, size_t n, ty_line_fn fn, void *ctx)
{
    if (n > 0 && p[n - 1] == '\r')
        n--;
    fn(ctx, p, n);
}

/* The pending line's '\n' came: cut what is over the limit, deliver the rest. */
static void finish_line(struct ty_linesplit *ls, size_t max, ty_line_fn fn, void *ctx)
{
    for (;;) {
        size_t len = ls->pending.len;
        size_t text = len > 0 && ls->pending.data[len - 1] == '\r' ? len - 1 : len;
        if (text <= max)
            break;
        cut(ls, cut_point(&ls->pending, max), fn, ctx);
    }
    emit_line(ls->pending.data, ls->pending.len, fn, ctx);
    ty_buf_reset(&ls->pending);
}

void ty_linesplit_feed(struct ty_linesplit *ls, const char *p, size_t n, ty_line_fn fn, void *ctx)
{
    size_t max = ls->max ? ls->max : TY_LINE_MAX;

    while (n > 0) {
        const char *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) : n;

        if (ls->pending.len == 0 && nl) {
            /* The limit is on the line's text: a '\r' before the '\n' does not count. */
            size_t text = take > 0 && p[take - 1] == '\r' ? take - 1 : take;
            if (text <= max) {
                emit_line(p, take, fn, ctx);
                p += take + 1;
                n -= take + 1;
                continue;
            }
        }
        while (take > 0) {
            size_t room = max + HOLD - ls->pending.len, k;
            if (ls->pending.len >= max + HOLD) {
                /* full, and more of the line follows */
                cut(ls, cut_point(&ls->pending, max), fn, ctx);
                continue;
            }
            k = take < room ? take : room;
            ty_buf_append(&ls->pending, p, k);
            p += k;
            n -= k;
            take -= k;
        }
        if (!nl)
            return;
        p++;
        n--;
        finish_line(ls, max, fn, ctx);
    }
}

void ty_linesplit_flush(struct ty_linesplit *ls, ty_line_fn fn, void *ctx)
{
    size_t max = ls->max ? ls->max : TY_LINE_MAX;

    /* No '\n' ended it: a '\r' at its end is its own. */
    while (ls->pending.len > max)
        cut(ls, cut_point(&ls->pending, max), fn, ctx);
    if (ls->pending.len)
        fn(ctx, ls->pending.data, ls->pending.len);
    ty_buf_reset(&ls->pending);
}

void ty_linesplit_release(struct ty_linesplit *ls)
{
    ty_buf_release(&ls->pending);
}
