/* SPDX-License-Identifier: Apache-2.0
 * jobdir.c: creating a run's local jobDir for its replicas (ty_run_make_job_dir). */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdutil.h"
#include "supervise-int.h"

int ty_run_make_job_dir(
    const char *dir, const char *run_as, bool no_links, bool *made, struct ty_error *err)
{
    struct passwd pw, *res = NULL;
    char buf[4096];
    struct stat st;
    bool existed, created = false;
    int fd = -1, r;

    *made = false;
    if (no_links) {
        fd = ty_mkdir_nofollow(dir, 0755, &created, err);
        if (fd < 0)
            return ty_error_prefix(err, fd, "jobDir");
        existed = !created;
    } else {
        existed = lstat(dir, &st) == 0;
        r = ty_mkdir_p(dir, 0755, err);
        if (r < 0)
            return r;
    }
    *made = !existed;
    if (!run_as || existed) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    if (getpwnam_r(run_as, &pw, buf, sizeof(buf), &res) != 0 || !res) {
        if (fd >= 0)
            close(fd);
        return ty_error_set(err, ENOENT, "jobDir %s: unknown user '%s'", dir, run_as);
    }
    if (fd < 0)
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fchown(fd, pw.pw_uid, pw.pw_gid) < 0) {
        r = -errno;
        if (fd >= 0)
            close(fd);
        return ty_error_set(
            err, -r, "jobDir %s: cannot give it to %s: %s", dir, run_as, strerror(-r));
    }
    close(fd);
    return 0;
}
