/* SPDX-License-Identifier: Apache-2.0
 * fdutil.h: file-descriptor and file-system helpers. */
#ifndef TY_FDUTIL_H
#define TY_FDUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "error.h"

/* Set O_NONBLOCK on @fd. Returns 0 or -errno. */
int ty_fd_nonblock(int fd);
/* Write all @n bytes, retrying on EINTR/short writes. Returns 0 or -errno. */
int ty_write_all(int fd, const void *p, size_t n);
/* Read a whole file (at most @max bytes, else -E2BIG) into a NUL-terminated buffer the caller
 * frees; "-" reads standard input. Returns 0 and sets *ret and *ret_len. */
int ty_read_file(const char *path, size_t max, char **ret, size_t *ret_len, struct ty_error *err);
/* Read the regular file @path, or its last @max bytes when it is larger, into a
 * NUL-terminated buffer the caller frees: for files that untrusted programs write (a trial's
 * metric file). It is opened without following a symbolic link and without blocking, so a
 * FIFO or device planted there is refused, never waited on. A file over @max is read from the
 * first line that starts within its last @max bytes, and *truncated (may be NULL) says so.
 * Returns 0 with *ret and *ret_len; -ENOENT when there is no such file; else -errno with @err
 * set (-ELOOP: a symbolic link, -EINVAL: not a regular file). */
int ty_read_file_tail(const char *path,
                      size_t max,
                      char **ret,
                      size_t *ret_len,
                      bool *truncated,
                      struct ty_error *err);
/* Mark every open descriptor from @lowest up close-on-exec (close_range's CLOSE_RANGE_CLOEXEC,
 * else one at a time from /proc/self/fd): what a program inherited, such as a shell's
 * `7<secret`, then reaches none of the programs it starts. */
void ty_cloexec_from(int lowest);

/* mkdir -p with @mode for every created component. Returns 0 or -errno (err names the path). */
int ty_mkdir_p(const char *path, mode_t mode, struct ty_error *err);
/* The same, every created component given exactly @mode whatever the umask (a directory
 * others must be able to pass through). Existing components are left as they are. */
int ty_mkdir_p_exact(const char *path, mode_t mode, struct ty_error *err);

/* ty_mkdir_p for a directory that others may have written on the way to: absolute @path is
 * walked from "/" one component at a time, each opened without following a symbolic link and
 * created (with @mode) when missing, so that a link planted anywhere on the way (a job
 * swapping its directory for a link to another) is refused, never followed. Returns an open
 * O_DIRECTORY descriptor of @path (caller closes), *@created whether this call made @path
 * itself; or -errno with err saying which component is a link or not a directory. */
int ty_mkdir_nofollow(const char *path, mode_t mode, bool *created, struct ty_error *err);

/* The directory @path opened as a path (O_PATH, close-on-exec), following no symbolic link
 * anywhere on its way (openat2's RESOLVE_NO_SYMLINKS): the fd, -ELOOP when a link is on the
 * way, or another -errno. */
int ty_open_dir_no_links(const char *path);

/* What a file looked like when last seen (size and modification time), to notice changes
 * without reading it. Zero-initialised: never seen. */
struct ty_file_stamp {
    off_t size;
    long long mtime_sec;
    long mtime_nsec;
};

/* Whether @path exists and differs from @stamp; when it does, @stamp is updated. */
bool ty_file_changed(const char *path, struct ty_file_stamp *stamp);

/* Raise this process's soft limit of open files to its hard limit, once, keeping the original:
 * a job of a thousand replicas holds a port reservation and three pipes per replica, past
 * the common soft limit of 1,024. Programs started for replicas get the original back
 * (ty_nofile_original). Returns 0 or -errno (the limit is then unchanged). */
int ty_nofile_raise(void);

/* The soft and hard limits of open files from before ty_nofile_raise, for a child to restore
 * before it execs a replica (setrlimit is a plain system call: safe after a vfork-style clone).
 * Returns false when the limit was never raised (nothing to restore). */
bool ty_nofile_original(struct rlimit *ret);

#endif
