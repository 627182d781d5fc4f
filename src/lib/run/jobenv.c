/* SPDX-License-Identifier: Apache-2.0
 * jobenv.c: the base environment of a service job's replicas and the check of its PATH
 * setting (jobenv.h). */
#include "jobenv.h"

#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "macro.h"
#include "runtime.h"
#include "strv.h"

int ty_job_path_check(const char *path, const char *where, struct ty_error *err)
{
    const char *p = path;

    if (!*path)
        return ty_error_set(
            err,
            EINVAL,
            "%s: empty (give directories separated by ':', such as " TY_JOB_PATH_DEFAULT ")",
            where);
    for (;;) {
        size_t n = strcspn(p, ":");
        if (n == 0 || p[0] != '/')
            return ty_error_set(err,
                                EINVAL,
                                "%s: '%.*s' is not an absolute directory (each entry of the "
                                "replicas' PATH must start with '/'; got '%s')",
                                where,
                                (int)n,
                                p,
                                path);
        if (!p[n])
            return 0;
        p += n + 1;
    }
}

char **ty_job_base_env(const char *path)
{
    static const char *const kept[] = {"TZ", TY_SWEEP_ENV};
    char **env = xcalloc(1, sizeof(char *));
    struct passwd pw, *res = NULL;
    char buf[4096];
    const char *lang = getenv("LANG");

    ty_strv_setenv(&env, "PATH", path);
    if (getpwuid_r(geteuid(), &pw, buf, sizeof(buf), &res) == 0 && res) {
        ty_strv_setenv(&env, "HOME", pw.pw_dir);
        ty_strv_setenv(&env, "USER", pw.pw_name);
        ty_strv_setenv(&env, "LOGNAME", pw.pw_name);
    } else {
        ty_strv_setenv(&env, "HOME", "/");
    }
    ty_strv_setenv(&env, "LANG", lang && *lang ? lang : "C.UTF-8");
    for (size_t i = 0; i < TY_ARRAY_SIZE(kept); i++) {
        const char *v = getenv(kept[i]);
        if (v && *v)
            ty_strv_setenv(&env, kept[i], v);
    }
    return env;
}
