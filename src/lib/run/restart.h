/* SPDX-License-Identifier: Apache-2.0
 * restart.h: what a replica's end means, and what the supervisor does about it: AI Platform's
 * restart and retry rules (docs/lifecycle.md, "Restarts and retries"). Pure functions: the
 * supervisor (supervise.c) keeps the counts and acts.
 *
 * Every end is classified; ends trainyard caused (teardown, cancel, maxRunningTime) never get
 * here: the supervisor ignores them. A transient end restarts the replica in place (at most
 * TY_MAX_RESTARTS times per replica per attempt) or retries the whole job as a new attempt (at
 * most TY_MAX_ATTEMPTS attempts); a permanent one fails the job at once. */
#ifndef TY_RESTART_H
#define TY_RESTART_H

#include <stdbool.h>
#include <stddef.h>

#include "plan.h"
#include "runtime.h"
#include "spec.h"

/* Restarts of one replica within one attempt, and attempts of one job (3 retries). */
#define TY_MAX_RESTARTS 5
#define TY_MAX_ATTEMPTS 4

enum ty_end_class {
    TY_END_SUCCESS,   /* exit 0 */
    TY_END_PERMANENT, /* exit 1-127 but 6 and 11; could not be started; out of memory */
    TY_END_CRASH,     /* exit 6, 11, 134, 139; killed by SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL */
    TY_END_INFRA,     /* killed by any other signal (from outside); the engine lost it */
    TY_END_NODE_LOST, /* its node or allocation is gone */
};

/* An exit status of 128+N (a shell, a container engine or srun reporting a program killed by
 * signal N) becomes "killed by signal N", except 134 and 139, which keep the service's wording
 * for a crashed custom container ("exited with a non-zero status of 139"). N must be a signal
 * (1 to SIGRTMAX); other statuses are left alone. */
void ty_exit_normalize(struct ty_exit_status *st);

/* The class of a (normalised) end. */
enum ty_end_class ty_end_classify(const struct ty_exit_status *st);

/* "success", "permanent", "crash", "infrastructure", "node lost" (for tests and logs). */
const char *ty_end_class_name(enum ty_end_class c);

/* A job's restart and retry options: scheduling.restartJobOnWorkerRestart and
 * scheduling.disableRetries (trainyard's extensions, documented in docs/lifecycle.md). */
struct ty_retry_policy {
    unsigned max_restarts;      /* per replica per attempt: TY_MAX_RESTARTS (disabled: 0) */
    unsigned max_attempts;      /* TY_MAX_ATTEMPTS (disabled: 1) */
    bool job_on_worker_restart; /* a restart in place becomes a job retry */
    bool disabled;              /* no restart, no retry: every failure fails the job */
};

/* The policy of @job. */
void ty_retry_policy_of(const struct ty_job *job, struct ty_retry_policy *p);

/* Does @training_input (a job's TrainingInput) set scheduling.disableRetries: no restart and no
 * retry of any kind, internal errors' included? */
bool ty_retries_disabled(const json_t *training_input);

enum ty_retry_action {
    TY_RETRY_NONE,    /* a success: nothing to restart (the master's decides the job) */
    TY_RETRY_FAIL,    /* the job fails with this end's description */
    TY_RETRY_RESTART, /* restart this replica in place */
    TY_RETRY_JOB,     /* stop everything; start the job again as a new attempt */
};

/* What to do about an end of class @c of a replica restarted @restarts times in this attempt,
 * in the run's attempt @attempt (1-based, counted from the run's first attempt). */
enum ty_retry_action ty_retry_decide(const struct ty_retry_policy *p,
                                     enum ty_end_class c,
                                     unsigned restarts,
                                     unsigned attempt);

/* How a replica ended, in the service's words, into @buf ("The replica worker 1 exited with a
 * non-zero status of 3."). */
void ty_describe_exit(const struct ty_replica *r,
                      const struct ty_exit_status *st,
                      char *buf,
                      size_t n);

/* The log line of a restart in place, the restart being number @k of @max: "The replica
 * worker 1 was killed by signal 9 (SIGKILL) from outside trainyard; restarting it (restart 1
 * of 5)." */
void ty_describe_restart(const struct ty_replica *r,
                         const struct ty_exit_status *st,
                         unsigned k,
                         unsigned max,
                         char *buf,
                         size_t n);

#endif
