/* SPDX-License-Identifier: Apache-2.0
 * jobstate.c: names and finality of job states (jobstate.h). */
#include "jobstate.h"

#include <string.h>

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

/* Is replica object @r in a state a run still in progress has? */
static bool replica_live(const json_t *r)
{
    const char *st = json_string_value(json_object_get(r, "state"));
    return st && (strcmp(st, "RUNNING") == 0 || strcmp(st, "RESTARTING") == 0);
}

size_t ty_attempt_status_settle(json_t *attempt_status)
{
    json_t *replicas = json_object_get(attempt_status, "replicas"), *r;
    size_t i, n = 0;

    json_array_foreach(replicas, i, r) if (replica_live(r))
    {
        json_object_set_new(r, "state", json_string("STOPPED"));
        n++;
    }
    return n;
}

bool ty_attempt_status_unsettled(const json_t *attempt_status)
{
    json_t *replicas = json_object_get(attempt_status, "replicas"), *r;
    size_t i;

    json_array_foreach(replicas, i, r) if (replica_live(r)) return true;
    return false;
}
