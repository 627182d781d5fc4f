/* SPDX-License-Identifier: Apache-2.0
 * statedir.c: the state directory's location and per-job directories; a local run's lock and
 * the move aside of an earlier run that did not succeed. */
#include "statedir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "fdutil.h"
#include "json.h"
#include "macro.h"
#include "parse.h"
#include "spec.h"
#include "statemode.h"

char *ty_statedir_default(void)
{
    const char *v = getenv("TRAINYARD_HOME");
    if (v && *v)
        return xstrdup(v);
    v = getenv("XDG_STATE_HOME");
    if (v && *v)
        return xasprintf("%s/trainyard", v);
    v = getenv("HOME");
    if (v && *v)
        return xasprintf("%s/.local/state/trainyard", v);
    return NULL;
}

/* Whether @name (a project or job id, @what in the message) can be one component of a path
 * below the state directory: not empty, not "." or "..", no '/'. The service's and the CLI's
 * own rules are narrower; this keeps a name that slipped past them from leaving jobs/. */
static int check_component(const char *what, const char *name, struct ty_error *err)
{
    if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strchr(name, '/'))
        return ty_error_set(err,
                            EINVAL,
                            "invalid %s '%.64s' for a directory of the state: it must not be "
                            "empty, '.' or '..', or hold a '/'",
                            what,
                            name);
    return 0;
}

int ty_statedir_claim_job(const char *state,
                          const char *project,
                          const char *job_id,
                          char **ret_dir,
                          struct ty_error *err)
{
    _cleanup_free_ char *parent = NULL, *dir = NULL, *logs = NULL;
    int r;

    if ((r = check_component("project id", project, err)) < 0 ||
        (r = check_component("job id", job_id, err)) < 0)
        return r;
    parent = xasprintf("%s/jobs/%s", state, project);
    dir = xasprintf("%s/%s", parent, job_id);
    r = ty_mkdir_p_exact(parent, TY_STATE_DIR_MODE, err);
    if (r < 0)
        return r;
    if (mkdir(dir, TY_STATE_DIR_MODE) < 0) {
        if (errno == EEXIST)
            return ty_error_set(err,
                                EEXIST,
                                "job '%s' already exists (%s); choose another job id, or omit it "
                                "to get a generated one",
                                job_id,
                                dir);
        return ty_error_set(err, errno, "cannot create '%s': %s", dir, strerror(errno));
    }
    logs = xasprintf("%s/logs", dir);
    /* 0711 whatever the umask: a mapped user's trials are reached through it */
    if (chmod(dir, TY_STATE_DIR_MODE) < 0)
        r = ty_error_set(err, errno, "cannot set the mode of '%s': %s", dir, strerror(errno));
    else
        r = ty_mkdir_p(logs, TY_STATE_PRIVATE_DIR_MODE, err);
    if (r < 0) {
        /* Half a job directory is none: a full filesystem must not leave one behind. */
        (void)rmdir(dir);
        return r;
    }
    *ret_dir = TAKE_PTR(dir);
    return 0;
}

/* Does @dir hold nothing, or nothing but an empty logs/ (no link followed)? */
static bool holds_only_empty_logs(const char *dir)
{
    _cleanup_free_ char *logs = xasprintf("%s/logs", dir);
    const char *const where[] = {dir, logs};
    struct stat st;
    bool has_logs = lstat(logs, &st) == 0;

    if (has_logs && !S_ISDIR(st.st_mode))
        return false;
    for (size_t i = 0; i < (has_logs ? 2u : 1u); i++) {
        DIR *d = opendir(where[i]);
        struct dirent *de;
        bool other = false;
        if (!d)
            return false;
        while (!other && (de = readdir(d)))
            other = strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
                    (i == 1 || strcmp(de->d_name, "logs") != 0);
        closedir(d);
        if (other)
            return false;
    }
    return true;
}

int ty_statedir_claim_new_job(const char *state,
                              const char *project,
                              const char *job_id,
                              char **ret_dir,
                              bool *made,
                              struct ty_error *err)
{
    _cleanup_free_ char *dir = NULL, *logs = NULL;
    int r = ty_statedir_claim_job(state, project, job_id, ret_dir, err);

    *made = r == 0;
    if (r != -EEXIST)
        return r;
    dir = xasprintf("%s/jobs/%s/%s", state, project, job_id);
    if (!holds_only_empty_logs(dir))
        return r;
    /* one cut short before its logs/ was made gets it now */
    logs = xasprintf("%s/logs", dir);
    if ((r = ty_mkdir_p(logs, TY_STATE_PRIVATE_DIR_MODE, err)) < 0)
        return r;
    *ret_dir = TAKE_PTR(dir);
    return 0;
}

