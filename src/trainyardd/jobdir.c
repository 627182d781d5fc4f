/* SPDX-License-Identifier: Apache-2.0
 * jobdir.c: where a job of the service may write on this machine. A job's `jobDir` that is
 * not a URI (no "scheme://") is a directory of the machine: the supervisor creates it, the
 * container runtime bind-mounts it into every replica and the slurm task launcher creates it
 * on the nodes, each with the rights of whoever runs them (root when trainyardd is root).
 * Without a rule, any project's token could have a directory anywhere created, and with the
 * container runtime written to as root. So the service takes such a jobDir only inside the
 * directories its operator allows (--job-dir-root=DIR, repeatable; `job-dir-root = DIR` lines
 * in the config file), refusing the job at create otherwise. `trainyard local train` has no
 * such rule: a user runs their own job. (What a container job leaves there as root:
 * nosuid.c.) */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "daemon.h"
#include "fdutil.h"
#include "macro.h"
#include "spec.h"
#include "strv.h"

int tyd_jobdir_root_add(char ***roots, const char *dir, const char *where, struct ty_error *err)
{
    char real[PATH_MAX];
    _cleanup_free_ char *project = NULL;
    /* project ids may hold ':' but never '/': the first ":/" ends one */
    const char *colon = dir[0] != '/' ? strstr(dir, ":/") : NULL;
    struct stat st;
    int fd;

    if (colon) { /* PROJECT:DIR, the directory of one project's jobs */
        project = xstrndup(dir, (size_t)(colon - dir));
        if (ty_validate_project_id(project, where, err) < 0)
            return -EINVAL;
        dir = colon + 1;
    }
    if (dir[0] != '/')
        return ty_error_set(
            err, EINVAL, "%s: '%s' is not an absolute path (or PROJECT:/DIR)", where, dir);
    if (!realpath(dir, real) || stat(real, &st) < 0)
        return ty_error_set(err, errno, "%s: cannot use '%s': %s", where, dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return ty_error_set(err, ENOTDIR, "%s: '%s' is not a directory", where, dir);
    /* Checked at every start: a user who owns a directory on the way could otherwise make it
     * a link to /usr/bin before the next one, for jobs to write in as root. */
    if ((fd = ty_open_dir_no_links(dir)) == -ELOOP)
        return ty_error_set(err,
                            ELOOP,
                            "%s: '%s' has a symbolic link on its way, which is not followed "
                            "(one who can change it could send jobs anywhere); give the real "
                            "path, '%s'",
                            where,
                            dir,
                            real);
    if (fd >= 0)
        close(fd);
    if (strcmp(real, "/") == 0)
        return ty_error_set(
            err, EINVAL, "%s: '/' would let jobs write anywhere; name a directory for them", where);
    if (project) {
        _cleanup_free_ char *entry = xasprintf("%s:%s", project, real);
        ty_strv_push(roots, entry);
    } else {
        ty_strv_push(roots, real);
    }
    return 0;
}

/* A root entry's directory: "DIR", or "PROJECT:DIR" (one project's). */
static const char *root_dir(const char *entry)
{
    return entry[0] == '/' ? entry : strstr(entry, ":/") + 1;
}

/* May a job of @project (NULL: any) write below the root @entry? */
static bool root_for(const char *entry, const char *project)
{
    size_t n = (size_t)(root_dir(entry) - entry);
    return entry[0] == '/' || !project ||
           (n > 0 && strlen(project) == n - 1 && strncmp(entry, project, n - 1) == 0);
}

/* The roots @project may use, joined with ", ", or NULL when there are none. */
static char *join_roots(char *const *roots, const char *project)
{
    struct ty_buf b = {0};

    for (size_t i = 0; roots && roots[i]; i++) {
        if (!root_for(roots[i], project))
            continue;
        if (b.len)
            ty_buf_puts(&b, ", ");
        ty_buf_puts(&b, roots[i]);
    }
    return b.len ? ty_buf_take(&b) : NULL;
}

/* Is @path absolute and free of empty, "." and ".." components (and of a trailing '/')? */
static bool is_clean(const char *path)
{
    const char *p = path;

    if (p[0] != '/' || strlen(path) >= PATH_MAX)
        return false;
    while (*p == '/') {
        const char *c = p + 1;
        size_t n = strcspn(c, "/");
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return false;
        p = c + n;
    }
    return true;
}

/* Is @path below @root (not @root itself: a job there would write among the other jobs'
 * directories, and a container job would have them all mounted)? Both clean absolute paths. */
static bool is_below(const char *path, const char *root)
{
    size_t n = strlen(root);

    return strncmp(path, root, n) == 0 && path[n] == '/' && path[n + 1] != '\0';
}

/* The first of @roots that @project may use and @path is below, or NULL. */
static const char *root_of(char *const *roots, const char *project, const char *path)
{
    for (size_t i = 0; roots && roots[i]; i++)
        if (root_for(roots[i], project) && is_below(path, root_dir(roots[i])))
            return roots[i];
    return NULL;
}

/* Resolve the longest part of @path that exists (symbolic links followed) into @out, with the
 * part that does not exist yet appended as it is. Returns 0 or -errno. */
static int resolve_existing(const char *path, char out[PATH_MAX])
{
    char head[PATH_MAX];
    size_t cut = strlen(path);

    (void)snprintf(head, sizeof(head), "%s", path);
    for (;;) {
        if (realpath(head, out)) {
            size_t n = strlen(out);
            if (n + strlen(path + cut) >= PATH_MAX)
                return -ENAMETOOLONG;
            memcpy(out + n, path + cut, strlen(path + cut) + 1);
            return 0;
        }
        if (errno != ENOENT)
            return -errno;
        while (cut > 0 && path[cut - 1] != '/')
            cut--;
        if (cut <= 1)
            return -ENOENT; /* not even "/" resolves */
        cut--;
        head[cut] = '\0';
    }
}

/* The length of the first prefix of clean absolute @path that is a symbolic link (a dangling
 * one too), or 0 when none of its existing part is. */
static size_t link_on_way(const char *path)
{
    char head[PATH_MAX];
    struct stat st;

    (void)snprintf(head, sizeof(head), "%s", path);
    for (size_t i = 1;; i++) {
        if (head[i] != '/' && head[i] != '\0')
            continue;
        char c = head[i];
        head[i] = '\0';
        if (lstat(head, &st) < 0)
            return 0; /* the rest does not exist yet */
        if (S_ISLNK(st.st_mode))
            return i;
        if (!c)
            return 0;
        head[i] = c;
    }
}

int tyd_jobdir_check(
    char *const *roots, const char *project, const char *given, char *why, size_t whylen)
{
    char real[PATH_MAX];
    _cleanup_free_ char *allowed = NULL, *job_dir = NULL;
    size_t n;
    int r;

    if (!ty_job_dir_is_local(given))
        return 0;
    /* a trailing '/' names the same directory (the supervisor and the runtimes take it so) */
    job_dir = xstrdup(given);
    for (n = strlen(job_dir); n > 1 && job_dir[n - 1] == '/'; n--)
        job_dir[n - 1] = '\0';
    allowed = join_roots(roots, project);
    if (!allowed) {
        (void)snprintf(why,
                       whylen,
                       "trainingInput.jobDir: '%.512s' is a directory of this machine, and this "
                       "service takes one only inside a directory its operator allows "
                       "(--job-dir-root=DIR or PROJECT:DIR, job-dir-root = DIR in its config "
                       "file): it has none%s%s; use a URI such as gs://BUCKET/PATH",
                       job_dir,
                       project && roots && *roots ? " for project " : "",
                       project && roots && *roots ? project : "");
        return -1;
    }
    if (!is_clean(job_dir)) {
        (void)snprintf(why,
                       whylen,
                       "trainingInput.jobDir: '%.512s' must be an absolute path without empty, "
                       "'.' or '..' components, below a directory this service lets jobs "
                       "write to (--job-dir-root: %.512s)",
                       given,
                       allowed);
        return -1;
    }
    if (!root_of(roots, project, job_dir)) {
        (void)snprintf(why,
                       whylen,
                       "trainingInput.jobDir: '%.512s' is not below a directory this service "
                       "lets jobs write to (--job-dir-root: %.512s; a job writes in a "
                       "directory of its own inside one)",
                       given,
                       allowed);
        return -1;
    }
    r = resolve_existing(job_dir, real);
    if (r == 0 && (n = link_on_way(job_dir)) > 0) { /* the roots are real paths: a job's */
        (void)snprintf(why,
                       whylen,
                       "trainingInput.jobDir: '%.512s' has a symbolic link on its way, '%.*s', "
                       "which the service does not follow (--job-dir-root: %.512s)",
                       job_dir,
                       (int)n,
                       job_dir,
                       allowed);
        return -1;
    }
    if (r < 0 || !root_of(roots, project, real)) {
        (void)snprintf(why,
                       whylen,
                       "trainingInput.jobDir: '%.512s' %s (--job-dir-root: %.512s)",
                       job_dir,
                       r < 0 ? "cannot be resolved"
                             : "leads outside the allowed directories "
                               "through a symbolic link",
                       allowed);
        return -1;
    }
    return 0;
}

const char *tyd_jobdir_root_dir(const char *entry)
{
    return root_dir(entry);
}
