/* SPDX-License-Identifier: Apache-2.0
 * utf8.c: strict UTF-8 decoding and scrubbing (utf8.h). */
#include "utf8.h"

#include <string.h>

#include "alloc.h"
#include "buf.h"

size_t ty_utf8_char(const unsigned char *s, size_t n, uint32_t *cp)
{
    uint32_t c = s[0], min;
    size_t k;

    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf)
        k = 1, c &= 0x1f, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        k = 2, c &= 0x0f, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        k = 3, c &= 0x07, min = 0x10000;
    else
        return 0;
    if (n <= k)
        return 0;
    for (size_t i = 1; i <= k; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        c = c << 6 | (s[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return k + 1;
}

char *ty_utf8_dup_replacing(const char *p, size_t n)
{
    const unsigned char *u = (const unsigned char *)p;
    struct ty_buf b = TY_BUF_INIT;
    size_t i = 0, run = 0;

    while (i < n && u[i] >= 0x01 && u[i] <= 0x7f)
        i++;
    if (i == n)
        return xstrndup(p, n);
    while (i < n) {
        uint32_t cp;
        size_t k = u[i] ? ty_utf8_char(u + i, n - i, &cp) : 0;
        if (k) {
            i += k;
            continue;
        }
        ty_buf_append(&b, p + run, i - run);
        ty_buf_append(&b, "\xef\xbf\xbd", 3);
        run = ++i;
    }
    ty_buf_append(&b, p + run, n - run);
    return ty_buf_take(&b);
}

size_t ty_utf8_scrub(char *s)
{
    size_t n = strlen(s), replaced = 0;

    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t len = ty_utf8_char((const unsigned char *)s + i, n - i, &cp);
        if (len == 0) {
            s[i++] = '?';
            replaced++;
        } else {
            i += len;
        }
    }
    return replaced;
}

size_t ty_ctrl_scrub(char *s)
{
    size_t replaced = 0;

    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) {
            *s = '?';
            replaced++;
        }
    return replaced;
}
