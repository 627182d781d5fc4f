/* SPDX-License-Identifier: Apache-2.0
 * kvconf-edit.c: one setting of a "key = value" file changed, added or removed with the
 * other lines kept as they are, and the atomic replacement of the file (kvconf-edit.h). */
#include "kvconf-edit.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "fdutil.h"
#include "macro.h"

/* Whether the line @p (@len bytes, no newline) sets @key: blanks, the key, blanks, '='. */
static bool line_sets(const char *p, size_t len, const char *key)
{
    const char *end = p + len;
    size_t klen = strlen(key);

    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if ((size_t)(end - p) <= klen || strncmp(p, key, klen) != 0)
        return false;
    p += klen;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p < end && *p == '=';
}

/* One line of a text: where it starts, its length without and with its line ending. */
struct line {
    const char *p;
    size_t len;  /* without the newline */
    size_t full; /* with it */
};

/* The line at *@text into @l, *@text moved past it; false at the end. */
static bool next_line(const char **text, struct line *l)
{
    const char *nl;

    if (!**text)
        return false;
    l->p = *text;
    nl = strchr(l->p, '\n');
    l->len = nl ? (size_t)(nl - l->p) : strlen(l->p);
    l->full = l->len + (nl ? 1 : 0);
    if (l->len > 0 && l->p[l->len - 1] == '\r')
        l->len--;
    *text += l->full;
    return true;
}

static void put_setting(struct ty_buf *b, const char *key, const char *value)
{
    size_t n = strlen(value);
    bool quote = n == 0 || value[0] == '"' || value[0] == ' ' || value[0] == '\t' ||
                 value[n - 1] == ' ' || value[n - 1] == '\t';

    ty_buf_printf(b, "%s = ", key);
    if (!quote) {
        ty_buf_puts(b, value);
        return;
    }
    ty_buf_putc(b, '"');
    for (const char *p = value; *p; p++) {
        if (*p == '"' || *p == '\\')
            ty_buf_putc(b, '\\');
        ty_buf_putc(b, *p);
    }
    ty_buf_putc(b, '"');
}

int ty_kvconf_set(
    const char *text, const char *key, const char *value, char **ret, struct ty_error *err)
{
    struct ty_buf b = TY_BUF_INIT;
    const char *p = text;
    const char *last = NULL;
    struct line l;

    for (const unsigned char *c = (const unsigned char *)value; *c; c++)
        if ((*c < 0x20 && *c != '\t') || *c == 0x7f)
            return ty_error_set(
                err, EINVAL, "the value of '%s' contains a line break or control character", key);
    while (next_line(&p, &l))
        if (line_sets(l.p, l.len, key))
            last = l.p;
    p = text;
    while (next_line(&p, &l)) {
        if (l.p == last) {
            put_setting(&b, key, value);
            ty_buf_append(&b, l.p + l.len, l.full - l.len); /* its own line ending */
        } else if (!line_sets(l.p, l.len, key)) {
            ty_buf_append(&b, l.p, l.full);
        }
    }
    if (!last) {
        /* a new line ends as the file's first line does (CRLF in a file written on Windows) */
        const char *nl = strchr(text, '\n');
        const char *eol = nl && nl > text && nl[-1] == '\r' ? "\r\n" : "\n";
        if (b.len > 0 && ty_buf_str(&b)[b.len - 1] != '\n')
            ty_buf_puts(&b, eol);
        put_setting(&b, key, value);
        ty_buf_puts(&b, eol);
    }
    *ret = ty_buf_take(&b);
    return 0;
}

char *ty_kvconf_unset(const char *text, const char *key, bool *removed)
{
    struct ty_buf b = TY_BUF_INIT;
    const char *p = text;
    struct line l;

    *removed = false;
    while (next_line(&p, &l)) {
        if (line_sets(l.p, l.len, key))
            *removed = true;
        else
            ty_buf_append(&b, l.p, l.full);
    }
    return ty_buf_take(&b);
}

/* Symbolic links followed from one path before giving up (as the kernel's ELOOP). */
#define LINK_HOPS 40

/* @path with every symbolic link it names followed (each target relative to its link's
 * directory), to the file that is not a link: it need not exist. NULL (err set) for a loop. */
static char *follow_links(const char *path, struct ty_error *err)
{
    char *cur = xstrdup(path);

    for (int hop = 0; hop < LINK_HOPS; hop++) {
        char target[PATH_MAX];
        ssize_t n = readlink(cur, target, sizeof(target) - 1);
        const char *slash;
        char *next;

        if (n <= 0)
            return cur;
        target[n] = '\0';
        slash = strrchr(cur, '/');
        next = target[0] == '/' || !slash ? xstrdup(target)
                                          : xasprintf("%.*s/%s", (int)(slash - cur), cur, target);
        free(cur);
        cur = next;
    }
    ty_error_set(err, ELOOP, "%s: more than %d symbolic links in a row", path, LINK_HOPS);
    free(cur);
    return NULL;
}

/* The directory part of @path ("." when it has none), made if missing (mode 0700). */
static int make_parent(const char *path, char **ret, struct ty_error *err)
{
    char *dir = xstrdup(path), *slash = strrchr(dir, '/');
    int r = 0;

    if (!slash) {
        free(dir);
        dir = xstrdup(".");
    } else if (slash != dir) {
        *slash = '\0';
        r = ty_mkdir_p(dir, 0700, err);
    } else {
        slash[1] = '\0';
    }
    if (r < 0)
        free(dir);
    else
        *ret = dir;
    return r;
}

int ty_file_lock_dir(const char *path, struct ty_error *err)
{
    _cleanup_free_ char *real = follow_links(path, err), *dir = NULL;
    int fd, r;

    if (!real)
        return -ELOOP;
    if ((r = make_parent(real, &dir, err)) < 0)
        return r;
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return ty_error_set(err, errno, "cannot open %s: %s", dir, strerror(errno));
    while (flock(fd, LOCK_EX) < 0)
        if (errno != EINTR) {
            r = -errno;
            close(fd);
            return ty_error_set(err, -r, "cannot lock %s: %s", dir, strerror(-r));
        }
    return fd;
}

int ty_write_file_atomic(const char *path, const char *text, mode_t mode, struct ty_error *err)
{
    _cleanup_free_ char *real = follow_links(path, err), *tmp = NULL, *dir = NULL;
    struct stat st;
    int fd, r;

    if (!real)
        return -ELOOP;
    /* only a file is replaced: TRAINYARD_CONFIG=/dev/null must not turn root's /dev/null
     * into a file */
    if (lstat(real, &st) == 0 && !S_ISREG(st.st_mode))
        return ty_error_set(err, EINVAL, "%s is not a regular file: refusing to replace it", real);
    if ((r = make_parent(real, &dir, err)) < 0)
        return r;
    tmp = xasprintf("%s.XXXXXX", real);
    fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return ty_error_set(
            err, errno, "cannot create a file beside %s: %s", real, strerror(errno));
    r = fchmod(fd, mode) < 0 ? -errno : 0;
    if (r >= 0)
        r = ty_write_all(fd, text, strlen(text));
    if (r >= 0 && fsync(fd) < 0)
        r = -errno;
    if (close(fd) < 0 && r >= 0)
        r = -errno;
    if (r >= 0 && rename(tmp, real) < 0)
        r = -errno;
    if (r < 0) {
        (void)unlink(tmp);
        return ty_error_set(err, -r, "cannot write %s: %s", real, strerror(-r));
    }
    return 0;
}
