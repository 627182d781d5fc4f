/* SPDX-License-Identifier: Apache-2.0
 * supervise-int.h: the supervisor's state, shared by supervise.c (the state machine) and
 * supervise-status.c (the attempt status and each replica's state, as the API shows them).
 * Not for other users: supervise.h is the interface. */
#ifndef TY_SUPERVISE_INT_H
#define TY_SUPERVISE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "restart.h"
#include "runtime.h"
#include "supervise.h"

/* Replicas launched in one go before the loop runs again (supervise.c, launch_batch). */
#define TY_LAUNCH_BATCH 32

struct rep_state {
    bool launched;              /* launched in this attempt */
    bool exited;                /* its last launch has ended */
    bool stopped;               /* ... while the run was stopping (its end was the teardown's) */
    struct ty_exit_status last; /* how its last launch ended (when `exited`), normalized */
    bool started;               /* its program started in this attempt (counted once) */
    bool restart_pending;       /* to be launched again by the restart timer */
    unsigned restarts;          /* restarts in place in this attempt */
    struct ty_exit_status restarted_after; /* the end that caused the last of them */
};

struct ty_supervisor {
    struct ty_loop *loop;
    const struct ty_job *job;
    const struct ty_runtime_ops *ops;
    struct ty_supervisor_options opts;
    struct ty_retry_policy policy;
    struct ty_cluster_plan *plan;
    struct ty_runtime *rt;
    struct ty_clusterenv *env;
    struct rep_state *reps;
    struct ty_replica_gpus *gpus; /* each replica's GPUs (ty_run_gpus_for_plan), or NULL */
    size_t running;               /* launched and not yet exited */
    size_t started;               /* replicas whose program has started in this attempt */
    unsigned attempt;             /* the attempt now (numbered from opts.first_attempt) */
    unsigned first_attempt;       /* opts.first_attempt, at least 1 */
    enum ty_job_state state;
    enum ty_job_state outcome; /* final state decided while stopping */
    bool stopping;             /* tearing down: for the end of the run, or for a retry */
    bool retrying;             /* the teardown in progress is for a new attempt */
    bool killed;               /* SIGKILL already sent */
    bool stopped_early;        /* ty_supervisor_stop_early */
    bool cleaning;             /* the runtime's cleanup goes on on the loop (`cleaned` follows) */
    bool ever_running;         /* the run reached RUNNING (the deadline is armed from then) */
    bool done;
    uint64_t grace_timer, deadline_timer, restart_timer, attempt_timer;
    uint64_t wait_timer;   /* scheduling.maxWaitTime, until the run is RUNNING */
    uint64_t launch_timer; /* launches the next batch of the attempt's replicas */
    size_t launch_next;    /* how many of the attempt's first launches are done */
    char error[2048];
};

/* The last attempt this run may go to (first_attempt + the policy's max_attempts - 1). */
unsigned ty_supervisor_last_attempt(const struct ty_supervisor *sup);

/* Create the local job directory @dir: with @no_links (the service) without following a
 * symbolic link anywhere on its path, else as mkdir -p. When the replicas run as @run_as (NULL:
 * as this process), a directory this call creates is given to that user, so that the program
 * can write its outputs there; one that existed is left as it is. The directory is opened
 * without following a symbolic link, so a link planted in its place is never given away.
 * *@made says whether this call created @dir. Returns 0 or -errno with err set. */
int ty_run_make_job_dir(
    const char *dir, const char *run_as, bool no_links, bool *made, struct ty_error *err);

#endif
