/* SPDX-License-Identifier: Apache-2.0
 * admission.h: trainyardd's side of the scheduler (admit/scheduler.h): its settings and the
 * GPU devices (admit-conf.c), the check and the queueing of a job at create (admit-conf.c),
 * and, on the main thread, the scheduling pass that dispatch.c runs, what each admitted job
 * holds, and the recovery of that after a restart (admission.c). docs/service.md#scheduling
 * has the rules for users; docs/internals/service.md how dispatch drives the scheduler. */
#ifndef TYD_ADMISSION_H
#define TYD_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon.h"
#include "error.h"
#include "gpudev.h"
#include "resources.h"
#include "scheduler.h"
#include "spec.h"
#include "store.h"

/* One --project-limit. */
struct tyd_limit {
    char *project;
    struct ty_resources limit; /* TY_RES_UNLIMITED where not limited */
};

/* What an admitted job holds, as the main thread knows it. */
struct tyd_hold {
    int64_t seq;
    struct ty_grant grant;    /* trials at once and GPU device numbers, in the scheduler's
                               * order */
    struct ty_resources held; /* what the scheduler counts it for */
    bool pass_grant;          /* its supervisors get --grant (GPUs or a study; not Slurm) */
    bool pending;             /* admitted, its supervisor not started yet */
    unsigned watched;         /* its supervisors and sweepers that dispatch.c watches */
    bool relock_waits;        /* a new supervisor waits for a device another process took */
    bool running_known;       /* the scheduler was told when it entered RUNNING */
};

struct tyd_admit {
    /* settings (main.c; fixed once tyd_admit_start ran) */
    struct ty_resources capacity;  /* --capacity: unlimited where not given (no jobs=) */
    bool capacity_set;             /* --capacity was given */
    char *capacity_where;          /* where it was given, for errors ("--capacity") */
    struct ty_gpu_order gpu_order; /* its gpus=: the devices' types in the order written */
    bool stand_in;                 /* --gpu-devices=stand-in */
    bool passed;                   /* a scheduling pass ran (the first one logs never-fits) */
    struct tyd_limit *limits;      /* --project-limit, one per project */
    size_t nlimits;
    /* set up by tyd_admit_start */
    struct ty_gpu_inventory inv;
    /* the main thread's (admission.c): holds by seq, ascending */
    struct tyd_hold *holds;
    size_t nholds;
    int64_t *pending; /* admitted jobs whose supervisor is to start, in admission order */
    size_t npending;
    int64_t *expired; /* jobs past their wait deadline not yet recorded CANCELLED */
    size_t nexpired;
    uint64_t deadline_timer;   /* loop timer for the next wait deadline; 0: none */
    int64_t deadline_at;       /* its deadline (epoch) */
    int64_t running_refreshed; /* when the holders' RUNNING starts were last read (mono) */
    uint64_t running_epoch;    /* ... and the store's commit epoch then */
};

/* --- admit-conf.c: settings, start-up, create ------------------------------------------- */

struct tyd_admit *tyd_admit_new(void);
/* NULL-safe. */
void tyd_admit_free(struct tyd_admit *a);
/* --capacity=cpus=N,memory=SIZE,gpus=TYPE:N[+...] (keys given replace those of an earlier
 * one). Returns 0 or -EINVAL with err naming @where. */
int tyd_admit_set_capacity(struct tyd_admit *a,
                           const char *v,
                           const char *where,
                           struct ty_error *err);
/* --gpu-devices=nvidia|stand-in. */
int tyd_admit_set_devices(struct tyd_admit *a,
                          const char *v,
                          const char *where,
                          struct ty_error *err);
/* --project-limit=PROJECT:KEY=VALUE[,...] with the keys jobs, cpus, memory, gpus; a later one
 * for the same project replaces the earlier one. PROJECT follows the project id rule (it may
 * hold ':'; the limit starts after the ':' followed by a key and '='). */
int tyd_admit_add_limit(struct tyd_admit *a,
                        const char *v,
                        const char *where,
                        struct ty_error *err);

/* Start-up: find the GPU devices (stand-ins locked under STATE_DIR/stand-in-gpus), log
 * their notes and a line of the capacity, make d->sched (capacity, --max-running-jobs as its
 * jobs, the devices) and give it the project limits. Returns 0 or -errno with err naming the
 * setting. */
int tyd_admit_start(struct tyd *d, struct ty_error *err);