int ty_statedir_reopen_job(const char *state,
                           const char *project,
                           const char *job_id,
                           char **ret_dir,
                           struct ty_error *err)
{
    _cleanup_free_ char *dir = NULL, *logs = NULL;
    int r;

    if ((r = check_component("project id", project, err)) < 0 ||
        (r = check_component("job id", job_id, err)) < 0)
        return r;
    dir = xasprintf("%s/jobs/%s/%s", state, project, job_id);
    logs = xasprintf("%s/logs", dir);
    r = ty_mkdir_p(logs, TY_STATE_PRIVATE_DIR_MODE, err);
    if (r < 0)
        return r;
    *ret_dir = TAKE_PTR(dir);
    return 0;
}

int ty_statedir_run_active(const char *dir, pid_t *ret_pid)
{
    _cleanup_free_ char *path = xasprintf("%s/%s", dir, TY_STATEDIR_RUN_LOCK);
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET};
    char text[24] = "";
    ssize_t n;
    int64_t pid;

    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    /* F_OFD_GETLK tests without taking a lock: a reader never stands in a run's way. */
    if (fcntl(fd, F_OFD_GETLK, &fl) < 0)
        return -errno;
    if (fl.l_type == F_UNLCK)
        return 0;
    /* An open file description's lock names no process: the holder wrote its pid. */
    n = pread(fd, text, sizeof(text) - 1, 0);
    text[n > 0 ? n : 0] = '\0';
    text[strcspn(text, "\n")] = '\0';
    if (ret_pid)
        *ret_pid = ty_parse_int64(text, 1, INT32_MAX, &pid) == 0 ? (pid_t)pid : 0;
    return 1;
}

/* Undo a claim whose lock could not be taken: the empty logs/, the lock file, the directory
 * (a half-made run directory is none). */
static int rmdir_logs(const char *dir)
{
    _cleanup_free_ char *logs = xasprintf("%s/logs", dir);
    _cleanup_free_ char *lock = xasprintf("%s/%s", dir, TY_STATEDIR_RUN_LOCK);
    (void)rmdir(logs);
    (void)unlink(lock);
    return rmdir(dir);
}

/* Open and lock @dir/run.lock for this process, writing its pid. Returns the fd, or -EBUSY
 * when another process holds it, or -errno. */
static int lock_run(const char *dir, struct ty_error *err)
{
    _cleanup_free_ char *path = xasprintf("%s/%s", dir, TY_STATEDIR_RUN_LOCK);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    char pid[24];
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY, TY_STATE_FILE_MODE);

    if (fd < 0)
        return ty_error_set(err, errno, "cannot open '%s': %s", path, strerror(errno));
    /* An open file description lock: held by this descriptor (close-on-exec: never by a
     * replica), released when it is closed or the process ends, however it ends. */
    if (fcntl(fd, F_OFD_SETLK, &fl) < 0) {
        int e = errno;
        close(fd);
        if (e == EAGAIN || e == EACCES)
            return -EBUSY;
        return ty_error_set(err, e, "cannot lock '%s': %s", path, strerror(e));
    }
    (void)snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) < 0 || ty_write_all(fd, pid, strlen(pid)) < 0) {
        int e = errno;
        close(fd);
        return ty_error_set(err, e, "cannot write '%s': %s", path, strerror(e));
    }
    return fd;
}

int ty_statedir_run_name(const char *name, struct ty_error *err)
{
    const char *dot = name ? strrchr(name, '.') : NULL;
    _cleanup_free_ char *id = NULL;
    struct ty_error e = {0};
    int64_t n;

    if (!dot)
        return ty_validate_job_id(name, err);
    if (!dot[1] || strspn(dot + 1, "0123456789") != strlen(dot + 1)) {
        (void)ty_validate_job_id(name, &e);
        return ty_error_set(
            err, EINVAL, "%s; an earlier run kept aside is <jobId>.<N>", ty_error_msg(&e));
    }
    id = xstrndup(name, (size_t)(dot - name));
    if (ty_validate_job_id(id, &e) < 0)
        return ty_error_set(err,
                            EINVAL,
                            "'%s' is no earlier run kept aside (<jobId>.<N>): %s",
                            name,
                            ty_error_msg(&e));
    if (dot[1] == '0' || ty_parse_int64(dot + 1, 1, INT32_MAX, &n) < 0)
        return ty_error_set(err,
                            EINVAL,
                            "'%s' is no earlier run kept aside (<jobId>.<N>): N must be a number "
                            "from 1 to 2147483647, without leading zeros (got '%s')",
                            name,
                            dot + 1);
    return 1;
}

/* The state recorded in @dir/job.json ("" when there is no file), or NULL when it cannot be
 * read. Caller frees. */
