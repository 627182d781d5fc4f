/* SPDX-License-Identifier: Apache-2.0
 * error.c: formatting of struct ty_error (see error.h for the convention). */
#include "error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

void ty_error_clear(struct ty_error *err)
{
    if (!err)
        return;
    err->code = 0;
    err->msg[0] = '\0';
}

int ty_error_set(struct ty_error *err, int code, const char *fmt, ...)
{
    va_list ap;

    code = abs(code);
    if (code == 0)
        code = EINVAL;
    if (err) {
        err->code = code;
        va_start(ap, fmt);
        (void)vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
        (void)ty_utf8_scrub(err->msg); /* it may quote bad input, or be cut inside a character */
    }
    return -code;
}

/* dst = a + ": " + b, truncated to fit. */
static void join(char *dst, size_t n, const char *a, const char *b)
{
    size_t la = strnlen(a, n - 1), lb;

    memcpy(dst, a, la);
    if (la + 2 < n) {
        memcpy(dst + la, ": ", 2);
        la += 2;
    }
    lb = strnlen(b, n - 1 - la);
    memcpy(dst + la, b, lb);
    dst[la + lb] = '\0';
}

int ty_error_prefix(struct ty_error *err, int r, const char *fmt, ...)
{
    char head[TY_ERROR_MSG_MAX];
    char tail[TY_ERROR_MSG_MAX];
    va_list ap;

    if (!err)
        return r;
    va_start(ap, fmt);
    (void)vsnprintf(head, sizeof(head), fmt, ap);
    va_end(ap);
    if (err->msg[0])
        (void)snprintf(tail, sizeof(tail), "%s", err->msg);
    else
        (void)snprintf(tail, sizeof(tail), "%s", strerror(r < 0 ? -r : r));
    join(err->msg, sizeof(err->msg), head, tail);
    (void)ty_utf8_scrub(err->msg);
    if (!err->code)
        err->code = r < 0 ? -r : r;
    return r;
}

const char *ty_error_msg(const struct ty_error *err)
{
    if (!err)
        return "unknown error";
    if (err->msg[0])
        return err->msg;
    return strerror(err->code ? err->code : EINVAL);
}
