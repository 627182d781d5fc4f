/* SPDX-License-Identifier: Apache-2.0
 * linesplit.c: byte stream -> lines (see linesplit.h). */
#include "linesplit.h"

#include <string.h>

static void emit(const char *p, size_t n, ty_line_fn fn, void *ctx)
{
    if (n > 0 && p[n - 1] == '\r')
        n--;
    fn(ctx, p, n);
}

void ty_linesplit_feed(struct ty_linesplit *ls, const char *p, size_t n, ty_line_fn fn, void *ctx)
{
    size_t max = ls->max ? ls->max : TY_LINE_MAX;

    while (n > 0) {
        const char *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) : n;
        /* The limit is on the line's text: a '\r' before the '\n' does not count. */
        size_t text = nl && take > 0 && p[take - 1] == '\r' ? take - 1 : take;

        if (ls->pending.len + text > max) {
            /* Cut: fill the pending line up to the limit and deliver it. */
            size_t room = max - ls->pending.len;
            ty_buf_append(&ls->pending, p, room);
            emit(ls->pending.data, ls->pending.len, fn, ctx);
            ty_buf_reset(&ls->pending);
            p += room;
            n -= room;
            continue;
        }
        if (!nl) {
            ty_buf_append(&ls->pending, p, n);
            return;
        }
        if (ls->pending.len) {
            ty_buf_append(&ls->pending, p, take);
            emit(ls->pending.data, ls->pending.len, fn, ctx);
            ty_buf_reset(&ls->pending);
        } else {
            emit(p, take, fn, ctx);
        }
        p += take + 1;
        n -= take + 1;
    }
}

void ty_linesplit_flush(struct ty_linesplit *ls, ty_line_fn fn, void *ctx)
{
    if (ls->pending.len) {
        emit(ls->pending.data, ls->pending.len, fn, ctx);
        ty_buf_reset(&ls->pending);
    }
}

void ty_linesplit_release(struct ty_linesplit *ls)
{
    ty_buf_release(&ls->pending);
}
