/* SPDX-License-Identifier: Apache-2.0
 * jobenv.h: the environment a service job's replicas start from (docs/service.md, "The
 * replicas' environment"), instead of the daemon's: a fixed, documented set under the contract's
 * variables, with PATH from the service's --job-path setting (job-path in its config file). `local
 * train` keeps the user's own environment. */
#ifndef TY_JOBENV_H
#define TY_JOBENV_H

#include "error.h"

/* The default of the job_path setting: the usual system directories. */
#define TY_JOB_PATH_DEFAULT "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* The variable that carries the job_path setting from trainyardd to its supervisors. */
#define TY_JOB_PATH_ENV "TRAINYARD_JOB_PATH"

/* What names the setting in errors (a command not found on the PATH). */
#define TY_JOB_PATH_SETTING "trainyardd's --job-path setting"

/* Check a job_path value: directories separated by ':', each absolute (a relative one would
 * mean wherever the replica starts), none empty. Returns 0 or -EINVAL with err starting with
 * @where and naming the entry and the rule. */
int ty_job_path_check(const char *path, const char *where, struct ty_error *err);

/* The base environment of a service job's replicas (NAME=VALUE, NULL-terminated; caller frees
 * with ty_strv_free): PATH=@path; HOME, USER and LOGNAME of the user this process runs as (the
 * process runtime puts those of a --run-as user instead); LANG of this process, else C.UTF-8;
 * TZ only when this process has it; and TRAINYARD_SUPERVISOR_KEY when set (the
 * service's mark to find what a lost supervisor left, runtime.h TY_SWEEP_ENV). Nothing else of
 * this process's environment. */
char **ty_job_base_env(const char *path);

#endif
