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

/* The replicas of @attempt_status in a state a run still in progress has (RUNNING,
 * RESTARTING), each made STOPPED when @stop. Returns how many. */
static size_t live_replicas(json_t *attempt_status, bool stop)
{
    json_t *replicas = json_object_get(attempt_status, "replicas");
    size_t n = 0;

    for (size_t i = 0; i < json_array_size(replicas); i++) {
        json_t *r = json_array_get(replicas, i);
        const char *st = json_string_value(json_object_get(r, "state"));
        if (!st || (strcmp(st, "RUNNING") != 0 && strcmp(st, "RESTARTING") != 0))
            continue;
        if (stop)
            json_object_set_new(r, "state", json_string("STOPPED"));
        n++;
    }
    return n;
}

size_t ty_attempt_status_settle(json_t *attempt_status)
{
    return live_replicas(attempt_status, true);
}

bool ty_attempt_status_unsettled(const json_t *attempt_status)
{
    return live_replicas((json_t *)attempt_status, false) > 0; /* @stop false: read only */
}

/* The trials of @training_output whose state a run in progress has (not final), each with its
 * replicas, made @final and STOPPED when @final is set. Returns how many trials and replicas
 * that touches. */
static size_t live_trials(json_t *training_output, const char *final)
{
    json_t *trials = json_object_get(training_output, "trials");
    size_t n = 0;

    for (size_t i = 0; i < json_array_size(trials); i++) {
        json_t *t = json_array_get(trials, i), *as = json_object_get(t, "attemptStatus");
        const char *st = json_string_value(json_object_get(t, "state"));
        bool live = st && strcmp(st, "SUCCEEDED") != 0 && strcmp(st, "FAILED") != 0 &&
                    strcmp(st, "CANCELLED") != 0;

        n += live + live_replicas(as, final != NULL);
        if (live && final)
            json_object_set_new(t, "state", json_string(final));
    }
    return n;
}

size_t ty_training_output_settle(json_t *training_output)
{
    return live_trials(training_output, "CANCELLED");
}

bool ty_training_output_unsettled(const json_t *training_output)
{
    return live_trials((json_t *)training_output, NULL) > 0;
}
