/* SPDX-License-Identifier: Apache-2.0
 * plan.c: job -> cluster plan (see plan.h for the command semantics). */
#include "plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "strv.h"

int ty_plan_build(const struct ty_job *job,
                  const char *trial_id,
                  char *const *trial_args,
                  struct ty_cluster_plan **ret,
                  struct ty_error *err)
{
    struct ty_cluster_plan *plan = xcalloc(1, sizeof(*plan));
    int64_t total = ty_job_replica_count(job);
    size_t k = 0;

    plan->job = job;
    plan->trial_id = xstrdup(trial_id);
    plan->trial_args = trial_args ? ty_strv_copy(trial_args) : NULL;
    /* A trial's is JOBDIR/TRIAL, one '/' between them as os.path.join puts it (AI Platform's
     * launcher): "gs://b/out/" gives "gs://b/out/1", never "gs://b/out//1", another prefix. */
    if (job->job_dir && trial_id) {
        size_t n = strlen(job->job_dir);
        plan->job_dir =
            xasprintf("%s%s%s", job->job_dir, n && job->job_dir[n - 1] == '/' ? "" : "/", trial_id);
    } else if (job->job_dir) {
        plan->job_dir = xstrdup(job->job_dir);
    }
    plan->replicas = xcalloc((size_t)total, sizeof(struct ty_replica));
    plan->n_replicas = (size_t)total;

    for (int role = 0; role < TY_ROLE_MAX; role++) {
        const struct ty_role_spec *rs = &job->roles[role];
        char *const *base = rs->container_args ? rs->container_args : job->args;

        if (rs->count == 0)
            continue;
        plan->role_command[role] = ty_strv_copy(rs->container_command);
        if (base || plan->job_dir || trial_args) {
            char ***args = &plan->role_args[role];
            *args = xcalloc(1, sizeof(char *));
            ty_strv_extend(args, base);
            if (plan->job_dir)
                ty_strv_push_take(args, xasprintf("--job-dir=%s", plan->job_dir));
            ty_strv_extend(args, trial_args);
        }
        for (int64_t i = 0; i < rs->count; i++) {
            struct ty_replica *r = &plan->replicas[k++];

            r->role = (enum ty_role)role;
            r->index = (int)i;
            (void)snprintf(r->task_name,
                           sizeof(r->task_name),
                           "%s-replica-%d",
                           ty_role_name(r->role),
                           r->index);
            (void)snprintf(
                r->display_name, sizeof(r->display_name), "%s %d", ty_role_name(r->role), r->index);
            r->image = rs->image_uri;
            r->machine_type = rs->machine_type;
            r->accel = &rs->accel;
            r->command = plan->role_command[role];
            r->args = plan->role_args[role];
        }
    }
    (void)err;
    *ret = plan;
    return 0;
}

struct ty_cluster_plan *ty_plan_free(struct ty_cluster_plan *plan)
{
    if (!plan)
        return NULL;
    for (size_t i = 0; i < plan->n_replicas; i++) {
        free(plan->replicas[i].host);
        free(plan->replicas[i].ip);
    }
    for (int role = 0; role < TY_ROLE_MAX; role++) {
        ty_strv_free(plan->role_command[role]);
        ty_strv_free(plan->role_args[role]);
    }
    free(plan->replicas);
    free(plan->trial_id);
    ty_strv_free(plan->trial_args);
    free(plan->job_dir);
    free(plan->metric_dir);
    free(plan);
    return NULL;
}

struct ty_replica *ty_plan_find(struct ty_cluster_plan *plan, enum ty_role role, int index)
{
    for (size_t i = 0; i < plan->n_replicas; i++)
        if (plan->replicas[i].role == role && plan->replicas[i].index == index)
            return &plan->replicas[i];
    return NULL;
}

char **ty_replica_argv(const struct ty_replica *r)
{
    char **argv;
    if (!r->command)
        return NULL;
    argv = ty_strv_copy(r->command);
    ty_strv_extend(&argv, r->args);
    return argv;
}
