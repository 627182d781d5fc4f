/* SPDX-License-Identifier: Apache-2.0
 * fdutil.c: file-descriptor and file-system helpers. */
#include "fdutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "macro.h"
#include "parse.h"

int ty_fd_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return ty_negerrno();
    return 0;
}

int ty_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return ty_negerrno();
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

int ty_read_file(const char *path, size_t max, char **ret, size_t *ret_len, struct ty_error *err)
{
    _cleanup_close_ int fd = -EBADF;
    struct ty_buf b = TY_BUF_INIT;
    char chunk[65536];
    int in = strcmp(path, "-") == 0;

    if (!in) {
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return ty_error_set(err, errno, "cannot open '%s': %s", path, strerror(errno));
    }
    for (;;) {
        ssize_t n = read(in ? STDIN_FILENO : fd, chunk, sizeof(chunk));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            ty_buf_release(&b);
            return ty_error_set(err, e, "cannot read '%s': %s", path, strerror(e));
        }
        if (n == 0)
            break;
        if (b.len + (size_t)n > max) {
            ty_buf_release(&b);
            return ty_error_set(err, E2BIG, "'%s' is larger than %zu bytes", path, max);
        }
        ty_buf_append(&b, chunk, (size_t)n);
    }
    *ret_len = b.len;
    *ret = ty_buf_take(&b);
    return 0;
}

