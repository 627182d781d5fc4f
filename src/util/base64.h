/* SPDX-License-Identifier: Apache-2.0
 * base64.h: base64 (RFC 4648 section 4, with padding) and its URL-safe form (section 5,
 * without padding), for etags and page tokens. Decoding is strict: a character outside the
 * alphabet, bad padding or leftover bits is an error, so forged tokens fail cleanly. */
#ifndef TY_BASE64_H
#define TY_BASE64_H

#include <stdbool.h>
#include <stddef.h>

/* Encode @n bytes; returns a new NUL-terminated string (caller frees). */
char *ty_base64_encode(const void *p, size_t n, bool url);
/* Encode @n bytes in the URL-safe alphabet but with '=' padding (Go's base64.URLEncoding, as
 * Docker's X-Registry-Auth header wants it); returns a new string (caller frees). */
char *ty_base64url_encode_padded(const void *p, size_t n);
/* Decode @text (NUL-terminated) into a new buffer of *ret_len bytes plus a NUL (caller
 * frees). Returns 0 or -EINVAL. */
int ty_base64_decode(const char *text, bool url, unsigned char **ret, size_t *ret_len);

#endif
