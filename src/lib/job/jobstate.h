/* SPDX-License-Identifier: Apache-2.0
 * jobstate.h: a job's states, as the REST API names them (docs/lifecycle.md):
 * QUEUED -> PREPARING -> RUNNING -> SUCCEEDED | FAILED, and on cancel CANCELLING ->
 * CANCELLED. Kept apart from the supervisor so code that only reads states (the store, the
 * service) does not pull in the runtimes. */
#ifndef TY_JOBSTATE_H
#define TY_JOBSTATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

enum ty_job_state {
    TY_STATE_UNSPECIFIED,
    TY_STATE_QUEUED,
    TY_STATE_PREPARING,
    TY_STATE_RUNNING,
    TY_STATE_SUCCEEDED,
    TY_STATE_FAILED,
    TY_STATE_CANCELLING,
    TY_STATE_CANCELLED,
};

/* "QUEUED", "RUNNING", ... (the REST enum names). */
const char *ty_job_state_name(enum ty_job_state s);
/* True for SUCCEEDED, FAILED and CANCELLED. */
bool ty_job_state_is_final(enum ty_job_state s);

/* The replicas of a job's recorded attemptStatus (docs/service.md) as they are once the job
 * has ended: a replica still RUNNING or RESTARTING there (the job's supervisor was lost
 * before it recorded their ends, and the service or `local train`'s reader ended the job, its
 * processes killed) is STOPPED, ended by the job's teardown. Changes @attempt_status in
 * place (NULL or one without replicas is fine); returns how many replicas changed. */
size_t ty_attempt_status_settle(json_t *attempt_status);
/* Would ty_attempt_status_settle change @attempt_status? */
bool ty_attempt_status_unsettled(const json_t *attempt_status);

/* The same for a tuning job's trainingOutput once the job has ended: a trial still in a state
 * of a run in progress (its supervisor was lost before it recorded the trial's end) was
 * stopped unfinished, and reads CANCELLED (as a cancelled trial, it is run again by a study
 * that resumes the job: it did not fail), and the replicas of every trial are settled as
 * above. Changes @training_output in place (NULL is fine); returns how many trials and
 * replicas changed. */
size_t ty_training_output_settle(json_t *training_output);
/* Would ty_training_output_settle change @training_output? */
bool ty_training_output_unsettled(const json_t *training_output);

#endif