int ty_read_file_tail(const char *path,
                      size_t max,
                      char **ret,
                      size_t *ret_len,
                      bool *truncated,
                      struct ty_error *err)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    _cleanup_free_ char *buf = NULL;
    size_t len = 0, skip = 0;
    struct stat st;

    if (truncated)
        *truncated = false;
    if (fd < 0 && errno == ELOOP)
        return ty_error_set(err, ELOOP, "'%s' is a symbolic link, which is not followed", path);
    if (fd < 0)
        return ty_error_set(err, errno, "cannot open '%s': %s", path, strerror(errno));
    if (fstat(fd, &st) < 0)
        return ty_error_set(err, errno, "cannot stat '%s': %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return ty_error_set(err, EINVAL, "'%s' is not a regular file", path);
    if ((uint64_t)st.st_size > max && lseek(fd, st.st_size - (off_t)max, SEEK_SET) < 0)
        return ty_error_set(err, errno, "cannot seek in '%s': %s", path, strerror(errno));
    buf = xmalloc(max + 1);
    while (len < max) { /* the file may grow meanwhile: never more than @max */
        ssize_t n = read(fd, buf + len, max - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return ty_error_set(err, errno, "cannot read '%s': %s", path, strerror(errno));
        if (n == 0)
            break;
        len += (size_t)n;
    }
    if ((uint64_t)st.st_size > max) { /* from the first whole line */
        const char *nl = memchr(buf, '\n', len);
        skip = nl ? (size_t)(nl - buf) + 1 : len;
        memmove(buf, buf + skip, len - skip);
        len -= skip;
        if (truncated)
            *truncated = true;
    }
    buf[len] = '\0';
    *ret_len = len;
    *ret = TAKE_PTR(buf);
    return 0;
}

/* mkdir @p, or find it is a directory already. Returns 0, -ENOENT when a parent is missing
 * (nothing set in @err), or -errno with @err. */
/* mkdir @p with @mode (@exact: whatever the umask, chmod after it was made). */
static int mkdir_one(const char *p, mode_t mode, bool exact, struct ty_error *err)
{
    struct stat st;

    if (mkdir(p, mode) == 0) {
        if (exact && chmod(p, mode) < 0)
            return ty_error_set(err, errno, "cannot set the mode of '%s': %s", p, strerror(errno));
        return 0;
    }
    if (errno == ENOENT)
        return -ENOENT;
    if (errno != EEXIST)
        return ty_error_set(err, errno, "cannot create directory '%s': %s", p, strerror(errno));
    if (stat(p, &st) < 0 || !S_ISDIR(st.st_mode))
        return ty_error_set(
            err, ENOTDIR, "cannot create directory '%s': it exists and is not a directory", p);
    return 0;
}

static int mkdir_p(const char *path, mode_t mode, bool exact, struct ty_error *err)
{
    _cleanup_free_ char *p = NULL;
    size_t len;
    int r = mkdir_one(path, mode, exact, err);

    /* Mostly the parent exists (a job's directory in the state directory): one mkdir. */
    if (r != -ENOENT)
        return r;
    p = xstrdup(path);
    len = strlen(p);
    for (size_t i = 1; i <= len; i++) {
        if (p[i] != '/' && p[i] != '\0')
            continue;
        char c = p[i];
        p[i] = '\0';
        r = mkdir_one(p, mode, exact, err);
        if (r == -ENOENT)
            return ty_error_set(
                err, ENOENT, "cannot create directory '%s': %s", p, strerror(ENOENT));
        if (r < 0)
            return r;
        p[i] = c;
    }
    return 0;
}

int ty_mkdir_p(const char *path, mode_t mode, struct ty_error *err)
{
    return mkdir_p(path, mode, false, err);
}

int ty_mkdir_p_exact(const char *path, mode_t mode, struct ty_error *err)
{
    return mkdir_p(path, mode, true, err);
}

void ty_cloexec_from(int lowest)
{
    DIR *d;
    struct dirent *de;

#ifdef CLOSE_RANGE_CLOEXEC
    if (syscall(SYS_close_range, (unsigned)lowest, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
        return;
#endif
    d = opendir("/proc/self/fd");
    if (!d)
        return;
    while ((de = readdir(d))) {
        int64_t fd;
        if (ty_parse_int64(de->d_name, lowest, INT32_MAX, &fd) == 0 && fd != dirfd(d))
            (void)fcntl((int)fd, F_SETFD, fcntl((int)fd, F_GETFD) | FD_CLOEXEC);
    }
    closedir(d);
}

int ty_mkdir_nofollow(const char *path, mode_t mode, bool *created, struct ty_error *err)
{
    const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    _cleanup_free_ char *p = xstrdup(path);
    char *comp, *save = NULL;
    int fd, next;

    *created = false;
    if (p[0] != '/')
        return ty_error_set(err, EINVAL, "'%s' is not an absolute path", path);
    fd = open("/", flags);
    if (fd < 0)
        return ty_error_set(err, errno, "cannot open '/': %s", strerror(errno));
    for (comp = strtok_r(p, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
        bool made = false;
        next = openat(fd, comp, flags);
        if (next < 0 && errno == ENOENT) {
            if (mkdirat(fd, comp, mode) == 0)
                made = true;
            else if (errno != EEXIST)
                goto fail;
            next = openat(fd, comp, flags);
        }
        if (next < 0)
            goto fail;
        close(fd);
        fd = next;
        *created = made;
    }
    return fd;
fail:;
    int r = errno;
    struct stat st;
    bool link = fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
    close(fd);
    /* named as in @path: its prefix up to and with the component */
    return ty_error_set(err,
                        link ? ELOOP : r,
                        "cannot create directory '%s': '%.*s' %s",
                        path,
                        (int)(comp - p + strlen(comp)),
                        path,
                        link ? "is a symbolic link, which is not followed" : strerror(r));
}

bool ty_file_changed(const char *path, struct ty_file_stamp *stamp)
{
    struct stat sb;

    if (stat(path, &sb) < 0)
        return false;
    if (sb.st_size == stamp->size && (long long)sb.st_mtim.tv_sec == stamp->mtime_sec &&
        sb.st_mtim.tv_nsec == stamp->mtime_nsec)
        return false;
    stamp->size = sb.st_size;
    stamp->mtime_sec = (long long)sb.st_mtim.tv_sec;
    stamp->mtime_nsec = sb.st_mtim.tv_nsec;
    return true;
}

static struct rlimit nofile_original;
static bool nofile_raised;

int ty_nofile_raise(void)
{
    struct rlimit rl;

    if (nofile_raised)
        return 0;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return -errno;
    if (rl.rlim_cur == rl.rlim_max)
        return 0;
    nofile_original = rl;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
        return -errno;
    nofile_raised = true;
    return 0;
}

bool ty_nofile_original(struct rlimit *ret)
{
    if (nofile_raised)
        *ret = nofile_original;
    return nofile_raised;
}

int ty_open_dir_no_links(const char *path)
{
    struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                           .resolve = RESOLVE_NO_SYMLINKS};
    long fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));

    return fd < 0 ? -errno : (int)fd;
}
