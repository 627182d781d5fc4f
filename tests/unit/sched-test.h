/* SPDX-License-Identifier: Apache-2.0
 * sched-test.h: small helpers the scheduler's tests share (test-scheduler.c,
 * test-scheduler-sim.c): demands of a given shape, enqueueing, one pass. Header-only. */
#ifndef TY_SCHED_TEST_H
#define TY_SCHED_TEST_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler.h"

#define SEC  INT64_C(1000000)
#define MIN  (60 * SEC)
#define HOUR (60 * MIN)
#define T4   4
#define K80  0

/* A demand of @cpus vCPUs and @mem MiB in all: a master with @mgpus GPUs of type @gtype and
 * @workers workers with @wgpus each (the trial's GPUs are the roles'). */
static inline struct ty_demand
dem(int64_t cpus, int64_t mem, int gtype, int mgpus, int64_t workers, int wgpus)
{
    struct ty_demand d;

    memset(&d, 0, sizeof(d));
    d.trial.v[TY_RES_JOBS] = 1;
    d.trial.v[TY_RES_CPUS] = cpus;
    d.trial.v[TY_RES_MEMORY] = mem;
    d.max_trials = 1;
    for (int r = 0; r < TY_ROLE_MAX; r++)
        d.role_gpu_type[r] = -1;
    d.role_count[TY_ROLE_MASTER] = 1;
    d.role_count[TY_ROLE_WORKER] = workers;
    if (mgpus > 0) {
        d.role_gpus[TY_ROLE_MASTER] = mgpus;
        d.role_gpu_type[TY_ROLE_MASTER] = gtype;
    }
    if (wgpus > 0 && workers > 0) {
        d.role_gpus[TY_ROLE_WORKER] = wgpus;
        d.role_gpu_type[TY_ROLE_WORKER] = gtype;
    }
    if (gtype >= 0)
        d.trial.v[TY_RES_GPU0 + gtype] = mgpus + workers * wgpus;
    return d;
}

static inline struct ty_demand cpus_only(int64_t cpus)
{
    return dem(cpus, 0, -1, 0, 0, 0);
}

/* Enqueue job @seq ("job_<seq>", or @id) of @project. */
static inline int enq_id(struct ty_sched *s,
                         int64_t seq,
                         const char *id,
                         const char *project,
                         int prio,
                         int64_t create,
                         int64_t maxrun,
                         int64_t deadline,
                         struct ty_demand d)
{
    char name[32];
    struct ty_sched_job j = {.seq = seq,
                             .project = project,
                             .job_id = id,
                             .priority = prio,
                             .create_usec = create,
                             .max_running_usec = maxrun,
                             .wait_deadline_usec = deadline,
                             .demand = d};
    if (!id) {
        (void)snprintf(name, sizeof(name), "job_%lld", (long long)seq);
        j.job_id = name;
    }
    return ty_sched_enqueue(s, &j);
}

static inline int enq(struct ty_sched *s,
                      int64_t seq,
                      const char *project,
                      int prio,
                      int64_t create,
                      int64_t maxrun,
                      struct ty_demand d)
{
    return enq_id(s, seq, NULL, project, prio, create, maxrun, 0, d);
}

/* One pass at @now: the admissions (caller frees), their count in *@n; expired dropped. */
static inline struct ty_sched_admission *pass_at(struct ty_sched *s, int64_t now, size_t *n)
{
    struct ty_sched_admission *a = NULL;
    int64_t *exp = NULL;
    size_t ne = 0;

    (void)ty_sched_pass(s, now, &a, n, &exp, &ne);
    free(exp);
    return a;
}

/* The admission of @seq in @a, or NULL. */
static inline const struct ty_sched_admission *
find_adm(const struct ty_sched_admission *a, size_t n, int64_t seq)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].seq == seq)
            return &a[i];
    return NULL;
}

/* Job @seq's reason in words (kept until the next call), or "(not queued)". */
static inline const char *reason(struct ty_sched *s, int64_t seq)
{
    static char buf[512];
    return ty_sched_reason(s, seq, buf, sizeof(buf)) ? buf : "(not queued)";
}

/* A capacity: everything unlimited but @jobs slots and @cpus vCPUs (< 0: unlimited). */
static inline struct ty_resources cap_of(int64_t jobs, int64_t cpus)
{
    struct ty_resources r;
    ty_resources_unlimited(&r);
    if (jobs >= 0)
        r.v[TY_RES_JOBS] = jobs;
    if (cpus >= 0)
        r.v[TY_RES_CPUS] = cpus;
    return r;
}

#endif
