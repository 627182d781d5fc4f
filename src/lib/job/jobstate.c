/* SPDX-License-Identifier: Apache-2.0
 * jobstate.c: names and finality of job states (jobstate.h). */
#include "jobstate.h"

#include "schema.h"

const char *ty_job_state_name(enum ty_job_state s)
{
    return s >= TY_STATE_UNSPECIFIED && s <= TY_STATE_CANCELLED ? ty_job_state_names[s]
                                                                : "STATE_UNSPECIFIED";
}

bool ty_job_state_is_final(enum ty_job_state s)
{
    return s == TY_STATE_SUCCEEDED || s == TY_STATE_FAILED || s == TY_STATE_CANCELLED;
}
