/* SPDX-License-Identifier: Apache-2.0
 * macro.h: cleanup attributes, ownership hand-off and small helpers used everywhere.
 * Header-only; no state. */
#ifndef TY_MACRO_H
#define TY_MACRO_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f)     __attribute__((cleanup(f)))
#define TY_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Take ownership of a pointer: returns it and leaves NULL behind. */
#define TAKE_PTR(p)                                                                                \
    __extension__({                                                                                \
        __typeof__(p) _tp = (p);                                                                   \
        (p) = NULL;                                                                                \
        _tp;                                                                                       \
    })
/* Take ownership of a file descriptor: returns it and leaves -EBADF behind. */
#define TAKE_FD(fd)                                                                                \
    __extension__({                                                                                \
        int _tfd = (fd);                                                                           \
        (fd) = -EBADF;                                                                             \
        _tfd;                                                                                      \
    })

static inline void ty_freep(void *p)
{
    free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(ty_freep)

static inline void ty_closep(int *fd)
{
    if (*fd >= 0) {
        int saved = errno;
        (void)close(*fd);
        errno = saved;
    }
}
#define _cleanup_close_ _cleanup_(ty_closep)

static inline void ty_fclosep(FILE **f)
{
    if (*f)
        (void)fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(ty_fclosep)

static inline int ty_negerrno(void)
{
    return errno > 0 ? -errno : -EIO;
}

#endif
