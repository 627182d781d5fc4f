/* SPDX-License-Identifier: Apache-2.0
 * scheduler.h: the service's scheduler: which queued jobs start now, in what order, and why the
 * others wait (docs/service.md#scheduling has the rules for users).
 *
 * - Gang admission: a job starts only when everything it needs at once fits (its replicas'
 *   vCPUs, memory and GPUs, a running-job slot); it is never started in part. GPUs are
 *   device numbers, each given to one replica only.
 * - Order: higher scheduling.priority first, then creation (seq).
 * - Backfill (EASY): the first job in that order that does not fit (the head) gets a
 *   reservation: the time its resources will be free, judged from the running jobs' start
 *   plus maxRunningTime (7 days when unset). A later job may start ahead of it only if it
 *   fits now and either ends (by its own maxRunningTime) before that time, or takes only what
 *   will be left over at that time beyond the head's needs. So a stream of small jobs never
 *   delays the head.
 * - Per-project limits: a job whose project would hold more than its limit waits; it does
 *   not become the head (the room is not its project's to reserve).
 * - A tuning job needs one trial to fit; it is given as many trials at once as fit, up to
 *   maxParallelTrials.
 * - maxWaitTime: a job still queued at its deadline leaves the queue (the caller cancels it).
 *
 * Knows nothing of HTTP, the store or the clock (time is an argument), so any caller (the
 * service, a later runtime) can ask it. Thread-safe: one mutex inside; every function may be
 * called from any thread. */
#ifndef TY_SCHEDULER_H
#define TY_SCHEDULER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "resources.h"

/* Assumed running time of a job without scheduling.maxRunningTime: ml v1's default. */
#define TY_SCHED_DEFAULT_RUNNING_USEC (7 * 24 * 3600 * INT64_C(1000000))

struct ty_sched;

/* A scheduler with @capacity (TY_RES_UNLIMITED where not counted; v[TY_RES_JOBS] is
 * --max-running-jobs) whose GPUs are the devices 0..@ndev-1 of types @dev_type (a
 * ty_gpu_type index; -1: not offered); the GPU dimensions of @capacity are ignored and
 * counted from the devices (no devices: no GPUs). Returns the scheduler (never NULL). */
struct ty_sched *
ty_sched_new(const struct ty_resources *capacity, const int *dev_type, size_t ndev);
/* NULL-safe. */
void ty_sched_free(struct ty_sched *s);
/* The capacity as counted (GPUs from the devices). */
void ty_sched_capacity(const struct ty_sched *s, struct ty_resources *out);

/* Set @project's limit (TY_RES_UNLIMITED where not limited), replacing an earlier one. */
void ty_sched_set_limit(struct ty_sched *s, const char *project, const struct ty_resources *limit);
/* @project's limit into *@out; false (and *@out unlimited) when it has none. */
bool ty_sched_get_limit(const struct ty_sched *s, const char *project, struct ty_resources *out);

/* Mark device @dev as held (true) or not (false) by something outside this scheduler (a
 * `local train` of the same machine): it is not given to jobs while held. */
void ty_sched_set_device_busy(struct ty_sched *s, int dev, bool busy);

/* A queued job. */
struct ty_sched_job {
    int64_t seq;                /* identity and creation order (unique, increasing) */
    const char *project;        /* copied */
    const char *job_id;         /* copied; named in other jobs' reasons */
    int priority;               /* scheduling.priority, 0..1000 */
    int64_t create_usec;        /* epoch */
    int64_t max_running_usec;   /* scheduling.maxRunningTime; 0: TY_SCHED_DEFAULT_RUNNING_USEC */
    int64_t wait_deadline_usec; /* create + scheduling.maxWaitTime (epoch); 0: none */
    struct ty_demand demand;
};

/* Add @j to the queue. Returns 0, or -EEXIST when its seq is queued or holds resources. */
int ty_sched_enqueue(struct ty_sched *s, const struct ty_sched_job *j);
/* Take job @seq out of the queue (cancelled). True when it was queued. */
bool ty_sched_dequeue(struct ty_sched *s, int64_t seq);

