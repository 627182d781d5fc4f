/* SPDX-License-Identifier: Apache-2.0
 * jobs.h: what the remote `trainyard jobs ...` verbs share: the global flags (endpoint,
 * project, token), argument parsing, output formats (format.h: --format, --sort-by, --uri),
 * local-time rendering, and log streaming (used by `jobs stream-logs` and `jobs submit
 * --stream-logs`). */
#ifndef TY_CLI_JOBS_H
#define TY_CLI_JOBS_H

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "api-client.h"
#include "error.h"
#include "format.h"

/* getopt ids of the global flags; each verb's own ids stay below JOBS_OPT_BASE. */
#define JOBS_OPT_BASE 3000
enum {
    JOBS_OPT_ENDPOINT = JOBS_OPT_BASE,
    JOBS_OPT_PROJECT,
    JOBS_OPT_TOKEN_FILE,
    JOBS_OPT_HELP,
};

/* clang-format off */
#define JOBS_GLOBAL_OPTIONS                                                                        \
    {"api-endpoint", required_argument, NULL, JOBS_OPT_ENDPOINT},                                  \
    {"project", required_argument, NULL, JOBS_OPT_PROJECT},                                        \
    {"access-token-file", required_argument, NULL, JOBS_OPT_TOKEN_FILE},                           \
    {"help", no_argument, NULL, JOBS_OPT_HELP}
/* clang-format on */

/* Help text of the global flags. */
extern const char jobs_global_help[];

/* A verb's handler of its own flags: 0, or -1 after printing the error (usage: exit 2). */
typedef int (*jobs_opt_fn)(void *ctx, int id, const char *arg);

/* Parse argv[0..argc) (argv[0] is the verb) with @opts (terminated): the global flags into
 * @settings, the others through @fn. @help is printed, parts in order, for --help. Returns -1
 * to go on, with the positional arguments in argv[*first_pos..argc), else the exit status
 * (0 after --help, 2 after a usage error, already printed). */
int jobs_parse_args(const char *path,
                    int argc,
                    char **argv,
                    const struct option *opts,
                    const char *const *help,
                    struct api_settings *settings,
                    jobs_opt_fn fn,
                    void *ctx,
                    int *first_pos);

/* The one JOB argument among the positional ones (argv[first..argc)), or NULL after
 * printing the usage error. */
const char *jobs_job_arg(const char *path, int argc, char **argv, int first);

/* Make the client; on failure print the error and return NULL (exit 2). */
struct api_client *jobs_client(const char *path, const struct api_settings *settings);

/* One call on one job, with a client of its own: @method on api_jobs_path(@job_id, @suffix)
 * with @body (may be NULL). Returns -1 with *ret (the reply) to go on, else the exit status
 * after printing the error (2: the settings, 1: the call). */
int jobs_job_call(const char *path,
                  const struct api_settings *settings,
                  const char *method,
                  const char *job_id,
                  const char *suffix,
                  const json_t *body,
                  json_t **ret);

/* Print the error of a failed API call; returns its exit status (1). */
int jobs_fail(const char *path, const struct ty_error *err);

/* Ctrl-C (SIGINT) sets api_interrupted, which ends the calls under way, instead of killing
 * the program, until jobs_release_interrupt() puts its default action back. */
void jobs_catch_interrupt(void);
void jobs_release_interrupt(void);

/* Parse a --format text (format.h) into *fmt, replacing one given before. Returns 0, or -1
 * after printing the error ("trainyard: jobs.list: --format: ..."). */
int jobs_format_opt(const char *path, const char *arg, struct ty_format **fmt);

/* Parse a --sort-by text into *keys and *n (replacing them). Returns 0, or -1 after printing. */
int jobs_sort_opt(const char *path, const char *arg, struct ty_fmt_key **keys, size_t *n);

/* How a list of jobs is printed (`jobs list`, and the local listing). */
struct jobs_list_output {
    const struct ty_format *format; /* NULL or TY_FMT_DEFAULT: gcloud's table JOB_ID STATUS
                                     * CREATED; a table/value/csv without keys gets its keys */
    const struct ty_fmt_key *sort;  /* --sort-by (may be NULL) */
    size_t nsort;
    const char *uri_prefix; /* --uri: print only each job's URI, this and the job id */
};

/* Print the jobs of the array @jobs (sorted in place by --sort-by and :sort=N keys) to
 * stdout as @o says. Returns 0, or -1 after printing the error for @path (a format that
 * needs keys without them). */
int jobs_print_list(const char *path, json_t *jobs, const struct jobs_list_output *o);

/* Print one job to stdout in @fmt; NULL or TY_FMT_DEFAULT: @dflt (NULL: YAML of the whole
 * job). Returns 0, or -1 after printing the error for @path (value/csv/table without keys). */
int jobs_print_job(const char *path,
                   const json_t *job,
                   const struct ty_format *fmt,
                   const char *dflt);

/* The "https://HOST/v1/projects/P/jobs/" prefix of the client's endpoint and project (gcloud's
 * selfLink form, with the endpoint's own scheme), to which a job id is appended. */
char *jobs_uri_prefix(const struct api_client *c);

/* The width tables must fit: $COLUMNS or the terminal's width when stdout is a terminal,
 * else 80. */
size_t jobs_term_width(void);

/* How jobs_local_time writes a time. */
enum jobs_time_style {
    JOBS_TIME_ISO, /* 2026-11-30T10:00:00 (gcloud's date(tz=LOCAL)) */
    JOBS_TIME_LOG, /* 2026-11-30 10:00:00 +0100 (gcloud's log lines) */
};
/* @rfc3339 in local time into @buf; @rfc3339 itself when it does not parse. Returns @buf. */
const char *jobs_local_time(const char *rfc3339, enum jobs_time_style style, char *buf, size_t n);

/* A --format for log entries (gcloud's: each entry a resource with the keys severity,
 * timestamp, task_name, trial_id and message), and what was printed in it so far. */
struct jobs_log_format {
    struct ty_format *f; /* NULL: trainyard's line per entry */
    size_t printed;
};

/* How to show logs. */
struct jobs_logs_opts {
    const char *task_name;          /* only this task; NULL: all */
    double poll_secs;               /* > 0: poll `logs` every poll_secs; 0: follow=true stream */
    bool allow_multiline;           /* print multi-line messages as they are */
    struct jobs_log_format *format; /* NULL, or --format's */
    FILE *out;
};

/* Parse @arg, a --format of the log verbs, into @lf (json, yaml, value(...) or none: formats
 * printed as the entries come; `default` is the line per entry). Returns 0, or -1 after
 * printing the error. */
int jobs_log_format_opt(const char *path, const char *arg, struct jobs_log_format *lf);

/* After the last entry: close what the format opened (JSON's list) on @out (NULL: nothing was
 * streamed), and free it. */
void jobs_log_format_end(struct jobs_log_format *lf, FILE *out);

/* Show the logs of @job_id until the job has ended and everything was shown. Returns 0 or
 * -errno with err. */
int jobs_stream_logs(struct api_client *c,
                     const char *job_id,
                     const struct jobs_logs_opts *o,
                     struct ty_error *err);

#endif
