/* SPDX-License-Identifier: Apache-2.0
 * scheduler.h: the service's scheduler: which queued jobs start now, in what order, and why the
 * others wait (docs/service.md#scheduling has the rules for users,
 * docs/internals/scheduler.md the design and the proof that backfill never delays the head).
 *
 * A pass (ty_sched_pass) at time now walks the queue in order and decides for each job:
 * - Expiry: a job whose wait deadline is <= now leaves the queue (the caller cancels it).
 * - Order: higher scheduling.priority first, then creation (seq ascending). The queue is kept
 *   in that order as jobs come and go (binary insertion), so a position is O(log n).
 * - Gang admission: a job starts only when ty_demand_total(demand, trials) fits at once in
 *   what is free now: capacity minus what the holders hold, GPUs counted per type over the
 *   devices that no holder lists and that are not marked busy (held outside the scheduler);
 *   and within its project's limit minus what the project holds. It is never started in
 *   part. A tuning job needs one trial to fit; it is given k trials, the most (<= its
 *   max_trials) that fit.
 * - GPU devices: an admitted job gets, for each GPU it needs, the lowest-numbered free
 *   device of the role's type, in the order of ty_sched_admission.gpus. No device is given
 *   to two holders.
 * - Never fits: a job whose one trial needs more than the capacity, or than its project's
 *   limit, waits (with that reason) and takes no part in the decision (the service refuses
 *   such jobs at create; this covers a capacity or limit lowered since).
 * - Project limits: a job that does not fit its project's room waits with that reason and is
 *   passed over: it never becomes the head (the room is not its project's to reserve).
 * - EASY backfill: the first job in order that does not fit now (for capacity, not its
 *   project) is the head. It gets a reservation T: the holders are taken to end in order of
 *   expected end (the RUNNING start, else admission + the PREPARING allowance or the wait
 *   deadline if sooner, + max running time, TY_SCHED_DEFAULT_RUNNING_USEC when unset; one
 *   past its expected end counts as ending now; devices held outside the scheduler count as
 *   free now, their end being unknown) until the head's one trial fits: T is that end. The
 *   extra is what is free at T beyond the head's one trial, dimension by dimension. A later
 *   job starts only if it fits now and either ends by T (now + its PREPARING allowance + its
 *   max running time <= T) or
 *   its total fits in the extra (which it then takes); a job of the head's project must
 *   also leave the head's need in the project's room now. So no job behind the head delays
 *   it: the head starts by T (when the holders end by their max running time, as the
 *   supervisor makes them). Only jobs ahead of it in order can: a higher-priority job that
 *   arrives, or one that was waiting for its project. The running-job slots (capacity
 *   v[TY_RES_JOBS]) are a dimension like the others.
 * - Every job left waiting keeps its reason as numbers (what it waits for, need, free, the
 *   head's seq); ty_sched_reason puts them in words with the job's current position.
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

/* A job stopped at its maxRunningTime holds its resources until its teardown ends (the
 * grace period between SIGTERM and SIGKILL, and the runtime's cleanup): @usec (0 at first)
 * more, which the reservations and backfill count, so that a job let go ahead of the head by
 * ending before the head's time does end, resources freed, by then. */
void ty_sched_set_stop_usec(struct ty_sched *s, int64_t usec);
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
    /* The most its PREPARING may take, from admission to RUNNING (its runtime's own timeouts:
     * image pulls); 0: none counted. maxRunningTime counts from RUNNING (ml v1), so a job is
     * expected to end by its admission + this (or its wait deadline, if sooner) + its max
     * running time, until ty_sched_running says when it entered RUNNING. */
    int64_t prepare_usec;
    struct ty_demand demand;
};

/* Add @j to the queue (copied). Its demand is as ty_demand_of_job makes it: the trial's GPU
 * dimensions are the roles' (role_count × role_gpus of role_gpu_type), or all 0 for a job
 * given no devices (a Slurm job: a demand of one running-job slot only); max_trials < 1
 * counts as 1. Returns 0, -EEXIST when its seq is queued or holds resources, or -EINVAL
 * when the demand is not so (a negative amount, trial GPUs unlike the roles'). */
int ty_sched_enqueue(struct ty_sched *s, const struct ty_sched_job *j);
/* Take job @seq out of the queue (cancelled). True when it was queued. */
bool ty_sched_dequeue(struct ty_sched *s, int64_t seq);

/* Record that job @seq of @project holds @held and the GPU devices @gpus (@ngpus of them)
 * since @start_usec (epoch), expected to run for @max_running_usec (0: the default) after at
 * most @prepare_usec of PREPARING (0 for one that is RUNNING since @start_usec): a job found
 * running at start-up. Device numbers that are not devices of the scheduler are kept
 * but count for nothing; a device two holders list stays taken until both release it
 * (records from before a restart are believed, not refused). Negative amounts count as 0.
 * Returns 0, or -EEXIST when @seq is queued or holds already. */
