/* SPDX-License-Identifier: Apache-2.0
 * fdutil.h: file-descriptor and file-system helpers. */
#ifndef TY_FDUTIL_H
#define TY_FDUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"

/* Set O_NONBLOCK on @fd. Returns 0 or -errno. */
int ty_fd_nonblock(int fd);
/* Write all @n bytes, retrying on EINTR/short writes. Returns 0 or -errno. */
int ty_write_all(int fd, const void *p, size_t n);
/* Read a whole file (at most @max bytes, else -E2BIG) into a NUL-terminated buffer the caller
 * frees; "-" reads standard input. Returns 0 and sets *ret and *ret_len. */
int ty_read_file(const char *path, size_t max, char **ret, size_t *ret_len, struct ty_error *err);
/* mkdir -p with @mode for every created component. Returns 0 or -errno (err names the path). */
int ty_mkdir_p(const char *path, mode_t mode, struct ty_error *err);

/* What a file looked like when last seen (size and modification time), to notice changes
 * without reading it. Zero-initialised: never seen. */
struct ty_file_stamp {
    off_t size;
    long long mtime_sec;
    long mtime_nsec;
};

/* Whether @path exists and differs from @stamp; when it does, @stamp is updated. */
bool ty_file_changed(const char *path, struct ty_file_stamp *stamp);

#endif
