/* SPDX-License-Identifier: Apache-2.0
 * buf.c: growable string buffer. */
#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

static void reserve(struct ty_buf *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    size_t cap;

    if (need < b->len) /* overflow */
        abort();
    if (need <= b->cap)
        return;
    cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap * 2 > cap ? cap * 2 : need;
    b->data = xreallocarray(b->data, cap, 1);
    b->cap = cap;
}

void ty_buf_append(struct ty_buf *b, const void *p, size_t n)
{
    reserve(b, n);
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void ty_buf_puts(struct ty_buf *b, const char *s)
{
    ty_buf_append(b, s, strlen(s));
}

void ty_buf_putc(struct ty_buf *b, char c)
{
    ty_buf_append(b, &c, 1);
}

void ty_buf_printf(struct ty_buf *b, const char *fmt, ...)
{
    va_list ap, ap2;
    int n;

    va_start(ap, fmt);
    va_copy(ap2, ap);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        va_end(ap2);
        return;
    }
    reserve(b, (size_t)n);
    (void)vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    b->len += (size_t)n;
}

void ty_buf_consume(struct ty_buf *b, size_t n)
{
    if (n >= b->len) {
        ty_buf_reset(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

void ty_buf_reset(struct ty_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

void ty_buf_release(struct ty_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

char *ty_buf_take(struct ty_buf *b)
{
    char *s = b->data ? b->data : xstrdup("");
    b->data = NULL;
    b->len = b->cap = 0;
    return s;
}

const char *ty_buf_str(const struct ty_buf *b)
{
    return b->data ? b->data : "";
}
