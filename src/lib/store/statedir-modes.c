/* SPDX-License-Identifier: Apache-2.0
 * statedir-modes.c: bringing a state directory made by an earlier version to the modes of
 * statemode.h. Earlier versions made its directories 0755 and its files 0644, so that any
 * local user could list the jobs and read every project's logs and the store; a service
 * started on such a directory makes what they made private (statedir.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdutil.h"
#include "macro.h"
#include "statedir.h"
#include "statemode.h"
#include "store.h"

/* @name in @dfd, a directory (@dir) or a regular file, to @to when its mode is exactly @from
 * (what an earlier version made: any other mode is the operator's and is kept). Returns 1
 * when changed. */
static int fix_mode(int dfd, const char *name, bool dir, mode_t from, mode_t to)
{
    struct stat st;

    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
        !(dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode)) || (st.st_mode & 07777) != from)
        return 0;
    /* (a link put there since the fstatat is not followed either) */
    return fchmodat(dfd, name, to, AT_SYMLINK_NOFOLLOW) == 0 ? 1 : 0;
}

/* The subdirectory @name of @dfd, opened without following a link, or -1. */
static int open_sub(int dfd, const char *name)
{
    return openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* Calls @each(@dfd, name, @acc) for every entry of the directory @dfd but . and ..; the
 * sum of what it returns. @dfd stays open. */
static size_t each_entry(int dfd, size_t (*each)(int, const char *), size_t acc)
{
    int fd = dup(dfd);
    DIR *d = fd < 0 ? NULL : fdopendir(fd);
    struct dirent *de;

    if (!d) {
        if (fd >= 0)
            close(fd);
        return acc;
    }
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            acc += each(dfd, de->d_name);
    closedir(d);
    return acc;
}

/* A trial's metric directory in trials/. */
static size_t trial(int trials_fd, const char *name)
{
    return (size_t)fix_mode(trials_fd, name, true, 0755, TY_STATE_PRIVATE_DIR_MODE);
}

/* A job's directory in jobs/<project>/: itself, logs/, trials/ and its trials. */
static size_t job(int project_fd, const char *name)
{
    _cleanup_close_ int fd = -EBADF, tfd = -EBADF;
    size_t n = (size_t)fix_mode(project_fd, name, true, 0755, TY_STATE_DIR_MODE);

    if ((fd = open_sub(project_fd, name)) < 0)
        return n;
    n += (size_t)fix_mode(fd, "logs", true, 0755, TY_STATE_PRIVATE_DIR_MODE);
    n += (size_t)fix_mode(fd, "trials", true, 0755, TY_STATE_DIR_MODE);
    if ((tfd = open_sub(fd, "trials")) >= 0)
        n = each_entry(tfd, trial, n);
    return n;
}

/* A project's directory in jobs/ and its jobs. */
static size_t project(int jobs_fd, const char *name)
{
    _cleanup_close_ int fd = -EBADF;
    size_t n = (size_t)fix_mode(jobs_fd, name, true, 0755, TY_STATE_DIR_MODE);

    if ((fd = open_sub(jobs_fd, name)) < 0)
        return n;
    return each_entry(fd, job, n);
}

size_t ty_statedir_tighten(const char *state)
{
    static const char *const files[] = {TY_STORE_FILE,
                                        TY_STORE_FILE "-wal",
                                        TY_STORE_FILE "-shm",
                                        "trainyardd.log",
                                        "trainyardd.lock"};
    _cleanup_close_ int sfd = open(state, O_RDONLY | O_DIRECTORY | O_CLOEXEC), jfd = -EBADF;
    size_t n = 0;
    struct stat st;

    if (sfd < 0)
        return 0;
    for (size_t i = 0; i < TY_ARRAY_SIZE(files); i++)
        n += (size_t)fix_mode(sfd, files[i], false, 0644, TY_STATE_FILE_MODE);
    /* The walk, over every job, only while jobs/ is as an earlier version made it: jobs/ is
     * changed last, so a pass cut short is done again, and later starts cost a stat. */
    if (fstatat(sfd, "jobs", &st, AT_SYMLINK_NOFOLLOW) < 0 || (st.st_mode & 07777) != 0755)
        return n;
    if ((jfd = open_sub(sfd, "jobs")) >= 0)
        n = each_entry(jfd, project, n);
    n += (size_t)fix_mode(sfd, "jobs", true, 0755, TY_STATE_DIR_MODE);
    return n;
}