/* What a job of @runtime needs (@job validated): ty_demand_of_job, but a slurm job needs a
 * running-job slot only (Slurm schedules the rest). Pure. */
void tyd_admit_demand(const char *runtime, const struct ty_job *job, struct ty_demand *dem);
/* Can a job of @project that needs @dem ever run here: within the service's capacity and
 * within its project's limit? 0, or -1 with the reason in @why (the resource, what the job
 * needs, what the service or the project has, and the setting that says so). A slurm job's
 * demand always fits. Thread-safe. */
int tyd_admit_check(
    struct tyd *d, const char *project, const struct ty_demand *dem, char *why, size_t len);
/* Queue job @row (just stored QUEUED, or found so at start-up) of @job and @dem for the
 * scheduler: its priority, creation, maxRunningTime and wait deadline (createTime +
 * maxWaitTime). Thread-safe. */
void tyd_admit_enqueue(struct tyd *d,
                       const struct ty_job_row *row,
                       const struct ty_job *job,
                       const struct ty_demand *dem);
/* The job of a stored row (its trainingInput), for the demand of a job read back: 0 and *job,
 * or -EINVAL with err. */
int tyd_admit_row_job(const struct ty_job_row *row, struct ty_job **job, struct ty_error *err);

/* --- admission.c: the main thread's ---------------------------------------------------- */

/* One scheduling pass at ty_now_usec(): mark the GPU devices other processes hold as busy,
 * record the jobs that waited past their maxWaitTime as CANCELLED, lock the GPU devices of
 * the jobs admitted and start their supervisors (through tyd_dispatch_start; at most
 * TYD_START_BATCH a pass, the rest on the next), and arm a timer of @loop for the next wait
 * deadline. */
void tyd_admit_pass(struct tyd *d, struct tyd_dispatch *dp, struct ty_loop *loop);
/* Start-up: job @row, unfinished, was found in the store. A job a supervisor claimed, or
 * that waits for a new one after an internal error, holds what its recorded grant says; a
 * QUEUED one is queued. */
void tyd_admit_recover(struct tyd *d, const struct ty_job_row *row);
/* What job @row is now that its supervisor is gone (or found so): final, it holds nothing
 * more; back in the queue (QUEUED, unclaimed, never retried), it goes back to its place;
 * otherwise (it waits for a new supervisor) it keeps what it holds. */
void tyd_admit_after(struct tyd *d, const struct ty_job_row *row);
/* A supervisor or sweeper of job @seq is watched (@delta 1) or not any more (-1). */
void tyd_admit_watched(struct tyd *d, int64_t seq, int delta);
/* For a new supervisor of job @row after an internal error: lock the GPU devices it holds
 * again. 0 and *@fds (*@nfds of them, in grant order; caller closes) and *@grant (its --grant
 * JSON text or NULL; caller frees), or -EWOULDBLOCK when a device is held by another process
 * (nothing kept locked: try again on a later pass; the job's log says so, the first time), or
 * -errno. */
int tyd_admit_relock(
    struct tyd *d, const struct ty_job_row *row, int **fds, size_t *nfds, char **grant);
/* Whether a job holds something with no supervisor or sweeper watched and no start to come
 * (it waits for a new supervisor after an internal error, or it ended unseen). O(holds). */
bool tyd_admit_unsupervised(struct tyd *d);
/* Jobs held but with no supervisor, sweeper or start to come, other than @retry (the @nretry
 * seqs, ascending, that wait for a new supervisor): read them back and settle them with
 * tyd_admit_after (a retried job cancelled while it waited). Cheap when there are none. */
void tyd_admit_settle(struct tyd *d, const int64_t *retry, size_t nretry);

/* --- dispatch.c, for admission.c -------------------------------------------------------- */

/* Supervisors started in one pass at most: a burst of thousands of admitted jobs is started
 * over several passes, so the loop keeps watching the ones it has. */
#define TYD_START_BATCH 64

/* Start the supervisor of job @row with --grant=@grant (NULL: none) and the GPU locks @fds
 * (@nfds, inherited as fds 3, 4, ...; closed here in any case). 0 when started; 1 when the
 * job must not run (it was failed: --project-user/--allow-root-jobs say no); -1 when the
 * process could not be started (logged; try again later). */
int tyd_dispatch_start(struct tyd_dispatch *dp,
                       const struct ty_job_row *row,
                       const char *grant,
                       int *fds,
                       size_t nfds);

#endif