int ty_sched_hold(struct ty_sched *s,
                  int64_t seq,
                  const char *project,
                  const struct ty_resources *held,
                  const int *gpus,
                  size_t ngpus,
                  int64_t start_usec,
                  int64_t max_running_usec,
                  int64_t prepare_usec);
/* Holder @seq entered RUNNING at @running_usec (epoch): its expected end counts from then, its
 * PREPARING allowance spent. No-op unless @seq holds and was not told so yet. Returns whether
 * it was taken. */
bool ty_sched_running(struct ty_sched *s, int64_t seq, int64_t running_usec);
/* Holder @seq, not known to have entered RUNNING, prepares again from @now_usec (a new
 * supervisor after the one before was lost): its PREPARING allowance starts over. No-op
 * otherwise. */
void ty_sched_prepare_again(struct ty_sched *s, int64_t seq, int64_t now_usec);
/* Job @seq holds nothing any more (it ended, or was never started): its resources are free.
 * True when it held any. */
bool ty_sched_release(struct ty_sched *s, int64_t seq);
/* Job @seq, admitted by a pass, could not be started after all: it releases what it holds
 * and goes back to the queue at its place (its reason "Waiting to be scheduled" until the
 * next pass). True when it was admitted by a pass (and not yet released). */
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

/* Decide at @now_usec (epoch), by the rules at the top. Jobs admitted leave the queue and
 * hold their resources since @now_usec: *@adm, in queue order (caller frees with
 * ty_sched_admissions_free; NULL when none). Jobs whose wait deadline is <= @now_usec leave
 * the queue: their seqs in *@expired (caller frees; NULL when none). Every job left waiting
 * gets its reason. O(queued + holders log holders). Returns 0. */
int ty_sched_pass(struct ty_sched *s,
                  int64_t now_usec,
                  struct ty_sched_admission **adm,
                  size_t *nadm,
                  int64_t **expired,
                  size_t *nexp);

/* Job @seq's jobPosition: 1 for the first in order, 0 when it is not queued. */
int64_t ty_sched_position(struct ty_sched *s, int64_t seq);

/* How many queued jobs the last pass found can never start as things are (their need above
 * the capacity or their project's limit). */
size_t ty_sched_never_count(struct ty_sched *s);
/* Why job @seq waits, in words, into @buf (cut at @len), as of the last pass, followed by
 * "; N job(s) ahead of it" from its current position when N > 0. The forms:
 *   "Waiting to be scheduled" (no pass has seen it)
 *   "Waiting for 2 × NVIDIA_TESLA_T4: 1 of 2 free" (+ " (1 held outside the service)"),
 *   "Waiting for 16 vCPUs: 8 of 32 free", "Waiting for 30.0 GiB of memory: 12.5 of 64.0 GiB
 *   free", "Waiting for a running-job slot: 4 of 4 in use" (a tuning job: "Waiting for 2 ×
 *   NVIDIA_TESLA_T4 for one trial: ...")
 *   "Project vision is at its limit of 8 vCPUs (it holds 8, the job needs 4)",
 *   "Project vision is at its limit of 2 running jobs (it runs 2)"
 *   "Waiting behind job big_1, which is ahead of it in the queue and waits for 4 ×
 *   NVIDIA_TESLA_T4: starting this one now would delay it"
 *   "The job needs 8 × NVIDIA_TESLA_T4 at once, more than this service has (4); it waits
 *   until the capacity grows", "Project vision has a limit of 8 vCPUs, less than the job
 *   needs at once (16 vCPUs); it waits until the limit is raised"
 * False (and @buf "") when it is not queued. */
bool ty_sched_reason(struct ty_sched *s, int64_t seq, char *buf, size_t len);
/* A counter of the changes that can alter what ty_sched_position and ty_sched_reason say of
 * any job: bumped by every enqueue, dequeue, hold, release, unadmit, set_limit and
 * set_device_busy that changed something, and by a pass that admitted or expired a job or
 * changed a waiting job's reason (a pass that decides the same as the one before does not
 * bump it). Lock-free (one atomic read): a caller that reads N, then asks for a job's
 * position and reason, may keep those as current for as long as the counter still reads N
 * (the service's jobs.get cache does). Starts at 0, only grows. */
uint64_t ty_sched_changes(const struct ty_sched *s);

/* The head of the last pass (the first job in order that did not fit now), and in
 * *@reserve_usec (may be NULL) its reservation T; 0 (and 0) when there was none or it is no
 * longer queued. For tests, metrics and debugging. */
int64_t ty_sched_head(struct ty_sched *s, int64_t *reserve_usec);
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
    uint64_t unadmissions;        /* admissions undone by ty_sched_unadmit (still counted in
                                   * admissions and the histogram: counters only grow) */
    /* Time from creation to admission of admitted jobs: counts per bucket (not cumulative;
     * bucket i holds waits <= ty_sched_wait_bounds[i] and > the bound before). */
    uint64_t wait_bucket[TY_SCHED_WAIT_BUCKETS];
    double wait_sum_s;
};
void ty_sched_stats(struct ty_sched *s, struct ty_sched_stats *st);

#endif
