/* SPDX-License-Identifier: Apache-2.0
 * admit-conf.c: the scheduler's settings (--capacity, --gpu-devices, --project-limit), its
 * start-up (the GPU devices, the capacity, the project limits), and what a request thread
 * asks of it when a job is created: can the job ever run here (or is it refused as "never
 * fits"), and its place in the queue (admission.h). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission.h"
#include "alloc.h"
#include "gpudev.h"
#include "json.h"
#include "macro.h"
#include "route.h"
#include "strv.h"
#include "timeutil.h"

struct tyd_admit *tyd_admit_new(void)
{
    struct tyd_admit *a = xcalloc(1, sizeof(*a));
    ty_resources_unlimited(&a->capacity);
    return a;
}

void tyd_admit_free(struct tyd_admit *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->nlimits; i++)
        free(a->limits[i].project);
    free(a->limits);
    free(a->capacity_where);
    ty_gpu_order_release(&a->gpu_order);
    for (size_t i = 0; i < a->nholds; i++)
        ty_grant_release(&a->holds[i].grant);
    free(a->holds);
    free(a->pending);
    free(a->expired);
    ty_gpu_inventory_release(&a->inv);
    free(a);
}

/* Whether @r declares GPUs (any GPU dimension counted). */
static bool gpus_declared(const struct ty_resources *r)
{
    for (int i = 0; i < TY_GPU_NTYPES; i++)
        if (r->v[TY_RES_GPU0 + i] != TY_RES_UNLIMITED)
            return true;
    return false;
}

int tyd_admit_set_capacity(struct tyd_admit *a,
                           const char *v,
                           const char *where,
                           struct ty_error *err)
{
    int r = ty_resources_parse_ordered(v, false, where, &a->capacity, &a->gpu_order, err);
    if (r < 0)
        return r;
    a->capacity_set = true;
    free(a->capacity_where);
    a->capacity_where = xstrdup(where);
    return 0;
}

int tyd_admit_set_devices(struct tyd_admit *a,
                          const char *v,
                          const char *where,
                          struct ty_error *err)
{
    return ty_gpu_devices_parse(v, where, &a->stand_in, err);
}

/* Where the limit of "PROJECT:KEY=VALUE,..." starts: after the first ':' that is followed by
 * a lower-case key and '=' (a project id may hold ':' itself). NULL when there is none. */
static const char *limit_start(const char *v)
{
    for (const char *c = strchr(v, ':'); c; c = strchr(c + 1, ':')) {
        const char *k = c + 1;
        while (*k && islower((unsigned char)*k))
            k++;
        if (k > c + 1 && *k == '=')
            return c + 1;
    }
    return NULL;
}

int tyd_admit_add_limit(struct tyd_admit *a, const char *v, const char *where, struct ty_error *err)
{
    const char *text = limit_start(v);
    _cleanup_free_ char *project = NULL;
    struct ty_resources lim;
    int r;

    if (!text || text == v + 1)
        return ty_error_set(err,
                            EINVAL,
                            "%s: expected PROJECT:KEY=VALUE[,KEY=VALUE...] with the keys jobs, "
                            "cpus, memory and gpus, for example vision:jobs=2,gpus=NVIDIA_TESLA_"
                            "T4:2 (got '%s')",
                            where,
                            v);
    project = xstrndup(v, (size_t)(text - 1 - v));
    if (ty_validate_project_id(project, where, err) < 0)
        return -EINVAL;
    ty_resources_unlimited(&lim);
    r = ty_resources_parse(text, true, where, &lim, err);
    if (r < 0)
        return r;
    for (size_t i = 0; i < a->nlimits; i++)
        if (strcmp(a->limits[i].project, project) == 0) { /* a later one replaces */
            a->limits[i].limit = lim;
            return 0;
        }
    a->limits = xreallocarray(a->limits, a->nlimits + 1, sizeof(*a->limits));
    a->limits[a->nlimits++] = (struct tyd_limit){TAKE_PTR(project), lim};
    return 0;
}

/* The start-up line of the capacity: what is counted, and what is not. */
static void log_capacity(const struct tyd *d)
{
    struct ty_resources cap;
    char text[512], none[128] = "";
    size_t ngpus = 0;

    ty_sched_capacity(d->sched, &cap);
    for (int i = 0; i < TY_GPU_NTYPES; i++)
        ngpus += cap.v[TY_RES_GPU0 + i] > 0 ? (size_t)cap.v[TY_RES_GPU0 + i] : 0;
    ty_resources_format(&cap, text, sizeof(text));
    if (cap.v[TY_RES_JOBS] == TY_RES_UNLIMITED)
        (void)snprintf(none + strlen(none), sizeof(none) - strlen(none), ", running jobs");
    if (cap.v[TY_RES_CPUS] == TY_RES_UNLIMITED)
        (void)snprintf(none + strlen(none), sizeof(none) - strlen(none), ", CPUs");
    if (cap.v[TY_RES_MEMORY] == TY_RES_UNLIMITED)
        (void)snprintf(none + strlen(none), sizeof(none) - strlen(none), ", memory");
    tyd_log("capacity: %s%s%s%s",
            text,
            ngpus == 0               ? " (no GPU devices)"
            : d->admit->inv.stand_in ? " (stand-in GPUs)"
                                     : "",
            none[0] ? "; not counted: " : "",
            none[0] ? none + 2 : "");
    for (size_t i = 0; i < d->admit->nlimits; i++) {
        ty_resources_format(&d->admit->limits[i].limit, text, sizeof(text));
        tyd_log("project limit: %s: %s", d->admit->limits[i].project, text);
    }
}