/* Record that job @seq of @project holds @held and the GPU devices @gpus (@ngpus of them)
 * since @start_usec (epoch), expected to run for @max_running_usec (0: the default): a job
 * found running at start-up. Returns 0, or -EEXIST when @seq is queued or holds already. */
int ty_sched_hold(struct ty_sched *s,
                  int64_t seq,
                  const char *project,
                  const struct ty_resources *held,
                  const int *gpus,
                  size_t ngpus,
                  int64_t start_usec,
                  int64_t max_running_usec);
/* Job @seq holds nothing any more (it ended, or was never started): its resources are free.
 * True when it held any. */
bool ty_sched_release(struct ty_sched *s, int64_t seq);
/* Job @seq, admitted by a pass, could not be started after all: it releases what it holds
 * and goes back to the queue at its place. True when it was admitted by a pass (and not yet
 * released). */
bool ty_sched_unadmit(struct ty_sched *s, int64_t seq);

/* A job a pass admitted: it holds its resources until ty_sched_release or ty_sched_unadmit. */
struct ty_sched_admission {
    int64_t seq;
    int trials;               /* trials at once (1 without tuning) */
    struct ty_resources held; /* ty_demand_total(demand, trials) */
    int *gpus;                /* device numbers, trial slot by slot; within a slot role by
                               * role (master, worker, ps, evaluator), replica by replica,
                               * role_gpus[role] each; NULL when none */
    size_t ngpus;
    int64_t waited_usec; /* now - create_usec */
};
void ty_sched_admissions_free(struct ty_sched_admission *a, size_t n);

/* Decide at @now_usec (epoch). Jobs admitted leave the queue and hold their resources: *@adm
 * (caller frees with ty_sched_admissions_free; NULL when none). Jobs whose wait deadline has
 * passed leave the queue: their seqs in *@expired (caller frees; NULL when none). Every job
 * left waiting gets its position and reason. Returns 0. */
int ty_sched_pass(struct ty_sched *s,
                  int64_t now_usec,
                  struct ty_sched_admission **adm,
                  size_t *nadm,
                  int64_t **expired,
                  size_t *nexp);

/* Job @seq's jobPosition: 1 for the first in order, 0 when it is not queued. */
int64_t ty_sched_position(struct ty_sched *s, int64_t seq);
/* Why job @seq waits, in words, into @buf (cut at @len), as of the last pass, for example
 * "Waiting for 2 × NVIDIA_TESLA_T4: 1 of 2 free; 1 job ahead of it" or "Project vision is
 * at its limit of 8 vCPUs"; "Waiting to be scheduled" before a pass has seen it. False
 * (and @buf "") when it is not queued. */
bool ty_sched_reason(struct ty_sched *s, int64_t seq, char *buf, size_t len);
/* The earliest wait deadline of the queued jobs (epoch), 0 when none has one. */
int64_t ty_sched_next_deadline(struct ty_sched *s);

/* Upper bounds (seconds) of the waiting-time histogram's buckets; the last is +Inf. */
#define TY_SCHED_WAIT_BUCKETS 12
extern const double ty_sched_wait_bounds[TY_SCHED_WAIT_BUCKETS];

struct ty_sched_stats {
    size_t queued;                /* jobs in the queue */
    size_t holding;               /* jobs holding resources */
    struct ty_resources capacity; /* as counted (ty_sched_capacity) */
    struct ty_resources used;     /* held by jobs, every dimension counted */
    uint64_t admissions;          /* jobs admitted by passes since ty_sched_new */
    uint64_t expirations;         /* jobs whose wait deadline passed */
    /* Time from creation to admission of admitted jobs: counts per bucket (not cumulative;
     * bucket i holds waits <= ty_sched_wait_bounds[i] and > the bound before). */
    uint64_t wait_bucket[TY_SCHED_WAIT_BUCKETS];
    double wait_sum_s;
};
void ty_sched_stats(struct ty_sched *s, struct ty_sched_stats *st);

#endif