static char *recorded_state(const char *dir)
{
    _cleanup_free_ char *path = xasprintf("%s/job.json", dir);
    _cleanup_free_ char *text = NULL;
    _cleanup_json_ json_t *j = NULL;
    size_t len = 0;
    int r = ty_read_file(path, 64 * 1024 * 1024, &text, &len, NULL);

    if (r == -ENOENT)
        return xstrdup("");
    if (r < 0 || ty_json_parse(text, len, &j, NULL) < 0 || !ty_json_str(j, "state"))
        return NULL;
    return xstrdup(ty_json_str(j, "state"));
}

/* The earlier run in @dir (locked by us through @lock_fd): moved aside to <dir>.<N> unless it
 * SUCCEEDED or its record cannot be read. Returns 0 with *ret_moved, or -errno with err. */
static int move_aside(const char *dir, const char *job_id, char **ret_moved, struct ty_error *err)
{
    _cleanup_free_ char *state = recorded_state(dir);

    if (!state)
        return ty_error_set(err,
                            EEXIST,
                            "job '%s' already exists (%s) and its job.json cannot be read; "
                            "choose another job id, or omit it to get a generated one",
                            job_id,
                            dir);
    if (strcmp(state, "SUCCEEDED") == 0)
        return ty_error_set(err,
                            EEXIST,
                            "job '%s' already exists and SUCCEEDED (%s); choose another job "
                            "id, or omit it to get a generated one",
                            job_id,
                            dir);
    for (int n = 1; n < 100000; n++) {
        _cleanup_free_ char *to = xasprintf("%s.%d", dir, n);
        /* rename() would replace an empty directory: look first (claims take turns). */
        if (access(to, F_OK) == 0)
            continue;
        if (rename(dir, to) < 0)
            return ty_error_set(err,
                                errno,
                                "cannot move the earlier run of job '%s' aside to '%s': %s",
                                job_id,
                                to,
                                strerror(errno));
        *ret_moved = TAKE_PTR(to);
        return 0;
    }
    return ty_error_set(err, EEXIST, "job '%s': too many earlier runs kept", job_id);
}

/* Under the claim lock: claim @dir (the earlier run moved aside when it may be, unless
 * @ret_moved is NULL: then only a new directory will do). */
static int claim_locked(
    const char *state, const char *job_id, const char *dir, char **ret_moved, struct ty_error *err)
{
    _cleanup_free_ char *made = NULL;
    int fd, r;

    r = ty_statedir_claim_job(state, "local", job_id, &made, err);
    if (r != -EEXIST || !ret_moved)
        return r;
    fd = lock_run(dir, err);
    if (fd == -EBUSY) {
        pid_t pid = 0;
        (void)ty_statedir_run_active(dir, &pid);
        return ty_error_set(err,
                            EEXIST,
                            "job '%s' is running (process %ld, %s); choose another job id, or "
                            "omit it to get a generated one",
                            job_id,
                            (long)pid,
                            dir);
    }
    if (fd < 0)
        return fd;
    r = move_aside(dir, job_id, ret_moved, err);
    close(fd);
    if (r < 0)
        return r;
    r = ty_statedir_claim_job(state, "local", job_id, &made, err);
    if (r < 0) {
        free(*ret_moved);
        *ret_moved = NULL;
    }
    return r;
}

int ty_statedir_claim_run(const char *state,
                          const char *job_id,
                          char **ret_dir,
                          int *ret_lock_fd,
                          char **ret_moved,
                          struct ty_error *err)
{
    _cleanup_free_ char *parent = NULL, *dir = NULL, *moved = NULL;
    _cleanup_close_ int pfd = -EBADF;
    int fd, r;

    if ((r = check_component("job id", job_id, err)) < 0)
        return r;
    parent = xasprintf("%s/jobs/local", state);
    dir = xasprintf("%s/%s", parent, job_id);
    r = ty_mkdir_p_exact(parent, TY_STATE_DIR_MODE, err);
    if (r < 0)
        return r;
    /* Claims take turns (a few system calls each): two runs of one id never both see the
     * earlier run as free, nor one a directory the other has made and not locked yet.
     * Readers take no lock (ty_statedir_run_active). */
    pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (pfd < 0)
        return ty_error_set(err, errno, "cannot open '%s': %s", parent, strerror(errno));
    while (flock(pfd, LOCK_EX) < 0)
        if (errno != EINTR)
            return ty_error_set(err, errno, "cannot lock '%s': %s", parent, strerror(errno));
    r = claim_locked(state, job_id, dir, ret_moved ? &moved : NULL, err);
    if (r < 0)
        return r;
    fd = lock_run(dir, err);
    if (fd < 0) {
        (void)rmdir_logs(dir);
        return fd == -EBUSY ? ty_error_set(err, EBUSY, "cannot lock '%s'", dir) : fd;
    }
    *ret_dir = TAKE_PTR(dir);
    *ret_lock_fd = fd;
    if (ret_moved)
        *ret_moved = TAKE_PTR(moved);
    return 0;
}