int tyd_admit_start(struct tyd *d, struct ty_error *err)
{
    struct tyd_admit *a = d->admit;
    bool declared = gpus_declared(&a->capacity);
    _cleanup_free_ int *types = NULL;
    char **notes = NULL;
    struct ty_resources cap;
    int r;

    if (a->stand_in && !declared)
        return ty_error_set(err,
                            EINVAL,
                            "--gpu-devices=stand-in: no GPUs declared: give the stand-ins with "
                            "--capacity gpus=TYPE:N[+TYPE:N...]");
    r = ty_gpu_inventory_load(a->stand_in,
                              declared ? &a->capacity : NULL,
                              declared ? &a->gpu_order : NULL,
                              "/",
                              d->state_dir,
                              declared ? a->capacity_where : "--gpu-devices",
                              &a->inv,
                              &notes,
                              err);
    for (size_t i = 0; notes && notes[i]; i++)
        tyd_log("GPU devices: %s", notes[i]);
    ty_strv_free(notes);
    if (r < 0)
        return r;
    types = xcalloc(a->inv.n ? a->inv.n : 1, sizeof(*types));
    ty_gpu_inventory_types(&a->inv, types);
    cap = a->capacity;
    cap.v[TY_RES_JOBS] = d->max_running < 0 ? TY_RES_UNLIMITED : (int64_t)d->max_running;
    d->sched = ty_sched_new(&cap, types, a->inv.n);
    /* a job stopped at its maxRunningTime holds on through its grace period and cleanup */
    ty_sched_set_stop_usec(d->sched, d->grace_usec + TYD_TEARDOWN_USEC);
    for (size_t i = 0; i < a->nlimits; i++)
        ty_sched_set_limit(d->sched, a->limits[i].project, &a->limits[i].limit);
    log_capacity(d);
    return 0;
}

void tyd_admit_demand(const char *runtime, const struct ty_job *job, struct ty_demand *dem)
{
    if (runtime && strcmp(runtime, "slurm") == 0) {
        memset(dem, 0, sizeof(*dem));
        dem->trial.v[TY_RES_JOBS] = 1;
        dem->max_trials = 1;
        for (int i = 0; i < TY_ROLE_MAX; i++)
            dem->role_gpu_type[i] = -1;
        return;
    }
    ty_demand_of_job(job, dem);
}

int tyd_admit_check(
    struct tyd *d, const char *project, const struct ty_demand *dem, char *why, size_t len)
{
    struct ty_resources have, lim;
    char how[600], text[400], whose[200];
    int dim;

    /* A running-job slot is never "never": --max-running-jobs 0 (or a project's jobs=0)
     * holds jobs in the queue. */
    ty_sched_capacity(d->sched, &have);
    have.v[TY_RES_JOBS] = TY_RES_UNLIMITED;
    dim = ty_resources_short(&dem->trial, &have);
    if (dim >= 0) {
        if (dim >= TY_RES_GPU0 && !gpus_declared(&d->admit->capacity))
            (void)snprintf(how, sizeof(how), "the host's GPUs");
        else
            (void)snprintf(how,
                           sizeof(how),
                           "--capacity %s",
                           ty_resources_format(&d->admit->capacity, text, sizeof(text)));
        return ty_demand_check(dem, &have, "this service", how, why, len);
    }
    if (!ty_sched_get_limit(d->sched, project, &lim))
        return 0;
    (void)snprintf(how,
                   sizeof(how),
                   "--project-limit %s:%s",
                   project,
                   ty_resources_format(&lim, text, sizeof(text)));
    lim.v[TY_RES_JOBS] = TY_RES_UNLIMITED;
    (void)snprintf(whose, sizeof(whose), "project %s", project);
    return ty_demand_check(dem, &lim, whose, how, why, len);
}

void tyd_admit_enqueue(struct tyd *d,
                       const struct ty_job_row *row,
                       const struct ty_job *job,
                       const struct ty_demand *dem)
{
    const json_t *sched = json_object_get(job->training_input, "scheduling");
    const char *wait = ty_json_str(sched, "maxWaitTime");
    int64_t wait_usec = 0;
    struct ty_sched_job j = {
        .seq = row->seq,
        .project = row->project,
        .job_id = row->job_id,
        .priority = (int)json_integer_value(json_object_get(sched, "priority")),
        .create_usec = row->create_usec,
        .max_running_usec = job->max_running_usec,
        .prepare_usec = ty_runtime_prepare_usec(row->runtime, job),
        .demand = *dem,
    };

    int r;

    if (wait && ty_duration_parse(wait, &wait_usec, NULL) == 0 && wait_usec > 0)
        j.wait_deadline_usec = row->create_usec + wait_usec;
    r = ty_sched_enqueue(d->sched, &j);
    if (r < 0)
        tyd_log("job %s/%s: not queued: %s",
                row->project,
                row->job_id,
                r == -EEXIST ? "it is queued or holds already" : "its demand is refused");
}

int tyd_admit_row_job(const struct ty_job_row *row, struct ty_job **job, struct ty_error *err)
{
    _cleanup_json_ json_t *doc = json_pack("{s:s,s:O,s:O}",
                                           "jobId",
                                           row->job_id,
                                           "trainingInput",
                                           row->training_input,
                                           "labels",
                                           row->labels);
    if (!doc)
        return ty_error_set(err, EINVAL, "job %s: its stored document is incomplete", row->job_id);
    return ty_job_from_json(doc, job, err);
}
