/* SPDX-License-Identifier: Apache-2.0
 * alloc.c: aborting allocators (see alloc.h for why). */
#include "alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(void)
{
    static const char msg[] = "trainyard: out of memory\n";
    (void)!fwrite(msg, 1, sizeof(msg) - 1, stderr);
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom();
    return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
    void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
    if (!p)
        oom();
    return p;
}

void *xreallocarray(void *p, size_t nmemb, size_t size)
{
    void *q = reallocarray(p, nmemb ? nmemb : 1, size ? size : 1);
    if (!q)
        oom();
    return q;
}

char *xstrdup(const char *s)
{
    char *d;
    if (!s)
        return NULL;
    d = strdup(s);
    if (!d)
        oom();
    return d;
}

char *xstrndup(const char *s, size_t n)
{
    char *d = strndup(s, n);
    if (!d)
        oom();
    return d;
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    int r;

    va_start(ap, fmt);
    r = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (r < 0)
        oom();
    return s;
}

void ty_replace_str(char **dst, const char *src)
{
    char *n = xstrdup(src);
    free(*dst);
    *dst = n;
}
