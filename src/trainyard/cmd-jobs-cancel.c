/* SPDX-License-Identifier: Apache-2.0
 * cmd-jobs-cancel.c: `trainyard jobs cancel JOB`: a GET of the job (one that has already
 * ended is left alone, saying so), then one POST .../jobs/JOB:cancel to trainyardd, reported
 * as gcloud does (with --format, the service's reply printed, as gcloud
 * prints the API's empty response). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "api-client.h"
#include "cli.h"
#include "format.h"
#include "jobs.h"
#include "jobstate.h"
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
    "it is, and the command still succeeds. Prints 'Cancelled job [JOB].' on stderr, or, for\n"
    "a job that had already ended, 'Job [JOB] has already ended (STATE): nothing to cancel.'\n"
    "Exit 0, 1 when the request fails (e.g. NOT_FOUND), 2 for usage errors.\n"
    "\n"
    "Flags:\n"
    "  --format=FORMAT   also print the service's reply (the empty object, {}, as gcloud\n"
    "                    prints the API's) in this format (json, yaml, ...: docs/cli.md)\n"
    "\n";

/* The state of @job_id if the job has already ended (SUCCEEDED, FAILED, CANCELLED), else NULL:
 * not ended, or the GET failed (the cancel that follows then says why). */
static char *ended_state(struct api_client *c, const char *job_id)
{
    _cleanup_free_ char *p = api_jobs_path(c, job_id, NULL);
    _cleanup_json_ json_t *job = NULL;
    struct ty_error e = {0};
    const char *st;

    if (api_call(c, "GET", p, NULL, &job, &e) < 0)
        return NULL;
    st = ty_json_str(job, "state");
    for (enum ty_job_state s = TY_STATE_UNSPECIFIED; st && s <= TY_STATE_CANCELLED; s++)
        if (strcmp(st, ty_job_state_name(s)) == 0)
            return ty_job_state_is_final(s) ? xstrdup(st) : NULL;
    return NULL;
}

static int cancel(int argc, char **argv)
{
    static const char *const help[] = {cancel_usage, jobs_global_help, NULL};
    struct api_settings settings = {0};
    _cleanup_json_ json_t *reply = NULL;
    _cleanup_json_ json_t *body = json_object();
    _cleanup_free_ char *ended = NULL;
    struct ty_format *format = NULL;
    struct api_client *c = NULL;
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
    c = jobs_client(PATH, &settings);
    if (!c)
        goto out;
    ended = ended_state(c, job_id);
    if (!ended) {
        _cleanup_free_ char *p = api_jobs_path(c, job_id, ":cancel");
        struct ty_error e = {0};
        if (api_call(c, "POST", p, body, &reply, &e) < 0) {
            rc = jobs_fail(PATH, &e);
            goto out;
        }
    }
    rc = TY_EXIT_OK;
    if (format && jobs_print_job(PATH, reply ? reply : body, format, NULL) < 0)
        rc = TY_EXIT_USAGE;
    fflush(stdout);
    if (ended)
        fprintf(stderr, "Job [%s] has already ended (%s): nothing to cancel.\n", job_id, ended);
    else
        fprintf(stderr, "Cancelled job [%s].\n", job_id);
out:
    api_client_free(c);
    ty_format_free(format);
    return rc;
}

const struct cli_command cmd_jobs_cancel = {
    .path = "jobs cancel",
    .summary = "cancel a job",
    .run = cancel,
};
