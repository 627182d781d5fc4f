/* SPDX-License-Identifier: Apache-2.0
 * jobstate.h: a job's states, as the REST API names them (docs/lifecycle.md):
 * QUEUED -> PREPARING -> RUNNING -> SUCCEEDED | FAILED, and on cancel CANCELLING ->
 * CANCELLED. Kept apart from the supervisor so code that only reads states (the store, the
 * service) does not pull in the runtimes. */
#ifndef TY_JOBSTATE_H
#define TY_JOBSTATE_H

#include <stdbool.h>

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

#endif
