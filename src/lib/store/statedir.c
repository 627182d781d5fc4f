/* SPDX-License-Identifier: Apache-2.0
 * statedir.c: the state directory's location and per-job directories. */
#include "statedir.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "fdutil.h"
#include "macro.h"

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

int ty_statedir_claim_job(const char *state,
                          const char *project,
                          const char *job_id,
                          char **ret_dir,
                          struct ty_error *err)
{
    _cleanup_free_ char *parent = xasprintf("%s/jobs/%s", state, project);
    _cleanup_free_ char *dir = xasprintf("%s/%s", parent, job_id);
    _cleanup_free_ char *logs = NULL;
    int r;

    r = ty_mkdir_p(parent, 0755, err);
    if (r < 0)
        return r;
    if (mkdir(dir, 0755) < 0) {
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
    r = ty_mkdir_p(logs, 0755, err);
    if (r < 0) {
        /* Half a job directory is none: a full filesystem must not leave one behind. */
        (void)rmdir(dir);
        return r;
    }
    *ret_dir = TAKE_PTR(dir);
    return 0;
}

int ty_statedir_reopen_job(const char *state,
                           const char *project,
                           const char *job_id,
                           char **ret_dir,
                           struct ty_error *err)
{
    _cleanup_free_ char *dir = xasprintf("%s/jobs/%s/%s", state, project, job_id);
    _cleanup_free_ char *logs = xasprintf("%s/logs", dir);
    int r = ty_mkdir_p(logs, 0755, err);

    if (r < 0)
        return r;
    *ret_dir = TAKE_PTR(dir);
    return 0;
}
