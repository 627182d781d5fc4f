/* SPDX-License-Identifier: Apache-2.0
 * alloc.h: allocation that never returns NULL. trainyard treats out-of-memory as fatal
 * (one line on stderr, then abort): a supervisor that cannot allocate has no useful
 * recovery, and this removes a class of untested error paths. */
#ifndef TY_ALLOC_H
#define TY_ALLOC_H

#include <stddef.h>

/* malloc/calloc/realloc/strdup that abort on failure. xcalloc and xreallocarray check
 * the multiplication for overflow. xstrdup(NULL) returns NULL. */
void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xreallocarray(void *p, size_t nmemb, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* asprintf that aborts on failure; the result is owned by the caller. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Replace *dst with a copy of src (freeing the old value). */
void ty_replace_str(char **dst, const char *src);

#endif
