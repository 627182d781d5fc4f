/* SPDX-License-Identifier: Apache-2.0
 * base64.c: strict base64 and base64url (base64.h). */
#include "base64.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

static const char std_alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char url_alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Encode with alphabet @a, '='-padded to a multiple of 4 when @pad. */
static char *encode(const void *p, size_t n, const char *a, bool pad)
{
    const unsigned char *s = p;
    char *out = xmalloc((n + 2) / 3 * 4 + 1), *o = out;
    size_t i;

    for (i = 0; i + 2 < n; i += 3) {
        unsigned v = (unsigned)s[i] << 16 | (unsigned)s[i + 1] << 8 | s[i + 2];
        *o++ = a[v >> 18 & 63];
        *o++ = a[v >> 12 & 63];
        *o++ = a[v >> 6 & 63];
        *o++ = a[v & 63];
    }
    if (i < n) {
        unsigned v = (unsigned)s[i] << 16 | (i + 1 < n ? (unsigned)s[i + 1] << 8 : 0);
        *o++ = a[v >> 18 & 63];
        *o++ = a[v >> 12 & 63];
        if (i + 1 < n)
            *o++ = a[v >> 6 & 63];
        else if (pad)
            *o++ = '=';
        if (pad)
            *o++ = '=';
    }
    *o = '\0';
    return out;
}

char *ty_base64_encode(const void *p, size_t n, bool url)
{
    return encode(p, n, url ? url_alpha : std_alpha, !url);
}

char *ty_base64url_encode_padded(const void *p, size_t n)
{
    return encode(p, n, url_alpha, true);
}

static int value_of(char c, bool url)
{
    const char *a = url ? url_alpha : std_alpha;
    const char *hit = c ? strchr(a, c) : NULL;
    return hit ? (int)(hit - a) : -1;
}

int ty_base64_decode(const char *text, bool url, unsigned char **ret, size_t *ret_len)
{
    size_t len = strlen(text), pad = 0, full, i, o = 0;
    unsigned char *out;

    if (!url) {
        if (len % 4)
            return -EINVAL;
        while (pad < 2 && len > pad && text[len - 1 - pad] == '=')
            pad++;
        len -= pad;
    } else if (len % 4 == 1) {
        return -EINVAL;
    }
    full = len / 4 * 4;
    out = xmalloc(len / 4 * 3 + 3 + 1);
    for (i = 0; i < len; i += 4) {
        size_t k = len - i < 4 ? len - i : 4;
        unsigned v = 0;
        for (size_t j = 0; j < 4; j++) {
            int d = j < k ? value_of(text[i + j], url) : 0;
            if (d < 0) {
                free(out);
                return -EINVAL;
            }
            v = v << 6 | (unsigned)d;
        }
        out[o++] = (unsigned char)(v >> 16);
        if (k > 2)
            out[o++] = (unsigned char)(v >> 8);
        if (k > 3)
            out[o++] = (unsigned char)v;
        /* The bits a short final group does not use must be zero (canonical text). */
        if (i >= full && ((k == 2 && (v & 0xffff)) || (k == 3 && (v & 0xff)))) {
            free(out);
            return -EINVAL;
        }
    }
    if (!url && pad && (len % 4) + pad != 4) {
        free(out);
        return -EINVAL;
    }
    out[o] = '\0';
    *ret = out;
    *ret_len = o;
    return 0;
}
