/* SPDX-License-Identifier: Apache-2.0
 * tunnel.h: what Google's client libraries send that is not a plain REST request, read the
 * way Google's front end reads it: a POST standing for another method (X-HTTP-Method-Override:
 * the Java client sends every PATCH so, and both clients a GET whose URL would be longer than
 * 2,048 characters, its query in a form body), and a gzip-compressed body (the Java client
 * compresses every request body). Pure functions of their input, so that the unit tests and
 * the fuzz target run them without a server; http.c applies them to a request. */
#ifndef TYD_TUNNEL_H
#define TYD_TUNNEL_H

#include <stddef.h>

#include "buf.h"

/* The method a POST stands for when it carries X-HTTP-Method-Override: @value (any case) if
 * it is GET, POST, PUT, PATCH or DELETE (a static string, upper case), else NULL (HEAD too:
 * a POST's answer has a body). */
const char *tyd_override_method(const char *value);

/* Decode @body in place by the request's Content-Encoding @encoding (NULL or "identity", or
 * an empty body: nothing to do; "gzip" or "x-gzip", any case, blanks around it). At most @max bytes
 * may come out. Returns 0; -ENOTSUP for another coding (or a list of them), -EINVAL when @body is
 * not one whole gzip stream (damaged, cut short, or followed by other bytes), -E2BIG when it
 * decodes to more than @max bytes (@body is then left as it was). */
int tyd_decode_body(const char *encoding, struct ty_buf *body, size_t max);

/* Is @content_type application/x-www-form-urlencoded (any case, parameters allowed)? */
int tyd_content_type_form(const char *content_type);

/* Read the @len bytes of @text as application/x-www-form-urlencoded pairs ("a=1&b=x+y&c"),
 * calling @add(@ctx, key, value) for each in order, with '+' read as a blank and %XX decoded;
 * value is NULL for a pair without '=' (as libmicrohttpd gives a URL's "?c"); empty pairs
 * ("a=1&&b") are skipped. Returns 0, or -EINVAL (nothing added after the bad pair) when a '%'
 * is not followed by two hex digits or decodes to NUL. */
int tyd_form_parse(const char *text,
                   size_t len,
                   void (*add)(void *ctx, const char *key, const char *value),
                   void *ctx);

#endif
