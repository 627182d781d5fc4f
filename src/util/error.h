/* SPDX-License-Identifier: Apache-2.0
 * error.h: the caller-owned error detail every fallible trainyard function fills.
 *
 * Convention: functions return >= 0 on success and -errno on failure; when they fail they
 * may also write a human-readable message into a `struct ty_error` the caller owns (on its
 * stack). No allocation, nothing to free, and `err` may always be NULL.
 */
#ifndef TY_ERROR_H
#define TY_ERROR_H

#include <stdarg.h>

#define TY_ERROR_MSG_MAX 1024

struct ty_error {
    int code;                   /* positive errno of the failure, 0 if none */
    char msg[TY_ERROR_MSG_MAX]; /* lower-case, no trailing full stop, NUL-terminated */
};

#define TY_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* Reset @err to "no error". NULL-safe. */
void ty_error_clear(struct ty_error *err);

/* Record a failure: set err->code = |code| and format the message.
 * Returns -|code| so call sites can `return ty_error_set(err, EINVAL, "...")`.
 * NULL-safe: with err == NULL only the return value matters. */
int ty_error_set(struct ty_error *err, int code, const char *fmt, ...) TY_PRINTF(3, 4);

/* Prepend "context: " to the message already in @err (adding context while bubbling up).
 * Returns @r unchanged. If err->msg is empty, strerror(-r) is used as the tail. */
int ty_error_prefix(struct ty_error *err, int r, const char *fmt, ...) TY_PRINTF(3, 4);

/* The message, or strerror of the code when no message was recorded. Never NULL. */
const char *ty_error_msg(const struct ty_error *err);

#endif
