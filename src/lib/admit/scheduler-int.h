/* SPDX-License-Identifier: Apache-2.0
 * scheduler-int.h: the scheduler's inside, shared by its files only: scheduler.c (the queue,
 * the index and the holders), scheduler-pass.c (one scheduling decision) and
 * scheduler-reason.c (a waiting job's reason in words). docs/internals/scheduler.md describes
 * the structures. Not for other callers: use scheduler.h. */
#ifndef TY_SCHEDULER_INT_H
#define TY_SCHEDULER_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "scheduler.h"

/* A project: its limit and what its jobs hold. Never freed before the scheduler. */
struct sched_proj {
    char *name;
    bool has_limit;
    struct ty_resources limit; /* TY_RES_UNLIMITED where not limited */
    struct ty_resources used;  /* held by its jobs, every dimension counted */
    struct ty_resources room;  /* during a pass: limit - used, at least 0 (has_limit) */
};

/* Why a queued job waits, as the last pass found it (formatted by scheduler-reason.c). */
enum sched_why {
    WHY_UNSEEN,         /* no pass has seen it yet */
    WHY_RESOURCE,       /* dim: need, avail free of total (aux: GPUs held outside; jobs running) */
    WHY_PROJECT,        /* its project is at its limit: need, limit (total), holds (aux) */
    WHY_PROJECT_NEVER,  /* its project's limit (total) is below its need */
    WHY_CAPACITY_NEVER, /* the capacity (total) is below its need */
    WHY_BEHIND_HEAD,    /* fits now, but would delay head_seq, which waits for dim: need */
};

struct sched_reason {
    uint8_t why; /* enum sched_why */
    uint8_t dim; /* enum ty_res_dim */
    int64_t need, avail, total, aux;
    int64_t head_seq;
};

enum sched_state { ST_QUEUED, ST_HOLDING };

struct sched_job {
    /* what a pass reads of every queued job: the first 3 cache lines (it prefetches them) */
    int64_t seq;
    int priority;
    int cap_short; /* the dimension where need1 exceeds the capacity, or -1 */
    int64_t wait_deadline_usec;
    struct sched_proj *proj;
    struct ty_resources need1;  /* ty_demand_total(demand, 1) */
    struct sched_reason reason; /* while queued */
    /* the rest */
    enum sched_state state;
    char *job_id;
    int64_t create_usec, max_running_usec;
    int64_t prepare_usec; /* the most its PREPARING may take (ty_sched_job.prepare_usec) */
    struct ty_demand demand;
    /* while holding */
    struct ty_resources held;
    int *gpus;
    size_t ngpus;
    int64_t start_usec;
    int64_t running_usec; /* when it entered RUNNING (ty_sched_running), if running */
    bool running;
    size_t hold_idx; /* place in ty_sched.holders */
    bool by_pass;    /* admitted by a pass (ty_sched_unadmit may undo it) */
};

/* seq -> job, open addressing with linear probing (backward-shift deletion). */
struct sched_index {
    struct sched_job **slot; /* NULL: empty */
    size_t cap;              /* a power of two, or 0 */
    size_t n;
};

struct ty_sched {
    pthread_mutex_t lock;
    struct ty_resources capacity; /* GPU dimensions: devices per type */
    struct ty_resources used;     /* sum of holders' held */
    int64_t stop_usec; /* what a holder holds past its maxRunningTime: ty_sched_set_stop_usec */
    int *dev_type;     /* per device: ty_gpu_type index, -1 not offered */
    int *dev_holds;    /* per device: holders that list it */
    bool *dev_busy;    /* per device: held outside the scheduler */
    size_t ndev;

    struct sched_job **queue; /* ordered: priority descending, then seq ascending */
    size_t nqueue, queue_cap;
    struct sched_job **holders; /* in no order */
    size_t nholders, holders_cap;
    struct sched_index index; /* queued and holding jobs */

    struct sched_proj **projects;
    size_t nprojects, projects_cap;

    int64_t next_deadline; /* cache of ty_sched_next_deadline; valid when deadline_ok */
    bool deadline_ok;

    int64_t head_seq, head_shadow; /* the last pass's head and its T; 0 when none */
    /* The last pass left a job that can never start as things are (WHY_*_NEVER) in the queue:
     * positions then count only the others (sched_queue_rank). */
    bool any_never;

    /* ty_sched_changes: bumped (under the lock, after the change) by every change that can
     * move a queued job's position or reason; read without the lock */
    _Atomic uint64_t changes;

    uint64_t admissions, expirations, unadmissions;
    uint64_t wait_bucket[TY_SCHED_WAIT_BUCKETS];
    double wait_sum_s;
};

/* The job of @seq (queued or holding), or NULL. */
struct sched_job *sched_index_get(const struct sched_index *ix, int64_t seq);
/* Whether @a comes before @b in the queue's order. */
static inline bool sched_before(const struct sched_job *a, const struct sched_job *b)
{
    return a->priority != b->priority ? a->priority > b->priority : a->seq < b->seq;
}
/* Does @j's reason say it can never start as things are (its need above the capacity, or
 * above its project's limit)? Such a job is passed over: it delays nobody. */
bool sched_reason_never(const struct sched_job *j);
/* How many queued jobs before @j (it is queued) can start, those that never can as things
 * are left out (as the last pass judged them) unless @j is one itself: its jobPosition less
 * one. O(log n), O(place) while such a job waits. */
size_t sched_queue_rank(const struct ty_sched *s, const struct sched_job *j);
/* Put @j (queued) into the queue at its place. */
void sched_queue_insert(struct ty_sched *s, struct sched_job *j);
/* Make @j (not in the queue) a holder of @held and the devices @gpus (taken) since @start. */
void sched_hold(struct ty_sched *s,
                struct sched_job *j,
                const struct ty_resources *held,
                int *gpus,
                size_t ngpus,
                int64_t start_usec);
/* Remove @j from the index and free it. */
void sched_job_drop(struct ty_sched *s, struct sched_job *j);
/* The latest job @j, started (admitted) at @since, enters RUNNING: after its PREPARING
 * allowance, or at its wait deadline when that is sooner (it is cancelled then); saturated. */
int64_t sched_running_from(const struct sched_job *j, int64_t since);
/* When job @j, holding, is expected to end: its RUNNING start (known, else
 * sched_running_from its start) + max running time, saturated. */
int64_t sched_expected_end(const struct sched_job *j);
/* @a + @b (@b >= 0), saturated at INT64_MAX. */
static inline int64_t sched_add_sat(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* Count a change of @s (ty_sched_changes); call with the lock held, after the change. */
static inline void sched_changed(struct ty_sched *s)
{
    atomic_fetch_add_explicit(&s->changes, 1, memory_order_release);
}

/* Format @r for job @j at position @pos (1-based) into @buf. */
void sched_reason_format(
    const struct ty_sched *s, const struct sched_job *j, int64_t pos, char *buf, size_t len);

#endif
