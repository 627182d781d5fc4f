/* SPDX-License-Identifier: Apache-2.0
 * cmd-jobs-stream-logs.c: `trainyard jobs stream-logs JOB`: the verb's flags and the call of
 * jobs_stream_logs (jobs-logs.c, shared with `jobs submit training --stream-logs`), or with
 * --local of jobs_local_stream_logs (a `local train` run's files). */
#include <stdio.h>

#include "cli.h"
#include "jobs-local.h"
#include "jobs.h"
#include "parse.h"

#define PATH "jobs.stream-logs"

enum { O_TASK_NAME = 1, O_POLLING_INTERVAL, O_ALLOW_MULTILINE, O_FORMAT };

static const struct option options[] = {
    {"task-name", required_argument, NULL, O_TASK_NAME},
    {"polling-interval", required_argument, NULL, O_POLLING_INTERVAL},
    {"allow-multiline-logs", no_argument, NULL, O_ALLOW_MULTILINE},
    {"format", required_argument, NULL, O_FORMAT},
    JOBS_LOCAL_OPTIONS,
    JOBS_GLOBAL_OPTIONS,
    {NULL, 0, NULL, 0},
};

static const char usage[] =
    "Usage: trainyard jobs stream-logs JOB [flags]\n"
    "\n"
    "Show the logs of a job, and new ones as they are written, until the job has ended:\n"
    "one line per entry, SEVERITY<tab>TIME<tab>TASK_NAME<tab>TRIAL_ID<tab>MESSAGE, the time\n"
    "local as 'YYYY-mm-dd HH:MM:SS +zzzz'. Exit 0 once the job has ended (whatever its\n"
    "state), 1 when the logs cannot be read, 2 for usage errors.\n"
    "\n"
    "Flags:\n"
    "  --task-name=NAME          only this task's entries (master-replica-0, worker-replica-1,\n"
    "                            service, ...)\n"
    "  --polling-interval=SECS   poll for new entries every SECS seconds (0.1 to 86400)\n"
    "                            instead of following the daemon's log stream\n"
    "  --allow-multiline-logs    print a multi-line message as it is (default: one output\n"
    "                            line per message line)\n"
    "  --format=FORMAT           each entry as gcloud's log resource, with the keys\n"
    "                            severity, timestamp, task_name, trial_id and message: json\n"
    "                            (a list), yaml, value(KEY,...) (e.g. 'value(message)') or\n"
    "                            none\n"
    "With --local: the logs of a 'trainyard local train' run (polled every\n"
    "--polling-interval, default 0.5 s, until the run has ended).\n"
    "\n";

struct stream_args {
    struct jobs_logs_opts o;
    struct jobs_local local;
    struct jobs_log_format format;
};

static int on_opt(void *ctx, int id, const char *arg)
{
    struct stream_args *a = ctx;
    struct jobs_logs_opts *o = &a->o;

    if (jobs_local_opt(&a->local, id, arg))
        return 0;
    switch (id) {
    case O_TASK_NAME:
        if (!*arg) {
            cli_error(PATH, "--task-name: the task name is empty");
            return -1;
        }
        o->task_name = arg;
        return 0;
    case O_POLLING_INTERVAL:
        /* at least a tenth of a second: a smaller interval only loads the service (1e-9 made
         * 5,000 requests a second) */
        if (ty_parse_double(arg, &o->poll_secs) < 0 || !(o->poll_secs >= 0.1) ||
            o->poll_secs > 86400) {
            cli_error(
                PATH, "--polling-interval: expected seconds, from 0.1 to 86400 (got '%s')", arg);
            return -1;
        }
        return 0;
    case O_ALLOW_MULTILINE:
        o->allow_multiline = true;
        return 0;
    case O_FORMAT:
        o->format = &a->format;
        return jobs_log_format_opt(PATH, arg, &a->format);
    }
    return -1;
}

/* The verb after its flags: the logs of the job named in argv[first..argc). */
static int
run(struct stream_args *a, struct api_settings *settings, int argc, char **argv, int first)
{
    struct api_client *c;
    struct ty_error e = {0};
    const char *job;
    int r;

    if (jobs_local_check(PATH, &a->local) < 0)
        return TY_EXIT_USAGE;
    job = jobs_job_arg(PATH, argc, argv, first);
    if (!job)
        return TY_EXIT_USAGE;
    if (a->local.on) {
        setvbuf(stdout, NULL, _IOLBF, 0);
        if (jobs_local_stream_logs(&a->local, job, &a->o, &e) < 0)
            return jobs_fail(PATH, &e);
        return TY_EXIT_OK;
    }
    c = jobs_client(PATH, settings);
    if (!c)
        return TY_EXIT_USAGE;
    setvbuf(stdout, NULL, _IOLBF, 0);
    jobs_catch_interrupt();
    r = jobs_stream_logs(c, job, &a->o, &e);
    api_client_free(c);
    if (api_interrupted) { /* gcloud's words for Ctrl-C, and its exit status */
        jobs_release_interrupt();
        fflush(stdout);
        fprintf(stderr, "\n\nCommand killed by keyboard interrupt\n\n");
        return TY_EXIT_FAILED;
    }
    jobs_release_interrupt();
    if (r < 0)
        return jobs_fail(PATH, &e);
    return TY_EXIT_OK;
}

static int stream_logs(int argc, char **argv)
{
    static const char *const help[] = {usage, jobs_local_help, jobs_global_help, NULL};
    struct stream_args a = {.o = {.out = stdout}};
    struct api_settings settings = {0};
    int first, rc;

    rc = jobs_parse_args(PATH, argc, argv, options, help, &settings, on_opt, &a, &first);
    if (rc < 0) {
        rc = run(&a, &settings, argc, argv, first);
        /* a list begun is closed; an empty one only when the logs were read to their end */
        jobs_log_format_end(&a.format, rc == TY_EXIT_OK || a.format.printed ? stdout : NULL);
    } else {
        jobs_log_format_end(&a.format, NULL);
    }
    fflush(stdout);
    return rc;
}

const struct cli_command cmd_jobs_stream_logs = {
    .path = "jobs stream-logs",
    .summary = "show a job's logs until it ends",
    .run = stream_logs,
};
