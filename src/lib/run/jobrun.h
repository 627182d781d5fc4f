/* SPDX-License-Identifier: Apache-2.0
 * jobrun.h: one job run to its end, whatever kind it is: a plain job under one supervisor
 * (supervise.h), a hyperparameter-tuning job as a study of trials (study.h). The programs that
 * run jobs (`trainyard local train`, trainyard-supervisor) drive this and never ask which. */
#ifndef TY_JOBRUN_H
#define TY_JOBRUN_H

#include <jansson.h>
#include <stdbool.h>

#include "error.h"
#include "jobstate.h"
#include "loop.h"
#include "spec.h"
#include "study.h"
#include "supervise.h"

struct ty_jobrun_options {
    const struct ty_runtime_ops *runtime; /* runtime.h; the programs pick it (exec/runtimes.h) */
    const char *state_dir; /* the job's own directory; a study makes trials/<trial>/ in it */
    /* grace_usec, env, log, on_log, on_queued, on_progress, on_outcome, first_attempt, gpus
     * (what the job was given: a tuning job runs at most gpus->trials trials at once, each on
     * its slot's GPUs), wait_deadline_usec (scheduling.maxWaitTime: the job's) and admitted;
     * their ctx is `ctx` below (on_state and ctx here are ignored). A tuning job's trials each
     * have their own attempts: their changes come as on_trial; on_outcome is a plain job's
     * only. */
    struct ty_supervisor_options sup;
    /* The job's state changes (QUEUED -> PREPARING -> RUNNING -> final; CANCELLING). */
    void (*on_state)(void *ctx, enum ty_job_state state);
    /* A tuning job's trial started or ended: its trainingOutput changed. Optional. */
    void (*on_trial)(void *ctx, const struct ty_study_trial *trial);
    /* Called before each wait of the run's loop and once when the run has ended: a caller
     * that keeps a record of the changes above writes it here, once for every change that
     * came in the same turn (a launch's PREPARING and RUNNING). Optional. */
    void (*before_wait)(void *ctx);
    /* resumePreviousJobId: the earlier job's REST Job JSON and the jobs it resumed in turn
     * (borrowed; see study.h). */
    const json_t *previous_job;
    const json_t *earlier_jobs;
    uint64_t after_trial; /* a study's trials are numbered after it (study.h) */
    void *ctx;
};

struct ty_jobrun;

/* Create the run of @job (which must outlive it) on @loop: a study when the job has
 * hyperparameters, else one supervisor. Returns 0 and *ret, or the errors of ty_study_new and
 * ty_supervisor_new. */
int ty_jobrun_new(struct ty_loop *loop,
                  const struct ty_job *job,
                  const struct ty_jobrun_options *opts,
                  struct ty_jobrun **ret,
                  struct ty_error *err);

/* Start, then run @loop until the run has ended. Returns 0 (the outcome is
 * ty_jobrun_state), or -errno when the runner itself failed (the loop, the study's state
 * directory), with err. */
int ty_jobrun_run(struct ty_jobrun *jr, struct ty_error *err);

/* Cancel (idempotent; a second request kills the replicas at once). From the loop only. */
void ty_jobrun_cancel(struct ty_jobrun *jr);

/* Cancel once for every byte that can be read from @fd (a signal pipe, sigpipe.h), watched
 * on the run's loop until the run is freed. Returns 0 or -errno. */
int ty_jobrun_cancel_on(struct ty_jobrun *jr, int fd);

/* The state now, and errorMessage of a FAILED or CANCELLED run ("" otherwise). */
enum ty_job_state ty_jobrun_state(const struct ty_jobrun *jr);
const char *ty_jobrun_error(const struct ty_jobrun *jr);

/* A tuning job's study (borrowed), or NULL for a plain job. */
const struct ty_study *ty_jobrun_study(const struct ty_jobrun *jr);

/* A tuning job's trainingOutput now (new reference), or NULL for a plain job. */
json_t *ty_jobrun_training_output(const struct ty_jobrun *jr);

/* A plain job's attempts and restarts now (ty_supervisor_attempt_status; new reference), or
 * NULL for a tuning job (each trial has its own, in trainingOutput.trials[].attemptStatus). */
json_t *ty_jobrun_attempt_status(const struct ty_jobrun *jr);

/* Free; a run that has not ended is cleaned up first (replicas killed). NULL-safe. */
void ty_jobrun_free(struct ty_jobrun *jr);

#endif
