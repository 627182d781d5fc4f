/* SPDX-License-Identifier: Apache-2.0
 * tunnel.c: X-HTTP-Method-Override, gzip request bodies and form-encoded queries (tunnel.h). */
#include "tunnel.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "alloc.h"
#include "macro.h"
#include "route.h"

const char *tyd_override_method(const char *value)
{
    static const char *const methods[] = {"GET", "POST", "PUT", "PATCH", "DELETE"};

    for (size_t i = 0; value && i < TY_ARRAY_SIZE(methods); i++)
        if (strcasecmp(value, methods[i]) == 0)
            return methods[i];
    return NULL;
}

/* @s without the blanks around it is @word (any case)? */
static int token_is(const char *s, const char *word)
{
    size_t n = strlen(word);

    s += strspn(s, " \t");
    if (strncasecmp(s, word, n) != 0)
        return 0;
    s += n;
    return s[strspn(s, " \t")] == '\0';
}

int tyd_decode_body(const char *encoding, struct ty_buf *body, size_t max)
{
    struct ty_buf out = TY_BUF_INIT;
    z_stream z = {0};
    unsigned char chunk[16384];
    bool too_big = false;
    int r = Z_OK;

    if (!encoding || token_is(encoding, "identity") || body->len == 0)
        return 0;
    if (!token_is(encoding, "gzip") && !token_is(encoding, "x-gzip"))
        return -ENOTSUP;
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) /* 16: a gzip header and trailer only */
        return -ENOMEM;
    z.next_in = (unsigned char *)body->data;
    z.avail_in = (uInt)body->len;
    while (r == Z_OK) {
        z.next_out = chunk;
        z.avail_out = sizeof(chunk);
        r = inflate(&z, Z_NO_FLUSH);
        size_t got = sizeof(chunk) - z.avail_out;
        if (out.len + got > max) {
            too_big = true;
            break;
        }
        ty_buf_append(&out, chunk, got);
    }
    /* Z_BUF_ERROR: no progress, the input ended before the stream did */
    int rc = too_big ? -E2BIG : r == Z_STREAM_END && z.avail_in == 0 ? 0 : -EINVAL;
    (void)inflateEnd(&z);
    if (rc == 0) {
        ty_buf_reset(body);
        ty_buf_append(body, out.data ? out.data : "", out.len);
    }
    ty_buf_release(&out);
    return rc;
}

int tyd_content_type_form(const char *ct)
{
    static const char form[] = "application/x-www-form-urlencoded";

    if (!ct)
        return 0;
    ct += strspn(ct, " \t");
    if (strncasecmp(ct, form, sizeof(form) - 1) != 0)
        return 0;
    ct += sizeof(form) - 1;
    ct += strspn(ct, " \t");
    return *ct == '\0' || *ct == ';';
}

/* Decode the @n bytes at @s ('+' a blank, %XX a byte) into a new string in *@ret. */
static int form_decode(const char *s, size_t n, char **ret)
{
    _cleanup_free_ char *out = xmalloc(n + 1);
    size_t j = 0;

    for (size_t i = 0; i < n; i++) {
        if (s[i] == '+') {
            out[j++] = ' ';
        } else if (s[i] != '%') {
            out[j++] = s[i];
        } else {
            int hi = i + 2 < n ? tyd_hex_digit(s[i + 1]) : -1;
            int lo = i + 2 < n ? tyd_hex_digit(s[i + 2]) : -1;
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
                return -EINVAL;
            out[j++] = (char)(hi * 16 + lo);
            i += 2;
        }
    }
    out[j] = '\0';
    *ret = TAKE_PTR(out);
    return 0;
}

int tyd_form_parse(const char *text,
                   size_t len,
                   void (*add)(void *ctx, const char *key, const char *value),
                   void *ctx)
{
    const char *end = text + len;

    while (text < end) {
        const char *amp = memchr(text, '&', (size_t)(end - text));
        const char *stop = amp ? amp : end;
        const char *eq = memchr(text, '=', (size_t)(stop - text));
        _cleanup_free_ char *key = NULL, *value = NULL;

        if (stop > text) {
            if (form_decode(text, (size_t)((eq ? eq : stop) - text), &key) < 0 ||
                (eq && form_decode(eq + 1, (size_t)(stop - eq - 1), &value) < 0))
                return -EINVAL;
            add(ctx, key, value);
        }
        text = amp ? amp + 1 : end;
    }
    return 0;
}
