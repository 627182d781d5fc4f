/* SPDX-License-Identifier: Apache-2.0
 * cmd-jobs-cancel.c: `trainyard jobs cancel JOB`: one POST .../jobs/JOB:cancel to
 * trainyardd, reported as gcloud does (with --format, the service's reply printed, as gcloud
 * prints the API's empty response). */
#include <getopt.h>
#include <stdio.h>

#include "cli.h"
#include "format.h"
#include "jobs.h"
#include "json.h"
#include "macro.h"

#define PATH "jobs.cancel"

enum { O_FORMAT = 1 };

static const struct option cancel_options[] = {
    JOBS_GLOBAL_OPTIONS,
    {"format", required_argument, NULL, O_FORMAT},
    {NULL, 0, NULL, 0},
};

/* The verb's one flag of its own: --format. */
static int cancel_opt(void *ctx, int id, const char *arg)
{
    return id == O_FORMAT ? jobs_format_opt(PATH, arg, ctx) : -1;
}

static const char cancel_usage[] =
    "Usage: trainyard jobs cancel JOB [flags]\n"
    "\n"
    "Cancel a job: a queued one ends CANCELLED at once, a running one is stopped (its replicas\n"
    "get SIGTERM, then SIGKILL after the grace period). A job that has already ended stays as\n"
    "it is, and the command still succeeds. Prints 'Cancelled job [JOB].' on stderr. Exit 0,\n"
    "1 when the request fails (e.g. NOT_FOUND), 2 for usage errors.\n"
    "\n"
    "Flags:\n"
    "  --format=FORMAT   also print the service's reply (the empty object, {}, as gcloud\n"
    "                    prints the API's) in this format (json, yaml, ...: docs/cli.md)\n"
    "\n";

static int cancel(int argc, char **argv)
{
    static const char *const help[] = {cancel_usage, jobs_global_help, NULL};
    struct api_settings settings = {0};
    _cleanup_json_ json_t *reply = NULL;
    _cleanup_json_ json_t *body = json_object();
    struct ty_format *format = NULL;
    const char *job_id;
    int first, rc;

    rc = jobs_parse_args(
        PATH, argc, argv, cancel_options, help, &settings, cancel_opt, &format, &first);
    if (rc >= 0)
        goto out;
    job_id = jobs_job_arg(PATH, argc, argv, first);
    rc = TY_EXIT_USAGE;
    if (!job_id)
        goto out;
    rc = jobs_job_call(PATH, &settings, "POST", job_id, ":cancel", body, &reply);
    if (rc >= 0)
        goto out;
    rc = TY_EXIT_OK;
    if (format && jobs_print_job(PATH, reply ? reply : body, format, NULL) < 0)
        rc = TY_EXIT_USAGE;
    fflush(stdout);
    fprintf(stderr, "Cancelled job [%s].\n", job_id);
out:
    ty_format_free(format);
    return rc;
}

const struct cli_command cmd_jobs_cancel = {
    .path = "jobs cancel",
    .summary = "cancel a job",
    .run = cancel,
};
