/* SPDX-License-Identifier: Apache-2.0
 * buf.h: a growable byte/string buffer, always NUL-terminated. */
#ifndef TY_BUF_H
#define TY_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct ty_buf {
    char *data; /* NUL-terminated; NULL until the first append */
    size_t len; /* bytes used, not counting the NUL */
    size_t cap;
};

#define TY_BUF_INIT                                                                                \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

/* Append bytes / a string / formatted text. Never fail (allocation aborts). */
void ty_buf_append(struct ty_buf *b, const void *p, size_t n);
void ty_buf_puts(struct ty_buf *b, const char *s);
void ty_buf_putc(struct ty_buf *b, char c);
void ty_buf_printf(struct ty_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Drop the first @n bytes, moving the rest to the front. */
void ty_buf_consume(struct ty_buf *b, size_t n);
/* Empty the buffer, keeping its memory. */
void ty_buf_reset(struct ty_buf *b);
/* Release memory; the buffer is empty afterwards and may be reused. */
void ty_buf_release(struct ty_buf *b);
/* Hand the string to the caller (never NULL; "" for an empty buffer); the buffer is empty. */
char *ty_buf_take(struct ty_buf *b);
/* The contents as a string, "" when empty. Valid until the next change. */
const char *ty_buf_str(const struct ty_buf *b);

#endif
