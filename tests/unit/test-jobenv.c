/* SPDX-License-Identifier: Apache-2.0
 * test-jobenv.c: the base environment of a service job's replicas (jobenv.c): exactly PATH,
 * HOME, USER, LOGNAME, LANG (this process's, else C.UTF-8), TZ and the sweep key when set,
 * nothing else of this process's environment; and the check of the job-path setting. */
#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobenv.h"
#include "macro.h"
#include "runtime.h"
#include "strv.h"
#include "tap.h"

int main(void)
{
    struct passwd *pw = getpwuid(geteuid());
    struct ty_error e = {0};
    char **env;

    setenv("TY_TEST_SECRET", "leak", 1);
    setenv("PATH", "/somewhere/else", 1);
    unsetenv("LANG");
    unsetenv("TZ");
    unsetenv(TY_SWEEP_ENV);
    env = ty_job_base_env("/opt/a/bin:/usr/bin");
    is_str(ty_strv_getenv(env, "PATH"), "/opt/a/bin:/usr/bin", "PATH is the setting's");
    is_str(ty_strv_getenv(env, "HOME"), pw ? pw->pw_dir : "/", "HOME of this user");
    is_str(ty_strv_getenv(env, "USER"), pw ? pw->pw_name : NULL, "USER of this user");
    is_str(ty_strv_getenv(env, "LANG"), "C.UTF-8", "LANG: C.UTF-8 when this process has none");
    ok(!ty_strv_getenv(env, "TZ"), "no TZ when this process has none");
    ok(!ty_strv_getenv(env, "TY_TEST_SECRET"), "nothing else of this process's environment");
    is_int(ty_strv_len(env), pw ? 5 : 3, "PATH, HOME, USER, LOGNAME, LANG: nothing more");
    ty_strv_free(env);

    setenv("LANG", "de_DE.UTF-8", 1);
    setenv("TZ", "Europe/Berlin", 1);
    setenv(TY_SWEEP_ENV, "k123", 1);
    env = ty_job_base_env(TY_JOB_PATH_DEFAULT);
    is_str(ty_strv_getenv(env, "LANG"), "de_DE.UTF-8", "LANG: this process's");
    is_str(ty_strv_getenv(env, "TZ"), "Europe/Berlin", "TZ: this process's");
    is_str(ty_strv_getenv(env, TY_SWEEP_ENV), "k123", "the sweep key is kept");
    ty_strv_free(env);

    is_int(ty_job_path_check(TY_JOB_PATH_DEFAULT, "--job-path", &e), 0, "the default is valid");
    is_int(ty_job_path_check("/a:b", "--job-path", &e), -EINVAL, "a relative entry is refused");
    like(e.msg, "--job-path: 'b' is not an absolute directory", "naming the setting and entry");
    is_int(ty_job_path_check("/a::/b", "x", &e), -EINVAL, "an empty entry is refused");
    is_int(ty_job_path_check("", "x", &e), -EINVAL, "an empty setting is refused");
    return done_testing();
}
