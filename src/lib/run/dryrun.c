/* SPDX-License-Identifier: Apache-2.0
 * dryrun.c: `--dry-run`: a job planned, prepared, placed and rendered by its runtime, without
 * launching anything (supervise.h, ty_supervisor_dry_run). */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "json.h"
#include "macro.h"
#include "runtime.h"
#include "strv.h"
#include "supervise.h"

static void noop_started(void *ctx, struct ty_replica *r)
{
}

static void
noop_output(void *ctx, struct ty_replica *r, enum ty_stream s, const char *line, size_t len)
{
}

static void noop_exited(void *ctx, struct ty_replica *r, const struct ty_exit_status *st)
{
}

static json_t *strv_json(char *const *v)
{
    json_t *a;
    if (!v)
        return json_null();
    a = json_array();
    for (size_t i = 0; v[i]; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

int ty_supervisor_dry_run(const struct ty_runtime_ops *runtime,
                          const struct ty_job *job,
                          const char *trial_id,
                          char *const *trial_args,
                          const struct ty_env_options *envopts,
                          json_t **ret,
                          struct ty_error *err)
{
    struct ty_runtime_events ev = {
        .started = noop_started, .output = noop_output, .exited = noop_exited};
    struct ty_loop *loop = ty_loop_new();
    struct ty_cluster_plan *plan = NULL;
    struct ty_runtime *rt = NULL;
    struct ty_clusterenv *ce = NULL;
    json_t *out = NULL;
    int r;

    r = ty_plan_build(job, trial_id, trial_args, &plan, err);
    if (r >= 0)
        r = ty_runtime_new(runtime, loop, &ev, &rt, err);
    if (r >= 0) {
        ty_runtime_attach(rt, plan);
        rt->dry_run = true;
        r = rt->ops->prepare(rt, err);
    }
    if (r >= 0)
        r = rt->ops->place(rt, err);
    if (r >= 0)
        r = ty_clusterenv_new(plan, &ce, err);
    if (r >= 0) {
        out = json_array();
        for (size_t i = 0; i < plan->n_replicas && r >= 0; i++) {
            struct ty_replica *rep = &plan->replicas[i];
            _cleanup_strv_free_ char **env = xcalloc(1, sizeof(char *));
            json_t *o = json_object(), *envj = json_object();
            r = ty_clusterenv_render(ce, rep, envopts, &env, err);
            for (size_t k = 0; env[k]; k++) {
                char *eq = strchr(env[k], '=');
                _cleanup_free_ char *name = xstrndup(env[k], (size_t)(eq - env[k]));
                json_object_set_new(envj, name, json_string(eq + 1));
            }
            json_object_set_new(o, "taskName", json_string(rep->task_name));
            json_object_set_new(o, "role", json_string(ty_role_name(rep->role)));
            json_object_set_new(o, "index", json_integer(rep->index));
            json_object_set_new(o, "address", json_sprintf("%s:%d", rep->host, rep->port));
            json_object_set_new(o, "imageUri", json_string(rep->image));
            json_object_set_new(o, "machineType", json_string(rep->machine_type));
            json_object_set_new(o, "command", strv_json(rep->command));
            json_object_set_new(o, "args", strv_json(rep->args));
            json_object_set_new(o, "env", envj);
            json_array_append_new(out, o);
        }
    }
    ty_clusterenv_free(ce);
    /* destroy removes what a run created; a dry run created nothing. */
    ty_runtime_free(rt);
    ty_plan_free(plan);
    ty_loop_free(loop);
    if (r < 0) {
        json_decref(out);
        return r;
    }
    *ret = out;
    return 0;
}
