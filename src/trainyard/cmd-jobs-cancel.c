/* SPDX-License-Identifier: Apache-2.0
 * cmd-jobs-cancel.c: `trainyard jobs cancel JOB`: one POST .../jobs/JOB:cancel to
 * trainyardd, reported as gcloud does. */
#include <stdio.h>

#include "cli.h"
#include "jobs.h"
#include "json.h"
#include "macro.h"

#define PATH "jobs.cancel"

static const struct option cancel_options[] = {
    JOBS_GLOBAL_OPTIONS,
    {NULL, 0, NULL, 0},
};

static const char cancel_usage[] =
    "Usage: trainyard jobs cancel JOB [flags]\n"
    "\n"
    "Cancel a job: a queued one ends CANCELLED at once, a running one is stopped (its replicas\n"
    "get SIGTERM, then SIGKILL after the grace period). A job that has already ended stays as\n"
    "it is, and the command still succeeds. Prints 'Cancelled job [JOB].' on stderr. Exit 0,\n"
    "1 when the request fails (e.g. NOT_FOUND), 2 for usage errors.\n"
    "\n";

static int cancel(int argc, char **argv)
{
    static const char *const help[] = {cancel_usage, jobs_global_help, NULL};
    struct api_settings settings = {0};
    _cleanup_json_ json_t *reply = NULL;
    _cleanup_json_ json_t *body = json_object();
    const char *job_id;
    int first, rc;

    rc = jobs_parse_args(PATH, argc, argv, cancel_options, help, &settings, NULL, NULL, &first);
    if (rc >= 0)
        return rc;
    job_id = jobs_job_arg(PATH, argc, argv, first);
    if (!job_id)
        return TY_EXIT_USAGE;
    rc = jobs_job_call(PATH, &settings, "POST", job_id, ":cancel", body, &reply);
    if (rc >= 0)
        return rc;
    fprintf(stderr, "Cancelled job [%s].\n", job_id);
    return TY_EXIT_OK;
}

const struct cli_command cmd_jobs_cancel = {
    .path = "jobs cancel",
    .summary = "cancel a job",
    .run = cancel,
};
